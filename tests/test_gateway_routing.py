"""Routing fixtures (tests/gateway_fixtures/routing.sql): each query's route and engine SQL, and its result checked
against the same query run directly on PostgreSQL. The lake is built by the real ingest worker from real
PostgreSQL tables, with changes after the snapshot so that the gateway has to merge change-log tails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import sqlglot
from sqlglot import exp

from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import (
    FIXTURES,
    Case,
    database,
    gateway_settings,
    pg_rows,
    read_cases,
    rows_of,
    same_rows,
)
from tests.lakehelp import running_worker, wait_caught_up

CASES = read_cases(FIXTURES / "routing.sql")

SCHEMA = """
CREATE TABLE accounts (id int PRIMARY KEY, name text NOT NULL, email text, balance numeric(12,2),
                       created_at timestamptz, active bool, region text);
INSERT INTO accounts SELECT g, 'user ' || g, 'u' || g || '@example.com', round((g * 13.37)::numeric, 2),
       timestamptz '2024-01-01 00:00+00' + g * interval '7 hours', g % 3 <> 0, 'r' || (g % 5)
FROM generate_series(1, 200) g;
CREATE TABLE orders (id bigint PRIMARY KEY, account_id int, amount numeric(10,2), status text, placed_at timestamp);
INSERT INTO orders SELECT g, 1 + g % 200, round((g % 97) * 1.25, 2), (ARRAY['paid', 'open', 'refunded'])[1 + g % 3],
       timestamp '2024-02-01' + g * interval '13 minutes'
FROM generate_series(1, 2000) g;
CREATE TABLE regions (code text PRIMARY KEY, label text);
INSERT INTO regions VALUES ('r0', 'north'), ('r1', 'south'), ('r2', 'east'), ('r3', 'west'), ('r4', 'centre');
CREATE TABLE "MixedCase" (id int PRIMARY KEY, "Label" text);
INSERT INTO "MixedCase" VALUES (1, 'one'), (2, 'two');
CREATE VIEW big_accounts AS SELECT * FROM accounts WHERE balance > 1000;
"""

CHANGES = """
UPDATE accounts SET balance = balance + 1, name = name || ' (edited)' WHERE id % 10 = 0;
DELETE FROM orders WHERE id % 50 = 0;
INSERT INTO orders SELECT g, 1 + g % 200, 3.50, 'paid', timestamp '2024-03-01' FROM generate_series(2001, 2100) g;
UPDATE orders SET status = 'refunded' WHERE id BETWEEN 10 AND 20;
"""


@pytest.fixture(scope="module")
def env(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Gateway, psycopg.Connection]]:
    lake_dir: Path = tmp_path_factory.mktemp("lake")
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        # the fixtures' table-less statements (VALUES, generate_series) check DuckDB's rewrites
        settings = gateway_settings(
            dsn, lake_dir, ["public.accounts", "public.orders"], max_rows=1000, tableless_route="duckdb"
        )
        with running_worker(settings):
            wait_caught_up(conn)
            conn.execute(CHANGES)
            wait_caught_up(conn)
        gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
        try:
            yield gateway, conn
        finally:
            gateway.close()


def _postgres_sql(case: Case) -> str:
    if case.postgres:
        return case.postgres
    ast = sqlglot.parse_one(case.sql, read="postgres")
    for table in ast.find_all(exp.Table):
        table.set("catalog", None)
    return ast.sql(dialect="postgres")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_route_and_result(env: tuple[Gateway, psycopg.Connection], case: Case) -> None:
    gateway, conn = env
    _, plan = gateway.plan(case.sql, 1000)
    assert plan is not None
    assert plan.route == case.route, f"{case.name} (line {case.line}): routed to {plan.route}"
    if case.expect_sql is not None:
        assert plan.body == case.expect_sql.replace("\\n", "\n"), (
            f"{case.name} (line {case.line}): engine SQL\n{plan.body}"
        )
    result = gateway.query(case.sql, max_rows=1000)
    assert result.route == case.route
    got = rows_of(result.table)
    want = pg_rows(conn, _postgres_sql(case))
    if result.truncated:
        assert len(got) == 1000 < len(want), f"{case.name}: truncated wrongly"
        want = want[:1000]
    assert got, f"{case.name}: no rows (a fixture must return rows to be a check)"
    assert same_rows(got, want, case.ordered), f"{case.name}: gateway {got[:5]} vs PostgreSQL {want[:5]}"


def test_fixture_file_covers_both_routes_and_postgres_syntax() -> None:
    routes = {c.route for c in CASES}
    text = " ".join(c.sql.lower() for c in CASES)
    assert routes == {"postgres", "duckdb"} and len(CASES) >= 20
    for syntax in (
        "::",
        "ilike",
        "date_trunc",
        "now()",
        "interval '1 day'",
        "distinct on",
        "over (",
        "with ",
        "generate_series",
    ):
        assert syntax in text, f"no routing fixture uses {syntax}"


def test_explain_shows_route_engine_sql_and_pushdown(env: tuple[Gateway, psycopg.Connection]) -> None:
    gateway, conn = env
    # a transaction id assigned since earlier tests: the cache cannot vouch for regions, which is read live
    conn.execute("SELECT txid_current()")
    out = gateway.explain(
        "SELECT o.id FROM lake.public.orders o JOIN pg.public.regions r ON r.code = 'r1' WHERE o.amount > 100"
    )
    assert out["route"] == "duckdb" and out["tables"] == ["lake.public.orders", "pg.public.regions"]
    sql = out["engines"][0]["sql"]  # the statement without its lake views (their files are not shown)
    assert '"lake.public.orders" AS o' in sql and "iceberg_scan(" not in sql and "lakegate_cache." not in sql, sql
    view = out["views"]["lake.public.orders"]  # the state table, as Parquet or from the lake cache, in words
    assert view.startswith("lake.public.orders: read from ") and ("Iceberg" in view or "lake cache" in view), view
    assert "POSTGRES_SCAN" in out["plan"] and "code='r1'" in out["plan"].replace(
        " ", ""
    )  # filter pushed down
    pg = gateway.explain("SELECT * FROM pg.public.accounts WHERE id = 3")
    # PostgreSQL's own plan of the user's query (an index or a sequential scan, as its statistics decide)
    assert pg["route"] == "postgres" and "Scan" in pg["plan"] and " on accounts" in pg["plan"]
    assert "(id = 3)" in pg["plan"]


@pytest.mark.parametrize(
    "tail",
    [" -- trailing comment", "; -- trailing comment", "; /* block */", "\n-- line\n;\n", " /* a */ ;; -- b"],
)
def test_row_cap_after_a_trailing_comment(env: tuple[Gateway, psycopg.Connection], tail: str) -> None:
    """The PostgreSQL route sends the user's text with the row cap appended: a trailing comment must neither
    swallow the LIMIT nor leave a ';' that makes it a second statement."""
    gateway, conn = env
    sql = "SELECT id, name FROM pg.public.accounts WHERE id <= 50 ORDER BY id" + tail
    _, plan = gateway.plan(sql, 7)
    assert plan is not None and plan.route == "postgres"
    result = gateway.query(sql, max_rows=7)
    want = pg_rows(conn, "SELECT id, name FROM public.accounts WHERE id <= 50 ORDER BY id")
    assert result.truncated and rows_of(result.table) == want[:7], f"{tail!r}: {plan.body!r}"

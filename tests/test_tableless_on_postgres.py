"""A statement that names no table answers as PostgreSQL does (issue 28.7): with a PostgreSQL source configured
it runs there (``[gateway] tableless_route = "postgres"``, the default), in the same read-only, time-limited
session as every PostgreSQL-route query; DuckDB computed ``regexp_replace`` with a start position, ``concat`` of
booleans or ``VARIADIC`` otherwise. ``tableless_route = "duckdb"`` and a gateway without PostgreSQL source keep
DuckDB. Every answer is compared with PostgreSQL's own: SQLSTATE, column names, types and values."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from lakegate.gateway.errors import UnsupportedQuery
from lakegate.gateway.route import DUCKDB_ROUTE, POSTGRES_ROUTE
from lakegate.gateway.service import Gateway
from tests.answers_harness import IDENTICAL, compare, from_gateway, from_postgres, infinities
from tests.gateway_fixtures.harness import database, gateway_settings, live_server

#: table-less statements DuckDB answered otherwise than PostgreSQL (PostgreSQL's regression queries and more)
ANSWERS = [
    "SELECT regexp_replace('foobarbaz', 'a', 'X', 1, 2, 'i'), regexp_replace('AAA', 'a', 'b', 2, 0, 'i')",
    "SELECT regexp_instr('abcabc', 'b', 1, 2), regexp_instr('abcabc', 'c', 2, 1, 1)",
    "SELECT concat(true, false, 1), concat_ws(',', VARIADIC ARRAY[true, null, false]), concat(VARIADIC '{1,2}'::int[])",
    "SELECT E'\\x4142'::bytea, E'\\\\x4142'::bytea, 'abc'::bytea",
    "SELECT width_bucket(1.797e308::float8, -1.797e308::float8, 1.797e308::float8, 4), "
    "width_bucket(-1.797e308::float8, -1.797e308::float8, 1.797e308::float8, 10)",
    "SELECT to_hex(255), to_hex(-1), to_hex(9223372036854775807)",
    "SELECT date_bin('15 minutes', timestamp '2020-02-11 15:44:17', timestamp '2001-01-01')",
    "SELECT 1 = ALL(ARRAY[1, 1]), 2 > ALL('{1,3}'::int[]), ||/ 27.0, |/ 16, @ -5, 7 # 2",
    "SELECT * FROM generate_series(1, 5) g",
    "SELECT generate_series(1, 3), generate_series(1, 2)",
    "SELECT * FROM generate_series(timestamp '2024-01-01', '2024-01-02', '6 hours') AS s(t)",
    "VALUES (1, 'a'), (2, NULL)",
    "WITH c(x) AS (SELECT 1 UNION ALL SELECT 2) SELECT x, x / 2.0 FROM c ORDER BY x",
    "SELECT 1 + 1, 7 / 2, 7 % 3, 2 ^ 10, 1.0 / 3, 'a' || 1, NULL::int",
    "SELECT $$dollar$$, U&'d\\0061ta', E'it\\'s' /* a /* nested */ comment */",
]
#: table-less statements PostgreSQL rejects, and its SQLSTATE
ERRORS = {
    "SELECT 1 / 0": "22012",
    "SELECT 'a'::int": "22P02",
    "SELECT list_value(1)": "42883",  # a DuckDB function PostgreSQL has not
    "SELECT 2147483647 + 1": "22003",
    "SELECT x FROM (SELECT 1) s(x, y)": "42P10",
}


@pytest.fixture(scope="module")
def env(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[psycopg.Connection, httpx.Client, Any]]:
    """A gateway over one PostgreSQL source (no ingest worker: no table is replicated)."""
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        settings = gateway_settings(dsn, tmp_path_factory.mktemp("tableless"), max_rows=1000)
        infinities(conn)  # PostgreSQL's own text of numerics, as the harness compares them
        with live_server(settings) as server, server.client() as client:
            yield conn, client, settings


def _types(conn: psycopg.Connection) -> dict[int, str]:
    return {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}


def _route(gateway: Gateway, sql: str) -> tuple[str, str | None]:
    _, plan = gateway.plan(sql, 1000)
    assert plan is not None
    return plan.route, plan.source


def _duckdb_route(gateway: Gateway, sql: str) -> str:
    """The route of ``sql``; a statement the DuckDB route refuses by name counts as kept there (regexp_replace
    with N, which sqlglot cannot write for DuckDB: it wrote it without N, a wrong answer)."""
    try:
        return _route(gateway, sql)[0]
    except UnsupportedQuery as exc:
        assert "lake route (DuckDB)" in str(exc)
        return DUCKDB_ROUTE


@pytest.mark.parametrize("sql", ANSWERS)
def test_answers_as_postgresql(env: Any, sql: str) -> None:
    conn, client, _ = env
    want = from_postgres(conn, sql, _types(conn))
    assert want.error is None, "the case must run on PostgreSQL"
    got = from_gateway(client, sql)
    outcome, why = compare(want, got, in_order=True, may_refuse=False)
    assert outcome == IDENTICAL, f"{sql}: {why}"


@pytest.mark.parametrize("sql", sorted(ERRORS))
def test_errors_as_postgresql(env: Any, sql: str) -> None:
    conn, client, _ = env
    want = from_postgres(conn, sql, {})
    assert want.sqlstate == ERRORS[sql], "the case must fail on PostgreSQL"
    got = from_gateway(client, sql)
    assert got.status == 400 and got.sqlstate == want.sqlstate, (sql, got)


def test_routed_to_the_postgresql_source(env: Any) -> None:
    """Table-less statements (set-returning functions, VALUES, CTEs alone) run on the PostgreSQL source;
    ``tableless_route = "duckdb"`` keeps them on DuckDB, as does a gateway without a PostgreSQL source."""
    _, _, settings = env
    statements = [*ANSWERS, *ERRORS]
    gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
    try:
        assert {_route(gateway, sql) for sql in statements} == {(POSTGRES_ROUTE, "pg")}
    finally:
        gateway.close()
    duck = dataclasses.replace(settings.gateway, tableless_route="duckdb")
    no_source: list[Any] = []
    for sources in (settings.sources, no_source):
        config = settings.gateway if not sources else duck
        gateway = Gateway(settings.lake, sources, config).open()
        try:
            assert {_duckdb_route(gateway, sql) for sql in ANSWERS} == {DUCKDB_ROUTE}  # (errors: pgcheck's)
        finally:
            gateway.close()


def test_the_first_source_of_the_search_path_answers(env: Any) -> None:
    _, _, settings = env
    second = dataclasses.replace(settings.sources[0], name="other", slot="", publication="")
    config = dataclasses.replace(settings.gateway, search_path=["lake", "other", "pg"])
    gateway = Gateway(settings.lake, [settings.sources[0], second], config).open()
    try:
        assert _route(gateway, "SELECT 1") == (POSTGRES_ROUTE, "other")
    finally:
        gateway.close()


def test_time_limit_and_row_cap(env: Any) -> None:
    """The PostgreSQL session's limits hold: the request's time limit cancels the statement there (408), and
    the row cap truncates a set-returning function's rows."""
    _, client, _ = env
    slow = "SELECT count(*) FROM generate_series(1, 2000000000)"
    response = client.post("/v1/query", json={"sql": slow, "timeout_ms": 500})
    assert response.status_code == 408, response.text
    response = client.post(
        "/v1/query", json={"sql": "SELECT * FROM generate_series(1, 5000) g", "max_rows": 50}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert len(body["rows"]) == 50 and body["truncated"] is True
    assert client.post("/v1/query", json={"sql": "SELECT 1"}).json()["rows"] == [{"?column?": 1}]

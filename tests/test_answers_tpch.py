"""The 22 TPC-H queries on the official schema (``char(n)`` columns, ``numeric(15,2)`` money) at scale factor
0.01, in PostgreSQL and replicated to the lake by the real ingest worker, each run on PostgreSQL (psycopg), on
``pg.*``, on ``lake.*`` and federated (the big tables ``lineitem`` and ``orders`` from the lake, the others live
from PostgreSQL), compared by value and result type (issue 10). DuckDB's tpch extension generates the data and
the queries; the char(n) semantics are the point: with padding compared as DuckDB compares it, most answers
were wrong."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import duckdb
import duckdb_extensions
import httpx
import psycopg
import pytest
import sqlglot
from sqlglot import exp

from tests.answers_harness import (
    IDENTICAL,
    Query,
    Tally,
    compare,
    from_gateway,
    from_postgres,
    infinities,
    ordered,
)
from tests.gateway_fixtures.harness import database, gateway_settings, live_server
from tests.lakehelp import running_worker, wait_caught_up

pytestmark = pytest.mark.slow

SCALE = 0.01
#: TPC-H's schema (specification 1.4.1), with the primary keys the ingest needs
SCHEMA = {
    "region": "r_regionkey int PRIMARY KEY, r_name char(25), r_comment varchar(152)",
    "nation": "n_nationkey int PRIMARY KEY, n_name char(25), n_regionkey int, n_comment varchar(152)",
    "part": "p_partkey int PRIMARY KEY, p_name varchar(55), p_mfgr char(25), p_brand char(10), "
    "p_type varchar(25), p_size int, p_container char(10), p_retailprice numeric(15,2), p_comment varchar(23)",
    "supplier": "s_suppkey int PRIMARY KEY, s_name char(25), s_address varchar(40), s_nationkey int, "
    "s_phone char(15), s_acctbal numeric(15,2), s_comment varchar(101)",
    "partsupp": "ps_partkey int, ps_suppkey int, ps_availqty int, ps_supplycost numeric(15,2), "
    "ps_comment varchar(199), PRIMARY KEY (ps_partkey, ps_suppkey)",
    "customer": "c_custkey int PRIMARY KEY, c_name varchar(25), c_address varchar(40), c_nationkey int, "
    "c_phone char(15), c_acctbal numeric(15,2), c_mktsegment char(10), c_comment varchar(117)",
    "orders": "o_orderkey int PRIMARY KEY, o_custkey int, o_orderstatus char(1), o_totalprice numeric(15,2), "
    "o_orderdate date, o_orderpriority char(15), o_clerk char(15), o_shippriority int, o_comment varchar(79)",
    "lineitem": "l_orderkey int, l_partkey int, l_suppkey int, l_linenumber int, l_quantity numeric(15,2), "
    "l_extendedprice numeric(15,2), l_discount numeric(15,2), l_tax numeric(15,2), l_returnflag char(1), "
    "l_linestatus char(1), l_shipdate date, l_commitdate date, l_receiptdate date, l_shipinstruct char(25), "
    "l_shipmode char(10), l_comment varchar(44), PRIMARY KEY (l_orderkey, l_linenumber)",
}
#: the federated run reads these from the lake, the others live from PostgreSQL
FROM_LAKE = {"lineitem", "orders"}
#: joins of a lake table with a PostgreSQL table on char(n) columns (padding must not matter)
FEDERATED = [
    "SELECT n.n_name, r.r_name FROM lake.public.nation n JOIN pg.public.region r ON r.r_name = "
    "(SELECT r2.r_name FROM lake.public.region r2 WHERE r2.r_regionkey = n.n_regionkey) ORDER BY n.n_name",
    "SELECT c.c_mktsegment, count(*) FROM lake.public.customer c JOIN pg.public.customer p "
    "ON p.c_mktsegment = c.c_mktsegment AND p.c_custkey = c.c_custkey GROUP BY 1 ORDER BY 1",
    "SELECT s.s_name, n.n_name FROM pg.public.supplier s JOIN lake.public.nation n ON n.n_nationkey = "
    "s.s_nationkey WHERE n.n_name IN ('GERMANY', 'FRANCE') ORDER BY s.s_name",
    "SELECT l.l_shipmode, count(*) FROM lake.public.lineitem l JOIN pg.public.lineitem p ON p.l_orderkey = "
    "l.l_orderkey AND p.l_linenumber = l.l_linenumber AND p.l_shipmode = l.l_shipmode GROUP BY 1 ORDER BY 1",
    "SELECT o.o_orderpriority, count(*) FROM pg.public.orders o WHERE o.o_orderpriority IN "
    "(SELECT DISTINCT o2.o_orderpriority FROM lake.public.orders o2) GROUP BY 1 ORDER BY 1",
]


def _generate() -> tuple[duckdb.DuckDBPyConnection, list[tuple[int, str]]]:
    gen = duckdb.connect()
    duckdb_extensions.import_extension("tpch", con=gen)
    gen.execute("LOAD tpch")
    gen.execute(f"CALL dbgen(sf={SCALE})")
    queries = [
        (int(n), str(q)) for n, q in gen.execute("SELECT query_nr, query FROM tpch_queries()").fetchall()
    ]
    return gen, queries


def _load(gen: duckdb.DuckDBPyConnection, conn: psycopg.Connection) -> None:
    for name, columns in SCHEMA.items():
        conn.execute(f"CREATE TABLE {name} ({columns})")
        rows = gen.execute(f"SELECT * FROM {name}").fetchall()
        with conn.cursor().copy(f"COPY {name} FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
    conn.execute("ANALYZE")


def on(sql: str, where: dict[str, str]) -> str:
    """``sql`` with each TPC-H table qualified as ``where`` says (``public``, ``pg.public``, ``lake.public``)."""
    tree = sqlglot.parse_one(sql, read="postgres")
    for table in tree.find_all(exp.Table):
        schema = where.get(table.name)
        if schema is not None and not table.args.get("db"):
            parts = schema.split(".")
            table.set("db", exp.to_identifier(parts[-1]))
            if len(parts) == 2:
                table.set("catalog", exp.to_identifier(parts[0]))
    return tree.sql(dialect="postgres")


@pytest.fixture(scope="module")
def tpch(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[psycopg.Connection, httpx.Client, list[tuple[int, str]]]]:
    gen, queries = _generate()
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        _load(gen, conn)
        gen.close()
        settings = gateway_settings(dsn, tmp_path_factory.mktemp("tpch"), [f"public.{t}" for t in SCHEMA])
        with running_worker(settings):
            wait_caught_up(conn, timeout=120)
        with live_server(settings) as server, server.client() as client:
            yield conn, client, queries


def test_tpch_22_queries_pg_lake_and_federated(
    tpch: tuple[psycopg.Connection, httpx.Client, list[tuple[int, str]]],
) -> None:
    conn, client, queries = tpch
    assert len(queries) == 22
    infinities(conn)
    types = {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}
    tally = Tally()
    federated = {t: ("lake.public" if t in FROM_LAKE else "pg.public") for t in SCHEMA}
    for number, sql in queries:
        query = Query("tpch", number, sql)
        want = from_postgres(conn, on(sql, dict.fromkeys(SCHEMA, "public")), types)
        assert want.error is None and want.rows, f"Q{number} must answer rows on PostgreSQL: {want.error}"
        in_order = ordered(sql)
        routes = [
            ("pg", dict.fromkeys(SCHEMA, "pg.public")),
            ("lake", dict.fromkeys(SCHEMA, "lake.public")),
            ("federated", federated),
        ]
        for route, where in routes:
            got = from_gateway(client, on(sql, where))
            outcome, why = compare(want, got, in_order, may_refuse=False)
            tally.add("pg" if route == "pg" else "lake", query, outcome, f"{route}: {why}")
    for number, sql in enumerate(FEDERATED, 1):
        query = Query("federated", number, sql)
        want = from_postgres(
            conn, sql.replace("lake.public.", "public.").replace("pg.public.", "public."), types
        )
        assert want.rows, sql
        got = from_gateway(client, sql)
        tally.add("lake", query, *compare(want, got, ordered(sql), may_refuse=False))
    print(
        "\n"
        + tally.report("TPC-H sf 0.01 (22 queries x pg / lake / federated) and lake x pg joins on char(n)")
    )
    assert not tally.differing, f"{len(tally.differing)} differences:\n  " + "\n  ".join(tally.differing)
    assert tally.outcomes["lake"][IDENTICAL] == 2 * 22 + len(FEDERATED)

"""Result column names as PostgreSQL gives them (issue 28.0), with PostgreSQL itself as the oracle: for each
select list below, psycopg's ``cursor.description`` names are the answer. The port of ``FigureColname`` over
libpg_query's tree (:mod:`lakegate.gateway.pgcolnames`) must name every one alike, and so must the gateway on
both routes — the lake route over a replicated table, where DuckDB would say ``count_star()``, ``CAST(x AS
INTEGER)``, ``var_samp`` or keep ``AS Total``'s case — including repeated names, in Arrow and CSV alike."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

import pgparse
import psycopg
import pytest
import sqlglot
from sqlglot import exp

from lakegate.gateway.errors import GatewayError
from lakegate.gateway.pgcolnames import fallback_name, name_columns, select_names
from lakegate.gateway.pgtypes import pg_type
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import database, gateway_settings, live_server
from tests.lakehelp import running_worker, wait_caught_up

TABLE = """
CREATE TABLE t (id int PRIMARY KEY, x int, y text, d date, arr int[], n numeric(10, 2), f float8, b bool,
                ts timestamptz, j jsonb);
INSERT INTO t VALUES (1, 2, 'ab', '2024-01-02', '{1,2}', 1.50, 0.5, true, '2024-01-02 03:04:05+00',
                      '{"a": 1}'),
                     (2, NULL, 'c', NULL, NULL, NULL, NULL, false, NULL, NULL);
"""

#: select lists (``FROM {t}`` is added) and whole statements: one PostgreSQL naming rule or more each
LISTS = [
    "x, t.x, y AS Label, x AS \"MiXed\", id",
    "count(*), count(x), sum(x), avg(x), variance(x), stddev(x), min(y), max(d)",
    "1, 'a', -1, x + 1, y || 'z', NOT b, x IS NULL, x BETWEEN 1 AND 3, x IN (1, 2), y LIKE 'a%'",
    "x::int, 1::int, '1'::integer, 1::bigint, 1::smallint, 1.5::real, 1.5::double precision, 1.5::float",
    "1::decimal, 1::numeric(10, 2), 'a'::varchar(3), 'a'::character varying, 'a'::char(2), 'a'::text",
    "'2024-01-01'::timestamptz, '2024-01-01'::timestamp with time zone, '2024-01-01'::date",
    "'1 day'::interval, '1'::bit(3), '{{1}}'::int[]",
    "x::text::int, (x)::text, y::bytea, 'a'::bpchar, true::boolean, true, null",
    "CASE WHEN b THEN 1 ELSE 2 END, CASE WHEN b THEN 1 ELSE x END, CASE WHEN b THEN 1 END",
    "CASE WHEN b THEN 1 ELSE 2::int END, CASE x WHEN 1 THEN 'a' ELSE y END",
    "COALESCE(x, 1), GREATEST(x, 1), LEAST(x, 1), NULLIF(x, 1), ARRAY[1, 2], ARRAY[x], arr[1], arr[1:2]",
    "(SELECT 1), (SELECT max(x) FROM {t}), (SELECT x AS z FROM {t} LIMIT 1), EXISTS (SELECT 1)",
    "ARRAY(SELECT 1), (SELECT 1 UNION SELECT 2 ORDER BY 1 LIMIT 1)",
    "extract(year from d), date_part('year', d), date_trunc('day', ts), ts AT TIME ZONE 'UTC'",
    "trim(y), trim(leading 'a' from y), substring(y from 1 for 2), substring(y, 1, 2), position('a' in y)",
    "interval '1 day', date '2024-01-01', timestamp '2024-01-01', timestamptz '2024-01-01'",
    "lower(y), upper(y), length(y), y COLLATE \"C\", to_char(d, 'YYYY'), abs(x)",
    "j->'a', j->>'a', (j->>'a')::numeric, jsonb_typeof(j), f::numeric, n::numeric(10, 1)",
    "x = ANY(arr), x = ANY(ARRAY[1]), b AND b, x IS DISTINCT FROM 1, y ~ 'a', y ILIKE 'A%'",
    "x, x, x AS x, count(*) OVER (), row_number() OVER (ORDER BY id)",
    "current_date, current_timestamp, localtimestamp, current_time, now(), true, null, 1.5",
    "sum(x) OVER (), count(*) FILTER (WHERE b) OVER (), lag(x) OVER (ORDER BY id)",
]
STATEMENTS = [
    "SELECT count(*), count(x), count(DISTINCT y) FROM {t}",
    "SELECT y, percentile_disc(0.5) WITHIN GROUP (ORDER BY x), mode() WITHIN GROUP (ORDER BY x) FROM {t} "
    "GROUP BY y",
    "SELECT b, grouping(b), count(*) FROM {t} GROUP BY ROLLUP (b)",
    "SELECT a.id, b.id, a.x, b.x FROM {t} a JOIN {t} b ON a.id = b.id",
    "SELECT * FROM {t} a JOIN {t} b ON a.id = b.id",
    "SELECT s.count, s.max FROM (SELECT count(*), max(x) FROM {t}) s",
    "SELECT * FROM (SELECT count(*), x::text, 1 + 1 FROM {t} GROUP BY x) s",
    "WITH c AS (SELECT variance(x), y AS Label FROM {t} GROUP BY y) SELECT * FROM c",
    "WITH c AS (SELECT sum(x) FROM {t}) SELECT c.sum, sum + 1 FROM c",
    "SELECT count(*) FROM {t} UNION ALL SELECT 1",
    "SELECT 1 UNION SELECT x FROM {t}",
    "SELECT x::int FROM {t} ORDER BY x",
    "SELECT count(*) FROM {t} ORDER BY count",
    "SELECT y AS \"Ünïcode\", 'é' || y, lower('É') FROM {t}",
    "SELECT DISTINCT b, count(*) OVER (PARTITION BY b) FROM {t}",
]


#: named alike by the port (the lake route answers these with DuckDB's raw errors: no varbit, no float(p), no
#: schema-qualified function, no '{1}'::int[][]; issue 28's other items)
PORT_ONLY = ["SELECT '1'::varbit, 1.5::float(10), pg_catalog.upper(y), (t).x, '{{1}}'::integer[][] FROM {t}"]


def _statements() -> list[str]:
    return [f"SELECT {items} FROM {{t}}" for items in LISTS] + STATEMENTS


@pytest.fixture(scope="module")
def env(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[psycopg.Connection, Any]]:
    lake_dir = tmp_path_factory.mktemp("names")
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(TABLE)
        settings = gateway_settings(dsn, lake_dir, ["public.t"])
        with running_worker(settings):
            wait_caught_up(conn)
        gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
        try:
            yield conn, (gateway, settings)
        finally:
            gateway.close()


def _pg_names(conn: psycopg.Connection, sql: str) -> list[str]:
    cursor = conn.execute(sql)
    return [d.name for d in cursor.description or []]


@pytest.mark.parametrize("template", _statements() + PORT_ONLY)
def test_figure_colname_names_as_postgresql(env: tuple[psycopg.Connection, Any], template: str) -> None:
    """The port over PostgreSQL's raw tree names each column as PostgreSQL does (``*`` aside: None)."""
    conn, _ = env
    sql = template.format(t="public.t")
    want = _pg_names(conn, sql)
    names = select_names(pgparse.parse(sql)[0]["stmt"])
    if None in names:  # a star: PostgreSQL's columns of the table, which the engine names
        assert all(n == w for n, w in zip(names, want, strict=False) if n is not None), (sql, names, want)
    else:
        assert names == want, sql


@pytest.mark.parametrize("template", _statements())
@pytest.mark.parametrize("route", ["pg", "lake"])
def test_gateway_names_columns_as_postgresql(
    env: tuple[psycopg.Connection, Any], template: str, route: str
) -> None:
    conn, (gateway, _) = env
    want = _pg_names(conn, template.format(t="public.t"))
    try:
        result = gateway.query(template.format(t=f"{route}.public.t"))
    except GatewayError as exc:  # only a refusal in the gateway's words (0A000) may stand for an answer
        clean = exc.sqlstate == "0A000" and not exc.message.startswith("DuckDB:")
        assert route == "lake" and clean, f"{route}: {exc.sqlstate} {exc.message}"
        return
    got = [n for n in result.table.schema.names if n not in ("_lsn", "_commit_ts")]  # the lake's own columns
    assert got == want, f"{route}: {template}"


SERIES = [
    "SELECT * FROM {t}, generate_series(timestamptz '2024-01-01', timestamptz '2024-01-03', '1 day') "
    "ORDER BY 1",
    "SELECT generate_series.* FROM {t}, generate_series(date '2024-01-01', date '2024-01-03', '1 month')",
    "SELECT * FROM {t}, unnest(arr) ORDER BY 1",
]


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata"])
def test_sql_value_functions_keep_their_names_in_any_time_zone(
    env: tuple[psycopg.Connection, Any], zone: str
) -> None:
    """DuckDB reads ``current_date`` as a column first: named ``current_date`` it would meet its own alias."""
    conn, (gateway, _) = env
    sql = "SELECT current_timestamp, current_date, localtimestamp, 1 AS localtime, localtime FROM {t}"
    want = _pg_names(conn, sql.format(t="public.t"))
    assert want == ["current_timestamp", "current_date", "localtimestamp", "localtime", "localtime"]
    for route in ("pg", "lake"):
        result = gateway.query(sql.format(t=f"{route}.public.t"), time_zone=zone)
        assert result.table.schema.names == want, route
        assert [pg_type(f) for f in result.table.schema][1:4] == ["date", "timestamp", "int4"], route
    for series in SERIES:  # a function in FROM without an alias: the table and its column are named after it
        want = _pg_names(conn, series.format(t="public.t"))
        for route in ("pg", "lake"):
            result = gateway.query(series.format(t=f"{route}.public.t"), time_zone=zone)
            assert [n for n in result.table.schema.names if n not in ("_lsn", "_commit_ts")] == want, series


def test_repeated_names_reach_arrow_and_csv_as_postgresql_and_json_keys_them_apart(
    env: tuple[psycopg.Connection, Any],
) -> None:
    """``SELECT a.x, b.x`` has two columns ``x`` in PostgreSQL: in Arrow and CSV too; the JSON formats (rows
    are objects) key the second ``x_2``, its ``friendly_name`` still ``x``."""
    conn, (_, settings) = env
    sql = "SELECT a.x, b.x, 1 + 1, 2 + 2 FROM {t} a JOIN {t} b ON a.id = b.id WHERE a.id = 1"
    want = _pg_names(conn, sql.format(t="public.t"))
    assert want == ["x", "x", "?column?", "?column?"]
    with live_server(settings) as server, server.client() as client:
        for route in ("pg", "lake"):
            body = {"sql": sql.format(t=f"{route}.public.t"), "format": "csv"}
            response = client.post("/v1/query", json=body)
            assert response.status_code == 200, response.text
            assert next(csv.reader(io.StringIO(response.text))) == want, route
            response = client.post("/v1/query", json={**body, "format": "json"})
            columns = response.json()["columns"]
            assert [c["friendly_name"] for c in columns] == want, route
            assert [c["name"] for c in columns] == ["x", "x_2", "?column?", "?column?_2"], route
            assert response.json()["rows"] == [{"x": 2, "x_2": 2, "?column?": 2, "?column?_2": 4}], route


def test_without_postgresql_s_tree_the_outer_list_is_still_named() -> None:
    """A statement libpg_query does not read (time travel: the gateway's own clause) keeps sqlglot's guess."""
    tree = sqlglot.parse_one("SELECT count(*), sum(x), x, 1 + 1, x::int, y AS z FROM t", read="postgres")
    name_columns(tree, None, None)
    assert [e.alias_or_name for e in tree.expressions] == ["count", "sum", "x", "?column?", "x", "z"]
    assert fallback_name(sqlglot.parse_one("SELECT 1::int", read="postgres").expressions[0]) == "int"


def test_nested_lists_pair_by_source_positions() -> None:
    """Each SELECT of sqlglot's tree takes the names of the SELECT of PostgreSQL's tree at the same place in
    the text, however the two nest them; multi-byte text before a name does not shift the pairing."""
    sql = "SELECT 'é', (SELECT variance(x) FROM t), s.count FROM (SELECT count(*), 1::int FROM u) s"
    tree = sqlglot.parse_one(sql, read="postgres")
    name_columns(tree, pgparse.parse(sql), sql)
    outer = [e.alias_or_name for e in tree.expressions]
    inner = [e.alias for e in tree.args["from_"].this.this.expressions]
    scalar = tree.expressions[1].find(exp.Select).expressions[0].alias
    assert (outer, inner, scalar) == (["?column?", "variance", "count"], ["count", "int4"], "variance")

"""Every limit holds for every engine call (issue 27.5), over real HTTP against a real gateway, DuckDB and
PostgreSQL, with a time limit of 1 s.

DuckDB sees an interrupt between vectors, never inside one call over a vector nor while it folds constants at
plan time. Calls that used to run for minutes past the limit (levenshtein of long strings, lpad to 2 GB, series of
10^8 elements, LIKE with many ``%``, ``1e99999999``) are refused before they run, with their function, limit and
SQLSTATE; queries that call the same functions at the bounds on every row of an endless series end with 408, and
the process stops computing (its CPU time stops growing) within twice the limit; results of ordinary calls are
PostgreSQL's."""

from __future__ import annotations

import re
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from lakegate.connectors.duckdb import pgbounds
from lakegate.connectors.duckdb.engine import DuckDBConfig, DuckDBEngine
from lakegate.connectors.query import QueryError
from lakegate.gateway import dialect_bounds
from lakegate.gateway.errors import MAX_MESSAGE, capped
from tests.gateway_fixtures.harness import LiveServer, canon, database, gateway_settings, live_server, pg_rows

TOKEN = "engine-limits-token"
LIMIT = 1.0  #: the gateway's time limit (s)
ENDLESS = "FROM generate_series(1, 1000000000) g"  #: rows enough that only the time limit ends the query


@pytest.fixture(scope="module")
def env(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, psycopg.Connection]]:
    lake_dir: Path = tmp_path_factory.mktemp("lake")
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS fuzzystrmatch")
        conn.execute("CREATE TABLE one (x int)")
        conn.execute("INSERT INTO one VALUES (1)")
        # DuckDB's bounds are what the table-less statements here test
        settings = gateway_settings(
            dsn, lake_dir, timeout=f"{LIMIT:g}s", tokens=[TOKEN], tableless_route="duckdb"
        )
        with live_server(settings) as live:
            yield live, conn


@pytest.fixture(scope="module")
def client(env: tuple[LiveServer, psycopg.Connection]) -> Iterator[httpx.Client]:
    with env[0].client(TOKEN, timeout=120) as c:
        yield c


def error_of(response: httpx.Response) -> dict[str, Any]:
    error: dict[str, Any] = response.json()["error"]
    return error


# ----------------------------------------------------------------------------------- refused before they run

#: (SQL, status, SQLSTATE, a fragment of the message): each used to run from seconds to hours past the limit
REFUSED = [
    # PostgreSQL runs no DISTINCT aggregate as a window function; DuckDB did, 7 s past the limit at this size
    (
        "SELECT max(c) FROM (SELECT count(DISTINCT g) OVER (ORDER BY g ROWS BETWEEN 100000 PRECEDING AND CURRENT ROW)"
        " AS c FROM generate_series(1, 10000000) g) s",
        400,
        "0A000",
        "DISTINCT is not implemented for window functions",
    ),
    # levenshtein keeps PostgreSQL's own bound and words (fuzzystrmatch); 100k characters ran 99 s, 20 rows never
    (
        "SELECT levenshtein(rpad('a', 10000, 'x'), rpad('b', 10000, 'y'))",
        400,
        "22023",
        "levenshtein argument exceeds maximum length of 255 characters",
    ),
    (
        "SELECT levenshtein(rpad('a', 10000, 'x') || g::text, 'b') FROM generate_series(1, 20) g",
        400,
        "22023",
        "levenshtein argument exceeds maximum length of 255 characters",
    ),
    (
        "SELECT levenshtein(repeat('a', 100000), repeat('b', 100000))",
        400,
        "54000",
        "repeat(): the result is over the lake route's limit of 16384 characters",
    ),
    (
        "SELECT damerau_levenshtein(rpad('a', 101, 'x'), 'b')",
        400,
        "54000",
        "damerau_levenshtein(): an argument is over the lake route's limit of 100 characters",
    ),
    (
        "SELECT lpad('x', 2000000000, 'y')",
        400,
        "54000",
        "lpad(): the length is over the lake route's limit of 16384",
    ),
    ("SELECT rpad('x', 16385)", 400, "54000", "rpad(): the length is over the lake route's limit of 16384"),
    (
        "SELECT repeat('x', 1000000000)",
        400,
        "54000",
        "repeat(): the result is over the lake route's limit of 16384",
    ),
    (
        "SELECT list_concat(range(100000000), range(100000000))",
        400,
        "54000",
        "range(): the series is over the lake route's limit of 4096 elements",
    ),
    (
        "SELECT generate_series(1, 3000000000)",
        400,
        "54000",
        "generate_series(): the series is over the lake route's limit of 4096 elements",
    ),
    (
        "SELECT generate_series('2020-01-01'::timestamp, '2024-01-01'::timestamp, '1 hour')",
        400,
        "54000",
        "generate_series(): the series of times is over the lake route's limit of 1024 elements",
    ),
    (
        "SELECT string_to_array(repeat('a,', 50000000), ',')",
        400,
        "54000",
        "repeat(): the result is over the lake route's limit of 16384 characters",
    ),
    (
        "SELECT string_to_array(rpad(',', 16000, ','), ',')",
        400,
        "54000",
        "string_split(): the number of pieces is over the lake route's limit of 2048 pieces",
    ),
    (
        "SELECT regexp_split_to_array(rpad('a', 16000, 'b'), 'b')",
        400,
        "54000",
        "regexp_split_to_array(): the number of pieces is over the lake route's limit of 512 pieces",
    ),
    (
        "SELECT printf('%100000000d', 1)",
        400,
        "54000",
        "printf(): a field width or precision is over the lake route's limit of 9999",
    ),
    (
        "SELECT rpad('a', 16000, 'a') LIKE '%' || 'a%a%a_b'",
        400,
        "54000",
        "like(): the text's length for the pattern's % wildcards is over the lake route's limit of 16384 steps",
    ),
    # numbers PostgreSQL's numeric cannot hold: its error, before any rule writes them out (a 100 MB error body
    # after 5.9 s; a MemoryError and 500)
    ("SELECT 1e99999999", 400, "22003", "value overflows numeric format"),
    ("SELECT 1e999999999", 400, "22003", "value overflows numeric format"),
    ("SELECT '1e99999999'::numeric", 400, "22003", "value overflows numeric format"),
    ("SELECT 0.0e-99999", 400, "22003", "value overflows numeric format"),
    ("SELECT 1" + "0" * 131072, 400, "22003", "value overflows numeric format"),
    # DuckDB reads it as a double (it answered Infinity); ORDER BY with it was a 500
    ("SELECT 1" + "1" * 5000, 400, "0A000", "(5001 characters) (more than 38 digits)"),
    # (PostgreSQL's own analysis error comes before the lake route's refusal)
    ("SELECT 1 ORDER BY 1" + "0" * 5000, 400, "42601", "non-integer constant in ORDER BY"),
    # a volatile argument would be computed once for the check and again for the call
    (
        "SELECT regexp_replace('aaa', CASE WHEN random() < 2 THEN 'a' END, 'b')",
        400,
        "0A000",
        "regexp_replace() over RANDOM() cannot run on the lake route",
    ),
    (
        "SELECT string_to_array(rpad(',', 100, ','), CASE WHEN random() < 2 THEN ',' END)",
        400,
        "0A000",
        "pg_string_to_array() over RANDOM() cannot run on the lake route",
    ),
]


@pytest.mark.parametrize(("sql", "status", "sqlstate", "fragment"), REFUSED, ids=[c[0][:60] for c in REFUSED])
def test_calls_past_their_bounds_are_refused_before_they_run(
    client: httpx.Client, sql: str, status: int, sqlstate: str, fragment: str
) -> None:
    response = client.post("/v1/query", json={"sql": sql})
    assert response.status_code == status, response.text[:2000]
    error = error_of(response)
    assert error["sqlstate"] == sqlstate, error
    assert fragment in error["message"], error


def test_explain_does_not_fold_a_call_past_its_bound(client: httpx.Client, engine: DuckDBEngine) -> None:
    """EXPLAIN of levenshtein over 100k characters ran 225 s: DuckDB folds constants at plan time, where no
    interrupt is seen. Now the call stays unfolded in the plan (its bound's check fails when folded), and
    planning it costs next to nothing (the fold is 10^10 cells of work, tens of seconds of CPU)."""
    sql = "SELECT levenshtein(repeat('a', 100000), repeat('b', 100000))"
    before = cpu_seconds()
    explained = client.post("/v1/explain", json={"sql": sql})
    as_query = client.post("/v1/query", json={"sql": f"EXPLAIN {sql}"})
    assert cpu_seconds() - before < LIMIT, "EXPLAIN computed the call"
    assert explained.status_code == 200, explained.text[:2000]
    assert explained.json()["route"] == "duckdb"
    assert as_query.status_code == 200, as_query.text[:2000]
    plan = engine.db.cursor().execute(f"EXPLAIN {sql}").fetchall()[0][1]
    assert "list_apply" in plan, plan  # the bounded call, not a folded constant


def test_error_messages_are_capped_and_say_so(
    env: tuple[LiveServer, psycopg.Connection], client: httpx.Client
) -> None:
    """DuckDB and PostgreSQL echo the value they cannot read: the message stops at MAX_MESSAGE characters (a
    table-less statement on the DuckDB route gets PostgreSQL's error from its check, gateway/pgcheck.py)."""
    value = "a" * 16000
    whole = f'PostgreSQL: invalid input syntax for type integer: "{value}" (SQLSTATE 22P02)'
    response = client.post("/v1/query", json={"sql": "SELECT CAST(rpad('a', 16000, 'a') AS integer)"})
    assert response.status_code == 400, response.text[:2000]
    error = error_of(response)
    assert error["sqlstate"] == "22P02"
    assert (
        error["message"]
        == f"{whole[:MAX_MESSAGE]}... [message cut: {len(whole) - MAX_MESSAGE} more characters]"
    )
    sql = "SELECT CAST(rpad('a', 16000, 'a') AS integer) FROM pg.public.one"
    on_postgres = client.post("/v1/query", json={"sql": sql})
    assert on_postgres.status_code == 400, on_postgres.text[:2000]
    message = error_of(on_postgres)["message"]
    assert re.search(r"\.\.\. \[message cut: \d+ more characters\]$", message), message[-200:]
    assert len(message) < MAX_MESSAGE + 60
    assert capped("short") == "short"


# ----------------------------------------------------------------------- at the bounds: 408, and then idle

#: the same functions at their bounds on every row: the time limit ends each, between two vectors
AT_THE_BOUNDS = [
    f"SELECT sum(levenshtein(rpad(g::text, 255, 'x'), rpad('b', 255, 'y'))) {ENDLESS}",
    f"SELECT sum(damerau_levenshtein(rpad(g::text, 100, 'x'), rpad('b', 100, 'y'))) {ENDLESS}",
    f"SELECT sum(length(lpad(g::text, 16384, 'y'))) {ENDLESS}",
    f"SELECT sum(length(repeat(rpad(g::text, 10, '-'), 1638))) {ENDLESS}",
    f"SELECT sum(len(range(g, g + 4096))) {ENDLESS}",
    f"SELECT sum(len(range(TIMESTAMP '2024-01-01' + g * INTERVAL '1 minute', "
    f"TIMESTAMP '2024-01-01' + (g + 1023) * INTERVAL '1 minute', INTERVAL '1 minute'))) {ENDLESS}",
    f"SELECT sum(len(string_split(rpad(g::text, 2047, ','), ','))) {ENDLESS}",
    f"SELECT sum(len(regexp_extract_all(rpad(g::text, 1024, 'a'), 'a.'))) {ENDLESS}",
    f"SELECT count(*) {ENDLESS} WHERE rpad(g::text, 128, 'a') LIKE '%' || 'a%a_b'",
    f"SELECT count(*) {ENDLESS} WHERE rpad(g::text, 16000, 'a') LIKE '%a%a%a_b'",
]


def cpu_seconds() -> float:
    """CPU time of this process, which runs the gateway and its DuckDB."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


@pytest.mark.parametrize("sql", AT_THE_BOUNDS, ids=[s[7:60] for s in AT_THE_BOUNDS])
def test_a_query_at_the_bounds_times_out_and_frees_its_worker_and_cpu(
    env: tuple[LiveServer, psycopg.Connection], client: httpx.Client, sql: str
) -> None:
    live = env[0]
    start = time.monotonic()
    response = client.post("/v1/query", json={"sql": sql})
    assert response.status_code == 408, response.text[:2000]
    assert error_of(response)["sqlstate"] == "57014"
    while live.gateway.metrics.in_flight and time.monotonic() < start + 2 * LIMIT:
        time.sleep(0.01)
    assert live.gateway.metrics.in_flight == 0, "the query still holds its worker at twice its time limit"
    # from twice the limit on, nothing computes any more: the process's CPU time stands still
    time.sleep(max(0.0, start + 2 * LIMIT - time.monotonic()))
    before = cpu_seconds()
    time.sleep(LIMIT)
    burnt = cpu_seconds() - before
    assert burnt < 0.25 * LIMIT, f"{burnt:.2f} s of CPU in the {LIMIT:g} s after twice the time limit: {sql}"
    after = client.post("/v1/query", json={"sql": "SELECT 1 AS one"})
    assert after.status_code == 200 and after.json()["rows"] == [{"one": 1}], after.text


# ------------------------------------------------------------------------ ordinary calls: PostgreSQL's answers

STRINGS = ["", "a", "abc", "a_b%c", "x\ny", "aaab", "ab" * 10 + "_b", "ÄÖü ab", "b%a_a", "abab!_b"]
#: literal patterns the lake route rewrites into regular expressions (two '%' with more pattern, and '_' or an
#: escape), and some it leaves to DuckDB
PATTERNS = [
    "%a%b%c",
    "%a_%b",
    "%\\%%_%",
    "%a%a%a_b",
    "_%_%_",
    "%Ä%ü%",
    "%a%\\_b",
    "a%",
    "%b%",
    "%!_b",
    "%a%!%%",
]


def _values(strings: list[str]) -> str:
    rows = ", ".join("(" + ("NULL" if s is None else "'" + s.replace("'", "''") + "'") + ")" for s in strings)
    return f"(VALUES {rows}) AS t(s)"


def _compare(client: httpx.Client, conn: psycopg.Connection, sql: str) -> None:
    response = client.post("/v1/query", json={"sql": sql})
    assert response.status_code == 200, (sql, response.text[:2000])
    body = response.json()
    assert body["route"] == "duckdb"
    names = [c["name"] for c in body["columns"]]
    gateway = [tuple(canon(row[n]) for n in names) for row in body["rows"]]
    assert gateway == pg_rows(conn, sql), sql


@pytest.mark.parametrize("pattern", PATTERNS)
def test_like_answers_are_postgresqls(
    env: tuple[LiveServer, psycopg.Connection], client: httpx.Client, pattern: str
) -> None:
    quoted = pattern.replace("'", "''")
    sql = (
        f"SELECT s, s LIKE '{quoted}' AS l, s NOT LIKE '{quoted}' AS nl, s LIKE '{quoted}' ESCAPE '!' AS le, "
        f"s LIKE ('{quoted}' || '') AS lc FROM {_values(STRINGS)} ORDER BY s"
    )
    if pattern.isascii():  # ILIKE of other letters follows the database's locale
        sql = sql.replace(
            " FROM ", f", s ILIKE '{quoted.upper()}' AS il, s NOT ILIKE '{quoted}' AS nil FROM ", 1
        )
    _compare(client, env[1], sql)


ORDINARY = [
    "SELECT levenshtein('kitten', 'sitting') AS a, levenshtein(rpad('a', 255, 'b'), 'ab') AS b",
    "SELECT lpad('7', 3, '0') AS a, rpad('ab', 5) AS b, repeat('ab', 3) AS c, lpad('abc', 2) AS d",
    "SELECT replace('a.b.c', '.', '::') AS a, split_part('a,b,c', ',', 2) AS b, string_to_array('a b c', ' ') AS c",
    "SELECT regexp_replace('aaa', 'a', 'bc', 'g') AS a, regexp_split_to_array('a1b22c', '[0-9]+') AS b",
    "SELECT array_to_string(ARRAY[1, 2, 3], '-') AS a, 'abc' ~ 'b' AS b, 'abc' SIMILAR TO 'a%' AS c",
    "SELECT generate_series(1, 5) AS g",
    "SELECT g::text AS t FROM generate_series('2024-01-01'::timestamp, '2024-01-03'::timestamp, '1 day') AS g",
    # numbers as text: JSON writes a numeric as a number, which does not say its type
    "SELECT (1e5 + 0)::text AS a, 12345678901234567890123456789012345678::text AS b, (1.5e-3 + 0)::text AS c, "
    "'1e10'::numeric::text AS d",
]


@pytest.mark.parametrize("sql", ORDINARY)
def test_ordinary_calls_keep_postgresqls_answers(
    env: tuple[LiveServer, psycopg.Connection], client: httpx.Client, sql: str
) -> None:
    _compare(client, env[1], sql)


# ------------------------------------------------------------------------------------- every shadowed built-in

#: a call past its bound for every built-in that pgbounds shadows, by each of its names
PAST_THE_BOUND = {
    "levenshtein": ("levenshtein(repeat('a', 256), 'b')", "22023"),
    "editdist3": ("editdist3('b', repeat('a', 256))", "22023"),
    "damerau_levenshtein": ("damerau_levenshtein(repeat('a', 101), 'b')", "54000"),
    "jaro_similarity": ("jaro_similarity(repeat('a', 1001), 'b')", "54000"),
    "jaro_winkler_similarity": ("jaro_winkler_similarity(repeat('a', 1001), 'b', 0.5)", "54000"),
    "repeat": ("repeat([1, 2], 8193)", "54000"),
    "lpad": ("lpad('a', 16385, 'b')", "54000"),
    "rpad": ("rpad('a', 16385, 'b')", "54000"),
    "replace": ("replace(repeat('a', 2000), 'a', repeat('b', 100))", "54000"),
    "array_to_string": ("array_to_string(range(4000), '--------------------')", "54000"),
    "printf": ("printf('%.99999f', 1.5)", "54000"),
    "range": ("range(4097)", "54000"),
    "generate_series": ("generate_series(0, 4097)", "54000"),
    "list_resize": ("list_resize([1], 4097)", "54000"),
    "array_resize": ("array_resize([1], 4097, 0)", "54000"),
    "equi_width_bins": ("equi_width_bins(0, 10, 4097, false)", "54000"),
    "string_split": ("string_split(repeat(',', 3000), ',')", "54000"),
    "str_split": ("str_split(repeat(',', 3000), ',')", "54000"),
    "string_to_array": ("string_to_array(repeat(',', 3000), ',')", "54000"),
    "split": ("split(repeat(',', 3000), ',')", "54000"),
    "regexp_matches": ("regexp_matches('a', repeat('a', 1025))", "54000"),
    "regexp_full_match": ("regexp_full_match('a', repeat('a', 1025), 'i')", "54000"),
    "regexp_extract": ("regexp_extract('a', repeat('a', 1025), 0)", "54000"),
    "regexp_extract_all": ("regexp_extract_all(repeat('ab', 600), 'a')", "54000"),
    "string_split_regex": ("string_split_regex(repeat('ab', 600), 'a')", "54000"),
    "str_split_regex": ("str_split_regex(repeat('ab', 600), 'a', 'i')", "54000"),
    "regexp_split_to_array": ("regexp_split_to_array(repeat('ab', 600), 'a')", "54000"),
    "regexp_replace": ("regexp_replace(repeat('a', 2000), 'a', repeat('b', 20), 'g')", "54000"),
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DuckDBEngine]:
    duck = DuckDBEngine(DuckDBConfig(warehouse=str(tmp_path_factory.mktemp("warehouse"))))
    duck.open()
    try:
        yield duck
    finally:
        duck.close()


def test_every_shadowed_builtin_has_a_call_past_its_bound() -> None:
    assert sorted(PAST_THE_BOUND) == sorted(pgbounds.shadowed())


@pytest.mark.parametrize("name", sorted(PAST_THE_BOUND))
def test_each_name_of_a_bounded_builtin_refuses_past_its_bound(engine: DuckDBEngine, name: str) -> None:
    sql, sqlstate = PAST_THE_BOUND[name]
    with pytest.raises(QueryError) as raised:
        engine.value(f"SELECT {sql}")
    assert raised.value.sqlstate == sqlstate, str(raised.value)
    wanted = f"{name} argument exceeds" if sqlstate == "22023" else "is over the lake route's limit of"
    assert wanted in str(raised.value)


def test_the_bounded_builtins_stay_on_the_allow_list(engine: DuckDBEngine) -> None:
    assert set(pgbounds.shadowed()) <= engine.functions()


# ------------------------------------------------------------------------------------------------ the pieces


def test_like_patterns_become_the_regular_expressions_they_mean() -> None:
    assert dialect_bounds.like_regex("%a%%b_c%", None) == ".*a.*b.c.*"
    assert dialect_bounds.like_regex("a\\%b.c", "\\") == "a%b\\.c"
    assert dialect_bounds.like_regex("x!_y(", "!") == "x_y\\("
    assert dialect_bounds.like_regex("ab\\", "\\") is None
    assert dialect_bounds._inner_wildcards("%a%a%a_b", None, "%") == 3
    assert dialect_bounds._inner_wildcards("%abc%", None, "%") == 1
    assert dialect_bounds._inner_wildcards("a\\%b%%", "\\", "%") == 0


def test_numeric_overflow_is_postgresqls() -> None:
    from decimal import Decimal

    assert not dialect_bounds.overflows(Decimal("1e131071"))
    assert dialect_bounds.overflows(Decimal("1e131072"))
    assert not dialect_bounds.overflows(Decimal("1e-16383"))
    assert dialect_bounds.overflows(Decimal("1e-16384"))
    assert not dialect_bounds.overflows(Decimal("0e99999999"))
    assert dialect_bounds.overflows(Decimal("0.0e-99999"))

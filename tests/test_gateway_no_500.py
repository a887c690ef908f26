"""Never a 500, never a partial answer that looks whole, and no EXPLAIN that shows what the gateway reads tables
from (issue 27 item 6), through real HTTP to a real gateway over a real PostgreSQL and lake.

* A generator sends queries that make each engine fail in each way we know (privileges, division by zero, casts,
  out-of-range values, a regular expression, the connection lost mid-scan, a table dropped between plan and run,
  the source's own statement_timeout) on both routes: each answer has its exact status and SQLSTATE, PostgreSQL's
  words, and nothing of the engine's internals (the scan's ``COPY`` text, the DSN, warehouse files).
* ``max_result_bytes`` reached after the first byte: each of the four formats says the rows are not the whole
  result (JSON ``"truncated": true`` with ``"error"``, an NDJSON error line, CSV and Arrow cut off); reached
  before it: a 413.
* ``/v1/explain`` and ``EXPLAIN`` name tables as the user wrote them, with or without the lake cache.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pyarrow as pa
import pytest

from lakegate import settings as settings_mod
from lakegate.connectors.iceberg import catalog as lake_catalog
from tests.gateway_fixtures.harness import LiveServer, database, gateway_settings, live_server

TOKEN = "no-500-suite-token"
PASSWORD = "Pw-of-the-no500-role-3b1c"
ROWS = 150_000  #: rows of open_t: about 16 MB of text, over the 8 MiB result cap and the 4 MiB first read
#: what no answer may hold: the role's password, a DSN, the scan's internal COPY, lake files, cache tables
LEAKS = (PASSWORD, "host=", "dbname=", "user=", "postgresql://", "COPY (", "STDOUT", "FORMAT", "lakegate_cache",
         "iceberg_scan", "read_parquet", "metadata.json", ".parquet", "file://", "Traceback")  # fmt: skip
FEDERATED = "SELECT {expr} AS x FROM pg.public.{table} t JOIN lake.public.facts f ON f.id = t.id"
ROUTES = {"postgres": "SELECT {expr} AS x FROM pg.public.{table} t", "duckdb": FEDERATED}


@dataclass
class Env:
    live: LiveServer
    admin: psycopg.Connection
    role: str
    warehouse: str
    dsn: str  #: the test server's superuser, in the suite's database


def settings_for(dsn: str, role: str, lake_dir: Path, **gateway: Any) -> settings_mod.Settings:
    """The reader role's gateway, plus source ``slow``: the same database through a session whose own
    statement_timeout is 300 ms (what DuckDB's scans of it run under)."""
    settings = gateway_settings(
        f"{dsn} user={role} password={PASSWORD}", lake_dir, tokens=[TOKEN], timeout="20s", **gateway
    )
    slow = f"{dsn} user={role} password={PASSWORD} options='-c statement_timeout=300'"
    settings.sources.append(settings_mod.SourceSettings(name="slow", dsn=slow))
    catalog = lake_catalog.from_settings(settings.lake)
    catalog.create_namespace("public")
    facts = catalog.create_table("public.facts", pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    facts.append(pa.table({"id": list(range(100)), "v": list(range(100))}))
    return settings


@pytest.fixture(scope="module")
def env(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    lake_dir = tmp_path_factory.mktemp("lake")
    role = f"gw_no500_{uuid.uuid4().hex[:6]}"
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("CREATE TABLE open_t (id int, v text)")
        admin.execute(f"INSERT INTO open_t SELECT g, repeat('x', 100) FROM generate_series(1, {ROWS}) g")
        admin.execute("CREATE TABLE closed_t (id int, secret text)")  # no privilege for the gateway's role
        admin.execute("INSERT INTO closed_t VALUES (1, 'hidden')")
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        admin.execute(f"GRANT SELECT ON open_t TO {role}")
        settings = settings_for(dsn, role, lake_dir, max_result_bytes="8MiB", cache_bytes=0)
        try:
            with live_server(settings) as live:
                yield Env(live, admin, role, str(settings.lake.warehouse), dsn)
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


def post(live: LiveServer, sql: str, **body: Any) -> httpx.Response:
    with live.client(TOKEN) as client:
        return client.post("/v1/query", json={"sql": sql, **body})


def check_error(env: Env, response: httpx.Response, status: int, sqlstate: str | None, fragment: str) -> str:
    """The answer's exact status and SQLSTATE, the fragment in its message, no leak; the message."""
    where = f"{response.status_code} {response.text[:1500]}"
    assert response.status_code == status, where
    error = response.json()["error"]
    assert error.get("sqlstate") == sqlstate, where
    assert fragment in error["message"], where
    for leak in (*LEAKS, env.warehouse):
        assert leak not in response.text, f"leaks {leak!r}: {where}"
    return str(error["message"])


# ------------------------------------------------------------------------- failures the query itself causes


@dataclass(frozen=True)
class Failure:
    name: str
    table: str
    expr: str
    status: int
    sqlstate: str
    fragment: str  #: PostgreSQL's words, on both routes


FAILURES = [
    Failure("permission", "closed_t", "t.secret", 403, "42501", "refused: permission denied for table closed_t"),
    Failure("division by zero", "open_t", "t.id / (t.id - t.id)", 400, "22012", "division by zero"),
    Failure("cast", "open_t", "t.v::int", 400, "22P02", 'invalid input syntax for type integer: "xxx'),
    Failure("out of range", "open_t", "t.id * 2147483647", 400, "22003", "integer out of range"),
    Failure("date", "open_t", "make_date(2024, 13, t.id)", 400, "22008", "date field value out of range"),
    Failure("regex", "open_t", "t.v ~ '('", 400, "2201B", "invalid regular expression"),
    Failure("sqrt", "open_t", "sqrt(-t.id)", 400, "2201F", "cannot take square root of a negative number"),
]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("failure", FAILURES, ids=[f.name for f in FAILURES])
def test_engine_failures_answer_like_postgresql(env: Env, failure: Failure, route: str) -> None:
    response = post(env.live, ROUTES[route].format(expr=failure.expr, table=failure.table))
    message = check_error(env, response, failure.status, failure.sqlstate, failure.fragment)
    if failure.name == "permission":  # PostgreSQL refused it: said as the PostgreSQL route says it
        assert message.startswith("PostgreSQL refused: permission denied for table closed_t"), message
        assert "GRANT" in message and "DuckDB" not in message, message


def test_each_route_is_the_one_named(env: Env) -> None:
    for route, sql in ROUTES.items():
        with env.live.client(TOKEN) as client:
            answer = client.post("/v1/explain", json={"sql": sql.format(expr="t.v", table="open_t")}).json()
        assert answer["route"] == route and answer["tables"][0] == "pg.public.open_t", answer


def test_permission_through_the_lake_cache(pg_server: Any, tmp_path: Path) -> None:
    """With the lake cache on, the cache's load of the table fails first, then the scan: still a 403."""
    role = f"gw_no500c_{uuid.uuid4().hex[:6]}"
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("CREATE TABLE closed_t (id int, secret text)")
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        try:
            with live_server(settings_for(dsn, role, tmp_path)) as live:
                env = Env(live, admin, role, str(tmp_path / "warehouse"), dsn)
                for _ in range(3):  # the cache's first miss, its failed load, its back-off
                    response = post(live, FEDERATED.format(expr="t.secret", table="closed_t"))
                    check_error(env, response, 403, "42501", "permission denied for table closed_t")
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")


#: values each engine rejects in its own way (types, ranges, formats, names): no answer may be a 500 or leak
SWEEP = """1/0 | 'abc'::json | '1e400'::float8 | 2147483647::int + 1 | power(10, 400) | exp(1000) | acos(2)
| '12345.6'::numeric(4,1) | make_timestamp(2024, 1, 1, 25, 0, 0) | to_timestamp(1e20) | chr(0) | chr(-1)
| decode('zz', 'hex') | generate_series(1, 10, 0) | '{1,2'::int[] | jsonb_object_keys('[1]') | factorial(-1)
| interval '1 day' * 1e300 | date_trunc('fortnight', now()) | now() AT TIME ZONE 'Mars/Olympus'
| width_bucket(1, 1, 1, 1) | lcm(9223372036854775807::bigint, 2) | 'NaN'::float8::bigint | (1, 2) = (1, 2, 3)
| 'a' COLLATE "nonexistent" | 'nonexistent'::regtype | '<a'::xml | B'101' & B'1' | format('%s %s', 'a')
| split_part('a,b', ',', 0) | overlay('abc' placing 'x' from -1) | array_length(ARRAY[1], 0) | '\\xzz'::bytea
| to_number('abc', '999') | string_agg('a', 1) | t.v::date | t.v::interval | repeat(t.v, -1)"""


@pytest.mark.parametrize("expr", [e.strip() for e in SWEEP.split("|")])
def test_no_engine_error_is_a_500(env: Env, expr: str) -> None:
    for route, sql in ROUTES.items():
        response = post(env.live, sql.format(expr=expr, table="open_t") + " WHERE t.id = 1")
        where = f"{route}: {response.status_code} {response.text[:1000]}"
        assert response.status_code in (200, 400, 403, 404, 408, 413, 503), where
        for leak in (*LEAKS, env.warehouse):
            assert leak not in response.text, f"leaks {leak!r}: {where}"


# ----------------------------------------------------------- failures that happen to the query while it waits


def waiting_backends(env: Env) -> list[int]:
    """The role's sessions waiting for a lock (the query's scan, blocked by the test's lock)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        rows = env.admin.execute(
            "SELECT pid FROM pg_stat_activity WHERE usename = %s AND wait_event_type = 'Lock'", (env.role,)
        ).fetchall()
        if rows:
            return [pid for (pid,) in rows]
        time.sleep(0.02)
    raise AssertionError("the query never waited for the table's lock")


Act = Callable[[psycopg.Connection, list[int]], None]


def while_locked(env: Env, table: str, sql: str, act: Act | None, **body: Any) -> httpx.Response:
    """Send ``sql`` while a transaction holds an exclusive lock on ``table``; once the query waits for it,
    ``act(locker, the waiting sessions)`` (None: the lock is held until the answer came); then the lock goes."""
    answer: dict[str, httpx.Response] = {}
    with psycopg.connect(env.dsn) as locker:
        locker.execute(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
        sender = threading.Thread(target=lambda: answer.setdefault("response", post(env.live, sql, **body)))
        sender.start()
        if act is not None:
            act(locker, waiting_backends(env))
        else:
            sender.join(60)
        locker.commit()
        sender.join(60)
    assert not sender.is_alive(), "no answer"
    return answer["response"]


def fresh_table(env: Env) -> str:
    name = f"t_{uuid.uuid4().hex[:8]}"
    env.admin.execute(f"CREATE TABLE {name} (id int, v text)")
    env.admin.execute(f"INSERT INTO {name} SELECT g, 'x' FROM generate_series(1, 10) g")
    env.admin.execute(f"GRANT SELECT ON {name} TO {env.role}")
    return name


@pytest.mark.parametrize("route", ROUTES)
def test_connection_lost_mid_scan(env: Env, route: str) -> None:
    table = fresh_table(env)
    def terminate(_: psycopg.Connection, pids: list[int]) -> None:
        for pid in pids:
            env.admin.execute("SELECT pg_terminate_backend(%s)", (pid,))

    response = while_locked(env, table, ROUTES[route].format(expr="t.id", table=table), terminate)
    # libpq's words only (the server's FATAL does not reach a session blocked in a lock wait), on both routes
    check_error(env, response, 503, "08006", "failed while the query read from it (server closed the connection")
    assert post(env.live, ROUTES[route].format(expr="count(*)", table=table)).json()["rows"] == [{"x": 10}]


DROPS = {  # what is dropped while the query waits -> the answer's status, SQLSTATE, PostgreSQL's words
    "table": ("DROP TABLE {table}", 404, "42P01", 'PostgreSQL: relation "public.{table}" does not exist'),
    # the column as each route's SQL names it: the user's t.v, the scan's "v"
    "column": ("ALTER TABLE {table} DROP COLUMN v", 400, "42703", "PostgreSQL: column {column} does not exist"),
}


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("dropped", DROPS)
def test_dropped_between_plan_and_run(env: Env, route: str, dropped: str) -> None:
    table = fresh_table(env)
    ddl, status, sqlstate, fragment = DROPS[dropped]

    def drop(locker: psycopg.Connection, _: list[int]) -> None:
        locker.execute(ddl.format(table=table))

    response = while_locked(env, table, ROUTES[route].format(expr="t.v", table=table), drop)
    column = "t.v" if route == "postgres" else '"v"'
    check_error(env, response, status, sqlstate, fragment.format(table=table, column=column))


def test_lake_file_removed_between_plan_and_run(env: Env) -> None:
    """A data file gone (maintenance expired its snapshot, or a hand) is a 503 that names no file."""
    catalog = lake_catalog.from_settings(env.live.gateway.lake.settings)
    gone = catalog.create_table(f"public.gone_{uuid.uuid4().hex[:6]}", pa.schema([("id", pa.int64())]))
    gone.append(pa.table({"id": [1, 2]}))
    for task in gone.scan().plan_files():
        Path(task.file.file_path.removeprefix("file://")).unlink()
    response = post(env.live, f"SELECT sum(id) AS n FROM lake.{gone.name()[-2]}.{gone.name()[-1]}")
    check_error(env, response, 503, None, "a file of a lake table cannot be read (No such file or directory)")


@pytest.mark.parametrize("route", ROUTES)
def test_statement_timeout_of_postgresql(env: Env, route: str) -> None:
    """The PostgreSQL route sets the request's limit as statement_timeout; DuckDB's scans of source ``slow``
    run under that session's own 300 ms (a lock held until the answer came keeps them waiting)."""
    table = fresh_table(env)
    if route == "postgres":
        sql, body = ROUTES[route].format(expr="t.id", table=table), {"timeout_ms": 1500}
    else:
        sql, body = FEDERATED.replace("pg.public", "slow.public").format(expr="t.id", table=table), {}
    response = while_locked(env, table, sql, None, **body)
    fragment = "time limit of 1.5 s" if route == "postgres" else "canceling statement due to statement timeout"
    check_error(env, response, 408, "57014", fragment)


# ------------------------------------------------------------------------------ the result cap, mid-stream

#: the whole of open_t on each route (the DuckDB one joins a one-row lake subquery: a federated scan)
WHOLE = {
    "postgres": "SELECT t.id, t.v FROM pg.public.open_t t",
    "duckdb": "SELECT t.id, t.v FROM pg.public.open_t t, (SELECT 1 FROM lake.public.facts LIMIT 1) f",
}


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def stream(live: LiveServer, sql: str, fmt: str) -> tuple[httpx.Response, bytes, Exception | None]:
    """The response, the bytes that came, and the error that ended the body early (None: it ended)."""
    with live.client(TOKEN) as client, client.stream("POST", "/v1/query", json={"sql": sql, "format": fmt}) as r:
        data = bytearray()
        try:
            for chunk in r.iter_bytes():
                data += chunk
        except httpx.RemoteProtocolError as exc:  # the chunked body cut off
            return r, bytes(data), exc
        return r, bytes(data), None


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv", "arrow"])
@pytest.mark.parametrize("route", ROUTES)
def test_result_cap_reached_mid_stream_is_never_a_whole_answer(env: Env, route: str, fmt: str) -> None:
    server_log = Records()
    logging.getLogger("uvicorn.error").addHandler(server_log)
    try:
        response, body, cut = stream(env.live, WHOLE[route], fmt)
    finally:
        logging.getLogger("uvicorn.error").removeHandler(server_log)
    # the cut is the gateway's own warning, not a server traceback
    assert [r.getMessage() for r in server_log.records if r.levelno >= logging.ERROR] == []
    assert response.status_code == 200 and response.headers["x-lakegate-route"] == route  # rows were sent
    assert "x-lakegate-truncated" not in response.headers  # the status went before the end was known
    cap = "the result is larger than the gateway's cap of 8388608 bytes"
    if fmt == "json":
        answer = json.loads(body)
        assert cut is None and answer["truncated"] is True, {k: v for k, v in answer.items() if k != "rows"}
        assert answer["error"]["code"] == "too_large" and cap in answer["error"]["message"]
        assert 0 < len(answer["rows"]) < ROWS and answer["rows"][0] == {"id": 1, "v": "x" * 100}
    elif fmt == "ndjson":
        *rows, last = body.decode().splitlines()
        assert cut is None and 0 < len(rows) < ROWS and json.loads(rows[0]) == {"id": 1, "v": "x" * 100}
        assert json.loads(last)["error"]["code"] == "too_large" and cap in last
    else:  # cut off before its end: an incomplete HTTP body, and Arrow without its trailer and end marker
        assert cut is not None and "incomplete chunked read" in str(cut)
        assert body.startswith(b'id,v\n1,"xxx' if fmt == "csv" else b"\xff\xff\xff\xff")
        assert b"lakegate.truncated" not in body


@pytest.mark.parametrize("fmt", ["json", "ndjson", "csv", "arrow"])
@pytest.mark.parametrize("route", ROUTES)
def test_result_cap_reached_before_the_first_byte_is_a_413(env: Env, route: str, fmt: str) -> None:
    # one value of 10 MB (string_agg: repeat() is bounded on the lake route, pgbounds)
    whole = "(SELECT string_agg(repeat('x', 100), '') FROM generate_series(1, 100000) g) AS v"
    big = WHOLE[route].replace("t.id, t.v", f"t.id, {whole}") + " WHERE t.id = 1"
    response = post(env.live, big, format=fmt)
    check_error(env, response, 413, None, "larger than the gateway's cap of 8388608 bytes")


# ----------------------------------------------------------------------------- EXPLAIN in the user's terms


def explain(live: LiveServer, sql: str) -> dict[str, Any]:
    with live.client(TOKEN) as client:
        out: dict[str, Any] = client.post("/v1/explain", json={"sql": sql}).json()
        as_sql = client.post("/v1/query", json={"sql": f"EXPLAIN {sql}"}).json()["rows"][0]
    assert as_sql["sql"] == out["engines"][0]["sql"] and as_sql["plan"] == out["plan"]
    return out


def no_internals(env: Env, out: dict[str, Any]) -> None:
    text = json.dumps(out, ensure_ascii=False)
    for leak in (*LEAKS, env.warehouse, "/facts/"):
        assert leak not in text, f"leaks {leak!r}: {text[:3000]}"


def test_explain_shows_no_files(env: Env) -> None:
    out = explain(env.live, "SELECT * FROM lake.public.facts WHERE v > 3")
    no_internals(env, out)
    body = 'SELECT * FROM "lake.public.facts" AS facts WHERE v > 3 LIMIT 100001'  # the views left out
    assert out["engines"] == [{"engine": "duckdb", "source": None, "sql": body}]
    assert out["views"] == {"lake.public.facts": "lake.public.facts: read from its Iceberg data files"}
    assert "ICEBERG_SCAN" in out["plan"] and "v>3" in out["plan"]
    facts = lake_catalog.from_settings(env.live.gateway.lake.settings).load_table("public.facts")
    version = facts.current_snapshot().snapshot_id  # type: ignore[union-attr]
    out = explain(env.live, f"SELECT sum(id) AS n FROM lake.public.facts FOR VERSION AS OF {version}")
    no_internals(env, out)
    assert out["views"] == {
        f"lake.public.facts@{version}": f"lake.public.facts at version {version}: read from its Iceberg data files"
    }


def test_explain_names_the_tables_the_lake_cache_holds(pg_server: Any, tmp_path: Path) -> None:
    role = f"gw_no500e_{uuid.uuid4().hex[:6]}"
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as admin:
        admin.execute("CREATE TABLE dim (id int, name text)")
        admin.execute("INSERT INTO dim SELECT g, 'n' || g FROM generate_series(1, 100) g")
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        admin.execute(f"GRANT SELECT ON dim TO {role}")
        try:
            with live_server(settings_for(dsn, role, tmp_path)) as live:
                env = Env(live, admin, role, str(tmp_path / "warehouse"), dsn)
                sql = "SELECT f.v, d.name FROM lake.public.facts f JOIN pg.public.dim d ON d.id = f.id"
                deadline = time.monotonic() + 60
                while len(live.gateway.cache_figures()["tables"]) < 2:  # both loaded by the cache's thread
                    assert time.monotonic() < deadline, live.gateway.cache_figures()
                    post(live, sql)
                    time.sleep(0.05)
                out = explain(live, sql)
        finally:
            admin.execute(f"DROP OWNED BY {role}")
            admin.execute(f"DROP ROLE {role}")
    no_internals(env, out)
    assert out["views"] == {
        "lake.public.facts": "lake.public.facts: read from the lake cache (in memory)",
        "pg.public.dim": "pg.public.dim: read from the lake cache (in memory)",
    }
    lines = out["plan"].splitlines()
    for table in ("lake.public.facts", "pg.public.dim"):  # in DuckDB's boxes, which stay aligned
        at = next(i for i, line in enumerate(lines) if f" {table} " in line)
        assert "Table:" in lines[at - 1], out["plan"]
        assert len(lines[at]) == len(lines[at - 1]), out["plan"]

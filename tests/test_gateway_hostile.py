"""The gateway against a hostile token holder: one data-driven table of cases (tests/gateway_fixtures/hostile.sql),
each sent through real HTTP to a real gateway over a real PostgreSQL and lake, must get its status and a message
that says why; no answer ever carries a secret (the source DSN's password, the protected table's rows, engine
internals) or a sqlglot class name, and the gateway is healthy afterwards. The sandbox of each engine (layer 3) is
also tested on its own, with the guard bypassed."""

from __future__ import annotations

import glob
import json
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pyarrow as pa
import pytest

from lakegate.connectors.config import SourceSettings
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.query import PERMISSION, QueryError
from lakegate.gateway.config import GatewaySettings
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import (
    FIXTURES,
    LiveServer,
    database,
    gateway_settings,
    live_server,
    read_lines,
)

TOKEN = "hostile-suite-token"
PASSWORD = "Pw-of-the-gateway-role-7f3a"
#: Text that must never appear in an answer: the DSN's password, the protected rows, DuckDB's internals.
LEAKS = (PASSWORD, "secret 1", "postgresql://", "host=", "dbname=", "pwned-by-udf")
#: sqlglot class names that used to reach error messages.
CLASS_NAMES = re.compile(r"\b(Anonymous|Identifier|Subquery|TableAlias|exp\.\w+|sqlglot)\b")


@dataclass
class Case:
    line: int
    status: int
    expect: str  #: a 200's exact JSON (rows, or members of the answer); an error message's fragment
    sql: str
    options: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"line{self.line}"


def read_cases(path: Path) -> list[Case]:
    """``status || expected || sql [|| {options as JSON}]``, one case a line. ``expected`` is, for a 200, the
    exact JSON of its rows (a list: ``[{"n":1}]``, and ``truncated`` must be false) or of some members of the
    answer (an object: ``{"route":"gateway"}``); for an error, a fragment of its message (case and all)."""
    cases = []
    for number, line in read_lines(path):
        status, expect, rest = line.split(" || ", 2)
        sql, _, options = rest.partition(" || {")
        cases.append(Case(number, int(status), expect, sql, json.loads("{" + options) if options else {}))
    return cases


def exact(value: Any) -> str:
    """JSON text that tells 1 from 1.0 and from true, and keeps the members' order (the columns')."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


CASES = read_cases(FIXTURES / "hostile.sql")


@pytest.fixture(scope="module")
def env(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, psycopg.Connection]]:
    lake_dir: Path = tmp_path_factory.mktemp("lake")
    role = f"gw_reader_{uuid.uuid4().hex[:6]}"
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE secrets (id serial PRIMARY KEY, secret text)")
        conn.execute("INSERT INTO secrets (secret) SELECT 'secret ' || g FROM generate_series(1, 10) g")
        # a function of the database's own that shadows a built-in for integers: never callable by a token holder
        conn.execute("CREATE FUNCTION public.lower(integer) RETURNS text LANGUAGE sql AS $$ SELECT 'pwned-by-udf' $$")
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        settings = gateway_settings(
            f"{dsn} user={role} password={PASSWORD}",
            lake_dir,
            timeout="2s",
            max_result_bytes="2MiB",
            tokens=[TOKEN],
            tableless_route="duckdb",  # the fixtures' table-less statements attack DuckDB
        )
        catalog = lake_catalog.from_settings(settings.lake)
        catalog.create_namespace("public")
        facts = catalog.create_table("public.facts", pa.schema([("id", pa.int64()), ("v", pa.int64())]))
        facts.append(pa.table({"id": list(range(100)), "v": list(range(100))}))
        try:
            with live_server(settings) as live:
                yield live, conn
        finally:
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def test_the_table_is_long_enough() -> None:
    assert len(CASES) >= 200
    assert {case.status for case in CASES} <= {200, 400, 401, 403, 404, 408, 413, 503}
    for case in CASES:  # a 200's expectation is exact JSON, never a fragment
        assert case.status != 200 or isinstance(json.loads(case.expect), list | dict), case.id


def expand(sql: str) -> str:
    """``<<text>>*N`` stands for ``text`` repeated N times (deep nesting, long lists)."""
    return re.sub(r"<<(.*?)>>\*(\d+)", lambda m: m.group(1) * int(m.group(2)), sql)


def send(client: httpx.Client, case: Case) -> httpx.Response:
    """Options: ``endpoint`` (query | explain | schema), ``headers`` (``Authorization`` replaces the token; null
    sends none), ``raw`` (the body as text), ``pad_bytes`` (a filler member of that size in the JSON body),
    ``line``/``column``/``sqlstate`` (expected in the error); anything else goes into the JSON body."""
    options = {k: v for k, v in case.options.items() if k not in ("line", "column", "sqlstate")}
    endpoint = options.pop("endpoint", "query")
    headers = {"Authorization": f"Bearer {TOKEN}", **options.pop("headers", {})}
    headers = {k: v for k, v in headers.items() if v is not None}
    body: dict[str, Any] = {"sql": expand(case.sql), **options}
    if "pad_bytes" in body:
        body["padding"] = "x" * body.pop("pad_bytes")
    if endpoint == "schema":
        return client.get("/v1/schema", headers=headers)
    url = f"/v1/{endpoint}"
    if "raw" in body:
        headers["Content-Type"] = "application/json"
        return client.post(url, content=body["raw"].encode(), headers=headers)
    if endpoint == "explain":
        body = {"sql": body["sql"]}
    return client.post(url, json=body, headers=headers)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_hostile_request(env: tuple[LiveServer, psycopg.Connection], case: Case) -> None:
    live, _ = env
    with live.client() as client:
        response = send(client, case)
    where = f"line {case.line}: {case.sql[:300]!r} -> {response.status_code} {response.text[:2000]}"
    assert response.status_code == case.status, where
    if case.status == 200:
        expected, answer = json.loads(case.expect), response.json()
        if isinstance(expected, list):
            assert exact(answer["rows"]) == exact(expected) and answer["truncated"] is False, where
        else:
            assert exact({key: answer.get(key) for key in expected}) == exact(expected), where
    else:
        error = response.json()["error"]
        assert case.expect in error["message"], where
        assert not CLASS_NAMES.search(error["message"]), where
        for key in ("line", "column", "sqlstate"):
            if key in case.options:
                assert error.get(key) == case.options[key], f"{where}: {key}"
    assert "Traceback" not in response.text, where
    for secret in LEAKS:
        assert secret not in response.text, f"{where}: leaks {secret!r}"


def test_gateway_is_healthy_afterwards(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, conn = env
    with live.client(TOKEN) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        rows = client.post("/v1/query", json={"sql": "SELECT count(*) AS n FROM pg.public.secrets"}).json()[
            "rows"
        ]
        assert rows == [{"n": 10}]
        rows = client.post("/v1/query", json={"sql": "SELECT sum(v) AS s FROM lake.public.facts"}).json()[
            "rows"
        ]
        assert rows == [{"s": 4950}]
    assert live.gateway.metrics.in_flight == 0
    assert conn.execute("SELECT count(*) FROM secrets").fetchone() == (10,)
    assert conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone() == (1,)
    assert not glob.glob("/tmp/lakegate_pwned*")
    sandbox = live.gateway.duckdb.db.cursor()
    settings = dict(
        sandbox.execute(
            "SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('enable_external_access', 'lock_configuration', 'python_enable_replacements')"
        ).fetchall()
    )
    assert settings == {
        "enable_external_access": "false",
        "lock_configuration": "true",
        "python_enable_replacements": "false",
    }


def test_duckdb_sandbox_holds_without_the_guard(env: tuple[LiveServer, psycopg.Connection]) -> None:
    duckdb = env[0].gateway.duckdb
    for sql in (
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "COPY (SELECT 1) TO '/tmp/lakegate_pwned.csv'",
        "ATTACH '/tmp/lakegate_pwned.db' AS x",
        "SELECT * FROM glob('/etc/*')",
    ):
        with pytest.raises(QueryError) as caught:
            duckdb.run(sql).close()
        assert caught.value.kind == PERMISSION, f"{sql}: {caught.value}"
    for sql in (
        "SET enable_external_access = true",
        "SET allowed_directories = ['/']",
        "SET python_enable_replacements = true",
        "LOAD httpfs",
        "INSTALL httpfs",
    ):
        with pytest.raises(QueryError):
            duckdb.run(sql).close()
    with pytest.raises(QueryError, match="read-only"):
        duckdb.run("CREATE TABLE pg.public.pwned (x int)").close()
    assert not glob.glob("/tmp/lakegate_pwned*")


def test_postgres_sandbox_holds_without_the_guard(env: tuple[LiveServer, psycopg.Connection]) -> None:
    engine = env[0].gateway.postgres["pg"]
    with pytest.raises(QueryError) as caught:
        engine.run("SELECT pg_read_file('/etc/passwd')", timeout=5).close()
    assert caught.value.kind == PERMISSION  # a role without pg_read_server_files
    for sql in ("CREATE TABLE public.pwned (x int)", "INSERT INTO public.secrets (secret) VALUES ('x')"):
        with pytest.raises(QueryError, match="read-only transaction") as caught:
            engine.fetch(sql)
        assert caught.value.kind == PERMISSION
    with pytest.raises(QueryError) as caught:
        engine.fetch("SELECT nextval('public.secrets_id_seq')")
    assert caught.value.kind == PERMISSION
    result = engine.run("SELECT pg_sleep(10)", timeout=0.5)
    try:
        with pytest.raises(QueryError, match="statement timeout"):
            list(result)  # statement_timeout is set in every transaction
    finally:
        result.close()


def test_postgres_sessions_carry_nothing_from_one_query_to_the_next(
    env: tuple[LiveServer, psycopg.Connection],
) -> None:
    """Guard bypassed: whatever one query leaves in its pooled session (settings, advisory locks, prepared
    statements) is gone when the same session serves the next query."""
    live, admin = env
    engine = PostgresEngine("pg", live.gateway.sources[0].dsn, pool_size=1)
    try:
        (pid,) = engine.fetch("SELECT pg_backend_pid()")[0]
        engine.fetch("SELECT set_config('lakegate.probe', 'leaked', false)")
        engine.fetch("SELECT pg_advisory_lock(4242)")
        session = engine.connection()
        session.execute("PREPARE leaked_plan AS SELECT 1")
        engine.release(session)
        assert engine.fetch("SELECT pg_backend_pid()")[0] == (pid,)  # the very same session
        (setting,) = engine.fetch("SELECT current_setting('lakegate.probe', true)")[0]
        assert setting in (None, "")
        assert engine.fetch("SELECT count(*) FROM pg_prepared_statements WHERE name = 'leaked_plan'")[0] == (0,)
        (locks,) = admin.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid = 4242"
        ).fetchone()  # type: ignore[misc]
        assert locks == 0
        assert engine.fetch("SHOW search_path")[0] == ("pg_catalog,pg_temp",)
        for _ in range(8):  # a statement run often is never prepared behind the reset's back
            assert engine.fetch("SELECT count(*) FROM pg_class WHERE relname = %s", ("secrets",)) == [(1,)]
    finally:
        engine.close()


def test_the_source_role_is_checked_at_start(
    env: tuple[LiveServer, psycopg.Connection], pg_server: Any, tmp_path: Path
) -> None:
    """'lakegate serve' accepts the suite's read-only role, refuses (exit 2, the key named) a superuser, a writer
    or a member of pg_read_server_files unless allow_privileged_role, and then warns at start and in status."""
    live, admin = env
    gateway = live.gateway
    gateway.sources[0].allow_privileged_role = False
    gateway.check_roles()  # the suite's role only reads
    assert gateway.warnings == [] and "warnings" not in gateway.status()
    reader = gateway.sources[0].dsn
    writer, member = (f"gw_{kind}_{uuid.uuid4().hex[:6]}" for kind in ("writer", "member"))
    admin.execute(f"CREATE ROLE {writer} LOGIN")
    admin.execute(f"GRANT SELECT, UPDATE ON public.secrets TO {writer}")
    admin.execute(f"CREATE ROLE {member} LOGIN IN ROLE pg_read_server_files")
    dbname = psycopg.conninfo.conninfo_to_dict(reader)["dbname"]
    try:
        for user, problem in (
            ("postgres", "a superuser"),
            (writer, "allowed to write to, public.secrets"),
            (member, "a member of pg_read_server_files"),
        ):
            dsn = pg_server.dsn(str(dbname), user=user)
            config = tmp_path / f"{user}.toml"
            config.write_text(
                f'[lake]\ncatalog_uri = "sqlite:///{tmp_path}/c.db"\nwarehouse = "{tmp_path}/w"\n'
                f'[[sources]]\nname = "pg"\ndsn = "{dsn}"\n'
            )
            result = subprocess.run(
                [sys.executable, "-m", "lakegate", "serve", "--config", str(config)],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == 2, result.stderr
            assert problem in result.stderr and "allow_privileged_role = true" in result.stderr, result.stderr
            allowed = Gateway(
                live.gateway.lake.settings,
                [SourceSettings(name="pg", dsn=dsn, allow_privileged_role=True)],
                GatewaySettings(),
            )
            try:
                allowed.check_roles()
                assert len(allowed.warnings) == 1 and problem in allowed.warnings[0]
                assert allowed.status()["warnings"] == allowed.warnings
            finally:
                allowed.close()
    finally:
        admin.execute(f"DROP OWNED BY {writer}")
        admin.execute(f"DROP ROLE {writer}")
        admin.execute(f"DROP ROLE {member}")


def test_a_role_granted_more_after_start_is_refused_by_its_next_session(
    env: tuple[LiveServer, psycopg.Connection],
) -> None:
    live, admin = env
    source = live.gateway.sources[0]
    role = psycopg.conninfo.conninfo_to_dict(source.dsn)["user"]
    engine = PostgresEngine("pg", source.dsn, pool_size=1)
    engine.readers_only = True
    try:
        assert engine.fetch("SELECT 1") == [(1,)]
        admin.execute(f"GRANT pg_read_server_files TO {role}")
        try:
            engine.close()
            engine = PostgresEngine("pg", source.dsn, pool_size=1, connect_timeout=2)
            engine.readers_only = True
            with pytest.raises(QueryError, match="pg_read_server_files") as caught:
                engine.fetch("SELECT 1")
            assert caught.value.kind == PERMISSION
        finally:
            admin.execute(f"REVOKE pg_read_server_files FROM {role}")
    finally:
        engine.close()


def test_every_endpoint_is_admitted(pg_dsn: str, lake_dir: Path, pg: psycopg.Connection) -> None:
    """With the one worker busy and no queue, /v1/explain, /v1/schema and /v1/status answer 503 with Retry-After
    like queries do (they used to run beside the limits); /metrics still reports."""
    pg.execute("CREATE TABLE one (x int)")
    pg.execute("INSERT INTO one VALUES (1)")
    settings = gateway_settings(
        pg_dsn, lake_dir, workers=1, max_queue=0, tokens=[TOKEN], tableless_route="duckdb"
    )
    with live_server(settings) as live:

        def hold() -> None:
            with live.client(TOKEN) as client:
                client.post("/v1/query", json={"sql": "SELECT pg_sleep(3) FROM pg.public.one"})

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            deadline = time.monotonic() + 10
            while live.gateway.metrics.in_flight < 1 and time.monotonic() < deadline:
                time.sleep(0.02)
            with live.client(TOKEN) as client:
                answers = [
                    client.post("/v1/query", json={"sql": "SELECT 1"}),
                    client.post("/v1/explain", json={"sql": "SELECT 1"}),
                    client.get("/v1/schema"),
                    client.get("/v1/status"),
                ]
                metrics = client.get("/metrics")
        finally:
            holder.join(30)
        for answer in answers:
            assert answer.status_code == 503, answer.text
            assert answer.headers["retry-after"] == "1" and "busy" in answer.json()["error"]["message"]
        assert metrics.status_code == 200 and "lakegate_queries_in_flight" in metrics.text
        with live.client(TOKEN) as client:
            assert client.post("/v1/explain", json={"sql": "SELECT 1"}).json()["route"] == "duckdb"

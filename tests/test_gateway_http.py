"""The HTTP gateway on a real uvicorn: result formats with exact values (checked against PostgreSQL), the row cap,
streaming with bounded memory, time limits and client disconnects that cancel the engine query, auth, error
shapes, concurrency, and the ops endpoints; and ``lakegate serve`` as a real process."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pyarrow as pa
import pytest

from lakegate.gateway.http import check_bind
from lakegate.gateway.service import Gateway
from lakegate.settings import SettingsError
from tests.gateway_fixtures.harness import (
    LiveServer,
    canon,
    database,
    gateway_settings,
    live_server,
    pg_rows,
    same_rows,
)
from tests.lakehelp import running_worker, wait_caught_up, wait_for

TOKEN = "s3cret-token"
VALUES = """
CREATE TABLE vals (id int PRIMARY KEY, amount numeric(30,8), ratio float8, label text, at timestamptz, day date,
                   raw bytea, flag bool, ids int[], u uuid);
INSERT INTO vals VALUES
  (1, 12345678901234567890.12345678, 0.1, 'plain', '2024-05-01 12:00:00.123456+02', '2024-05-01', '\\x00ff10',
   true, ARRAY[1,2], 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
  (2, -0.00000001, 'NaN', 'quote " backslash \\ newline
 tab	end', '1999-12-31 23:59:59+00', '1999-12-31', '', false, ARRAY[]::int[], NULL),
  (3, NULL, 'Infinity', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (4, 0, '-Infinity', 'ünïcödé ✓', '2024-01-01 00:00+00', '2024-02-29', '\\xdeadbeef', true, ARRAY[NULL, 3], NULL);
CREATE TABLE dim (id int PRIMARY KEY, region text);
INSERT INTO dim SELECT g, 'r' || (g % 4) FROM generate_series(1, 400) g;
"""
COLUMNS = "id, amount, ratio, label, at, day, raw, flag, ids, u"


@pytest.fixture(scope="module")
def env(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[LiveServer, psycopg.Connection]]:
    lake_dir: Path = tmp_path_factory.mktemp("lake")
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(VALUES)
        settings = gateway_settings(
            dsn,
            lake_dir,
            ["public.vals", "public.dim"],
            tokens=[TOKEN],
            max_rows=3_000_000,
            timeout="20s",
            workers=6,
            max_queue=64,
            tableless_route="duckdb",  # the heavy table-less statements (range()) load and cancel DuckDB
        )
        with running_worker(settings):
            wait_caught_up(conn)
        with live_server(settings) as live:
            yield live, conn


def _query(client: httpx.Client, sql: str, **body: Any) -> httpx.Response:
    return client.post("/v1/query", json={"sql": sql, **body})


def _json_rows(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    return json.loads(response.text, parse_float=Decimal)["rows"]


def _expected(conn: psycopg.Connection) -> list[dict[str, Any]]:
    """What the JSON rows must hold, computed from PostgreSQL's own values."""
    out = []
    for row in conn.execute(f"SELECT {COLUMNS} FROM vals ORDER BY id").fetchall():
        record = dict(zip(COLUMNS.split(", "), row, strict=True))
        ratio = record["ratio"]
        record["ratio"] = (
            "NaN"
            if ratio != ratio
            else "Infinity"
            if ratio == float("inf")
            else "-Infinity"
            if ratio == float("-inf")
            else Decimal(repr(ratio))
        )
        record["at"] = (
            record["at"].astimezone(__import__("datetime").UTC).isoformat() if record["at"] else None
        )
        record["day"] = record["day"].isoformat() if record["day"] else None
        record["raw"] = "\\x" + bytes(record["raw"]).hex() if record["raw"] is not None else None
        record["u"] = str(record["u"]) if record["u"] else None
        out.append(record)
    return out


@pytest.mark.parametrize("table", ["pg.public.vals", "lake.public.vals"])
def test_json_is_exact_on_both_routes(env: tuple[LiveServer, psycopg.Connection], table: str) -> None:
    live, conn = env
    with live.client(TOKEN) as client:
        response = _query(client, f"SELECT {COLUMNS} FROM {table} ORDER BY id")
    body = json.loads(response.text, parse_float=Decimal)
    assert (
        body["route"] == ("postgres" if table.startswith("pg") else "duckdb") and body["truncated"] is False
    )
    types = {c["name"]: c["type"] for c in body["columns"]}
    assert types == {
        "id": "integer",
        "amount": "float",
        "ratio": "float",
        "label": "string",
        "at": "datetime",
        "day": "date",
        "raw": "string",
        "flag": "boolean",
        "ids": "string",
        "u": "string",
    }
    got = body["rows"]
    for row in got:
        row["at"] = row["at"].replace(".000000", "") if row["at"] else None
    want = _expected(conn)
    for row in want:
        row["at"] = row["at"].replace(".000000", "") if row["at"] else None
    assert got == want
    assert isinstance(got[0]["amount"], Decimal) and got[0]["amount"] == Decimal(
        "12345678901234567890.12345678"
    )


@pytest.mark.parametrize("table", ["pg.public.vals", "lake.public.vals"])
def test_ndjson_csv_and_arrow_carry_the_same_rows(
    env: tuple[LiveServer, psycopg.Connection], table: str
) -> None:
    live, conn = env
    sql = f"SELECT {COLUMNS} FROM {table} ORDER BY id"
    with live.client(TOKEN) as client:
        as_json = _json_rows(_query(client, sql))
        ndjson = _query(client, sql, format="ndjson")
        csv_text = client.post("/v1/query", json={"sql": sql}, headers={"Accept": "text/csv"})
        arrow = _query(client, sql, format="arrow")
    assert ndjson.headers["content-type"].startswith("application/x-ndjson")
    assert [json.loads(line, parse_float=Decimal) for line in ndjson.text.splitlines()] == as_json
    assert (
        csv_text.headers["content-type"].startswith("text/csv")
        and csv_text.headers["x-lakegate-truncated"] == "false"
    )
    lines = csv_text.text.splitlines()
    assert lines[0] == "id,amount,ratio,label,at,day,raw,flag,ids,u" and '"\\x00ff10"' in lines[1]
    assert arrow.headers["content-type"] == "application/vnd.apache.arrow.stream"
    table_ = pa.ipc.open_stream(arrow.content).read_all()
    want = pg_rows(conn, f"SELECT {COLUMNS} FROM vals ORDER BY id")
    got = [tuple(canon(v) for v in row.values()) for row in table_.to_pylist()]
    assert [r[:4] + r[5:] for r in got] == [r[:4] + r[5:] for r in want]  # 'at' compared in JSON above
    assert [r[4] for r in got] == [r[4] for r in want]


@pytest.mark.parametrize("table", ["pg.public.vals", "lake.public.vals"])
def test_infinite_times_are_written_as_postgresql_writes_them(
    env: tuple[LiveServer, psycopg.Connection], table: str
) -> None:
    """``infinity`` and ``-infinity`` (timestamps and dates) were written as the extreme values they travel as
    ("32103-01-10T04:00:54.775807+00:00", "<value out of range: 2147483647>") in JSON and CSV."""
    live, conn = env
    items = "'infinity'::timestamptz AS a, '-infinity'::timestamp AS b, 'infinity'::date AS c, '-infinity'::date AS d"
    sql = f"SELECT {items}, NULL::date AS e, date '2024-02-29' AS f FROM {table} WHERE id = 1"
    want = conn.execute(f"SELECT {items.replace(' AS', '::text AS')} ").fetchone()
    assert want == ("infinity", "-infinity", "infinity", "-infinity")
    with live.client(TOKEN) as client:
        rows = _json_rows(_query(client, sql))
        csv_text = _query(client, sql, format="csv").text.splitlines()
    assert rows == [dict(zip("abcdef", [*want, None, "2024-02-29"], strict=True))]
    assert csv_text == ["a,b,c,d,e,f", '"infinity","-infinity","infinity","-infinity",,"2024-02-29"']


def test_row_cap_marks_truncated(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, _ = env
    with live.client(TOKEN) as client:
        body = _query(client, "SELECT * FROM pg.public.dim ORDER BY id", max_rows=10).json()
        assert len(body["rows"]) == 10 and body["truncated"] is True and body["rows"][9]["id"] == 10
        body = _query(client, "SELECT * FROM lake.public.dim ORDER BY id", max_rows=400).json()
        assert len(body["rows"]) == 400 and body["truncated"] is False
        csv_response = _query(client, "SELECT * FROM generate_series(1, 50) g", max_rows=5, format="csv")
        assert (
            csv_response.headers["x-lakegate-truncated"] == "true"
            and len(csv_response.text.splitlines()) == 6
        )


def test_large_results_stream_with_bounded_memory(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, _ = env
    sql = "SELECT range AS i, range * 2 AS j, 'row ' || range AS s FROM range(2000000)"
    peak, total, lines = 0, 0, 0
    baseline = pa.total_allocated_bytes()
    with (
        live.client(TOKEN) as client,
        client.stream("POST", "/v1/query", json={"sql": sql, "format": "ndjson"}) as r,
    ):
        assert (
            r.status_code == 200 and "x-lakegate-truncated" not in r.headers
        )  # too big to know before streaming
        for chunk in r.iter_bytes():
            total += len(chunk)
            lines += chunk.count(b"\n")
            peak = max(peak, pa.total_allocated_bytes() - baseline)
    assert lines == 2_000_000
    assert total > 50_000_000 and peak < total / 4, f"{peak} bytes of Arrow memory for a {total}-byte result"


def _running(conn: psycopg.Connection, pattern: str) -> int:
    return conn.execute(
        "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query ILIKE %s "
        "AND pid <> pg_backend_pid()",
        (pattern,),
    ).fetchone()[0]  # type: ignore[index]


def test_time_limit_cancels_the_engine_query(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, conn = env
    with live.client(TOKEN) as client:
        started = time.monotonic()
        response = _query(client, "SELECT pg_sleep(30) FROM pg.public.dim LIMIT 1", timeout_ms=1000)
        assert response.status_code == 408 and response.json()["error"]["code"] == "timeout"
        assert time.monotonic() - started < 15
        assert _running(conn, "%pg_sleep(30)%") == 0  # cancelled, not abandoned
        heavy = "SELECT count(*) FROM range(200000) a(x), range(200000) b(y) WHERE a.x + b.y = 7"
        response = _query(client, heavy, timeout_ms=800)
        assert response.status_code == 408, response.text
        assert "time limit of 0.8 s" in response.json()["error"]["message"]
        assert _query(client, "SELECT 1 AS one").json()["rows"] == [{"one": 1}]


def _send_and_drop(url: str, sql: str, wait: float, read: int = 0) -> None:
    """Send a query on a raw socket, optionally read a little of the answer, then hang up."""
    host, port = url.removeprefix("http://").split(":")
    body = json.dumps({"sql": sql, "format": "ndjson"}).encode()
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(
            b"POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {TOKEN}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        if read:
            got = b""
            while len(got) < read:
                got += sock.recv(65536)
        time.sleep(wait)


def test_a_client_that_goes_away_cancels_its_query(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, conn = env
    _send_and_drop(live.url, "SELECT pg_sleep(25) FROM pg.public.dim LIMIT 1", wait=1.0)
    wait_for(lambda: _running(conn, "%pg_sleep(25)%") == 0, timeout=10, what="PostgreSQL query cancelled")
    before = live.gateway.metrics.queries.get(("duckdb", "client_closed"), 0)
    _send_and_drop(
        live.url, "SELECT count(*) FROM range(300000) a(x), range(300000) b(y) WHERE a.x * b.y = -1", wait=0.5
    )
    _send_and_drop(live.url, "SELECT range AS i FROM range(50000000)", wait=0.2, read=200_000)
    wait_for(
        lambda: live.gateway.metrics.queries.get(("duckdb", "client_closed"), 0) >= before + 2,
        timeout=10,
        what="DuckDB queries cancelled",
    )
    wait_for(lambda: live.gateway.metrics.in_flight == 0, timeout=10, what="no query left running")


def test_auth_bearer_and_basic(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, _ = env
    with live.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        missing = _query(client, "SELECT 1")
        assert missing.status_code == 401 and "Bearer" in missing.headers["www-authenticate"]
        assert missing.json()["error"]["code"] == "unauthorized"
        wrong = client.post("/v1/query", json={"sql": "SELECT 1"}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401 and "not valid" in wrong.json()["error"]["message"]
        basic = base64.b64encode(f"redash:{TOKEN}".encode()).decode()
        ok = client.post(
            "/v1/query", json={"sql": "SELECT 2 AS x"}, headers={"Authorization": f"Basic {basic}"}
        )
        assert ok.status_code == 200 and ok.json()["rows"] == [{"x": 2}]
        for path in ("/v1/schema", "/v1/status", "/metrics"):
            assert client.get(path).status_code == 401
    with pytest.raises(SettingsError, match="loopback"):
        check_bind(gateway_settings("dbname=x", Path("/tmp"), host="0.0.0.0").gateway)
    check_bind(gateway_settings("dbname=x", Path("/tmp"), host="0.0.0.0", tokens=["t"]).gateway)
    check_bind(gateway_settings("dbname=x", Path("/tmp"), host="::1").gateway)


def test_error_shapes(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, _ = env
    cases = [
        ("SELECT *\nFROM pg.public.dim WHERE", 400, "syntax_error"),
        ("SELECT nosuchcolumn FROM pg.public.dim", 400, "query_error"),
        ("SELECT nosuchcolumn FROM lake.public.dim", 400, "query_error"),
        ("DELETE FROM pg.public.dim", 403, "forbidden"),
        ("SELECT * FROM pg.public.dimm", 404, "not_found"),
        ("SELECT * FROM pgg.public.dim", 404, "not_found"),
        ("SELECT 1/0 FROM pg.public.dim", 400, "query_error"),
    ]
    with live.client(TOKEN) as client:
        for sql, status, code in cases:
            response = _query(client, sql)
            error = response.json()["error"]
            assert (response.status_code, error["code"]) == (status, code), (sql, response.text)
            assert set(error) >= {"code", "message", "line", "column"} and error["message"]
            assert (
                "Traceback" not in response.text and error["request_id"] == response.headers["x-request-id"]
            )
        syntax = _query(client, "SELECT *\nFROM pg.public.dim WHERE").json()["error"]
        assert (syntax["line"], syntax["column"]) == (2, 20)  # where WHERE starts, as psql points
        assert "did you mean" in _query(client, "SELECT * FROM pg.public.dimm").json()["error"]["message"]
        assert "pg.public.dim" in _query(client, "SELECT * FROM pg.public.dimm").json()["error"]["message"]
        assert (
            "did you mean 'pg'" in _query(client, "SELECT * FROM pgg.public.dim").json()["error"]["message"]
        )
        assert _query(client, "SELECT 1", format="xml").status_code == 400
        assert (
            client.post(
                "/v1/query", content=b"{not json", headers={"Content-Type": "application/json"}
            ).status_code
            == 400
        )
        assert _query(client, "SELECT '" + "x" * (1 << 20) + "'").status_code == 413
        assert client.get("/v1/nothing").json()["error"]["code"] == "not_found"


def test_unexpected_errors_are_500_with_a_request_id(
    env: tuple[LiveServer, psycopg.Connection], caplog: pytest.LogCaptureFixture
) -> None:
    live, _ = env

    def broken() -> dict[str, Any]:
        raise RuntimeError("boom")

    original = live.gateway.schema
    live.gateway.schema = broken  # type: ignore[method-assign]
    try:
        with live.client(TOKEN) as client:
            response = client.get("/v1/schema")
    finally:
        live.gateway.schema = original  # type: ignore[method-assign]
    assert response.status_code == 500 and "boom" not in response.text and "Traceback" not in response.text
    rid = response.json()["error"]["request_id"]
    assert rid in response.json()["error"]["message"] and any(rid in r.getMessage() for r in caplog.records)


def test_32_clients_at_once_and_slow_queries_do_not_hold_up_fast_ones(
    env: tuple[LiveServer, psycopg.Connection],
) -> None:
    live, conn = env
    queries = {
        "pg": (
            "SELECT region, count(*) AS n FROM pg.public.dim GROUP BY region",
            "SELECT region, count(*) AS n FROM public.dim GROUP BY region",
        ),
        "lake": (
            "SELECT region, count(*) AS n FROM lake.public.dim GROUP BY region",
            "SELECT region, count(*) AS n FROM public.dim GROUP BY region",
        ),
        "join": (
            "SELECT d.region, sum(v.id) AS s FROM lake.public.vals v JOIN pg.public.dim d ON d.id = v.id "
            "GROUP BY d.region",
            "SELECT d.region, sum(v.id) AS s FROM vals v JOIN dim d ON d.id = v.id GROUP BY d.region",
        ),
    }
    want = {k: pg_rows(conn, pg_sql) for k, (_, pg_sql) in queries.items()}
    results: dict[int, bool] = {}

    def client_run(i: int) -> None:
        kind = list(queries)[i % 3]
        with live.client(TOKEN) as client:
            rows = _json_rows(_query(client, queries[kind][0]))
        results[i] = same_rows([tuple(canon(v) for v in r.values()) for r in rows], want[kind], ordered=False)

    threads = [threading.Thread(target=client_run, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 32 and all(results.values())

    slow_done: list[float] = []

    def slow() -> None:
        with live.client(TOKEN) as client:
            _query(client, "SELECT pg_sleep(4) FROM pg.public.dim LIMIT 1")
        slow_done.append(time.monotonic())

    slow_threads = [threading.Thread(target=slow) for _ in range(2)]
    for t in slow_threads:
        t.start()
    wait_for(lambda: _running(conn, "%pg_sleep(4)%") == 2, timeout=10, what="slow queries running")
    with live.client(TOKEN) as client:
        for _ in range(10):
            assert _query(client, "SELECT count(*) AS n FROM lake.public.dim").json()["rows"] == [{"n": 400}]
    fast_done = time.monotonic()
    assert not slow_done, "the fast queries waited for the slow ones"
    for t in slow_threads:
        t.join(30)
    assert len(slow_done) == 2 and fast_done < min(slow_done)


def test_saturated_gateway_answers_503(pg_dsn: str, lake_dir: Path, pg: psycopg.Connection) -> None:
    pg.execute("CREATE TABLE one (x int)")
    pg.execute("INSERT INTO one VALUES (1)")
    settings = gateway_settings(pg_dsn, lake_dir, workers=1, max_queue=0)
    with live_server(settings) as live:

        def hold() -> None:
            with live.client() as client:
                _query(client, "SELECT pg_sleep(3) FROM pg.public.one")

        holder = threading.Thread(target=hold)
        holder.start()
        wait_for(lambda: _running(pg, "%pg_sleep(3)%") == 1, timeout=10, what="the slow query running")
        with live.client() as client:
            busy = _query(client, "SELECT 1")
        holder.join(30)
        assert busy.status_code == 503 and "busy" in busy.json()["error"]["message"]
        with live.client() as client:
            assert _query(client, "SELECT 1 AS x").json()["rows"] == [{"x": 1}]
            assert "lakegate_queries_rejected_total 1" in client.get("/metrics").text


def test_ops_endpoints(env: tuple[LiveServer, psycopg.Connection]) -> None:
    live, _ = env
    with live.client(TOKEN) as client:
        spec = client.get("/openapi.json").json()
        assert {"/v1/query", "/v1/explain", "/v1/schema", "/v1/status", "/healthz", "/metrics"} <= set(
            spec["paths"]
        )
        assert client.get("/docs").status_code == 200
        schema = client.get("/v1/schema").json()
        sources = {s["name"]: s for s in schema["sources"]}
        lake_names = {t["name"] for t in sources["lake"]["tables"]}
        assert {"vals", "vals__changelog", "dim", "dim__changelog"} <= lake_names
        vals = next(t for t in sources["lake"]["tables"] if t["name"] == "vals")
        assert vals["kind"] == "state" and vals["key"] == ["id"] and vals["snapshots"]
        assert {t["name"] for t in sources["pg"]["tables"]} >= {"vals", "dim"}
        explain = client.post("/v1/explain", json={"sql": "SELECT * FROM pg.public.dim WHERE id = 1"}).json()
        assert explain["route"] == "postgres" and explain["engines"][0]["sql"].startswith("SELECT")
        status = client.get("/v1/status").json()
        assert {t["table"] for t in status["tables"]} >= {"lake.public.vals", "lake.public.dim"}
        cache = status["cache"]
        assert cache["enabled"] and cache["budget_bytes"] > 0 and cache["plans"]["entries"] >= 1
        for key in ("entries", "bytes", "hits", "misses", "loads", "evictions", "loading"):
            assert isinstance(cache[key], int) and cache[key] >= 0, f"/v1/status cache lacks {key}"
        metrics = client.get("/metrics").text
        assert 'lakegate_queries_total{route="postgres",code="ok"}' in metrics
        assert "lakegate_query_duration_seconds_bucket" in metrics and "lakegate_table_files" in metrics
        for name in ("entries", "bytes", "hits_total", "misses_total", "loads_total"):
            assert f"\nlakegate_cache_{name} " in metrics, f"/metrics lacks lakegate_cache_{name}"
        assert "\nlakegate_plan_cache_hits_total " in metrics
        shown = _json_rows(_query(client, "SHOW TABLES FROM pg"))
        assert {"source": "pg", "schema": "public", "table": "dim", "kind": "table"} in shown
        described = _json_rows(_query(client, "DESCRIBE lake.public.dim"))
        assert [(c["column"], c["key"]) for c in described][:2] == [("id", True), ("region", False)]


def test_lakegate_serve_runs_the_contract(pg_dsn: str, lake_dir: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = tmp_path / "lakegate.toml"
    config.write_text(
        f'[lake]\ncatalog_uri = "sqlite:///{lake_dir}/catalog.db"\nwarehouse = "{lake_dir}/wh"\n'
        f'[[sources]]\nname = "pg"\ndsn = "{pg_dsn}"\nallow_privileged_role = true\n'
        f'[gateway]\nport = {port}\ntokens = ["{TOKEN}"]\n'
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "lakegate", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ},
    )
    try:
        url = f"http://127.0.0.1:{port}"
        wait_for(lambda: _healthy(url), timeout=60, what="lakegate serve to answer")
        response = httpx.post(
            f"{url}/v1/query",
            json={"sql": "SELECT 40 + 2 AS answer"},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert response.json()["rows"] == [{"answer": 42}]
    finally:
        process.send_signal(signal.SIGTERM)
        output = process.communicate(timeout=30)[0].decode()
    assert process.returncode == 0, output
    bad = tmp_path / "open.toml"
    bad.write_text(config.read_text().replace(f'tokens = ["{TOKEN}"]', 'host = "0.0.0.0"'))
    result = subprocess.run(
        [sys.executable, "-m", "lakegate", "serve", "--config", str(bad)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2 and "loopback" in result.stderr


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


def test_service_is_usable_without_http(env: tuple[LiveServer, psycopg.Connection]) -> None:
    gateway: Gateway = env[0].gateway
    result = gateway.query("SELECT count(*) AS n FROM lake.public.dim")
    assert result.table.to_pylist() == [{"n": 400}] and result.route == "duckdb" and not result.truncated

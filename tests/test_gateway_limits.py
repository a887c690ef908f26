"""Limits that hold for the whole process, with real requests: memory (issue 9.8) against 'lakegate serve' with its
memory cap, and slow clients (issue 9.10: slowloris heads and bodies, the connection cap) against the real uvicorn
protocol the gateway serves with."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.gateway_fixtures.harness import gateway_settings, live_server

TOKEN = "limits-token"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(pid: int) -> dict[str, int]:
    """VmHWM, VmData (bytes) and the data-size limit of a process, from /proc."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmData", "VmRSS"):
            out[key] = int(value.split()[0]) * 1024
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max data size"):
            out["limit"] = int(line.split()[3])
    return out


@contextlib.contextmanager
def serve(tmp_path: Path, dsn: str, **gateway: str) -> Iterator[tuple[httpx.Client, subprocess.Popen[bytes]]]:
    port = _free_port()
    options = "".join(f'{key} = "{value}"\n' for key, value in gateway.items())
    config = tmp_path / "lakegate.toml"
    config.write_text(
        f'[lake]\ncatalog_uri = "sqlite:///{tmp_path}/catalog.db"\nwarehouse = "{tmp_path}/warehouse"\n'
        f'[[sources]]\nname = "pg"\ndsn = "{dsn}"\nallow_privileged_role = true\n'
        f'[gateway]\nport = {port}\ntokens = ["{TOKEN}"]\n{options}'
    )
    log = open(tmp_path / "serve.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [sys.executable, "-m", "lakegate", "serve", "--config", str(config)], stdout=log, stderr=log
    )
    client = httpx.Client(
        base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if client.get("/healthz").status_code == 200:
                    break
            if process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError((tmp_path / "serve.log").read_text()[-3000:])
            time.sleep(0.2)
        yield client, process
    finally:
        client.close()
        process.terminate()
        process.wait(30)
        log.close()


MEMORY_HOSTILE = [
    "SELECT len(range(300000000)) AS n",
    "SELECT generate_series(1, 3000000000) AS s",
    "SELECT md5(repeat('x', 1500000000)) AS h",
    "SELECT repeat('x', 700000000) AS big",
    "SELECT length(string_agg(repeat('x', 1000), '')) AS n FROM range(3000000)",
    "SELECT len(list(x)) AS n FROM range(500000000) t(x)",
    "SELECT list_sum(range(200000000)) AS n",
    "SELECT a, repeat('x', 1000) AS filler FROM range(300000) t(a)",
    "SELECT repeat('x', 300000000) AS big FROM pg.public.one",
    "SELECT string_agg(repeat('x', 100000), '') AS big FROM pg.public.one, generate_series(1, 5000)",
]


@pytest.mark.slow
def test_memory_is_bounded_per_query_and_in_total(pg_dsn: str, pg: psycopg.Connection, tmp_path: Path) -> None:
    """Each hostile query ends with 413 (or 400) instead of taking the host's memory; the process never holds
    more than its cap (its data segment after start-up + duckdb_memory_limit + memory_margin) and keeps
    answering."""
    pg.execute("CREATE TABLE one (x int)")
    pg.execute("INSERT INTO one VALUES (1)")
    with serve(
        tmp_path,
        pg_dsn,
        duckdb_memory_limit="512MB",
        memory_margin="1GiB",
        max_result_bytes="2MiB",
        timeout="60s",
        tableless_route="duckdb",  # DuckDB's memory is what the table-less statements test
    ) as (client, process):
        before = _status(process.pid)
        assert 0 < before["limit"] < before["VmData"] + 2 * 2**30  # capped at start-up + 0.5 GB + 1 GiB
        for sql in MEMORY_HOSTILE:
            response = client.post("/v1/query", json={"sql": sql})
            assert response.status_code in (400, 413), (sql, response.text[:500])
            assert process.poll() is None, sql
            after = _status(process.pid)
            assert after["VmData"] <= after["limit"], sql
        assert client.post("/v1/query", json={"sql": "SELECT 42 AS x"}).json()["rows"] == [{"x": 42}]
        assert client.post("/v1/query", json={"sql": "SELECT count(*) AS n FROM pg.public.one"}).json()[
            "rows"
        ] == [{"n": 1}]
        peak = _status(process.pid)["VmHWM"]
    # resident memory never went past the data cap (file-backed code pages come on top of it)
    assert peak <= before["limit"], (peak, before)


# ------------------------------------------------------------------------------------------ slow clients


def _half_open(port: int, count: int, head: bytes) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head)
        sock.setblocking(False)
        sockets.append(sock)
    return sockets


def _closed(sock: socket.socket) -> bool:
    try:
        return sock.recv(4096) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True  # reset


def _wait_closed(sockets: list[socket.socket], within: float) -> int:
    """How many of ``sockets`` are still open after ``within`` seconds (polled)."""
    deadline = time.monotonic() + within
    open_ = list(sockets)
    while open_ and time.monotonic() < deadline:
        open_ = [s for s in open_ if not _closed(s)]
        time.sleep(0.05)
    return len(open_)


@pytest.fixture
def slow_env(pg_dsn: str, lake_dir: Path) -> Iterator[Any]:
    settings = gateway_settings(pg_dsn, lake_dir, tokens=[TOKEN], read_timeout="1s", max_connections=1500)
    with live_server(settings) as live:
        yield live


def test_slowloris_heads_are_closed_within_the_read_timeout(slow_env: Any) -> None:
    """1,000 connections that never finish their request head (and some that trickle a header byte now and
    then, which used to reset uvicorn's only timer) are closed after read_timeout, while normal queries keep
    answering."""
    port = int(slow_env.url.rsplit(":", 1)[1])
    head = b"POST /v1/query HTTP/1.1\r\nHost: x\r\nX-Slow: "
    loris = _half_open(port, 1000, head)
    try:
        with slow_env.client(TOKEN) as client:
            for _ in range(5):
                assert client.post("/v1/query", json={"sql": "SELECT 1 AS x"}).json()["rows"] == [{"x": 1}]
        trickling = loris[:20]
        for _ in range(4):  # a byte every 0.4 s for 1.6 s: longer than the read timeout
            for sock in trickling:
                with contextlib.suppress(OSError):
                    sock.send(b"a")
            time.sleep(0.4)
        assert _wait_closed(loris, within=10) == 0
    finally:
        for sock in loris:
            sock.close()
    with slow_env.client(TOKEN) as client:
        assert client.post("/v1/query", json={"sql": "SELECT 2 AS x"}).json()["rows"] == [{"x": 2}]


def test_a_body_that_does_not_arrive_in_time_is_408(slow_env: Any) -> None:
    port = int(slow_env.url.rsplit(":", 1)[1])
    head = (
        "POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: 100\r\n\r\n" + '{"sql": '
    ).encode()
    (sock,) = _half_open(port, 1, head)
    try:
        sock.setblocking(True)
        sock.settimeout(30)
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = sock.recv(4096)
            if not chunk:
                break
            answer += chunk
    finally:
        sock.close()
    assert answer.startswith(b"HTTP/1.1 408"), answer[:300]
    assert b"did not arrive within 1 s" in answer


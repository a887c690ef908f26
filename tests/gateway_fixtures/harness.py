"""Shared pieces of the gateway tests: settings, a module-scoped database, a real uvicorn server in a thread,
the routing-fixture reader, and value normalisation for comparing results with PostgreSQL."""

from __future__ import annotations

import datetime
import math
import os
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pyarrow as pa
import uvicorn

from lakegate import settings as settings_mod
from lakegate.gateway.http import create_app, server_config
from lakegate.gateway.service import Gateway
from tests.lakehelp import make_settings

FIXTURES = Path(__file__).parent


def gateway_settings(
    dsn: str, lake_dir: Path, tables: list[str] | None = None, **gateway: Any
) -> settings_mod.Settings:
    settings = make_settings(dsn, lake_dir, list(tables or []))
    settings.gateway = settings_mod._coerce(settings_mod.GatewaySettings, "gateway", gateway)
    return settings


@contextmanager
def database(server: Any) -> Iterator[str]:
    """A fresh database for a whole test module (conftest's ``pg_dsn`` is per test)."""
    name = f"gw{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield server.dsn(name)
    finally:
        with psycopg.connect(server.dsn(), autocommit=True) as admin:
            for (slot,) in admin.execute(
                "SELECT slot_name FROM pg_replication_slots WHERE database = %s", (name,)
            ).fetchall():
                admin.execute(
                    "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                    "WHERE slot_name = %s AND active_pid IS NOT NULL",
                    (slot,),
                )
                with suppress(psycopg.Error):
                    admin.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class LiveServer:
    """The gateway app on a real uvicorn, on a free loopback port, in a background thread."""

    gateway: Gateway
    server: uvicorn.Server
    thread: threading.Thread
    url: str

    def client(self, token: str | None = None, timeout: float = 60.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)


@contextmanager
def live_server(settings: settings_mod.Settings) -> Iterator[LiveServer]:
    gateway = Gateway(settings.lake, settings.sources, settings.gateway)
    app = create_app(gateway, own_gateway=True)
    config = server_config(app, settings.gateway, host="127.0.0.1", port=0, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise AssertionError("the gateway did not start")
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield LiveServer(gateway, server, thread, f"http://127.0.0.1:{port}")
    finally:
        server.should_exit = True
        thread.join(30)
        assert not thread.is_alive(), "the gateway did not stop"


# ------------------------------------------------------------------------------------------ fixtures file


@dataclass
class Case:
    name: str
    sql: str
    route: str
    expect_sql: str | None  #: the engine SQL (plan.body) expected, or None to skip that check
    postgres: str | None  #: the same query for PostgreSQL directly (default: derived by the test)
    ordered: bool
    line: int


def read_cases(path: Path) -> list[Case]:
    """Blocks of ``-- key: value`` lines followed by the SQL, separated by blank lines."""
    cases: list[Case] = []
    meta: dict[str, str] = {}
    body: list[str] = []
    start = 0

    def flush() -> None:
        if body:
            cases.append(
                Case(
                    meta.get("name", f"line {start}"),
                    "\n".join(body).strip(),
                    meta["route"],
                    meta.get("sql"),
                    meta.get("postgres"),
                    meta.get("order", "") == "ordered",
                    start,
                )
            )
        meta.clear()
        body.clear()

    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.rstrip()
        if not line.strip():
            flush()
            continue
        if line.startswith("-- ") and ":" in line and not body:
            if not meta:
                start = number
            key, _, value = line[3:].partition(":")
            meta[key.strip()] = value.strip()
        elif not line.startswith("#"):
            body.append(line)
    flush()
    return cases


def read_lines(path: Path) -> list[tuple[int, str]]:
    """Non-empty, non-comment lines (``#`` comments), with their line numbers."""
    out = []
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        if raw.strip() and not raw.lstrip().startswith("#"):
            out.append((number, raw.replace("\\n", "\n")))
    return out


# ----------------------------------------------------------------------------------------- normalisation


def canon(value: Any) -> Any:
    """A value in a form that compares equal across engines (numbers as rounded Decimals, times in UTC)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | Decimal):
        return Decimal(value).normalize() + 0
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return Decimal(f"{value:.9g}").normalize() + 0
    if isinstance(value, str):
        try:
            return canon(Decimal(value)) if value.strip() and value.strip()[0] in "-0123456789." else value
        except ArithmeticError:
            return value
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.UTC).replace(tzinfo=None)
    if isinstance(value, list | tuple):
        return tuple(canon(v) for v in value)
    if isinstance(value, memoryview):
        return bytes(value)
    if type(value).__name__ == "UUID":
        return str(value)
    return value


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    return [tuple(canon(v) for v in row.values()) for row in table.to_pylist()]


def pg_rows(conn: psycopg.Connection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(canon(v) for v in row) for row in conn.execute(sql).fetchall()]


def same_rows(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]], ordered: bool) -> bool:
    if ordered:
        return got == want
    return sorted(got, key=repr) == sorted(want, key=repr)

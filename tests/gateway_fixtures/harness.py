"""Shared pieces of the gateway tests: settings, a module-scoped database, a real uvicorn server in a thread,
the routing-fixture reader, and values in a form that compares results with PostgreSQL's as strictly as a user
reads them (:func:`canon`)."""

from __future__ import annotations

import datetime
import json
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
from lakegate.gateway.encoders import json_values
from lakegate.gateway.http import create_app, server_config
from lakegate.gateway.pgtypes import pg_type
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
    """A value in a form that compares equal only where a user sees the same answer: each kind tagged
    (``'42'`` is not ``42``, ``true`` not ``1``), numerics as their text with its scale (``1.50`` is not
    ``1.5``), floats exactly by their shortest text (``-0.0`` is not ``0.0``, NaN equals only NaN),
    timestamps with a zone as their instant and the offset they are shown with."""
    if value is None:
        return None
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, Decimal):
        return ("numeric", decimal_text(value))
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, str):
        return ("text", value)
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return ("timestamptz", value.astimezone(datetime.UTC).replace(tzinfo=None), value.utcoffset())
    if isinstance(value, list | tuple):
        return ("array", tuple(canon(v) for v in value))
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, canon(v)) for k, v in value.items())))
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if type(value).__name__ == "UUID":
        return ("text", str(value))
    return value


def decimal_text(value: Decimal) -> str:
    """A numeric as PostgreSQL writes it: positional, with its scale (``Decimal('1E-8')``: ``0.00000001``)."""
    if value.is_nan():
        return "NaN"
    if value.is_infinite():
        return "Infinity" if value > 0 else "-Infinity"
    return format(value, "f")


def _column(values: pa.ChunkedArray, field: pa.Field) -> list[Any]:
    """A result column's Python values; numerics as the text the gateway shows (its JSON's: each value with
    PostgreSQL's display scale), read back as Decimals that keep that scale."""
    if pg_type(field).lstrip("_") != "numeric":
        return values.to_pylist()
    texts = json_values(values.combine_chunks(), field).to_pylist()
    return [None if t == "null" else json.loads(t, parse_float=Decimal, parse_int=Decimal) for t in texts]


def rows_of(table: pa.Table) -> list[tuple[Any, ...]]:
    columns = [_column(table.column(i), table.schema.field(i)) for i in range(table.num_columns)]
    rows = zip(*columns, strict=True) if columns else iter([()] * table.num_rows)
    return [tuple(canon(v) for v in row) for row in rows]


def pg_rows(conn: psycopg.Connection, sql: str) -> list[tuple[Any, ...]]:
    return [tuple(canon(v) for v in row) for row in conn.execute(sql).fetchall()]


def names_of(table: pa.Table) -> list[str]:
    """A gateway result's column names, repeated ones included (as PostgreSQL's ``cursor.description``)."""
    return table.schema.names


def pg_names(conn: psycopg.Connection, sql: str) -> list[str]:
    """PostgreSQL's column names of ``sql``, as ``cursor.description`` says them."""
    return [d.name for d in conn.execute(sql).description or []]


def same_rows(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]], ordered: bool) -> bool:
    """The same canonical rows (:func:`canon`), in the same order where ``ordered``, else as multisets."""
    if ordered:
        return got == want
    return sorted(got, key=repr) == sorted(want, key=repr)

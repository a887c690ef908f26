"""Shared helpers for ingest tests: settings, a worker in a thread, and row-by-row comparison with the source."""

from __future__ import annotations

import datetime
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
from psycopg import sql

from connectors.changes import TableRef
from connectors.iceberg import catalog as lake_catalog
from connectors.iceberg import merge
from connectors.iceberg.writer import LakeTable, checkpoint_of
from ingest.worker import Worker
from lakegate import settings as settings_mod


def make_settings(dsn: str, lake_dir: Path, tables: list[str], **ingest: Any) -> settings_mod.Settings:
    data = {
        "lake": {"catalog_uri": f"sqlite:///{lake_dir}/catalog.db", "warehouse": str(lake_dir / "warehouse")},
        "sources": [{"name": "pg", "dsn": dsn, "replicate": tables}],
        "ingest": {"commit_interval": "0.2s", **ingest},
    }
    import tomllib  # noqa: F401  (settings are built the way a file would be read)

    s = settings_mod.Settings(
        lake=settings_mod._coerce(settings_mod.LakeSettings, "lake", data["lake"]),
        sources=[settings_mod._coerce(settings_mod.SourceSettings, "sources.0", data["sources"][0])],
        ingest=settings_mod._coerce(settings_mod.IngestSettings, "ingest", data["ingest"]),
    )
    settings_mod._validate(s)
    return s


@contextmanager
def running_worker(settings: settings_mod.Settings) -> Iterator[Worker]:
    """A worker streaming in a background thread; stopped (gracefully) on exit."""
    worker = Worker(settings)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()
        except BaseException as exc:  # surfaced in the test thread below
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.stopping.set()
        thread.join(60)
        assert not thread.is_alive(), "worker did not stop within 60 s"
    if errors:
        raise errors[0]


def current_wal(conn: psycopg.Connection) -> int:
    from connectors.changes import parse_lsn

    return parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])


def wait_caught_up(conn: psycopg.Connection, slot: str = "lakegate_pg", timeout: float = 60.0) -> None:
    """Wait until the slot has confirmed everything written so far (the lake holds it)."""
    from connectors.changes import parse_lsn

    target = current_wal(conn)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = conn.execute("SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s",
                           (slot,)).fetchone()
        if row and row[0] and parse_lsn(row[0]) >= target:
            return
        time.sleep(0.1)
    raise AssertionError(f"slot {slot} did not confirm {target:X} within {timeout}s (at {row})")


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def lake_table(settings: settings_mod.Settings, name: str) -> LakeTable:
    catalog = lake_catalog.from_settings(settings.lake)
    ref = TableRef.parse(name)
    changelog = catalog.load_table(f"{ref.schema}.{ref.name}__changelog")
    key = tuple(k for k in changelog.properties.get("lakegate.key", "").split(",") if k)
    from connectors.changes import Column, TableSchema

    arrow = changelog.schema().as_arrow()
    cols = tuple(Column(f.name, f.type, "", f.name in key) for f in arrow if not f.name.startswith("_"))
    table = LakeTable(catalog, TableSchema(ref, cols, key), source="pg")
    table.load()
    return table


def _normal(value: Any) -> Any:
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.timezone.utc)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, Decimal):
        return value.normalize() if value.is_finite() else str(value)
    if isinstance(value, list):
        return tuple(_normal(v) for v in value)
    if isinstance(value, memoryview):
        return bytes(value)
    if hasattr(value, "bytes") and type(value).__name__ == "UUID":
        return str(value)
    return value


def source_rows(conn: psycopg.Connection, name: str, lake_schema: pa.Schema, key: tuple[str, ...]) -> list[tuple]:
    """Source rows as comparable tuples, columns cast the way the lake stores them."""
    ref = TableRef.parse(name)
    exprs = []
    for field in lake_schema:
        ident = sql.Identifier(field.name)
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            exprs.append(sql.SQL("{}::text").format(ident))
        elif pa.types.is_float32(field.type):
            exprs.append(sql.SQL("{}::float8").format(ident))
        else:
            exprs.append(ident)
    query = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(exprs), sql.Identifier(ref.schema, ref.name))
    return sorted((tuple(_normal(v) for v in row) for row in conn.execute(query).fetchall()), key=repr)


def arrow_rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    out = []
    cols = []
    for name in columns:
        col = table[name]
        if isinstance(col.type, pa.ExtensionType):
            cols.append([None if v is None else str(v) for v in col.to_pylist()])
        elif pa.types.is_float32(col.type):
            cols.append(col.cast(pa.float64()).to_pylist())
        else:
            cols.append(col.to_pylist())
    for row in zip(*cols, strict=True):
        out.append(tuple(_normal(v) for v in row))
    return sorted(out, key=repr)


def assert_lake_equals_source(conn: psycopg.Connection, settings: settings_mod.Settings, name: str) -> LakeTable:
    """The merged state and the replayed change log both equal the source table, row by row."""
    table = lake_table(settings, name)
    columns = [f.name for f in table.changelog.schema().as_arrow() if not f.name.startswith("_")]
    source_schema = pa.schema([table.changelog.schema().as_arrow().field(c) for c in columns])
    expected = source_rows(conn, name, source_schema, table.schema.key)
    state = table.current()
    _assert_same(arrow_rows(state, columns), expected, f"state of {name}")
    changelog = table.changelog.scan().to_arrow()
    replayed = merge.replay(changelog, state.schema, table.schema.key)
    _assert_same(arrow_rows(replayed, columns), expected, f"replayed change log of {name}")
    return table


def _assert_same(lake: list[tuple], source: list[tuple], what: str) -> None:
    if lake == source:
        return
    lake_set, source_set = set(map(repr, lake)), set(map(repr, source))
    missing = [r for r in source if repr(r) not in lake_set][:5]
    extra = [r for r in lake if repr(r) not in source_set][:5]
    raise AssertionError(f"{what} differs from the source: {len(lake)} rows vs {len(source)}; "
                         f"missing in the lake: {missing}; only in the lake: {extra}")


__all__ = ["checkpoint_of"]

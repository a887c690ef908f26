"""Shared helpers for ingest tests: settings, a worker in a thread, and row-by-row comparison with the source."""

from __future__ import annotations

import datetime
import math
import os
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

from lakegate import settings as settings_mod
from lakegate.connectors.changes import TS_INFINITY, TS_MINUS_INFINITY, TableRef
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg import merge
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.ingest.worker import Worker


def make_settings(dsn: str, lake_dir: Path, tables: list[str], **ingest: Any) -> settings_mod.Settings:
    if os.environ.get("LAKEGATE_TEST_PROCESSES"):  # the ingest tests with writer processes (ingest.tableprocs)
        ingest.setdefault("processes", int(os.environ["LAKEGATE_TEST_PROCESSES"]))
    data = {
        "lake": {"catalog_uri": f"sqlite:///{lake_dir}/catalog.db", "warehouse": str(lake_dir / "warehouse")},
        # the test server's role is its superuser: 'lakegate serve' accepts it only when told to
        "sources": [{"name": "pg", "dsn": dsn, "replicate": tables, "allow_privileged_role": True}],
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
    worker = Worker(settings.lake, settings.sources[0], settings.ingest)
    errors: list[BaseException] = []

    def target() -> None:
        try:
            worker.run()
        except BaseException as exc:  # surfaced in the test thread below
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    _ACTIVE.append((worker, errors))
    try:
        yield worker
    finally:
        _ACTIVE.remove((worker, errors))
        worker.stopping.set()
        thread.join(60)
        assert not thread.is_alive(), "worker did not stop within 60 s"
    if errors:
        raise errors[0]


_ACTIVE: list[tuple[Worker, list[BaseException]]] = []


def _check_workers() -> None:
    for _, errors in _ACTIVE:
        if errors:
            raise AssertionError(f"the ingest worker failed: {errors[0]!r}") from errors[0]


def current_wal(conn: psycopg.Connection) -> int:
    from lakegate.connectors.changes import parse_lsn

    return parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])


def wait_caught_up(conn: psycopg.Connection, slot: str = "lakegate_pg", timeout: float = 60.0) -> None:
    """Wait until the slot has confirmed everything written so far (the lake holds it)."""
    from lakegate.connectors.changes import parse_lsn

    deadline = time.monotonic() + timeout
    wait_for(lambda: all(w.streaming.is_set() for w, _ in _ACTIVE), timeout, "the worker to start streaming")
    # the test server commits asynchronously: WAL that no commit flushed (the slot's own snapshot record, say)
    # waits for the WAL writer, which may sleep for many seconds; a synchronous commit flushes it now
    with conn.transaction():
        conn.execute("SET LOCAL synchronous_commit = on")
        conn.execute("SELECT txid_current()")
    target = current_wal(conn)
    while time.monotonic() < deadline:
        _check_workers()
        row = conn.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", (slot,)
        ).fetchone()
        if row and row[0] and parse_lsn(row[0]) >= target:
            return
        time.sleep(0.1)
    raise AssertionError(f"slot {slot} did not confirm {target:X} within {timeout}s (at {row})")


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _check_workers()
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def lake_table(settings: settings_mod.Settings, name: str) -> LakeTable:
    return LakeTable.open(lake_catalog.from_settings(settings.lake), TableRef.parse(name))


#: a source table's columns: name, generated, base type (domains resolved), array dimensions (0: none), numeric
#: precision and scale
SOURCE_COLUMNS = """
SELECT a.attname, a.attgenerated <> '', b.typname,
       CASE WHEN t.typcategory = 'A' THEN greatest(a.attndims, 1) ELSE 0 END,
       CASE WHEN b.typname = 'numeric' AND m.typmod >= 4 THEN ((m.typmod - 4) >> 16) & 65535 END,
       CASE WHEN b.typname = 'numeric' AND m.typmod >= 4 THEN (m.typmod - 4) & 65535 END
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
JOIN pg_catalog.pg_type e ON e.oid = CASE WHEN t.typcategory = 'A' THEN t.typelem ELSE t.oid END
JOIN pg_catalog.pg_type b ON b.oid = CASE WHEN e.typtype = 'd' THEN e.typbasetype ELSE e.oid END
CROSS JOIN LATERAL (SELECT CASE WHEN e.typtype = 'd' THEN e.typtypmod ELSE a.atttypmod END AS typmod) m
WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped
"""
#: the lake's type of each PostgreSQL type that it stores as other than text, written down here rather than
#: taken from the ingest's own mapping (a test that asked the code under test would agree with any mistake)
_LAKE_TYPES: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int2": pa.int32(),
    "int4": pa.int32(),
    "int8": pa.int64(),
    "oid": pa.int64(),
    "float4": pa.float32(),
    "float8": pa.float64(),
    "date": pa.date32(),
    "time": pa.time64("us"),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
    "bytea": pa.binary(),
    "uuid": pa.uuid(),
}


def expected_type(typname: str, dims: int, precision: int | None, scale: int | None) -> pa.DataType:
    """The Arrow type the lake holds a source column of this type in: numeric(p, s) with p <= 38 is a decimal,
    wider or unconstrained numeric and every type not in the table above (text, json, interval, enums...) text;
    an array one list per declared dimension."""
    if typname == "numeric" and precision is not None and precision <= 38:
        out = pa.decimal128(precision, scale or 0)
    else:
        out = _LAKE_TYPES.get(typname, pa.string())
    for _ in range(dims):
        out = pa.list_(out)
    return out


def plain_type(typ: pa.DataType) -> pa.DataType:
    """``typ`` with large strings, binaries and lists as their plain forms (which one a reader gets is the
    reader's choice, not what the lake holds)."""
    if pa.types.is_large_string(typ):
        return pa.string()
    if pa.types.is_large_binary(typ):
        return pa.binary()
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        return pa.list_(plain_type(typ.value_type))
    return typ


def _normal(value: Any) -> Any:
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:
        return value.astimezone(datetime.UTC)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, Decimal):  # as text: the scale counts ('1.50' is not '1.5', which == would allow)
        return f"numeric {value}"
    if isinstance(value, list):
        return tuple(_normal(v) for v in value)
    if isinstance(value, memoryview):
        return bytes(value)
    if hasattr(value, "bytes") and type(value).__name__ == "UUID":
        return str(value)
    return value


INT64_MAX = 2**63 - 1  #: DuckDB's infinite timestamp, in µs


def _temporal_sql(typ: pa.DataType, expr: str, engine: bool = False) -> str | None:
    """SQL turning a date/timestamp expression into the integer the lake stores (timestamps' infinities as
    ``datetime.max`` and ``datetime.min`` + 1 µs, dates' as DuckDB's), or with ``engine`` the one DuckDB and the
    gateway read (infinities as DuckDB's)."""
    if pa.types.is_timestamp(typ):
        finite = f"(extract(epoch FROM {expr}) * 1000000)::int8"
        big, small = (INT64_MAX, -INT64_MAX) if engine else (TS_INFINITY, TS_MINUS_INFINITY)
    elif pa.types.is_date32(typ):
        finite = f"({expr} - '1970-01-01'::date)"
        big, small = 2147483647, -2147483647
    else:
        return None
    return f"CASE WHEN {expr} = 'infinity' THEN {big} WHEN {expr} = '-infinity' THEN {small} ELSE {finite} END"


_PG_CAST = {"int32": "int4", "int64": "int8", "bool": "bool", "double": "float8", "binary": "bytea"}


def _source_expr(name: str, typ: pa.DataType, engine: bool = False) -> str:
    col = sql.Identifier(name).as_string()
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return f"CASE WHEN {col} IS NULL THEN NULL ELSE format('%s', {col}) END"  # the type's output function
    if pa.types.is_float32(typ):
        return f"{col}::float8"
    temporal = _temporal_sql(typ, col, engine)
    if temporal:
        return temporal
    listed = pa.types.is_list(typ) or pa.types.is_large_list(typ)
    inner = typ.value_type if listed else None
    if listed and (pa.types.is_string(inner) or pa.types.is_large_string(inner)):
        element = "CASE WHEN v IS NULL THEN NULL ELSE format('%s', v) END"  # one-dimensional arrays
    elif listed and pa.types.is_float32(inner):
        element = "v::float8"
    elif listed and _PG_CAST.get(str(inner)) or (listed and pa.types.is_decimal(inner)):
        element = f"v::{_PG_CAST.get(str(inner), 'numeric')}"  # arrays of domains come back as text otherwise
    else:
        element = _temporal_sql(inner, "v", engine) if listed else None
    if element:
        agg = f"(SELECT array_agg({element} ORDER BY o) FROM unnest({col}) WITH ORDINALITY x(v, o))"
        return f"CASE WHEN {col} IS NULL THEN NULL ELSE coalesce({agg}, '{{}}') END"
    return col


def source_rows(
    conn: psycopg.Connection, name: str, lake_schema: pa.Schema, key: tuple[str, ...], engine: bool = False
) -> list[tuple]:
    """Source rows as comparable tuples, columns cast the way the lake stores them (``engine``: the way DuckDB
    and the gateway read them)."""
    ref = TableRef.parse(name)
    conn.execute("SET intervalstyle = iso_8601")  # as the worker's sessions
    exprs = ", ".join(_source_expr(f.name, f.type, engine) for f in lake_schema)
    query = f"SELECT {exprs} FROM {sql.Identifier(ref.schema, ref.name).as_string()}"
    return sorted((tuple(_normal(v) for v in row) for row in conn.execute(query).fetchall()), key=repr)


def _lake_values(col: pa.ChunkedArray) -> list:
    typ = col.type
    if isinstance(typ, pa.BaseExtensionType):
        return [None if v is None else str(v) for v in col.to_pylist()]
    if pa.types.is_float32(typ):
        return col.cast(pa.float64()).to_pylist()
    if pa.types.is_timestamp(typ):
        return col.cast(pa.int64()).to_pylist()
    if pa.types.is_date32(typ):
        return col.cast(pa.int32()).to_pylist()
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        inner = typ.value_type
        if pa.types.is_timestamp(inner):
            return col.cast(pa.list_(pa.int64())).to_pylist()
        if pa.types.is_date32(inner):
            return col.cast(pa.list_(pa.int32())).to_pylist()
        if pa.types.is_float32(inner):
            return col.cast(pa.list_(pa.float64())).to_pylist()
        if isinstance(inner, pa.BaseExtensionType):  # uuid[]
            return [None if v is None else [None if e is None else str(e) for e in v] for v in col.to_pylist()]
    return col.to_pylist()


def arrow_rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    cols = [_lake_values(table[name]) for name in columns]
    return sorted((tuple(_normal(v) for v in row) for row in zip(*cols, strict=True)), key=repr)


def assert_lake_equals_source(
    conn: psycopg.Connection, settings: settings_mod.Settings, name: str, source: str | None = None
) -> LakeTable:
    """The merged state and the replayed change log both equal the source table (``source``, default the same
    name), row by row."""
    table = lake_table(settings, name)
    ref = TableRef.parse(source or name)
    attributes = conn.execute(SOURCE_COLUMNS, (ref.schema, ref.name)).fetchall()
    present = {name for name, *_ in attributes}
    lake_types = {f.name: f.type for f in table.changelog.schema().as_arrow()}
    # every source column is in the lake (issue 29.9: comparing only the columns both have let a worker that
    # ignored ADD COLUMN pass); generated columns the publication cannot carry are left out on purpose
    lost = sorted(name for name, generated, *_ in attributes if not generated and name not in lake_types)
    assert not lost, f"source column(s) {lost} of {ref} are not in the lake table {name}"
    # ... in the type the source's type maps to (a column wrongly kept as text compared equal as text)
    wrong = [
        f"{col} ({typname}{'[]' * dims}: lake {lake_types[col]}, expected {want})"
        for col, _, typname, dims, precision, scale in attributes
        if col in lake_types and plain_type(lake_types[col]) != (want := expected_type(typname, dims, precision, scale))
    ]
    assert not wrong, f"columns of {name} are stored in the wrong type: {'; '.join(wrong)}"
    columns = [
        f.name
        for f in table.changelog.schema().as_arrow()
        if not f.name.startswith("_") and f.name in present
    ]
    source_schema = pa.schema([table.changelog.schema().as_arrow().field(c) for c in columns])
    expected = source_rows(conn, str(ref), source_schema, table.schema.key)
    state = table.current()
    _assert_same(arrow_rows(state, columns), expected, f"state of {name}")
    changelog = table.changelog.scan().to_arrow()
    replayed = merge.replay(changelog, state.schema, table.schema.key)
    _assert_same(arrow_rows(replayed, columns), expected, f"replayed change log of {name}")
    return table


def _short(row: tuple) -> str:
    return "(" + ", ".join(repr(v) if len(repr(v)) < 60 else repr(v)[:57] + "..." for v in row) + ")"


def _assert_same(lake: list[tuple], source: list[tuple], what: str) -> None:
    if lake == source:
        return
    lake_set, source_set = set(map(repr, lake)), set(map(repr, source))
    missing = [r for r in source if repr(r) not in lake_set]
    extra = [r for r in lake if repr(r) not in source_set]
    detail = []
    by_key = {r[0]: r for r in extra}
    for row in missing[:5]:
        other = by_key.get(row[0])
        if other is not None:  # same first column: show the differing columns only
            diffs = [
                f"col {i}: source {_short((a,))} lake {_short((b,))}"
                for i, (a, b) in enumerate(zip(row, other, strict=True))
                if repr(a) != repr(b)
            ]
            detail.append(f"row {row[0]!r}: " + "; ".join(diffs))
        else:
            detail.append(f"missing in the lake: {_short(row)}")
    detail += [f"only in the lake: {_short(r)}" for r in extra[:5] if r[0] not in {m[0] for m in missing}]
    raise AssertionError(
        f"{what} differs from the source ({len(lake)} vs {len(source)} rows):\n  " + "\n  ".join(detail)
    )


def use_reader(monkeypatch: Any, reader: str) -> None:
    """Make the snapshot read through ``reader``: DuckDB (binary COPY, the default), psql or libpq (text)."""
    from lakegate.connectors.postgres import duckcopy, snapshot

    if reader != "duckdb":  # as without the postgres extension
        monkeypatch.setattr(duckcopy, "database", lambda: None)
    if reader == "libpq":  # as without a psql binary
        monkeypatch.setattr(snapshot, "psql_binary", lambda: None)

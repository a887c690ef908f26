"""Every reader of a lake table compared with the source table, row by row: the merged state and the replayed
change log (LakeTable), a plain pyiceberg scan of the state table, and the gateway's view (DuckDB)."""

from __future__ import annotations

from typing import Any

import psycopg
import pyarrow as pa
from psycopg import sql

from lakegate import settings as settings_mod
from lakegate.connectors.changes import TableRef
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import canon, rows_of
from tests.lakehelp import _assert_same, arrow_rows, assert_lake_equals_source, source_rows


def assert_readers_equal_source(
    conn: psycopg.Connection,
    settings: settings_mod.Settings,
    name: str,
    *,
    source: str | None = None,
    gateway: Gateway | None = None,
) -> None:
    """The lake table ``name`` equals the source table (``source``, default the same name) through every reader
    (call with the worker stopped: this folds)."""
    table = assert_lake_equals_source(conn, settings, name, source)
    ref = TableRef.parse(source or name)
    lake_ref = TableRef.parse(name)
    present = [
        r[0]
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position",
            (ref.schema, ref.name),
        ).fetchall()
    ]
    lake_schema = table.changelog.schema().as_arrow()
    columns = [c for c in present if c in lake_schema.names]
    expected = source_rows(conn, str(ref), pa.schema([lake_schema.field(c) for c in columns]), table.schema.key)
    if table.state is not None:  # a plain Iceberg reader of the state table, once folded
        table.fold()
        table.refresh()
        plain = table.state.scan().to_arrow()
        _assert_same(arrow_rows(plain, columns), expected, f"plain pyiceberg scan of the state table {name}")
    own = gateway is None
    gw = gateway or Gateway(settings.lake, settings.sources, settings.gateway)
    try:
        quoted = ", ".join(sql.Identifier(c).as_string() for c in columns)
        target = "" if table.state is not None else "__changelog"
        result = gw.query(f"SELECT {quoted} FROM lake.{lake_ref.schema}.{lake_ref.name}{target}").table
        if table.state is not None:
            got = sorted(rows_of(result), key=repr)
            want = sorted(_pg_canon(conn, ref, columns, lake_schema), key=repr)
            assert got == want, f"gateway view of {name} differs from the source:\n{_diff(got, want)}"
    finally:
        if own:
            gw.close()


def _pg_canon(
    conn: psycopg.Connection, ref: TableRef, columns: list[str], lake: pa.Schema
) -> list[tuple[Any, ...]]:
    exprs = []
    for c in columns:
        ident = sql.Identifier(c).as_string()
        typ = lake.field(c).type
        text = pa.types.is_string(typ) or pa.types.is_large_string(typ)
        exprs.append(f"CASE WHEN {ident} IS NULL THEN NULL ELSE format('%s', {ident}) END" if text else ident)
    conn.execute("SET intervalstyle = iso_8601")
    query = f"SELECT {', '.join(exprs)} FROM {sql.Identifier(ref.schema, ref.name).as_string()}"
    return [tuple(canon(v) for v in row) for row in conn.execute(query).fetchall()]


def _diff(got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> str:
    gs, ws = set(map(repr, got)), set(map(repr, want))
    missing = [r for r in want if repr(r) not in gs][:5]
    extra = [r for r in got if repr(r) not in ws][:5]
    return f"  {len(got)} vs {len(want)} rows; missing {missing}; only in the gateway {extra}"

"""Every reader of a lake table compared with the source table, row by row: the merged state and the replayed
change log (LakeTable), a plain pyiceberg scan of the state table, and the gateway's view (DuckDB)."""

from __future__ import annotations

import psycopg
import pyarrow as pa
from psycopg import sql

from lakegate import settings as settings_mod
from lakegate.connectors.changes import TableRef
from lakegate.gateway.service import Gateway
from tests.lakehelp import _assert_same, arrow_rows, assert_lake_equals_source, source_rows


def assert_readers_equal_source(
    conn: psycopg.Connection,
    settings: settings_mod.Settings,
    name: str,
    *,
    source: str | None = None,
    gateway: Gateway | None = None,
) -> None:
    """The lake table ``name`` equals the source table (``source``, default the same name) through every reader:
    the state table as it is, with no help (it is exact at every commit)."""
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
    if table.state is not None:  # a plain Iceberg reader of the state table
        plain = table.state.scan().to_arrow()
        _assert_same(arrow_rows(plain, columns), expected, f"plain pyiceberg scan of the state table {name}")
    own = gateway is None
    gw = gateway or Gateway(settings.lake, settings.sources, settings.gateway)
    try:
        quoted = ", ".join(sql.Identifier(c).as_string() for c in columns)
        target = "" if table.state is not None else "__changelog"
        result = gw.query(f"SELECT {quoted} FROM lake.{lake_ref.schema}.{lake_ref.name}{target}").table
        if table.state is not None:  # the gateway reads PostgreSQL's infinities back as DuckDB's
            shown = source_rows(conn, str(ref), pa.schema([lake_schema.field(c) for c in columns]), (), engine=True)
            _assert_same(arrow_rows(result, columns), shown, f"gateway view of {name}")
    finally:
        if own:
            gw.close()

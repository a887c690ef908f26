"""Lake columns with their PostgreSQL types again: what the typing of a statement knows about a lake table, and
the conversions the lake route puts in front of every lake view so that DuckDB computes on PostgreSQL's types.

The lake stores ``int2`` as ``int``, and ``json``/``jsonb``, ``interval`` and unconstrained ``numeric`` as text
(exact, and readable by any Iceberg engine). The ingest records each column's source type in the table
property ``lakegate.pgtypes``; with it the view reads ``int2`` as ``SMALLINT`` (overflow as PostgreSQL's),
json as ``JSON`` and an interval (PostgreSQL's ISO 8601 text) as ``INTERVAL``. An unconstrained numeric stays
PostgreSQL's text of each value (its display scale is part of it): the rewrites read it as ``DECIMAL(38, 18)``
wherever its value is used (:mod:`lakegate.gateway.dialect_scale`), checked: a value with more digits is an
error that names it, never a rounded number.
``char(n)`` stays as stored (padded, as PostgreSQL keeps it); :mod:`lakegate.gateway.dialect_text` follows
PostgreSQL's rules for it. Tables without the property (written before it existed, or not by lakegate) are read
as their Iceberg types say.

The lake holds PostgreSQL's infinite timestamps as ``datetime.max`` and ``datetime.min`` + 1 µs, which every
reader can hold (:data:`lakegate.connectors.changes.TS_INFINITY`); a column that has held one is marked on its
table (``lakegate.infinity.field.<id>``) and read back here as DuckDB's infinities, which are PostgreSQL's. Only
marked columns pay for the mapping (a filter on them is no longer pushed into the scan).
"""

from __future__ import annotations

from typing import Any

from lakegate.connectors.changes import INFINITY_PROPERTY, TS_INFINITY, TS_MINUS_INFINITY
from lakegate.connectors.iceberg.evolution import pgtypes_of
from lakegate.gateway.pgtype import PgType, lake_column


def column_types(table: Any) -> dict[str, PgType | None]:
    """Column name -> PostgreSQL type of a pyiceberg table (None where unknown)."""
    recorded = pgtypes_of(dict(table.properties))
    return {f.name: lake_column(f.field_type, recorded.get(f.name)) for f in table.schema().fields}


def infinite_columns(table: Any) -> frozenset[str]:
    """The top-level columns of a pyiceberg table that hold (or hold lists of) infinite timestamps."""
    marked = {int(k[len(INFINITY_PROPERTY) :]) for k in table.properties if k.startswith(INFINITY_PROPERTY)}
    if not marked:
        return frozenset()
    out = set()
    for field in table.schema().fields:
        ids, todo = set(), [field.field_type]
        while todo:  # the field itself and its list elements
            inner = todo.pop()
            if getattr(inner, "element_id", None) is not None:
                ids.add(inner.element_id)
                todo.append(inner.element_type)
        if (ids | {field.field_id}) & marked:
            out.add(field.name)
    return frozenset(out)


def _infinities(expr: str, typ: PgType) -> str:
    if typ.dims:
        return f"list_transform({expr}, x{typ.dims} -> {_infinities(f'x{typ.dims}', typ.elem)})"
    target = "TIMESTAMPTZ" if typ.is_("timestamptz") else "TIMESTAMP"
    return (
        f"CASE epoch_us({expr}) WHEN {TS_INFINITY} THEN 'infinity'::{target} "
        f"WHEN {TS_MINUS_INFINITY} THEN '-infinity'::{target} ELSE {expr} END"
    )


def conversions(types: dict[str, PgType | None], infinite: frozenset[str] = frozenset()) -> dict[str, str]:
    """Column -> the DuckDB expression that reads it with its PostgreSQL type (only those that need one)."""
    out = {}
    for name, typ in types.items():
        column = '"' + name.replace('"', '""') + '"'
        if typ is not None and name in infinite and typ.name in ("timestamp", "timestamptz"):
            out[name] = _infinities(column, typ)
        if typ is None or typ.dims:
            continue
        if typ.is_("int2"):
            out[name] = f"CAST({column} AS SMALLINT)"
        elif typ.is_("json", "jsonb"):
            out[name] = f"CAST({column} AS JSON)"
        elif typ.is_("interval"):
            out[name] = f"pg_iso_interval({column})"
    return out


def converted(view_sql: str, types: dict[str, PgType | None], infinite: frozenset[str] = frozenset()) -> str:
    """``view_sql`` with the conversions applied (the same columns, in the same order)."""
    replace = conversions(types, infinite)
    if not replace:
        return view_sql
    items = ", ".join(f'{expr} AS "{name.replace(chr(34), chr(34) * 2)}"' for name, expr in replace.items())
    return f"SELECT * REPLACE ({items}) FROM ({view_sql})"

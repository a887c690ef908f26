"""Result column types reported as PostgreSQL's type names (``int8``, ``numeric``, ``interval``, ``uuid`` ...), the
same on both routes.

The PostgreSQL route knows them: its engine marks each field with ``lakegate.pg_type`` (the server's ``typname``).
The DuckDB route marks each field with ``lakegate.duckdb_type`` (DuckDB's own name of the result type, which says
UUID and JSON where Arrow sees only strings); this module maps it, or the Arrow type when neither is there.
"""

from __future__ import annotations

import re

import pyarrow as pa

PG_TYPE = b"lakegate.pg_type"
DUCKDB_TYPE = b"lakegate.duckdb_type"
NUMERIC_TEXT = b"lakegate.numeric"

_DUCKDB = {
    "BOOLEAN": "bool",
    "TINYINT": "int2",
    "SMALLINT": "int2",
    "UTINYINT": "int2",
    "INTEGER": "int4",
    "USMALLINT": "int4",
    "BIGINT": "int8",
    "UINTEGER": "int8",
    "UBIGINT": "numeric",
    "HUGEINT": "numeric",
    "UHUGEINT": "numeric",
    "FLOAT": "float4",
    "DOUBLE": "float8",
    "VARCHAR": "text",
    "BLOB": "bytea",
    "DATE": "date",
    "TIME": "time",
    "TIME WITH TIME ZONE": "timetz",
    "TIMESTAMP": "timestamp",
    "TIMESTAMP_NS": "timestamp",
    "TIMESTAMP_MS": "timestamp",
    "TIMESTAMP_S": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "INTERVAL": "interval",
    "UUID": "uuid",
    "JSON": "json",
    "BIT": "varbit",
    "NULL": "text",
}


def duckdb_name(name: str) -> str:
    """DuckDB's type name -> PostgreSQL's (arrays as ``_elem``, as ``pg_type`` names them)."""
    if name.endswith("[]"):
        return "_" + duckdb_name(name[:-2])
    base = re.sub(r"\(.*\)$", "", name).strip()
    if base == "DECIMAL":
        return "numeric"
    if base in ("STRUCT", "MAP", "UNION"):
        return "record"
    if base == "ENUM":
        return "text"
    return _DUCKDB.get(base, base.lower())


def arrow_name(t: pa.DataType) -> str:
    """An Arrow type -> PostgreSQL's name (for results that carry no engine type name)."""
    checks = [
        (pa.types.is_boolean, "bool"),
        (lambda t: pa.types.is_int8(t) or pa.types.is_int16(t), "int2"),
        (pa.types.is_int32, "int4"),
        (pa.types.is_integer, "int8"),
        (pa.types.is_decimal, "numeric"),
        (pa.types.is_float32, "float4"),
        (pa.types.is_floating, "float8"),
        (pa.types.is_date, "date"),
        (pa.types.is_time, "time"),
        (lambda t: pa.types.is_timestamp(t) and t.tz is not None, "timestamptz"),
        (pa.types.is_timestamp, "timestamp"),
        (lambda t: pa.types.is_interval(t) or pa.types.is_duration(t), "interval"),
        (lambda t: pa.types.is_binary(t) or pa.types.is_large_binary(t), "bytea"),
        (pa.types.is_struct, "record"),
    ]
    if isinstance(t, pa.BaseExtensionType) and t.extension_name == "arrow.uuid":
        return "uuid"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return "_" + arrow_name(t.value_type)
    return next((name for test, name in checks if test(t)), "text")


def pg_type(field: pa.Field) -> str:
    """The PostgreSQL type name of a result column."""
    meta = field.metadata or {}
    if PG_TYPE in meta:
        return meta[PG_TYPE].decode()
    if meta.get(NUMERIC_TEXT):
        return "numeric"
    if DUCKDB_TYPE in meta:
        return duckdb_name(meta[DUCKDB_TYPE].decode())
    return arrow_name(field.type)


def marked(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field's PostgreSQL type name as ``lakegate.pg_type`` (what Arrow clients read)."""
    return pa.schema(
        [f.with_metadata({**(f.metadata or {}), PG_TYPE: pg_type(f).encode()}) for f in schema],
        metadata=schema.metadata,
    )

"""Lake-route results with PostgreSQL's column types: each column of a DuckDB result is marked with the type
PostgreSQL gives it (``lakegate.pg_type``), and its values are cast to that type's Arrow form where DuckDB's
differs only in width (``length()`` is ``integer`` in PostgreSQL, ``BIGINT`` in DuckDB; ``sign()`` a float8,
``TINYINT``); a ``numeric`` that arrives as PostgreSQL's text of each value travels marked as such
(``lakegate.numeric``), as on the PostgreSQL route. The casts are checked: a value the PostgreSQL type cannot
hold is an error, never wrapped.
Columns whose PostgreSQL type the gateway cannot tell keep DuckDB's type (:mod:`lakegate.gateway.pgtypes`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa

from lakegate.connectors.query import INVALID, QueryError, ResultStream
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtypes import NUMERIC_TEXT, PG_TYPE

_WIDTHS = {
    "int2": pa.int16(),
    "int4": pa.int32(),
    "int8": pa.int64(),
    "float4": pa.float32(),
    "float8": pa.float64(),
}
_TEXT = {"text", "varchar", "bpchar", "name", "json", "jsonb", "unknown", "regtype"}


def _target(typ: PgType, arrow: pa.DataType) -> tuple[str, pa.DataType | None] | None:
    """(the type name to report, an Arrow type to cast to or None) — None when ``arrow`` does not hold ``typ``."""
    if typ.dims:
        return (typ.typname, None) if pa.types.is_list(arrow) or pa.types.is_large_list(arrow) else None
    number = pa.types.is_integer(arrow) or pa.types.is_floating(arrow)
    if typ.name in _WIDTHS and number and (typ.floating or pa.types.is_integer(arrow)):
        return typ.typname, None if arrow == _WIDTHS[typ.name] else _WIDTHS[typ.name]
    if typ.numeric and (pa.types.is_string(arrow) or pa.types.is_large_string(arrow)):
        return typ.typname, None  # PostgreSQL's text of each value (dialect_scale), as the PostgreSQL route's
    text_like = typ.name in _TEXT or typ.as_text is not None  # inet, an enum ... as PostgreSQL's text of it
    if text_like and (pa.types.is_string(arrow) or pa.types.is_large_string(arrow)):
        return typ.typname, None
    if typ.as_text is not None and pa.types.is_dictionary(arrow) and pa.types.is_string(arrow.value_type):
        return typ.typname, pa.string()  # a PostgreSQL enum that DuckDB's scanner reads as its ENUM
    return None


def typed_schema(
    schema: pa.Schema, types: Sequence[PgType | None]
) -> tuple[pa.Schema, list[pa.DataType | None]]:
    fields: list[pa.Field] = []
    casts: list[pa.DataType | None] = []
    for field, typ in zip(schema, types, strict=True):
        target = _target(typ, field.type) if typ is not None else None
        if target is None:
            fields.append(field)
            casts.append(None)
            continue
        name, to = target
        meta = {**(field.metadata or {}), PG_TYPE: name.encode()}
        if typ is not None and typ.numeric and to is None and pa.types.is_string(field.type):
            meta[NUMERIC_TEXT] = b"text"
        fields.append(pa.field(field.name, to or field.type, field.nullable, meta))
        casts.append(to)
    return pa.schema(fields, metadata=schema.metadata), casts


class PgTypedStream:
    """Wraps an engine's :class:`~lakegate.connectors.query.ResultStream`."""

    def __init__(self, stream: ResultStream, types: Sequence[PgType | None]) -> None:
        self._stream = stream
        self._types = list(types)
        self._casts: list[pa.DataType | None] = []
        self.schema = pa.schema([])

    def start(self) -> None:
        self._stream.start()
        schema = self._stream.schema
        if len(schema) != len(self._types):  # the typing saw another column list: keep DuckDB's types
            self.schema, self._casts = schema, [None] * len(schema)
            return
        self.schema, self._casts = typed_schema(schema, self._types)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        for batch in self._stream:
            if not any(self._casts):
                yield pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
                continue
            columns = []
            for column, to in zip(batch.columns, self._casts, strict=True):
                try:
                    columns.append(column if to is None else column.cast(to))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
                    raise QueryError(
                        f"a value does not fit PostgreSQL's result type: {exc}", INVALID, engine="duckdb"
                    ) from exc
            yield pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def cancel(self) -> None:
        self._stream.cancel()

    def close(self) -> None:
        self._stream.close()

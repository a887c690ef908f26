"""Lake table schemas: a source :class:`TableSchema` -> Iceberg schemas of the state and change-log tables,
and the evolution of an existing table when the source schema changes."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa
from pyiceberg import types as it
from pyiceberg.schema import Schema

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, TableSchema
from lakegate.connectors.errors import SchemaChangeError

STATE, CHANGELOG = "state", "changelog"
CHANGELOG_SUFFIX = "__changelog"


def iceberg_type(arrow: pa.DataType, next_id: Callable[[], int]) -> it.IcebergType:
    """Arrow type -> Iceberg type (the types :mod:`lakegate.connectors.postgres.types` produces)."""
    if isinstance(arrow, pa.BaseExtensionType) and arrow.extension_name == "arrow.uuid":
        return it.UUIDType()
    simple = {
        pa.bool_(): it.BooleanType(),
        pa.int32(): it.IntegerType(),
        pa.int64(): it.LongType(),
        pa.float32(): it.FloatType(),
        pa.float64(): it.DoubleType(),
        pa.string(): it.StringType(),
        pa.large_string(): it.StringType(),
        pa.binary(): it.BinaryType(),
        pa.large_binary(): it.BinaryType(),
        pa.date32(): it.DateType(),
        pa.time64("us"): it.TimeType(),
        pa.timestamp("us"): it.TimestampType(),
        pa.timestamp("us", tz="UTC"): it.TimestamptzType(),
    }
    if arrow in simple:
        return simple[arrow]
    if pa.types.is_decimal(arrow):
        return it.DecimalType(arrow.precision, arrow.scale)
    if pa.types.is_list(arrow) or pa.types.is_large_list(arrow):
        element_id = next_id()
        return it.ListType(element_id, iceberg_type(arrow.value_type, next_id), element_required=False)
    raise SchemaChangeError("", f"Arrow type {arrow} has no Iceberg counterpart")


def _fields(schema: TableSchema, kind: str) -> list[tuple[str, pa.DataType, bool]]:
    """(name, arrow type, required) of every column of the lake table of ``kind``."""
    fields = [(c.name, c.type, kind == STATE and c.name in schema.key) for c in schema.columns]
    if kind == CHANGELOG:
        fields += [(OP, pa.string(), True), (LSN, pa.int64(), True), (SEQ, pa.int64(), True)]
    else:
        fields += [(LSN, pa.int64(), True)]
    fields.append((COMMIT_TS, pa.timestamp("us", tz="UTC"), False))
    return fields


def lake_schema(schema: TableSchema, kind: str) -> Schema:
    """The Iceberg schema of the state (key columns are identifier fields) or change-log table."""
    counter = itertools.count(1)
    fields = _fields(schema, kind)
    top_ids = [next(counter) for _ in fields]
    nested = itertools.count(len(fields) + 1)
    columns = [
        it.NestedField(fid, name, iceberg_type(arrow, lambda: next(nested)), required=required)
        for fid, (name, arrow, required) in zip(top_ids, fields, strict=True)
    ]
    identifiers = [f.field_id for f in columns if kind == STATE and f.name in schema.key]
    return Schema(*columns, identifier_field_ids=identifiers)


_PROMOTIONS = {(it.IntegerType(), it.LongType()), (it.FloatType(), it.DoubleType())}


def _fits(new: it.IcebergType, old: it.IcebergType) -> bool:
    """Values of ``new`` can be stored in a column of ``old`` without change (narrowing in the source)."""
    if new == old or (new, old) in _PROMOTIONS:
        return True
    if isinstance(new, it.DecimalType) and isinstance(old, it.DecimalType):
        return new.scale == old.scale and new.precision <= old.precision
    if isinstance(new, it.ListType) and isinstance(old, it.ListType):
        return _fits(new.element_type, old.element_type)
    return False


def _promotes(old: it.IcebergType, new: it.IcebergType) -> bool:
    """Iceberg can widen ``old`` to ``new`` in place."""
    if (old, new) in _PROMOTIONS:
        return True
    return (
        isinstance(old, it.DecimalType)
        and isinstance(new, it.DecimalType)
        and old.scale == new.scale
        and new.precision > old.precision
    )


@dataclass(frozen=True)
class Evolution:
    """Schema changes to apply to a lake table: columns to add and columns to widen."""

    add: tuple[tuple[str, it.IcebergType], ...] = ()
    widen: tuple[tuple[str, it.IcebergType], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.add or self.widen)


def plan_evolution(current: Schema, source: TableSchema, kind: str) -> Evolution:
    """What must change in ``current`` so that rows of ``source`` fit; raises SchemaChangeError when Iceberg cannot.

    Dropped source columns stay in the lake (null from then on); narrowed types fit as they are.
    """
    target = lake_schema(source, kind)
    add, widen = [], []
    for field in target.fields:
        try:
            existing = current.find_field(field.name)
        except ValueError:
            add.append((field.name, field.field_type))
            continue
        if _fits(field.field_type, existing.field_type):
            continue
        if _promotes(existing.field_type, field.field_type):
            widen.append((field.name, field.field_type))
            continue
        col = source.column(field.name) if field.name in source.names else None
        raise SchemaChangeError(
            str(source.table),
            f"column {field.name!r} of {source.table} changed to {col.source_type if col else field.field_type}, "
            f"which the lake column of type {existing.field_type} cannot hold (Iceberg only widens int->long, "
            "float->double and decimal precision). Change the column back in PostgreSQL, or stop the worker, run "
            f"'lakegate maintain --resnapshot {source.table}' to rebuild the lake tables, and start it again",
        )
    return Evolution(tuple(add), tuple(widen))

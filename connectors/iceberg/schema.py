"""Lake table schemas: a source :class:`TableSchema` -> Iceberg schemas of the state and change-log tables,
and the evolution of an existing table when the source schema changes."""

from __future__ import annotations

import functools
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


@functools.lru_cache(maxsize=4096)
def lake_schema(schema: TableSchema, kind: str) -> Schema:
    """The Iceberg schema of the state (key columns are identifier fields) or change-log table.

    Cached: every commit plans its table's schema against it (a few milliseconds to build, per table and
    commit, which a worker with hundreds of tables would spend again and again); Iceberg schemas are immutable."""
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
    """Schema changes to apply to a lake table.

    ``rename``: (old, new) lake column names (the same source column, renamed: Iceberg keeps its field id, so
    history and values stay); ``add``: new columns; ``widen``: type promotions; ``replaced``: lake columns
    whose name now belongs to another source column (dropped and added again under the same name), whose
    existing values must be overwritten; ``attnums``: the source identity of every column afterwards."""

    add: tuple[tuple[str, it.IcebergType], ...] = ()
    widen: tuple[tuple[str, it.IcebergType], ...] = ()
    rename: tuple[tuple[str, str], ...] = ()
    replaced: tuple[str, ...] = ()
    attnums: tuple[tuple[str, int], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.add or self.widen or self.rename or self.replaced)

    @property
    def new_columns(self) -> list[str]:
        """Columns whose rows written before them need a value: added and replaced ones."""
        return [name for name, _ in self.add] + list(self.replaced)


def _renames(current: Schema, source: TableSchema, attnums: dict[str, int]) -> list[tuple[str, str]]:
    """Lake columns that are a source column under its new name (matched by attnum)."""
    lake = {f.name for f in current.fields}
    by_attnum = {num: name for name, num in attnums.items() if name in lake}
    renames: list[tuple[str, str]] = []
    for col in source.columns:
        if col.name in lake or col.source_id is None:
            continue
        old = by_attnum.get(col.source_id)
        if old is not None and old not in source.names and all(old != r[0] for r in renames):
            renames.append((old, col.name))
    return renames


def plan_evolution(
    current: Schema, source: TableSchema, kind: str, attnums: dict[str, int] | None = None
) -> Evolution:
    """What must change in ``current`` so that rows of ``source`` fit; raises SchemaChangeError when Iceberg cannot.

    ``attnums`` is the source identity of the lake's columns (see :class:`Evolution`): with it a renamed source
    column renames its lake column instead of adding a new one. Dropped source columns stay in the lake (null
    from then on); narrowed types fit as they are. A column dropped and added again under its name with a type
    the old lake column cannot hold renames the old one aside (``<name>__dropped_<its attnum>``, history and
    values kept) and adds the new one.
    """
    attnums = dict(attnums or {})
    renames = _renames(current, source, attnums)
    renamed_from = {new: old for old, new in renames}
    lake_names = {f.name for f in current.fields}
    target = lake_schema(source, kind)
    add, widen, replaced = [], [], []
    for field in target.fields:
        try:
            existing = current.find_field(renamed_from.get(field.name, field.name))
        except ValueError:
            add.append((field.name, field.field_type))
            continue
        col = source.column(field.name) if field.name in source.names else None
        known = attnums.get(field.name)
        other = (  # the name now belongs to another source column (dropped and added again)
            col is not None
            and col.source_id is not None
            and field.name not in renamed_from
            and known is not None
            and known != col.source_id
        )
        if _fits(field.field_type, existing.field_type) or _promotes(existing.field_type, field.field_type):
            if other:
                replaced.append(field.name)
            if not _fits(field.field_type, existing.field_type):
                widen.append((existing.name, field.field_type))  # by its name before any rename
            continue
        if other:  # of a type the old lake column cannot hold: the old one is kept aside, the new one added
            aside = f"{existing.name}__dropped_{known}"
            taken = aside in source.names and source.column(aside).source_id != known  # another column's
            if taken or aside in lake_names:
                raise SchemaChangeError(
                    str(source.table),
                    f"column {field.name!r} of {source.table} was dropped and added again as "
                    f"{col.source_type if col else field.field_type}, and the name {aside!r} the lake would keep "
                    "the old column under is taken. Rename that column, or resnapshot the table",
                )
            renames.append((existing.name, aside))
            add.append((field.name, field.field_type))
            continue
        raise SchemaChangeError(
            str(source.table),
            f"column {field.name!r} of {source.table} changed to {col.source_type if col else field.field_type}, "
            f"which the lake column of type {existing.field_type} cannot hold (Iceberg only widens int->long, "
            "float->double and decimal precision). Change the column back in PostgreSQL, or stop the worker, run "
            f"'lakegate maintain --resnapshot {source.table}' to rebuild the lake tables, and start it again",
        )
    for old, new in renames:
        attnums[new] = attnums.pop(old)
    for col in source.columns:
        if col.source_id is not None:
            attnums[col.name] = col.source_id
    return Evolution(
        tuple(add), tuple(widen), tuple(renames), tuple(replaced), tuple(sorted(attnums.items()))
    )

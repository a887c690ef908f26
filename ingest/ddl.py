"""What the worker does when a table's columns change under it (see README "Operations").

pgoutput tells the worker the new column list (a Relation message) right before the first change that uses it,
never the DDL itself; the rows that existed before an ``ADD COLUMN`` get no change at all. So when the lake
meets a new column (or a column dropped and added again under the same name) it asks the catalog what the
existing rows hold:

- ``atthasmissing``: PostgreSQL did not rewrite the table and reads old rows with the constant in
  ``attmissingval`` (ADD COLUMN ... DEFAULT 5, or DEFAULT now(), evaluated once): the lake writes that value into
  every existing row (:class:`~lakegate.connectors.iceberg.evolution.Backfill`).
- a column without a default (nor identity or generation expression) holds NULL in the existing rows, which is
  what the lake reads for a column its files lack.
- a column with one, if the table's storage changed since the lake last copied it (a volatile default such as
  ``random()``, ``clock_timestamp()`` or an identity made PostgreSQL rewrite every row with its own value): the
  lake cannot know the values, so the table is copied again under a fresh snapshot (:class:`Resnapshot`), which the
  worker does at once by restarting its stream. The catalog is read as it is now, so a rewrite after the ALTER
  (a type change, VACUUM FULL, CLUSTER, TRUNCATE) while the worker lags also leads to a copy: costly, never wrong.
- a column with a default and the storage unchanged got its default later (SET DEFAULT): NULL.

One case reads wrong: a column added with a volatile default whose default was dropped again before the worker
met it (its rows hold values, the catalog says "no default"); see README "Operations".
"""

from __future__ import annotations

import logging

import pyarrow as pa

from lakegate.connectors.changes import TableRef, TableSchema
from lakegate.connectors.errors import Resnapshot
from lakegate.connectors.iceberg.schema import Evolution
from lakegate.connectors.postgres.introspect import Attribute
from lakegate.connectors.postgres.types import Codec, ConversionError, lake_values, parse_array

log = logging.getLogger("lakegate.ingest")


def new_column_values(
    ref: TableRef,
    plan: Evolution,
    schema: TableSchema,
    codecs: dict[str, Codec],
    attributes: list[Attribute],
    storage_now: str,
    storage_lake: str | None,
) -> dict[str, pa.Array]:
    """The value every existing row holds in each new column that needs one written (see the module docstring);
    raises :class:`Resnapshot` when the lake cannot know it."""
    by_name = {a.name: a for a in attributes}
    values: dict[str, pa.Array] = {}
    for name in plan.new_columns:
        column = schema.column(name)
        attr = by_name.get(name)
        if attr is None or (column.source_id is not None and attr.attnum != column.source_id):
            raise Resnapshot(ref, f"column {name!r} was added and has been renamed or dropped since")
        if attr.has_missing and attr.missing is not None:
            element = parse_array(attr.missing)[0]
            try:
                values[name] = lake_values(codecs[name].convert(pa.array([element], pa.string())))
            except ConversionError as exc:
                raise ConversionError(
                    f"table {ref}, column {name!r}: the default of the rows that existed before the column "
                    f"was added: {exc}"
                ) from exc
            continue
        if attr.has_default and storage_lake is not None and storage_now != storage_lake:
            raise Resnapshot(
                ref,
                f"column {name!r} was added and PostgreSQL has rewritten the table since the lake copied it "
                "(a volatile default such as random() or clock_timestamp(), a type change, VACUUM FULL, CLUSTER "
                "or TRUNCATE), so the values of the existing rows are not in the stream",
            )
        if name in plan.replaced:  # the old column's values must not show through
            values[name] = pa.nulls(1, column.type)
    return values

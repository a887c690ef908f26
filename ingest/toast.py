"""Filling unchanged TOAST values: PostgreSQL does not resend a large value an update left alone.

Such a cell is filled from the row's previous state: an earlier change of the same key in the same batch if
there is one, otherwise the row as the lake holds it. A key update looks the old row up by its old key.
Never written as NULL, never as a placeholder; if the previous state cannot be found the table stops.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from lakegate.connectors.changes import OP, ChangeBatch
from lakegate.connectors.errors import SchemaChangeError

Lookup = Callable[[pa.Table], pa.Table]


def _storage(col: pa.ChunkedArray | pa.Array) -> list:
    if isinstance(col.type, pa.BaseExtensionType):
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        return col.storage.to_pylist()
    return col.to_pylist()


def fill_unchanged(batch: ChangeBatch, lookup: Lookup) -> pa.Table:
    """``batch.data`` with every unchanged cell holding the value it had before the change."""
    if not batch.unchanged or batch.toast_key_row is None:
        return batch.data
    data = batch.data
    key = batch.schema.key
    if not key:
        raise SchemaChangeError(
            str(batch.schema.table),
            (
                f"{batch.schema.table} has no key, so unchanged TOAST values cannot be looked up; "
                f"ALTER TABLE {batch.schema.table} REPLICA IDENTITY FULL so that updates carry the old values"
            ),
        )
    keys = list(zip(*(_storage(data[k]) for k in key), strict=True))
    ops = data[OP].to_pylist()
    source_row = batch.toast_key_row.to_pylist()
    masks = {name: mask.to_pylist() for name, mask in batch.unchanged.items()}
    values = {name: data[name].to_pylist() for name in masks}

    # keys whose previous state precedes this batch
    seen: set[tuple] = set()
    missing: dict[tuple, None] = {}
    for i, op in enumerate(ops):
        if source_row[i] >= 0:
            lookup_key = keys[source_row[i]]
            if lookup_key not in seen:
                missing[lookup_key] = None
        if op in ("c", "u", "r"):
            seen.add(keys[i])
        elif op == "t":
            seen.clear()
    previous = _from_lake(lookup, list(missing), key, list(masks), batch)

    last: dict[tuple, dict[str, object]] = dict(previous)
    for i, op in enumerate(ops):
        if source_row[i] >= 0:
            before = last.get(keys[source_row[i]])
            for name, mask in masks.items():
                if mask[i]:
                    if before is None:
                        raise SchemaChangeError(
                            str(batch.schema.table),
                            (
                                f"{batch.schema.table}: update of key {keys[i]} left column {name!r} unchanged, "
                                "but the "
                                "lake holds no earlier version of that row. The lake is missing history; run "
                                f"'lakegate maintain --resnapshot {batch.schema.table}'"
                            ),
                        )
                    values[name][i] = before[name]
        if op in ("c", "u", "r"):
            last[keys[i]] = {name: values[name][i] for name in masks}
        elif op == "t":
            last.clear()
    for name in masks:
        index = data.schema.get_field_index(name)
        data = data.set_column(
            index, data.schema.field(index), pa.array(values[name], type=data.schema.field(index).type)
        )
    return data


def _from_lake(
    lookup: Lookup, keys: list[tuple], key: tuple[str, ...], columns: list[str], batch: ChangeBatch
) -> dict[tuple, dict[str, object]]:
    if not keys:
        return {}
    query = pa.table(
        {
            name: pa.array([k[i] for k in keys], type=_storage_type(batch.data.schema.field(name).type))
            for i, name in enumerate(key)
        }
    )
    rows = lookup(query)
    found = list(zip(*(_storage(rows[k]) for k in key), strict=True))
    picked = {name: rows[name].to_pylist() for name in columns}
    return {k: {name: picked[name][i] for name in columns} for i, k in enumerate(found)}


def _storage_type(typ: pa.DataType) -> pa.DataType:
    return typ.storage_type if isinstance(typ, pa.BaseExtensionType) else typ

"""Folding a change log into a state: pure functions over Arrow tables.

The state of a table is its change log replayed in ``(_lsn, _seq)`` order: per key the latest change wins, a
delete removes the key, a truncate removes everything before it. :func:`apply` folds a change-log tail into a
state; the same function serves the ingest (merging the tail into the state table), the TOAST lookup and the
tests (replaying a whole change log onto an empty state).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.schema import Schema

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ

_ROW = "__row"


def sort_changes(changes: pa.Table) -> pa.Table:
    return changes.sort_by([(LSN, "ascending"), (SEQ, "ascending")])


def after_last_truncate(changes: pa.Table) -> tuple[pa.Table, bool]:
    """Sorted changes -> (the changes after the last truncate, whether there was one)."""
    is_truncate = pc.equal(changes[OP], "t")
    if not pc.any(is_truncate).as_py():
        return changes, False
    positions = pc.indices_nonzero(is_truncate)
    last = positions[len(positions) - 1].as_py()
    return changes.slice(last + 1), True


def _key_columns(table: pa.Table, key: Sequence[str]) -> pa.Table:
    """Key columns with extension types replaced by their storage (joins and grouping need plain types)."""
    cols = []
    for name in key:
        col = table[name]
        if isinstance(col.type, pa.BaseExtensionType):
            col = pa.chunked_array([c.storage for c in col.chunks], type=col.type.storage_type)
        cols.append(col)
    return pa.table(cols, names=list(key))


def latest_per_key(changes: pa.Table, key: Sequence[str]) -> pa.Table:
    """Sorted changes -> the last change of every key (deletes included)."""
    if changes.num_rows == 0:
        return changes
    keys = _key_columns(changes, key).append_column(_ROW, pa.array(range(changes.num_rows), pa.int64()))
    last = keys.group_by(list(key), use_threads=False).aggregate([(_ROW, "max")])
    return changes.take(_ascending(last[f"{_ROW}_max"]))


def apply(state: pa.Table, changes: pa.Table, key: Sequence[str]) -> pa.Table:
    """Fold ``changes`` (any order) into ``state``; returns the new state with ``state``'s columns."""
    changes, truncated = after_last_truncate(sort_changes(changes))
    if truncated:
        state = state.slice(0, 0)
    latest = latest_per_key(changes, key)
    kept = anti_join(state, latest, key)
    live = latest.filter(pc.not_equal(latest[OP], "d"))
    return pa.concat_tables([kept, conform(live, state.schema)])


def anti_join(rows: pa.Table, remove: pa.Table, key: Sequence[str]) -> pa.Table:
    """Rows of ``rows`` whose key is not in ``remove``."""
    if rows.num_rows == 0 or remove.num_rows == 0:
        return rows
    if len(key) == 1:
        mask = pc.is_in(_key_columns(rows, key)[0], value_set=_key_columns(remove, key)[0].combine_chunks())
        return rows.filter(pc.invert(mask))
    left = _key_columns(rows, key).append_column(_ROW, pa.array(range(rows.num_rows), pa.int64()))
    survivors = left.join(_key_columns(remove, key), keys=list(key), join_type="left anti", use_threads=False)
    return rows.take(_ascending(survivors[_ROW]))


def _ascending(values: pa.ChunkedArray) -> pa.Array:
    """Row numbers in ascending order (so that a take() keeps the original row order)."""
    values = values.combine_chunks()
    return values.take(pc.sort_indices(values))


def replay(changelog: pa.Table, state_schema: pa.Schema, key: Sequence[str]) -> pa.Table:
    """The state a change log describes (what the lake's state table must equal)."""
    return apply(empty_table(state_schema), changelog, key)


def empty_table(schema: pa.Schema) -> pa.Table:
    """``schema.empty_table()``, which pyarrow 26 cannot build for a list of an extension type (uuid[])."""
    return pa.Table.from_arrays([pa.nulls(0, f.type) for f in schema], schema=schema)


def scan_to_arrow(scan: Any) -> pa.Table:
    """``scan.to_arrow()`` of a pyiceberg scan; a scan that finds no rows of a table with a list of an extension
    type (uuid[]) gets its empty table built here, as pyarrow 26 cannot (pyiceberg calls ``empty_table()``)."""
    try:
        return scan.to_arrow()
    except pa.ArrowNotImplementedError as exc:
        if "extension" not in str(exc):
            raise
        return empty_table(scan.projection().as_arrow())


def arrow_schema(schema: Schema) -> pa.Schema:
    """``schema.as_arrow()``, converted once per Iceberg schema object (about 0.15 ms a call at five columns, on
    every commit of every table; the schema models are frozen, so the object names one schema)."""
    with _ARROW_GUARD:
        found = _ARROW.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    converted = schema.as_arrow()
    with _ARROW_GUARD:
        _ARROW[id(schema)] = (schema, converted)  # the schema is held, so its id names it while cached
        while len(_ARROW) > _ARROW_MAX:
            _ARROW.popitem(last=False)
    return converted


_ARROW: OrderedDict[int, tuple[Schema, pa.Schema]] = OrderedDict()
_ARROW_MAX = 4096  #: two per table, a worker's tables, a few versions each
_ARROW_GUARD = threading.Lock()


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """``table`` with exactly ``schema``'s columns, in order: missing columns are null, types are cast."""
    if table.schema.equals(schema, check_metadata=True):
        return table
    names = set(table.column_names)
    columns = []
    for field in schema:
        if field.name in names:
            col = table[field.name]
            if col.type != field.type:
                col = col.cast(field.type)
        else:
            col = pa.nulls(table.num_rows, field.type)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


STATE_META = (LSN, COMMIT_TS)

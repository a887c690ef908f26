"""Schema changes of lake tables: renames by source identity, added columns, type promotions, and the rows a new
column's value must be written into.

Each lake table records the source identity of its columns (PostgreSQL's attnum) in the table property
``lakegate.attnums``, so that a renamed source column renames its Iceberg field (history and values kept) and a
column dropped and added again under the same name is recognised as a new one. A schema change and the rows it
implies are one Iceberg commit per table.

A column added with a value for the rows that already exist (PostgreSQL's ``attmissingval``: ADD COLUMN with a
constant default) is *backfilled*: the change log receives an update of every current row carrying the value,
positioned just before the first change that shows the column (:class:`Backfill`), and the state table's files
are rewritten with it. PostgreSQL itself sends no change for those rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.schema import Schema
from pyiceberg.table import Table, Transaction

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg import merge
from lakegate.connectors.iceberg.commits import append_producer, guard_statistics, repeat, stamp, write_files
from lakegate.connectors.iceberg.datafiles import DataFileStream
from lakegate.connectors.iceberg.schema import STATE, Evolution, plan_evolution

ATTNUMS, STORAGE, KEY = "lakegate.attnums", "lakegate.storage", "lakegate.key"
#: the source type of each column (``bpchar(8)``, ``jsonb``, ``int2``, ``numeric`` ...), as JSON: the lake keeps
#: these as text or wider types, and the gateway reads them with PostgreSQL's semantics again
PGTYPES = "lakegate.pgtypes"


@dataclass(frozen=True)
class Backfill:
    """Values of new columns for the rows that existed before them.

    ``values``: column -> a one-element array in the column's lake type (null allowed); ``lsn``/``commit_ts``:
    the source transaction whose changes first show the columns (the update rows take positions
    ``(lsn, -n) .. (lsn, -1)``, before all of its changes); ``same``: change-log rows of that transaction made
    before the schema change (they get the values too)."""

    values: dict[str, pa.Array]
    lsn: int
    commit_ts: int
    same: pa.Table | None = None


def attnums_of(table: Table) -> dict[str, int]:
    raw = table.properties.get(ATTNUMS)
    if not raw:
        return {}
    try:
        return {str(k): int(v) for k, v in json.loads(raw).items()}
    except (ValueError, AttributeError):
        return {}


def properties_for(table: Table, plan: Evolution, key: tuple[str, ...]) -> dict[str, str]:
    """Properties that change with ``plan``: the attnum map and (after a key column's rename) the key."""
    props: dict[str, str] = {}
    attnums = dict(plan.attnums)
    if attnums and attnums != attnums_of(table):
        props[ATTNUMS] = json.dumps(attnums, sort_keys=True)
    current_key = table.properties.get(KEY)
    if current_key is not None and current_key != ",".join(key):
        props[KEY] = ",".join(key)
    return props


def pgtypes_of(properties: dict[str, str]) -> dict[str, str]:
    try:
        raw = json.loads(properties.get(PGTYPES) or "{}")
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def pgtypes_property(properties: dict[str, str], schema: TableSchema) -> dict[str, str]:
    """``{PGTYPES: ...}`` when the source types of ``schema``'s columns add to or change the recorded ones
    (columns of unknown source type, e.g. read back from the lake, change nothing)."""
    current = pgtypes_of(properties)
    wanted = {**current, **{c.name: c.source_type for c in schema.columns if c.source_type}}
    return {PGTYPES: json.dumps(wanted, sort_keys=True)} if wanted != current else {}


def update_schema(txn: Transaction, plan: Evolution) -> None:
    """Apply ``plan``'s renames, additions and promotions inside ``txn``."""
    if not (plan.rename or plan.add or plan.widen):
        return
    if plan.rename:  # first: a column added under a name a renamed one had is new (pyiceberg checks names
        with txn.update_schema() as update:  # against the schema an update starts from)
            for old, new in plan.rename:
                update.rename_column(old, new)
    if not (plan.add or plan.widen):
        return
    renamed_to = dict(plan.rename)
    with txn.update_schema() as update:
        for name, typ in plan.add:
            update.add_column(name, typ)
        for name, typ in plan.widen:
            update.update_column(renamed_to.get(name, name), field_type=typ)


def with_values(rows: pa.Table, values: dict[str, pa.Array]) -> pa.Table:
    """``rows`` with every named column set to its one value (added when missing)."""
    for name, value in values.items():
        column = pa.repeat(value[0], rows.num_rows) if rows.num_rows else value.slice(0, 0)
        if name in rows.column_names:
            rows = rows.set_column(rows.schema.get_field_index(name), name, column)
        else:
            rows = rows.append_column(name, column)
    return rows


def renamed(rows: pa.Table, renames: dict[str, str]) -> pa.Table:
    return rows.rename_columns([renames.get(n, n) for n in rows.column_names]) if renames else rows


def state_files(state: Table) -> list:
    return list(state.scan().plan_files()) if state.current_snapshot() is not None else []


def state_rows(state: Table, tasks: list, renames: dict[str, str]) -> Iterator[pa.Table]:
    """The state table's rows file by file, columns under their names after ``renames``."""
    scan = ArrowScan(state.metadata, state.io, state.schema(), AlwaysTrue())
    for task in tasks:
        yield renamed(scan.to_table([task]), renames)


def backfill_updates(rows: pa.Table, backfill: Backfill, first_seq: int) -> pa.Table:
    """State rows -> change-log updates carrying the new values at ``(lsn, first_seq ...)``."""
    n = rows.num_rows
    rows = with_values(
        rows.drop_columns([c for c in (LSN, COMMIT_TS) if c in rows.column_names]), backfill.values
    )
    return (
        rows.append_column(OP, repeat("u", n, pa.string()))
        .append_column(LSN, repeat(backfill.lsn, n, pa.int64()))
        .append_column(SEQ, pa.array(np.arange(first_seq, first_seq + n, dtype=np.int64)))
        .append_column(COMMIT_TS, repeat(backfill.commit_ts, n, pa.timestamp("us", tz="UTC")))
    )


def backfilled_state(rows: pa.Table, backfill: Backfill, schema: pa.Schema) -> pa.Table:
    """State rows (conformed to ``schema``) with the new values, marked as changed by the backfill; rows
    already changed at or after ``lsn`` stay as they are."""
    rows = merge.conform(rows, schema)
    later = rows.filter(pc.greater_equal(rows[LSN], backfill.lsn))
    rows = before(rows, backfill.lsn)
    n = rows.num_rows
    rows = with_values(rows, backfill.values)
    for name, value in (
        (LSN, repeat(backfill.lsn, n, pa.int64())),
        (COMMIT_TS, repeat(backfill.commit_ts, n, pa.timestamp("us", tz="UTC"))),
    ):
        rows = rows.set_column(rows.schema.get_field_index(name), name, value)
    return (
        pa.concat_tables([merge.conform(rows, schema), later])
        if later.num_rows
        else merge.conform(rows, schema)
    )


def before(rows: pa.Table, lsn: int) -> pa.Table:
    return rows.filter(pc.less(rows[LSN], lsn))


def backfill_changelog(txn: Transaction, changelog: Table, state: Table, backfill: Backfill) -> None:
    """Inside the change log's ``txn`` (whose schema has the new columns): an update of every current row
    carrying the new values at ``(lsn, -n) .. (lsn, -1)``, then ``backfill.same``; stamped with the last."""
    schema = txn.table_metadata.schema().as_arrow()
    after = schema_from(txn.table_metadata.schema(), txn.table_metadata.properties, TableRef("", ""))
    state_renames = dict(plan_evolution(state.schema(), after, STATE, attnums_of(state)).rename)
    tasks = state_files(state)
    seq = -sum(t.file.record_count for t in tasks)
    same = backfill.same if backfill.same is not None and backfill.same.num_rows else None
    last = Position(backfill.lsn, -1)
    if same is not None:
        last = Position(same[LSN][-1].as_py(), same[SEQ][-1].as_py())
        same = merge.conform(with_values(renamed(same, renames_in(txn, changelog)), backfill.values), schema)
    stream = DataFileStream(txn, changelog.io)
    try:
        with append_producer(txn, stamp(last)) as producer:
            for rows in state_rows(state, tasks, state_renames):
                rows = before(rows, backfill.lsn)
                updates = merge.conform(backfill_updates(rows, backfill, seq), schema)
                guard_statistics(txn, updates)
                stream.write(updates)
                seq += rows.num_rows
            if same is not None:
                guard_statistics(txn, same)
                stream.write(same)
            for data_file in stream.close():
                producer.append_data_file(data_file)
    except BaseException:
        stream.abort()
        raise


def backfill_state(txn: Transaction, state: Table, backfill: Backfill, renames: dict[str, str]) -> None:
    """Inside the state table's ``txn``: every file rewritten with the new values, stamped just before the
    transaction at ``lsn``."""
    schema = txn.table_metadata.schema().as_arrow()
    tasks = state_files(state)
    with txn.update_snapshot(snapshot_properties=stamp(Position(backfill.lsn, -1))).overwrite() as producer:
        for task, rows in zip(tasks, state_rows(state, tasks, renames), strict=True):
            producer.delete_data_file(task.file)
            write_files(txn, state, backfilled_state(rows, backfill, schema), producer)


def renames_in(txn: Transaction, table: Table) -> dict[str, str]:
    """Old -> new names of ``table``'s columns renamed in ``txn``, by field id."""
    new = txn.table_metadata.schema()
    out = {}
    for field in table.schema().fields:
        try:
            now = new.find_field(field.field_id).name
        except ValueError:
            continue
        if now != field.name:
            out[field.name] = now
    return out


def schema_from(schema: Schema, properties: dict[str, str], ref: TableRef) -> TableSchema:
    """The source schema a change-log table holds (columns, key, source identities)."""
    key = tuple(k for k in properties.get(KEY, "").split(",") if k)
    raw = properties.get(ATTNUMS)
    attnums = {str(k): int(v) for k, v in json.loads(raw).items()} if raw else {}
    fields = [f for f in schema.as_arrow() if f.name not in (OP, LSN, SEQ, COMMIT_TS)]
    columns = tuple(Column(f.name, f.type, "", f.name in key, source_id=attnums.get(f.name)) for f in fields)
    return TableSchema(ref, columns, key)


def schema_of(changelog: Table, ref: TableRef) -> TableSchema:
    return schema_from(changelog.schema(), changelog.properties, ref)

"""A flush's row segments of one table -> the rows its change-log commit appends.

The lake's schema follows each segment's (see :mod:`lakegate.ingest.ddl`), unchanged TOAST values are filled from
the row's previous state (this flush's earlier rows first, then the lake). A schema change that writes a value
into the existing rows commits the rows of earlier transactions first and takes the rows of its own transaction
written before it along, so that the value lands exactly where the column appeared. Such a change inside a
transaction written in parts (see connectors.iceberg.staging) copies the table again instead: the backfill commits,
and the transaction must not become visible before its end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import pyarrow as pa
import pyarrow.compute as pc

from lakegate.connectors.changes import COMMIT_TS, LSN, ChangeBatch, Position, TableRef
from lakegate.connectors.errors import CommitConflict, LakeError, Resnapshot, SchemaChangeError
from lakegate.connectors.iceberg import evolution, flushcatalog, merge
from lakegate.connectors.iceberg.evolution import STORAGE, Backfill
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.connectors.postgres import introspect
from lakegate.connectors.postgres.rowbuffer import Segment
from lakegate.connectors.postgres.types import Codec, ConversionError
from lakegate.ingest.ddl import new_column_values
from lakegate.ingest.toast import fill_unchanged

log = logging.getLogger("lakegate.ingest")


class ColumnFacts(Protocol):
    """What a schema change asks the source (``PostgresSource``, or a writer process's own connection)."""

    def column_facts(self, ref: TableRef) -> tuple[list[introspect.Attribute], str]: ...


def write(
    table: LakeTable,
    segments: list[Segment],
    source: ColumnFacts,
    appended: Callable[[int], None],
    position: Position | None,
    open_lsn: int | None = None,
) -> Exception | None:
    """One table's part of a flush: its changes appended to the lake (staged while ``open_lsn``, the transaction
    they end inside of, is open), ``position`` stamped; ``appended(n)`` is told of the rows written. Returns the
    error that stops this table (a schema change the lake cannot follow, a value it cannot hold: the caller
    stops the table at the first segment's transaction), None when written."""
    try:
        data = changes(table, segments, source, appended, open_lsn)
    except SchemaChangeError as exc:
        return exc
    except ConversionError as exc:
        ref = table.schema.table
        return ConversionError(
            f"{exc}. The change stays in the slot, so correcting the row is not enough: correct it in "
            f"PostgreSQL, stop the worker, run 'lakegate maintain --resnapshot {ref}' and start it "
            "again (the table is copied afresh, its older changes skipped; the other tables go on)"
        )
    # its open transaction: staged; a compaction due waits for the caller (Worker._compact_due)
    table.append(data, position, open_lsn=open_lsn, compact=False)
    appended(data.num_rows)
    return None


def compact_due(catalog: object, due: list[LakeTable]) -> None:
    """The state-table compactions a flush's commits left due (a few tables per flush; see statesync.Follower),
    in one catalog transaction of their own, once the flush is visible. A compaction that fails is tried again
    later; one whose commit the catalog refuses (another writer) leaves the table's key index to be read again,
    and the next flush meets the same conflict if there is one."""
    if not due:
        return
    try:
        with flushcatalog.flush(catalog):  # type: ignore[arg-type]
            for table in due:
                table.compact_due()
    except (LakeError, CommitConflict) as exc:
        for table in due:
            table.forget_index()
        log.warning("the compactions after a flush were not committed (%s); they are tried again later", exc)


def changes(
    table: LakeTable,
    segments: list[Segment],
    source: ColumnFacts,
    committed: Callable[[int], None],
    open_lsn: int | None = None,
) -> pa.Table:
    """The rows to append for ``segments``; ``committed(n)`` is told of rows committed on the way. ``open_lsn``:
    the transaction the segments end inside of, if any (it is written in parts)."""
    parts: list[pa.Table] = []
    for segment in segments:
        batch = segment.materialise()
        _follow_schema(table, batch, segment.codecs, parts, source, committed, open_lsn)
        parts.append(fill_unchanged(batch, _lookup(table, parts)))
    return conformed(table, parts)


def conformed(table: LakeTable, parts: list[pa.Table]) -> pa.Table:
    schema = merge.arrow_schema(table.changelog.schema())  # type: ignore[union-attr]
    if not parts:
        return merge.empty_table(schema)
    return pa.concat_tables([merge.conform(p, schema) for p in parts])


def _follow_schema(
    table: LakeTable,
    batch: ChangeBatch,
    codecs: dict[str, Codec],
    parts: list[pa.Table],
    source: ColumnFacts,
    committed: Callable[[int], None],
    open_lsn: int | None,
) -> None:
    plan = table.plan(batch.schema)  # cheap when nothing changed
    if plan.new_columns and table.has_state:
        ref = batch.schema.table
        attributes, storage = source.column_facts(ref)
        values = new_column_values(ref, plan, batch.schema, codecs, attributes, storage, table.storage())
        if values:
            _backfill(table, batch, values, parts, storage, committed, open_lsn)
            return
    table.evolve(batch.schema)
    if plan.rename:  # rows of this flush written before the rename
        parts[:] = [evolution.renamed(p, dict(plan.rename)) for p in parts]


def _backfill(
    table: LakeTable,
    batch: ChangeBatch,
    values: dict[str, pa.Array],
    parts: list[pa.Table],
    storage: str,
    committed: Callable[[int], None],
    open_lsn: int | None,
) -> None:
    """Write the new columns' values into every existing row, just before the transaction that shows them."""
    ref = batch.schema.table
    lsn = batch.data[LSN][0].as_py()
    checkpoint = table.checkpoint()
    if checkpoint is not None and checkpoint.lsn >= lsn:
        raise Resnapshot(ref, "a column was added in the middle of a transaction the lake already holds part of")
    if lsn in (open_lsn, table.staged_lsn):
        raise Resnapshot(
            ref,
            "a column with a default was added inside a transaction larger than the worker's batch "
            "(max_batch_rows / max_batch_bytes), which is written in parts and may become visible only whole",
        )
    pending = conformed(table, parts)
    earlier = pending.filter(pc.less(pending[LSN], lsn))
    if earlier.num_rows or table.staged_lsn is not None:  # an earlier transaction's staged parts go too
        table.append(earlier)
        committed(earlier.num_rows)
    same = pending.filter(pc.equal(pending[LSN], lsn))
    commit_ts = batch.data[COMMIT_TS].cast(pa.int64())[0].as_py()
    table.evolve(batch.schema, Backfill(values, lsn, commit_ts, same if same.num_rows else None))
    committed(same.num_rows)
    table.set_properties({STORAGE: storage})
    parts.clear()
    log.info("%s: wrote the value of %s into the rows that existed before", ref, ", ".join(sorted(values)))


def _lookup(table: LakeTable, parts: list[pa.Table]) -> Callable[[pa.Table], pa.Table]:
    """Previous rows for TOAST filling: the lake, overlaid with this flush's rows not yet committed."""
    if not parts:
        return table.lookup
    pending = list(parts)

    def lookup(keys: pa.Table) -> pa.Table:
        return merge.apply(table.lookup(keys), conformed(table, pending), table.schema.key)

    return lookup

"""Bringing a state table up to its change log with position deletes: on start, after a crash between the two
commits of a flush, and once for a lake written by the first version (state copied on write by folds).

:func:`catch_up` reads the change-log tail after the state table's ``lakegate.lsn`` stamp (the change log's file
statistics prune it to the files that hold it) and commits it to the state table as one row delta
(:class:`~lakegate.connectors.iceberg.state.StateTable`), stamped with the change log's checkpoint. The cost is
that of the tail, never of the table. A state table caught up this way is marked ``lakegate.state-format =
position-deletes``: plain Iceberg readers see it exact as of its stamp.
"""

from __future__ import annotations

import logging
import time

import pyarrow as pa

from lakegate.connectors.changes import Position
from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg.commits import stamp
from lakegate.connectors.iceberg.rowdelta import transaction
from lakegate.connectors.iceberg.state import StateTable
from lakegate.connectors.iceberg.writer import LakeTable

log = logging.getLogger(__name__)

FORMAT_PROPERTY = "lakegate.state-format"
POSITION_DELETES = "position-deletes"


def state_of(table: LakeTable) -> StateTable:
    """The :class:`StateTable` of a lake table with a key (its index is read from the lake when first used)."""
    if table.state is None:
        raise LakeError(f"{table.schema.table} has no state table (it has no key)")
    return StateTable(table.state, table.schema.key)


def mark(state: StateTable) -> None:
    """Record that ``state`` is kept with position deletes (readers need no change log to read it)."""
    if state.table.properties.get(FORMAT_PROPERTY) == POSITION_DELETES:
        return
    with transaction(state.table) as txn:
        txn.set_properties({FORMAT_PROPERTY: POSITION_DELETES})


def follow(
    table: LakeTable, state: StateTable, changes: pa.Table, before: Position, position: Position
) -> int:
    """After the change log committed ``changes`` (covering ``before`` < change <= ``position``), commit them to the
    state table too. When the state table is not at ``before`` (a crash between the two commits of an earlier
    flush, a first-version lake), the whole tail is committed instead. Returns the number of changes applied."""
    if table.state_checkpoint() != before:
        return catch_up(table, state)
    state.commit(changes, stamp(position), stamp_always=True)
    return changes.num_rows


def catch_up(table: LakeTable, state: StateTable) -> int:
    """Commit the change-log tail the state table lacks; returns the number of changes applied."""
    table.refresh()
    target = table.checkpoint()
    done = table.state_checkpoint()
    if target is None or target <= done:
        mark(state)
        return 0
    started = time.monotonic()
    tail = table.tail(done)
    stats = state.commit(tail, stamp(target), stamp_always=True)  # the stamp moves even when no row changes
    mark(state)
    log.info(
        "%s: state table caught up with %d change(s) up to %s (%d row(s) added, %d deleted, %.2fs)",
        table.schema.table,
        tail.num_rows,
        target,
        stats.rows_added,
        stats.rows_deleted,
        time.monotonic() - started,
    )
    return tail.num_rows

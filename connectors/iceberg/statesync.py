"""Keeping a state table exact at every commit: each flush's changes follow the change log's commit as one row
delta (:class:`~lakegate.connectors.iceberg.state.StateTable`), and a state table that is behind its change log
catches up with the tail it lacks.

A state table falls behind only when a worker stopped between the two commits of a flush, or when the lake was
written by the first version (state copied on write by folds now and then). :func:`catch_up` reads the change-log
tail after the state table's ``lakegate.lsn`` stamp (the change log's file statistics prune it to the files that
hold it) and commits it as one row delta, stamped with the change log's checkpoint: the cost is that of the tail,
never of the table. A state table kept this way is marked ``lakegate.state-format = position-deletes``.

Conflicts: a state table has one writer, but ``lakegate maintain`` may catch up or compact while the worker runs.
Every state commit requires that nothing was committed since it was planned (``RowDelta(exclusive=True)``); one
that finds the table moved plans again from the stamp it finds, so a late commit can never move the stamp back.
"""

from __future__ import annotations

import logging
import time
import zlib
from typing import Any, Protocol

import pyarrow as pa
from pyiceberg.table import Table

from lakegate.connectors.changes import Position, TableSchema
from lakegate.connectors.errors import CommitConflict, LakeError
from lakegate.connectors.iceberg import compaction, staging
from lakegate.connectors.iceberg.commits import stamp
from lakegate.connectors.iceberg.rowdelta import transaction
from lakegate.connectors.iceberg.state import StateTable

log = logging.getLogger(__name__)

FORMAT_PROPERTY = "lakegate.state-format"
POSITION_DELETES = "position-deletes"
ATTEMPTS = 3
COMPACT_BACKOFF = 64  #: state commits before a compaction that failed is tried again (doubling)


class LakeTable(Protocol):
    """What this module needs of a :class:`~lakegate.connectors.iceberg.writer.LakeTable` (which calls this
    module, so it cannot be imported here)."""

    state: Table | None
    schema: TableSchema

    def checkpoint(self) -> Position | None: ...

    def state_checkpoint(self) -> Position: ...

    def refresh(self) -> None: ...

    def tail(self, after: Position, row_filter: Any = None) -> pa.Table: ...


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


def follow(table: LakeTable, state: StateTable, changes: pa.Table, before: Position, position: Position) -> int:
    """After the change log committed ``changes`` (covering ``before`` < change <= ``position``), commit them to the
    state table too. When the state table is not at ``before`` (a crash between the two commits of an earlier
    flush, a first-version lake, a concurrent catch-up), the tail it lacks is committed instead. Returns the
    number of changes applied.

    Files staged for the earlier parts of a transaction ``changes`` ends are committed with them; when that
    commit conflicts they are given up, and the tail (the whole transaction) is read back from the change log."""
    for attempt in range(1, ATTEMPTS + 1):
        if table.state_checkpoint() != before:
            return catch_up(table, state)
        staged = state.staged is not None
        try:
            state.commit(changes, stamp(position), stamp_always=True, retry=False)
            return changes.num_rows
        except CommitConflict:
            if attempt == ATTEMPTS:
                raise
            table.refresh()  # someone else committed: plan again from the stamp the table has now
            if staged:
                log.warning(
                    "%s: another writer committed to the state table while a transaction was written to it in "
                    "parts; reading the transaction back from the change log",
                    table.schema.table,
                )
                return catch_up(table, state)
    raise AssertionError("unreachable")


def catch_up(table: LakeTable, state: StateTable) -> int:
    """Commit the change-log tail the state table lacks; returns the number of changes applied. Files staged
    for a transaction are given up first: the tail holds whatever of it the change log committed."""
    staging.delete_files(state.table, state.discard_staged())
    for attempt in range(1, ATTEMPTS + 1):
        table.refresh()
        target = table.checkpoint()
        done = table.state_checkpoint()
        if target is None or target <= done:
            mark(state)
            return 0
        started = time.monotonic()
        tail = table.tail(done)
        try:  # the stamp moves even when no row changes
            stats = state.commit(tail, stamp(target), stamp_always=True, retry=False)
        except CommitConflict:
            if attempt == ATTEMPTS:
                raise
            continue
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
    raise AssertionError("unreachable")


class Follower:
    """A writer's state table: the :class:`StateTable` with its key index (built from the lake on first use, then
    kept by the commits) and when to compact it. Used on the writer's thread only."""

    def __init__(self, limits: compaction.Thresholds | None = None) -> None:
        self._state: StateTable | None = None
        self.limits = limits or compaction.Thresholds()
        self.follows = 0
        self.compact_at = self.limits.every  #: the follow count at which the state table is compacted next
        self.backoff = 0  #: follows to wait after a failed compaction (doubles while it fails)
        self.due: Position | None = None  #: a compaction ``follow(compact_now=False)`` left for :meth:`compact_due`

    def state(self, table: LakeTable) -> StateTable:
        if self._state is None or self._state.table is not table.state:  # a state table loaded again
            self._state = state_of(table)
        return self._state

    def abandon_staged(self) -> None:
        """Give up the state table's staged files, if any (see :meth:`LakeTable.abandon_staged`)."""
        if self._state is not None:
            self._state.discard_staged()

    def follow(
        self,
        table: LakeTable,
        changes: pa.Table,
        before: Position,
        position: Position,
        *,
        compact_now: bool = True,
    ) -> None:
        """:func:`follow`, and every ``limits.every`` follows a compaction (the first one after ``every`` to
        ``2 * every - 1`` follows, depending on the table's name: a worker with many tables compacts a few of them
        per flush); without ``compact_now`` the compaction is left due, for :meth:`compact_due`."""
        state = self.state(table)
        every = self.limits.every
        if self.follows == 0 and every > 0:  # tables created together must not all compact at one flush: spread
            self.compact_at += zlib.crc32(state.name.encode()) % every
        follow(table, state, changes, before, position)
        self.follows += 1
        if every > 0 and self.follows >= self.compact_at:
            if compact_now:
                self._compact(state, position)
            else:
                self.due = position

    def compact_due(self, table: LakeTable) -> bool:
        """Run the compaction :meth:`follow` left due, if any, on the state table it was due for; True when one
        ran (failed or not: a failure is logged and tried again later, as in :meth:`follow`)."""
        position, self.due = self.due, None
        state = self._state
        if position is None or state is None or state.table is not table.state:
            return False  # the state table was loaded again since: the next follow decides anew
        self._compact(state, position)
        return True

    def invalidate(self) -> None:
        """The key index no longer describes the table (a compaction's commit did not land): read it again."""
        if self._state is not None:
            self._state.invalidate()

    def _compact(self, state: StateTable, position: Position) -> None:
        """A failure is logged and tried again later, waiting twice as long each time: the flush itself has
        committed, and nothing is lost meanwhile but read speed."""
        try:
            result = compaction.compact(state, stamp(position), self.limits, step=True)
            # work left over (over the step's bytes) goes on at the next commit
            self.compact_at, self.backoff = self.follows + (1 if result.more else self.limits.every), 0
        except Exception as exc:  # whatever reading or writing files raises; the index is read again
            self.backoff = min(max(COMPACT_BACKOFF, 2 * self.backoff), 64 * COMPACT_BACKOFF)
            self.compact_at = self.follows + self.backoff
            state.invalidate()
            log.error(
                "%s: compacting the state table failed (%s); trying again in %d commits", state.name, exc, self.backoff
            )

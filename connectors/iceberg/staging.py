"""A source transaction written in parts becomes visible with its last part, for every reader (issue 11.7).

The worker bounds its memory by flushing a huge transaction before its commit arrives (``max_batch_rows`` /
``max_batch_bytes``). Each such part is *staged*: its change-log data files, and the state table's data and
position-delete files, are written to storage but not committed, and the lake table remembers them (their
:class:`DataFile` entries: memory grows with the number of files, not of rows). The part that completes the
transaction commits them all, with its own rows, in one change-log snapshot and one state-table snapshot, as for
any transaction, stamped with the transaction's last position. Until then no snapshot references the staged files:
pyiceberg, DuckDB, Spark, polars and the gateway read the tables as they were before the transaction.

The key index covers staged rows (:meth:`StateTable.stage <lakegate.connectors.iceberg.state.StateTable.stage>`):
a later part that updates or deletes a row an earlier part inserted finds it in a staged file and writes a
position delete for it, committed in the same snapshot as that file. The Iceberg spec applies a position delete
to data files of the same or an older data sequence number, and pyiceberg, DuckDB and polars do (checked when
this was written); TOAST carry-over reads the previous value from the staged file the same way.

A crash before the last part: the staged files are orphans (no snapshot references them), the stream resumes from
the confirmed position, which lies before the transaction, and the transaction is written again from its start:
nothing lost, nothing twice. Orphan removal (``orphan_age``) deletes the orphans later; it never deletes files
this process has staged (:func:`live_paths`), whatever their age. Another writer that commits to a state table
while a transaction is staged on it (``lakegate maintain --compact`` by hand) makes the staged files unusable:
the last part then brings the state table up to its change log the slow way
(:func:`lakegate.connectors.iceberg.statesync.catch_up`: the whole transaction read back at once), or, when that
other commit is noticed before the last part, the stream restarts and the transaction is written again.

A schema change inside a staged transaction: adding, renaming, widening a column changes only the table's schema
(no snapshot), and the staged files keep their field ids, so they are committed as they are, like any file
written before a schema change. A column added with a default that must be written into the existing rows (a
backfill, which commits) cannot wait for the transaction's end: that table is copied again under a fresh snapshot
(:class:`~lakegate.connectors.errors.Resnapshot`), which is exact.

Why not an Iceberg branch per open transaction (commit each part to a branch, fast-forward ``main`` at the end):
every reader of ``main`` would be right too, but the branch's snapshots reference their files until the branch is
removed, so a crash leaves a branch that the next start must find and drop; the fast-forward fails whenever
``main`` moved meanwhile (upkeep commits to it) and pyiceberg 0.12 has no cherry-pick to rebase the branch; and the
checkpoint stamps, the key index and compaction would all have to learn about snapshots off ``main``. Staging
needs none of that: uncommitted files are invisible by construction, and orphan removal already exists.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table

from lakegate.connectors.changes import LSN, SEQ, Position
from lakegate.connectors.iceberg.commits import data_files
from lakegate.connectors.iceberg.rowdelta import transaction

_LIVE: weakref.WeakSet[Files] = weakref.WeakSet()
_GUARD = threading.Lock()


@dataclass(eq=False)
class Files:
    """Files written for a transaction that is not committed yet (registered while it lives)."""

    data: list[DataFile] = field(default_factory=list)
    deletes: list[DataFile] = field(default_factory=list)

    def __post_init__(self) -> None:
        with _GUARD:
            _LIVE.add(self)

    def paths(self) -> list[str]:
        return [f.file_path for f in (*self.data, *self.deletes)]

    def release(self) -> list[str]:
        """Forget the files (committed, or given up); returns their paths."""
        with _GUARD:
            _LIVE.discard(self)
        paths = self.paths()
        self.data, self.deletes = [], []
        return paths


@dataclass(eq=False)
class Staged(Files):
    """The change-log part of a transaction staged on one lake table."""

    lsn: int = 0  #: the transaction's commit LSN
    position: Position = Position(0)  #: its last change staged on this table
    rows: int = 0


@dataclass(eq=False)
class StagedState(Files):
    """The state-table part: data files of new rows, delete files for the rows they replace, the committed data
    files those deletes point into, and whether the transaction truncated the table."""

    referenced: dict[str, DataFile] = field(default_factory=dict)
    truncated: bool = False
    rows_added: int = 0
    rows_deleted: int = 0  #: positions deleted


def live_paths() -> set[str]:
    """Paths of every file staged in this process and not yet committed or given up (orphan removal spares
    them)."""
    with _GUARD:
        return {path for files in list(_LIVE) for path in files.paths()}


def split(data: pa.Table, open_lsn: int | None) -> tuple[pa.Table, pa.Table]:
    """Changes -> (those of complete transactions, those of the transaction still open at ``open_lsn``)."""
    if open_lsn is None or data.num_rows == 0:
        return data, data.slice(0, 0)
    is_open = pc.equal(data[LSN], open_lsn)
    return data.filter(pc.invert(is_open)), data.filter(is_open)


def last_position(data: pa.Table) -> Position | None:
    """The position of the last change of ``data`` (changes are in stream order), None when it is empty."""
    if data.num_rows == 0:
        return None
    return Position(data[LSN][-1].as_py(), data[SEQ][-1].as_py())


def write(table: Table, rows: pa.Table) -> list[DataFile]:
    """Write ``rows`` as data files of ``table`` without committing them (in row order)."""
    txn = transaction(table)  # never committed: it only describes the table the files are written for
    files = data_files(txn, table, rows)
    for data_file in files:
        data_file.spec_id = txn.table_metadata.default_spec_id
    return files


def delete_files(table: Table, paths: Iterable[str]) -> None:
    """Delete staged files that no commit was ever tried with (nothing can reference them). Never raises: a file
    left behind is an orphan that upkeep removes."""
    for path in paths:
        try:
            table.io.delete(path)
        except Exception:  # noqa: BLE001, S112  (best effort, see above)
            continue

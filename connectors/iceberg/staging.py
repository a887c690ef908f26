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
this process has staged (:func:`live_paths`), whatever their age, until the worker that staged them stops or
starts again after a fault: it then gives them up (they are orphans like a crash's; its next attempt writes the
transaction again).

Other processes (``lakegate maintain``) learn what is staged from a *marker* beside the table's metadata
(``metadata/lakegate-staged-<uuid>.json``, the staged files' paths), written again at each part and removed when
the files are committed or given up (:func:`announce`, :func:`announced`). Their orphan removal spares the files
a marker younger than ``orphan_age`` lists, however old the files themselves (a transaction staged for longer than
the safety age), and ``lakegate maintain --compact`` leaves such a state table alone: a commit by another writer
while a transaction is staged on a state table makes the staged files unusable, and the last part then brings the
state table up to its change log the slow way (:func:`lakegate.connectors.iceberg.statesync.catch_up`: the whole
transaction read back at once), or, when that other commit is noticed before the last part, the stream restarts
and the transaction is written again. A crash leaves its marker behind; once older than ``orphan_age`` it no
longer protects anything and orphan removal deletes it with the files it listed.

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

import json
import os
import threading
import time
import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.fs import FileSelector, FileType
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table

from lakegate.connectors.changes import LSN, SEQ, Position
from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg.commits import data_files
from lakegate.connectors.iceberg.rowdelta import transaction

_LIVE: weakref.WeakSet[Files] = weakref.WeakSet()
_GUARD = threading.Lock()
MARKER = "lakegate-staged-"  #: name prefix of the markers, in the table's metadata folder


@dataclass(eq=False)
class Files:
    """Files written for a transaction that is not committed yet (registered while it lives)."""

    data: list[DataFile] = field(default_factory=list)
    deletes: list[DataFile] = field(default_factory=list)
    #: the marker that tells other processes about these files (see :func:`announce`), and its FileIO
    marker: tuple[str, FileIO] | None = field(default=None, repr=False)

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
        if self.marker is not None:
            path, io = self.marker
            self.marker = None
            delete_files_of(io, [path])
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
    delete_files_of(table.io, paths)


def delete_files_of(io: FileIO, paths: Iterable[str]) -> None:
    for path in paths:
        try:
            io.delete(path)
        except Exception:  # noqa: BLE001, S112  (best effort, see delete_files)
            continue


def announce(table: Table, files: Files) -> None:
    """Write (again) the marker of ``files``, staged for ``table``: their paths, for other processes."""
    if files.marker is None:
        name = f"{MARKER}{uuid.uuid4()}.json"
        files.marker = (f"{table.metadata.location.rstrip('/')}/metadata/{name}", table.io)
    body = json.dumps({"pid": os.getpid(), "paths": files.paths()}).encode()
    try:
        with table.io.new_output(files.marker[0]).create(overwrite=True) as out:
            out.write(body)
    except OSError as exc:
        raise LakeError(f"cannot record the files staged for {'.'.join(table.name())}: {exc}") from exc


def announced(table: Table, within: timedelta) -> tuple[set[str], list[str]]:
    """(paths of the files some process stages for ``table``, as its markers written in the last ``within`` list
    them; the markers older than that). Raises LakeError when the markers cannot be listed or read."""
    io = table.io
    if not isinstance(io, PyArrowFileIO):  # fsspec: no listing we can rely on
        return set(), []
    scheme, netloc, root = io.parse_location(f"{table.metadata.location.rstrip('/')}/metadata", io.properties)
    fs = io.fs_by_scheme(scheme, netloc)
    cutoff = time.time() - within.total_seconds()
    paths: set[str] = set()
    stale: list[str] = []
    try:
        for info in fs.get_file_info(FileSelector(root, allow_not_found=True)):
            if info.type != FileType.File or not info.base_name.startswith(MARKER):
                continue
            if info.mtime is not None and info.mtime.timestamp() < cutoff:
                stale.append(info.path)
                continue
            paths.update(_listed(fs, info.path))
    except OSError as exc:
        raise LakeError(f"cannot read the staging markers of {'.'.join(table.name())}: {exc}") from exc
    return paths, stale


def _listed(fs: Any, path: str) -> list[str]:
    """The paths a marker lists; one being written again is read again (it is written whole, in one go)."""
    for attempt in range(3):
        try:
            with fs.open_input_stream(path) as stream:
                return list(json.loads(stream.read())["paths"])
        except FileNotFoundError:
            return []  # committed or given up meanwhile
        except (ValueError, KeyError, TypeError) as exc:
            if attempt == 2:
                raise OSError(f"staging marker {path} is unreadable: {exc}") from exc
            time.sleep(0.05)
    return []

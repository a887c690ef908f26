"""A state table kept exact at every commit: new and changed rows as data files, the rows they replace or delete
as position deletes, found through the key index (:mod:`lakegate.connectors.iceberg.keyindex`).

:meth:`StateTable.commit` takes a batch of changes (change-log columns, any order), keeps the latest change per key
(after the last truncate), and commits one snapshot (:mod:`lakegate.connectors.iceberg.rowdelta`) that adds the
live rows and deletes the positions of the rows they replace; a truncate in the batch removes every file the
table held instead. The index is updated only after the commit landed. It describes one snapshot of the table: a
commit that finds the table moved in a way the index cannot follow (data files added or removed by someone
else; pyiceberg's validation says so) rebuilds the index from the lake and tries again once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table, Transaction

from lakegate.connectors.changes import OP
from lakegate.connectors.errors import CommitConflict, LakeError
from lakegate.connectors.iceberg import deletes, filereads, keyindex, merge, rowcache, staging
from lakegate.connectors.iceberg.commits import guard_statistics
from lakegate.connectors.iceberg.datafiles import DataFileStream
from lakegate.connectors.iceberg.keyindex import ABSENT, KeyIndex
from lakegate.connectors.iceberg.references import delete_unreferenced
from lakegate.connectors.iceberg.rowdelta import RowDelta, transaction

log = logging.getLogger(__name__)


@dataclass
class CommitStats:
    rows_added: int = 0
    rows_deleted: int = 0  #: positions deleted (replaced or deleted rows)
    truncated: bool = False


@dataclass
class _Plan:
    live: pa.Table  #: rows to add (state columns)
    live_keys: np.ndarray
    gone_keys: np.ndarray  #: keys deleted by the batch
    deletes: pa.Table  #: (file_path, pos) of the rows replaced or deleted
    referenced: list[DataFile]
    truncated: bool


class StateTable:
    """One state table and the index of where its keys live."""

    def __init__(self, table: Table, key: Sequence[str]) -> None:
        if not key:
            raise ValueError("a state table needs a key")
        self.table = table
        schema = table.schema()
        #: the key by field id: a renamed key column stays the key (changes name it as the table does now)
        self._key_ids = tuple(schema.find_field(name).field_id for name in key)
        self._index: KeyIndex | None = None
        self._at: int | None = None  #: the snapshot the index describes
        self._files: list[DataFile] = []  #: file number -> data file
        self._numbers: dict[str, int] = {}
        self.rebuild_seconds = 0.0
        self._arrow: tuple[tuple[object, int], pa.Schema] | None = None
        #: files of a transaction written in parts, not committed yet (see connectors.iceberg.staging)
        self.staged: staging.StagedState | None = None

    @property
    def key(self) -> tuple[str, ...]:
        """The key columns' current names."""
        schema = self.table.schema()
        return tuple(schema.find_field(field_id).name for field_id in self._key_ids)

    # ------------------------------------------------------------------------------------------- the index

    @property
    def index(self) -> KeyIndex:
        """The index, read again from the lake when the table moved in a way this object did not make (a
        re-copy, a backfill, a writer elsewhere: even through this very Table object)."""
        if self._index is not None and self._at != self._current_id():
            if self.staged is not None:  # the index holds staged rows the lake does not: they cannot be kept
                self.discard_staged()
                raise CommitConflict(
                    f"{self.name} was committed to by another writer (snapshot {self._current_id()}) while a "
                    "transaction was being written in parts; the transaction is written again from its start"
                )
            log.info(
                "%s: the table moved past the key index (snapshot %s); rebuilding it", self.name, self._at
            )
            self._index = None
        if self._index is None:
            self.rebuild()
        assert self._index is not None
        return self._index

    def _current_id(self) -> int | None:
        snapshot = self.table.current_snapshot()
        return snapshot.snapshot_id if snapshot is not None else None

    def invalidate(self) -> None:
        """Forget the index (the table moved in a way it cannot follow): it is read again when next used."""
        self._index = None

    def discard_staged(self) -> list[str]:
        """Give up the staged files (they become orphans) and the index that points into them; their paths."""
        if self.staged is None:
            return []
        paths = self.staged.release()
        self.staged = None
        self._index = None
        return paths

    def adopt(self) -> None:
        """The snapshot just committed by this object's owner (a compaction) is the one the index now follows."""
        self._at = self._current_id()

    def _number(self, data_file: DataFile) -> int:
        number = self._numbers.get(data_file.file_path)
        if number is None:
            number = self._numbers[data_file.file_path] = len(self._files)
            self._files.append(data_file)
        return number

    @property
    def name(self) -> str:
        return ".".join(self.table.name())

    def _key_schema(self) -> pa.Schema:
        arrow = self._arrow_schema()
        return pa.schema([arrow.field(k) for k in self.key])

    def _arrow_schema(self) -> pa.Schema:
        """The table's current schema in Arrow (pyiceberg converts it anew at each call: 0.1 ms, twice a commit).
        A schema id names one schema for good within a table; a table created again has another uuid."""
        metadata = self.table.metadata
        key = (metadata.table_uuid, metadata.current_schema_id)
        if self._arrow is None or self._arrow[0] != key:
            self._arrow = (key, self.table.schema().as_arrow())
        return self._arrow[1]

    def _key_dtype(self) -> np.dtype:
        exact = keyindex.exact([f.type for f in self._key_schema()])
        return np.dtype(np.int64) if exact else np.dtype("S16")

    def _encode(self, rows: pa.Table) -> np.ndarray:
        """Keys of ``rows`` as the index holds them (cast to the table's key types first: the same key read from
        an old file or from a change encodes the same)."""
        return keyindex.encode(merge._key_columns(merge.conform(rows, self._key_schema()), self.key))

    def rebuild(self) -> None:
        """Read the index from the lake: key columns of every live data file, less the rows deletes hide."""
        started = time.monotonic()
        self.table.refresh()
        self._files, self._numbers = [], {}
        keys: list[np.ndarray] = [np.empty(0, self._key_dtype())]
        locations: list[np.ndarray] = [np.empty(0, np.uint64)]
        deleted_by: dict[str, pa.Table] = {}
        if self.table.current_snapshot() is not None:
            for task in self.table.scan().plan_files():
                positions = np.arange(task.file.record_count, dtype=np.int64)
                hidden = [self._deleted(f, task.file.file_path, deleted_by) for f in task.delete_files]
                if hidden:
                    positions = positions[~np.isin(positions, np.concatenate(hidden))]
                if len(positions) == 0:
                    continue
                rows = filereads.read_keys(self.table, task.file, self.key).take(pa.array(positions))
                keys.append(self._encode(rows))
                locations.append(keyindex.pack(self._number(task.file), positions))
        try:
            self._index = KeyIndex.build(np.concatenate(keys), np.concatenate(locations))
            self._at = self._current_id()
        except keyindex.DuplicateKeys as exc:
            raise LakeError(
                f"state table {self.name} holds duplicate keys ({exc}); rebuild it with "
                f"'lakegate maintain --resnapshot {self.name}'"
            ) from exc
        self.rebuild_seconds = time.monotonic() - started
        log.info(
            "%s: key index rebuilt from the lake: %d row(s), %d bytes (%.2fs)",
            self.name,
            len(self._index),
            self._index.nbytes,
            self.rebuild_seconds,
        )

    def _deleted(self, delete_file: DataFile, data_path: str, cache: dict[str, pa.Table]) -> np.ndarray:
        if delete_file.file_path not in cache:
            cache[delete_file.file_path] = deletes.read(self.table.io, delete_file)
        return deletes.for_file(cache[delete_file.file_path], data_path).to_numpy()

    def lookup(self, keys: pa.Table) -> pa.Table:
        """Current rows (state columns) of ``keys`` (a table of key columns); absent keys are left out. Reads only
        the row groups that hold them (the TOAST carry-over asks for a few rows of a large table)."""
        schema = self._arrow_schema()
        found = self.index.get(self._encode(keys)) if keys.num_rows else np.empty(0, np.uint64)
        numbers, positions = keyindex.unpack(np.sort(found[found != ABSENT]))
        parts = [merge.empty_table(schema)]
        for number in np.unique(numbers):
            rows = filereads.read_rows(self.table, self._files[number], positions[numbers == number])
            parts.append(merge.conform(rows, schema))
        return pa.concat_tables(parts)

    # --------------------------------------------------------------------------------------------- commits

    def commit(
        self, changes: pa.Table, properties: dict[str, str], *, stamp_always: bool = False, retry: bool = True
    ) -> CommitStats:
        """Apply ``changes`` (change-log columns) in one snapshot stamped with ``properties``. A batch that changes
        no row commits nothing, unless ``stamp_always``: then an empty snapshot carries the stamp.

        The commit requires that nothing was committed to the table since it was planned. When something was, the
        index is read again from the lake and, with ``retry``, the same changes are planned and committed once
        more; without it :class:`CommitConflict` is raised (the caller decides what to commit on the new table).

        Files staged by :meth:`stage` (the earlier parts of the transaction ``changes`` ends) are committed in the
        same snapshot. A commit that conflicts gives them up and is not retried: the caller brings the table up to
        its change log instead (see connectors.iceberg.statesync)."""
        staged = self.staged
        if staged is None and len(self._files) >= keyindex.MAX_FILES - 1024:
            self._index = None  # file numbers run out: a rebuild numbers the live files afresh
        for attempt in (1, 2):
            plan = self._plan(changes)
            if (
                staged is None
                and plan.live.num_rows == 0
                and plan.deletes.num_rows == 0
                and not plan.truncated
                and not stamp_always
            ):
                return CommitStats()
            try:
                added = self._commit(plan, properties)
            except (CommitFailedException, ValidationException) as exc:
                self._index = None  # the table moved under the index: read it again when next used
                self.discard_staged()  # what it staged is unusable on the new table (deleted by _commit)
                if attempt == 2 or not retry or staged is not None:
                    raise CommitConflict(f"commit to {self.name} conflicted: {exc}") from exc
                log.info("%s: the table moved under the key index (%s); rebuilding it", self.name, exc)
                continue
            stats = CommitStats(plan.live.num_rows, plan.deletes.num_rows, plan.truncated)
            if staged is not None:
                self.staged = None
                paths = staged.release()
                if plan.truncated:  # the staged rows came before the truncate: not committed
                    staging.delete_files(self.table, paths)
                else:
                    stats = CommitStats(
                        stats.rows_added + staged.rows_added,
                        stats.rows_deleted + staged.rows_deleted,
                        staged.truncated,
                    )
            self._apply(plan, added)
            return stats
        raise AssertionError("unreachable")

    def stage(self, changes: pa.Table) -> None:
        """Write ``changes`` (a part of a source transaction whose end has not arrived) as files of this table
        without committing them: data files of its rows, a delete file for the rows they replace. The index points
        at the staged rows, so that a later part finds them; :meth:`commit` commits the staged files with the
        transaction's last part (see connectors.iceberg.staging)."""
        plan = self._plan(changes)
        if self.staged is None or plan.truncated:  # a truncate: what the transaction wrote before it is gone too
            if self.staged is not None:
                staging.delete_files(self.table, self.staged.release())
            self.staged = staging.StagedState(truncated=plan.truncated or False)
            if plan.truncated:
                self._index = keyindex.KeyIndex(self._key_dtype())
                self._files, self._numbers = [], {}
        staged = self.staged
        try:
            added = staging.write(self.table, plan.live) if plan.live.num_rows else []
            staged.data += added
            if plan.deletes.num_rows:
                staged.deletes.append(deletes.write(self.table.metadata, self.table.io, plan.deletes))
            staging.announce(self.table, staged)  # other processes' upkeep must leave the files alone
            mine = {f.file_path for f in staged.data}
            staged.referenced.update({f.file_path: f for f in plan.referenced if f.file_path not in mine})
            staged.rows_added += plan.live.num_rows
            staged.rows_deleted += plan.deletes.num_rows
            self.index.delete(plan.gone_keys)
            self.locate(plan.live_keys, added)
        except BaseException:
            staging.delete_files(self.table, self.discard_staged())  # never committed: nothing references them
            raise

    def _plan(self, changes: pa.Table) -> _Plan:
        schema = self._arrow_schema()
        keys = self._encode(changes) if _inserts_only(changes) else None
        truncated = False
        if keys is not None and len(np.unique(keys)) == len(keys):
            # each key inserted once (most batches of a busy table): nothing to order or to pick per key
            alive = np.ones(len(keys), bool)
            live = merge.conform(changes, schema)
        else:
            tail, truncated = merge.after_last_truncate(merge.sort_changes(changes))
            latest = merge.latest_per_key(tail, self.key)
            keys = self._encode(latest) if latest.num_rows else np.empty(0, self._key_dtype())
            alive = np.asarray(pc.not_equal(latest[OP], "d").to_numpy(zero_copy_only=False), bool)
            live = (
                merge.conform(latest.filter(pa.array(alive)), schema)
                if latest.num_rows
                else merge.empty_table(schema)
            )
        found = np.empty(0, np.uint64) if truncated else self.index.get(keys)
        found = found[found != ABSENT]
        numbers, positions = keyindex.unpack(found)
        referenced = [self._files[n] for n in np.unique(numbers)]
        paths = pa.array([self._files[n].file_path for n in numbers], pa.string())
        gone = pa.Table.from_arrays([paths, pa.array(positions, pa.int64())], schema=deletes.ARROW_SCHEMA)
        return _Plan(live, keys[alive], keys[~alive], gone, referenced, truncated)

    def _commit(self, plan: _Plan, properties: dict[str, str]) -> list[DataFile]:
        written: list[DataFile] = []
        stream: DataFileStream | None = None
        delete_file: DataFile | None = None
        staged = self.staged if not plan.truncated else None  # a truncate now: the staged rows came before it
        try:
            with transaction(self.table) as txn, RowDelta(txn, self.table.io, properties) as delta:
                if plan.truncated or (staged is not None and staged.truncated):
                    self._remove_everything(txn, delta)
                if staged is not None:
                    for staged_file in (*staged.data, *staged.deletes):
                        delta.add(staged_file)
                    delta.reference(staged.referenced.values())
                if plan.live.num_rows:
                    stream = stream_rows(txn, self.table, plan.live)
                    written = stream.files
                    for data_file in written:
                        data_file.spec_id = txn.table_metadata.default_spec_id  # validations read it
                        delta.add(data_file)
                if plan.deletes.num_rows:
                    delete_file = deletes.write(txn.table_metadata, self.table.io, plan.deletes)
                    delta.add(delete_file).reference(plan.referenced)
        except (CommitFailedException, ValidationException):
            # the commit did not land: what it wrote is garbage, removed only once the lake confirms it
            paths = stream.abandon() if stream is not None else []
            paths += self.staged.paths() if self.staged is not None else []
            delete_unreferenced(self.table, [*paths, delete_file.file_path if delete_file else ""])
            raise
        return written

    def _remove_everything(self, txn: Transaction, delta: RowDelta) -> None:
        snapshot = txn.table_metadata.current_snapshot()
        if snapshot is None:
            return
        removed: set[str] = set()
        for task in self.table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
            for content_file in (task.file, *task.delete_files):
                if content_file.file_path not in removed:
                    removed.add(content_file.file_path)
                    delta.remove(content_file)

    def _apply(self, plan: _Plan, added: list[DataFile]) -> None:
        """Bring the index up to the snapshot just committed."""
        self._at = self._current_id()
        if plan.truncated:
            self._index = KeyIndex(self._key_dtype())
            self._files, self._numbers = [], {}
        self.index.delete(plan.gone_keys)
        self.locate(plan.live_keys, added)

    def locate(self, keys: np.ndarray, added: list[DataFile]) -> None:
        """Point ``keys`` (encoded, in row order) at the rows of ``added``, which hold them in that order."""
        index = self.index
        start = 0
        for data_file in added:
            count = data_file.record_count
            number = self._number(data_file)
            index.set(keys[start : start + count], keyindex.pack(number, np.arange(count, dtype=np.int64)))
            start += count
        if start != len(keys):
            self._index = None  # files and rows disagree: read the truth from the lake next time
            raise LakeError(f"{self.name}: wrote {start} of {len(keys)} rows' locations")

    def move(self, moved: list[tuple[DataFile, np.ndarray]], added: list[DataFile]) -> bool:
        """Point the live rows of the ``moved`` data files (each with its deleted positions), which ``added`` now
        holds in that order, at their new places by location alone (no key is read or encoded: a compaction's
        rows keep their keys). False when the index did not hold exactly those rows: then locate them by key."""
        index = self.index
        old = [np.empty(0, np.uint64)]
        for data_file, deleted in moved:
            number = self._numbers.get(data_file.file_path)
            if number is None:
                return False
            live = np.arange(data_file.record_count, dtype=np.int64)
            if len(deleted):
                live = live[~np.isin(live, deleted)]
            old.append(keyindex.pack(number, live))
        before = np.concatenate(old)
        if len(before) != sum(f.record_count for f in added):
            return False
        after = [np.empty(0, np.uint64)]
        after += [keyindex.pack(self._number(f), np.arange(f.record_count, dtype=np.int64)) for f in added]
        return index.remap(before, np.concatenate(after)) == len(before)

    def forget(self, removed: list[DataFile]) -> None:
        """Data files no longer in the table (their rows were located elsewhere first): free their entries."""
        for data_file in removed:
            number = self._numbers.pop(data_file.file_path, None)
            if number is not None:
                self._files[number] = _GONE

    def encode(self, rows: pa.Table) -> np.ndarray:
        return self._encode(rows)


def _inserts_only(changes: pa.Table) -> bool:
    """Whether every change of the batch is an insert (no update, delete or truncate)."""
    return changes.num_rows > 0 and bool(pc.all(pc.equal(changes[OP], "c")).as_py())


#: the entry of a file number whose data file left the table (keeps numbers stable, frees the DataFile)
_GONE = DataFile.from_args(file_path="")


def stream_rows(txn: Transaction, table: Table, rows: pa.Table) -> DataFileStream:
    """Write ``rows`` as data files; ``stream.files`` lists them in row order."""
    guard_statistics(txn, rows)
    stream = DataFileStream(txn, table.io)
    try:
        stream.write(rows)
        stream.close()
    except BaseException:
        stream.abort()
        raise
    if len(stream.files) == 1:  # kept for this table's next compaction (see rowcache)
        metadata = txn.table_metadata
        if rows.schema.equals(merge.arrow_schema(metadata.schema())):
            rowcache.remember(stream.files[0].file_path, metadata.current_schema_id, rows)
    return stream

"""Writing an initial snapshot into the two lake tables of a source table (see :meth:`LakeTable.snapshot`)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.table import Table, Transaction

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Position
from lakegate.connectors.errors import CommitConflict
from lakegate.connectors.iceberg import merge
from lakegate.connectors.iceberg.commits import guard_statistics, repeat, stamp, write_files
from lakegate.connectors.iceberg.datafiles import DataFileStream
from lakegate.connectors.iceberg.references import delete_unreferenced


class SnapshotSink:
    """Receives the chunks of an initial snapshot; see :meth:`LakeTable.snapshot`.

    Each table's rows go to one open Parquet file (:class:`DataFileStream`) encoded on that table's own thread,
    so the two encodes run side by side and overlap with the caller reading and parsing the next chunk."""

    def __init__(self, changelog: Table, state: Table | None, position: Position, commit_ts: int) -> None:
        self.changelog = changelog
        self.state = state
        self.position = position
        self.commit_ts = commit_ts
        self.rows = 0
        self._ctxn: Transaction | None = None
        self._producer: Any = None
        self._state_txn: Transaction | None = None
        self._state_producer: Any = None
        self._streams: list[tuple[Transaction, DataFileStream, Future[None] | None]] = []
        self.committed: set[int] = set()  #: streams whose table committed (0: change log, 1: state)

    def begin(self, ctxn: Transaction) -> None:
        self._ctxn = ctxn
        self._producer = ctxn.update_snapshot(snapshot_properties=stamp(self.position)).fast_append()
        self._producer.__enter__()
        if ctxn.table_metadata.current_snapshot() is not None:
            # the change log has history: a truncate marker says that the snapshot rows replace it
            marker = pa.table({OP: ["t"], LSN: [self.position.lsn], SEQ: [0]})
            marker = marker.append_column(COMMIT_TS, repeat(self.commit_ts, 1, pa.timestamp("us", tz="UTC")))
            schema = self.changelog.schema().as_arrow()
            write_files(ctxn, self.changelog, merge.conform(marker, schema), self._producer)
        self._streams.append((ctxn, DataFileStream(ctxn, self.changelog.io), None))
        state = self.state
        if state is not None:
            self._state_txn = state.transaction()
            self._state_producer = self._state_txn.update_snapshot(
                snapshot_properties=stamp(self.position)
            ).overwrite()
            self._state_producer.__enter__()
            for task in state.scan().plan_files():
                self._state_producer.delete_data_file(task.file)
            self._streams.append((self._state_txn, DataFileStream(self._state_txn, state.io), None))

    def write(self, chunk: pa.Table) -> None:
        """Add source rows (source columns only) as snapshot rows."""
        n = chunk.num_rows
        if n == 0:
            return
        seqs = pa.array(np.arange(self.rows + 1, self.rows + n + 1, dtype=np.int64))
        rows = (
            chunk.append_column(OP, repeat("r", n, pa.string()))
            .append_column(LSN, repeat(self.position.lsn, n, pa.int64()))
            .append_column(SEQ, seqs)
            .append_column(COMMIT_TS, repeat(self.commit_ts, n, pa.timestamp("us", tz="UTC")))
        )
        for i, (txn, stream, pending) in enumerate(self._streams):
            if pending is not None:
                pending.result()  # one chunk in flight per table: memory stays bounded
            data = merge.conform(rows, txn.table_metadata.schema().as_arrow())
            self._streams[i] = (txn, stream, _POOL.submit(_stream_write, txn, stream, data))
        self.rows += n

    def _close(self, index: int, producer: Any) -> None:
        txn, stream, pending = self._streams[index]
        if pending is not None:
            pending.result()
        for data_file in stream.close():
            producer.append_data_file(data_file)

    def finish_changelog(self) -> None:
        self._close(0, self._producer)
        self._producer.__exit__(None, None, None)

    def commit_state(self) -> None:
        if self._state_txn is None:
            return
        self._close(1, self._state_producer)
        self._state_producer.__exit__(None, None, None)
        self._state_txn.commit_transaction()
        self.committed.add(1)

    def abort(self) -> None:
        """Wait for the encoders, then delete the files they wrote that no committed snapshot references.

        Either table may have committed without the other (a conflict on the state table after the change log
        committed, say): its files are referenced and stay; a commit that raised but went through is caught by
        reading the table's metadata again before anything is deleted."""
        tables = [self.changelog, self.state]
        for index, (_, stream, pending) in enumerate(self._streams):
            if pending is not None:
                with contextlib.suppress(Exception):
                    pending.result()
            paths = stream.abandon()
            table = tables[index]
            if table is not None and paths and index not in self.committed:
                delete_unreferenced(table, paths)


@contextmanager
def write_snapshot(
    changelog: Table,
    state: Table | None,
    position: Position,
    commit_ts: int,
    properties: dict[str, str] | None,
    lock: threading.Lock,
    name: str,
) -> Iterator[SnapshotSink]:
    """See :meth:`LakeTable.snapshot`: the two tables are finished and committed side by side, under ``lock``
    (no other state commit of this process meanwhile); whatever did not commit is cleaned up. ``name``: the
    source table, for messages."""
    sink = SnapshotSink(changelog, state, position, commit_ts)
    pending: Future[None] | None = None
    with lock:
        try:
            with changelog.transaction() as ctxn:
                if properties:
                    ctxn.set_properties(properties)
                sink.begin(ctxn)
                yield sink
                if state is not None:
                    pending = COMMITS.submit(sink.commit_state)
                sink.finish_changelog()
            sink.committed.add(0)
            if pending is not None:
                pending.result()
        except BaseException as exc:
            if pending is not None:
                with contextlib.suppress(Exception):
                    pending.result()
            sink.abort()
            if isinstance(exc, CommitFailedException | ValidationException):  # another writer raced it
                raise CommitConflict(f"the snapshot of {name} lost a race: {exc}") from exc
            raise


def _stream_write(txn: Transaction, stream: DataFileStream, data: pa.Table) -> None:
    guard_statistics(txn, data)
    stream.write(data)


# one thread per table being encoded (a snapshot writes the state and the change log)
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="lakegate-snapshot-writer")
# the state table's snapshot commit, beside the change log's
COMMITS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lakegate-snapshot-commit")

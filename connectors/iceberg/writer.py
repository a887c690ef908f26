"""The two lake tables of one source table, and every write to them.

``<schema>.<table>__changelog`` receives every change, one append per flush, its snapshot summary stamped with
the source position it covers (``lakegate.lsn`` / ``lakegate.seq``): that stamp is the table's checkpoint.
``<schema>.<table>`` holds the current state. It is maintained merge-on-read: :meth:`LakeTable.fold` merges the
change-log tail into it now and then (copy-on-write of the files holding changed keys), stamping the position
it folded up to. Readers get the current state by merging the state table with the tail after that stamp.
A table without a key (REPLICA IDENTITY FULL) has only the change log.

Every data file is written by :class:`~lakegate.connectors.iceberg.datafiles.DataFileStream` (pyiceberg's own file
writing, kept open across chunks and with dictionary encoding only where values repeat) and added to a
pyiceberg snapshot producer, so one commit can hold files written chunk by chunk.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException, NamespaceAlreadyExistsError, NoSuchTableError
from pyiceberg.expressions import AlwaysTrue, GreaterThanOrEqual, In
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.table import Table, TableProperties, Transaction
from pyiceberg.table.snapshots import ancestors_of
from pyiceberg.utils.properties import property_as_bool

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, ZERO, Column, Position, TableRef, TableSchema
from lakegate.connectors.errors import CommitConflict, LakeError, SchemaChangeError
from lakegate.connectors.iceberg import merge
from lakegate.connectors.iceberg.datafiles import DataFileStream
from lakegate.connectors.iceberg.references import delete_unreferenced
from lakegate.connectors.iceberg.schema import CHANGELOG, CHANGELOG_SUFFIX, STATE, lake_schema, plan_evolution

log = logging.getLogger(__name__)

PROP_LSN, PROP_SEQ = "lakegate.lsn", "lakegate.seq"
TABLE_PROPERTIES = {
    "write.parquet.compression-codec": "zstd",
    # one commit a second: merge manifests as they pile up, keep few old metadata files
    "commit.manifest-merge.enabled": "true",
    "commit.manifest.min-count-to-merge": "32",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "16",
}
COMMIT_ATTEMPTS = 4


def stamp(position: Position, **extra: str) -> dict[str, str]:
    return {PROP_LSN: str(position.lsn), PROP_SEQ: str(position.seq), **extra}


def checkpoint_of(table: Table) -> Position | None:
    """The newest ``lakegate.lsn`` stamp on the table's current snapshot lineage (maintenance commits carry none)."""
    for snapshot in ancestors_of(table.current_snapshot(), table.metadata):
        props = snapshot.summary.additional_properties if snapshot.summary else {}
        if PROP_LSN in props:
            return Position(int(props[PROP_LSN]), int(props.get(PROP_SEQ, 2**62)))
    return None


# pyiceberg turns Parquet min/max statistics into Python dates, which stop at years 1 and 9999: a column holding
# infinity or a BC date would fail the write. Such a column keeps counts only (no bounds) from then on.
_PY_DAYS = (-719162, 2932896)
_PY_MICROS = (-62135596800000000, 253402300799999999)


def _temporal_leaves(name: str, arr: pa.ChunkedArray | pa.Array) -> Iterator[tuple[str, pa.Array]]:
    typ = arr.type
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        flat = pa.chunked_array([c.flatten() for c in chunks], type=typ.value_type)
        yield from _temporal_leaves(f"{name}.element", flat)
    elif pa.types.is_date32(typ) or pa.types.is_timestamp(typ):
        yield name, arr


def guard_statistics(txn: Transaction, data: pa.Table) -> None:
    """Switch temporal columns whose values Python cannot represent to counts-only metrics."""
    props = {}
    for field in data.schema:
        for path, arr in _temporal_leaves(field.name, data[field.name]):
            key = f"write.metadata.metrics.column.{path}"
            if (
                len(arr) == 0
                or arr.null_count == len(arr)
                or txn.table_metadata.properties.get(key) == "counts"
            ):
                continue
            bounds = _PY_DAYS if pa.types.is_date32(arr.type) else _PY_MICROS
            low, high = pc.min_max(
                arr.cast(pa.int32() if pa.types.is_date32(arr.type) else pa.int64())
            ).values()
            if low.as_py() < bounds[0] or high.as_py() > bounds[1]:
                props[key] = "counts"
    if props:
        log.info(
            "%s: keeping counts only (no min/max) for %s, which hold(s) values beyond years 1-9999",
            ".".join(txn.table_metadata.location.rstrip("/").split("/")[-2:]),
            ", ".join(props),
        )
        txn.set_properties(props)


def _write_files(txn: Transaction, table: Table, data: pa.Table, producer: Any) -> int:
    """Write ``data`` as data files of ``table`` and add them to ``producer``; returns the number of files."""
    guard_statistics(txn, data)
    stream = DataFileStream(txn, table.io)
    try:
        stream.write(data)
        files = stream.close()
    except BaseException:
        stream.abort()
        raise
    for data_file in files:
        producer.append_data_file(data_file)
    return len(files)


def _append_producer(txn: Transaction, properties: dict[str, str]) -> Any:
    """An append that merges manifests when the table asks for it (as ``Transaction.append`` chooses)."""
    update = txn.update_snapshot(snapshot_properties=properties)
    merge_manifests = property_as_bool(
        txn.table_metadata.properties,
        TableProperties.MANIFEST_MERGE_ENABLED,
        TableProperties.MANIFEST_MERGE_ENABLED_DEFAULT,
    )
    return update.merge_append() if merge_manifests else update.fast_append()


class LakeTable:
    """State and change-log tables of one source table in one Iceberg catalog."""

    def __init__(self, catalog: Catalog, schema: TableSchema, *, source: str = "") -> None:
        self.catalog = catalog
        self.schema = schema
        self.source = source
        self.namespace = schema.table.schema
        self.name = schema.table.name
        self.changelog: Table | None = None
        self.state: Table | None = None

    @classmethod
    def open(cls, catalog: Catalog, ref: TableRef) -> LakeTable:
        """The lake tables of ``ref`` as they are (the schema is read from the change log); raises LakeError."""
        try:
            changelog = catalog.load_table(f"{ref.schema}.{ref.name}{CHANGELOG_SUFFIX}")
        except NoSuchTableError as exc:
            raise LakeError(
                f"the lake has no table {ref}{CHANGELOG_SUFFIX}; has the worker replicated {ref}?"
            ) from exc
        key = tuple(k for k in changelog.properties.get("lakegate.key", "").split(",") if k)
        fields = [f for f in changelog.schema().as_arrow() if f.name not in (OP, LSN, SEQ, COMMIT_TS)]
        schema = TableSchema(ref, tuple(Column(f.name, f.type, "", f.name in key) for f in fields), key)
        table = cls(catalog, schema, source=changelog.properties.get("lakegate.source", ""))
        table.load()
        return table

    # ------------------------------------------------------------------------------------------------ setup

    @property
    def has_state(self) -> bool:
        return bool(self.schema.key)

    def identifiers(self) -> tuple[str, str]:
        return f"{self.namespace}.{self.name}", f"{self.namespace}.{self.name}{CHANGELOG_SUFFIX}"

    def load(self) -> bool:
        """Load existing tables; True when the change log exists."""
        state_id, changelog_id = self.identifiers()
        try:
            self.changelog = self.catalog.load_table(changelog_id)
        except NoSuchTableError:
            return False
        if self.has_state:
            try:
                self.state = self.catalog.load_table(state_id)
            except NoSuchTableError:
                self.state = None
        return True

    def create(self) -> None:
        """Create missing tables (and the namespace)."""
        self._ensure_namespace()
        state_id, changelog_id = self.identifiers()
        props = {
            **TABLE_PROPERTIES,
            "lakegate.source": self.source,
            "lakegate.key": ",".join(self.schema.key),
        }
        if self.changelog is None:
            self.changelog = self.catalog.create_table_if_not_exists(
                changelog_id,
                lake_schema(self.schema, CHANGELOG),
                properties={**props, "lakegate.kind": CHANGELOG},
            )
        if self.has_state and self.state is None:
            self.state = self.catalog.create_table_if_not_exists(
                state_id, lake_schema(self.schema, STATE), properties={**props, "lakegate.kind": STATE}
            )

    def _ensure_namespace(self) -> None:
        try:
            self.catalog.create_namespace(self.namespace)
        except NamespaceAlreadyExistsError:
            pass
        except Exception as exc:  # a concurrent creator wins the race inside the catalog (e.g. SQLite UNIQUE)
            try:
                self.catalog.load_namespace_properties(self.namespace)
            except Exception:
                raise LakeError(f"cannot create the lake namespace {self.namespace!r}: {exc}") from exc

    def drop(self) -> None:
        for ident in self.identifiers():
            with contextlib.suppress(NoSuchTableError):
                self.catalog.purge_table(ident)
        self.changelog = self.state = None

    def evolve(self, schema: TableSchema) -> None:
        """Make both tables able to hold rows of ``schema`` (add columns, widen types); raises SchemaChangeError."""
        assert self.changelog is not None
        if self.has_state and tuple(schema.key) != tuple(self.schema.key):
            raise SchemaChangeError(
                str(schema.table),
                (
                    f"the key of {schema.table} changed from ({', '.join(self.schema.key)}) "
                    f"to ({', '.join(schema.key)}); "
                    f"the lake state is keyed by the old one. Stop the worker, run 'lakegate maintain --resnapshot "
                    f"{schema.table}' and start it again"
                ),
            )
        for table, kind in ((self.changelog, CHANGELOG), (self.state, STATE)):
            if table is None:
                continue
            plan = plan_evolution(table.schema(), schema, kind)
            if not plan:
                continue
            try:
                with table.update_schema() as update:
                    for name, typ in plan.add:
                        update.add_column(name, typ)
                    for name, typ in plan.widen:
                        update.update_column(name, field_type=typ)
            except CommitFailedException as exc:
                table.refresh()
                raise CommitConflict(f"evolving {'.'.join(table.name())} lost a race: {exc}") from exc
            except (OSError, ValueError) as exc:
                raise LakeError(
                    f"cannot change the schema of lake table {'.'.join(table.name())}: {exc}"
                ) from exc
            log.info(
                "%s: evolved %s table: added %s, widened %s",
                schema.table,
                kind,
                [n for n, _ in plan.add] or "-",
                [n for n, _ in plan.widen] or "-",
            )
        self.schema = schema

    # ---------------------------------------------------------------------------------------------- reading

    def checkpoint(self) -> Position | None:
        """Position of the last change the change log holds; None when the initial snapshot is not complete."""
        return checkpoint_of(self.changelog) if self.changelog is not None else None

    def state_checkpoint(self) -> Position:
        if self.state is None:
            return ZERO
        return checkpoint_of(self.state) or ZERO

    def refresh(self) -> None:
        for table in (self.changelog, self.state):
            if table is not None:
                table.refresh()

    def tail(self, after: Position, row_filter: Any = None) -> pa.Table:
        """Change-log rows after ``after``, sorted by position."""
        assert self.changelog is not None
        # pyiceberg's expressions are pydantic models whose positional constructors mypy does not see
        expr = GreaterThanOrEqual(LSN, max(after.lsn, 0))  # type: ignore[call-arg,arg-type]
        if row_filter is not None:
            expr = expr & row_filter
        rows = self.changelog.scan(row_filter=expr).to_arrow()
        later = pc.or_(
            pc.greater(rows[LSN], after.lsn),
            pc.and_(pc.equal(rows[LSN], after.lsn), pc.greater(rows[SEQ], after.seq)),
        )
        return merge.sort_changes(rows.filter(later))

    def current(self) -> pa.Table:
        """The current state: the state table merged with the change-log tail (tests, lookups)."""
        assert self.state is not None
        self.refresh()
        position = self.state_checkpoint()
        state = self.state.scan().to_arrow()
        return merge.apply(state, self.tail(position), self.schema.key)

    def lookup(self, keys: pa.Table) -> pa.Table:
        """Current rows (state columns) for ``keys`` (a table of key columns); absent keys are left out."""
        assert self.state is not None
        if keys.num_rows == 0:
            return self.state.schema().as_arrow().empty_table()
        first = self.schema.key[0]
        values = [v for v in keys[first].to_pylist() if v is not None]
        self.refresh()  # a fold may have moved the state on (and expiry removed what an old snapshot used)
        position = self.state_checkpoint()
        keys_in = In(first, values)  # type: ignore[call-arg,arg-type]
        tail = self.tail(position, keys_in)
        state = self.state.scan(row_filter=keys_in).to_arrow()
        current = merge.apply(state, tail, self.schema.key)
        return (
            current.join(
                merge._key_columns(keys, self.schema.key), keys=list(self.schema.key), join_type="left semi"
            )
            if len(self.schema.key) > 1
            else current
        )

    # ---------------------------------------------------------------------------------------------- writing

    def append(self, data: pa.Table, position: Position) -> None:
        """Append changes (change-log columns) and stamp ``position`` in the same commit."""
        changelog = self.changelog
        assert changelog is not None
        data = merge.conform(data, changelog.schema().as_arrow())

        def action(txn: Transaction) -> None:
            with _append_producer(txn, stamp(position)) as producer:
                _write_files(txn, changelog, data, producer)

        self._commit(changelog, action)

    def _commit(self, table: Table, action: Any) -> None:
        """Run ``action`` in a transaction; a commit that loses a race (maintenance) is retried on fresh metadata."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                with table.transaction() as txn:
                    action(txn)
                return
            except CommitFailedException as exc:
                table.refresh()
                if attempt == COMMIT_ATTEMPTS:
                    raise CommitConflict(
                        f"commit to {'.'.join(table.name())} conflicted {attempt} times: {exc}"
                    ) from exc
                log.debug("commit to %s conflicted, retrying: %s", ".".join(table.name()), exc)
            except (OSError, ValueError) as exc:
                raise LakeError(f"cannot commit to lake table {'.'.join(table.name())}: {exc}") from exc

    @contextmanager
    def snapshot(self, position: Position, commit_ts: int) -> Iterator[SnapshotSink]:
        """Write an initial snapshot (replacing whatever the tables held) in one commit per table.

        The two tables are finished and committed side by side. Either may commit without the other: without
        the change log's commit the table has no checkpoint and is copied again (replacing the state); without
        the state's, folding the change log catches it up."""
        assert self.changelog is not None
        sink = SnapshotSink(self, position, commit_ts)
        state: Future[None] | None = None
        try:
            with self.changelog.transaction() as ctxn:
                sink.begin(ctxn)
                yield sink
                if self.state is not None:
                    state = _COMMITS.submit(sink.commit_state)
                sink.finish_changelog()
            if state is not None:
                state.result()
        except BaseException:
            if state is not None:
                with contextlib.suppress(Exception):
                    state.result()
            sink.abort()
            raise

    def fold(self) -> int:
        """Merge the change-log tail into the state table; returns the number of changes folded."""
        if self.state is None or self.changelog is None:
            return 0
        self.refresh()
        target = self.checkpoint()
        folded = self.state_checkpoint()
        if target is None or target <= folded:
            return 0
        started = time.monotonic()
        tail, truncated = merge.after_last_truncate(self.tail(folded))
        latest = merge.latest_per_key(tail, self.schema.key)
        live = merge.conform(latest.filter(pc.not_equal(latest[OP], "d")), self.state.schema().as_arrow())
        state = self.state
        rewritten = 0

        def rewrite(txn: Transaction) -> None:
            nonlocal rewritten
            with txn.update_snapshot(snapshot_properties=stamp(target)).overwrite() as producer:
                tasks = list(state.scan().plan_files())
                scan = ArrowScan(state.metadata, state.io, state.schema(), AlwaysTrue())
                for task in tasks:
                    if truncated:
                        producer.delete_data_file(task.file)
                        continue
                    rows = scan.to_table([task])
                    kept = merge.anti_join(rows, latest, self.schema.key)
                    if kept.num_rows != rows.num_rows:
                        producer.delete_data_file(task.file)
                        rewritten += 1
                        if kept.num_rows:
                            _write_files(txn, state, merge.conform(kept, state.schema().as_arrow()), producer)
                if live.num_rows:
                    _write_files(txn, state, live, producer)

        self._commit(state, rewrite)
        log.info(
            "%s: folded %d change(s) into the state table up to %s (%d file(s) rewritten, %.2fs)",
            self.schema.table,
            tail.num_rows,
            target,
            rewritten,
            time.monotonic() - started,
        )
        return tail.num_rows


class SnapshotSink:
    """Receives the chunks of an initial snapshot; see :meth:`LakeTable.snapshot`.

    Each table's rows go to one open Parquet file (:class:`DataFileStream`) encoded on that table's own thread,
    so the two encodes run side by side and overlap with the caller reading and parsing the next chunk."""

    def __init__(self, table: LakeTable, position: Position, commit_ts: int) -> None:
        self.table = table
        self.position = position
        self.commit_ts = commit_ts
        self.rows = 0
        self._ctxn: Transaction | None = None
        self._producer: Any = None
        self._state_txn: Transaction | None = None
        self._state_producer: Any = None
        self._streams: list[tuple[Transaction, DataFileStream, Future[None] | None]] = []

    def begin(self, ctxn: Transaction) -> None:
        assert self.table.changelog is not None
        self._ctxn = ctxn
        self._producer = ctxn.update_snapshot(snapshot_properties=stamp(self.position)).fast_append()
        self._producer.__enter__()
        if ctxn.table_metadata.current_snapshot() is not None:
            # the change log has history: a truncate marker says that the snapshot rows replace it
            marker = pa.table({OP: ["t"], LSN: [self.position.lsn], SEQ: [0]})
            marker = marker.append_column(COMMIT_TS, _repeat(self.commit_ts, 1, pa.timestamp("us", tz="UTC")))
            schema = self.table.changelog.schema().as_arrow()
            _write_files(ctxn, self.table.changelog, merge.conform(marker, schema), self._producer)
        self._streams.append((ctxn, DataFileStream(ctxn, self.table.changelog.io), None))
        state = self.table.state
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
            chunk.append_column(OP, _repeat("r", n, pa.string()))
            .append_column(LSN, _repeat(self.position.lsn, n, pa.int64()))
            .append_column(SEQ, seqs)
            .append_column(COMMIT_TS, _repeat(self.commit_ts, n, pa.timestamp("us", tz="UTC")))
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

    def abort(self) -> None:
        """Wait for the encoders, then delete the files they wrote that no committed snapshot references.

        Either table may have committed without the other (a conflict on the state table after the change log
        committed, say): its files are referenced and stay; a commit that raised but went through is caught by
        reading the table's metadata again before anything is deleted."""
        tables = [self.table.changelog, self.table.state]
        for index, (_, stream, pending) in enumerate(self._streams):
            if pending is not None:
                with contextlib.suppress(Exception):
                    pending.result()
            paths = stream.abandon()
            table = tables[index]
            if table is not None and paths:
                delete_unreferenced(table, paths)


def _stream_write(txn: Transaction, stream: DataFileStream, data: pa.Table) -> None:
    guard_statistics(txn, data)
    stream.write(data)


# one thread per table being encoded (a snapshot writes the state and the change log)
_POOL = ThreadPoolExecutor(max_workers=2, thread_name_prefix="lakegate-snapshot-writer")
# the state table's snapshot commit, beside the change log's
_COMMITS = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lakegate-snapshot-commit")


def _repeat(value: object, n: int, typ: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(typ):
        return pa.repeat(pa.scalar(value, pa.int64()), n).cast(typ)
    return pa.repeat(pa.scalar(value, typ), n)

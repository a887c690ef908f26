"""The ingest worker: PostgreSQL change source -> Iceberg lake tables, exactly once.

One loop per source::

    poll the stream for up to commit_interval  ->  take complete transactions  ->  per table: evolve the schema,
    fill unchanged TOAST values, append to the change log stamped with its position, and the same changes to the
    state table (position deletes)  ->  confirm the LSN to PostgreSQL

The lake is written on a thread of its own (:mod:`lakegate.ingest.committer`) while the stream is read; when a
flush takes longer than commit_interval, the reader reads on and the next flush takes everything that arrived
meanwhile, as soon as the writer is free (its commits carry more changes, their fixed cost is paid less often).

Transient faults (connection lost, server restart, slot busy, commit conflict) restart the loop with backoff;
the lake's per-table checkpoints make the replay exact. The first SIGTERM/SIGINT finishes the current flush and
stops; a second one stops at once (nothing unconfirmed is lost: the server still holds it).
"""

from __future__ import annotations

import concurrent.futures
import functools
import gc
import logging
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from lakegate.connectors.changes import (
    TableRef,
    TableSchema,
    format_lsn,
)
from lakegate.connectors.config import LakeSettings, SourceSettings
from lakegate.connectors.errors import (
    LakeError,
    Resnapshot,
    SourceConfigError,
    TransientError,
)
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg import cut, flushcatalog, registry
from lakegate.connectors.iceberg.evolution import STORAGE
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.connectors.postgres.cdc import Flush, PostgresSource
from lakegate.connectors.postgres.lease import WorkerBusy
from lakegate.connectors.postgres.rowbuffer import Segment
from lakegate.connectors.postgres.types import ConversionError
from lakegate.ingest import apply, tableprocs, writerupkeep
from lakegate.ingest.committer import Committer
from lakegate.ingest.config import IngestSettings
from lakegate.ingest.maintain import compaction_thresholds
from lakegate.ingest.pacing import Pace
from lakegate.ingest.progress import Progress
from lakegate.ingest.upkeep import MaintenanceThread

log = logging.getLogger("lakegate.ingest")

COMMIT_THREADS = 4  #: tables of one flush committed at once
_COMMITS = concurrent.futures.ThreadPoolExecutor(COMMIT_THREADS, thread_name_prefix="lakegate-commit")
BUSY_RETRY = 3.0  #: seconds between attempts to take the lease another worker holds
IDLE_CUT_INTERVAL = 1.0  #: seconds between consistent cuts recorded while the source is idle


class Interrupted(Exception):
    """A second signal: stop now."""


class TableStopped(TransientError):
    """A table was left out (see ``Worker.skip``); the stream starts again without it."""


@dataclass
class TableStatus:
    rows_appended: int = 0
    failed: str | None = None


class Worker:
    """Replicates the tables of ``source`` into the lake ``lake``."""

    def __init__(self, lake: LakeSettings, source: SourceSettings, cfg: IngestSettings) -> None:
        self.lake_settings = lake
        self.src = source
        self.cfg = cfg
        self.refs = [TableRef.parse(t) for t in self.src.replicate]
        self.catalog = lake_catalog.from_settings(lake)
        self.lake: dict[TableRef, LakeTable] = {}
        self.status: dict[TableRef, TableStatus] = {ref: TableStatus() for ref in self.refs}
        self.stopping = threading.Event()
        self.streaming = threading.Event()  #: set while the worker streams (snapshot done)
        self.leased = threading.Event()  #: set while this worker holds the source's lease (upkeep needs it)
        self.flushes = 0
        self._written_refs: list[TableRef] = []  #: the tables of the flush being written (committer thread)
        self.rows_written = 0
        self._counting = threading.Lock()
        self.on_flush: Callable[[Flush], None] | None = None
        self.source: PostgresSource | None = None  #: while running, for status and tests
        self.committer: Committer | None = None
        self.procs: tableprocs.TableProcesses | None = (
            None  #: the writer processes, while streaming with them
        )
        self.upkeep: MaintenanceThread | None = None
        #: tables to copy again under a fresh snapshot on the next start of the stream (see ingest.ddl)
        self.recopy: set[TableRef] = set()
        #: tables left out until the worker restarts: their initial copy met a value the lake cannot hold
        self.skip: dict[TableRef, str] = {}
        self._cut_recorded = (0, 0.0)  #: the last consistent cut recorded, and when (monotonic)
        #: how many tables a flush takes when not all fit in time (connectors.postgres.handover)
        self.pace = Pace(cfg.commit_interval)

    # ------------------------------------------------------------------------------------------ lifecycle

    def run(self) -> None:
        """Run until stopped; retry transient faults with backoff; raise fatal ones."""
        done = threading.Event()
        upkeep = MaintenanceThread(
            self.lake_settings,
            self.cfg,
            self.refs,
            done,
            active=self.leased.is_set,
        )
        self.upkeep = upkeep
        upkeep.start()
        try:
            self._run_with_retries()
        finally:
            done.set()
            upkeep.join(60)
            self.upkeep = None

    def _run_with_retries(self) -> None:
        backoff = 0.5
        waiting_since: float | None = None  #: standing by while another worker holds the lease
        while not self.stopping.is_set():
            started = time.monotonic()
            try:
                self.run_once()
                return
            except Resnapshot as exc:
                self.recopy.add(exc.table)  # type: ignore[arg-type]
                log.warning("%s", exc)
                self.stopping.wait(0.2)
                continue
            except WorkerBusy as exc:
                # a standby: try every few seconds so that it takes over soon after the other one stops
                if waiting_since is None or started - waiting_since >= 60:
                    log.warning("%s", exc)
                    waiting_since = started
                self.stopping.wait(BUSY_RETRY)
                continue
            except TransientError as exc:
                if time.monotonic() - started > 30:
                    backoff = 0.5
                log.warning("%s; retrying in %.1fs", exc, backoff)
                self.stopping.wait(backoff)
                backoff = min(backoff * 2, 30.0)
            waiting_since = None

    def run_once(self) -> None:
        if self.skip and all(ref in self.skip for ref in self.refs):  # nothing left to replicate
            raise ConversionError("; ".join(self.skip.values()))
        source = PostgresSource(
            self.src.dsn,
            [ref for ref in self.refs if ref not in self.skip],
            slot=self.src.slot,
            publication=self.src.publication,
            unbounded_numeric=self.cfg.unbounded_numeric,
            name=self.src.name,
        )
        source.on_table_failed = self._table_failed
        source.on_table_gone = self._table_gone
        self.source = source
        try:
            record = registry.read(self.catalog, self.src.name)
            schemas = source.prepare(
                record
            )  # takes the lease first: nothing below runs beside another worker
            self.leased.set()
            for ref, why in source.missing.items():
                self._table_gone(ref, why)
            self._open_lake(schemas, source, record)
            for ref in source.recreated:
                if ref in self.lake and self.lake[ref].checkpoint() is not None and ref not in self.recopy:
                    log.warning(
                        "%s was dropped and created again in PostgreSQL: the new table is copied", ref
                    )
                    self.recopy.add(ref)
            self._reconcile_shapes(source)
            self._snapshot(source)
            registry.write(
                self.catalog, self.src.name, {ref: t.oid for ref, t in source.source_tables.items()}
            )
            registry.write_shapes(self.catalog, self.src.name, source.shapes())
            for (
                ref,
                table,
            ) in self.lake.items():  # behind its change log: a crash, a first-version lake (issue 12)
                if not self.status[ref].failed:
                    table.catch_up()
            checkpoints = {ref: self.lake[ref].checkpoint() for ref in self.lake}
            self._start_processes(source)  # before the stream starts: their start-up delays no change
            source.start({ref: cp for ref, cp in checkpoints.items() if cp is not None})
            self.streaming.set()
            self._stream(source)
        finally:
            self.streaming.clear()
            self.leased.clear()
            if self.procs is not None:
                self.procs.close()
                self.procs = None
            source.close()
            for table in self.lake.values():  # the next attempt writes an unfinished transaction again
                table.abandon_staged()

    # ------------------------------------------------------------------------------------------ snapshot

    def _open_lake(
        self, schemas: dict[TableRef, TableSchema], source: PostgresSource, record: dict[TableRef, int] | None
    ) -> None:
        self.lake = {}
        for ref, schema in schemas.items():
            oid = source.source_tables[ref].oid
            table = LakeTable(
                self.catalog, schema, source=self.src.name, compaction=compaction_thresholds(self.cfg)
            )
            existed = table.load()
            if not existed and record:
                existed = self._follow_rename(table, ref, oid, record)
            table.create()
            if existed and table.checkpoint() is not None:
                table.adopt(schema, source.column_facts(ref)[1])
                if record is not None and ref not in record and oid not in record.values():
                    log.warning(
                        "%s was left out of 'replicate' for a while: its changes of that time were not streamed, "
                        "so it is copied again",
                        ref,
                    )
                    self.recopy.add(ref)
            self.lake[ref] = table

    def _reconcile_shapes(self, source: PostgresSource) -> None:
        """Tables whose partitions or publication membership changed while the worker was not running (nothing of
        it is in the stream, connectors/postgres/shapes.py) are copied again before they stream."""
        recorded = registry.read_shapes(self.catalog, self.src.name)
        if not recorded:
            return
        for ref, what in source.shape_changes(recorded).items():
            table = self.lake.get(ref)
            if table is None or table.checkpoint() is None or ref in self.recopy:
                continue
            log.warning(
                "%s changed while the worker was not running: %s; it is copied again before it streams",
                ref,
                what,
            )
            self.recopy.add(ref)

    def _follow_rename(self, table: LakeTable, ref: TableRef, oid: int, record: dict[TableRef, int]) -> bool:
        """``replicate`` names a table the lake knows under its old name (same oid): rename the lake tables."""
        old = next((r for r, o in record.items() if o == oid and r != ref), None)
        if old is None or not LakeTable(self.catalog, TableSchema(old, ())).load():
            return False
        table.rename_from(old)
        log.info(
            "lake tables of %s renamed to %s, as the table is called in PostgreSQL (history kept)", old, ref
        )
        return table.load()

    def _table_gone(self, ref: TableRef, why: str) -> None:
        if self.status[ref].failed is None:
            log.error("%s; the lake keeps it as it was, the other tables go on", why)
        self.status[ref].failed = why

    def _snapshot(self, source: PostgresSource) -> None:
        slot_exists = source.slot_exists()
        if not slot_exists:
            need = list(self.lake)
            stale = [ref for ref in need if self.lake[ref].checkpoint() is not None]
            if stale:
                log.warning(
                    "replication slot %s is missing: changes since the lake's last commit are lost to the "
                    "stream, so %s will be copied again",
                    self.src.slot,
                    ", ".join(map(str, stale)),
                )
        else:
            need = [ref for ref in self.lake if self.lake[ref].checkpoint() is None]
            need += [ref for ref in self.lake if ref in self.recopy and ref not in need]
        if not need:
            return
        for ref, position, snapshot_ts, chunks in source.snapshot(need, create_slot=not slot_exists):
            progress = Progress(f"snapshot of {ref}")
            table = self.lake[ref]
            if (
                table.checkpoint() is not None
            ):  # copied again: the lake takes the table's columns as they are now
                table.evolve(source.tables[ref].schema)
            properties = {STORAGE: source.snapshot_storage[ref]}
            try:
                with table.snapshot(position, snapshot_ts, properties) as sink:
                    for chunk in chunks:
                        if self.stopping.is_set():
                            raise Interrupted(f"stopped during the snapshot of {ref}")
                        sink.write(chunk)
                        progress.update(chunk.num_rows)
                    source.check_session()  # still the lease holder: only then commit
            except ConversionError as exc:  # that table stops; the stream starts again without it
                self.skip[ref] = (
                    f"{exc}. Correct the value in PostgreSQL and restart the worker: the table is copied then "
                    "(the other tables go on meanwhile)"
                )
                self._table_failed(ref, ConversionError(self.skip[ref]))
                raise TableStopped(f"the copy of {ref} stopped; going on without it") from exc
            progress.done()
            self.recopy.discard(ref)
            log.info("snapshot of %s complete: %d rows at %s", ref, sink.rows, format_lsn(position.lsn + 1))

    # ------------------------------------------------------------------------------------------ streaming

    def _start_processes(self, source: PostgresSource) -> None:
        """Start the writer processes (ingest.tableprocs) when ``[ingest] processes`` asks for them."""
        tables = {
            ref: t
            for ref, t in self.lake.items()
            if not self.status[ref].failed and ref in source.source_tables
        }
        count = tableprocs.automatic(self.cfg.processes, len(tables))
        if count <= 1 or not tables:
            return
        if not tableprocs.usable(self.catalog):
            if self.cfg.processes > 1:
                log.warning(
                    "[ingest] processes = %d needs the SQL catalog (one transaction for a flush's tables); this "
                    "lake's catalog commits table by table, so the worker writes in its own process",
                    self.cfg.processes,
                )
            return
        procs = tableprocs.TableProcesses(
            count,
            self.lake_settings,
            self.src.name,
            self.src.dsn,
            compaction_thresholds(self.cfg),
            tables,
            {ref: source.source_tables[ref].oid for ref in tables},
            writerupkeep.rules(self.cfg),
        )
        try:
            procs.start()
        except BaseException:
            procs.close()
            raise
        self.procs = procs
        for table in tables.values():  # the processes keep the key indexes now
            table.forget_index()

    def _staged_lsn(self, ref: TableRef) -> int | None:
        """The transaction staged in parts on ``ref``'s lake tables, if any (see connectors.iceberg.staging)."""
        if self.procs is not None:
            return self.procs.staged_lsn.get(ref)
        return self.lake[ref].staged_lsn

    def _any_staged(self) -> bool:
        if self.procs is not None:
            return self.procs.any_staged()
        return any(t.staged_lsn is not None for t in self.lake.values())

    def _stream(self, source: PostgresSource) -> None:
        interval = self.cfg.commit_interval
        steady_gc()
        committer = self.committer = Committer(
            lambda flush: self._write(flush, source), self._compact_due, source.wake
        )
        committer.start()

        def confirm() -> None:  # on the reading thread: the only one that talks to PostgreSQL
            if self.upkeep is not None:
                self.upkeep.check()  # upkeep failing for too long stops the worker
            for flush in committer.completed():
                self._confirm(source, flush)
            # nothing being written, and no part of a transaction staged in the lake (issue 11.7): its end may
            # have arrived without rows, and only the flush that commits the staged parts may confirm it
            if source.map.changed:  # partitions followed since: the next start compares with these
                registry.write_shapes(self.catalog, self.src.name, source.shapes())
            if committer.in_flight == 0 and not self._any_staged():
                idle = source.confirmable(source.idle_position())
                if idle is not None:
                    source.acknowledge(idle)
                # the cut follows what is confirmed even when nothing new arrives: a table copied again at the
                # start sits above the last cut until the cut passes its copy (issue 29.4)
                if (
                    source.acked > self._cut_recorded[0]
                    and time.monotonic() - self._cut_recorded[1] >= IDLE_CUT_INTERVAL
                ):
                    self._record_cut(source.acked)

        def writer_free() -> bool:
            return self.stopping.is_set() or not committer.busy()

        backlog = False  #: the last flush left tables with changes behind (see _share)

        def next_flush_due() -> bool:
            return self.stopping.is_set() or (backlog and not committer.busy())

        try:
            while True:
                deadline = time.monotonic() + interval
                if not self.stopping.is_set():
                    source.poll(
                        deadline,
                        self.cfg.max_batch_rows,
                        self.cfg.max_batch_bytes,
                        next_flush_due,  # tables left behind go as soon as the writer is free
                        confirm,
                    )
                if committer.busy() and not self.stopping.is_set():
                    # the lake is slower than commit_interval: read on, and hand over everything that arrived as
                    # one flush the moment the writer is free (at a transaction boundary), so that each commit
                    # carries more changes instead of flushes queuing up; full buffers hand over (and block) now
                    source.poll(
                        time.monotonic() + 3600.0,
                        self.cfg.max_batch_rows,
                        self.cfg.max_batch_bytes,
                        writer_free,
                        confirm,
                    )
                flush = source.take(self._share(source))
                backlog = source.pending[0] > 0
                if flush.segments or flush.ack is not None:
                    committer.submit(flush)
                confirm()
                if self.stopping.is_set():
                    for flush in committer.drain():
                        self._confirm(source, flush)
                    if not self._any_staged():
                        self._record_cut(source.acked)  # readers see all that is confirmed
                    log.info("stopped cleanly; confirmed up to %s", format_lsn(source.acked))
                    return
        finally:
            committer.close()

    def _share(self, source: PostgresSource) -> int | None:
        """How many tables the next flush takes (None: all with changes; see ingest.pacing). All of them when
        stopping, while a transaction is staged in the lake (its flushes must reach its end), and when the
        buffers are half full (memory)."""
        if self.stopping.is_set() or self._any_staged():
            return None
        rows, nbytes = source.pending
        if rows * 2 >= self.cfg.max_batch_rows or nbytes * 2 >= self.cfg.max_batch_bytes:
            return None
        return self.pace.most(source.waiting())

    def _confirm(self, source: PostgresSource, flush: Flush) -> None:
        """A flush is durable in the lake: skip it on reconnect, confirm its LSN to PostgreSQL."""
        source.committed(flush.positions)
        ack = source.confirmable(flush.ack)
        if flush.segments or ack is not None:
            log.debug(
                "flush: %d row(s) in %d segment(s), confirming %s",
                sum(len(s) for s in flush.segments),
                len(flush.segments),
                format_lsn(ack) if ack is not None else "-",
            )
        if ack is not None:
            source.acknowledge(ack)
        if flush.ack is not None:  # not capped by a stopped table: the others are read as far as they are
            self._record_cut(flush.ack)
        self.flushes += 1
        if self.on_flush is not None:
            self.on_flush(flush)

    def _record_cut(self, lsn: int) -> None:
        """Every table of this source holds all of the source before ``lsn``: readers may read them at one
        position (see connectors.iceberg.cut). Only an aid to readers, so a failure is logged, not raised."""
        if lsn <= self._cut_recorded[0]:
            return
        try:
            cut.record(self.catalog, self.src.name, {ref.schema for ref in self.lake}, lsn)
        except LakeError as exc:
            log.warning("%s; readers see each table as far as it is committed", exc)
            return
        self._cut_recorded = (lsn, time.monotonic())

    def _write(self, flush: Flush, source: PostgresSource) -> None:
        """On the committer thread: each table's segments -> one change-log commit stamped with its position.

        Tables commit side by side (``COMMIT_THREADS`` at once): a commit mostly waits for files and the catalog,
        and a worker with hundreds of tables would otherwise spend each flush on them one after another. With
        the SQL catalog every table's new version becomes visible in one catalog transaction at the end
        (:mod:`~lakegate.connectors.iceberg.flushcatalog`): all of the flush, or none of it, and the consistent
        cut with it. The flush is confirmed only once every table has committed, as before."""
        by_table: dict[TableRef, list[Segment]] = {}
        for segment in flush.segments:
            by_table.setdefault(segment.ref, []).append(segment)
        for ref in self.lake:  # a transaction written in parts ended: commit its staged parts
            if self._staged_lsn(ref) not in (None, flush.open_lsn):
                by_table.setdefault(ref, [])
        jobs = [(ref, segments) for ref, segments in by_table.items() if not self.status[ref].failed]
        self._written_refs = [ref for ref, _ in jobs]
        began = time.perf_counter()
        cut_staged = False
        outcomes: dict[TableRef, tableprocs.Outcome] = {}
        with flushcatalog.flush(self.catalog):
            if self.procs is not None:  # written in the writer processes, swapped here with the cut
                swaps, outcomes = self.procs.write(jobs, flush.positions, flush.open_lsn)
                self.catalog.adopt(swaps)  # type: ignore[attr-defined]
            elif len(jobs) <= 1:
                for ref, segments in jobs:
                    self._write_table(ref, segments, flush, source)
            else:
                futures = [
                    _COMMITS.submit(self._write_table, ref, segments, flush, source) for ref, segments in jobs
                ]
                concurrent.futures.wait(futures)
                for future in futures:
                    future.result()  # the first failure, once no commit of this flush is still running
            if flush.ack is not None and flush.ack > self._cut_recorded[0]:
                # the cut moves in the transaction that makes the flush visible (see connectors.iceberg.cut), not
                # after it is handed back: readers see the flush at once; _confirm then finds it recorded
                cut_staged = cut.stage(
                    self.catalog, self.src.name, {ref.schema for ref in self.lake}, flush.ack
                )
        if cut_staged and flush.ack is not None:
            self._cut_recorded = (flush.ack, time.monotonic())
        if self.procs is not None:
            self.procs.landed()
        for ref, outcome in outcomes.items():
            self._appended(ref, outcome.rows)
            error = tableprocs.carried(outcome.error)
            if error is not None:
                source.fail_table(ref, by_table[ref][0].lsns[0])
                self._table_failed(ref, error)
        self.pace.wrote(len(jobs), time.perf_counter() - began)

    def _write_table(
        self, ref: TableRef, segments: list[Segment], flush: Flush, source: PostgresSource
    ) -> None:
        appended = functools.partial(self._appended, ref)
        error = apply.write(
            self.lake[ref], segments, source, appended, flush.positions.get(ref), flush.open_lsn
        )
        if error is not None:
            source.fail_table(ref, segments[0].lsns[0])
            self._table_failed(ref, error)

    def _compact_due(self) -> None:
        """On the committer thread, once a flush is handed back for confirmation: the compactions its commits left
        due (:func:`.apply.compact_due`). Nothing of the flush waits for them, only the next flush does. (Writer
        processes run their own, see ingest.tableprocs.)"""
        written, self._written_refs = self._written_refs, []
        if self.procs is None:
            apply.compact_due(
                self.catalog, [t for ref in written if (t := self.lake.get(ref)) and t.compaction_due]
            )

    def _appended(self, ref: TableRef, rows: int) -> None:
        with self._counting:  # tables commit on several threads
            self.status[ref].rows_appended += rows
            self.rows_written += rows

    def _table_failed(self, ref: TableRef, exc: Exception) -> None:
        if self.status[ref].failed is None:
            log.error(
                "table %s stopped: %s. Its changes are not confirmed to PostgreSQL until this is resolved",
                ref,
                exc,
            )
        self.status[ref].failed = str(exc)


GC_GEN0 = 10_000  #: allocations between young collections while streaming (CPython's default: 700)


def steady_gc() -> None:
    """Fewer, cheaper garbage collections while streaming (issue 11.16): a flush of hundreds of tables allocates
    millions of short-lived objects (pydantic models, Arrow wrappers) that reference counting frees, and the
    collector ran about every 0.1 ms of a flush's work, its full passes walking everything loaded at start (the
    lake's metadata, modules). What exists now (set up, long-lived) is frozen out of the collector's walks, and
    young collections run every ``GC_GEN0`` allocations: together about 3% of a flush's CPU
    (``bench.commits``). A frozen object that becomes cyclic garbage later is never collected, so only the
    first start of the process freezes (a worker restarting after faults does not pile up frozen garbage)."""
    global _FROZEN
    gen0, gen1, gen2 = gc.get_threshold()
    if 0 < gen0 < GC_GEN0:
        gc.set_threshold(GC_GEN0, gen1, gen2)
    if not _FROZEN:
        _FROZEN = True
        gc.freeze()


_FROZEN = False


def install_signal_handlers(workers: list[Worker]) -> None:
    """First SIGTERM/SIGINT: every worker finishes its flush and stops. Second: stop at once."""
    received = []

    def handler(signum: int, _frame: object) -> None:
        received.append(signum)
        name = signal.Signals(signum).name
        if len(received) > 1:
            raise Interrupted(f"received {name} again")
        log.info("received %s: finishing the current flush, then stopping (again to stop at once)", name)
        for worker in workers:
            worker.stopping.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run(lake: LakeSettings, sources: Sequence[SourceSettings], cfg: IngestSettings) -> None:
    """Entry point of ``lakegate ingest``: one worker per source that replicates tables (a thread each)."""
    sources = [s for s in sources if s.replicate]
    if not sources:
        raise SourceConfigError(
            "no source has tables to replicate; list them in [[sources]] replicate = [...]"
        )
    workers = [Worker(lake, s, cfg) for s in sources]
    install_signal_handlers(workers)
    errors: list[BaseException] = []

    def guarded(worker: Worker) -> None:
        try:
            worker.run()
        except Interrupted as exc:  # asked to stop in the middle of a snapshot: nothing was confirmed
            log.warning("%s; the snapshot starts over on the next run", exc)
        except BaseException as exc:  # re-raised on the main thread; the other workers stop
            errors.append(exc)
            for other in workers:
                other.stopping.set()

    threads = [
        threading.Thread(target=guarded, args=(w,), name=f"ingest-{w.src.name}", daemon=True) for w in workers
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():  # join in slices so that signals reach the handler
                thread.join(0.5)
    except Interrupted as exc:
        log.warning("%s: stopped at once; unconfirmed changes stay in PostgreSQL and will be replayed", exc)
        return
    if errors:
        raise errors[0]

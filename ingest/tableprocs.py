"""Table writer processes: the per-table work of a flush on several cores (issue 11.16).

A flush's work is per table: turn the buffered messages into Arrow, follow the schema, fill unchanged TOAST
values, write the change-log and state-table files, plan both commits and write their metadata files. With
hundreds of busy tables that is milliseconds per table, all of it interpreter work under one lock, so one
process cannot go faster than one core however many threads it runs. With ``[ingest] processes`` above 1
(``0``, the default, one per core up to 4 when the source has 16 tables or more) the worker starts that many
processes when it begins to stream, and each owns a fixed share of the tables (by a stable hash of the name)
until the stream stops: their lake tables live there, with the key indexes, the rows kept for compaction and
the parts of a huge transaction staged so far.

One flush::

    worker (committer thread, inside FlushCatalog.flush)  ->  each process: its tables' row segments
    process: for each table, what Worker._write_table does in one process (ingest.apply.write), committed
             through FlushCatalog.staging: new metadata files written, no pointer moved  ->  its swaps, and
             what each table did (rows, the error that stops it, its staged transaction)
    worker: every process's swaps and the consistent cut in ONE catalog transaction, as without processes
    worker -> each process: "landed": old metadata files go, and the compactions the flush left due run in the
             process's own catalog transaction while the worker confirms and gathers the next flush
    process, after the landing and while no message waits: its tables' upkeep that fell due, a piece at a time

Exactly once as before: nothing a process writes is visible before the worker's swap, and the swap checks each
table's pointer. Any failure (a process raises or exits, the swap finds a table moved) fails the flush: the
worker stops the processes and starts again from the position it confirmed, and the files written meanwhile
are orphans that upkeep removes. The processes ignore SIGINT/SIGTERM (a terminal or a service manager signals
the whole group): the worker decides when they stop, after its last flush, by closing their pipes.

Hand-written: :mod:`multiprocessing` gives the processes and pipes; which work runs where, and the protocol,
are lakegate's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import threading
import traceback
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from lakegate.connectors.changes import Position, TableRef, TableSchema
from lakegate.connectors.config import LakeSettings
from lakegate.connectors.errors import ConnectorError, LakeError, TransientError
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg import compaction, flushcatalog
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.connectors.postgres import introspect
from lakegate.connectors.postgres.connection import connect, translated
from lakegate.connectors.postgres.rowbuffer import Segment
from lakegate.ingest import writerupkeep

log = logging.getLogger("lakegate.ingest")

AUTO_TABLES = 16  #: ``processes = 0`` starts processes only for a source with at least this many tables
#: ... and at most this many: each costs an interpreter with pyarrow and pyiceberg loaded (about 150 MiB) and
#: the lake metadata of its tables
AUTO_MOST = 4
START_TIMEOUT = 600.0  #: seconds a process may take to load its tables (and build their key indexes)

Swap = tuple[tuple[str, str], str, str]


def automatic(setting: int, tables: int) -> int:
    """How many writer processes ``[ingest] processes = setting`` means for a source of ``tables`` tables
    (1: none, the worker writes in its own process)."""
    if setting > 0:
        return setting
    if tables < AUTO_TABLES:
        return 1
    return max(1, min(cores(), AUTO_MOST, tables // 4))


def cores() -> int:
    """The cores this process may run on (its affinity: a container's cpuset, ``taskset``), else all of them."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def usable(catalog: object) -> bool:
    """Writer processes need the SQL catalog's one-transaction swap (:mod:`.flushcatalog`): with other
    catalogs each table commits on its own, and a process could not leave its commits to the worker."""
    return isinstance(catalog, flushcatalog.FlushCatalog) and bool(catalog.engine.dialect.supports_sane_rowcount)


@dataclass
class Outcome:
    """What one table's part of a flush did in its process."""

    rows: int = 0
    error: Exception | None = None  #: the error that stops the table (see ingest.apply.write)
    staged_lsn: int | None = None  #: the transaction staged on the table after the flush, if any


@dataclass
class _Spec:
    """What a process needs to take over its share of the tables."""

    lake: LakeSettings
    source: str
    dsn: str
    thresholds: compaction.Thresholds
    tables: dict[TableRef, TableSchema]
    oids: dict[TableRef, int]
    logging: tuple[int, str | None, str | None, dict[str, int]]
    upkeep: writerupkeep.Rules | None  #: the process compacts and expires its tables (None: the worker does)


# --------------------------------------------------------------------------------------------- the worker's side


class TableProcesses:
    """The writer processes of one worker's stream (see the module)."""

    def __init__(
        self,
        count: int,
        lake: LakeSettings,
        source: str,
        dsn: str,
        thresholds: compaction.Thresholds,
        tables: dict[TableRef, LakeTable],
        oids: dict[TableRef, int],
        upkeep: writerupkeep.Rules | None = None,
    ) -> None:
        self.count = max(1, min(count, len(tables)))
        self._owner = {ref: zlib.crc32(str(ref).encode()) % self.count for ref in tables}
        self.staged_lsn: dict[TableRef, int | None] = {ref: t.staged_lsn for ref, t in tables.items()}
        self._conns: list[multiprocessing.connection.Connection] = []
        self._procs: list[Any] = []
        self._broken: str | None = None
        self._landing: list[int] = []
        self._lock = threading.Lock()
        shares: list[dict[TableRef, TableSchema]] = [{} for _ in range(self.count)]
        for ref, table in tables.items():
            shares[self._owner[ref]][ref] = table.schema
        self._specs = [
            _Spec(lake, source, dsn, thresholds, share, {ref: oids[ref] for ref in share}, _logging(), upkeep)
            for share in shares
        ]

    def start(self) -> None:
        """Start the processes; returns once each has loaded its tables. Raises what a process failed with."""
        context = multiprocessing.get_context("spawn")  # the worker has threads: no fork
        for i, spec in enumerate(self._specs):
            mine, theirs = context.Pipe()
            process = context.Process(
                target=_main, args=(theirs, spec), name=f"lakegate-writer-{i}", daemon=True
            )
            process.start()
            theirs.close()
            self._conns.append(mine)
            self._procs.append(process)
        for i in range(self.count):
            if not self._conns[i].poll(START_TIMEOUT):
                self._fail(i, f"did not load its tables within {START_TIMEOUT:.0f} s")
            self._answer(i, "ready")
        log.info(
            "%d writer processes write the flushes of %d table(s) (pids %s)",
            self.count,
            len(self._owner),
            ", ".join(str(p.pid) for p in self._procs),
        )

    def write(
        self,
        jobs: Sequence[tuple[TableRef, list[Segment]]],
        positions: dict[TableRef, Position],
        open_lsn: int | None,
    ) -> tuple[list[Swap], dict[TableRef, Outcome]]:
        """Each process writes its tables' part of a flush, staged; returns every process's swaps (for the
        worker's catalog transaction) and each table's outcome. Raises the first failure."""
        with self._lock:
            if self._broken is None and self._landing:  # the last write's swap failed: these tables are stale
                self._broken = "the last flush's swap did not land; the worker starts again"
            if self._broken is not None:
                raise TransientError(self._broken)
            shares: dict[int, list[tuple[TableRef, list[Segment]]]] = {}
            for ref, segments in jobs:
                shares.setdefault(self._owner[ref], []).append((ref, segments))
            for i, share in shares.items():
                wanted = {ref: positions[ref] for ref, _ in share if ref in positions}
                self._send(i, ("write", share, wanted, open_lsn))
            swaps: list[Swap] = []
            outcomes: dict[TableRef, Outcome] = {}
            failure: BaseException | None = None
            for i in shares:
                try:
                    staged, done = self._answer(i, "staged")
                except BaseException as exc:  # the others are read still: the pipes stay in step
                    failure = failure or exc
                    continue
                swaps += staged
                outcomes.update(done)
            if failure is not None:
                self._broken = f"a writer process failed earlier ({failure}); the worker starts again"
                raise failure
            for ref, outcome in outcomes.items():
                self.staged_lsn[ref] = outcome.staged_lsn
            self._landing = list(shares)
            return swaps, outcomes

    def landed(self) -> None:
        """The swaps of the last :meth:`write` are committed: the processes may delete old metadata and compact."""
        with self._lock:
            for i in self._landing:
                self._send(i, ("landed",))
            self._landing = []

    def any_staged(self) -> bool:
        return any(lsn is not None for lsn in self.staged_lsn.values())

    def close(self) -> None:
        """Stop the processes (what they staged of an unfinished transaction is given up, as in-process)."""
        for conn in self._conns:
            with contextlib.suppress(OSError, ValueError):
                conn.send(("close",))
        for i, process in enumerate(self._procs):
            process.join(30)
            if process.is_alive():
                log.warning("writer process %d (pid %s) did not stop; killing it", i, process.pid)
                process.kill()
                process.join(5)
        for conn in self._conns:
            conn.close()
        self._conns, self._procs = [], []

    # ---------------------------------------------------------------------------------------- the pipes

    def _send(self, i: int, message: tuple[Any, ...]) -> None:
        try:
            self._conns[i].send(message)
        except (OSError, ValueError) as exc:
            self._fail(i, f"cannot be reached ({exc})")

    def _answer(self, i: int, expected: str) -> Any:
        try:
            reply = self._conns[i].recv()
        except (EOFError, OSError) as exc:
            self._fail(i, f"stopped ({type(exc).__name__})")
        if reply[0] == "error":
            raise _rebuilt(reply[1])
        if reply[0] != expected:
            self._fail(i, f"answered {reply[0]!r} where {expected!r} was due")
        return reply[1] if len(reply) == 2 else reply[1:]

    def _fail(self, i: int, what: str) -> Any:
        process = self._procs[i]
        process.join(1)
        code = "" if process.exitcode is None else f", exit code {process.exitcode}"
        self._broken = f"writer process {i} (pid {process.pid}) {what}{code}; the worker starts again"
        raise TransientError(self._broken)


def _logging() -> tuple[int, str | None, str | None, dict[str, int]]:
    """The worker's logging set-up, for its processes: level, format, date format, levels of named loggers."""
    root = logging.getLogger()
    fmt = datefmt = None
    for handler in root.handlers:
        if handler.formatter is not None:
            fmt, datefmt = handler.formatter._fmt, handler.formatter.datefmt
            break
    named = {
        name: logger.level
        for name, logger in logging.root.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and logger.level != logging.NOTSET
    }
    return root.level, fmt, datefmt, named


# ------------------------------------------------------------------------------------------ errors across pipes


def _portable(exc: BaseException) -> tuple[str, str, tuple[Any, ...], dict[str, Any], str]:
    """An exception as (module, class, args, attributes, message): lakegate's errors take other arguments in
    their constructors than they keep in ``args``, so they are not made again through ``__init__``."""
    cls = type(exc)
    state = {}
    for key, value in vars(exc).items():
        try:
            pickle.dumps(value)
        except Exception:  # noqa: S112 (an attribute that cannot travel is left behind)
            continue
        state[key] = value
    try:
        pickle.dumps(exc.args)
        args = exc.args
    except Exception:
        args = (str(exc),)
    return cls.__module__, cls.__qualname__, args, state, f"{cls.__name__}: {exc}"


def _rebuilt(portable: tuple[str, str, tuple[Any, ...], dict[str, Any], str]) -> BaseException:
    module, name, args, state, message = portable
    try:
        cls = getattr(importlib.import_module(module), name)
        exc = cls.__new__(cls)
        BaseException.__init__(exc, *args)
        exc.__dict__.update(state)
        return exc
    except Exception:
        return LakeError(f"a writer process failed: {message}")


# ------------------------------------------------------------------------------------------- the process's side


class _Facts:
    """The source's catalog, for schema changes that ask it (``ColumnFacts``): a connection of its own, opened at
    the first such change."""

    def __init__(self, dsn: str, oids: dict[TableRef, int]) -> None:
        self._dsn = dsn
        self._oids = oids
        self._conn: Any = None

    def column_facts(self, ref: TableRef) -> tuple[list[introspect.Attribute], str]:
        if self._conn is None or self._conn.closed:
            self._conn = connect(self._dsn, application_name="lakegate-ingest-writer")
        oid = self._oids[ref]
        with translated(f"read the catalog entry of {ref}"):
            return introspect.attributes(self._conn, oid), introspect.storage_of(self._conn, oid)

    def close(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()


class _Share:
    """A process's tables."""

    def __init__(self, spec: _Spec) -> None:
        from lakegate.ingest import apply  # the worker's modules: imported here, in the process

        self._apply = apply
        catalog = lake_catalog.from_settings(spec.lake)
        if not isinstance(catalog, flushcatalog.FlushCatalog):
            raise LakeError(f"writer processes need the SQL catalog; {spec.lake.name!r} is not one")
        self.catalog = catalog
        self.facts = _Facts(spec.dsn, spec.oids)
        self.tables: dict[TableRef, LakeTable] = {}
        for ref, schema in spec.tables.items():
            table = LakeTable(self.catalog, schema, source=spec.source, compaction=spec.thresholds)
            if not table.load():
                raise LakeError(
                    f"the lake has no change log of {ref} (dropped while the worker started?); start the worker "
                    "again: it creates the lake tables that are missing and copies them"
                )
            table.catch_up()  # nothing to do after the worker's own; reads the key index now, not in a flush
            try:  # and what the first write derives, so that the first round is not slower than the rest
                table.warm()
            except Exception as exc:  # only a head start: the first write meets the same trouble, and reports it
                log.warning("%s: could not prepare its first write ahead (%s); the write prepares itself", ref, exc)
            self.tables[ref] = table
        self._written: list[TableRef] = []
        #: a write's swap is not known to have landed: nothing else may commit (it would build on staged versions)
        self.landing = False
        self.upkeep = (
            writerupkeep.WriterUpkeep(self.catalog, spec.upkeep, list(self.tables.values()))
            if spec.upkeep is not None
            else None
        )

    def write(
        self, share: list[tuple[TableRef, list[Segment]]], positions: dict[TableRef, Position], open_lsn: int | None
    ) -> tuple[list[Swap], dict[TableRef, Outcome]]:
        outcomes: dict[TableRef, Outcome] = {}
        with self.catalog.staging() as swaps:
            for ref, segments in share:
                outcome = outcomes[ref] = Outcome()

                def appended(rows: int, outcome: Outcome = outcome) -> None:
                    outcome.rows += rows

                table = self.tables[ref]
                outcome.error = self._apply.write(
                    table, segments, self.facts, appended, positions.get(ref), open_lsn
                )
        for ref, outcome in outcomes.items():
            outcome.staged_lsn = self.tables[ref].staged_lsn
        self._written = list(outcomes)
        self.landing = True
        return swaps, outcomes

    def landed(self) -> None:
        self.catalog.landed()
        written = [self.tables[ref] for ref in self._written]
        self._written = []
        self.landing = False
        self._apply.compact_due(self.catalog, [table for table in written if table.compaction_due])
        if self.upkeep is not None:
            self.upkeep.landed(written)

    def close(self) -> None:
        for table in self.tables.values():
            with contextlib.suppress(Exception):
                table.abandon_staged()
        self.facts.close()


def _main(conn: multiprocessing.connection.Connection, spec: _Spec) -> None:
    """A writer process: load the share, then answer the worker until it closes the pipe."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_IGN)
    level, fmt, datefmt, named = spec.logging
    logging.basicConfig(level=level, format=fmt or logging.BASIC_FORMAT, datefmt=datefmt)
    for name, named_level in named.items():
        logging.getLogger(name).setLevel(named_level)
    from lakegate.ingest.worker import steady_gc

    try:
        share = _Share(spec)
    except BaseException as exc:
        _report(conn, exc)
        return
    steady_gc()
    try:
        conn.send(("ready", None))
        while True:
            if share.upkeep is not None and share.upkeep.pending() and not share.landing and not conn.poll(0):
                share.upkeep.step()  # the lake's upkeep while the worker has nothing for this process
                continue
            message = conn.recv()
            if message[0] == "write":
                try:
                    swaps, outcomes = share.write(*message[1:])
                except BaseException as exc:
                    _report(conn, exc)
                    continue
                conn.send(("staged", (swaps, {ref: _sendable(o) for ref, o in outcomes.items()})))
            elif message[0] == "landed":
                share.landed()
            else:  # "close"
                return
    except (EOFError, OSError):  # the worker is gone (killed): nothing of what is staged here was swapped
        return
    finally:
        share.close()


def _sendable(outcome: Outcome) -> Outcome:
    if outcome.error is None:
        return outcome
    return dataclasses.replace(outcome, error=_Carried(_portable(outcome.error)))  # type: ignore[arg-type]


class _Carried(Exception):
    """An error on its way to the worker (made again there by :func:`carried`)."""

    def __init__(self, portable: tuple[str, str, tuple[Any, ...], dict[str, Any], str]) -> None:
        super().__init__(portable)
        self.portable = portable


def carried(error: Exception | None) -> Exception | None:
    """A table's error as the worker raises it."""
    if isinstance(error, _Carried):
        return _rebuilt(error.portable)  # type: ignore[return-value]
    return error


def _report(conn: multiprocessing.connection.Connection, exc: BaseException) -> None:
    if not isinstance(exc, ConnectorError):
        log.error("writer process %d: %s", os.getpid(), "".join(traceback.format_exception(exc)).rstrip())
    with contextlib.suppress(OSError, ValueError):
        conn.send(("error", _portable(exc)))

"""Run a plan on its engine under the query's limits, and translate engine failures into gateway errors.

Limits: a deadline (a watchdog thread cancels the engine query when it passes: DuckDB interrupt, PostgreSQL
cancel; PostgreSQL's own ``statement_timeout`` is the second line), a row cap (one extra row is read to tell that
the result was cut, and ``truncated`` says so), and a cap on the Arrow bytes of the result. A reader may cancel at
any time (the client went away); the engine query is then interrupted, not abandoned.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pyarrow as pa

from lakegate.connectors.query import (
    INTERNAL,
    INVALID,
    PERMISSION,
    RESOURCES,
    STATEMENT_TIMEOUT,
    SYNTAX,
    TOO_LARGE,
    UNAVAILABLE,
    UNDEFINED,
    QueryCancelled,
    QueryError,
    ResultStream,
    connection_lost,
    scan_error,
)
from lakegate.gateway.cache_store import SCHEMA as CACHE_SCHEMA
from lakegate.gateway.errors import (
    ClientGone,
    Forbidden,
    GatewayError,
    NotFound,
    QueryFailed,
    QueryTimeout,
    TooLarge,
    Unavailable,
    UnsupportedQuery,
)

TIMEOUT, CLIENT, SHUTDOWN = "timeout", "client", "shutdown"


@dataclass(frozen=True)
class Limits:
    max_rows: int
    timeout: float  #: seconds
    max_bytes: int
    time_zone: str = "UTC"  #: the session time zone (a checked IANA name, see lakegate.gateway.zones)


class Watchdog:
    """One thread that calls ``callback()`` of every registered deadline once it passes."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._cancelled: set[int] = set()
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="lakegate-watchdog", daemon=True)
        self._stopped = False
        self._thread.start()

    def watch(self, deadline: float, callback: Callable[[], None]) -> int:
        with self._cond:
            handle = next(self._ids)
            heapq.heappush(self._heap, (deadline, handle, callback))
            if self._heap[0][1] == handle:  # the thread sleeps until the earliest deadline: wake it only when
                self._cond.notify()  # this one comes first (a thread switch per query otherwise)
            return handle

    def unwatch(self, handle: int) -> None:
        with self._cond:
            self._cancelled.add(handle)
            if len(self._cancelled) > 1024 and len(self._cancelled) * 2 > len(self._heap):
                # disarmed deadlines stay in the heap until they pass: drop them when they are most of it
                self._heap = [entry for entry in self._heap if entry[1] not in self._cancelled]
                heapq.heapify(self._heap)
                self._cancelled.clear()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cond.wait(wait)
                if self._stopped:
                    return
                _, handle, callback = heapq.heappop(self._heap)
                if handle in self._cancelled:
                    self._cancelled.discard(handle)
                    continue
            with contextlib.suppress(Exception):  # a failing cancel must not stop the watchdog
                callback()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify()


class Execution:
    """One query on one engine: ``start()``, then iterate ``batches()``; ``cancel()`` from any thread."""

    def __init__(
        self,
        stream: ResultStream,
        limits: Limits,
        watchdog: Watchdog,
        route: str,
        deadline: float | None = None,
    ) -> None:
        self.stream = stream
        self.limits = limits
        self.route = route
        self.started_at = time.monotonic()
        #: the request's deadline, set before it was parsed (the time limit covers the whole request)
        self.deadline = deadline if deadline is not None else self.started_at + limits.timeout
        self.truncated = False
        self.source_lsn: str | None = None  #: the source position lake tables are read at (gateway.lakecut)
        self.rows = 0
        self.bytes = 0
        self.reason: str | None = None
        self.schema = pa.schema([])
        self._cast = False  #: the stream's columns take the schema's types (timestamptz in the session's zone)
        self._watchdog = watchdog
        self._handle = watchdog.watch(self.deadline, lambda: self.cancel(TIMEOUT))
        self._closed = False
        self._lock = threading.Lock()

    @property
    def elapsed_ms(self) -> float:
        return round((time.monotonic() - self.started_at) * 1000, 3)

    def start(self) -> None:
        try:
            with self._lock:
                if self._closed:
                    raise QueryCancelled()
                self.stream.start()
        except QueryError as exc:
            self.close()
            raise self.translate(exc) from exc
        self.schema = in_zone(pg_names(self.stream.schema), self.limits.time_zone)
        self._cast = any(a.type != b.type for a, b in zip(self.schema, self.stream.schema, strict=True))
        nanos = [f.name for f in self.schema if _has_nanoseconds(f.type)]
        if nanos:
            self.close()
            raise UnsupportedQuery(
                f"column {nanos[0]!r} holds nanosecond times (timestamp_ns), which PostgreSQL and the result "
                "formats do not have; cast it to timestamp (microseconds)"
            )

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The result's batches, cut at the row cap; raises gateway errors. Closes the execution at the end."""
        try:
            stream = iter(self.stream)
            while True:
                with self._lock:  # close() from another thread waits for the batch being read
                    if self._closed:
                        raise QueryCancelled()
                    batch = next(stream, None)
                if batch is None:
                    return
                room = self.limits.max_rows - self.rows
                if batch.num_rows > room:
                    self.truncated = True
                    batch = batch.slice(0, room)
                self.bytes += batch.nbytes
                if self.bytes > self.limits.max_bytes:
                    raise TooLarge(
                        f"the result is larger than the gateway's cap of {self.limits.max_bytes} bytes "
                        f"(after {self.rows} rows); select fewer rows or columns"
                    )
                self.rows += batch.num_rows
                if batch.num_rows:
                    columns = batch.columns
                    if self._cast:
                        columns = [c.cast(f.type) for c, f in zip(columns, self.schema, strict=True)]
                    yield pa.RecordBatch.from_arrays(columns, schema=self.schema)
                if self.truncated:
                    return
        except QueryError as exc:
            raise self.translate(exc) from exc
        finally:
            self.close()

    def cancel(self, reason: str = CLIENT) -> None:
        if self.reason is None:
            self.reason = reason
        self.stream.cancel()

    def close(self) -> None:
        """Release the engine's cursor or connection (waits for a batch being read in another thread)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._watchdog.unwatch(self._handle)
        self.stream.close()

    def translate(self, exc: QueryError) -> GatewayError:
        if isinstance(exc, QueryCancelled):
            if self.reason == CLIENT:
                return ClientGone("the client went away; the query was cancelled")
            if self.reason == SHUTDOWN:
                return Unavailable("the gateway is shutting down; the query was cancelled")
            return QueryTimeout(
                f"the query ran longer than its time limit of {self.limits.timeout:g} s and was "
                "cancelled; make it cheaper (filters, LIMIT) or ask for a longer timeout_ms"
            )
        return engine_error(exc)


def engine_error(exc: QueryError) -> GatewayError:
    """An engine's QueryError -> the gateway error with the right status. A DuckDB scan of a PostgreSQL table
    that PostgreSQL refused answers as the PostgreSQL route does (PostgreSQL's words and SQLSTATE; never the
    extension's internal ``COPY`` text or the connection string)."""
    if exc.engine == "duckdb":
        exc = scan_error(str(exc)) or _lake_file_error(exc)
    elif exc.kind == INTERNAL:  # psycopg without a SQLSTATE: libpq lost the connection
        exc = connection_lost(str(exc)) or exc
    engine = {"duckdb": "DuckDB", "postgres": "PostgreSQL"}.get(exc.engine, exc.engine or "the engine")
    message = f"{engine}: {exc}" + (f" (SQLSTATE {exc.sqlstate})" if exc.sqlstate else "")
    error: GatewayError
    if exc.kind == "undefined_table" or (exc.engine == "duckdb" and _MISSING_TABLE.search(str(exc))):
        error = NotFound(message)  # DuckDB's own: a source table dropped after the gateway planned the query
    elif exc.kind in (SYNTAX, UNDEFINED, INVALID):
        error = QueryFailed(message)
    elif exc.kind == PERMISSION:
        error = Forbidden(f"{engine} refused: {message[len(engine) + 2 :]}{_grant_hint(str(exc))}")
    elif exc.kind == TOO_LARGE:
        error = TooLarge(str(exc))
    elif exc.kind == RESOURCES:
        error = TooLarge(f"{engine} ran out of resources: {message[len(engine) + 2 :]}")
    elif exc.kind == STATEMENT_TIMEOUT:
        error = QueryTimeout(
            f"{engine} cancelled the query at its own time limit: {message[len(engine) + 2 :]}; make the "
            "query cheaper (filters, LIMIT), or ask the operator about the source's statement_timeout"
        )
    elif exc.kind == UNAVAILABLE:
        error = Unavailable(message)
    else:
        error = GatewayError(message)
    error.sqlstate = exc.sqlstate or error.sqlstate
    return error


#: DuckDB's words for a table its catalog no longer has (a PostgreSQL table dropped since it was planned)
_MISSING_TABLE = re.compile(r"^Catalog Error: Table with name .+ does not exist")


#: a file path or URI DuckDB quotes in a message (a lake data or metadata file: the warehouse's layout)
_PATH = re.compile(r"""(["'])(?:file://)?/[^"']*\1""")
_CACHE_TABLE = re.compile(rf"(?:memory\.)?{CACHE_SCHEMA}\.\w+")  #: a lake cache table (gateway.cache_store)
_UNREADABLE = re.compile(r"^IO Error: Cannot open file (\S.*?): (.+)$", re.DOTALL)


def _lake_file_error(exc: QueryError) -> QueryError:
    """DuckDB's message without the warehouse's file paths or the lake cache's table names; a lake file it
    cannot open said in words."""
    text = str(exc)
    unreadable = _UNREADABLE.match(text)
    if unreadable and _PATH.fullmatch(unreadable.group(1)):
        return QueryError(
            f"a file of a lake table cannot be read ({unreadable.group(2).strip()}): it was removed after the "
            "query was planned (maintenance deletes the files of expired snapshots) or the warehouse is "
            "unreachable; retry the query, and ask the operator if it persists",
            UNAVAILABLE,
            engine=exc.engine,
        )
    cleaned = _CACHE_TABLE.sub("a table of the lake cache", _PATH.sub("a lake file", text))
    return exc if cleaned == text else QueryError(cleaned, exc.kind, engine=exc.engine, sqlstate=exc.sqlstate)


def _grant_hint(text: str) -> str:
    if not text.startswith("permission denied for "):
        return ""
    return "; the source's role for the gateway lacks this privilege (an owner of the object can GRANT it)"


def _has_nanoseconds(kind: pa.DataType) -> bool:
    if pa.types.is_timestamp(kind) or pa.types.is_time64(kind) or pa.types.is_duration(kind):
        return bool(kind.unit == "ns") and not pa.types.is_duration(kind)
    return any(_has_nanoseconds(kind.field(i).type) for i in range(kind.num_fields))


def in_zone(schema: pa.Schema, zone: str) -> pa.Schema:
    """``schema`` with its timestamptz values (nested ones too) shown in time zone ``zone``: the instants are the
    same, the encoders print local times with their offsets (as PostgreSQL prints them in its session zone)."""
    if zone == "UTC":
        return schema
    return pa.schema([f.with_type(_zoned(f.type, zone)) for f in schema], metadata=schema.metadata)


def _zoned(kind: pa.DataType, zone: str) -> pa.DataType:
    if pa.types.is_timestamp(kind) and kind.tz is not None:
        return pa.timestamp(kind.unit, tz=zone)
    if pa.types.is_list(kind):
        return pa.list_(kind.value_field.with_type(_zoned(kind.value_type, zone)))
    if pa.types.is_large_list(kind):
        return pa.large_list(kind.value_field.with_type(_zoned(kind.value_type, zone)))
    return kind


def pg_names(schema: pa.Schema) -> pa.Schema:
    """A result's column names as PostgreSQL gives them, repeated names included (``SELECT a.id, b.id`` has
    two columns ``id``, in Arrow and CSV as in psql); an engine's empty name is PostgreSQL's ``?column?``.
    Only the JSON formats, whose rows are objects keyed by name, key them apart (:func:`unique_names`)."""
    if all(f.name for f in schema):
        return schema
    fields = [f if f.name else f.with_name("?column?") for f in schema]
    return pa.schema(fields, metadata=schema.metadata)


def unique_names(schema: pa.Schema) -> pa.Schema:
    """Duplicate column names get a suffix (``a``, ``a_2``): the keys of JSON rows, which are objects keyed by
    name (the ``json`` format's ``columns`` say each key's ``friendly_name``: the column's own name)."""
    seen: dict[str, int] = {}
    fields = []
    for f in schema:
        name = f.name or "?column?"
        count = seen.get(name, 0) + 1
        seen[name] = count
        fields.append(f.with_name(name if count == 1 else f"{name}_{count}"))
    return pa.schema(fields, metadata=schema.metadata)

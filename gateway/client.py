"""lakegate's Python client: a PEP 249 (DB-API 2.0) connection to the gateway over HTTP, plus whole results as
Arrow tables and pandas DataFrames.

    import lakegate
    conn = lakegate.connect("http://127.0.0.1:8080", token="...")
    cur = conn.cursor()
    cur.execute("SELECT id, amount FROM lake.public.transactions WHERE user_id = %s", (42,))
    cur.fetchall()
    conn.query("SELECT * FROM lake.public.users").to_pandas()

Hand-written on httpx and pyarrow only (no DuckDB, no pyiceberg, pandas only inside ``to_pandas``), so that a
client install stays light. Every result travels as an Arrow IPC stream (``format=arrow``), so values keep
their exact types: decimals stay ``Decimal``, ``timestamptz`` stays an aware ``datetime`` in UTC, dates stay
dates.

Parameters: ``paramstyle = "pyformat"`` — ``%s`` with a sequence, ``%(name)s`` with a mapping, ``%%`` for a
literal ``%`` (placeholders inside literals and comments are ignored). The gateway takes SQL text only, so
values are bound client-side as literals (:mod:`lakegate.gateway.client_sql`).

The gateway is read-only and every statement is its own read-only transaction: ``commit()`` and ``rollback()``
do nothing. Exceptions (the standard tree; httpx errors are translated at this boundary)::

    Warning
    Error
    ├── InterfaceError          the client was misused, or the server's answer was not lakegate's
    └── DatabaseError           the gateway answered with an error; .code .message .line .column .status
        ├── DataError
        ├── OperationalError    cannot reach the gateway, unauthorized, timeout, too large, busy, cancelled
        ├── IntegrityError
        ├── InternalError       internal (500)
        ├── ProgrammingError    syntax_error, query_error, forbidden, not_found, bad_request, bad parameters
        └── NotSupportedError   unsupported, parameters without a portable literal
"""

from __future__ import annotations

import contextlib
import decimal
import io
import json
import os
import socket
import ssl
import sys
import threading
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import certifi
import httpx
import pyarrow as pa

from lakegate.gateway import client_sql
from lakegate.gateway.client_types import (  # the public surface, re-exported
    BINARY,
    DATETIME,
    NUMBER,
    ROWID,
    STRING,
    Binary,
    DatabaseError,
    DataError,
    Date,
    DateFromTicks,
    Error,
    IntegrityError,
    InterfaceError,
    InternalError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Time,
    TimeFromTicks,
    Timestamp,
    TimestampFromTicks,
    TypeCode,
    Warning,
    batch_rows,
    check_times,
    describe,
    error_from_body,
    infinities,
    numeric_text,
    temporal_values,
)

if TYPE_CHECKING:
    import pandas

apilevel = "2.0"
threadsafety = 2  # threads may share the module and connections (httpx.Client is thread-safe), not cursors
paramstyle = "pyformat"
DEFAULT_URL = "http://127.0.0.1:8080"
ARROW = "application/vnd.apache.arrow.stream"
READ_CHUNK = 1 << 16
OnTruncate = Literal["warn", "error"]
CANCELLED = "canceling statement due to user request"


# ----------------------------------------------------------------------------------------- transport


class _ResponseReader(io.RawIOBase):
    """A streaming HTTP body as a raw file (short reads); wrapped in a BufferedReader for
    ``pyarrow.ipc.open_stream``, which expects every read to be full until the end."""

    def __init__(self, response: httpx.Response) -> None:
        self._chunks = response.iter_bytes()
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, target: Any) -> int:
        while not self._buffer:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._buffer = chunk
        n = min(len(target), len(self._buffer))
        target[:n] = self._buffer[:n]
        self._buffer = self._buffer[n:]
        return n


@dataclass
class _Answer:
    """An open query response: the Arrow stream reader and what the headers told."""

    response: httpx.Response
    reader: pa.ipc.RecordBatchStreamReader
    route: str | None
    rows: int | None
    truncated: bool | None
    elapsed_ms: float | None
    max_rows: int | None


def _header_int(response: httpx.Response, name: str) -> int | None:
    value = response.headers.get(name)
    return int(value) if value is not None and value.isdigit() else None


class Connection:
    """A connection to one gateway. Cheap: HTTP connection pools; nothing is held on the server."""

    Warning, Error, InterfaceError, DatabaseError = Warning, Error, InterfaceError, DatabaseError
    DataError, OperationalError, IntegrityError = DataError, OperationalError, IntegrityError
    InternalError, ProgrammingError, NotSupportedError = InternalError, ProgrammingError, NotSupportedError

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout: float | None = None,
        max_rows: int | None = None,
        http_timeout: float = 600.0,
        on_truncate: OnTruncate = "warn",
    ) -> None:
        self.url = (url or os.environ.get("LAKEGATE_URL") or DEFAULT_URL).rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise InterfaceError(f"the gateway URL must start with http:// or https://, got {self.url!r}")
        if on_truncate not in ("warn", "error"):
            raise InterfaceError(f"on_truncate must be 'warn' or 'error', got {on_truncate!r}")
        token = token if token is not None else os.environ.get("LAKEGATE_TOKEN") or None
        self.timeout = timeout
        self.max_rows = max_rows
        self.on_truncate = on_truncate
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http_timeout = httpx.Timeout(http_timeout, connect=10.0)
        self._tls: ssl.SSLContext | None = None
        self._http = httpx.Client(base_url=self.url, headers=self._headers, timeout=self._http_timeout)
        self._cursors: weakref.WeakSet[Cursor] = weakref.WeakSet()
        self._closed = False
        self._lock = threading.Lock()

    # ----------------------------------------------------------------------------------------- PEP 249

    def cursor(self) -> Cursor:
        self._check()
        cursor = Cursor(self)
        self._cursors.add(cursor)
        return cursor

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            for cursor in list(self._cursors):
                cursor.close()
            self._http.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def commit(self) -> None:
        """Nothing to commit: the gateway is read-only."""
        self._check()

    def rollback(self) -> None:
        """Nothing to roll back: every statement is its own read-only transaction."""
        self._check()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------- extras

    def query(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> Result:
        """Run ``sql`` and read the whole result (as Arrow)."""
        cursor = self.cursor()
        try:
            cursor.execute(sql, params)
            table = cursor.fetch_arrow_table()
            return Result(table, cursor.route, cursor.truncated, cursor.elapsed_ms)
        finally:
            cursor.close()

    def schema(self) -> dict[str, Any]:
        """``GET /v1/schema``: sources, tables, columns and types."""
        return self._get_json("/v1/schema")

    def status(self) -> dict[str, Any]:
        """``GET /v1/status``: per lake table, committed position and lag."""
        return self._get_json("/v1/status")

    def explain(self, sql: str) -> dict[str, Any]:
        """``POST /v1/explain``: the route and the SQL each engine runs."""
        response = self._request("POST", "/v1/explain", json={"sql": sql})
        return response.json()  # type: ignore[no-any-return]

    # -------------------------------------------------------------------------------------- transport

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the connection is closed")

    def _get_json(self, path: str) -> dict[str, Any]:
        return self._request("GET", path).json()  # type: ignore[no-any-return]

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        self._check()
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise _transport_error(self.url, exc) from exc
        if response.status_code != 200:
            raise error_from_body(response.status_code, response.content)
        return response

    def _cursor_http(self) -> httpx.Client:
        """A cursor's own HTTP client: one connection, whose socket :meth:`Cursor.cancel` can shut down from
        another thread without touching the queries of other cursors."""
        with self._lock:
            if self._tls is None and self.url.startswith("https://"):
                # one per connection (building one costs ~10 ms); certifi's roots, as httpx's own default
                self._tls = ssl.create_default_context(cafile=certifi.where())
        transport = httpx.HTTPTransport(
            verify=self._tls if self._tls is not None else True, limits=httpx.Limits(max_connections=1)
        )
        return httpx.Client(
            base_url=self.url, headers=self._headers, timeout=self._http_timeout, transport=transport
        )

    def _query_body(self, sql: str) -> dict[str, Any]:
        body: dict[str, Any] = {"sql": sql, "format": "arrow"}
        if self.max_rows is not None:
            body["max_rows"] = self.max_rows
        if self.timeout is not None:
            body["timeout_ms"] = self.timeout * 1000
        return body


def _answer(url: str, response: httpx.Response) -> _Answer:
    """The opened Arrow stream of a query response (an error response is raised)."""
    if response.status_code != 200:
        raise error_from_body(response.status_code, response.read())
    if not response.headers.get("content-type", "").startswith(ARROW):
        raise InterfaceError(
            f"expected an Arrow stream from {url}/v1/query, got {response.headers.get('content-type')!r}"
        )
    try:
        reader = pa.ipc.open_stream(io.BufferedReader(_ResponseReader(response), READ_CHUNK))
    except (pa.ArrowException, OSError, httpx.HTTPError) as exc:
        raise OperationalError(f"the result stream from {url} could not be read: {exc}") from exc
    truncated = response.headers.get("x-lakegate-truncated")
    elapsed = response.headers.get("x-lakegate-elapsed-ms")
    return _Answer(
        response,
        reader,
        response.headers.get("x-lakegate-route"),
        _header_int(response, "x-lakegate-rows"),
        None if truncated is None else truncated == "true",
        float(elapsed) if elapsed else None,
        _header_int(response, "x-lakegate-max-rows"),
    )


def _transport_error(url: str, exc: httpx.HTTPError) -> Error:
    if isinstance(exc, httpx.TimeoutException):
        return OperationalError(f"the gateway at {url} did not answer in time ({type(exc).__name__}): {exc}")
    if isinstance(exc, httpx.TransportError):
        return OperationalError(f"cannot reach the lakegate gateway at {url}: {exc or type(exc).__name__}")
    return InterfaceError(f"HTTP request to {url} failed: {exc}")


def _caller_stacklevel() -> int:
    """The ``stacklevel`` of the first frame outside lakegate, so that a warning points at the user's line."""
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_globals.get("__name__", "").startswith("lakegate."):
        frame, level = frame.f_back, level + 1  # type: ignore[assignment]
    return level


class Cursor:
    """Runs statements and fetches their rows. Rows stream from the gateway as they are fetched."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.arraysize = 1
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1
        self.rownumber: int | None = None
        self.route: str | None = None
        self.truncated: bool | None = None
        self.elapsed_ms: float | None = None
        self.schema: pa.Schema | None = None
        self._answer: _Answer | None = None
        self._rows: list[tuple[Any, ...]] = []
        self._pos = 0
        self._received = 0
        self._done = True
        self._closed = False
        self._warned = False
        self._http: httpx.Client | None = None
        self._stream: Any = None  # the network stream of this cursor's HTTP connection, for cancel()
        self._cancelled = False

    # ----------------------------------------------------------------------------------------- PEP 249

    def execute(self, operation: str, parameters: Sequence[Any] | Mapping[str, Any] | None = None) -> Cursor:
        self._check()
        self._reset()
        try:
            sql = client_sql.bind(operation, parameters)
        except client_sql.UnsupportedValue as exc:
            raise NotSupportedError(str(exc)) from exc
        except client_sql.SqlTextError as exc:
            raise ProgrammingError(str(exc)) from exc
        answer = self._open(sql)
        self._answer = answer
        self.schema = answer.reader.schema
        self.description = describe(answer.reader.schema)
        self.route, self.elapsed_ms = answer.route, answer.elapsed_ms
        self.rowcount = answer.rows if answer.rows is not None else -1
        self.rownumber = 0
        self._done = False
        self._set_truncated(answer.truncated)
        return self

    def executemany(
        self, operation: str, seq_of_parameters: Sequence[Sequence[Any] | Mapping[str, Any]]
    ) -> Cursor:
        """Runs ``operation`` once per parameter set; the last result is the one fetched."""
        for parameters in seq_of_parameters:
            self.execute(operation, parameters)
        return self

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self._take(1)
        return rows[0] if rows else None

    def fetchmany(self, size: int | None = None) -> list[tuple[Any, ...]]:
        return self._take(self.arraysize if size is None else size)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._take(None)

    def close(self) -> None:
        self._reset()
        self._closed = True
        if self._http is not None:
            self._http.close()
            self._http = None

    def setinputsizes(self, sizes: Any) -> None:
        pass

    def setoutputsize(self, size: Any, column: int | None = None) -> None:
        pass

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        while (row := self.fetchone()) is not None:
            yield row

    def __enter__(self) -> Cursor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------------------------------- extras

    def cancel(self) -> None:
        """Cancel the running statement; safe to call from another thread. The cursor's HTTP connection is
        shut down, whether the query is still running or already streaming rows: the gateway sees the client
        go and cancels the engine query, and the waiting ``execute()`` or fetch raises an
        :class:`OperationalError` (``code="cancelled"``, SQLSTATE 57014)."""
        self._cancelled = True
        stream = self._stream
        if stream is None:
            return
        sock = stream.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):  # already closed
                sock.shutdown(socket.SHUT_RDWR)

    def fetch_arrow_table(self) -> pa.Table:
        """The rest of the result as an Arrow table (exact types)."""
        answer = self._answer_or_raise()
        batches = []
        if self._pos < len(self._rows):
            raise InterfaceError("fetch_arrow_table() cannot follow a partial fetchone()/fetchmany()")
        while (batch := self._next_batch(answer)) is not None:
            batches.append(batch)
        self._rows, self._pos = [], 0
        table = pa.Table.from_batches(batches, schema=answer.reader.schema)
        self.rownumber = (self.rownumber or 0) + table.num_rows
        return table

    # -------------------------------------------------------------------------------------- internals

    def _check(self) -> None:
        if self._closed:
            raise InterfaceError("the cursor is closed")
        self.connection._check()

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        """httpx's trace hook: remember the stream of each new connection (the only one of this cursor)."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            self._stream = info.get("return_value")
            if self._cancelled:  # cancel() came while the connection was being made
                self.cancel()

    def _open(self, sql: str) -> _Answer:
        """Send one query and open its Arrow stream (errors before the first row are raised here)."""
        conn = self.connection
        if self._http is None:
            self._http = conn._cursor_http()
            # a cursor dropped without close() still closes its connection when it is collected
            weakref.finalize(self, self._http.close)
        self._cancelled = False
        request = self._http.build_request(
            "POST",
            "/v1/query",
            json=conn._query_body(sql),
            headers={"Accept": ARROW},
            extensions={"trace": self._trace},
        )
        try:
            response = self._http.send(request, stream=True)
        except httpx.HTTPError as exc:
            raise self._cancel_error() or _transport_error(conn.url, exc) from exc
        try:
            return _answer(conn.url, response)
        except BaseException:
            response.close()
            raise

    def _cancel_error(self) -> Error | None:
        if not self._cancelled:
            return None
        return OperationalError(CANCELLED, code="cancelled")

    def _set_truncated(self, truncated: bool | None) -> None:
        """Record whether the row cap cut the result and, the first time it did, warn or raise."""
        self.truncated = truncated
        if not truncated or self._warned:
            return
        self._warned = True
        cap = self._answer.max_rows if self._answer is not None else None
        cap_text = f" of {cap} rows" if cap is not None else ""
        advice = "add a LIMIT, or raise max_rows in lakegate.connect() up to the server's [gateway] max_rows"
        if self.connection.on_truncate == "error":
            self._reset()
            raise DataError(f"the result has more rows than the gateway's row cap{cap_text}; {advice}",
                            code="truncated")  # fmt: skip
        message = f"the result was cut at the gateway's row cap{cap_text}: rows are missing; {advice}"
        warnings.warn(Warning(message), stacklevel=_caller_stacklevel())

    def _reset(self) -> None:
        if self._answer is not None:
            self._answer.response.close()
            self._answer = None
        self._rows, self._pos, self._done, self._received = [], 0, True, 0
        self.description, self.rowcount, self.rownumber, self.schema = None, -1, None, None
        self.route = self.truncated = self.elapsed_ms = None
        self._warned = False

    def _answer_or_raise(self) -> _Answer:
        self._check()
        if self._answer is None and self.description is None:
            raise ProgrammingError("no statement has been executed on this cursor")
        assert self._answer is not None or self._done
        return self._answer  # type: ignore[return-value]

    def _next_batch(self, answer: _Answer | None) -> pa.RecordBatch | None:
        if self._done or answer is None:
            return None
        try:
            batch, trailer = answer.reader.read_next_batch_with_custom_metadata()
        except StopIteration:
            self._finish(answer)
            return None
        except (pa.ArrowException, OSError, httpx.HTTPError) as exc:
            self._reset()
            raise self._cancel_error() or OperationalError(
                "the result stream ended early: the query failed after it had started sending rows "
                f"(the gateway's log says why): {exc}"
            ) from exc
        if trailer is not None and b"lakegate.truncated" in trailer:  # the gateway's last word on the result
            self.truncated = json.loads(trailer[b"lakegate.truncated"])
        self._received += batch.num_rows
        return batch

    def _finish(self, answer: _Answer) -> None:
        self._done = True
        answer.response.close()
        if self.rowcount < 0:
            self.rowcount = self._received
        truncated = self.truncated
        if truncated is None and answer.max_rows is not None:
            truncated = self.rowcount >= answer.max_rows > 0
        self._set_truncated(truncated)

    def _take(self, n: int | None) -> list[tuple[Any, ...]]:
        answer = self._answer_or_raise()
        out: list[tuple[Any, ...]] = []
        while n is None or len(out) < n:
            if self._pos >= len(self._rows):
                batch = self._next_batch(answer)
                if batch is None:
                    break
                self._rows, self._pos = batch_rows(batch), 0
                continue
            end = len(self._rows) if n is None else min(len(self._rows), self._pos + n - len(out))
            out.extend(self._rows[self._pos : end])
            self._pos = end
        self.rownumber = (self.rownumber or 0) + len(out)
        return out


@dataclass
class Result:
    """A whole query result. ``truncated`` is None when the gateway could not say (see the README)."""

    table: pa.Table
    route: str | None
    truncated: bool | None
    elapsed_ms: float | None

    def to_arrow(self) -> pa.Table:
        return self.table

    def to_pandas(self, *, arrow_dtypes: bool = False, **kwargs: Any) -> pandas.DataFrame:
        """A DataFrame. By default decimals are ``Decimal`` objects, ``timestamptz`` is
        ``datetime64[us, UTC]`` and dates are ``datetime.date`` objects (``numeric`` without precision, which
        travels as exact text, becomes ``Decimal`` too); ``arrow_dtypes=True`` keeps every column's Arrow type
        (``pd.ArrowDtype``). Other keyword arguments go to ``pyarrow.Table.to_pandas``.

        PostgreSQL's ``infinity``/``-infinity`` timestamps become the largest and smallest ``datetime64[us]``
        (year 294247 and its negative: what they are in Arrow), dates ``date.max``/``date.min``; a
        ``time '24:00'`` raises :class:`DataError`. Conversion failures are lakegate errors."""
        try:
            if arrow_dtypes:
                import pandas as pd

                kwargs.setdefault("types_mapper", pd.ArrowDtype)
                return self.table.to_pandas(**kwargs)
            table, python = self.table, self._python_columns()
            for i in python:  # Python values go in after the conversion (e.g. date.max, beyond pandas)
                table = table.set_column(i, table.field(i), pa.nulls(len(table), table.field(i).type))
            frame = table.to_pandas(**kwargs)
            for i, values in python.items():
                frame.isetitem(i, values)
            return frame
        except (pa.ArrowException, ValueError, OverflowError, TypeError) as exc:
            if isinstance(exc, Error):
                raise
            raise DataError(
                f"the result could not be converted to pandas ({type(exc).__name__}: {exc}); "
                "to_pandas(arrow_dtypes=True) or to_arrow() keep every value",
                code="data",
            ) from exc

    def _python_columns(self) -> dict[int, list[Any]]:
        """Columns pandas gets as Python objects of ours: exact numerics as ``Decimal``, dates with
        ±infinity; and a ``time '24:00'`` refused."""
        out: dict[int, list[Any]] = {}
        for i, field in enumerate(self.table.schema):
            column = self.table.column(i).combine_chunks()
            check_times(column, field)
            if numeric_text(field):  # exact text of an unbounded numeric -> Decimal
                out[i] = [None if v is None else decimal.Decimal(v) for v in column.to_pylist()]
            elif field.type == pa.date32() and len(column) and infinities(column) is not None:
                out[i] = temporal_values(column, field)
        return out

    def __len__(self) -> int:
        return self.table.num_rows


def connect(
    url: str | None = None,
    token: str | None = None,
    *,
    timeout: float | None = None,
    max_rows: int | None = None,
    http_timeout: float = 600.0,
    on_truncate: OnTruncate = "warn",
) -> Connection:
    """A connection to the gateway at ``url`` (default ``$LAKEGATE_URL``, else http://127.0.0.1:8080) with
    ``token`` (default ``$LAKEGATE_TOKEN``). ``timeout`` (seconds) and ``max_rows`` lower the server's limits
    for every query; ``http_timeout`` bounds the wait for any network read. A result cut at the row cap
    emits a :class:`lakegate.Warning` (``on_truncate="warn"``) or raises :class:`DataError`
    (``on_truncate="error"``, ``code="truncated"``)."""
    return Connection(
        url, token, timeout=timeout, max_rows=max_rows, http_timeout=http_timeout, on_truncate=on_truncate
    )


__all__ = [
    "BINARY",
    "DATETIME",
    "NUMBER",
    "ROWID",
    "STRING",
    "Binary",
    "Connection",
    "Cursor",
    "DataError",
    "DatabaseError",
    "Date",
    "DateFromTicks",
    "Error",
    "IntegrityError",
    "InterfaceError",
    "InternalError",
    "NotSupportedError",
    "OperationalError",
    "ProgrammingError",
    "Result",
    "Time",
    "TimeFromTicks",
    "Timestamp",
    "TimestampFromTicks",
    "TypeCode",
    "Warning",
    "apilevel",
    "connect",
    "paramstyle",
    "threadsafety",
]

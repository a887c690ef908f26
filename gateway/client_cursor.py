"""The cursor of :mod:`lakegate.gateway.client` (PEP 249): runs statements on its own HTTP connection and
fetches their rows as they stream in; warns of (or refuses) a result cut at the row cap; ``cancel()`` from
another thread."""

from __future__ import annotations

import contextlib
import json
import socket
import warnings
import weakref
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Protocol

import httpx
import pyarrow as pa

from lakegate.gateway import client_sql
from lakegate.gateway.client_stream import ARROW, Answer, caller_stacklevel, open_answer, transport_error
from lakegate.gateway.client_types import (
    DataError,
    Error,
    InterfaceError,
    NotSupportedError,
    OperationalError,
    ProgrammingError,
    Warning,
    batch_rows,
    describe,
)

CANCELLED = "canceling statement due to user request"


class Owner(Protocol):
    """What a cursor uses of its connection (:class:`lakegate.gateway.client.Connection`)."""

    @property
    def url(self) -> str: ...

    @property
    def on_truncate(self) -> str: ...

    def _check(self) -> None: ...

    def _cursor_http(self) -> httpx.Client: ...

    def _query_body(self, sql: str) -> dict[str, Any]: ...


class Cursor:
    """Runs statements and fetches their rows. Rows stream from the gateway as they are fetched."""

    def __init__(self, connection: Owner) -> None:
        self.connection = connection
        self.arraysize = 1
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1
        self.rownumber: int | None = None
        self.route: str | None = None
        self.truncated: bool | None = None
        self.elapsed_ms: float | None = None
        #: the source position (PostgreSQL LSN ``X/Y``) at which the lake tables were read, all at one position
        self.source_lsn: str | None = None
        self.schema: pa.Schema | None = None
        self._answer: Answer | None = None
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
        self.route, self.elapsed_ms, self.source_lsn = answer.route, answer.elapsed_ms, answer.source_lsn
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

    def _open(self, sql: str) -> Answer:
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
            raise self._cancel_error() or transport_error(conn.url, exc) from exc
        try:
            return open_answer(conn.url, response)
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
        warnings.warn(Warning(message), stacklevel=caller_stacklevel())

    def _reset(self) -> None:
        if self._answer is not None:
            self._answer.response.close()
            self._answer = None
        self._rows, self._pos, self._done, self._received = [], 0, True, 0
        self.description, self.rowcount, self.rownumber, self.schema = None, -1, None, None
        self.route = self.truncated = self.elapsed_ms = self.source_lsn = None
        self._warned = False

    def _answer_or_raise(self) -> Answer:
        self._check()
        if self._answer is None and self.description is None:
            raise ProgrammingError("no statement has been executed on this cursor")
        assert self._answer is not None or self._done
        return self._answer  # type: ignore[return-value]

    def _next_batch(self, answer: Answer | None) -> pa.RecordBatch | None:
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

    def _finish(self, answer: Answer) -> None:
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

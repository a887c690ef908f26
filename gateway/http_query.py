"""``POST /v1/query`` on the event loop: admission, one worker-thread call per query, and streaming.

A query's life: wait for a worker slot (503 at once when the queue is full) -> one call on the bounded thread pool
parses, guards and routes the statement, starts the engine and reads up to ``PREFETCH_BYTES`` of rows -> a whole
result of at most ``SMALL_BYTES`` is encoded in that same call and answered as one response with its length;
anything larger streams (the rows read so far first, then a thread-pool call per batch), so that memory stays
bounded. While the first call runs the loop watches for the client going away and cancels the
engine query.

Why one call: every hop between the event loop and a worker thread costs a wake-up of the loop and of a thread
(tens of microseconds each, more under load); the first version made four or five hops for a small result
(prepare, start, two reads, close) and streamed even a one-row answer. Profiling a small lake query with py-spy
showed those hops and the streaming machinery as the largest cost after parsing and the engine.

An error before the first byte gets its status and the error body (a result over ``max_result_bytes`` within the
first ``PREFETCH_BYTES`` is a 413). An error after streaming began (the size cap reached mid-stream, the time
limit, the engine failing) can no longer change the 200: every format then says that the rows sent are not the
whole result, in its own way, and none ends as a complete answer would. JSON ends with ``"truncated": true`` and
an ``"error"`` member (the same object an error response has: code, message, SQLSTATE), so that a client reading
only ``rows`` and ``truncated`` (Redash) still sees a cut result, and one reading ``error`` sees why; NDJSON ends
with an ``{"error": ...}`` line; CSV and Arrow streams are cut off before their end (no Arrow end-of-stream
marker nor trailer batch; the HTTP chunked body is left incomplete, which every HTTP client reports).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pyarrow as pa
from fastapi import Request
from fastapi.responses import Response, StreamingResponse

from lakegate.gateway import encoders
from lakegate.gateway.errors import ClientGone, GatewayError, Unavailable
from lakegate.gateway.execute import CLIENT, Execution
from lakegate.gateway.service import Gateway

log = logging.getLogger("lakegate.gateway")
T = TypeVar("T")
PREFETCH_BYTES = 4 << 20
SMALL_BYTES = 1 << 20  #: Arrow bytes of a result answered in one piece (its JSON can be several times larger)
POLL_SECONDS = 0.1


class Admission:
    """At most ``workers`` queries run; at most ``max_queue`` wait; beyond that, 503 at once."""

    def __init__(self, workers: int, max_queue: int, gateway: Gateway) -> None:
        self.semaphore = asyncio.Semaphore(max(1, workers))
        self.max_queue = max_queue
        self.gateway = gateway

    async def acquire(self, timeout: float) -> None:
        metrics = self.gateway.metrics
        if self.semaphore.locked() and metrics.waiting >= self.max_queue:
            metrics.rejected += 1
            raise Unavailable(
                f"the gateway is busy ({metrics.in_flight} queries running, {metrics.waiting} "
                "waiting); retry in a moment"
            )
        metrics.waiting += 1
        try:
            await asyncio.wait_for(self.semaphore.acquire(), timeout)
        except TimeoutError:
            metrics.rejected += 1
            raise Unavailable(f"the gateway is busy: no worker became free within {timeout:g} s") from None
        finally:
            metrics.waiting -= 1
        metrics.in_flight += 1

    def release(self) -> None:
        self.gateway.metrics.in_flight -= 1
        self.semaphore.release()


class Job:
    """A query being prepared in a worker thread: a cancel that arrives before its execution exists is applied
    as soon as it does."""

    def __init__(self) -> None:
        self.execution: Execution | None = None
        self.reason: str | None = None
        self._lock = threading.Lock()

    def attach(self, execution: Execution) -> None:
        with self._lock:
            self.execution = execution
            reason = self.reason
        if reason is not None:
            execution.cancel(reason)

    def cancel(self, reason: str = CLIENT) -> None:
        with self._lock:
            self.reason = self.reason or reason
            execution = self.execution
        if execution is not None:
            execution.cancel(reason)


class Runner:
    """Runs blocking gateway calls on the bounded pool, cancelling the job when the client goes away."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def watched(self, request: Request, job: Job, fn: Callable[..., First], *args: Any) -> First:
        future = asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=POLL_SECONDS)
                if done:
                    return future.result()
                if await request.is_disconnected():
                    job.cancel(CLIENT)
                    await asyncio.wait({future})
                    future.result()  # raises ClientGone (the engine saw the cancel)
                    raise ClientGone("the client went away; the query was cancelled")
        except asyncio.CancelledError:
            job.cancel(CLIENT)
            future.add_done_callback(_close_abandoned)
            raise


def _close_abandoned(future: asyncio.Future[First]) -> None:
    """The request was cancelled while its first call ran: whatever that call produced is closed."""
    if not future.cancelled() and future.exception() is None:
        future.result().execution.close()


@dataclass
class First:
    """What the first worker call returns: the execution, the rows read so far, and the whole response body
    when the result was complete."""

    execution: Execution
    batches: Iterator[pa.RecordBatch]
    buffered: list[pa.RecordBatch] = field(default_factory=list)
    complete: bool = False
    body: bytes | None = None  #: the whole response, for a small complete result


def begin(gateway: Gateway, job: Job, body: Any, fmt: str) -> First:
    """In a worker thread: prepare, start, read up to PREFETCH_BYTES; encode the result if that was all of it."""
    execution = gateway.prepare(
        body.sql, max_rows=body.max_rows, timeout_ms=body.timeout_ms, time_zone=body.time_zone
    )
    job.attach(execution)
    try:
        execution.start()
        first = First(execution, execution.batches())
        size = 0
        while size < PREFETCH_BYTES:
            batch = next(first.batches, None)
            if batch is None:
                first.complete = True
                break
            first.buffered.append(batch)
            size += batch.nbytes
        if first.complete and size <= SMALL_BYTES:
            encoder = encoders.encoder(fmt)
            parts = [encoder.header(execution.schema)]
            parts += [encoder.batch(b) for b in first.buffered]
            parts.append(encoder.footer(meta(execution)))
            first.body = b"".join(parts)
            first.buffered = []
        return first
    except BaseException:
        execution.cancel(CLIENT if job.reason else "failed")
        execution.close()
        raise


async def run_query(
    request: Request,
    gateway: Gateway,
    runner: Runner,
    admission: Admission,
    body: Any,
    fmt: str,
) -> Response:
    """Answer one admitted query (the caller releases ``admission`` if this raises)."""
    job = Job()
    try:
        first = await runner.watched(request, job, begin, gateway, job, body, fmt)
    except BaseException as exc:
        if job.execution is not None:
            observe(gateway, job.execution, exc)
        raise
    execution = first.execution
    request.state.route = execution.route
    encoder = encoders.encoder(fmt)
    headers = {"X-Lakegate-Route": execution.route, "X-Lakegate-Max-Rows": str(execution.limits.max_rows)}
    if execution.source_lsn is not None:
        headers["X-Lakegate-Source-Lsn"] = execution.source_lsn
    if first.complete:
        headers.update(
            {
                "X-Lakegate-Truncated": str(execution.truncated).lower(),
                "X-Lakegate-Rows": str(execution.rows),
                "X-Lakegate-Elapsed-Ms": str(execution.elapsed_ms),
            }
        )
    if first.body is not None:
        admission.release()
        observe(gateway, execution, None)
        return Response(first.body, media_type=encoder.media_type, headers=headers)
    stream = _stream(gateway, runner, admission, first, encoder, fmt)
    return StreamingResponse(stream, media_type=encoder.media_type, headers=headers)


async def _stream(
    gateway: Gateway,
    runner: Runner,
    admission: Admission,
    first: First,
    encoder: encoders.Encoder,
    fmt: str,
) -> AsyncIterator[bytes]:
    execution = first.execution
    error: BaseException | None = None
    try:
        yield encoder.header(execution.schema)
        for batch in first.buffered:
            yield encoder.batch(batch)
        first.buffered.clear()
        while True:
            batch = await runner.call(_next, first.batches)
            if batch is None:
                break
            yield encoder.batch(batch)
        yield encoder.footer(meta(execution))
    except GatewayError as exc:
        error = exc
        log.warning("query failed while streaming (%s): %s", exc.code, exc.message)
        if fmt not in (encoders.JSON, encoders.NDJSON):
            raise StreamCut(exc.message) from exc
        yield encoder.footer({**meta(execution), "truncated": True, **exc.body()})  # the rows are a prefix
    except BaseException as exc:  # cancelled (client gone) or an unexpected failure
        error = exc
        execution.cancel(CLIENT)
        raise
    finally:
        runner.pool.submit(execution.close)
        admission.release()
        observe(gateway, execution, error)


class StreamCut(Exception):
    """A CSV or Arrow result that failed after its first bytes: raised out of the response so that the server
    closes the connection without the chunked body's end, and no client takes the prefix for the whole. Said
    once, as the warning above; :class:`QuietCuts` keeps the server from adding a traceback of it."""


class QuietCuts(logging.Filter):
    """On uvicorn's error log: drops "Exception in ASGI application" records whose exception is a
    :class:`StreamCut` (alone or inside an exception group), which is how a result is cut, not a fault."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]
        return not isinstance(exc, StreamCut)


def _next(iterator: Iterator[pa.RecordBatch]) -> pa.RecordBatch | None:
    return next(iterator, None)


def meta(execution: Execution) -> dict[str, Any]:
    out = {"truncated": execution.truncated, "elapsed_ms": execution.elapsed_ms, "route": execution.route}
    if execution.source_lsn is not None:
        out["source_lsn"] = execution.source_lsn
    return out


def observe(gateway: Gateway, execution: Execution, error: BaseException | None) -> None:
    if error is None:
        code = "ok"
    elif isinstance(error, GatewayError):
        code = error.code
    elif isinstance(error, asyncio.CancelledError):
        code = "client_closed"
    else:
        code = "internal"
    gateway.metrics.observe(execution.route, code, execution.elapsed_ms / 1000, execution.rows)

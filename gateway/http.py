"""The HTTP front end (FastAPI + uvicorn) on :class:`gateway.service.Gateway`: routes, auth, admission, streaming,
and the one error handler.

A query's life: authenticate -> wait for a worker slot (503 at once when the queue is full) -> parse, guard and
route in a worker thread -> start the engine and read up to ``PREFETCH_BYTES`` of rows while watching for the
client going away (then the engine query is cancelled) -> answer with the right status, streaming the rest.
Engine calls run on a bounded thread pool; the event loop never blocks on an engine.

An error before the first byte gets its status and the error body; an error after streaming began can no longer
change the status: JSON ends with an ``"error"`` member, NDJSON with an ``{"error": ...}`` line, CSV and Arrow
streams are cut off (the client sees an incomplete response).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hmac
import ipaddress
import logging
import signal
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

import pyarrow as pa
import uvicorn
from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from gateway import encoders
from gateway.errors import BadRequest, ClientGone, GatewayError, NotFound, TooLarge, Unauthorized, Unavailable
from gateway.execute import CLIENT, Execution
from gateway.service import Gateway
from lakegate.settings import GatewaySettings, Settings, SettingsError

log = logging.getLogger("lakegate.gateway")
T = TypeVar("T")

MAX_SQL_BYTES = 1 << 20
PREFETCH_BYTES = 4 << 20
POLL_SECONDS = 0.1
ACCEPT = {
    "application/x-ndjson": encoders.NDJSON,
    "application/ndjson": encoders.NDJSON,
    "text/csv": encoders.CSV,
    "application/vnd.apache.arrow.stream": encoders.ARROW,
    "application/json": encoders.JSON,
}


class QueryRequest(BaseModel):
    sql: str = Field(description="One SQL statement (PostgreSQL dialect).")
    format: Literal["json", "ndjson", "csv", "arrow"] | None = Field(
        default=None, description="Result format; default from the Accept header, else json."
    )
    max_rows: int | None = Field(default=None, description="Row cap (at most the server's max_rows).")
    timeout_ms: float | None = Field(default=None, description="Time limit (at most the server's timeout).")


class ExplainRequest(BaseModel):
    sql: str


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


# ---------------------------------------------------------------------------------------------------- auth


def _token(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "bearer":
        return value.strip()
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or user
    return None


def authorize(request: Request) -> None:
    """Bearer token, or HTTP Basic auth with the token as password (what Redash's JSON data source sends)."""
    tokens = request.app.state.gateway.settings.gateway.tokens
    if not tokens:
        return
    token = _token(request)
    if token is None:
        raise Unauthorized(
            "this gateway needs a token: send 'Authorization: Bearer <token>', or HTTP Basic auth "
            "with the token as password"
        )
    if not any(hmac.compare_digest(token.encode(), t.encode()) for t in tokens):
        raise Unauthorized("the token is not valid")


# ------------------------------------------------------------------------------------------------ helpers


def _format(body: QueryRequest, request: Request) -> str:
    if body.format:
        return body.format
    for part in request.headers.get("accept", "").split(","):
        fmt = ACCEPT.get(part.split(";")[0].strip().lower())
        if fmt:
            return fmt
    return encoders.JSON


def _next(iterator: Iterator[pa.RecordBatch]) -> pa.RecordBatch | None:
    return next(iterator, None)


class Runner:
    """Runs blocking gateway calls on the bounded pool, cancelling the execution when the client goes away."""

    def __init__(self, pool: ThreadPoolExecutor) -> None:
        self.pool = pool

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    async def watched(self, request: Request, execution: Execution, fn: Callable[..., T], *args: Any) -> T:
        future = asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)
        try:
            while True:
                done, _ = await asyncio.wait({future}, timeout=POLL_SECONDS)
                if done:
                    return future.result()
                if await request.is_disconnected():
                    execution.cancel(CLIENT)
                    await asyncio.wait({future})
                    future.result()  # raises ClientGone (the engine saw the cancel)
                    raise ClientGone("the client went away; the query was cancelled")
        except asyncio.CancelledError:
            execution.cancel(CLIENT)
            raise


# ------------------------------------------------------------------------------------------------ the app


def create_app(gateway: Gateway, *, own_gateway: bool = False) -> FastAPI:
    """The FastAPI app. With ``own_gateway`` the app opens and closes the gateway in its lifespan."""
    cfg = gateway.settings.gateway
    pool = ThreadPoolExecutor(max_workers=cfg.workers + 4, thread_name_prefix="lakegate-query")
    runner = Runner(pool)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if gateway._guard is None:
            await runner.call(gateway.open)
        app.state.admission = Admission(cfg.workers, cfg.max_queue, gateway)
        yield
        if own_gateway:
            await runner.call(gateway.close)
            pool.shutdown(wait=False, cancel_futures=True)

    app = FastAPI(
        title="lakegate gateway",
        version="0.1.0",
        lifespan=lifespan,
        description="Federated SQL over the Iceberg lake and live PostgreSQL. See README 'Gateway'.",
    )
    app.state.gateway = gateway
    _install_handlers(app)
    auth = [Depends(authorize)]

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post(
        "/v1/query",
        tags=["query"],
        dependencies=auth,
        responses={200: {"content": {m: {} for m in encoders.MEDIA_TYPES.values()}}},
    )
    async def query(body: QueryRequest, request: Request) -> Response:
        if len(body.sql.encode()) > MAX_SQL_BYTES:
            raise TooLarge(f"the SQL text is longer than {MAX_SQL_BYTES} bytes")
        fmt = _format(body, request)
        admission: Admission = request.app.state.admission
        limits = gateway.limits(body.max_rows, body.timeout_ms)
        await admission.acquire(limits.timeout)
        try:
            return await _run_query(request, gateway, runner, admission, body, fmt)
        except BaseException:
            admission.release()
            raise

    @app.post("/v1/explain", tags=["query"], dependencies=auth)
    async def explain(body: ExplainRequest) -> dict[str, Any]:
        return await runner.call(gateway.explain, body.sql)

    @app.get("/v1/schema", tags=["catalog"], dependencies=auth)
    async def schema() -> dict[str, Any]:
        return await runner.call(gateway.schema)

    @app.get("/v1/status", tags=["catalog"], dependencies=auth)
    async def status() -> dict[str, Any]:
        return await runner.call(gateway.status)

    @app.get("/metrics", tags=["ops"], dependencies=auth, response_class=PlainTextResponse)
    async def metrics() -> PlainTextResponse:
        try:
            figures = await runner.call(gateway.status)
        except GatewayError:
            figures = None
        return PlainTextResponse(gateway.metrics.render(figures), media_type="text/plain; version=0.0.4")

    return app


async def _run_query(
    request: Request, gateway: Gateway, runner: Runner, admission: Admission, body: QueryRequest, fmt: str
) -> Response:
    execution = await runner.call(
        lambda: gateway.prepare(body.sql, max_rows=body.max_rows, timeout_ms=body.timeout_ms)
    )
    request.state.route = execution.route
    try:
        await runner.watched(request, execution, execution.start)
        batches = execution.batches()
        buffered: list[pa.RecordBatch] = []
        complete = False
        while sum(b.nbytes for b in buffered) < PREFETCH_BYTES:
            batch = await runner.watched(request, execution, _next, batches)
            if batch is None:
                complete = True
                break
            buffered.append(batch)
    except BaseException as exc:
        execution.cancel(CLIENT if not isinstance(exc, GatewayError) else "failed")
        runner.pool.submit(execution.close)
        _observe(gateway, execution, exc)
        raise
    encoder = encoders.encoder(fmt)
    headers = {"X-Lakegate-Route": execution.route, "X-Lakegate-Max-Rows": str(execution.limits.max_rows)}
    if complete:
        headers.update(
            {
                "X-Lakegate-Truncated": str(execution.truncated).lower(),
                "X-Lakegate-Rows": str(execution.rows),
                "X-Lakegate-Elapsed-Ms": str(execution.elapsed_ms),
            }
        )
    stream = _stream(gateway, runner, admission, execution, encoder, fmt, buffered, batches, complete)
    return StreamingResponse(stream, media_type=encoder.media_type, headers=headers)


async def _stream(
    gateway: Gateway,
    runner: Runner,
    admission: Admission,
    execution: Execution,
    encoder: encoders.Encoder,
    fmt: str,
    buffered: list[pa.RecordBatch],
    batches: Iterator[pa.RecordBatch],
    complete: bool,
) -> AsyncIterator[bytes]:
    error: BaseException | None = None
    try:
        yield encoder.header(execution.schema)
        for batch in buffered:
            yield encoder.batch(batch)
        buffered.clear()
        while not complete:
            batch = await runner.call(_next, batches)
            if batch is None:
                break
            yield encoder.batch(batch)
        yield encoder.footer(_meta(execution))
    except GatewayError as exc:
        error = exc
        log.warning("query failed while streaming (%s): %s", exc.code, exc.message)
        if fmt not in (encoders.JSON, encoders.NDJSON):
            raise
        yield encoder.footer({**_meta(execution), **exc.body()})
    except BaseException as exc:  # cancelled (client gone) or an unexpected failure
        error = exc
        execution.cancel(CLIENT)
        raise
    finally:
        runner.pool.submit(execution.close)
        admission.release()
        _observe(gateway, execution, error)


def _meta(execution: Execution) -> dict[str, Any]:
    return {"truncated": execution.truncated, "elapsed_ms": execution.elapsed_ms, "route": execution.route}


def _observe(gateway: Gateway, execution: Execution, error: BaseException | None) -> None:
    code = (
        "ok"
        if error is None
        else (
            error.code
            if isinstance(error, GatewayError)
            else "client_closed"
            if isinstance(error, asyncio.CancelledError)
            else "internal"
        )
    )
    gateway.metrics.observe(execution.route, code, execution.elapsed_ms / 1000, execution.rows)


class RequestIds:
    """Pure ASGI middleware: a request id per request (the client's X-Request-Id when sane), echoed in the
    response. (Starlette's BaseHTTPMiddleware would hide client disconnects from the endpoints.)"""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        given = dict(scope.get("headers") or []).get(b"x-request-id", b"").decode("latin-1")
        rid = given if 0 < len(given) <= 64 and given.replace("-", "").isalnum() else uuid.uuid4().hex[:16]
        scope.setdefault("state", {})["request_id"] = rid

        async def send_with_id(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"x-request-id"]
                message = {**message, "headers": [*headers, (b"x-request-id", rid.encode())]}
            await send(message)

        await self.app(scope, receive, send_with_id)


def _install_handlers(app: FastAPI) -> None:
    app.add_middleware(RequestIds)

    def render(request: Request, error: GatewayError) -> JSONResponse:
        rid = getattr(request.state, "request_id", None)
        headers = {"X-Request-Id": rid} if rid else {}
        if isinstance(error, Unauthorized):
            headers["WWW-Authenticate"] = 'Bearer realm="lakegate", Basic realm="lakegate"'
        return JSONResponse(error.body(rid), status_code=error.status, headers=headers)

    @app.exception_handler(GatewayError)
    async def gateway_error(request: Request, exc: GatewayError) -> JSONResponse:
        if exc.status >= 500 and exc.status != 503:
            log.error("request %s failed: %s", getattr(request.state, "request_id", "-"), exc.message)
        return render(request, exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body') or 'body'}: {e.get('msg')}"
            for e in exc.errors()
        )
        return render(request, BadRequest(f"invalid request: {problems}"))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        error = (
            NotFound(f"no such endpoint: {request.method} {request.url.path}")
            if exc.status_code == 404
            else GatewayError(str(exc.detail), code="http_error")
        )
        error.status = exc.status_code
        return render(request, error)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        rid = getattr(request.state, "request_id", "-")
        log.exception("request %s failed with an unexpected error", rid)
        return render(
            request, GatewayError(f"internal error; the server log has the details under request id {rid}")
        )


# ---------------------------------------------------------------------------------------------- serving


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_bind(cfg: GatewaySettings) -> None:
    if not cfg.tokens and not is_loopback(cfg.host):
        raise SettingsError(
            f"gateway.host = {cfg.host!r} is not a loopback address and no token is configured: "
            "anyone who can reach the port could query every source. Set [gateway] tokens (or "
            "LAKEGATE_GATEWAY__TOKENS), or bind to 127.0.0.1"
        )


class _Server(uvicorn.Server):
    """uvicorn re-raises SIGTERM/SIGINT after a graceful shutdown (the process then dies of the signal); we stop
    gracefully and exit 0, like ``lakegate ingest``. A second signal stops at once."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        previous = {sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def serve(settings: Settings) -> None:
    """``lakegate serve``: run the gateway until SIGTERM/SIGINT."""
    check_bind(settings.gateway)
    gateway = Gateway(settings)
    app = create_app(gateway, own_gateway=True)
    config = uvicorn.Config(
        app,
        host=settings.gateway.host,
        port=settings.gateway.port,
        log_level="info",
        timeout_graceful_shutdown=5,
    )
    _Server(config).run()

"""The HTTP front end (FastAPI + uvicorn) on :class:`lakegate.gateway.service.Gateway`: routes, auth and the one error
handler. How a query is admitted, run and streamed is :mod:`lakegate.gateway.http_query`; engine calls run on a bounded
thread pool, the event loop never blocks on an engine. Authentication is a coroutine: FastAPI runs a plain
function dependency on a worker thread, a hop per request for a few comparisons.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import ipaddress
import logging
import resource
import signal
import sys
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from typing import Any, Literal, TypeVar

import uvicorn
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from lakegate.connectors.config import SettingsError
from lakegate.gateway import deadline, encoders, isolate, memory, pggrammar
from lakegate.gateway.config import GatewaySettings
from lakegate.gateway.errors import BadRequest, GatewayError, NotFound, Unauthorized, Unavailable
from lakegate.gateway.http_limits import Admit, protocol
from lakegate.gateway.http_query import Admission, QuietCuts, Runner, run_query
from lakegate.gateway.service import Gateway

log = logging.getLogger("lakegate.gateway")
T = TypeVar("T")
SWITCH_INTERVAL = 0.001  #: seconds a thread holds the interpreter lock when another wants it (see serve())

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
    time_zone: str | None = Field(
        default=None,
        description="Session time zone (IANA name, e.g. 'Europe/Paris'; default [gateway] time_zone): how "
        "timestamptz values display and what ::date, date_trunc, extract and timestamp literals mean.",
    )


class ExplainRequest(BaseModel):
    sql: str
    timeout_ms: float | None = Field(default=None, description="Time limit (at most the server's timeout).")
    time_zone: str | None = Field(default=None, description="Session time zone (as for /v1/query).")


# ------------------------------------------------------------------------------------------------ helpers


def _check_text(sql: str) -> None:
    """JSON may carry lone surrogates (``"\\ud800"``), which no engine can take."""
    try:
        sql.encode()
    except UnicodeEncodeError as exc:
        raise BadRequest(
            f"the SQL is not valid Unicode: an unpaired surrogate ({sql[exc.start]!a}) at character "
            f"{exc.start + 1}; send UTF-8 text"
        ) from None


def _format(body: QueryRequest, request: Request) -> str:
    if body.format:
        return body.format
    for part in request.headers.get("accept", "").split(","):
        fmt = ACCEPT.get(part.split(";")[0].strip().lower())
        if fmt:
            return fmt
    return encoders.JSON


class Large:
    """Requests whose statement is heavy (:func:`lakegate.gateway.pggrammar.heavy`: over 16 KiB, or with long
    runs of operator characters) take a turn here before a worker slot: at most ``size`` at once, until their
    first rows (issue 27.4). sqlglot parses and plans such a statement in Python for up to seconds, and it may
    wait for PostgreSQL's parser process until its deadline: ten clients sending them would otherwise hold every
    worker, and each one more planned at once makes every small query wait at the interpreter lock (measured with
    bench/gateway.py (f) on 2 cores: p99 of SELECT 1 1.0-1.3x the idle gateway's with one at a time, 2-2.5x with
    two; planning is Python under one interpreter lock, so two at once are not faster anyway). A statement
    that gets no turn within its time limit is a 503, like a full queue."""

    def __init__(self, size: int, max_queue: int) -> None:
        self.semaphore = asyncio.Semaphore(max(1, size))
        self.size = size
        self.max_queue = max_queue
        self.waiting = 0

    @contextlib.asynccontextmanager
    async def turn(self, sql: str, timeout: float) -> AsyncIterator[None]:
        if not pggrammar.heavy(sql):
            yield
            return
        if self.semaphore.locked() and self.waiting >= self.max_queue:
            raise Unavailable(f"the gateway is busy: {self.waiting} large statements wait; retry in a moment")
        self.waiting += 1
        try:
            await asyncio.wait_for(self.semaphore.acquire(), timeout)
        except TimeoutError:
            raise Unavailable(
                f"the gateway is busy: {self.size} large statement(s) (over {pggrammar.HEAVY_CHARS} characters, or "
                f"with long runs of operator characters) are being planned and none finished within {timeout:g} s "
                "([gateway] large_statements)"
            ) from None
        finally:
            self.waiting -= 1
        try:
            yield
        finally:
            self.semaphore.release()


# ------------------------------------------------------------------------------------------------ the app


def create_app(gateway: Gateway, *, own_gateway: bool = False) -> FastAPI:
    """The FastAPI app. With ``own_gateway`` the app opens and closes the gateway in its lifespan."""
    cfg = gateway.config
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, QuietCuts) for f in uvicorn_log.filters):
        uvicorn_log.addFilter(QuietCuts())
    pool = ThreadPoolExecutor(max_workers=cfg.workers + 4, thread_name_prefix="lakegate-query")
    runner = Runner(pool)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if gateway._guard is None:
            await runner.call(gateway.open)
        app.state.admission = Admission(cfg.workers, cfg.max_queue, gateway)
        app.state.large = Large(cfg.large_statements, cfg.max_queue)
        isolate.POOL.configure(cfg.parser_processes)
        await runner.call(isolate.POOL.warm)
        yield
        if own_gateway:
            await runner.call(gateway.close)
            pool.shutdown(wait=False, cancel_futures=True)
            isolate.POOL.close()

    app = FastAPI(
        title="lakegate gateway",
        version="0.1.0",
        lifespan=lifespan,
        description="Federated SQL over the Iceberg lake and live PostgreSQL. See README 'Gateway'.",
    )
    app.state.gateway = gateway
    app.add_middleware(Admit, config=cfg)  # inside RequestIds: refusals carry the request id
    _install_handlers(app)

    @app.get("/healthz", tags=["ops"])
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.post(
        "/v1/query",
        tags=["query"],
        responses={200: {"content": {m: {} for m in encoders.MEDIA_TYPES.values()}}},
    )
    async def query(body: QueryRequest, request: Request) -> Response:
        _check_text(body.sql)
        fmt = _format(body, request)
        admission: Admission = request.app.state.admission
        limits = gateway.limits(body.max_rows, body.timeout_ms, body.time_zone)
        async with request.app.state.large.turn(body.sql, limits.timeout):
            await admission.acquire(limits.timeout)
            try:
                return await run_query(request, gateway, runner, admission, body, fmt)
            except BaseException:
                admission.release()
                raise

    async def admitted(request: Request, timeout: float, fn: Callable[..., T], *args: Any) -> T:
        """Every endpoint that works on the engines or catalogs takes a worker slot like a query does."""
        admission: Admission = request.app.state.admission
        await admission.acquire(timeout)
        try:
            return await runner.call(fn, *args)
        finally:
            admission.release()

    @app.post("/v1/explain", tags=["query"])
    async def explain(body: ExplainRequest, request: Request) -> dict[str, Any]:
        _check_text(body.sql)
        timeout = gateway.limits(None, body.timeout_ms).timeout
        async with request.app.state.large.turn(body.sql, timeout):
            return await admitted(
                request, timeout, gateway.explain, body.sql, body.timeout_ms, body.time_zone
            )

    @app.get("/v1/schema", tags=["catalog"])
    async def schema(request: Request) -> dict[str, Any]:
        return await admitted(request, cfg.timeout, gateway.schema)

    @app.get("/v1/status", tags=["catalog"])
    async def status(request: Request) -> dict[str, Any]:
        return await admitted(request, cfg.timeout, gateway.status)

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    async def metrics(request: Request) -> PlainTextResponse:
        try:  # a busy gateway still reports its own figures (without waiting for a slot)
            figures = await admitted(request, 0.001, gateway.status)
        except GatewayError:  # busy, or the lake's catalog is down
            figures = {"tables": [], "cache": gateway.cache_figures()}
        return PlainTextResponse(gateway.metrics.render(figures), media_type="text/plain; version=0.0.4")

    return app


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
        if isinstance(error, Unavailable):
            headers["Retry-After"] = "1"  # busy or a source down: worth trying again shortly
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


def serve(gateway: Gateway) -> None:
    """``lakegate serve``: run ``gateway`` (not opened yet) over HTTP until SIGTERM/SIGINT."""
    check_bind(gateway.config)
    deadline.quiet_unraisable()
    try:
        gateway.check_roles()
        gateway.open()
        memory.cap(gateway.duckdb.memory_limit(), gateway.config.memory_margin)
    except BaseException:
        gateway.close()
        raise
    app = create_app(gateway, own_gateway=True)
    # What exists now (modules, the app, the opened engines: about 200,000 objects) lives as long as the process:
    # frozen out of the collector's full passes, which otherwise walked it all every few thousand queries (a
    # 50-160 ms pause of every request in flight, measured under bench/gateway.py (d)).
    gc.collect()
    gc.freeze()
    # A thread that wants the interpreter lock waits up to the switch interval for the thread holding it: the event
    # loop and every small query wait that long at each hand-over while a large statement is parsed in Python (up
    # to seconds). 1 ms instead of 5: a ping through a socket pair, 4 hand-overs, while two threads parse 1 MiB
    # of SQL went from 21 / 97 ms (p50 / p99) to 3.7 / 31 ms; CPU-bound threads only switch more often.
    sys.setswitchinterval(SWITCH_INTERVAL)
    _Server(server_config(app, gateway.config)).run()


def server_config(app: FastAPI, cfg: GatewaySettings, **overrides: Any) -> uvicorn.Config:
    """uvicorn's settings for the gateway: request heads and bodies within ``read_timeout``, at most
    ``max_connections`` open connections, as many as the process may open files for (see
    :mod:`lakegate.gateway.http_limits`)."""
    connections = fit_open_files(cfg.max_connections)
    options: dict[str, Any] = {
        "host": cfg.host,
        "port": cfg.port,
        "log_level": "info",
        "timeout_graceful_shutdown": 5,
        "http": protocol(cfg, connections),
        "backlog": max(2048, connections),
        **overrides,
    }
    return uvicorn.Config(app, **options)


#: Descriptors the gateway needs besides its connections: engine pools, DuckDB's files, parser pipes, logs.
SPARE_FILES = 512


def fit_open_files(connections: int) -> int:
    """The connections the process can hold: its open-file limit (``ulimit -n``, often 1024) is raised up to the
    hard limit to fit ``connections`` and :data:`SPARE_FILES`; when even the hard limit is too low, fewer
    connections (said in the log). Past the limit, accept() fails and asyncio stops accepting for a second at a
    time, whoever connects: the lockout max_connections is there to prevent."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = connections + SPARE_FILES
    if soft != resource.RLIM_INFINITY and soft < need:
        raised = need if hard == resource.RLIM_INFINITY else min(need, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
            soft = raised
    if soft == resource.RLIM_INFINITY or soft >= need:
        return connections
    fitted = max(16, soft - SPARE_FILES)
    log.warning(
        "the process may open %d files (ulimit -n; hard limit %d): [gateway] max_connections lowered from %d to %d",
        soft,
        hard,
        connections,
        fitted,
    )
    return fitted

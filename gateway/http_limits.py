"""What a request may cost before the app sees it: the token first, then a capped body read within a time limit,
and connections that must send their request head in time.

* :class:`Admit` (pure ASGI middleware) authenticates from the headers alone, so that the body of an
  unauthenticated request is never read (401 first); then it reads the whole body, capped at
  :data:`MAX_BODY_BYTES` (a declared ``Content-Length`` over the cap is refused before a byte is read) and within
  ``read_timeout``, and replays it to the app. A response whose client stops reading for ``read_timeout``
  aborts its connection instead of holding it.
* :func:`protocol` makes uvicorn's h11 protocol close a connection whose request line and headers are not
  complete within ``read_timeout`` of the connection (or of the previous response), however slowly the bytes
  trickle in, and keeps connections without a token from starving the clients that have one
  (:class:`Connections`, issue 27.4): 2,000 connections that never send a byte used to fill
  ``max_connections``, and every new connection, a client's with its token too, was refused until they timed
  out (and the attacker opened them again). Now a connection is refused only when every open one is working on a
  request; otherwise the oldest connection that waits for a request is closed to make room, one that never sent
  a valid token first (a client's connection sends its request right after connecting, so it is never the
  oldest waiting one); and one address may keep at most ``max_connections_per_address`` such connections
  without a token waiting (its oldest closed beyond that), so that one client cannot make every other client's
  waiting connections the ones closed. Authenticated keep-alive connections are the reserve: they are closed
  only when no untrusted waiting connection is left.

Written by hand because uvicorn has neither: ``timeout_keep_alive`` only runs between requests and is reset by
every byte received, ``limit_concurrency`` answers 503 to requests but keeps half-open connections, and
``h11_max_incomplete_event_size`` caps the size of a head, not the time it takes (a slowloris client sends one
header byte every few seconds). The protocol subclass touches only uvicorn's ``connection_made``,
``handle_events``, ``on_response_complete`` and ``connection_lost``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import hmac
import json
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("lakegate.gateway")

MAX_BODY_BYTES = 1 << 20  #: the whole request body, JSON included (the SQL text is the bulk of it)
#: Paths that need no token: liveness and the OpenAPI pages.
PUBLIC = frozenset({"/healthz", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/redoc"})

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


# ---------------------------------------------------------------------------------------------------- auth


def presented_token(authorization: str) -> str | None:
    """The token of an ``Authorization`` header: a Bearer token, or the *password* of HTTP Basic auth (the user
    name is ignored, never taken as a token). Empty tokens are no tokens."""
    scheme, _, value = authorization.strip().partition(" ")
    token: str | None = None
    if scheme.lower() == "bearer":
        token = value.strip()
    elif scheme.lower() == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
        token = decoded.partition(":")[2]
    return token or None


def token_matches(token: str, tokens: Sequence[str]) -> bool:
    """Constant time whatever the token: digests of equal length, every configured token compared."""
    given = hashlib.sha256(token.encode()).digest()
    matched = False
    for configured in tokens:
        matched |= hmac.compare_digest(given, hashlib.sha256(configured.encode()).digest())
    return matched


def unauthorized_reason(authorization: str, tokens: Sequence[str]) -> str | None:
    """None when the header authenticates (or no token is configured), else what to tell the client."""
    if not tokens:
        return None
    token = presented_token(authorization)
    if token is None:
        return (
            "this gateway needs a token: send 'Authorization: Bearer <token>', or HTTP Basic auth "
            "with the token as password"
        )
    if not token_matches(token, tokens):
        return "the token is not valid"
    return None


# ------------------------------------------------------------------------------------------- middleware


class Admit:
    """Auth from the headers, then the body read whole (capped, timed), then the app; see the module doc."""

    def __init__(self, app: Any, config: Any) -> None:
        self.app = app
        self.config = config  #: the [gateway] settings: ``tokens`` and ``read_timeout``, read per request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v for k, v in scope.get("headers") or []}
        if scope.get("path") not in PUBLIC:
            reason = unauthorized_reason(headers.get(b"authorization", b"").decode("latin-1"), self.config.tokens)
            if reason is not None:
                await _refuse(scope, send, 401, "unauthorized", reason)
                return
        declared = headers.get(b"content-length", b"").strip()
        if declared and (not declared.isdigit() or int(declared) > MAX_BODY_BYTES):
            await _refuse(scope, send, 413, "too_large", f"the request body is over {MAX_BODY_BYTES} bytes")
            return
        timeout = self.config.read_timeout
        try:
            async with asyncio.timeout(timeout):
                body, rest = await _read_body(receive)
        except TimeoutError:
            await _refuse(scope, send, 408, "timeout", f"the request body did not arrive within {timeout:g} s")
            return
        except _TooLarge:
            await _refuse(scope, send, 413, "too_large", f"the request body is over {MAX_BODY_BYTES} bytes")
            return
        await self.app(scope, _replay(body, rest, receive), _timed(send, timeout))


def _timed(send: Send, timeout: float) -> Send:
    """A response whose client does not read for ``timeout`` fails (uvicorn then closes the connection)
    instead of holding its task and buffers."""

    async def timed_send(message: Message) -> None:
        async with asyncio.timeout(timeout):
            await send(message)

    return timed_send


class _TooLarge(Exception):
    pass


async def _read_body(receive: Receive) -> tuple[bytes, Message | None]:
    """The whole body, and the message that ended it if it was not the body's own (a disconnect)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge()
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), None


def _replay(body: bytes, rest: Message | None, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        if rest is not None:
            return rest
        return await receive()

    return replay


async def _refuse(scope: Scope, send: Send, status: int, code: str, message: str) -> None:
    """Answer in the gateway's error shape and close the connection (its body, if any, is left unread)."""
    rid = (scope.get("state") or {}).get("request_id")
    error: dict[str, Any] = {"code": code, "message": message, "line": None, "column": None}
    if rid:
        error["request_id"] = rid
    payload = json.dumps({"error": error}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
        (b"connection", b"close"),
    ]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="lakegate", Basic realm="lakegate"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


# ------------------------------------------------------------------------------------------ connections


class Connections:
    """The open connections of one server, and which of them may be closed to make room (see the module doc).

    A connection is *waiting* from its start, and again after each response, until its next request head is in;
    it is *trusted* once a request on it carried a valid token (once it sent a request, when no token is
    configured: a connection that never sent a byte is never trusted). Waiting connections that are not trusted
    are kept per client address, oldest first: beyond ``per_address`` of one address its oldest is closed; when
    ``limit`` connections are open, a new one closes the oldest waiting connection (untrusted first) instead of
    being refused, and is refused only when every open connection is working on a request."""

    def __init__(self, limit: int, per_address: int) -> None:
        self.limit = limit
        self.per_address = per_address
        self.open: set[Any] = set()
        self.untrusted: OrderedDict[Any, None] = OrderedDict()  # waiting, no valid token yet: oldest first
        self.trusted: OrderedDict[Any, None] = OrderedDict()  # waiting for the next request of a client
        self.by_address: dict[str, OrderedDict[Any, None]] = {}
        self.evicted = 0

    def admit(self, conn: Any) -> bool:
        """A new connection: room is made for it if it must be; False when none can be made."""
        if len(self.open) >= self.limit:
            oldest = next(iter(self.untrusted), None) or next(iter(self.trusted), None)
            if oldest is None:
                return False
            self.evict(oldest)
        self.open.add(conn)
        return True

    def waiting(self, conn: Any) -> None:
        """``conn`` waits for a request head."""
        if conn not in self.open:
            return
        if conn.trusted:
            self.trusted[conn] = None
            return
        self.untrusted[conn] = None
        mine = self.by_address.setdefault(conn.address, OrderedDict())
        mine[conn] = None
        if len(mine) > self.per_address:
            self.evict(next(iter(mine)))

    def working(self, conn: Any) -> None:
        """A request head arrived on ``conn``."""
        self._forget_waiting(conn)

    def closed(self, conn: Any) -> None:
        self._forget_waiting(conn)
        self.open.discard(conn)

    def evict(self, conn: Any) -> None:
        self.closed(conn)
        self.evicted += 1
        _note_eviction(self)
        conn.transport.abort()

    def _forget_waiting(self, conn: Any) -> None:
        self.trusted.pop(conn, None)
        if conn in self.untrusted:
            del self.untrusted[conn]
            mine = self.by_address[conn.address]
            del mine[conn]
            if not mine:
                del self.by_address[conn.address]


def protocol(config: Any, max_connections: int | None = None) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a deadline for each request head (``config.read_timeout``), a cap on open
    connections (``max_connections``, default ``config.max_connections``) and on the waiting connections of each
    address without a token (``config.max_connections_per_address``): :class:`Connections`. ``config`` is the
    [gateway] settings; its ``tokens`` are read per request, as :class:`Admit` does."""
    read_timeout: float = config.read_timeout
    limit = config.max_connections if max_connections is None else max_connections
    connections = Connections(limit, config.max_connections_per_address)

    class GuardedH11(H11Protocol):
        registry = connections  #: the server's open connections (tests and figures read it)
        _head_timer: asyncio.TimerHandle | None = None
        _started = False
        trusted = False
        address = ""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            peer = transport.get_extra_info("peername")
            self.address = str(peer[0]) if isinstance(peer, tuple) and peer else ""
            self.transport = transport
            if not connections.admit(self):
                _warn_full(limit)
                transport.abort()
                return
            super().connection_made(transport)
            self._started = True
            self._await_head()

        def handle_events(self) -> None:
            super().handle_events()
            if self._head_timer is not None and self.conn.their_state is not h11.IDLE:
                self._head_timer.cancel()  # the request line and headers are in
                self._head_timer = None
                if not self.trusted:
                    given = dict(self.headers or []).get(b"authorization", b"").decode("latin-1")
                    self.trusted = unauthorized_reason(given, config.tokens) is None
                connections.working(self)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_head()  # the next request's head must arrive in time too

        def connection_lost(self, exc: Exception | None) -> None:
            connections.closed(self)
            if self._head_timer is not None:
                self._head_timer.cancel()
                self._head_timer = None
            if self._started:
                super().connection_lost(exc)

        def _await_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._head_timer = self.loop.call_later(read_timeout, self._head_late)
            connections.waiting(self)

        def _head_late(self) -> None:
            self._head_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.abort()  # a request head trickling in (slowloris) or none at all

    return GuardedH11


_last_warning = 0.0
_last_eviction_note = 0.0


def _warn_full(limit: int) -> None:
    global _last_warning
    now = time.monotonic()
    if now - _last_warning > 10:
        _last_warning = now
        log.warning(
            "%d connections are open ([gateway] max_connections), each working on a request; refusing new ones",
            limit,
        )


def _note_eviction(registry: Connections) -> None:
    global _last_eviction_note
    now = time.monotonic()
    if now - _last_eviction_note > 10:
        _last_eviction_note = now
        log.warning(
            "closing connections that wait without a token to make room ([gateway] max_connections = %d, "
            "max_connections_per_address = %d; %d closed so far)",
            registry.limit,
            registry.per_address,
            registry.evicted,
        )

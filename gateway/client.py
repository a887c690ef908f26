"""lakegate's Python client: a PEP 249 (DB-API 2.0) connection to the gateway over HTTP, plus whole results as
Arrow tables and pandas DataFrames.

    import lakegate
    conn = lakegate.connect("http://127.0.0.1:8080", token="...")
    cur = conn.cursor()
    cur.execute("SELECT id, amount FROM lake.public.transactions WHERE user_id = %s", (42,))
    cur.fetchall()
    conn.query("SELECT * FROM lake.public.users").to_pandas()

The cursor is in :mod:`~lakegate.gateway.client_cursor`, whole results in :mod:`~lakegate.gateway.client_result`,
the HTTP stream in :mod:`~lakegate.gateway.client_stream`, the PEP 249 vocabulary in
:mod:`~lakegate.gateway.client_types`. Hand-written on httpx and pyarrow only (no DuckDB, no pyiceberg, pandas
only inside ``to_pandas``), so that a client install stays light. Every result travels as an Arrow IPC stream
(``format=arrow``), so values keep their exact types: decimals stay ``Decimal``, ``timestamptz`` stays an aware
``datetime`` in UTC, dates stay dates.

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

import os
import ssl
import threading
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import certifi
import httpx

from lakegate.gateway.client_cursor import Cursor
from lakegate.gateway.client_result import Result
from lakegate.gateway.client_stream import transport_error
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
    error_from_body,
)

apilevel = "2.0"
threadsafety = 2  # threads may share the module and connections (httpx.Client is thread-safe), not cursors
paramstyle = "pyformat"
DEFAULT_URL = "http://127.0.0.1:8080"
OnTruncate = Literal["warn", "error"]


# ----------------------------------------------------------------------------------------- transport


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
        time_zone: str | None = None,
    ) -> None:
        self.url = (url or os.environ.get("LAKEGATE_URL") or DEFAULT_URL).rstrip("/")
        if not self.url.startswith(("http://", "https://")):
            raise InterfaceError(f"the gateway URL must start with http:// or https://, got {self.url!r}")
        if on_truncate not in ("warn", "error"):
            raise InterfaceError(f"on_truncate must be 'warn' or 'error', got {on_truncate!r}")
        token = token if token is not None else os.environ.get("LAKEGATE_TOKEN") or None
        self.timeout = timeout
        self.max_rows = max_rows
        if time_zone is not None and not isinstance(time_zone, str):
            raise InterfaceError(f"time_zone must be a time zone name such as 'Europe/Paris', got {time_zone!r}")
        #: the session time zone sent with every query (None: the server's [gateway] time_zone)
        self.time_zone = time_zone
        self.on_truncate = on_truncate
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http_timeout = httpx.Timeout(http_timeout, connect=10.0)
        self._tls: ssl.SSLContext | None = None
        self._shared: httpx.Client | None = None  # for schema(), status(), explain(); made on first use
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
            if self._shared is not None:
                self._shared.close()

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
        body: dict[str, Any] = {"sql": sql}
        if self.time_zone is not None:
            body["time_zone"] = self.time_zone
        response = self._request("POST", "/v1/explain", json=body)
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
            raise transport_error(self.url, exc) from exc
        if response.status_code != 200:
            raise error_from_body(response.status_code, response.content)
        return response

    @property
    def _http(self) -> httpx.Client:
        with self._lock:
            if self._shared is None:
                self._shared = httpx.Client(
                    base_url=self.url,
                    headers=self._headers,
                    timeout=self._http_timeout,
                    verify=self._verify(),
                )
        return self._shared

    def _verify(self) -> ssl.SSLContext | bool:
        """TLS verification: one context per connection for https (building one costs ~60 ms of CPU, which
        httpx would spend again for every client), none for plain http (redirects are not followed)."""
        if not self.url.startswith("https://"):
            return False
        if self._tls is None:
            self._tls = ssl.create_default_context(cafile=certifi.where())  # certifi's roots, as httpx's own
        return self._tls

    def _cursor_http(self) -> httpx.Client:
        """A cursor's own HTTP client: one connection, whose socket :meth:`Cursor.cancel` can shut down from
        another thread without touching the queries of other cursors."""
        with self._lock:
            verify = self._verify()
        transport = httpx.HTTPTransport(verify=verify, limits=httpx.Limits(max_connections=1))
        return httpx.Client(
            base_url=self.url, headers=self._headers, timeout=self._http_timeout, transport=transport
        )

    def _query_body(self, sql: str) -> dict[str, Any]:
        body: dict[str, Any] = {"sql": sql, "format": "arrow"}
        if self.max_rows is not None:
            body["max_rows"] = self.max_rows
        if self.timeout is not None:
            body["timeout_ms"] = self.timeout * 1000
        if self.time_zone is not None:
            body["time_zone"] = self.time_zone
        return body


def connect(
    url: str | None = None,
    token: str | None = None,
    *,
    timeout: float | None = None,
    max_rows: int | None = None,
    http_timeout: float = 600.0,
    on_truncate: OnTruncate = "warn",
    time_zone: str | None = None,
) -> Connection:
    """A connection to the gateway at ``url`` (default ``$LAKEGATE_URL``, else http://127.0.0.1:8080) with
    ``token`` (default ``$LAKEGATE_TOKEN``). ``timeout`` (seconds) and ``max_rows`` lower the server's limits
    for every query; ``http_timeout`` bounds the wait for any network read. A result cut at the row cap
    emits a :class:`lakegate.Warning` (``on_truncate="warn"``) or raises :class:`DataError`
    (``on_truncate="error"``, ``code="truncated"``). ``time_zone`` (an IANA name such as ``"Europe/Paris"``;
    default: the server's ``[gateway] time_zone``) is every query's session time zone: timestamptz values come
    back in it, and ``::date``, ``date_trunc``, ``extract`` and timestamp literals mean what they mean there."""
    return Connection(
        url,
        token,
        timeout=timeout,
        max_rows=max_rows,
        http_timeout=http_timeout,
        on_truncate=on_truncate,
        time_zone=time_zone,
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

"""The seam shared by the two query engines
(:mod:`lakegate.connectors.duckdb.engine`, :mod:`lakegate.connectors.postgres.engine`).

An engine prepares one SQL text as a :class:`ResultStream`; ``start()`` runs it up to its first rows, then the
stream offers an Arrow schema and record batches read lazily, so that a large result never sits in memory whole.
``cancel()`` may be called from any thread, also while ``start()`` blocks; the reader then gets
:class:`QueryCancelled`.

Engine failures are translated here, at the connector boundary, into :class:`QueryError` with a ``kind`` that
the gateway maps to an HTTP status; no duckdb or psycopg exception leaves a connector::

    ConnectorError
    └── QueryError             an engine refused or failed a query; .kind says why
        └── QueryCancelled     interrupted (time limit, client gone, shutdown)
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Protocol

import pyarrow as pa

from lakegate.connectors.errors import ConnectorError

#: QueryError kinds: what went wrong, independent of the engine.
SYNTAX = "syntax"  #: the engine could not parse the SQL it was given
UNDEFINED = "undefined"  #: a table, column, function or type the engine does not know
INVALID = "invalid"  #: a value, cast or argument the engine rejects at run time
PERMISSION = "permission"  #: the sandbox or a read-only transaction refused an action
RESOURCES = "resources"  #: out of memory or a similar limit of the engine
TOO_LARGE = "too_large"  #: the result passed the size cap the caller set
UNAVAILABLE = "unavailable"  #: the engine or its source cannot be reached
INTERNAL = "internal"  #: anything else
STATEMENT_TIMEOUT = "statement_timeout"  #: a time limit of the engine's own cancelled the query


class QueryError(ConnectorError):
    """An engine refused or failed a query. ``kind`` is one of the constants above."""

    def __init__(self, message: str, kind: str = INTERNAL, *, engine: str = "", sqlstate: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.engine = engine
        self.sqlstate = sqlstate  #: PostgreSQL's error code, when PostgreSQL reported the error


class QueryCancelled(QueryError):
    """The query was interrupted before it finished (time limit, client gone, shutdown)."""

    def __init__(self, message: str = "the query was cancelled", *, engine: str = "") -> None:
        super().__init__(message, "cancelled", engine=engine)


class ResultStream(Protocol):
    """A running query's result, read batch by batch."""

    schema: pa.Schema

    def start(self) -> None:
        """Run the query up to its first rows (blocking; ``cancel()`` from another thread interrupts it)."""

    def __iter__(self) -> Iterator[pa.RecordBatch]: ...

    def cancel(self) -> None:
        """Interrupt the running query (thread-safe; a no-op once finished)."""

    def close(self) -> None:
        """Release the engine resources (cursor, connection); idempotent."""


# ------------------------------------------------------------------ PostgreSQL errors inside DuckDB's messages

#: How DuckDB's postgres extension wraps what libpq said when a scan of an attached table fails: the internal
#: ``COPY (SELECT ...) TO STDOUT`` text or the connection string, then libpq's own message (without a SQLSTATE).
_SCAN_MARKERS = (
    'Failed to prepare COPY "',
    'Failed to execute query "',
    'Failed to prepare query "',
    "Failed to fetch header for COPY",
    "Unable to read binary COPY data",
    'Unable to connect to Postgres at "',
    "Failed to copy data: ",
    "Failed to commit",
    "Postgres scanner - ",
    "Expected Postgres binary COPY header",
)
_SEVERITY = re.compile(r"(ERROR|FATAL|PANIC):  ")
#: libpq's words for a connection that broke (no server message comes with them)
_CONNECTION_LOST = (
    "server closed the connection unexpectedly",
    "no connection to the server",
    "could not receive data from server",
    "could not send data to server",
    "SSL connection has been closed unexpectedly",
    "connection to server",
    "Connection refused",
    "Connection pool timeout",
)
#: PostgreSQL's primary message -> (SQLSTATE, kind). libpq drops the SQLSTATE from the text the extension
#: passes on; these are the messages a scan of a table can meet (its privileges, its lifetime, the server's
#: limits and state), in PostgreSQL's own words (src/backend/utils/errcodes.txt gives the codes).
_SCAN_ERRORS: tuple[tuple[re.Pattern[str], str, str], ...] = tuple(
    (re.compile(pattern), sqlstate, kind)
    for pattern, sqlstate, kind in (
        (r"^permission denied for ", "42501", PERMISSION),
        (r"^must be owner of ", "42501", PERMISSION),
        (r"^cannot execute .* in a read-only transaction", "25006", PERMISSION),
        (r'^relation ".*" does not exist', "42P01", "undefined_table"),
        (r"^could not open relation with OID", "42P01", "undefined_table"),
        (r'^column ".*" does not exist', "42703", UNDEFINED),
        (r'^schema ".*" does not exist', "3F000", UNDEFINED),
        (r"^canceling statement due to statement timeout", "57014", STATEMENT_TIMEOUT),
        (r"^canceling statement due to lock timeout", "55P03", UNAVAILABLE),
        (r"^canceling statement due to user request", "57014", UNAVAILABLE),
        (r"^canceling statement due to conflict with recovery", "40001", UNAVAILABLE),
        (r"^could not serialize access", "40001", UNAVAILABLE),
        (r"^deadlock detected", "40P01", UNAVAILABLE),
        (r"^terminating connection", "57P01", UNAVAILABLE),
        (r"^the database system is ", "57P03", UNAVAILABLE),
        (r"(too many connections|remaining connection slots)", "53300", UNAVAILABLE),
        (r"^out of memory", "53200", RESOURCES),
        (r"^division by zero", "22012", INVALID),
        (r"^invalid input syntax", "22P02", INVALID),
        (r"out of range", "22003", INVALID),
    )
)


def scan_error(message: str) -> QueryError | None:
    """DuckDB's message about a failed scan of an attached PostgreSQL table -> PostgreSQL's own error (its
    message, detail and hint, the SQLSTATE it stands for, the kind), without the internal ``COPY`` statement or
    the connection string the extension quotes; None when ``message`` is not about such a scan."""
    if not any(marker in message for marker in _SCAN_MARKERS):
        return None
    found = list(_SEVERITY.finditer(message))
    if found:  # the last one: the quoted COPY text before it may hold the same words (a pushed filter's text)
        lines = message[found[-1].end() :].splitlines()
        text = lines[0].strip() + "".join(
            f" ({line.split(':', 1)[1].strip()})"
            for line in lines[1:]
            if line.startswith(("DETAIL:", "HINT:"))
        )
        for pattern, sqlstate, kind in _SCAN_ERRORS:
            if pattern.search(lines[0]):
                return QueryError(text, kind, engine="postgres", sqlstate=sqlstate)
        # an ERROR is about the query (a 400, as on the PostgreSQL route); a FATAL ends the session: the
        # source refused the connection (authentication, a missing database) or is going away
        kind = INVALID if found[-1].group(1) == "ERROR" else UNAVAILABLE
        return QueryError(text, kind, engine="postgres")
    return connection_lost(message) or connection_lost("")


def connection_lost(message: str) -> QueryError | None:
    """libpq's message about a connection that broke (no SQLSTATE comes with it) -> an UNAVAILABLE error with
    SQLSTATE 08006 (connection_failure) that names neither the server's address nor the DSN (the empty message:
    the same without a reason); None when ``message`` is not about a broken connection."""
    lost = next((words for words in _CONNECTION_LOST if words in message), None)
    if lost is None and message:
        return None
    reason = f" ({lost})" if lost and lost != "connection to server" else ""
    return QueryError(
        f"the connection to the PostgreSQL source failed while the query read from it{reason}; retry in a "
        "moment, and ask the operator if it persists",
        UNAVAILABLE,
        engine="postgres",
        sqlstate="08006",
    )

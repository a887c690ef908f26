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

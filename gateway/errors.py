"""The gateway's one exception tree. Every error has a stable ``code`` and the HTTP ``status`` it answers with;
front ends (HTTP, CLI) render it and never show a stack trace::

    GatewayError                     500 internal
    ├── BadRequest                   400 bad_request      malformed request (format, limits, JSON body)
    │   ├── SqlSyntaxError           400 syntax_error     with line and column of the user's SQL
    │   ├── UnsupportedQuery         400 unsupported      valid SQL the gateway does not run (parameters, ...)
    │   └── QueryFailed              400 query_error      the engine rejected the query (types, columns, values)
    ├── Unauthorized                 401 unauthorized     missing or wrong token
    ├── Forbidden                    403 forbidden        the guard refused the query, and says why
    ├── NotFound                     404 not_found        unknown table or source, with "did you mean"
    ├── QueryTimeout                 408 timeout          the time limit passed; the engine query was cancelled
    ├── TooLarge                     413 too_large        request body, result size or engine memory over its cap
    ├── ClientGone                   499 client_closed    the client disconnected; the query was cancelled
    └── Unavailable                  503 unavailable      busy (every worker taken) or a source is down

Foreign exceptions (sqlglot, duckdb, psycopg, pyiceberg) are translated where they are caught, into these.

A message is capped at :data:`MAX_MESSAGE` characters, like a result is capped: engines echo what they were given
(DuckDB quotes a value it cannot convert whole, a refusal quotes the construct it refuses), and an error body must
not be the way around the result cap (``SELECT 1e99999999`` answered a 100 MB message). What is cut is said.
"""

from __future__ import annotations

from typing import Any

MAX_MESSAGE = 4096  #: characters of an error message; the rest is cut, with a note saying how much


def capped(message: str, limit: int = MAX_MESSAGE) -> str:
    """``message``, or its first ``limit`` characters and a note of how many were cut."""
    if len(message) <= limit:
        return message
    return f"{message[:limit]}... [message cut: {len(message) - limit} more characters]"


class GatewayError(Exception):
    status = 500
    code = "internal"
    #: the SQLSTATE PostgreSQL reports for the same failure, where the error class implies one
    default_sqlstate: str | None = None

    def __init__(
        self,
        message: str,
        *,
        line: int | None = None,
        column: int | None = None,
        code: str | None = None,
        sqlstate: str | None = None,
    ) -> None:
        message = capped(message)
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        #: PostgreSQL's error code: the engine's, or the one the error class implies
        self.sqlstate = sqlstate or self.default_sqlstate
        if code is not None:
            self.code = code

    def body(self, request_id: str | None = None) -> dict[str, Any]:
        error: dict[str, Any] = {
            "code": self.code,
            "message": self.message,
            "line": self.line,
            "column": self.column,
        }
        if self.sqlstate:
            error["sqlstate"] = self.sqlstate
        if request_id:
            error["request_id"] = request_id
        return {"error": error}


class BadRequest(GatewayError):
    status = 400
    code = "bad_request"


class SqlSyntaxError(BadRequest):
    code = "syntax_error"
    default_sqlstate = "42601"


class UnsupportedQuery(BadRequest):
    code = "unsupported"
    default_sqlstate = "0A000"


class QueryFailed(BadRequest):
    code = "query_error"


class Unauthorized(GatewayError):
    status = 401
    code = "unauthorized"


class Forbidden(GatewayError):
    status = 403
    code = "forbidden"
    default_sqlstate = "42501"


class NotFound(GatewayError):
    status = 404
    code = "not_found"
    default_sqlstate = "42P01"


class QueryTimeout(GatewayError):
    status = 408
    code = "timeout"
    default_sqlstate = "57014"


class TooLarge(GatewayError):
    status = 413
    code = "too_large"


class ClientGone(GatewayError):
    status = 499
    code = "client_closed"


class Unavailable(GatewayError):
    status = 503
    code = "unavailable"

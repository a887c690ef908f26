"""PostgreSQL errors -> :class:`~lakegate.connectors.query.QueryError` with the kind the gateway maps to an HTTP
status (PostgreSQL's message, detail and hint; the SQLSTATE kept)."""

from __future__ import annotations

import psycopg

from lakegate.connectors.query import (
    INTERNAL,
    INVALID,
    PERMISSION,
    RESOURCES,
    SYNTAX,
    UNAVAILABLE,
    UNDEFINED,
    QueryCancelled,
    QueryError,
)

_KINDS = {
    "42601": SYNTAX,
    "42P01": "undefined_table",
    "42703": UNDEFINED,
    "42883": UNDEFINED,
    "42704": UNDEFINED,
    "3F000": UNDEFINED,
    "42501": PERMISSION,
    "25006": PERMISSION,
    "0A000": INVALID,
    "53200": RESOURCES,
    "53100": RESOURCES,
    "53300": UNAVAILABLE,
    "54000": RESOURCES,
}
#: SQLSTATE classes that are not about the query: the connection, the server's state, its own faults.
_CLASSES = {"08": UNAVAILABLE, "57": UNAVAILABLE, "58": UNAVAILABLE, "53": RESOURCES, "XX": INTERNAL}


def translate(exc: psycopg.Error, *, cancelled: bool = False) -> QueryError:
    """A psycopg error -> QueryError (PostgreSQL's message, detail and hint, without the statement). Any error
    PostgreSQL reports about the query itself (a SQLSTATE outside the connection/server classes) is INVALID,
    a 400 that carries the SQLSTATE."""
    sqlstate = getattr(exc, "sqlstate", None) or ""
    diag = getattr(exc, "diag", None)
    text = (diag.message_primary if diag is not None and diag.message_primary else str(exc)).strip()
    for extra in ("message_detail", "message_hint"):
        value = getattr(diag, extra, None) if diag is not None else None
        if value:
            text += f" ({value})"
    if cancelled or sqlstate == "57014":
        return QueryCancelled(f"PostgreSQL cancelled the query: {text}", engine="postgres")
    if isinstance(exc, psycopg.OperationalError) and not sqlstate:
        return QueryError(f"PostgreSQL is unavailable: {text}", UNAVAILABLE, engine="postgres")
    kind = (_KINDS.get(sqlstate) or _CLASSES.get(sqlstate[:2], INVALID)) if sqlstate else INTERNAL
    return QueryError(text, kind, engine="postgres", sqlstate=sqlstate)

"""Opening PostgreSQL connections with lakegate's session settings, and translating psycopg errors."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import psycopg
from psycopg import conninfo

from lakegate.connectors.errors import ConnectionLost, SourceConfigError
from lakegate.connectors.postgres.types import SESSION_OPTIONS


def _options(extra: dict[str, str], existing: str | None) -> str:
    parts = [existing] if existing else []
    parts += [f"-c {key}={value.replace(' ', '')}" for key, value in extra.items()]
    return " ".join(parts)


def connect_kwargs(
    dsn: str, *, application_name: str, replication: bool = False, settings: dict[str, str] | None = None
) -> dict[str, Any]:
    """Connection parameters: the user's DSN plus our session options."""
    try:
        params = conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        raise SourceConfigError(f"invalid PostgreSQL DSN: {exc}") from exc
    existing = params.get("options")
    params["options"] = _options({**SESSION_OPTIONS, **(settings or {})}, str(existing) if existing else None)
    params.setdefault("application_name", application_name)
    if replication:
        params["replication"] = "database"
    return params


def with_settings(dsn: str, settings: dict[str, str]) -> str:
    """``dsn`` whose sessions start with ``settings`` (libpq ``options``), for connections that others open
    (DuckDB's PostgreSQL scanner); an invalid DSN is returned as it is, for its user to report."""
    try:
        params = conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return dsn
    existing = params.get("options")
    params["options"] = _options(settings, str(existing) if existing else None)
    return conninfo.make_conninfo("", **params)


def connect(
    dsn: str,
    *,
    application_name: str = "lakegate",
    replication: bool = False,
    autocommit: bool = True,
    settings: dict[str, str] | None = None,
) -> psycopg.Connection:
    """Open a connection; failures become :class:`ConnectionLost` or :class:`SourceConfigError`."""
    params = connect_kwargs(
        dsn, application_name=application_name, replication=replication, settings=settings
    )
    try:
        return psycopg.connect(autocommit=autocommit, **params)
    except psycopg.OperationalError as exc:
        raise translate(exc, what="connect to PostgreSQL") from exc


@contextlib.contextmanager
def translated(what: str) -> Iterator[None]:
    """Run a block of catalog work; a psycopg error leaves it as one of ours (a lost connection is transient)."""
    try:
        yield
    except psycopg.Error as exc:
        raise translate(exc, what=what) from exc


def translate(exc: psycopg.Error, *, what: str) -> Exception:
    """A psycopg error -> our error with a message that says what to do."""
    text = str(exc).strip()
    sqlstate = getattr(exc, "sqlstate", None) or ""
    if sqlstate == "28000" and "replication" in text:
        return SourceConfigError(
            f"cannot {what}: {text}. Allow replication connections for this role in pg_hba.conf "
            "('host replication <user> ...' or 'local replication <user> trust') and reload PostgreSQL"
        )
    if sqlstate in ("28P01", "28000") or "password authentication failed" in text:
        return SourceConfigError(
            f"cannot {what}: authentication failed ({text}); check the user and password in the dsn"
        )
    if sqlstate == "42501" or "must be superuser or replication role" in text or "permission denied" in text:
        return SourceConfigError(
            f"cannot {what}: {text}. The role needs the REPLICATION attribute (ALTER ROLE <user> REPLICATION), "
            "SELECT on the replicated tables, and ownership of them to create the publication"
        )
    if sqlstate == "3D000":
        return SourceConfigError(f"cannot {what}: {text}; check the database name in the dsn")
    return ConnectionLost(f"cannot {what}: {text}")

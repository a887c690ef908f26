"""Is the gateway's PostgreSQL role a plain reader? Every token holder acts with its rights through the gateway, so
``lakegate serve`` refuses a role that is a superuser, has BYPASSRLS, CREATEROLE or REPLICATION, owns or may write
any table, or belongs to a predefined role that reaches the server's files, programs, settings or other sessions
(unless the source sets ``allow_privileged_role``). One catalog query answers it all.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from lakegate.connectors.config import SettingsError, SourceSettings
from lakegate.connectors.query import QueryError

log = logging.getLogger("lakegate.gateway")


class Engine(Protocol):
    readers_only: bool

    def role(self) -> tuple[str, list[str]]: ...

#: Predefined roles that reach the server's files, programs, settings or other sessions, or write everywhere.
PRIVILEGED_ROLES = (
    "pg_read_server_files",
    "pg_write_server_files",
    "pg_execute_server_program",
    "pg_write_all_data",
    "pg_read_all_settings",
    "pg_read_all_stats",
    "pg_monitor",
    "pg_signal_backend",
    "pg_checkpoint",
    "pg_create_subscription",
    "pg_maintain",
)
ROLE_QUERY = """
SELECT r.rolname::text, r.rolsuper, r.rolbypassrls, r.rolcreaterole, r.rolreplication,
  ARRAY(SELECT b.rolname::text FROM pg_catalog.pg_roles b
        WHERE b.rolname = ANY(%s) AND pg_catalog.pg_has_role(r.oid, b.oid, 'MEMBER') ORDER BY 1),
  ARRAY(SELECT pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname)
        FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
          AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%%'
          AND (pg_catalog.pg_has_role(r.oid, c.relowner, 'MEMBER')
               OR pg_catalog.has_table_privilege(r.oid, c.oid, 'INSERT, UPDATE, DELETE, TRUNCATE'))
        ORDER BY 1 LIMIT 6)
FROM pg_catalog.pg_roles r WHERE r.rolname = current_user
"""


def privileged_message(source: str, role: str, problems: list[str]) -> str:
    return (
        f"source {source!r}: the gateway's role {role!r} is {'; '.join(problems)}. Every token holder would act "
        "with these rights through the gateway: give it a read-only role (README, 'The gateway's role'), or set "
        f"allow_privileged_role = true for this source ([[sources]] name = {source!r}) to accept the risk"
    )


def role_problems(rows: Sequence[Sequence[Any]]) -> tuple[str, list[str]]:
    """(role name, what makes it more than a reader) from :data:`ROLE_QUERY`'s row."""
    if not rows:
        return "?", ["not found in pg_roles"]
    name, superuser, bypassrls, createrole, replication, memberships, writable = rows[0]
    if superuser:
        return str(name), ["a superuser"]  # everything below follows
    problems = [
        what
        for flag, what in (
            (bypassrls, "allowed to bypass row-level security (BYPASSRLS)"),
            (createrole, "allowed to create roles (CREATEROLE)"),
            (replication, "a replication role (REPLICATION)"),
        )
        if flag
    ]
    if memberships:
        problems.append(f"a member of {', '.join(memberships)}")
    if writable:
        more = ", ..." if len(writable) > 5 else ""
        problems.append(f"the owner of, or allowed to write to, {', '.join(writable[:5])}{more}")
    return str(name), problems


def check(sources: Sequence[SourceSettings], engines: Mapping[str, Engine]) -> list[str]:
    """Refuse (SettingsError, the source and what is wrong named) a source whose role is more than a reader,
    unless it sets ``allow_privileged_role``: then the warning is logged and returned. A source that cannot be
    reached now is checked by every session it opens later (the engine's ``readers_only``)."""
    warnings = []
    for source in sources:
        engine = engines[source.name]
        try:
            role, problems = engine.role()
        except QueryError as exc:
            log.warning("cannot check the role of source %s now (%s); each new session will be", source.name, exc)
            role, problems = "", []
        finally:
            engine.readers_only = not source.allow_privileged_role  # from now on, every new session
        if not problems:
            continue
        if not source.allow_privileged_role:
            raise SettingsError(privileged_message(source.name, role, problems))
        warning = f"source {source.name!r}: allow_privileged_role = true and the role {role!r} is {'; '.join(problems)}"
        log.warning("%s", warning)
        warnings.append(warning)
    return warnings

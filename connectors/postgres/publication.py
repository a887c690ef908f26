"""The publication the slot decodes through.

A publication lakegate manages (one it created, or its default name ``lakegate_<source>`` owned by the worker's
role) is kept exact: its table list follows ``replicate``, it publishes every kind of change, partitions as
themselves (``publish_via_partition_root = false``: PostgreSQL publishes a TRUNCATE of one partition only then) and,
on PostgreSQL 18, stored generated columns. Creating or changing a publication needs ownership of the tables.

Any other publication (created by the tables' owner for a worker role that has only REPLICATION and SELECT, say)
is used as it is: it must publish inserts, updates, deletes and truncates of every replicated table, without row
filters (the initial copy would not match them); otherwise the worker stops with the command that fixes it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import psycopg
from psycopg import sql

from lakegate.connectors.errors import SourceConfigError
from lakegate.connectors.postgres.introspect import SourceTable

log = logging.getLogger(__name__)

MANAGED = "managed by lakegate: its table list follows the 'replicate' setting of the source"
ACTIONS = ("insert", "update", "delete", "truncate")


@dataclass(frozen=True)
class Publication:
    name: str
    managed: bool
    via_root: bool  #: partitions published as their root
    generated: bool  #: stored generated columns are published (PostgreSQL 18)


def _info(conn: psycopg.Connection, name: str) -> tuple | None:
    gencols = "p.pubgencols = 's'" if conn.info.server_version >= 180000 else "false"
    return conn.execute(
        f"SELECT p.oid::int8, p.puballtables, p.pubinsert, p.pubupdate, p.pubdelete, p.pubtruncate, p.pubviaroot, "
        f"{gencols}, pg_catalog.pg_has_role(current_user, p.pubowner, 'USAGE'), "
        "pg_catalog.obj_description(p.oid, 'pg_publication') "
        "FROM pg_catalog.pg_publication p WHERE p.pubname = %s",
        (name,),
    ).fetchone()


def sync(conn: psycopg.Connection, name: str, tables: Sequence[SourceTable], *, default_name: bool) -> Publication:
    """Create the publication, keep a managed one exact, or check one lakegate does not manage."""
    try:
        info = _info(conn, name)
        if info is None:
            _create(conn, name, tables)
            info = _info(conn, name)
            assert info is not None
        oid, all_tables, *actions, via_root, generated, owned, comment = info
        managed = bool(owned) and (comment == MANAGED or (default_name and not all_tables))
        if managed:
            _keep_exact(conn, name, oid, tables, dict(zip(ACTIONS, actions, strict=True)), via_root, generated)
            info = _info(conn, name)
            assert info is not None
            oid, all_tables, *actions, via_root, generated, owned, comment = info
        else:
            _check(conn, name, oid, bool(all_tables), tables, dict(zip(ACTIONS, actions, strict=True)))
    except psycopg.errors.InsufficientPrivilege as exc:
        names = ", ".join(str(t.ref) for t in tables)
        raise SourceConfigError(
            f"cannot create or change publication {name!r}: {str(exc).strip()}. Only a table's owner may publish "
            f"it: as the owner run CREATE PUBLICATION {name} FOR TABLE {names}; lakegate then uses it as it is"
        ) from exc
    if via_root and any(t.relkind == "p" for t in tables):
        log.warning(
            "publication %s publishes partitions as their root (publish_via_partition_root = true): PostgreSQL "
            "then does not publish a TRUNCATE of a single partition, which the lake cannot see. As its owner run "
            "ALTER PUBLICATION %s SET (publish_via_partition_root = false)",
            name,
            name,
        )
    return Publication(name, managed, bool(via_root), bool(generated))


def _options(conn: psycopg.Connection) -> sql.Composable:
    options = "publish = 'insert, update, delete, truncate', publish_via_partition_root = false"
    if conn.info.server_version >= 180000:
        options += ", publish_generated_columns = stored"
    return sql.SQL(options)  # type: ignore[arg-type]


def _create(conn: psycopg.Connection, name: str, tables: Sequence[SourceTable]) -> None:
    pub = sql.Identifier(name)
    table_list = sql.SQL(", ").join(sql.Identifier(t.ref.schema, t.ref.name) for t in tables)
    conn.execute(sql.SQL("CREATE PUBLICATION {} FOR TABLE {} WITH ({})").format(pub, table_list, _options(conn)))
    conn.execute(sql.SQL("COMMENT ON PUBLICATION {} IS {}").format(pub, sql.Literal(MANAGED)))
    log.info("created publication %s for %d table(s)", name, len(tables))


def _members(conn: psycopg.Connection, oid: int) -> dict[int, str]:
    rows = conn.execute(
        "SELECT c.oid::int8, pg_catalog.format('%%I.%%I', n.nspname, c.relname) FROM pg_catalog.pg_publication_rel r "
        "JOIN pg_catalog.pg_class c ON c.oid = r.prrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
        "WHERE r.prpubid = %s",
        (oid,),
    ).fetchall()
    return {int(o): str(n) for o, n in rows}


def _keep_exact(
    conn: psycopg.Connection,
    name: str,
    oid: int,
    tables: Sequence[SourceTable],
    actions: dict[str, bool],
    via_root: bool,
    generated: bool,
) -> None:
    pub = sql.Identifier(name)
    have = _members(conn, oid)
    wanted = {t.oid: t for t in tables}
    add = [wanted[o] for o in wanted if o not in have]
    drop = [n for o, n in have.items() if o not in wanted]
    if add:
        names = sql.SQL(", ").join(sql.Identifier(t.ref.schema, t.ref.name) for t in add)
        conn.execute(sql.SQL("ALTER PUBLICATION {} ADD TABLE {}").format(pub, names))
        log.info("publication %s: added %s", name, ", ".join(str(t.ref) for t in add))
    if drop:
        names = sql.SQL(", ").join(sql.SQL(n) for n in drop)  # already quoted by format('%I.%I')
        conn.execute(sql.SQL("ALTER PUBLICATION {} DROP TABLE {}").format(pub, names))
        log.info("publication %s: dropped %s", name, ", ".join(drop))
    if not all(actions.values()) or via_root or (conn.info.server_version >= 180000 and not generated):
        conn.execute(sql.SQL("ALTER PUBLICATION {} SET ({})").format(pub, _options(conn)))


def _check(
    conn: psycopg.Connection,
    name: str,
    oid: int,
    all_tables: bool,
    tables: Sequence[SourceTable],
    actions: dict[str, bool],
) -> None:
    """A publication lakegate does not manage must publish everything of every replicated table."""
    missing_actions = [a for a, on in actions.items() if not on]
    if missing_actions:
        raise SourceConfigError(
            f"publication {name!r} does not publish {', '.join(missing_actions)}: those changes of the replicated "
            f"tables would be lost. As its owner run ALTER PUBLICATION {name} SET (publish = "
            "'insert, update, delete, truncate'), or use another publication"
        )
    if all_tables:
        return
    effective = {
        int(o)
        for (o,) in conn.execute(
            "SELECT c.oid::int8 FROM pg_catalog.pg_publication_tables t "
            "JOIN pg_catalog.pg_namespace n ON n.nspname = t.schemaname "
            "JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.tablename "
            "WHERE t.pubname = %s",
            (name,),
        ).fetchall()
    }
    uncovered = []
    for table in tables:
        family = {int(o) for (o,) in conn.execute(_FAMILY, (table.oid, table.oid)).fetchall()}
        if not family & effective:
            uncovered.append(str(table.ref))
    if uncovered:
        raise SourceConfigError(
            f"publication {name!r} does not publish {', '.join(uncovered)}. As the tables' owner run ALTER "
            f"PUBLICATION {name} ADD TABLE {', '.join(uncovered)} (or choose another 'publication')"
        )
    if conn.info.server_version >= 150000:
        filtered = conn.execute(
            "SELECT pg_catalog.format('%%I.%%I', n.nspname, c.relname) FROM pg_catalog.pg_publication_rel r "
            "JOIN pg_catalog.pg_class c ON c.oid = r.prrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace "
            "WHERE r.prpubid = %s AND r.prqual IS NOT NULL AND r.prrelid = ANY(%s::oid[])",
            (oid, [t.oid for t in tables]),
        ).fetchall()
        if filtered:
            names = ", ".join(r[0] for r in filtered)
            raise SourceConfigError(
                f"publication {name!r} filters the rows of {names} (a WHERE clause): the lake would hold rows the "
                f"filter drops from then on. Publish those tables without a row filter"
            )


def fit(
    conn: psycopg.Connection, pub: Publication, tables: Sequence[SourceTable]
) -> tuple[dict[int, SourceTable], dict[int, str]]:
    """Each table as the publication carries it, by oid, and the tables it cannot carry whole (oid -> why).

    Stored generated columns the publication does not publish (PostgreSQL before 18 publishes none; 18 with
    ``publish_generated_columns = stored``) are left out of the lake, with a warning naming table and column:
    the stream would not keep them. A column list that leaves out an ordinary column refuses the table (that
    column would be lost). Virtual generated columns (PostgreSQL 18), which no publication carries and which
    hold no data, are named in a warning."""
    published = _published_columns(conn, pub.name, tables)
    fitted: dict[int, SourceTable] = {}
    refused: dict[int, str] = {}
    for table in tables:
        names = published.get(table.oid)
        if names is None:  # no column lists before PostgreSQL 15; generated columns published from 18 on
            names = {c.name for c in table.columns if not c.generated or pub.generated}
        lost = [c.name for c in table.columns if not c.generated and c.name not in names]
        if lost:
            refused[table.oid] = (
                f"publication {pub.name!r} leaves column(s) {', '.join(map(repr, lost))} of {table.ref} out (a "
                f"column list): the lake would lose them. As its owner run ALTER PUBLICATION {pub.name} DROP TABLE "
                f"{table.ref}, then ALTER PUBLICATION {pub.name} ADD TABLE {table.ref} (without a column list)"
            )
            continue
        for column in table.columns:
            if column.generated and column.name not in names:
                log.warning("%s", _unpublished(conn, pub, table, column.name))
        kept = tuple(c for c in table.columns if c.name in names)
        fitted[table.oid] = (
            dataclasses.replace(table, columns=kept) if len(kept) < len(table.columns) else table
        )
    if conn.info.server_version >= 180000:
        for oid, name in conn.execute(
            "SELECT attrelid::int8, attname FROM pg_catalog.pg_attribute WHERE attrelid = ANY(%s::oid[]) "
            "AND attgenerated = 'v' AND NOT attisdropped ORDER BY attrelid, attnum",
            ([t.oid for t in tables],),
        ).fetchall():
            ref = next(t.ref for t in tables if t.oid == oid)
            log.warning(
                "virtual generated column %r of %s is not in the lake: PostgreSQL computes it when it is read and "
                "cannot publish it. Compute it in queries of the lake, or make it a STORED generated column "
                "(drop it and add it again with STORED) to replicate it",
                name,
                ref,
            )
    return fitted, refused


def _unpublished(conn: psycopg.Connection, pub: Publication, table: SourceTable, column: str) -> str:
    left_out = f"generated column {column!r} of {table.ref} is left out of the lake"
    if conn.info.server_version < 180000:
        return (
            f"{left_out}: PostgreSQL before 18 does not publish generated columns (18 does, with "
            "publish_generated_columns = stored)"
        )
    return (
        f"{left_out}: publication {pub.name!r} does not publish it. As its owner run ALTER PUBLICATION {pub.name} "
        f"SET (publish_generated_columns = stored), then stop the worker and run 'lakegate maintain --resnapshot "
        f"{table.ref}' to copy the table with the column"
    )


def _published_columns(
    conn: psycopg.Connection, name: str, tables: Sequence[SourceTable]
) -> dict[int, set[str]]:
    """The columns the publication publishes of each table (through its partitions or root, as published);
    empty before PostgreSQL 15, whose catalog does not say."""
    if conn.info.server_version < 150000:
        return {}
    rows = conn.execute(
        "SELECT c.oid::int8, t.attnames FROM pg_catalog.pg_publication_tables t "
        "JOIN pg_catalog.pg_namespace n ON n.nspname = t.schemaname "
        "JOIN pg_catalog.pg_class c ON c.relnamespace = n.oid AND c.relname = t.tablename WHERE t.pubname = %s",
        (name,),
    ).fetchall()
    by_oid = {int(o): set(names or ()) for o, names in rows}
    out: dict[int, set[str]] = {}
    for table in tables:
        family = [int(o) for (o,) in conn.execute(_FAMILY, (table.oid, table.oid)).fetchall()]
        entries = [by_oid[o] for o in family if o in by_oid]
        if entries:
            out[table.oid] = set.intersection(*entries)
    return out


#: a table and its partitions
_FAMILY = (
    "SELECT %s::int8 UNION SELECT relid::int8 FROM pg_catalog.pg_partition_tree(%s::oid::regclass)"
)


__all__ = ["Publication", "fit", "sync"]

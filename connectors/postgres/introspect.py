"""What the source database holds: table descriptions, keys, and the checks that replication needs."""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import psycopg

from lakegate.connectors.changes import Column, TableRef, TableSchema
from lakegate.connectors.errors import SourceConfigError
from lakegate.connectors.postgres.types import (
    TYPE_QUERY,
    ConversionError,
    TypeCatalog,
    UnsupportedType,
    codec_for,
)


class UnsupportedColumn(SourceConfigError):
    """A column whose type has no exact lake type; the message names table, column and type."""


@dataclass(frozen=True)
class SourceColumn:
    """A column as PostgreSQL describes it (from the catalog or a pgoutput Relation message)."""

    name: str
    type_oid: int
    typmod: int
    ndims: int = 0
    key: bool = False
    not_null: bool = False
    attnum: int | None = None  #: position in pg_attribute (survives renames); None when unknown
    generated: bool = (
        False  #: a stored generated column (published by PostgreSQL 18's publish_generated_columns)
    )


@dataclass(frozen=True)
class SourceTable:
    ref: TableRef
    oid: int
    relkind: str  #: r table, p partitioned table
    replica_identity: str  #: d default, f full, i index, n nothing
    columns: tuple[SourceColumn, ...]
    key: tuple[str, ...]  #: primary key (or replica identity index) columns; () = changelog only
    persistence: str = "p"  #: p permanent, u unlogged, t temporary
    partition: bool = False  #: a partition of a partitioned table


_DESCRIBE = """
SELECT c.oid::int8, c.relkind, c.relreplident, a.attname, a.atttypid::int8, a.atttypmod, a.attndims, a.attnotnull,
       a.attnum, c.relpersistence, n.nspname, c.relname, c.relispartition, a.attgenerated = 's'
FROM pg_catalog.pg_class c
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
WHERE {where} AND a.attgenerated <> 'v'
ORDER BY a.attnum
"""

_KEY = """
SELECT a.attname
FROM pg_catalog.pg_index i
JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
WHERE i.indrelid = %s AND (CASE WHEN %s THEN i.indisreplident ELSE i.indisprimary END)
ORDER BY array_position(i.indkey::int2[], a.attnum)
"""


def type_catalog(conn: psycopg.Connection) -> TypeCatalog:
    return TypeCatalog(lambda oids: conn.execute(TYPE_QUERY, (oids,)).fetchall())


def describe(conn: psycopg.Connection, ref: TableRef) -> SourceTable | None:
    """The table's replicated columns and key, or None when it does not exist."""
    return _describe(conn, "n.nspname = %s AND c.relname = %s", (ref.schema, ref.name))


def describe_oid(conn: psycopg.Connection, oid: int) -> SourceTable | None:
    """The table with this oid under its current name, or None when it no longer exists."""
    return _describe(conn, "c.oid = %s", (oid,))


def _describe(conn: psycopg.Connection, where: str, params: tuple[object, ...]) -> SourceTable | None:
    rows = conn.execute(_DESCRIBE.format(where=where), params).fetchall()
    if not rows:
        return None
    oid, relkind, replident = rows[0][0], rows[0][1], rows[0][2]
    persistence, schema, name, partition = rows[0][9], rows[0][10], rows[0][11], rows[0][12]
    key = tuple(r[0] for r in conn.execute(_KEY, (oid, replident == "i")).fetchall())
    columns = tuple(
        SourceColumn(name, typ, typmod, ndims, name in key, notnull, attnum, bool(generated))
        for _, _, _, name, typ, typmod, ndims, notnull, attnum, *_, generated in rows
    )
    return SourceTable(TableRef(schema, name), oid, relkind, replident, columns, key, persistence, partition)


@dataclass(frozen=True)
class Attribute:
    """A live column as the catalog holds it now."""

    attnum: int
    name: str
    ndims: int
    has_missing: bool  #: rows older than the column read ``missing`` (a constant ADD COLUMN ... DEFAULT)
    missing: str | None  #: the text of attmissingval, a one-element array literal
    has_default: bool = False  #: a default, identity or generation expression: rows may hold values


def attributes(conn: psycopg.Connection, relid: int) -> list[Attribute]:
    """The relation's live columns now, in attnum order (pgoutput's Relation message lacks attnums, array
    dimensions and missing values)."""
    rows = conn.execute(
        "SELECT attnum, attname, attndims, atthasmissing, attmissingval::text, "
        "atthasdef OR attidentity <> '' OR attgenerated <> '' FROM pg_catalog.pg_attribute "
        "WHERE attrelid = %s AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
        (relid,),
    ).fetchall()
    return [Attribute(int(a), n, int(d), bool(h), m, bool(f)) for a, n, d, h, m, f in rows]


def resolve_attnums(names: Sequence[str], live: Sequence[Attribute]) -> list[int | None]:
    """The attnum of each column of a Relation message (``names``, in attnum order) from the catalog as it is now.

    A name the catalog still has resolves directly, unless that breaks the attnum order of the message: then
    the name belongs to a column created after the message was written (dropped and added again since) and
    stays unknown. A name the catalog no longer has (renamed or dropped since: the stream may be replaying older
    changes) is matched by position: between two resolved neighbours, the catalog's unclaimed columns in that
    range are taken in order when there are exactly as many as unresolved names; otherwise it stays None."""
    by_name = {a.name: a.attnum for a in live}
    out: list[int | None] = _increasing([by_name.get(n) for n in names])
    claimed = {a for a in out if a is not None}
    i = 0
    while i < len(out):
        if out[i] is not None:
            i += 1
            continue
        j = i
        while j < len(out) and out[j] is None:
            j += 1
        low = out[i - 1] if i > 0 else 0
        high = out[j] if j < len(out) else None
        free = [
            a.attnum
            for a in live
            if a.attnum not in claimed and a.attnum > (low or 0) and (high is None or a.attnum < high)
        ]
        if len(free) == j - i:
            out[i:j] = free
            claimed.update(free)
        i = j
    return out


def _increasing(attnums: list[int | None]) -> list[int | None]:
    """Keep the longest strictly increasing run of known attnums (the smallest on ties: older columns); the
    others become None."""
    known = [(i, a) for i, a in enumerate(attnums) if a is not None]
    tails: list[int] = []  # tails[k]: index into ``known`` of the smallest tail of an increasing run of k + 1
    parent: list[int] = []
    for j, (_, value) in enumerate(known):
        k = bisect.bisect_left([known[t][1] for t in tails], value)
        parent.append(tails[k - 1] if k else -1)
        if k == len(tails):
            tails.append(j)
        else:
            tails[k] = j
    keep: set[int] = set()
    j = tails[-1] if tails else -1
    while j >= 0:
        keep.add(known[j][0])
        j = parent[j]
    return [a if i in keep else None for i, a in enumerate(attnums)]


def storage_of(conn: psycopg.Connection, relid: int) -> str:
    """A fingerprint of the table's storage (its relfilenodes, partitions included): it changes when PostgreSQL
    rewrites the table (ADD COLUMN with a volatile default, ALTER TYPE, VACUUM FULL, CLUSTER, TRUNCATE)."""
    row = conn.execute(
        "SELECT string_agg(c.relfilenode::text, ',' ORDER BY c.oid) FROM pg_catalog.pg_class c "
        "WHERE (c.oid = %s OR c.oid IN (SELECT relid FROM pg_catalog.pg_partition_tree(%s::oid::regclass))) "
        "AND c.relkind NOT IN ('p', 'I')",
        (relid, relid),
    ).fetchone()
    return str(row[0] or "") if row else ""


def primary_key(conn: psycopg.Connection, relid: int) -> tuple[str, ...]:
    return tuple(r[0] for r in conn.execute(_KEY, (relid, False)).fetchall())


def lake_schema(
    ref: TableRef,
    columns: Sequence[SourceColumn],
    key: Sequence[str],
    catalog: TypeCatalog,
    unbounded_numeric: str,
) -> tuple[TableSchema, dict[str, object]]:
    """Map source columns to lake columns; returns the schema and each column's codec.

    Raises SourceConfigError naming table, column and type when a column has no exact lake type.
    """
    cols = []
    codecs: dict[str, object] = {}
    for col in columns:
        if col.name.startswith("_") and col.name in ("_op", "_lsn", "_seq", "_commit_ts"):
            raise SourceConfigError(
                f"table {ref}: column {col.name!r} collides with a lakegate metadata column; rename it in the source"
            )
        try:
            codec = codec_for(
                catalog, col.type_oid, col.typmod, col.ndims, unbounded_numeric=unbounded_numeric
            )
        except (UnsupportedType, ConversionError) as exc:
            raise UnsupportedColumn(f"table {ref}, column {col.name!r}: {exc}") from exc
        codecs[col.name] = codec
        cols.append(
            Column(
                col.name,
                codec.arrow_type,
                codec.source_type,
                col.name in key,
                not (col.not_null or col.name in key),
                col.attnum,
            )
        )
    return TableSchema(ref, tuple(cols), tuple(key)), codecs


def check_server(conn: psycopg.Connection) -> int:
    """Fail clearly when the server cannot do logical replication; returns the server version number."""
    version = conn.info.server_version
    if version < 130000:
        raise SourceConfigError(
            f"PostgreSQL {version // 10000} is too old; lakegate needs PostgreSQL 13 or newer"
        )
    (wal_level,) = conn.execute("SHOW wal_level").fetchone()  # type: ignore[misc]
    if wal_level != "logical":
        raise SourceConfigError(
            f"wal_level is {wal_level!r} on the source; logical replication needs 'logical'. Run "
            "ALTER SYSTEM SET wal_level = logical (or set it in postgresql.conf) and restart PostgreSQL"
        )
    row = conn.execute(
        "SELECT rolreplication OR rolsuper FROM pg_catalog.pg_roles WHERE rolname = current_user"
    ).fetchone()
    if row is not None and not row[0] and not _member_of_cloud_replication_role(conn):
        user = conn.info.user
        raise SourceConfigError(
            f"role {user!r} may not start logical replication; run ALTER ROLE {user} REPLICATION as a superuser"
        )
    return version


def _member_of_cloud_replication_role(conn: psycopg.Connection) -> bool:
    """Managed services grant replication through a role (RDS: rds_replication; Cloud SQL: cloudsqlsuperuser)."""
    row = conn.execute(
        "SELECT bool_or(pg_has_role(current_user, rolname, 'member')) FROM pg_catalog.pg_roles "
        "WHERE rolname IN ('rds_replication', 'rds_superuser', 'cloudsqlsuperuser', 'azure_pg_admin')"
    ).fetchone()
    return bool(row and row[0])


@dataclass
class Tables:
    """The replicated tables found in the source (by the name in ``replicate``), and the missing ones."""

    found: dict[TableRef, SourceTable]
    missing: dict[TableRef, str]  #: table -> why it is missing (dropped, or renamed to what)
    #: tables dropped and created again under their name since the lake recorded them: copied afresh
    recreated: set[TableRef] = field(default_factory=set)


def check_tables(
    conn: psycopg.Connection, refs: Iterable[TableRef], known: dict[TableRef, int] | None = None
) -> Tables:
    """Describe every replicated table. A table that cannot be replicated (unlogged, no key, a view, ...) or no
    longer exists stops alone, reported in ``missing`` with why, and the other tables go on; only when none is
    left is it an error, listing every table and why. A table no longer under its name is found under its new
    one when ``known`` (the oids the lake recorded) shows that it was renamed (the lake keeps following it by
    oid); one dropped and created again under its name is in ``recreated``."""
    found: dict[TableRef, SourceTable] = {}
    missing: dict[TableRef, str] = {}
    recreated: set[TableRef] = set()
    for ref in refs:
        table = describe(conn, ref)
        oid = (known or {}).get(ref)
        if table is None and oid is not None:
            table = describe_oid(conn, oid)
        elif table is not None and oid is not None and table.oid != oid:
            former = describe_oid(conn, oid)
            if former is not None:  # the lake's table lives on under another name: which one is meant?
                missing[ref] = (
                    f"table {ref} is not the table the lake holds (oid {table.oid}; the lake's, oid {oid}, is "
                    f"called {former.ref} now); put {former.ref} in 'replicate' to follow it, or run 'lakegate "
                    f"maintain --resnapshot {ref}' with the worker stopped to copy the new {ref}"
                )
                continue
            recreated.add(ref)  # dropped and created again: the new table is copied afresh
        if table is None:
            missing[ref] = f"table {ref} does not exist{_did_you_mean(conn, ref)}"
            continue
        problem = _problem(conn, ref, table)
        if problem:  # that table stops, the others go on (issue 29.3)
            missing[ref] = problem
            continue
        found[ref] = table
    if not found:
        raise SourceConfigError("cannot replicate: " + "; ".join(missing.values()))
    return Tables(found, missing, {ref for ref in recreated if ref in found})


def _problem(conn: psycopg.Connection, ref: TableRef, table: SourceTable) -> str | None:
    if table.relkind not in ("r", "p"):
        kind = {"f": "a foreign table", "v": "a view", "m": "a materialized view"}.get(
            table.relkind, "not a table"
        )
        return f"{ref} is {kind} (relkind {table.relkind!r}); only tables can be replicated: leave it out of replicate"
    if table.persistence == "u":
        return (
            f"table {ref} is UNLOGGED: its changes are not written to the WAL, so logical replication cannot see "
            f"them. ALTER TABLE {ref} SET LOGGED, or leave it out of 'replicate'"
        )
    if table.persistence == "t":
        return f"{ref} is a temporary table (it exists only in one session); leave it out of 'replicate'"
    (can_select,) = conn.execute("SELECT has_table_privilege(%s, 'SELECT')", (table.oid,)).fetchone()  # type: ignore[misc]
    if not can_select:
        return f"role {conn.info.user!r} cannot SELECT from {ref}; GRANT SELECT ON {ref} TO {conn.info.user}"
    if table.replica_identity == "n":
        return (
            f"table {ref} has REPLICA IDENTITY NOTHING, so updates and deletes cannot be captured; "
            f"ALTER TABLE {ref} REPLICA IDENTITY DEFAULT (with a primary key) or FULL"
        )
    if not table.key and table.replica_identity != "f":
        return (
            f"table {ref} has no primary key; add one, or run ALTER TABLE {ref} REPLICA IDENTITY "
            "FULL to replicate it as a change log only"
        )
    return None


def _did_you_mean(conn: psycopg.Connection, ref: TableRef) -> str:
    names = [
        f"{s}.{t}"
        for s, t in conn.execute(
            "SELECT schemaname, tablename FROM pg_catalog.pg_tables "
            "WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchall()
    ]
    close = difflib.get_close_matches(str(ref), names, n=3)
    return f" (did you mean {', '.join(close)}?)" if close else ""


def partition_tree(conn: psycopg.Connection, oid: int) -> dict[int, bool]:
    """The partitions of a partitioned table (all levels; the table itself left out): oid -> whether a leaf."""
    rows = conn.execute(
        "SELECT relid::int8, isleaf FROM pg_catalog.pg_partition_tree(%s::oid::regclass) WHERE relid <> %s::oid",
        (oid, oid),
    ).fetchall()
    return {int(relid): bool(leaf) for relid, leaf in rows}


def partition_root(conn: psycopg.Connection, relid: int) -> int | None:
    """The top of the partition tree ``relid`` belongs to (None when it is no partition)."""
    row = conn.execute(
        "SELECT pg_catalog.pg_partition_root(c.oid)::int8 FROM pg_catalog.pg_class c "
        "WHERE c.oid = %s AND c.relispartition",
        (relid,),
    ).fetchone()
    return int(row[0]) if row and row[0] is not None else None


def attached_with_rows(conn: psycopg.Connection, relid: int) -> bool:
    """Whether the partition ``relid`` was attached (not created as a partition) and holds rows: rows that came
    in with ATTACH PARTITION, which the stream never carried. A partition created as one (CREATE TABLE ...
    PARTITION OF) has its pg_inherits row from the same transaction as its row type."""
    row = conn.execute(
        "SELECT t.xmin::text <> i.xmin::text, pg_catalog.format('%%I.%%I', n.nspname, c.relname), c.relkind "
        "FROM pg_catalog.pg_class c JOIN pg_catalog.pg_type t ON t.oid = c.reltype "
        "JOIN pg_catalog.pg_inherits i ON i.inhrelid = c.oid "
        "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s",
        (relid,),
    ).fetchone()
    if row is None or not row[0] or row[2] != "r":
        return False
    (has_rows,) = conn.execute(f"SELECT EXISTS (SELECT 1 FROM ONLY {row[1]})").fetchone()  # type: ignore[misc]
    return bool(has_rows)

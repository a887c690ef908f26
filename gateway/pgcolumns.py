"""PostgreSQL's column types of the PostgreSQL tables a lake-route (DuckDB) statement reads, for the typing of
the statement (:mod:`lakegate.gateway.pgtyping`), as DuckDB's PostgreSQL scanner delivers them.

The scanner strips the padding of ``char(n)`` values: the statement reads such a table through a view that pads
them back (:func:`view_columns`), so that its ``char(n)`` columns are what a lake table's are (``padded=True``,
PostgreSQL's values) wherever they go: ``SELECT *``, ``USING`` joins, ``DISTINCT``, ``UNION``, arrays. The
scanner also reads an unconstrained ``numeric`` as a double, and a ``bpchar`` without a length (whose trailing
spaces are part of the value) without its trailing spaces: such columns are marked ``lossy`` and refused where a
statement uses them.
Types are read from ``pg_attribute`` and kept a few seconds (a statement's routing is cached anyway).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlglot import exp
from sqlglot.errors import ParseError

from lakegate.connectors.query import QueryError
from lakegate.gateway.catalog import Catalog, TableRef
from lakegate.gateway.collations import NONDETERMINISTIC, Collation, column_collation, database_collation
from lakegate.gateway.lake import quote
from lakegate.gateway.pgtype import EQUAL, PgType, from_sqlglot, named_as_text

COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod), to_jsonb(co),
       (SELECT to_jsonb(d) - 'datacl' FROM pg_catalog.pg_database d WHERE d.datname = current_database()),
       (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder) FROM pg_catalog.pg_enum e
        WHERE e.enumtypid = coalesce(el.oid, ty.oid))
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_type ty ON ty.oid = a.atttypid
LEFT JOIN pg_catalog.pg_type el ON el.oid = ty.typelem AND ty.typcategory = 'A'
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_collation co ON co.oid = a.attcollation
WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""
TTL = 5.0
RETRY = 60.0  #: seconds a source whose catalog could not be read is not asked again for a lake query
LOSSY_NUMERIC = (
    "an unconstrained numeric of a PostgreSQL table, which DuckDB's PostgreSQL scanner reads as a double"
)
LOSSY_TIMETZ = "a timetz column of a PostgreSQL table, whose offset DuckDB's PostgreSQL scanner drops"
LOSSY_BPCHAR = (
    "a bpchar column without a length of a PostgreSQL table, whose trailing spaces DuckDB's PostgreSQL scanner "
    "drops"
)


def scanner_type(text: str, labels: Sequence[str] | None = None) -> PgType | None:
    """``format_type()`` text -> the PgType of the column as DuckDB's scanner reads it: a type the rules do not
    know is its text (:func:`lakegate.gateway.pgtype.named_as_text`; ``labels``: an enum's, in order)."""
    try:
        typ = from_sqlglot(exp.DataType.build(text, dialect="postgres"))
    except (ParseError, ValueError):
        typ = None
    if typ is None:
        return named_as_text(text, labels=None if labels is None else tuple(labels))
    if typ.is_("timetz"):
        return replace(typ, lossy=LOSSY_TIMETZ)
    if typ.numeric and typ.precision is None:
        return PgType("numeric", typ.dims, loose_scale=True, lossy=LOSSY_NUMERIC)
    if typ.name == "bpchar":  # char(n): padded back by the view that reads the table (view_columns)
        return replace(typ, padded=True) if typ.length is not None else replace(typ, lossy=LOSSY_BPCHAR)
    return typ


def _collated(typ: PgType | None, collation: Any, database: Any) -> PgType | None:
    """``typ`` with the collation it orders and maps case by (a nondeterministic one makes it lossy)."""
    if typ is None or not collation:
        return typ
    found = column_collation(collation, database)
    typ = replace(typ, collation=found.order or "", casing=found.casing)
    return (
        typ if found.deterministic else replace(typ, lossy=NONDETERMINISTIC.format(collation.get("collname")))
    )


def with_source_collations(
    types: dict[str, PgType | None], source: dict[str, PgType | None] | None
) -> dict[str, PgType | None]:
    """A lake table's column types with the collations of its source table's columns of the same name."""
    if not source:
        return types
    out = dict(types)
    for name, typ in types.items():
        of_source = source.get(name)
        if typ is not None and of_source is not None and typ.as_text == "" and of_source.labels is not None:
            out[name] = typ = replace(typ, as_text=EQUAL, labels=of_source.labels)  # an enum: its source says so
        if typ is not None and of_source is not None and of_source.collation is not None:
            nondeterministic = (of_source.lossy or "").startswith(NONDETERMINISTIC.split("{")[0])
            lossy = of_source.lossy if nondeterministic else None
            out[name] = replace(
                typ, collation=of_source.collation, casing=of_source.casing, lossy=typ.lossy or lossy
            )
    return out


def view_columns(types: dict[str, PgType | None] | None) -> str | None:
    """The select list of the view through which a statement reads a PostgreSQL table: its ``char(n)`` columns
    (and arrays of them) padded back to their length, and its ``inet`` values shown as PostgreSQL shows them
    (the scanner reads ``inet::text``, which adds ``/32`` to a host), as PostgreSQL returns them; None when none
    needs it."""
    if not types or not any(_fix(typ) for typ in types.values()):
        return None
    items = []
    for name, typ in types.items():
        column = quote(name)
        fix = _fix(typ)
        if typ is not None and fix:
            value = fix.format(column) if not typ.dims else _each(column, fix, typ.dims)
            items.append(f"{value} AS {column}")
        else:
            items.append(column)
    return ", ".join(items)


#: an inet's text without the netmask of a single host, as PostgreSQL's output function writes it
INET_OUTPUT = (
    "CASE WHEN contains({0}, ':') THEN regexp_replace({0}, '/128$', '') "
    "ELSE regexp_replace({0}, '/32$', '') END"
)


def _fix(typ: PgType | None) -> str:
    """The expression (``{0}``: the value) that makes a scanned value PostgreSQL's, or "" when it is."""
    if typ is None or typ.lossy is not None:
        return ""
    if typ.name == "bpchar" and typ.length is not None:
        return f"rpad({{0}}, {typ.length}, ' ')"
    return INET_OUTPUT if typ.name == "inet" and typ.as_text is not None else ""


def _each(column: str, fix: str, dims: int) -> str:
    """``fix`` applied to every element of an array of ``dims`` dimensions (DuckDB: lists of lists)."""
    if dims == 0:
        return fix.format(column)
    return f"list_transform({column}, x{dims} -> {_each(f'x{dims}', fix, dims - 1)})"


class PgColumns:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cache: dict[tuple[str, str, str], tuple[float, dict[str, PgType | None] | None]] = {}
        self._lock = threading.Lock()
        self._defaults: dict[str, Collation] = {}  #: source -> its database's default collation
        self._failed: dict[str, float] = {}  #: source -> when reading its catalog last failed
        self._known: dict[
            tuple[str, str, str], dict[str, PgType | None]
        ] = {}  #: last read of a lake's source

    def default_collation(self, source: str) -> Collation | None:
        """The default collation of the source's database (None: not read yet)."""
        with self._lock:
            return self._defaults.get(source)

    def types(self, ref: TableRef) -> dict[str, PgType | None] | None:
        """The columns of a PostgreSQL table as the statement's view of it reads them."""
        return self.read(ref.source, ref.schema, ref.name)

    def collations(self, source: str, schema: str, name: str) -> dict[str, PgType | None] | None:
        """The columns of the source table of a lake table, for their collations (None: not known). A lake
        query must not wait for a source that is down: after a failed read the source is not asked again for
        ``RETRY`` seconds, and meanwhile the last collations read are used (they change rarely)."""
        key = (source, schema, name)
        with self._lock:
            failed = self._failed.get(source)
            if failed is not None and time.monotonic() - failed < RETRY:
                return self._known.get(key)
        found = self.read(source, schema, name)
        with self._lock:
            if found is not None:
                self._known[key] = found
            return found if found is not None else self._known.get(key)

    def read(self, source: str, schema: str, name: str) -> dict[str, PgType | None] | None:
        key = (source, schema, name)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[0] < TTL:
            return hit[1]
        engine = self.catalog.postgres.get(source)
        found: dict[str, PgType | None] | None = None
        if engine is not None:
            try:
                rows = engine.fetch(COLUMNS, (schema, name))
                found = {
                    str(row[0]): _collated(scanner_type(str(row[1]), row[4]), row[2], row[3])
                    for row in rows
                } or None
                with self._lock:
                    self._failed.pop(source, None)
                    if rows:
                        self._defaults[source] = database_collation(rows[0][3])
            except QueryError:
                found = None  # the query reads it live and reports what is wrong
                with self._lock:
                    self._failed[source] = now
        with self._lock:
            self._cache[key] = (now, found)
        return found

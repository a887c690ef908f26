"""PostgreSQL's column types of the PostgreSQL tables a lake-route (DuckDB) statement reads, for the typing of
the statement (:mod:`lakegate.gateway.pgtyping`), as DuckDB's PostgreSQL scanner delivers them.

The scanner strips the padding of ``char(n)`` values (the type says so: ``padded=False``), and reads an
unconstrained ``numeric`` as a double: such a column is marked ``lossy`` and refused where a statement uses it.
Types are read from ``pg_attribute`` and kept a few seconds (a statement's routing is cached anyway).
"""

from __future__ import annotations

import threading
import time

from sqlglot import exp
from sqlglot.errors import ParseError

from lakegate.connectors.query import QueryError
from lakegate.gateway.catalog import Catalog, TableRef
from lakegate.gateway.pgtype import PgType, from_sqlglot

COLUMNS = """
SELECT a.attname, format_type(a.atttypid, a.atttypmod)
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attnum
"""
TTL = 5.0
LOSSY_NUMERIC = (
    "an unconstrained numeric of a PostgreSQL table, which DuckDB's PostgreSQL scanner reads as a double"
)


def scanner_type(text: str) -> PgType | None:
    """``format_type()`` text -> the PgType of the column as DuckDB's scanner reads it."""
    try:
        built = exp.DataType.build(text, dialect="postgres")
    except (ParseError, ValueError):
        return None
    typ = from_sqlglot(built)
    if typ is None:
        return None
    if typ.numeric and typ.precision is None:
        return PgType("numeric", typ.dims, loose_scale=True, lossy=LOSSY_NUMERIC)
    return typ


class PgColumns:
    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cache: dict[tuple[str, str, str], tuple[float, dict[str, PgType | None] | None]] = {}
        self._lock = threading.Lock()

    def types(self, ref: TableRef) -> dict[str, PgType | None] | None:
        key = (ref.source, ref.schema, ref.name)
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[0] < TTL:
            return hit[1]
        engine = self.catalog.postgres.get(ref.source)
        found: dict[str, PgType | None] | None = None
        if engine is not None:
            try:
                rows = engine.fetch(COLUMNS, (ref.schema, ref.name))
                found = {str(name): scanner_type(str(text)) for name, text in rows} or None
            except QueryError:
                found = None  # the query reads it live and reports what is wrong
        with self._lock:
            self._cache[key] = (now, found)
        return found

"""What the sources hold, for people and schema browsers: ``GET /v1/schema``, ``SHOW ...`` and ``DESCRIBE``."""

from __future__ import annotations

import datetime
from typing import Any

import pyarrow as pa
from sqlglot import exp

from lakegate.connectors.iceberg.schema import CHANGELOG_SUFFIX
from lakegate.connectors.iceberg.writer import PROP_LSN
from lakegate.connectors.query import QueryError
from lakegate.gateway.catalog import LAKE, SYSTEM_SCHEMAS, Catalog
from lakegate.gateway.errors import BadRequest, Unavailable

PG_COLUMNS = """
SELECT n.nspname, c.relname, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,
       pg_catalog.array_position(k.indkey::int2[], a.attnum)
FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
LEFT JOIN pg_catalog.pg_index k ON k.indrelid = c.oid AND k.indisprimary
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname NOT LIKE 'pg\\_toast%%' AND n.nspname NOT LIKE 'pg\\_temp%%'
  AND (%s::text IS NULL OR (n.nspname = %s AND c.relname = %s))
ORDER BY 1, 2, a.attnum
"""
RELKINDS = {
    "r": "table",
    "p": "partitioned table",
    "v": "view",
    "m": "materialized view",
    "f": "foreign table",
}
SNAPSHOTS_SHOWN = 20


def _iso(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).isoformat()


def lake_tables(catalog: Catalog) -> list[dict[str, Any]]:
    listing = catalog.lake.listing()
    out = []
    for namespace, name in sorted(listing):
        entry = catalog.lake.entry(namespace, name, listing)
        history = entry.table  # the versions time travel names (a state table's own snapshots)
        snapshots = [
            {
                "snapshot_id": s.snapshot_id,
                "committed_at": _iso(s.timestamp_ms),
                "lsn": (s.summary.additional_properties.get(PROP_LSN) if s.summary else None),
            }
            for s in history.snapshots()[-SNAPSHOTS_SHOWN:]
        ]
        out.append(
            {
                "schema": namespace,
                "name": name,
                "kind": entry.kind,
                "key": list(entry.key),
                "columns": [
                    {"name": f.name, "type": str(f.field_type), "nullable": not f.required}
                    for f in entry.table.schema().fields
                ],
                "snapshots": snapshots,
            }
        )
    return out


def pg_tables(
    catalog: Catalog, source: str, schema: str | None = None, name: str | None = None
) -> list[dict[str, Any]]:
    try:
        rows = catalog.postgres[source].fetch(PG_COLUMNS, (schema, schema, name))
    except QueryError as exc:
        raise Unavailable(f"cannot read the tables of PostgreSQL source {source!r}: {exc}") from exc
    kinds = catalog.tables(source)
    tables: dict[tuple[str, str], dict[str, Any]] = {}
    keys: dict[tuple[str, str], dict[str, int]] = {}
    for nsp, rel, column, typ, nullable, key_position in rows:
        table = tables.setdefault(
            (nsp, rel),
            {
                "schema": nsp,
                "name": rel,
                "kind": RELKINDS.get(kinds.get((nsp, rel), "r"), "table"),
                "columns": [],
            },
        )
        table["columns"].append({"name": column, "type": typ, "nullable": nullable})
        if key_position is not None:  # a column of the primary key, at this position in it
            keys.setdefault((nsp, rel), {})[column] = key_position
    for where, table in tables.items():
        table["key"] = sorted(keys.get(where, {}), key=keys.get(where, {}).__getitem__)
    return list(tables.values())


def schema_listing(catalog: Catalog) -> dict[str, Any]:
    sources: list[dict[str, Any]] = [{"name": catalog.lake_name, "kind": LAKE, "tables": lake_tables(catalog)}]
    for source in catalog.postgres:
        try:
            sources.append({"name": source, "kind": "postgres", "tables": pg_tables(catalog, source)})
        except Unavailable as exc:
            sources.append({"name": source, "kind": "postgres", "tables": [], "error": exc.message})
    return {"sources": sources, "search_path": catalog.search_path}


def show(catalog: Catalog, what: str, where: list[str]) -> pa.Table:
    if what == "sources":
        return pa.table(
            {"source": catalog.sources, "kind": [LAKE] + ["postgres"] * (len(catalog.sources) - 1)}
        )
    sources = catalog.sources
    if where:
        if where[0] not in sources:
            raise BadRequest(f"unknown source {where[0]!r} (sources: {', '.join(sources)})")
        sources = [where[0]]
    rows: list[tuple[str, str, str, str]] = []
    for source in sources:
        for (schema, name), kind in sorted(catalog.tables(source).items()):
            if schema in SYSTEM_SCHEMAS or (len(where) > 1 and schema != where[1]):
                continue
            if kind == "iceberg":
                kind = "changelog" if name.endswith(CHANGELOG_SUFFIX) else "iceberg"
            rows.append((source, schema, name, RELKINDS.get(kind, kind)))
    if what == "schemas":
        pairs = sorted({(r[0], r[1]) for r in rows})
        return pa.table({"source": [p[0] for p in pairs], "schema": [p[1] for p in pairs]})
    return pa.table(
        {
            "source": [r[0] for r in rows],
            "schema": [r[1] for r in rows],
            "table": [r[2] for r in rows],
            "kind": [r[3] for r in rows],
        },
        schema=pa.schema(
            [("source", pa.string()), ("schema", pa.string()), ("table", pa.string()), ("kind", pa.string())]
        ),
    )


def describe_table(catalog: Catalog, node: exp.Expression) -> pa.Table:
    if not isinstance(node, exp.Table) or isinstance(node.this, exp.Func):
        raise BadRequest("DESCRIBE takes a table name, e.g. DESCRIBE lake.public.users")
    ref = catalog.resolve(node, catalog.lake.listing())
    if ref.kind == LAKE:
        entry = catalog.lake.entry(ref.schema, ref.name, catalog.lake.listing())
        columns = [
            (f.name, str(f.field_type), not f.required, f.name in entry.key)
            for f in entry.table.schema().fields
        ]
    else:
        found = pg_tables(catalog, ref.source, ref.schema, ref.name)
        key = set(found[0]["key"]) if found else set()
        columns = [
            (c["name"], c["type"], c["nullable"], c["name"] in key)
            for c in (found[0]["columns"] if found else [])
        ]
    return pa.table(
        {
            "column": [c[0] for c in columns],
            "type": [c[1] for c in columns],
            "nullable": [c[2] for c in columns],
            "key": [c[3] for c in columns],
        },
        schema=pa.schema(
            [("column", pa.string()), ("type", pa.string()), ("nullable", pa.bool_()), ("key", pa.bool_())]
        ),
    )

"""Reading the lake tables of a query at one source position (the consistent cut, issue 11.8).

A worker commits a flush table by table and then records, per source, the position every one of its tables has
reached (:mod:`lakegate.connectors.iceberg.cut`). A query that reads lake tables without time travel reads each
table of a source at its newest snapshot stamped below that source's cut: a multi-table transaction is seen whole
or not at all, and the response says which position it saw (``source_lsn``). A table already at the cut (the usual
case: nothing is being committed) is read at its current snapshot, so the lake cache serves it as before; so is a
table whose columns changed since the cut (its older version lacks the columns the query names).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyiceberg.catalog.sql import IcebergNamespaceProperties, SqlCatalog
from sqlalchemy import select

from lakegate.connectors.changes import format_lsn
from lakegate.connectors.iceberg import cut
from lakegate.gateway.errors import Unavailable
from lakegate.gateway.lake import Lake, LakeEntry, TimeTravel


def cuts(lake: Lake) -> dict[str, int]:
    """source -> its newest recorded cut (each namespace holding its tables has one; any of them holds for all
    of its tables, so the newest is the freshest consistent position)."""
    try:
        catalog = lake.catalog
        if isinstance(catalog, SqlCatalog):
            name = catalog.name
            columns = IcebergNamespaceProperties
            rows = lake.catalog_rows(  # read for every query that reads lake tables: compiled once
                "cuts",
                lambda: select(columns.namespace, columns.property_key, columns.property_value).where(
                    columns.catalog_name == name, columns.property_key.startswith(cut.PREFIX)
                ),
            )
            by_namespace: dict[str, dict[str, str]] = {}
            for namespace, key, value in rows:
                by_namespace.setdefault(str(namespace), {})[str(key)] = str(value)
            props = list(by_namespace.values())
        else:
            props = [catalog.load_namespace_properties(ns) for ns in catalog.list_namespaces()]
    except Exception as exc:  # whatever the catalog implementation raises
        raise Unavailable(f"cannot read the lake's consistent cut: {exc}") from exc
    newest: dict[str, int] = {}
    for found in props:
        for source, lsn in cut.parse(found).items():
            newest[source] = max(lsn, newest.get(source, lsn))
    return newest


def travels(entries: Sequence[LakeEntry], recorded: dict[str, int]) -> tuple[list[TimeTravel | None], str | None]:
    """For each entry read without time travel, the version to read at its source's cut (None: the current
    one), and the ``source_lsn`` to report (``X/Y``, or ``name=X/Y,...`` for several sources; None without a
    cut)."""
    out: list[TimeTravel | None] = []
    seen: dict[str, int] = {}
    for entry in entries:
        at = recorded.get(entry.source) if entry.source is not None else None
        if at is None:
            out.append(None)
            continue
        seen[entry.source] = at  # type: ignore[index]
        table = entry.table  # its own snapshots are its versions (a state table is exact at each of them)
        snap = cut.snapshot_at(table, at)
        current = table.current_snapshot()
        if snap is None or current is None or snap.snapshot_id == current.snapshot_id:
            out.append(None)
        elif snap.schema_id != current.schema_id:
            # the table's columns changed since the cut (a column added, or the table copied afresh): the query
            # names today's columns, which the older version does not have; it reads the table as it is now
            out.append(None)
        else:
            out.append(TimeTravel(snapshot_id=snap.snapshot_id))
    if not seen:
        return out, None
    if len(seen) == 1:
        return out, format_lsn(next(iter(seen.values())))
    return out, ",".join(f"{source}={format_lsn(lsn)}" for source, lsn in sorted(seen.items()))

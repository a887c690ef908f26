"""Freshness of every lake table (``GET /v1/status`` and the table gauges of ``/metrics``).

For a replicated table: the position its change log holds (``committed_lsn``), the position its state table holds
(``folded_lsn``, the name kept from the first version's folds; equal to ``committed_lsn`` but for the moment between
a flush's two commits), the source's current WAL position (``source_lsn``) and what the replication slot has
confirmed (``confirmed_lsn``). The worker confirms only what every table has committed, so a table is current up
to the larger of its own stamp and the slot's confirmation, and ``lag_bytes`` is the WAL after that.
``lag_seconds`` is PostgreSQL's own measure for the slot's connection (``pg_stat_replication.flush_lag``, 0 when
caught up); with no worker connected it is the time since the table's last commit, or null when unknown.
``upkeep`` is null, or the background upkeep steps (maintenance) the worker has seen failing for the table,
each with ``since`` and ``error``.
"""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Mapping
from typing import Any

from pyiceberg.table import Table

from lakegate.connectors.changes import format_lsn, parse_lsn
from lakegate.connectors.iceberg.schema import CHANGELOG_SUFFIX
from lakegate.connectors.query import QueryError
from lakegate.gateway.catalog import Catalog
from lakegate.gateway.lake import stamp_at

SOURCE_POSITION = """
SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_lsn() END)::text,
       s.confirmed_flush_lsn::text, coalesce(s.active, false), extract(epoch FROM r.flush_lag)::float8
FROM (SELECT 1) AS one
LEFT JOIN pg_catalog.pg_replication_slots s ON s.slot_name = %s
LEFT JOIN pg_catalog.pg_stat_replication r ON r.pid = s.active_pid
"""


def _summary(table: Table, key: str) -> int | None:
    snap = table.current_snapshot()
    if snap is None or snap.summary is None:
        return 0
    value = snap.summary.additional_properties.get(key)
    return int(value) if value is not None else None


def _source_positions(catalog: Catalog, slots: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name, slot in slots.items():
        try:
            rows = catalog.postgres[name].fetch(SOURCE_POSITION, (slot,), timeout=5.0)
        except QueryError as exc:
            out[name] = {"error": str(exc)}
            continue
        current, confirmed, active, flush_lag = rows[0]
        out[name] = {
            "source_lsn": parse_lsn(current) if current else None,
            "confirmed_lsn": parse_lsn(confirmed) if confirmed else None,
            "slot_active": bool(active),
            "flush_lag": flush_lag,
        }
    return out


def table_status(entry: Any, source: dict[str, Any] | None, now: float) -> dict[str, Any]:
    history = entry.history
    committed = stamp_at(history, history.current_snapshot())
    snap = history.current_snapshot()
    last_commit = snap.timestamp_ms / 1000 if snap is not None else None
    out: dict[str, Any] = {
        "table": f"lake.{entry.namespace}.{entry.name}",
        "kind": entry.kind,
        "source": entry.source,
        "committed_lsn": format_lsn(committed.lsn) if committed else None,
        "folded_lsn": None,
        "source_lsn": None,
        "confirmed_lsn": None,
        "lag_bytes": None,
        "lag_seconds": None,
        "last_commit": datetime.datetime.fromtimestamp(last_commit, datetime.UTC).isoformat()
        if last_commit
        else None,
        "files": {
            "changelog" if entry.changelog is not None or entry.kind == "changelog" else "data": _summary(
                history, "total-data-files"
            )
        },
        "rows": {
            "changelog" if entry.changelog is not None or entry.kind == "changelog" else "data": _summary(
                history, "total-records"
            )
        },
    }
    out["upkeep"] = _upkeep(history)
    if entry.changelog is not None:
        folded = stamp_at(entry.table, entry.table.current_snapshot())
        out["folded_lsn"] = format_lsn(folded.lsn) if folded else None
        out["files"]["state"] = _summary(entry.table, "total-data-files")
        out["rows"]["state"] = _summary(entry.table, "total-records")
    if source and source.get("source_lsn") is not None:
        held = max(committed.lsn if committed else 0, source.get("confirmed_lsn") or 0)
        lag = max(0, source["source_lsn"] - held)
        out.update(
            source_lsn=format_lsn(source["source_lsn"]),
            confirmed_lsn=format_lsn(source["confirmed_lsn"]) if source.get("confirmed_lsn") else None,
            lag_bytes=lag,
        )
        if source.get("slot_active"):
            out["lag_seconds"] = round(float(source.get("flush_lag") or 0.0), 3)
        elif lag == 0:
            out["lag_seconds"] = 0.0
        elif last_commit is not None:
            out["lag_seconds"] = round(max(0.0, now - last_commit), 3)
    elif source and "error" in source:
        out["source_error"] = source["error"]
    return out


def _upkeep(history: Table) -> dict[str, Any] | None:
    """The worker's failing upkeep steps of the table, as it records them (``lakegate.upkeep``), or None."""
    raw = history.properties.get("lakegate.upkeep")
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return {"unknown": {"error": raw[:500], "since": None}}
    return value if isinstance(value, dict) else None


def lake_status(catalog: Catalog, slots: Mapping[str, str]) -> dict[str, Any]:
    """``slots``: the replication slot of every PostgreSQL source."""
    listing = catalog.lake.listing()
    sources = _source_positions(catalog, slots)
    now = time.time()
    tables = []
    for namespace, name in sorted(listing):
        if name.endswith(CHANGELOG_SUFFIX) and (namespace, name[: -len(CHANGELOG_SUFFIX)]) in listing:
            continue  # reported with its state table
        entry = catalog.lake.entry(namespace, name, listing)
        tables.append(table_status(entry, sources.get(entry.source or ""), now))
    return {
        "tables": tables,
        "sources": {
            name: {k: (format_lsn(v) if k.endswith("_lsn") and v is not None else v) for k, v in info.items()}
            for name, info in sources.items()
        },
    }

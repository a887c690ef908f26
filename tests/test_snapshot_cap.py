"""Snapshot expiry by count (``snapshot_keep``, issue 11.16): a busy table keeps its newest snapshots only, never
the one a reader at the consistent cut reads, and its rows stay exact; on a real SQLite catalog, no PostgreSQL."""

from __future__ import annotations

import datetime
from datetime import timedelta
from pathlib import Path

import pyarrow as pa

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg import cut, maintenance
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.references import referenced_paths
from lakegate.connectors.iceberg.writer import LakeTable

COLUMNS = (Column("id", pa.int64(), "bigint", key=True), Column("v", pa.string(), "text"))
SCHEMA = TableSchema(TableRef("public", "busy"), COLUMNS, ("id",))


def _change(lsn: int) -> pa.Table:
    now = datetime.datetime.now(datetime.UTC)
    return pa.table(
        {
            "id": pa.array([lsn % 4], pa.int64()),
            "v": pa.array([f"v{lsn}"]),
            OP: pa.array(["u"]),
            LSN: pa.array([lsn], pa.int64()),
            SEQ: pa.array([1], pa.int64()),
            COMMIT_TS: pa.array([now], pa.timestamp("us", tz="UTC")),
        }
    )


def _busy_table(tmp_path: Path, commits: int) -> LakeTable:
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    table = LakeTable(catalog, SCHEMA, source="pg")
    table.create()
    for lsn in range(100, 100 + commits):
        table.append(_change(lsn), Position(lsn, 1))
    return table


def _stamps(table) -> list[int]:  # type: ignore[no-untyped-def]
    return sorted(int(s.summary.additional_properties["lakegate.lsn"]) for s in table.metadata.snapshots)


def test_all_but_the_newest_snapshots_are_expired_and_the_rows_stay(tmp_path: Path) -> None:
    table = _busy_table(tmp_path, 12)
    assert table.changelog is not None and table.state is not None
    rows = table.changelog.scan().to_arrow().num_rows
    state = sorted(table.state.scan().to_arrow().to_pylist(), key=lambda r: r["id"])
    for lake in (table.changelog, table.state):
        result = maintenance.expire(lake, timedelta(hours=1), keep_at_most=5)
        assert result.snapshots_expired == 7, _stamps(lake)
        assert _stamps(lake) == list(range(107, 112))
    assert table.changelog.scan().to_arrow().num_rows == rows == 12
    assert sorted(table.state.scan().to_arrow().to_pylist(), key=lambda r: r["id"]) == state
    assert table.checkpoint() == Position(111, 1)
    on_disk = {str(p) for p in (tmp_path / "warehouse").rglob("*.avro")}
    kept = {p.removeprefix("file://") for p in referenced_paths(table.changelog) | referenced_paths(table.state)}
    assert on_disk == {p for p in kept if p.endswith(".avro")}, "the expired snapshots' manifests are deleted"


def test_the_snapshot_the_consistent_cut_reads_is_kept(tmp_path: Path) -> None:
    table = _busy_table(tmp_path, 12)
    assert table.changelog is not None
    cut.record(table.catalog, "pg", ["public"], 104)  # readers read the table as of its commit stamped 103
    position = cut.parse(table.catalog.load_namespace_properties("public"))["pg"]
    result = maintenance.expire(table.changelog, timedelta(hours=1), keep_at_most=5, cut=position)
    assert result.snapshots_expired == 3
    assert _stamps(table.changelog) == list(range(103, 112))
    at_cut = cut.snapshot_at(table.changelog, position)
    assert at_cut is not None and at_cut.summary is not None
    assert at_cut.summary.additional_properties["lakegate.lsn"] == "103"
    assert table.changelog.scan(snapshot_id=at_cut.snapshot_id).to_arrow().num_rows == 4

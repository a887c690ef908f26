"""The lean commit path (connectors/iceberg/leancommit.py) writes what pyiceberg's snapshot producers write: two
twin tables receive the same changes in the same flushes, one committed the lean way and one through pyiceberg,
and their rows, snapshot summaries, sequence numbers, manifest lists and manifest entries are compared, past the
point where the manifests are merged and the state table compacted (those commits go through pyiceberg)."""

from __future__ import annotations

import datetime
import zlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import ManifestContent
from pyiceberg.table import Table
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.table.snapshots import Operation, Snapshot, Summary
from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg import compaction, flushcatalog, leancommit, txncache
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.writer import LakeTable

FLUSHES = 40  #: past min-count-to-merge (32) manifests, and a few state compactions
SIZE_KEYS = {
    "added-files-size",
    "removed-files-size",
    "total-files-size",
}  # Parquet bytes may differ by a few


def _schema(name: str) -> TableSchema:
    columns = (Column("id", pa.int64(), "bigint", key=True), Column("name", pa.string(), "text"))
    return TableSchema(TableRef("public", name), columns, ("id",))


def _changes(flush: int) -> pa.Table:
    """Inserts of two new keys, an update of an older one and a delete of another: the state table gets data
    files and position-delete files."""
    lsn = 100 + flush
    ops = [("c", 2 * flush), ("c", 2 * flush + 1), ("u", flush), ("d", flush - 3)]
    ops = [(op, key) for op, key in ops if key >= 0 and not (op == "d" and key % 2)]
    at = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=flush)
    return pa.table(
        {
            "id": pa.array([key for _, key in ops], pa.int64()),
            "name": pa.array([f"{op}{flush}" for op, _ in ops]),
            OP: pa.array([op for op, _ in ops]),
            LSN: pa.array([lsn] * len(ops), pa.int64()),
            SEQ: pa.array(range(1, len(ops) + 1), pa.int64()),
            COMMIT_TS: pa.array([at] * len(ops), pa.timestamp("us", tz="UTC")),
        }
    )


def _manifests(table: Table) -> list[tuple[Any, ...]]:
    """The current snapshot's manifest list and entries, without paths and snapshot ids."""
    snapshot = table.current_snapshot()
    assert snapshot is not None
    out = []
    for manifest in snapshot.manifests(table.io):
        entries = sorted(
            (
                e.status.value,
                e.sequence_number,
                e.file_sequence_number,
                e.data_file.content.value,
                e.data_file.record_count,
            )
            for e in manifest.fetch_manifest_entry(table.io, discard_deleted=False)
        )
        out.append(
            (
                manifest.content.value,
                manifest.sequence_number,
                manifest.min_sequence_number,
                manifest.added_files_count,
                manifest.existing_files_count,
                manifest.deleted_files_count,
                manifest.added_rows_count,
                manifest.existing_rows_count,
                manifest.deleted_rows_count,
                manifest.partitions,
                tuple(entries),
            )
        )
    return sorted(out, key=repr)


def _history(table: Table) -> list[tuple[Any, ...]]:
    return [
        (
            s.sequence_number,
            s.schema_id,
            s.parent_snapshot_id is None,
            {k: v for k, v in (s.summary.model_dump() if s.summary else {}).items() if k not in SIZE_KEYS},
        )
        for s in table.snapshots()
    ]


@pytest.fixture
def twins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[LakeTable, LakeTable, list[bool]]:
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    made = []
    for name in ("lean", "plain"):
        table = LakeTable(catalog, _schema(name))
        table.create()
        made.append(table)
    assert (
        len(
            {
                zlib.crc32(f"public.{t.schema.table.name}".encode()) % compaction.Thresholds().every
                for t in made
            }
        )
        == 1
    ), "the twins' state tables compact at the same flush (statesync spreads compactions by the table's name)"
    used: list[bool] = []
    commit = leancommit.commit

    def counted(*args: Any) -> bool:
        used.append(commit(*args))
        return used[-1]

    monkeypatch.setattr(leancommit, "commit", counted)
    # the twins merge their manifests at the same flush, the property's (merge_count spreads tables by UUID)
    monkeypatch.setattr(leancommit, "merge_count", lambda metadata: 32)
    return made[0], made[1], used


def test_lean_commits_write_what_pyiceberg_writes(twins, tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    lean, generic, used = twins
    for flush in range(FLUSHES):
        changes = _changes(flush)
        with flushcatalog.flush(lean.catalog):
            monkeypatch.setattr(leancommit, "ENABLED", True)
            lean.append(changes, Position(100 + flush, changes.num_rows))
            monkeypatch.setattr(leancommit, "ENABLED", False)
            generic.append(changes, Position(100 + flush, changes.num_rows))
    assert used.count(True) > FLUSHES, "most commits of the lean twin went the lean way"
    assert used.count(False) > FLUSHES, "merges and compactions, and every commit of the other twin, did not"

    # a plain pyiceberg catalog, as any other reader
    other = SqlCatalog(
        "lake", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=(tmp_path / "warehouse").as_uri()
    )
    for suffix in ("__changelog", ""):
        a, b = other.load_table(f"public.lean{suffix}"), other.load_table(f"public.plain{suffix}")
        rows_a = a.scan().to_arrow().sort_by([("id", "ascending"), (LSN, "ascending")] if suffix else "id")
        rows_b = b.scan().to_arrow().sort_by([("id", "ascending"), (LSN, "ascending")] if suffix else "id")
        assert rows_a.num_rows > 0 and rows_a.equals(rows_b), suffix
        assert _history(a) == _history(b), suffix
        assert _manifests(a) == _manifests(b), suffix
        assert a.metadata.last_sequence_number == b.metadata.last_sequence_number
        assert [e.snapshot_id for e in a.metadata.snapshot_log] == [s.snapshot_id for s in a.snapshots()][
            -len(a.metadata.snapshot_log) :
        ]

    # the state table holds the source's rows: what the changes leave, key by key
    expected: dict[int, str] = {}
    for flush in range(FLUSHES):
        for key, name, op in zip(*(_changes(flush)[c].to_pylist() for c in ("id", "name", OP)), strict=True):
            if op == "d":
                expected.pop(key, None)
            else:
                expected[key] = name
    state = other.load_table("public.lean").scan().to_arrow()
    assert dict(zip(state["id"].to_pylist(), state["name"].to_pylist(), strict=True)) == expected


def test_tables_written_together_merge_their_manifests_at_different_flushes(tmp_path: Path) -> None:
    """Every table's commits merge its manifests once ``min-count-to-merge`` of them piled up; tables written
    together in every flush must not all merge at the same flush (that flush took three times as long)."""
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    count, flushes = 8, 16
    tables = []
    for i in range(8):
        table = LakeTable(catalog, _schema(f"t{i}"))
        table.create()
        for lake in (table.changelog, table.state):
            assert lake is not None
            with lake.transaction() as txn:
                txn.set_properties({"commit.manifest.min-count-to-merge": str(count)})
        table.refresh()
        tables.append(table)
    merged_at: dict[str, list[int]] = {}
    for flush in range(flushes):
        changes = _changes(flush)
        with flushcatalog.flush(catalog):
            for table in tables:
                table.append(changes, Position(100 + flush, changes.num_rows))
        for table in tables:
            for lake in (table.changelog, table.state):
                assert lake is not None and lake.current_snapshot() is not None
                manifests = lake.current_snapshot().manifests(lake.io)  # type: ignore[union-attr]
                for kind in ManifestContent:
                    kept = sum(m.content == kind for m in manifests)
                    assert kept <= count + count // 2, f"{lake.name()} kept {kept} {kind.name} manifests"
                if sum(m.content == ManifestContent.DATA for m in manifests) == 1 and flush > 0:
                    merged_at.setdefault(".".join(lake.name()), []).append(flush)
    changelogs = {name: at for name, at in merged_at.items() if name.endswith("__changelog")}
    assert len(changelogs) == len(tables), f"every change log merged its manifests: {merged_at}"
    firsts = [at[0] for at in changelogs.values()]
    assert min(firsts) >= count - 1, f"merged before {count} manifests piled up: {changelogs}"
    assert len(set(firsts)) >= 2, f"the change logs merged at the same flushes: {changelogs}"


def test_a_snapshot_is_added_as_pyiceberg_s_updates_add_it(tmp_path: Path) -> None:
    """leancommit.with_snapshot makes of a table's metadata what pyiceberg's AddSnapshotUpdate and
    SetSnapshotRefUpdate make of it (as txncache applies them): the same model and the same JSON, for a table
    with no snapshot yet and one with a few; None where pyiceberg would stamp another time."""
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "w").as_uri())
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.t", schema=pa.schema([("id", pa.int64())]))
    for appends in range(3):
        base = table.metadata
        parent = base.current_snapshot()
        snapshot = Snapshot(  # type: ignore[call-arg]
            snapshot_id=1000 + appends,
            parent_snapshot_id=parent.snapshot_id if parent else None,
            manifest_list=f"file:///m/snap-{appends}.avro",
            sequence_number=base.next_sequence_number(),
            timestamp_ms=base.last_updated_ms + 5,
            summary=Summary(operation=Operation.APPEND, **{"added-records": "1"}),
            schema_id=base.current_schema_id,
        )
        updates = (
            AddSnapshotUpdate(snapshot=snapshot),
            SetSnapshotRefUpdate(  # type: ignore[call-arg]
                snapshot_id=snapshot.snapshot_id,
                parent_snapshot_id=snapshot.parent_snapshot_id,
                ref_name="main",
                type=SnapshotRefType.BRANCH,
            ),
        )
        expected = txncache._apply(base, updates)
        mine = leancommit.with_snapshot(base, snapshot)
        assert mine is not None and mine == expected
        assert mine.model_dump_json() == expected.model_dump_json()
        assert mine.__pydantic_fields_set__ == expected.__pydantic_fields_set__
        same_time = snapshot.model_copy(update={"timestamp_ms": base.last_updated_ms})
        assert leancommit.with_snapshot(base, same_time) is None
        table.append(pa.table({"id": pa.array([appends], pa.int64())}))

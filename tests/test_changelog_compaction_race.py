"""A change log's compaction by the upkeep races the worker's appends (one a second on a busy table): an append
that lands while the compaction reads and writes must not make it fail, and nothing may be lost or doubled."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg import maintenance, merge
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.commits import checkpoint_of
from lakegate.connectors.iceberg.writer import LakeTable


def _changes(flush: int) -> pa.Table:
    keys = [3 * flush, 3 * flush + 1, 3 * flush + 2]
    return pa.table(
        {
            "id": pa.array(keys, pa.int64()),
            "name": pa.array([f"n{k}" for k in keys]),
            OP: pa.array(["c"] * 3),
            LSN: pa.array([100 + flush] * 3, pa.int64()),
            SEQ: pa.array([1, 2, 3], pa.int64()),
            COMMIT_TS: pa.array([1_800_000_000_000_000 + flush] * 3, pa.timestamp("us", tz="UTC")),
        }
    )


def test_an_append_during_a_change_log_compaction_does_not_fail_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    schema = TableSchema(
        TableRef("public", "t"),
        (Column("id", pa.int64(), "bigint", key=True), Column("name", pa.string(), "text")),
        ("id",),
    )
    writer = LakeTable(catalog, schema)
    writer.create()
    for flush in range(10):
        writer.append(_changes(flush), Position(100 + flush, 3))
    upkeep = LakeTable.open(catalog, schema.table)  # the upkeep's own view of the tables
    assert upkeep.changelog is not None

    raced: list[int] = []
    conform = merge.conform

    def conform_meanwhile(*args: Any) -> Any:
        if not raced:  # the compaction read its files and writes them now; the worker's next append lands
            raced.append(1)
            writer.append(_changes(10), Position(110, 3))
        return conform(*args)

    monkeypatch.setattr(merge, "conform", conform_meanwhile)
    result = maintenance.compact(upkeep.changelog)
    monkeypatch.setattr(merge, "conform", conform)
    assert raced and result.files_before == 10 and result.files_after == 1, result

    changelog = upkeep.changelog
    changelog.refresh()
    rows = changelog.scan().to_arrow().sort_by("id")
    expected = pa.concat_tables([_changes(f) for f in range(11)])
    assert rows["id"].to_pylist() == expected["id"].to_pylist(), "a change lost or doubled"
    assert rows[LSN].to_pylist() == expected[LSN].to_pylist()
    assert len(list(changelog.scan().plan_files())) == 2, "the compacted file and the append that raced it"
    # the rewrite landed on top of the append: it carries the append's checkpoint, not the one it was planned at
    # (the checkpoint going back would make a restarted worker write flush 10 twice)
    assert checkpoint_of(changelog) == Position(110, 3)


def test_an_append_during_a_retention_trim_keeps_the_checkpoint(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The same for ``changelog_retention``'s delete (pyiceberg's own producer, retried on top of the append)."""
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    schema = TableSchema(
        TableRef("public", "t"),
        (Column("id", pa.int64(), "bigint", key=True), Column("name", pa.string(), "text")),
        ("id",),
    )
    writer = LakeTable(catalog, schema)
    writer.create()
    for flush in range(6):
        writer.append(_changes(flush), Position(100 + flush, 3))
    upkeep = LakeTable.open(catalog, schema.table)
    assert upkeep.changelog is not None

    raced: list[int] = []
    carry = maintenance._carry_stamp

    def carry_meanwhile(*args: Any) -> Any:
        stamp = carry(*args)  # the stamp as the trim was planned; the worker's next append lands now
        if not raced:
            raced.append(1)
            writer.append(_changes(10), Position(110, 3))
        return stamp

    monkeypatch.setattr(maintenance, "_carry_stamp", carry_meanwhile)
    maintenance.trim_changelog(upkeep.changelog, timedelta(days=-3650), folded_below=103)
    assert raced

    changelog = upkeep.changelog
    changelog.refresh()
    ids = sorted(changelog.scan().to_arrow()["id"].to_pylist())  # flushes 0-2: folded and past the retention
    assert ids == sorted(k for f in (3, 4, 5, 10) for k in _changes(f)["id"].to_pylist())
    assert checkpoint_of(changelog) == Position(110, 3), "the trim carried the stamp it was planned with"

"""A change log's compaction by the upkeep (connectors/iceberg/maintenance.py): it races the worker's appends (one
a second on a busy table), and an append that lands while it reads and writes must not make it fail, nor may
anything be lost or doubled; it reads files from before a schema change as the table reads them now."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg import maintenance, merge
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.commits import checkpoint_of
from lakegate.connectors.iceberg.references import referenced_paths
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


def _written(tmp_path: Path, flushes: int) -> tuple[LakeTable, LakeTable]:
    """A table's lake tables after ``flushes`` flushes: the writer's object, and the upkeep's own view of them."""
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    schema = TableSchema(
        TableRef("public", "t"),
        (Column("id", pa.int64(), "bigint", key=True), Column("name", pa.string(), "text")),
        ("id",),
    )
    writer = LakeTable(catalog, schema)
    writer.create()
    for flush in range(flushes):
        writer.append(_changes(flush), Position(100 + flush, 3))
    upkeep = LakeTable.open(catalog, schema.table)
    assert upkeep.changelog is not None
    return writer, upkeep


def test_an_append_during_a_change_log_compaction_does_not_fail_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    writer, upkeep = _written(tmp_path, 10)
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
    writer, upkeep = _written(tmp_path, 6)
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


def test_compaction_reads_files_from_before_a_schema_change_as_the_table_does(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    columns = (
        Column("id", pa.int64(), "bigint", key=True, source_id=1),
        Column("name", pa.string(), "text", source_id=2),
    )
    table = LakeTable(catalog, TableSchema(TableRef("public", "t"), columns, ("id",)))
    table.create()
    for flush in range(4):
        table.append(_changes(flush), Position(100 + flush, 3))
    # the source renames name -> label and adds a column: the lake follows (by attnum)
    wider = TableSchema(
        TableRef("public", "t"),
        (
            columns[0],
            Column("label", pa.string(), "text", source_id=2),
            Column("score", pa.int32(), "integer", source_id=3),
        ),
        ("id",),
    )
    table.evolve(wider)
    for flush in range(4, 8):
        changes = _changes(flush).rename_columns(["id", "label", OP, LSN, SEQ, COMMIT_TS])
        table.append(changes.append_column("score", pa.array([flush] * 3, pa.int32())), Position(100 + flush, 3))
    assert table.changelog is not None
    before = table.changelog.scan().to_arrow().sort_by([("id", "ascending")])

    direct: list[bool] = []
    read_current = maintenance.filereads.read_current

    def counted(*args: Any) -> Any:
        rows = read_current(*args)
        direct.append(rows is not None)
        return rows

    monkeypatch.setattr(maintenance.filereads, "read_current", counted)
    result = maintenance.compact(table.changelog)
    assert result.files_before == 8 and result.files_after == 1, result
    assert direct.count(True) == 4 and direct.count(False) == 4, direct  # the older files through pyiceberg's scan

    table.changelog.refresh()
    after = table.changelog.scan().to_arrow().sort_by([("id", "ascending")])
    assert after.column_names == before.column_names and {"label", "score"} <= set(after.column_names)
    assert after.equals(before), "the compacted change log reads as before"
    assert after["label"].null_count == 0 and after["score"].null_count == 12


def _on_disk(table: Any) -> set[str]:
    root = Path(table.location().removeprefix("file://"))
    return {str(p) for p in root.rglob("*") if p.suffix in (".parquet", ".avro")}


def _used(table: Any) -> set[str]:
    return {p.removeprefix("file://") for p in referenced_paths(table)}


def _expire_after_compaction(tmp_path: Path) -> tuple[maintenance.Result, Any]:
    writer, _ = _written(tmp_path, 12)
    changelog = writer.changelog
    assert changelog is not None
    assert maintenance.compact(changelog, min_files=2).files_before >= 12  # files removed, kept by old snapshots
    for flush in range(12, 18):
        writer.append(_changes(flush), Position(100 + flush, 3))
    result = maintenance.expire(changelog, timedelta(days=1), keep_at_most=5)
    return result, changelog


def test_expiry_on_a_line_of_history_deletes_what_no_kept_snapshot_uses_and_nothing_else(
    tmp_path: Path, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """On one line of history the expiry reads only the oldest kept snapshot's references; it must delete what
    the reading of every kept snapshot would (the general way, compared on a twin lake), and nothing in use."""
    looks: list[int] = []
    real = maintenance.referenced_paths

    def counted(table: Any, *args: Any, snapshots: Any = None, **kwargs: Any) -> set[str]:
        if snapshots is not None:
            looks.append(len(list(snapshots)))
        return real(table, *args, snapshots=snapshots, **kwargs)

    monkeypatch.setattr(maintenance, "referenced_paths", counted)
    fast, changelog = _expire_after_compaction(tmp_path / "fast")
    assert looks and looks[-1] == 1, "the kept snapshots' references should be the oldest one's"
    monkeypatch.setattr(maintenance, "_one_line", lambda *args: False)
    general, twin = _expire_after_compaction(tmp_path / "general")
    assert fast.snapshots_expired == general.snapshots_expired > 0
    assert fast.files_deleted == general.files_deleted > 0
    for table in (changelog, twin):
        used, present = _used(table), _on_disk(table)
        assert used <= present, f"files in use were deleted: {sorted(used - present)[:3]}"
        assert present <= used, f"files no snapshot uses were left: {sorted(present - used)[:3]}"
        rows = merge.sort_changes(merge.scan_to_arrow(table.scan()))
        assert rows[LSN].to_pylist() == [100 + f for f in range(18) for _ in range(3)]


def test_the_kept_tail_is_exactly_the_latest_appends_and_starts_again_after_another_commit(tmp_path: Path) -> None:
    """A writer process compacts its change log from the rows it kept (ChangelogTail): they must be exactly the
    files it appended since, and anything else committed to the change log (another process's compaction, a
    schema change) must start the tail afresh, never leave it covering files the table no longer holds."""
    writer, upkeep = _written(tmp_path, 2)
    changelog = writer.changelog
    assert changelog is not None and upkeep.changelog is not None
    writer.keep_tail()
    tail = writer.recent
    assert tail is not None
    tail.restart(changelog)
    for flush in range(2, 8):
        writer.append(_changes(flush), Position(100 + flush, 3))
    assert tail.covers(changelog) and tail.appends == 6 and len(tail.files) == 6
    assert tail.rows()[LSN].to_pylist() == [100 + f for f in range(2, 8) for _ in range(3)]
    result = maintenance.rewrite(changelog, tail.files, tail.rows(), "writer")
    assert (result.files_before, result.files_after) == (6, 1)
    tail.restart(changelog)
    rows = merge.sort_changes(merge.scan_to_arrow(changelog.scan()))
    assert rows[LSN].to_pylist() == [100 + f for f in range(8) for _ in range(3)], "rows lost or doubled"
    assert checkpoint_of(changelog) == Position(107, 3)

    writer.append(_changes(8), Position(108, 3))
    assert tail.covers(changelog)
    maintenance.compact(upkeep.changelog, min_files=2)  # someone else commits to the change log
    changelog.refresh()
    assert not tail.covers(changelog), "the kept files may have been compacted away"
    writer.append(_changes(9), Position(109, 3))
    assert tail.covers(changelog) and len(tail.files) == 1, "the tail starts again on top of the other commit"


def test_the_background_upkeep_leaves_a_table_the_writer_keeps_to_the_writer(tmp_path: Path) -> None:
    """A change log a writer process compacted lately (its snapshot says ``lakegate.maintenance = writer``) is
    neither compacted nor expired by the worker's background pass (both would race the writer for nothing); one
    it did not is, as before."""
    import threading

    from lakegate.connectors.config import LakeSettings
    from lakegate.ingest.config import IngestSettings
    from lakegate.ingest.upkeep import MaintenanceThread
    from lakegate.ingest.writerupkeep import WRITER, kept_by_writer

    writer, upkeep = _written(tmp_path, 12)
    changelog = writer.changelog
    assert changelog is not None and upkeep.changelog is not None
    lake = LakeSettings(catalog_uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=str(tmp_path / "warehouse"))
    cfg = IngestSettings(snapshot_keep=3, orphan_age=0)
    thread = MaintenanceThread(lake, cfg, [writer.schema.table], threading.Event())

    assert not kept_by_writer(upkeep, cfg.maintenance_interval)
    maintenance.compact(changelog, min_files=2)  # an upkeep's own compaction is not the writer's
    assert not kept_by_writer(upkeep, cfg.maintenance_interval)
    for flush in range(12, 24):
        writer.append(_changes(flush), Position(100 + flush, 3))
    files = len(list(changelog.scan().plan_files()))
    thread._maintain(upkeep)
    upkeep.changelog.refresh()
    assert len(list(upkeep.changelog.scan().plan_files())) < files, "a table the writer does not keep is compacted"
    assert len(upkeep.changelog.metadata.snapshots) <= 3

    changelog.refresh()
    tail = changelog.scan().plan_files()
    rows = merge.sort_changes(merge.scan_to_arrow(changelog.scan()))
    maintenance.rewrite(changelog, [t.file for t in tail], rows, WRITER)
    for flush in range(24, 36):
        writer.append(_changes(flush), Position(100 + flush, 3))
    assert kept_by_writer(upkeep, cfg.maintenance_interval)
    files, snapshots = len(list(changelog.scan().plan_files())), len(changelog.metadata.snapshots)
    thread._maintain(upkeep)
    assert len(list(upkeep.changelog.scan().plan_files())) == files, "the writer's table was compacted"
    assert len(upkeep.changelog.metadata.snapshots) == snapshots, "the writer's table was expired"
    rows = merge.sort_changes(merge.scan_to_arrow(upkeep.changelog.scan()))
    assert rows[LSN].to_pylist() == [100 + f for f in range(36) for _ in range(3)]

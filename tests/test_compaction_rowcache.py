"""Issue 11.16: a state table's compaction takes the rows of the small files this process wrote from memory
(connectors.iceberg.rowcache) and merges small files by size tiers. The compacted table must hold exactly the
rows of the same changes committed without compaction (plain pyiceberg scans, row by row), the held rows must be
exactly their files' rows (order too: position deletes name rows by position), a schema change must not let
old-schema rows through, and a compaction whose commit fails must leave the cache right."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from pyiceberg.types import StringType

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column
from lakegate.connectors.iceberg import compaction, filereads, merge, rowcache
from lakegate.connectors.iceberg.state import StateTable
from tests.lakehelp import _assert_same, arrow_rows
from tests.test_open_lake_compaction import _locations
from tests.test_open_lake_deletes import COLUMNS, COMPOSITE, Model, _catalog, _create

EAGER = compaction.Thresholds(deleted_fraction=0.1, small_file=2**30, min_small_files=4, max_delete_files=3)


@pytest.fixture(autouse=True)
def _fresh_cache():
    rowcache.clear()
    yield
    rowcache.clear()


def _data_files(state: StateTable) -> list:
    return [task.file for task in state.table.scan().plan_files()]


def _held_rows_are_the_files_rows(state: StateTable) -> int:
    """Every live data file whose rows are held: the held rows equal the Parquet file's, in order. Returns how
    many files were held."""
    table = state.table
    schema_id = table.metadata.current_schema_id
    held = 0
    for data_file in _data_files(state):
        rows = rowcache.recall(data_file.file_path, schema_id)
        if rows is None:
            continue
        held += 1
        on_disk = filereads.read_current(table, data_file, np.empty(0, np.int64))
        assert on_disk is not None, f"{data_file.file_path} is held under the current schema but has old columns"
        assert rows.equals(on_disk), f"held rows of {data_file.file_path} differ from the file's"
    return held


def _same_tables(compacted: StateTable, plain: StateTable, names: list[str], what: str) -> None:
    _assert_same(
        arrow_rows(compacted.table.scan().to_arrow(), names),
        arrow_rows(plain.table.scan().to_arrow(), names),
        what,
    )


@pytest.mark.parametrize("columns", [COLUMNS, COMPOSITE], ids=["bigint-key", "composite-key"])
def test_compaction_from_memory_equals_the_same_changes_uncompacted(tmp_path: Path, columns: tuple) -> None:
    catalog = _catalog(tmp_path)
    compacted, plain = _create(catalog, "c", columns), _create(catalog, "p", columns)
    model = Model(columns, seed=53)
    names = [c.name for c in columns]
    for step in range(24):
        batch = model.batch(60, truncate_at=25 if step == 13 else None)
        compacted.commit(batch, {"lakegate.lsn": str(step)})
        plain.commit(batch, {"lakegate.lsn": str(step)})
        if step % 3 == 2:
            compaction.compact(compacted, {"lakegate.lsn": str(step)}, EAGER)
            assert _held_rows_are_the_files_rows(compacted) > 0
        _same_tables(compacted, plain, names, f"step {step}")
    _assert_same(arrow_rows(compacted.table.scan().to_arrow(), names), model.expected(), "against the model")
    fresh = StateTable(catalog.load_table("public.c"), compacted.key)  # the index moved with the rows
    kept, rebuilt = _locations(compacted), _locations(fresh)
    assert np.array_equal(kept[0], rebuilt[0]) and kept[1] == rebuilt[1], "the index drifted from the lake"


def test_a_schema_change_is_not_served_old_rows(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    compacted, plain = _create(catalog, "c", COLUMNS), _create(catalog, "p", COLUMNS)
    model = Model(COLUMNS, seed=61)
    for step in range(3):
        batch = model.batch(80)
        compacted.commit(batch, {"lakegate.lsn": str(step)})
        plain.commit(batch, {"lakegate.lsn": str(step)})
    old_id = compacted.table.metadata.current_schema_id
    old_files = [f.file_path for f in _data_files(compacted)]
    assert all(rowcache.recall(path, old_id) is not None for path in old_files)
    for state in (compacted, plain):
        with state.table.update_schema() as update:
            update.add_column("extra", StringType())
        state.table.refresh()
    new_id = compacted.table.metadata.current_schema_id
    assert new_id != old_id
    assert all(rowcache.recall(path, new_id) is None for path in old_files), "old-schema rows served"
    columns = (*COLUMNS, Column("extra", pa.string(), "text"))
    model.columns = columns
    names = [c.name for c in columns]
    for step in range(3, 9):
        batch = model.batch(80)
        compacted.commit(batch, {"lakegate.lsn": str(step)})
        plain.commit(batch, {"lakegate.lsn": str(step)})
        if step % 3 == 2:
            assert compaction.compact(compacted, {}, EAGER)
            _held_rows_are_the_files_rows(compacted)
        _same_tables(compacted, plain, names, f"after the schema change, step {step}")
    assert not set(old_files) & {f.file_path for f in _data_files(compacted)}, "old-schema files not compacted"
    _assert_same(arrow_rows(compacted.table.scan().to_arrow(), names), model.expected(), "against the model")
    target = merge.arrow_schema(compacted.table.schema())
    for data_file in _data_files(compacted):
        rows = rowcache.recall(data_file.file_path, new_id)
        assert rows is None or rows.schema.equals(target)


def test_a_compaction_whose_commit_fails_leaves_the_cache_right(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    state, plain = _create(catalog, "c", COLUMNS), _create(catalog, "p", COLUMNS)
    model = Model(COLUMNS, seed=67)
    names = [c.name for c in COLUMNS]
    for step in range(6):
        batch = model.batch(60)
        state.commit(batch, {"lakegate.lsn": str(step)})
        plain.commit(batch, {"lakegate.lsn": str(step)})
    # another writer (a `lakegate maintain` elsewhere, say) commits to the table: the writer's Table object is
    # now stale and its compaction's commit must fail
    other = StateTable(catalog.load_table("public.c"), state.key)
    batch = model.batch(60)
    other.commit(batch, {"lakegate.lsn": "6"})
    plain.commit(batch, {"lakegate.lsn": "6"})
    before = {f.file_path for f in _data_files(other)}
    result = compaction.compact(state, {}, EAGER)
    assert not result, "the compaction should have lost the race"
    other.table.refresh()
    assert {f.file_path for f in _data_files(other)} == before, "a failed compaction changed the table"
    assert _held_rows_are_the_files_rows(other) == len(before), "a failed compaction dropped or changed rows"
    state.table.refresh()
    assert compaction.compact(state, {}, EAGER)
    assert _held_rows_are_the_files_rows(state) > 0
    _same_tables(state, plain, names, "after the compaction that landed")
    _assert_same(arrow_rows(state.table.scan().to_arrow(), names), model.expected(), "against the model")


def test_small_files_are_merged_by_tiers_not_rewritten_whole(tmp_path: Path) -> None:
    """Each commit adds one small file; compacting after every ``min_small_files`` commits used to rewrite the
    whole table each time (rows moved grow with the square of the commits); by tiers each row moves O(log n)
    times, and no more than ``min_small_files`` data files remain after a compaction."""
    catalog = _catalog(tmp_path)
    state = _create(catalog, "t", COLUMNS)
    limits = compaction.Thresholds(deleted_fraction=1.0, small_file=2**30, min_small_files=4, max_delete_files=100)
    rows = 20
    moved = 0
    commits = 64
    for step in range(commits):
        ids = range(step * rows, (step + 1) * rows)  # inserts only: no row is deleted
        batch = _inserts(ids, step)
        state.commit(batch, {"lakegate.lsn": str(step)})
        if step % limits.min_small_files == limits.min_small_files - 1:
            moved += compaction.compact(state, {}, limits).rows_moved
            assert len(_data_files(state)) <= limits.min_small_files
    whole = sum(rows * (k + 1) * limits.min_small_files for k in range(commits // limits.min_small_files))
    assert moved <= whole / 2, f"{moved} rows moved; rewriting the whole table each time moves {whole}"
    assert state.table.scan().to_arrow().num_rows == commits * rows


def _inserts(ids: range, step: int) -> pa.Table:
    now = datetime.datetime.now(datetime.UTC)
    n = len(ids)
    return pa.table(
        {
            "id": pa.array(list(ids), pa.int64()),
            "v": pa.array([f"v{i}" for i in ids]),
            "amount": pa.array([Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
            "at": pa.array([now] * n, pa.timestamp("us", tz="UTC")),
            OP: pa.array(["c"] * n),
            LSN: pa.array([1000 + step] * n, pa.int64()),
            SEQ: pa.array(range(1, n + 1), pa.int64()),
            COMMIT_TS: pa.array([now] * n, pa.timestamp("us", tz="UTC")),
        }
    )

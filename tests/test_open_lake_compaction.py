"""Issue 12.4: compaction of a state table kept with position deletes: rows never change, files stay few, the key
index moves with the rows it locates, and plain readers (pyiceberg, DuckDB) see the same rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import psycopg
import pyarrow as pa
import pytest
from pyiceberg.manifest import ManifestContent

from lakegate.connectors.config import SettingsError
from lakegate.connectors.iceberg import compaction, keyindex, manifestcache
from lakegate.connectors.iceberg.state import StateTable
from lakegate.ingest.maintain import compaction_thresholds
from tests.lakehelp import (
    _assert_same,
    arrow_rows,
    assert_lake_equals_source,
    make_settings,
    running_worker,
    wait_caught_up,
)
from tests.readers import duckdb_alone
from tests.test_open_lake_deletes import COLUMNS, COMPOSITE, Model, _catalog, _create

EAGER = compaction.Thresholds(deleted_fraction=0.1, small_file=2**30, min_small_files=4, max_delete_files=3)


def _files(state: StateTable) -> tuple[int, int]:
    snapshot = state.table.current_snapshot()
    assert snapshot is not None
    data = deleted = 0
    for manifest in snapshot.manifests(state.table.io):
        count = len(manifest.fetch_manifest_entry(state.table.io, discard_deleted=True))
        if manifest.content == ManifestContent.DELETES:
            deleted += count
        else:
            data += count
    return data, deleted


def _locations(state: StateTable) -> tuple[np.ndarray, list[str]]:
    keys, locs = state.index.items()
    numbers, positions = keyindex.unpack(locs)
    return keys, [f"{state._files[n].file_path}#{p}" for n, p in zip(numbers, positions, strict=True)]


def test_compaction_keeps_rows_bounds_files_and_moves_the_index(tmp_path: Path) -> None:
    for columns in (COLUMNS, COMPOSITE):
        (tmp_path / columns[0].name).mkdir()
        catalog = _catalog(tmp_path / columns[0].name)
        state = _create(catalog, "t", columns)
        model = Model(columns, seed=23)
        names = [c.name for c in columns]
        compactions = 0
        for step in range(30):
            state.commit(model.batch(80, truncate_at=30 if step == 17 else None), {"lakegate.lsn": str(step)})
            if step % 3 == 2:
                result = compaction.compact(state, {"lakegate.lsn": str(step)}, EAGER)
                compactions += bool(result)
                data, deleted = _files(state)
                assert deleted <= EAGER.max_delete_files + 1, f"step {step}: {deleted} delete files"
                assert data <= EAGER.min_small_files + 1, f"step {step}: {data} data files"
            expected = model.expected()
            _assert_same(
                arrow_rows(state.table.scan().to_arrow(), names), expected, f"pyiceberg, step {step}"
            )
        assert compactions >= 5
        _assert_same(arrow_rows(duckdb_alone(state.table, tmp_path), names), model.expected(), "DuckDB")
        fresh = StateTable(catalog.load_table("public.t"), state.key)
        kept, rebuilt = _locations(state), _locations(fresh)
        assert np.array_equal(kept[0], rebuilt[0]) and kept[1] == rebuilt[1], (
            "the index drifted from the lake"
        )


def test_a_file_is_rewritten_only_past_the_deleted_fraction(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    state = _create(catalog, "t", COLUMNS)
    model = Model(COLUMNS, seed=29)
    state.commit(model.batch(400), {"lakegate.lsn": "1"})
    lazy = compaction.Thresholds(deleted_fraction=0.5, small_file=0, max_delete_files=100)
    state.commit(model.batch(20), {"lakegate.lsn": "2"})
    assert not compaction.compact(state, {}, lazy), "a few deleted rows should not rewrite a file"
    keen = compaction.Thresholds(deleted_fraction=0.01, small_file=0, max_delete_files=100)
    result = compaction.compact(state, {}, keen)
    assert result.data_files_rewritten >= 1 and result.delete_files_removed == 1
    assert _files(state)[1] == 0, "the delete file applied only to the rewritten file"
    names = [c.name for c in COLUMNS]
    _assert_same(arrow_rows(state.table.scan().to_arrow(), names), model.expected(), "after compaction")


def test_the_writers_compaction_goes_in_steps_of_step_bytes(tmp_path: Path) -> None:
    """A step rewrites at most ``step_bytes`` (at least one file) and says that work is left; steps repeated
    until none is left leave what one unbounded compaction leaves, the rows and the index unchanged."""
    catalog = _catalog(tmp_path)
    state = _create(catalog, "t", COLUMNS)
    model = Model(COLUMNS, seed=37)
    for step in range(8):
        state.commit(model.batch(60), {"lakegate.lsn": str(step)})
    assert _files(state)[0] >= 8
    sizes = sorted(t.file.file_size_in_bytes for t in state.table.scan().plan_files())
    stepped = compaction.Thresholds(
        deleted_fraction=0.01, small_file=2**30, min_small_files=2, max_delete_files=1, step_bytes=sum(sizes[:3])
    )

    def no_keys(rows: pa.Table) -> np.ndarray:
        raise AssertionError("a compaction moves rows by location: no key is encoded")

    state.encode = no_keys  # type: ignore[method-assign]
    first = compaction.compact(state, {}, stepped, step=True)
    assert 1 <= first.data_files_rewritten <= 3 and first.more, first
    steps = 1
    while compaction.compact(state, {}, stepped, step=True).more:
        steps += 1
        assert steps < 50
    assert steps >= 3
    names = [c.name for c in COLUMNS]
    _assert_same(arrow_rows(state.table.scan().to_arrow(), names), model.expected(), "after the steps")
    fresh = StateTable(catalog.load_table("public.t"), state.key)
    kept, rebuilt = _locations(state), _locations(fresh)
    assert np.array_equal(kept[0], rebuilt[0]) and kept[1] == rebuilt[1], "the index drifted from the lake"
    whole = compaction.compact(
        state,
        {},
        compaction.Thresholds(deleted_fraction=0.01, small_file=2**30, min_small_files=2, max_delete_files=1),
    )
    assert not whole.more


def test_lookup_reads_current_rows_by_key_through_the_index(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    state = _create(catalog, "t", COMPOSITE)
    with state.table.transaction() as txn:  # small row groups: a lookup reads only some of them
        txn.set_properties({"write.parquet.row-group-limit": "16"})
    model = Model(COMPOSITE, seed=31)
    names = [c.name for c in COMPOSITE]
    for step in range(9):
        state.commit(model.batch(120), {"lakegate.lsn": str(step)})
        if step == 5:
            compaction.compact(state, {}, EAGER)
        held = list(model.rows)
        wanted = held[:: max(1, len(held) // 40)] + [(99, "absent")]
        keys = pa.table({"a": pa.array([k[0] for k in wanted], pa.int32()), "b": [k[1] for k in wanted]})
        expected = arrow_rows(
            pa.Table.from_pylist(
                [model.rows[k] for k in wanted if k in model.rows],
                schema=pa.schema([pa.field(c.name, c.type) for c in COMPOSITE]),
            ),
            names,
        )
        _assert_same(arrow_rows(state.lookup(keys), names), expected, f"lookup after commit {step}")


def _delete_files_after_updates(pg: psycopg.Connection, settings: Any, first: int) -> int:
    """Six single-row updates, each committed on its own; the state table's delete files afterwards."""
    with running_worker(settings):
        wait_caught_up(pg)
        for key in range(first, first + 6):
            pg.execute("UPDATE t SET v = v + 1 WHERE id = %s", (key,))
            wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.t")
    assert table.state is not None
    return _files(StateTable(table.state, table.schema.key))[1]


def test_the_compaction_settings_decide_when_the_writer_compacts(
    pg: psycopg.Connection, pg_dsn: str, tmp_path: Path
) -> None:
    """Issue 12: the thresholds are settings ([ingest] compact_*). With the defaults (every 16 commits, more than
    16 delete files) six commits leave six delete files; compacting every 2 commits and merging past 1 delete
    file keeps them at 3 at most (merged by size tiers: a one-row file is not merged into a larger one at once)."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)")
    pg.execute("INSERT INTO t SELECT g, 0 FROM generate_series(1, 200) g")
    (tmp_path / "default").mkdir()
    (tmp_path / "eager").mkdir()
    default = make_settings(pg_dsn, tmp_path / "default", ["public.t"])
    assert compaction_thresholds(default.ingest) == compaction.Thresholds()
    assert _delete_files_after_updates(pg, default, 1) == 6
    eager = make_settings(
        pg_dsn,
        tmp_path / "eager",
        ["public.t"],
        compact_every=2,
        compact_max_delete_files=1,
        compact_small_file="1MiB",
    )
    assert compaction_thresholds(eager.ingest) == compaction.Thresholds(
        every=2, max_delete_files=1, small_file=2**20
    )
    assert _delete_files_after_updates(pg, eager, 11) <= 3
    with pytest.raises(SettingsError, match="compact_deleted_fraction = 0"):
        make_settings(pg_dsn, tmp_path, ["public.t"], compact_deleted_fraction=0)
    with pytest.raises(SettingsError, match="changelog_compact_every = -1 must not be negative"):
        make_settings(pg_dsn, tmp_path, ["public.t"], changelog_compact_every=-1)


def _entry(entry: Any) -> tuple:
    f = entry.data_file
    return (
        (entry.status, entry.snapshot_id, entry.sequence_number, entry.file_sequence_number),
        (f.content, f.file_path, f.file_format, f.record_count, f.file_size_in_bytes, f.spec_id, f.partition),
        (
            f.column_sizes,
            f.value_counts,
            f.null_value_counts,
            f.nan_value_counts,
            f.lower_bounds,
            f.upper_bounds,
        ),
        (f.split_offsets, f.equality_ids, f.sort_order_id, f.key_metadata),
    )


def test_manifest_entries_kept_in_memory_are_the_ones_in_storage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11.16: compaction and row deltas read committed manifests through manifestcache; what it returns
    must be what pyiceberg reads (every field of every entry, data and delete manifests), and it must stay within
    its bound."""
    catalog = _catalog(tmp_path)
    state = _create(catalog, "t", COLUMNS)
    model = Model(COLUMNS, seed=31)
    manifestcache.clear()
    monkeypatch.setattr(manifestcache, "MAX_ENTRIES", 6)
    for step in range(8):
        state.commit(model.batch(30), {"lakegate.lsn": str(step)})
        if step % 4 == 3:
            assert compaction.compact(state, {"lakegate.lsn": str(step)}, EAGER)
    table = state.table
    for snapshot in table.snapshots():
        for manifest in snapshot.manifests(table.io):
            for discard in (True, False):
                for _ in range(2):  # from storage, then (if it fits) from memory
                    kept = manifestcache.entries(table.io, manifest, discard)
                    read = manifest.fetch_manifest_entry(table.io, discard_deleted=discard)
                    assert [_entry(e) for e in kept] == [_entry(e) for e in read]
            assert manifestcache._size <= 6 or len(manifestcache._KEPT) == 1
    names = [c.name for c in COLUMNS]
    _assert_same(arrow_rows(table.scan().to_arrow(), names), model.expected(), "after compactions")
    manifestcache.clear()


def test_compaction_reads_files_from_before_a_schema_change(tmp_path: Path) -> None:
    """Files written with the table's current columns are read with pyarrow, older ones through pyiceberg's
    scan (which maps columns by field id): both kinds, with deletes on them, are rewritten exactly."""
    from pyiceberg.types import StringType

    catalog = _catalog(tmp_path)
    state = _create(catalog, "t", COLUMNS)
    model = Model(COLUMNS, seed=37)
    for step in range(3):
        state.commit(model.batch(60), {"lakegate.lsn": str(step)})
    with state.table.update_schema() as update:
        update.add_column("extra", StringType())
    for step in range(3, 6):
        state.commit(model.batch(60), {"lakegate.lsn": str(step)})
    result = compaction.compact(state, {"lakegate.lsn": "6"}, EAGER)
    assert result.data_files_rewritten >= 4, result
    names = [c.name for c in COLUMNS]
    rows = state.table.scan().to_arrow()
    _assert_same(arrow_rows(rows, names), model.expected(), "after compaction")
    assert rows["extra"].null_count == rows.num_rows
    fresh = StateTable(catalog.load_table("public.t"), state.key)
    kept, rebuilt = _locations(state), _locations(fresh)
    assert np.array_equal(kept[0], rebuilt[0]) and kept[1] == rebuilt[1], "the index drifted from the lake"


def test_the_rows_kept_for_compaction_are_exactly_the_files_rows(tmp_path: Path) -> None:
    """Issue 11.16: compaction takes the rows of the small files this process wrote from memory (rowcache). Every
    kept entry must be the file's rows as Parquet holds them, in order (positions are what deletes name); a
    compaction that uses them must leave the same table as one that reads every file back; an entry kept under
    another schema is not used."""
    from lakegate.connectors.iceberg import filereads, rowcache

    rowcache.clear()
    catalogs = {}
    for twin in ("kept", "read"):
        (tmp_path / twin).mkdir()
        catalogs[twin] = _catalog(tmp_path / twin)
    states = {twin: _create(catalogs[twin], "t", COLUMNS) for twin in catalogs}
    models = {twin: Model(COLUMNS, seed=31) for twin in catalogs}
    names = [c.name for c in COLUMNS]
    reads = {"n": 0}
    real_read = filereads.read_current

    def counted(*args: Any) -> Any:
        reads["n"] += 1
        return real_read(*args)

    compacted = 0
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(filereads, "read_current", counted)
        for step in range(24):
            for twin, state in states.items():
                state.commit(models[twin].batch(60), {"lakegate.lsn": str(step)})
            checked = 0
            for path, (schema_id, rows, _) in list(rowcache._ROWS.items()):
                table = next(s.table for s in states.values() if path.startswith(s.table.location()))
                assert schema_id == table.metadata.current_schema_id
                data_file = next(
                    (t.file for t in table.scan().plan_files() if t.file.file_path == path), None
                )
                if data_file is None:
                    continue  # compacted away since
                on_disk = real_read(table, data_file, np.empty(0, np.int64))
                assert on_disk is not None and on_disk.equals(rows), (
                    f"step {step}: {path} differs from its kept rows"
                )
                checked += 1
            assert checked, f"step {step}: nothing kept to check"
            if step % 4 == 3:
                before = reads["n"]
                compacted += bool(compaction.compact(states["kept"], {"lakegate.lsn": str(step)}, EAGER))
                assert reads["n"] == before, "compaction read a file this process had just written"
                for path in list(rowcache._ROWS):  # the twin compacts from the files
                    if path.startswith(states["read"].table.location()):
                        rowcache.forget([path])
                compaction.compact(states["read"], {"lakegate.lsn": str(step)}, EAGER)
            for twin, state in states.items():
                _assert_same(
                    arrow_rows(state.table.scan().to_arrow(), names),
                    models[twin].expected(),
                    f"{twin}, step {step}",
                )
    assert compacted >= 4
    _assert_same(
        arrow_rows(duckdb_alone(states["kept"].table, tmp_path), names), models["kept"].expected(), "DuckDB"
    )
    path = next(iter(rowcache._ROWS))
    schema_id = rowcache._ROWS[path][0]
    assert rowcache.recall(path, schema_id) is not None
    assert rowcache.recall(path, schema_id + 1) is None, "rows kept under another schema are not used"
    rowcache.clear()

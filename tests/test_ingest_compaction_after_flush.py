"""Issue 11.16: the worker compacts state tables after a flush is visible instead of inside it. A compaction that
``append(compact=False)`` leaves due runs with ``compact_due()`` in a catalog transaction of its own; rows never
change; one whose catalog swap is refused (another writer moved the table) leaves the key index to be read again,
and the next commits stay exact. Compared row by row with the changes' replay and with plain pyiceberg scans."""

from __future__ import annotations

import datetime
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import ManifestContent

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.errors import CommitConflict
from lakegate.connectors.iceberg import flushcatalog, merge
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.compaction import Thresholds
from lakegate.connectors.iceberg.writer import LakeTable

EAGER = Thresholds(every=2, deleted_fraction=0.1, min_small_files=2, max_delete_files=1)
NOW = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)


def _lake(root: Path) -> LakeTable:
    catalog = open_catalog("lake", f"sqlite:///{root / 'catalog.db'}", str(root / "warehouse"))
    columns = (Column("id", pa.int64(), "bigint", key=True), Column("v", pa.string(), "text"))
    table = LakeTable(catalog, TableSchema(TableRef("public", "t"), columns, ("id",)), compaction=EAGER)
    table.create()
    with table.snapshot(Position(1, 0), int(NOW.timestamp() * 1e6)):
        pass
    table.refresh()
    table.catch_up()
    return table


def _changes(lsn: int, rows: dict[int, str], expected: dict[int, str]) -> pa.Table:
    ops = ["u" if key in expected else "c" for key in rows]
    expected.update(rows)
    n = len(rows)
    return pa.table(
        {
            "id": pa.array(list(rows), pa.int64()),
            "v": pa.array(list(rows.values())),
            OP: pa.array(ops),
            LSN: pa.array([lsn] * n, pa.int64()),
            SEQ: pa.array(range(1, n + 1), pa.int64()),
            COMMIT_TS: pa.array([NOW] * n, pa.timestamp("us", tz="UTC")),
        }
    )


def _flush(table: LakeTable, lsn: int, rows: dict[int, str], expected: dict[int, str]) -> None:
    with flushcatalog.flush(table.catalog):
        table.append(_changes(lsn, rows, expected), Position(lsn, len(rows)), compact=False)


def _data_files(table: LakeTable) -> int:
    assert table.state is not None
    snapshot = table.state.current_snapshot()
    assert snapshot is not None
    return sum(
        len(m.fetch_manifest_entry(table.state.io, discard_deleted=True))
        for m in snapshot.manifests(table.state.io)
        if m.content == ManifestContent.DATA
    )


def _assert_state(table: LakeTable, expected: dict[int, str]) -> None:
    """The state table as any pyiceberg reader sees it, read afresh from the catalog, equals the replay."""
    state = table.catalog.load_table("public.t")
    rows = merge.scan_to_arrow(state.scan(selected_fields=("id", "v"))).sort_by("id")
    assert rows.to_pylist() == [{"id": k, "v": v} for k, v in sorted(expected.items())]


def test_a_compaction_left_due_runs_after_the_flush(tmp_path: Path) -> None:
    table = _lake(tmp_path)
    expected: dict[int, str] = {}
    lsn = 10
    for round_ in range(6):  # every table first compacts after 2 to 3 commits (EAGER.every = 2, spread by name)
        _flush(table, lsn, {k: f"v{round_}-{k}" for k in range(round_, round_ + 4)}, expected)
        lsn += 1
        _assert_state(table, expected)
        if table.compaction_due:
            break
    assert table.compaction_due, "a compaction must have fallen due"
    files = _data_files(table)
    assert files >= 2
    with flushcatalog.flush(table.catalog):
        assert table.compact_due()
    assert not table.compaction_due
    assert _data_files(table) < files  # compacted, later than the commit that made it due
    _assert_state(table, expected)
    for round_ in range(4):  # the key index moved with the rows: later updates replace the right rows
        _flush(table, lsn, {k: f"w{round_}-{k}" for k in range(0, 8, 2)}, expected)
        lsn += 1
        with flushcatalog.flush(table.catalog):
            table.compact_due()
        _assert_state(table, expected)


def test_a_refused_compaction_leaves_the_index_to_be_read_again(tmp_path: Path) -> None:
    table = _lake(tmp_path)
    expected: dict[int, str] = {}
    lsn = 10
    while not table.compaction_due:
        _flush(table, lsn, {k: f"v{lsn}-{k}" for k in range(lsn % 3, lsn % 3 + 5)}, expected)
        lsn += 1
    other = SqlCatalog(
        "lake", uri=table.catalog.properties["uri"], warehouse=table.catalog.properties["warehouse"]
    )
    with pytest.raises(CommitConflict, match="public.t "), flushcatalog.flush(table.catalog):
        assert table.compact_due()
        with other.load_table("public.t").transaction() as txn:  # another writer, before the swap
            txn.set_properties({"test.raced": "yes"})
    table.forget_index()  # what the worker does when the compactions' swap is refused
    _assert_state(table, expected)
    for round_ in range(3):
        _flush(table, lsn, {k: f"w{round_}-{k}" for k in range(0, 10, 3)}, expected)
        lsn += 1
        _assert_state(table, expected)
    assert table.catalog.load_table("public.t").properties.get("test.raced") == "yes"

"""A writer process warms its tables before the stream starts (``LakeTable.warm``): the first write then derives
nothing from the tables' schemas that a later one would not, and reads no manifest list (issue 11.16: the first
round of 200 tables took seconds while each table's first write derived them)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
from pyiceberg.table.snapshots import Snapshot

from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg import datafiles, filestats, flushcatalog, leancommit
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.writer import LakeTable


def _changes(flush: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([flush], pa.int64()),
            "name": pa.array([f"n{flush}"]),
            OP: pa.array(["c"]),
            LSN: pa.array([100 + flush], pa.int64()),
            SEQ: pa.array([1], pa.int64()),
            COMMIT_TS: pa.array([1_800_000_000_000_000], pa.timestamp("us", tz="UTC")),
        }
    )


def test_the_first_write_after_warming_derives_nothing_again(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    columns = (Column("id", pa.int64(), "bigint", key=True), Column("name", pa.string(), "text"))
    tables = {}
    for name in ("warmed", "cold"):
        table = LakeTable(catalog, TableSchema(TableRef("public", name), columns, ("id",)))
        table.create()
        table.append(_changes(0), Position(100, 1))  # a snapshot, as a worker's tables have when it starts
        tables[name] = LakeTable.open(catalog, table.schema.table)  # a writer process's own view
        tables[name].catch_up()  # as the process does on start: the key index is read then
    datafiles._DERIVED.clear()  # as in a new process
    leancommit._MANIFESTS.clear()
    tables["warmed"].warm()

    derived: list[str] = []

    def counted(what: str, real: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            derived.append(what)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(datafiles, "_file_schema", counted("file schema", datafiles._file_schema))
    monkeypatch.setattr(filestats, "plan", counted("statistics plan", filestats.plan))
    monkeypatch.setattr(Snapshot, "manifests", counted("manifest list", Snapshot.manifests))

    with flushcatalog.flush(catalog):  # a writer process writes inside a flush (the lean commits)
        tables["warmed"].append(_changes(1), Position(101, 1))
    assert derived == [], f"the first write after warming derived or read {derived}"
    with flushcatalog.flush(catalog):
        tables["cold"].append(_changes(1), Position(101, 1))
    assert {"file schema", "statistics plan", "manifest list"} <= set(derived), derived  # the test can tell

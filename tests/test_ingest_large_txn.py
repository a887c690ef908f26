"""Issue 11.7: a source transaction larger than the worker's batch is written in parts, but every reader of the lake
(pyiceberg, DuckDB's ``iceberg_scan``, the change log as much as the state table) sees it whole or not at all.

The worker is forced to write small parts (``max_batch_rows``); the test holds it between two parts and reads the
lake with plain Iceberg readers, then lets it finish and compares the lake with PostgreSQL row by row. A worker
killed between two parts leaves only orphan files, which upkeep removes; the restarted worker writes the
transaction again from its start.
"""

from __future__ import annotations

import signal
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest

from lakegate.connectors.iceberg import orphans
from lakegate.connectors.iceberg.references import metadata_paths, referenced_paths
from lakegate.connectors.iceberg.writer import LakeTable
from tests.lakehelp import (
    _assert_same,
    arrow_rows,
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    source_rows,
    wait_caught_up,
    wait_for,
)
from tests.procs import Proc, write_config
from tests.readers import duckdb_alone, pyiceberg_arrow
from tests.test_ingest_faults import _assert_no_duplicates

READERS = {"pyiceberg": pyiceberg_arrow, "duckdb": duckdb_alone}
PART = 400  #: max_batch_rows: the transaction below comes in about ten parts

# rows of the transaction: inserts early, updates and deletes of those same rows (and of older ones) later, an
# update that leaves a TOASTed value unchanged (the worker reads it back from a staged file), and a new column
TRANSACTION = [
    "INSERT INTO a SELECT g, g, CASE WHEN g % 10 = 0 THEN big(g) ELSE 'd' || g END "
    "FROM generate_series(1000, 3399) g",
    "INSERT INTO b VALUES (1000, 0)",
    "UPDATE a SET v = -v WHERE id BETWEEN 1000 AND 1600",
    "DELETE FROM a WHERE id BETWEEN 1601 AND 1800 OR id BETWEEN 3000 AND 3099 OR id <= 20",
    "UPDATE a SET v = v + 1 WHERE id % 10 = 0",
    "UPDATE a SET id = id + 10000 WHERE id BETWEEN 2000 AND 2009",
    "INSERT INTO a SELECT g, 7, 'again' FROM generate_series(1601, 1650) g",
]


def _setup(pg: psycopg.Connection) -> None:
    # an incompressible value over 2 kB is stored out of line (TOAST): an update of another column sends it as
    # "unchanged", and the worker must find the previous value
    pg.execute(
        "CREATE FUNCTION big(n int) RETURNS text LANGUAGE sql AS "
        "$$ SELECT string_agg(md5((n * 1000 + i)::text), '') FROM generate_series(1, 80) i $$"
    )
    pg.execute("CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL, doc text)")
    pg.execute("CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL)")
    pg.execute(
        "INSERT INTO a SELECT g, g, CASE WHEN g % 10 = 0 THEN big(g) ELSE 'd' || g END FROM generate_series(1, 300) g"
    )
    pg.execute("INSERT INTO b SELECT g, 10 FROM generate_series(1, 5) g")


def _columns(table: LakeTable) -> list[str]:
    return [f.name for f in table.changelog.schema().as_arrow() if not f.name.startswith("_")]  # type: ignore[union-attr]


def _expected(pg: psycopg.Connection, settings: Any, name: str) -> list[tuple]:
    table = lake_table(settings, name)
    schema = pa.schema([table.changelog.schema().as_arrow().field(c) for c in _columns(table)])  # type: ignore[union-attr]
    return source_rows(pg, name, schema, table.schema.key)


def _read(settings: Any, name: str, lake_dir: Path) -> dict[str, tuple[list[tuple], int]]:
    """Each reader's rows of the state table and its number of change-log rows."""
    table = lake_table(settings, name)
    assert table.state is not None and table.changelog is not None
    columns = _columns(table)
    return {
        reader: (arrow_rows(read(table.state, lake_dir), columns), read(table.changelog, lake_dir).num_rows)
        for reader, read in READERS.items()
    }


def _assert_readers_see(settings: Any, name: str, lake_dir: Path, rows: list[tuple], changes: int) -> None:
    for reader, (state, logged) in _read(settings, name, lake_dir).items():
        _assert_same(state, rows, f"{reader}'s scan of the state table {name}")
        assert logged == changes, f"{reader} read {logged} change-log rows of {name}, expected {changes}"


def _assert_exact(pg: psycopg.Connection, settings: Any, name: str, lake_dir: Path) -> None:
    """Plain readers, the merged state and the replayed change log all equal the source, without duplicates."""
    _assert_readers_see(
        settings, name, lake_dir, _expected(pg, settings, name), _changelog_rows(settings, name)
    )
    assert_lake_equals_source(pg, settings, name)
    _assert_no_duplicates(settings, name)


def _changelog_rows(settings: Any, name: str) -> int:
    return lake_table(settings, name).changelog.scan().to_arrow().num_rows  # type: ignore[union-attr]


def _run_transaction(pg: psycopg.Connection) -> None:
    with pg.transaction():
        for statement in TRANSACTION:
            pg.execute(statement)


def test_a_transaction_written_in_parts_is_seen_by_plain_readers_only_whole(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.a", "public.b"], max_batch_rows=PART)
    parts: list[int] = []  #: rows of each part of table a written while armed
    hold, held, release = threading.Event(), threading.Event(), threading.Event()
    spared: list[str] = []
    original = LakeTable.append

    def append(self: LakeTable, data: Any, *args: Any, **kwargs: Any) -> None:
        if hold.is_set() and (self.namespace, self.name) == ("public", "a"):
            if len(parts) == 3:  # three parts are written: hold the fourth
                held.set()
                assert release.wait(120), "the test never released the worker"
            parts.append(data.num_rows)
        original(self, data, *args, **kwargs)

    monkeypatch.setattr(LakeTable, "append", append)
    with running_worker(settings):
        wait_caught_up(pg)
        before = {name: _expected(pg, settings, name) for name in ("public.a", "public.b")}
        logged = {name: _changelog_rows(settings, name) for name in before}
        snapshots = len(lake_table(settings, "public.a").changelog.snapshots())  # type: ignore[union-attr]
        for name in before:
            _assert_readers_see(settings, name, lake_dir, before[name], logged[name])
        hold.set()
        _run_transaction(pg)
        assert held.wait(120), "the worker did not write the transaction in parts"
        # three parts are written to storage: no reader sees any of them, in either table
        for name in before:
            _assert_readers_see(settings, name, lake_dir, before[name], logged[name])
        # orphan removal of the same process spares staged files, however old
        table = lake_table(settings, "public.a")
        for lake in (table.changelog, table.state):
            spared += orphans.remove_orphans(lake, timedelta(0))  # type: ignore[arg-type]
        hold.clear()
        release.set()
        wait_caught_up(pg)
        for name in before:
            _assert_exact(pg, settings, name, lake_dir)
        changelog = lake_table(settings, "public.a").changelog
        assert changelog is not None
        assert len(changelog.snapshots()) == snapshots + 1, "the transaction is one change-log commit"
    assert spared == [], f"orphan removal deleted staged files: {spared}"
    assert len(parts) >= 4 and sum(parts[:3]) < 3400


def _files(warehouse: Path) -> set[str]:
    return {str(p) for p in warehouse.rglob("*.parquet")}


def _referenced(settings: Any, names: list[str]) -> set[str]:
    paths: set[str] = set()
    for name in names:
        table = lake_table(settings, name)
        for lake in (table.changelog, table.state):
            if lake is not None:
                paths |= {p.removeprefix("file://") for p in referenced_paths(lake) | metadata_paths(lake)}
    return paths


@pytest.mark.slow
def test_a_worker_killed_between_two_parts_writes_the_transaction_again(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, tmp_path: Path
) -> None:
    names = ["public.a", "public.b"]
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, names, max_batch_rows=PART)
    with running_worker(settings):
        wait_caught_up(pg)
    before = {name: _expected(pg, settings, name) for name in names}
    logged = {name: _changelog_rows(settings, name) for name in names}
    _run_transaction(pg)  # while the worker is stopped: the slot keeps it

    point = "lakegate.connectors.iceberg.writer:LakeTable.stage"
    config = write_config(settings, tmp_path / "lakegate.toml")
    worker = Proc(
        [point, "3", "ingest", "--config", str(config)], tmp_path / "killed.log", module="tests.killpoint"
    )
    code = worker.wait(120)
    assert code == -signal.SIGKILL, (
        f"the worker should have died at its third part (exit {code}):\n{worker.output()[-3000:]}"
    )
    for name in names:  # nothing of the transaction is visible
        _assert_readers_see(settings, name, lake_dir, before[name], logged[name])
    warehouse = Path(settings.lake.warehouse)
    orphaned = _files(warehouse) - _referenced(settings, names)
    assert len(orphaned) >= 3, f"the staged parts should be on disk: {orphaned}"

    time.sleep(1.2)  # older than orphan_age below
    upkeep = make_settings(
        pg_dsn, lake_dir, names, max_batch_rows=PART, maintenance_interval="1s", orphan_age="1s"
    )
    with running_worker(upkeep):
        wait_caught_up(pg)
        wait_for(lambda: not orphaned & _files(warehouse), 60, "upkeep to remove the orphaned parts")
    for name in names:
        _assert_exact(pg, settings, name, lake_dir)


def test_a_worker_stopped_between_two_parts_gives_its_staged_files_up(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker stopped (or restarting after a fault) in the middle of a transaction written in parts no longer
    protects what it staged: the files are ordinary orphans for upkeep (in this process too), their markers are
    gone, and the next worker writes the transaction again, whole."""
    from lakegate.connectors.iceberg import staging

    names = ["public.a", "public.b"]
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, names, max_batch_rows=PART)
    hold, held, release = threading.Event(), threading.Event(), threading.Event()
    parts: list[int] = []
    original = LakeTable.append

    def append(self: LakeTable, data: Any, *args: Any, **kwargs: Any) -> None:
        if hold.is_set() and (self.namespace, self.name) == ("public", "a"):
            if len(parts) == 3:
                held.set()
                assert release.wait(120), "the test never released the worker"
            parts.append(data.num_rows)
        original(self, data, *args, **kwargs)

    def staged_here() -> set[str]:
        return {p for p in staging.live_paths() if str(lake_dir) in p}

    monkeypatch.setattr(LakeTable, "append", append)
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        hold.set()
        _run_transaction(pg)
        assert held.wait(120), "the worker did not write the transaction in parts"
        assert staged_here(), "three parts should be staged (and protected) by now"
        worker.stopping.set()  # stop in the middle of the transaction
        hold.clear()
        release.set()
    assert staged_here() == set(), "a stopped worker's staged files are still protected in this process"
    assert list(lake_dir.rglob(f"{staging.MARKER}*")) == [], "a stopped worker left its staging markers"
    warehouse = Path(settings.lake.warehouse)
    orphaned = _files(warehouse) - _referenced(settings, names)
    assert orphaned, "the staged parts should be on disk until upkeep removes them"
    table = lake_table(settings, "public.a")
    for lake in (table.changelog, table.state):
        orphans.remove_orphans(lake, timedelta(0))  # type: ignore[arg-type]
    assert not orphaned & _files(warehouse), "orphan removal should now delete the given-up parts"
    monkeypatch.setattr(LakeTable, "append", original)
    with running_worker(settings):
        wait_caught_up(pg)
    for name in names:
        _assert_exact(pg, settings, name, lake_dir)


def test_schema_changes_inside_a_transaction_written_in_parts(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A column added (no default) or renamed between two parts changes only the schema: the staged files are
    committed as they are. A column added with a default, which must be written into the existing rows, copies the
    table again (the transaction must not show before its end)."""
    names = ["public.a", "public.b"]
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, names, max_batch_rows=PART)
    with running_worker(settings):
        wait_caught_up(pg)
        with pg.transaction():
            for statement in TRANSACTION[:3]:
                pg.execute(statement)
            pg.execute("ALTER TABLE a ADD COLUMN w int")
            pg.execute("ALTER TABLE a RENAME COLUMN doc TO body")
            pg.execute("UPDATE a SET w = id WHERE id % 3 = 0")
            for statement in TRANSACTION[3:]:
                pg.execute(statement)
        wait_caught_up(pg)
        for name in names:
            _assert_exact(pg, settings, name, lake_dir)
        with pg.transaction():
            pg.execute("INSERT INTO a SELECT g, 1, 'x' FROM generate_series(5000, 5999) g")
            pg.execute("ALTER TABLE a ADD COLUMN z int DEFAULT 5")
            pg.execute("UPDATE a SET z = 6 WHERE id BETWEEN 5000 AND 5100")
            pg.execute("INSERT INTO b VALUES (5000, 1)")
        wait_caught_up(pg)
        wait_for(lambda: "copying public.a again" in caplog.text, 60, "the table to be copied again")
        wait_caught_up(pg)
    for name in names:
        _assert_exact(pg, settings, name, lake_dir)


def test_a_truncate_inside_a_transaction_written_in_parts(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path
) -> None:
    """A truncate in an early part drops what the transaction staged before it and, at the end, every row the
    table held; one in the last part drops every staged part. A table without a key has only the change log."""
    names = ["public.a", "public.b"]
    _setup(pg)
    pg.execute("CREATE TABLE c (n int, note text)")
    pg.execute("ALTER TABLE c REPLICA IDENTITY FULL")
    pg.execute("INSERT INTO c SELECT g, 'c' || g FROM generate_series(1, 50) g")
    settings = make_settings(pg_dsn, lake_dir, [*names, "public.c"], max_batch_rows=PART)
    with running_worker(settings):
        wait_caught_up(pg)
        with pg.transaction():
            pg.execute("INSERT INTO a SELECT g, g, 'x' FROM generate_series(1000, 1999) g")
            pg.execute("INSERT INTO c SELECT g, 'n' FROM generate_series(100, 999) g")
            pg.execute("TRUNCATE a")
            pg.execute("INSERT INTO a SELECT g, g, 'y' FROM generate_series(1500, 2499) g")
            pg.execute("UPDATE a SET v = 0 WHERE id < 1600")
            pg.execute("DELETE FROM c WHERE n % 2 = 0")
        wait_caught_up(pg)
        for name in names:
            _assert_exact(pg, settings, name, lake_dir)
        c = lake_table(settings, "public.c")
        assert c.state is None and c.changelog is not None
        for reader, read in READERS.items():
            ops = read(c.changelog, lake_dir).group_by("_op").aggregate([("_op", "count")]).to_pylist()
            assert {r["_op"]: r["_op_count"] for r in ops} == {"r": 50, "c": 900, "d": 475}, reader
        with pg.transaction():
            pg.execute("INSERT INTO b SELECT g, g FROM generate_series(100, 1099) g")
            pg.execute("UPDATE b SET v = -1 WHERE id < 500")
            pg.execute("TRUNCATE b")
            pg.execute("INSERT INTO b VALUES (1, 1)")
        wait_caught_up(pg)
        for name in names:
            _assert_exact(pg, settings, name, lake_dir)


def test_a_transaction_whose_last_part_ends_right_before_its_commit(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path
) -> None:
    """Parts of exactly ``max_batch_rows``: the transaction's end arrives with no row after the last part, while
    nothing is being written. The worker must commit the staged parts then, not confirm the end as idle WAL."""
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.a", "public.b"], max_batch_rows=PART)
    with running_worker(settings):
        wait_caught_up(pg)
        for round_ in range(3):
            start = 10_000 * (round_ + 1)
            pg.execute(
                "INSERT INTO a SELECT g, g, 'x' FROM generate_series(%s::int, %s::int) g",
                (start, start + 2 * PART - 1),
            )
            wait_caught_up(pg)
            _assert_exact(pg, settings, "public.a", lake_dir)


_OTHER_PROCESS = """
import sys
from lakegate.connectors.changes import TableRef
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.ingest.config import IngestSettings
from lakegate.ingest.maintain import maintain_table

catalog = open_catalog("lake", sys.argv[1], sys.argv[2])
table = LakeTable.open(catalog, TableRef("public", "t"))
maintain_table(
    table, IngestSettings(orphan_age=86400), catch_up=False, compact=True, expire=True, compact_state=True
)
"""


def test_lakegate_maintain_in_another_process_leaves_a_staged_transaction_alone(tmp_path: Path) -> None:
    """Issue 11.7: files staged for longer than ``orphan_age`` are not orphans to ``lakegate maintain`` run in
    another process (the worker's marker lists them), and it does not compact a state table a transaction is
    staged on; the transaction then commits whole. A marker older than ``orphan_age`` (a crash's) protects
    nothing and is removed with its files."""
    import os
    import subprocess
    import sys

    from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
    from lakegate.connectors.iceberg import merge, staging
    from lakegate.connectors.iceberg.catalog import open_catalog
    from lakegate.connectors.iceberg.compaction import Thresholds

    uri, warehouse = f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse")
    columns = (Column("id", pa.int64(), "bigint", key=True), Column("v", pa.int64(), "bigint"))
    schema = TableSchema(TableRef("public", "t"), columns, ("id",))
    lake = LakeTable(open_catalog("lake", uri, warehouse), schema, compaction=Thresholds(every=0))
    lake.create()

    def changes(lsn: int, ids: range, op: str = "c") -> pa.Table:
        return pa.table(
            {
                "id": pa.array(list(ids), pa.int64()),
                "v": pa.array([lsn] * len(ids), pa.int64()),
                OP: [op] * len(ids),
                LSN: pa.array([lsn] * len(ids), pa.int64()),
                SEQ: pa.array(range(1, len(ids) + 1), pa.int64()),
                COMMIT_TS: pa.array([0] * len(ids), pa.timestamp("us", tz="UTC")),
            }
        )

    written = [changes(lsn, range(lsn * 10, lsn * 10 + 5)) for lsn in range(10, 30)]
    for (
        batch
    ) in written:  # small files enough for the maintenance to compact the state table (the writer won't)
        lake.append(batch)
    parts = [
        changes(100, range(1000, 1100)),
        changes(100, range(100, 150), "u"),
        changes(100, range(1100, 1110)),
    ]
    lake.append(parts[0], open_lsn=100)  # a part: staged on both tables
    lake.append(parts[1], open_lsn=100)  # another, updating committed rows
    state = lake.state
    assert state is not None
    mine = str(tmp_path)  # the registry is the process's: an earlier test's stopped worker may have left paths in it

    def live() -> set[str]:
        return {p for p in staging.live_paths() if mine in p}

    staged = live()
    assert len(staged) >= 4
    old = time.time() - 10 * 86400  # written ten days ago, as far as the file system tells
    for path in staged:
        os.utime(path.removeprefix("file://"), (old, old))
    location = state.metadata.location.removeprefix("file://")
    stale = f"{location}/metadata/{staging.MARKER}crashed.json"
    orphan = f"{location}/data/left-by-a-crash.parquet"
    for path in (stale, orphan):
        Path(path).write_text('{"paths": ["file://' + orphan + '"]}')
        os.utime(path, (old, old))
    before = state.current_snapshot()

    subprocess.run([sys.executable, "-c", _OTHER_PROCESS, uri, warehouse], check=True, timeout=300)
    assert all(Path(p.removeprefix("file://")).exists() for p in staged), (
        "another process deleted staged files"
    )
    assert not Path(stale).exists() and not Path(orphan).exists(), (
        "a crash's marker and orphan should be gone"
    )
    state.refresh()
    assert state.current_snapshot() == before, "the state table was compacted under the staged transaction"

    lake.append(parts[2], Position(100, 10))  # the last part commits the transaction
    assert not live()
    assert list(Path(location, "metadata").glob(f"{staging.MARKER}*")) == [], "markers left behind"
    history = pa.concat_tables([*written, *parts]).combine_chunks()
    expected = merge.replay(history, state.schema().as_arrow(), ("id",))
    names = ["id", "v"]
    _assert_same(arrow_rows(state.scan().to_arrow(), names), arrow_rows(expected, names), "state table")
    changelog = lake.changelog
    assert changelog is not None
    assert changelog.scan().to_arrow().num_rows == history.num_rows

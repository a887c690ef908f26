"""Crashes at chosen points (tests/killpoint.py): what a SIGKILL leaves in the warehouse is cleaned up by upkeep, and
the lake still equals the source row by row (issue 11.15, and the crash suite of issue 11)."""

from __future__ import annotations

import signal
import time
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

from lakegate.connectors.iceberg import orphans
from lakegate.connectors.iceberg.references import metadata_paths, referenced_paths
from tests.lakehelp import (
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    wait_caught_up,
    wait_for,
)
from tests.procs import Proc, write_config
from tests.test_ingest_faults import _assert_no_duplicates

TABLES = ["public.orders", "public.audit"]


def _setup(pg: psycopg.Connection) -> None:
    pg.execute("CREATE TABLE orders (id int PRIMARY KEY, amount numeric(14,2), status text)")
    pg.execute("CREATE TABLE audit (id bigserial PRIMARY KEY, note text)")
    pg.execute("INSERT INTO orders SELECT g, g / 3.0, 'new' FROM generate_series(1, 2000) g")


def _change(pg: psycopg.Connection, round_: int) -> None:
    pg.execute(
        "UPDATE orders SET amount = amount + 1, status = %s WHERE id %% 7 = %s", (f"r{round_}", round_ % 7)
    )
    pg.execute("DELETE FROM orders WHERE id %% 97 = %s", (round_,))
    pg.execute(
        "INSERT INTO audit (note) SELECT 'round ' || %s || ' #' || g FROM generate_series(1, 50) g", (round_,)
    )


def _files(warehouse: Path) -> set[str]:
    return {str(p) for p in warehouse.rglob("*") if p.is_file()}


def _referenced(settings) -> set[str]:  # type: ignore[no-untyped-def]
    paths: set[str] = set()
    for name in TABLES:
        table = lake_table(settings, name)
        for t in (table.changelog, table.state):
            if t is not None:
                paths |= {p.removeprefix("file://") for p in referenced_paths(t) | metadata_paths(t)}
    return paths


def _killed_at(point: str, n: int, config: Path, log: Path) -> None:
    """Run the worker until it kills itself the ``n``th time it reaches ``point``."""
    worker = Proc([point, str(n), "ingest", "--config", str(config)], log, module="tests.killpoint")
    code = worker.wait(120)
    assert code == -signal.SIGKILL, (
        f"the worker should have died at {point} #{n} (exit {code}):\n{worker.output()[-3000:]}"
    )


def test_files_written_by_a_commit_a_kill_cut_off_are_removed_by_upkeep(
    pg, pg_dsn, lake_dir, tmp_path
) -> None:
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES)
    config = write_config(settings, tmp_path / "lakegate.toml")
    with running_worker(settings):
        wait_caught_up(pg)
    warehouse = Path(settings.lake.warehouse)
    for round_, n in enumerate((1, 2)):  # killed after the first table's files, then after the second's
        _change(pg, round_)
        _killed_at("files", n, config, tmp_path / f"killed{n}.log")
    on_disk = _files(warehouse)
    orphaned = {p for p in on_disk - _referenced(settings) if p.endswith(orphans.ICEBERG_FILES)}
    assert len([p for p in orphaned if p.endswith(".parquet")]) >= 2, orphaned  # the test must see orphans

    # younger than the safety age: kept
    for name in TABLES:
        table = lake_table(settings, name)
        for t in (table.changelog, table.state):
            if t is not None:
                assert orphans.remove_orphans(t, timedelta(hours=1)) == []
    assert orphaned <= _files(warehouse)

    time.sleep(1.5)
    upkeep = make_settings(pg_dsn, lake_dir, TABLES, maintenance_interval="1s", orphan_age="1s")
    with running_worker(upkeep):
        _change(pg, 2)
        wait_caught_up(pg)
        wait_for(lambda: not orphaned & _files(warehouse), 60, "upkeep to remove the orphan files")
        wait_caught_up(pg)
    after = _files(warehouse)
    gone = {
        p for p in on_disk - after if not p.endswith(".metadata.json")
    }  # pyiceberg drops old metadata files
    assert gone == {p for p in orphaned if not p.endswith(".metadata.json")}, "only the orphans are removed"
    for name in TABLES:
        assert_lake_equals_source(pg, settings, name)
        _assert_no_duplicates(settings, name)


def test_orphan_removal_leaves_a_location_another_table_shares_alone(tmp_path) -> None:
    """A lake table renamed, and another created under the old name, share a directory: neither's files may go."""
    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog(
        "lake", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "warehouse")
    )
    catalog.create_namespace("public")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    first = catalog.create_table("public.t", rows.schema)
    first.append(rows)
    catalog.rename_table("public.t", "public.renamed")
    second = catalog.create_table("public.t", rows.schema)
    second.append(rows)
    renamed = catalog.load_table("public.renamed")
    assert renamed.location() == second.location(), "the premise: one directory for two tables"
    before = _files(tmp_path / "warehouse")
    for table in (renamed, second):
        assert orphans.remove_orphans(table, timedelta(0)) == []
    assert _files(tmp_path / "warehouse") == before
    assert catalog.load_table("public.renamed").scan().to_arrow().num_rows == 3

    # an orphan in a directory of its own goes
    lonely = catalog.create_table("public.lonely", rows.schema)
    lonely.append(rows)
    stray = Path(lonely.location().removeprefix("file://")) / "data" / "stray.parquet"
    stray.write_bytes(b"PAR1")
    assert orphans.remove_orphans(lonely, timedelta(0)) == [str(stray)]
    assert lonely.scan().to_arrow().num_rows == 3


def test_orphan_removal_reads_no_metadata_while_no_file_is_old_enough(tmp_path, monkeypatch) -> None:
    """Files must be ``orphan_age`` old to go (three days by default): while none is, what the table references
    (every manifest of every snapshot) is not read at all; once one is, the orphan among them goes."""
    import os

    import pyarrow as pa
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "warehouse"))
    catalog.create_namespace("public")
    rows = pa.table({"id": pa.array([1, 2, 3], pa.int64())})
    table = catalog.create_table("public.t", rows.schema)
    table.append(rows)
    stray = Path(table.location().removeprefix("file://")) / "data" / "stray.parquet"
    stray.write_bytes(b"PAR1")
    reads: list[int] = []
    real = orphans.referenced_paths

    def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(orphans, "referenced_paths", counted)
    assert orphans.remove_orphans(table, timedelta(days=3)) == []
    assert reads == [], "the table's references were read although no file could be old enough to go"
    assert stray.exists()
    four_days_ago = time.time() - 4 * 86400
    os.utime(stray, (four_days_ago, four_days_ago))
    assert orphans.remove_orphans(table, timedelta(days=3)) == [str(stray)]
    assert reads, "an old file: the table's references decide"
    assert table.scan().to_arrow().num_rows == 3


def _unreferenced_data(settings, warehouse: Path, older_than: float) -> set[str]:  # type: ignore[no-untyped-def]
    """Data files and manifests on disk that no snapshot references, written more than ``older_than`` s ago."""
    cutoff = time.time() - older_than
    return {
        p
        for p in _files(warehouse) - _referenced(settings)
        if p.endswith((".parquet", ".avro")) and Path(p).exists() and Path(p).stat().st_mtime < cutoff
    }


def _none_left(settings, warehouse: Path) -> bool:  # type: ignore[no-untyped-def]
    try:
        return not _unreferenced_data(settings, warehouse, 3)
    except FileNotFoundError:  # the running worker's expiry removed a manifest while we read: look again
        return False


@pytest.mark.slow
@pytest.mark.parametrize(
    ("point", "n"),
    [
        # compaction has written its files and not committed them
        ("lakegate.connectors.iceberg.maintenance:data_files", 1),
        # expiry has committed and not deleted the files only the expired snapshots used
        ("lakegate.connectors.iceberg.maintenance:_commit_expiry", 1),
    ],
    ids=["compaction", "expiry"],
)
def test_a_kill_during_upkeep_loses_nothing_and_its_leftovers_are_removed(
    pg, pg_dsn, lake_dir, tmp_path, point: str, n: int
) -> None:
    from tests.test_ingest_faults import Workload

    _setup(pg)
    pg.execute("ALTER TABLE orders ADD COLUMN at timestamptz")  # the fault suite's workload writes it
    settings = make_settings(pg_dsn, lake_dir, TABLES, commit_interval="0.1s")
    config = write_config(settings, tmp_path / "lakegate.toml")
    upkeep_now = {"LAKEGATE_INGEST__MAINTENANCE_INTERVAL": "2s", "LAKEGATE_INGEST__SNAPSHOT_EXPIRY": "1s"}
    with Workload(pg_dsn, seed=11) as workload:
        worker = Proc(
            [point, str(n), "ingest", "--config", str(config)],
            tmp_path / "killed.log",
            env=upkeep_now,
            module="tests.killpoint",
        )
        try:
            code = worker.wait(180)
        except BaseException:  # never leave a worker holding the slot: every later test would fail on it
            worker.kill()
            raise
        assert code == -signal.SIGKILL and "killpoint:" in worker.output(), (
            f"the worker should have died in its upkeep (exit {code}):\n{worker.output()[-3000:]}"
        )
        assert workload.transactions > 10
    warehouse = Path(settings.lake.warehouse)
    left = _unreferenced_data(settings, warehouse, 0)
    assert left, "the kill should leave files no snapshot references"
    time.sleep(1.5)
    recovery = make_settings(
        pg_dsn, lake_dir, TABLES, maintenance_interval="1s", orphan_age="1s", snapshot_expiry="1s"
    )
    with running_worker(recovery):
        wait_caught_up(pg, timeout=120)
        wait_for(lambda: not left & _files(warehouse), 60, "upkeep to remove what the kill left")
        wait_for(lambda: _none_left(settings, warehouse), 60, "no old unreferenced files")
        wait_caught_up(pg)
    for name in TABLES:
        assert_lake_equals_source(pg, settings, name)
        _assert_no_duplicates(settings, name)

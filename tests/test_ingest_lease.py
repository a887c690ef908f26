"""One worker per source (issue 11.1): a second worker waits without touching the lake, and a failed commit
never deletes a file a committed snapshot references."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from pathlib import Path

import psycopg
import pytest

from lakegate.connectors.errors import CommitConflict
from lakegate.connectors.iceberg import writer
from lakegate.connectors.iceberg.references import referenced_paths
from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import (
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    wait_caught_up,
    wait_for,
)
from tests.procs import Proc, write_config
from tests.test_ingest_faults import Workload, _assert_no_duplicates


def test_a_failed_state_commit_keeps_the_committed_change_log(pg, pg_dsn, lake_dir, monkeypatch) -> None:
    pg.execute("CREATE TABLE f (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO f SELECT g, 'v' || g FROM generate_series(1, 2000) g")
    real = writer.SnapshotSink.commit_state
    failures = []

    def conflicting(self: writer.SnapshotSink) -> None:  # the state commit loses a race, once
        if not failures:
            failures.append(self)
            raise CommitConflict("state table changed meanwhile (simulated)")
        real(self)

    monkeypatch.setattr(writer.SnapshotSink, "commit_state", conflicting)
    settings = make_settings(pg_dsn, lake_dir, ["public.f"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("UPDATE f SET v = 'changed' WHERE id % 7 = 0")
        pg.execute("DELETE FROM f WHERE id % 11 = 0")
        wait_caught_up(pg)
        wait_for(lambda: worker.rows_written > 0, what="the stream to write")
    assert failures, "the simulated conflict did not happen"
    table = assert_lake_equals_source(pg, settings, "public.f")
    for lake in (table.changelog, table.state):
        lake.refresh()
        for path in referenced_paths(lake):
            assert Path(path.removeprefix("file://")).exists(), f"{path} is referenced but was deleted"
    assert table.catch_up() == 0, "the state table did not follow its change log after the failed commit"
    assert_readers_equal_source(pg, settings, "public.f")  # a plain scan reads every referenced file


def _lake_files(lake_dir: Path) -> dict[str, float]:
    out = {}
    for root, _, files in os.walk(lake_dir / "warehouse"):
        for name in files:
            path = os.path.join(root, name)
            out[path] = os.stat(path).st_mtime
    return out


def _catalog_rows(lake_dir: Path) -> list[tuple]:
    with sqlite3.connect(lake_dir / "catalog.db") as db:
        return sorted(db.execute("SELECT * FROM iceberg_tables").fetchall())


@pytest.mark.slow
def test_two_workers_on_one_fresh_lake(pg, pg_dsn, lake_dir, tmp_path) -> None:
    """Started together on a fresh lake under load: one replicates, the other waits and touches nothing; when
    the first is killed the second takes over; the lake equals the source, nothing duplicated."""
    pg.execute("CREATE TABLE orders (id int PRIMARY KEY, amount numeric(14,2), status text, at timestamptz)")
    pg.execute("CREATE TABLE audit (id bigserial PRIMARY KEY, note text)")
    pg.execute("INSERT INTO orders SELECT g, g / 3.0, 'new', now() FROM generate_series(1, 20000) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.orders", "public.audit"])
    config = write_config(settings, tmp_path / "lakegate.toml")
    procs = [Proc(["ingest", "--config", str(config)], tmp_path / f"w{i}.log") for i in range(2)]
    try:
        with Workload(pg_dsn, seed=3) as workload:
            wait_for(lambda: sum("streaming from slot" in p.output() for p in procs) == 1, what="one worker")
            active = next(p for p in procs if "streaming from slot" in p.output())
            standby = next(p for p in procs if p is not active)
            standby.wait_for_output("another lakegate worker is replicating source 'pg'")
            wait_for(lambda: workload.transactions > 50, what="the workload")
        wait_caught_up(pg)
        time.sleep(3)  # the active worker's last commits
        files, catalog = _lake_files(lake_dir), _catalog_rows(lake_dir)
        time.sleep(2 * 3.5)  # the standby tries to take the lease twice more meanwhile
        assert _lake_files(lake_dir) == files, "the standby changed files in the lake"
        assert _catalog_rows(lake_dir) == catalog, "the standby changed the lake's catalog"
        for text in ("snapshot of", "created replication slot", "streaming from slot", "caught up", "compacted"):
            assert text not in standby.output(), f"the standby did {text!r}:\n{standby.output()[-2000:]}"
        active.kill()
        with Workload(pg_dsn, seed=4) as workload:
            standby.wait_for_output("streaming from slot", timeout=30)
            wait_for(lambda: workload.transactions > 50, what="the workload")
        wait_caught_up(pg)
    finally:
        for proc in procs:
            proc.signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(60)
    for name in ("public.orders", "public.audit"):
        assert_lake_equals_source(pg, settings, name)
        _assert_no_duplicates(settings, name)
    for name in ("public.orders", "public.audit"):
        table = lake_table(settings, name)
        for lake in (table.changelog, table.state):
            for path in referenced_paths(lake):
                assert Path(path.removeprefix("file://")).exists(), f"{path} is referenced but missing"


def test_resnapshot_is_refused_while_a_worker_holds_the_lease(pg, pg_dsn, lake_dir) -> None:
    import argparse

    from lakegate.connectors.errors import SourceConfigError
    from lakegate.ingest import maintain

    pg.execute("CREATE TABLE r (id int PRIMARY KEY)")
    settings = make_settings(pg_dsn, lake_dir, ["public.r"])
    with running_worker(settings):
        wait_caught_up(pg)
        args = argparse.Namespace(resnapshot=["public.r"], fold=False, compact=False, expire_snapshots=False)
        with (
            psycopg.connect(pg_dsn, autocommit=True),
            pytest.raises(SourceConfigError, match="(is running|is active).*stop it before"),
        ):
            maintain.run(settings.lake, settings.sources, settings.ingest, args)
    assert lake_table(settings, "public.r").changelog is not None

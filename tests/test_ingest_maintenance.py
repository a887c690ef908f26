"""Lake maintenance: state tables exact at every commit, compaction, snapshot expiry with file removal, change-log
retention, re-snapshot of a table."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import psycopg

from lakegate.cli import main as cli_main
from lakegate.connectors.iceberg import compaction, maintenance, statesync
from lakegate.connectors.iceberg.commits import stamp
from lakegate.connectors.iceberg.writer import LakeTable
from tests.lakehelp import (
    _assert_same,
    arrow_rows,
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    wait_caught_up,
)
from tests.procs import write_config


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*") if p.is_file()}


def test_the_state_table_is_exact_as_soon_as_a_change_is_confirmed(
    pg: psycopg.Connection, pg_dsn: str, lake_dir
) -> None:
    pg.execute("CREATE TABLE f (id int PRIMARY KEY, v int)")
    pg.execute("INSERT INTO f SELECT g, g FROM generate_series(1, 100) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.f"])
    with running_worker(settings):
        wait_caught_up(pg)
        for i in range(5):
            pg.execute("UPDATE f SET v = v + 1 WHERE id = %s", (i + 1,))
            pg.execute("DELETE FROM f WHERE id = %s", (50 + i,))
            wait_caught_up(pg)  # confirmed to PostgreSQL: both lake tables have committed it
            table = lake_table(settings, "public.f")
            assert table.state_checkpoint() == table.checkpoint()
            plain = arrow_rows(table.state.scan().to_arrow(), ["id", "v"])
            _assert_same(
                plain, sorted(pg.execute("SELECT id, v FROM f").fetchall(), key=repr), f"after step {i}"
            )
    assert_lake_equals_source(pg, settings, "public.f")


def test_compaction_and_expiry_keep_rows_and_checkpoints_and_remove_orphans(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE c (id int PRIMARY KEY, v text)")
    settings = make_settings(pg_dsn, lake_dir, ["public.c"], commit_interval="0.05s")
    with running_worker(settings):
        wait_caught_up(pg)
        for i in range(40):  # many small commits -> many small files
            pg.execute(
                "INSERT INTO c VALUES (%s, %s) ON CONFLICT (id) DO UPDATE SET v = EXCLUDED.v",
                (i % 25, f"v{i}"),
            )
            wait_caught_up(pg)
    table = lake_table(settings, "public.c")
    checkpoints = (table.checkpoint(), table.state_checkpoint())
    before = maintenance.file_count(table.changelog)
    assert before >= 20
    result = maintenance.compact(table.changelog)
    assert result.files_before == before and result.files_after == 1
    state_files = maintenance.file_count(table.state)
    limits = compaction.Thresholds(min_small_files=2, max_delete_files=2)
    done = compaction.compact(statesync.state_of(table), stamp(checkpoints[1]), limits, index=False)
    assert done.data_files_rewritten == state_files and done.data_files_written == 1, done
    table.refresh()
    assert (table.checkpoint(), table.state_checkpoint()) == checkpoints
    assert_lake_equals_source(pg, settings, "public.c")

    warehouse = Path(settings.lake.warehouse)
    on_disk = _files(warehouse)
    snapshots = len(table.changelog.metadata.snapshots)
    expired = maintenance.expire(table.changelog, timedelta(0))
    maintenance.expire(table.state, timedelta(0))
    table.refresh()
    assert expired.snapshots_expired == snapshots - 1 and len(table.changelog.metadata.snapshots) == 1
    assert expired.files_deleted > 20
    assert len(_files(warehouse)) < len(on_disk)
    assert (table.checkpoint(), table.state_checkpoint()) == checkpoints, "expiry must not lose a checkpoint"
    assert_lake_equals_source(pg, settings, "public.c")  # every file still referenced is still there


def test_maintain_command_and_resnapshot(pg, pg_dsn, lake_dir, tmp_path, capsys) -> None:
    pg.execute("CREATE TABLE r (id int PRIMARY KEY, v int)")
    pg.execute("INSERT INTO r SELECT g, g FROM generate_series(1, 50) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.r"])
    config = write_config(settings, tmp_path / "lakegate.toml")
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE r SET v = 0 WHERE id < 10")
        wait_caught_up(pg)
        assert cli_main(["maintain", "--config", str(config), "--resnapshot", "public.r"]) == 1
        assert "stop it before re-snapshotting" in capsys.readouterr().err
    assert cli_main(["maintain", "--config", str(config)]) == 0
    assert "public.r: maintained" in capsys.readouterr().out
    assert cli_main(["maintain", "--config", str(config), "--resnapshot", "public.r"]) == 0
    pg.execute("DELETE FROM r WHERE id > 40")  # while no worker runs
    with running_worker(settings):
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.r")
    ops = table.changelog.scan().to_arrow()["_op"].to_pylist()
    assert set(ops) == {"r"} and len(ops) == 40, "a fresh copy: snapshot rows only"


def _state_files(settings) -> tuple[int, int]:
    """(data files, delete files) of public.r's state table now."""
    state = lake_table(settings, "public.r").state
    assert state is not None
    tasks = list(state.scan().plan_files())
    deletes = {d.file_path for t in tasks for d in t.delete_files}
    return len(tasks), len(deletes)


def test_maintain_compact_merges_every_small_file(pg, pg_dsn, lake_dir, tmp_path, capsys) -> None:
    """A run of tiny commits leaves one small file each (fewer than the writer waits for): 'lakegate maintain
    --compact' merges them all, deletes included (issue 29.5)."""
    pg.execute("CREATE TABLE r (id int PRIMARY KEY, v int)")
    pg.execute("INSERT INTO r SELECT g, g FROM generate_series(1, 20) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.r"], compact_every=0)
    config = write_config(settings, tmp_path / "lakegate.toml")
    with running_worker(settings):
        wait_caught_up(pg)
        for i in range(8):  # one commit each
            pg.execute(f"INSERT INTO r VALUES ({100 + i}, {i})")
            pg.execute(f"UPDATE r SET v = -1 WHERE id = {i + 1}")
            wait_caught_up(pg)
    data, deletes = _state_files(settings)
    assert data >= 5 and deletes >= 2, (data, deletes)  # what there is to merge
    assert cli_main(["maintain", "--config", str(config), "--compact"]) == 0
    assert "public.r: maintained" in capsys.readouterr().out
    assert _state_files(settings) == (1, 0)
    assert_lake_equals_source(pg, settings, "public.r")


def test_configuration_errors_exit_2_with_the_key_named(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[ingest]\ncommit_interval = "soon"\n')
    assert cli_main(["ingest", "--config", str(bad)]) == 2
    assert "ingest.commit_interval = 'soon' is not a duration" in capsys.readouterr().err
    bad.write_text('[ingest]\ncommit_intervall = "1s"\n')
    assert cli_main(["ingest", "--config", str(bad)]) == 2
    assert "unknown setting [ingest] 'commit_intervall'" in capsys.readouterr().err
    assert cli_main(["ingest", "--config", str(tmp_path / "missing.toml")]) == 2


def test_changelog_retention_removes_only_changes_the_state_holds(pg, pg_dsn, lake_dir, monkeypatch) -> None:
    pg.execute("CREATE TABLE h (id int PRIMARY KEY, v int)")
    pg.execute("INSERT INTO h SELECT g, g FROM generate_series(1, 50) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.h"])
    follow = LakeTable._follow
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE h SET v = -v WHERE id <= 5")
        wait_caught_up(pg)
        # from here on the worker dies between its two commits, as it were: the change log only
        monkeypatch.setattr(LakeTable, "_follow", lambda *args: None)
        pg.execute("UPDATE h SET v = 0 WHERE id = 6")  # not in the state table: must survive the trim
        wait_caught_up(pg)
    monkeypatch.setattr(LakeTable, "_follow", follow)
    table = lake_table(settings, "public.h")
    checkpoint = table.checkpoint()
    assert table.state_checkpoint() < checkpoint
    removed = maintenance.trim_changelog(table.changelog, timedelta(0), table.state_checkpoint().lsn)
    # the snapshot rows go; the state's last transaction stays (a stamp cannot tell whether it was applied whole)
    assert removed == 50
    table.refresh()
    left = table.changelog.scan().to_arrow().to_pylist()
    assert sorted((r["id"], r["_op"], r["v"]) for r in left) == [(i, "u", -i) for i in range(1, 6)] + [
        (6, "u", 0)
    ]
    assert table.checkpoint() == checkpoint, "trimming must not move the checkpoint"
    # the change log alone no longer replays the table (that is what retention means); the state still equals it
    state = sorted((r["id"], r["v"]) for r in table.current().to_pylist())
    assert state == sorted(pg.execute("SELECT id, v FROM h").fetchall())
    assert table.catch_up() == 1, "the change the state table lacked is still in the change log"
    plain = sorted((r["id"], r["v"]) for r in table.state.scan().to_arrow().to_pylist())
    assert plain == state

"""Tables renamed, dropped, left out of 'replicate' and put back, or of a kind logical replication cannot see
(issue 11.4, 11.5, 11.12, 11.13): nothing is dropped silently, the other tables keep streaming."""

from __future__ import annotations

import logging
import re

import pyarrow.compute as pc
import pytest

from lakegate.connectors.errors import SourceConfigError
from lakegate.ingest.worker import Worker
from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import lake_table, make_settings, running_worker, wait_caught_up, wait_for


def _setup(pg, *names: str, rows: int = 500) -> None:
    for name in names:
        pg.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v text)")
        pg.execute(f"INSERT INTO {name} SELECT g, '{name} ' || g FROM generate_series(1, {rows}) g")


def _snapshot_rows(settings, name: str) -> int:
    history = lake_table(settings, name).changelog.scan(selected_fields=("_op",)).to_arrow()
    return history.filter(pc.equal(history["_op"], "r")).num_rows


def test_a_renamed_table_is_followed_and_replicate_takes_the_new_name(pg, pg_dsn, lake_dir, caplog) -> None:
    _setup(pg, "a", "other")
    settings = make_settings(pg_dsn, lake_dir, ["public.a", "public.other"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("ALTER TABLE a RENAME TO a2")
        pg.execute("UPDATE a2 SET v = 'after rename' WHERE id % 7 = 0")
        pg.execute("DELETE FROM a2 WHERE id % 11 = 0")
        pg.execute("INSERT INTO other VALUES (1001, 'x')")
        wait_caught_up(pg)
        wait_for(lambda: any("called public.a2 in PostgreSQL now" in r.getMessage() for r in caplog.records))
    assert_readers_equal_source(pg, settings, "public.a", source="public.a2")
    assert_readers_equal_source(pg, settings, "public.other")
    # restarted with the old name: still followed; changes made while stopped are not lost
    pg.execute("UPDATE a2 SET v = 'while stopped' WHERE id % 13 = 0")
    with running_worker(settings):
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.a", source="public.a2")
    # the new name in 'replicate': the lake tables are renamed, history kept, no copy
    snapshot_id = lake_table(settings, "public.a").changelog.current_snapshot().snapshot_id
    pg.execute("UPDATE a2 SET v = 'before the new name' WHERE id % 17 = 0")
    renamed = make_settings(pg_dsn, lake_dir, ["public.a2", "public.other"])
    with running_worker(renamed):
        wait_caught_up(pg)
        pg.execute("UPDATE a2 SET v = 'under the new name' WHERE id % 19 = 0")
        wait_caught_up(pg)
    table = lake_table(renamed, "public.a2")
    assert table.changelog.snapshot_by_id(snapshot_id) is not None, "the history was not kept"
    assert _snapshot_rows(renamed, "public.a2") == 500, "the table was copied again"
    assert_readers_equal_source(pg, renamed, "public.a2")
    from lakegate.connectors.iceberg import catalog as lake_catalog

    assert not lake_catalog.from_settings(renamed.lake).table_exists("public.a__changelog")


def test_a_table_left_out_of_replicate_and_put_back_is_copied_again(pg, pg_dsn, lake_dir, caplog) -> None:
    _setup(pg, "x", "y")
    both = make_settings(pg_dsn, lake_dir, ["public.x", "public.y"])
    with running_worker(both):
        wait_caught_up(pg)
    only_x = make_settings(pg_dsn, lake_dir, ["public.x"])
    with running_worker(only_x):
        wait_caught_up(pg)
        pg.execute("UPDATE y SET v = 'while out' WHERE id % 3 = 0")  # not streamed: y is not published
        pg.execute("INSERT INTO x VALUES (1001, 'x')")
        wait_caught_up(pg)
    with running_worker(both):
        wait_caught_up(pg)
        pg.execute("UPDATE y SET v = 'back' WHERE id % 5 = 0")
        wait_caught_up(pg)
    assert any("left out of 'replicate' for a while" in r.getMessage() for r in caplog.records)
    assert_readers_equal_source(pg, both, "public.y")
    assert_readers_equal_source(pg, both, "public.x")
    assert _snapshot_rows(both, "public.x") == 500, "x was copied again"


def test_a_dropped_table_is_reported_and_the_others_keep_streaming(pg, pg_dsn, lake_dir, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    _setup(pg, "gone", "kept")
    settings = make_settings(pg_dsn, lake_dir, ["public.gone", "public.kept"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("DROP TABLE gone")
        pg.execute("UPDATE kept SET v = 'after the drop' WHERE id % 3 = 0")
        wait_caught_up(pg)
        reported = lambda: any("was dropped in PostgreSQL" in r.getMessage() for r in caplog.records)  # noqa: E731
        wait_for(reported, 90, "the drop report")
        assert "dropped" in (worker.status[next(r for r in worker.status if r.name == "gone")].failed or "")
    with running_worker(settings) as again:
        wait_caught_up(pg)
        pg.execute("UPDATE kept SET v = 'next start' WHERE id % 4 = 0")
        wait_caught_up(pg)
    failed = again.status[next(r for r in again.status if r.name == "gone")].failed
    assert failed and "public.gone does not exist" in failed
    assert_readers_equal_source(pg, settings, "public.kept")
    assert lake_table(settings, "public.gone").current().num_rows == 500, "the lake keeps the dropped table"


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("CREATE UNLOGGED TABLE odd (id int PRIMARY KEY)", "is UNLOGGED.*ALTER TABLE public.odd SET LOGGED"),
        (
            "CREATE FOREIGN DATA WRAPPER fdw_none; CREATE SERVER fdw_srv FOREIGN DATA WRAPPER fdw_none; "
            "CREATE FOREIGN TABLE odd (id int) SERVER fdw_srv",
            "is a foreign table",
        ),
        ("CREATE VIEW odd AS SELECT 1 AS id", "is a view"),
    ],
)
def test_tables_replication_cannot_see_stop_alone_at_start(pg, pg_dsn, lake_dir, setup, message) -> None:
    """Each such table stops with its message in the worker's status; the other tables go on (issue 29.3), and
    with none left the worker is refused at once, not retried."""
    pg.execute("CREATE TABLE fine (id int PRIMARY KEY)")
    pg.execute(setup)
    settings = make_settings(pg_dsn, lake_dir, ["public.fine", "public.odd"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("INSERT INTO fine SELECT generate_series(1, 50)")
        wait_caught_up(pg)
        failed = {str(ref): status.failed for ref, status in worker.status.items() if status.failed}
    assert list(failed) == ["public.odd"] and re.search(message, failed["public.odd"]), failed
    assert_readers_equal_source(pg, settings, "public.fine")
    alone = make_settings(pg_dsn, lake_dir, ["public.odd"])
    with pytest.raises(SourceConfigError, match=message):
        Worker(alone.lake, alone.sources[0], alone.ingest).run()  # nothing left to replicate: refused


def test_a_temporary_table_stops_alone_at_start(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE fine (id int PRIMARY KEY)")
    pg.execute("CREATE TEMPORARY TABLE odd (id int PRIMARY KEY)")  # lives as long as this session
    (schema,) = pg.execute("SELECT nspname FROM pg_namespace WHERE oid = pg_my_temp_schema()").fetchone()
    settings = make_settings(pg_dsn, lake_dir, ["public.fine", f"{schema}.odd"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        failed = {str(ref): status.failed for ref, status in worker.status.items() if status.failed}
    assert (
        list(failed) == [f"{schema}.odd"] and f"{schema}.odd is a temporary table" in failed[f"{schema}.odd"]
    )

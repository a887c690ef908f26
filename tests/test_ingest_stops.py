"""What the lake cannot hold stops only that table, with advice that works when followed (issue 11.10, 11.14);
keys in an order of their own and REPLICA IDENTITY USING INDEX are not 'the key changed'."""

from __future__ import annotations

import argparse

import psycopg
import pytest

from lakegate.ingest import maintain
from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import make_settings, running_worker, wait_caught_up, wait_for


def _status(worker, name: str) -> str | None:
    return worker.status[next(r for r in worker.status if r.name == name)].failed


def _resnapshot(settings, name: str) -> None:
    args = argparse.Namespace(resnapshot=[name], fold=False, compact=False, expire_snapshots=False)
    maintain.run(settings.lake, settings.sources, settings.ingest, args)


def test_an_unsupported_type_stops_only_its_table(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE fine (id int PRIMARY KEY, v text)")
    pg.execute("CREATE TABLE odd (id int PRIMARY KEY, r int4range, v text)")
    pg.execute("INSERT INTO fine SELECT g, 'v' || g FROM generate_series(1, 100) g")
    pg.execute("INSERT INTO odd SELECT g, int4range(g, g + 1), 'o' || g FROM generate_series(1, 100) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.fine", "public.odd"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("UPDATE fine SET v = 'streamed' WHERE id % 3 = 0")
        wait_caught_up(pg)
        message = _status(worker, "odd")
    assert message and "table public.odd, column 'r'" in message and "int4range" in message, message
    assert_readers_equal_source(pg, settings, "public.fine")
    pg.execute("ALTER TABLE odd DROP COLUMN r")  # the advice
    with running_worker(settings):
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.odd")


def test_an_unsupported_column_added_while_streaming_advises_a_resnapshot(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
    pg.execute("CREATE TABLE other (id int PRIMARY KEY)")
    pg.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.t", "public.other"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("ALTER TABLE t ADD COLUMN box box")
        pg.execute("UPDATE t SET v = 'with a box', box = box(point(0, 0), point(1, 1)) WHERE id < 5")
        wait_for(lambda: _status(worker, "t") is not None, 30, "t to stop")
        pg.execute("INSERT INTO other VALUES (1)")
        wait_for(lambda: worker.status[next(r for r in worker.status if r.name == "other")].failed is None)
    message = _status(worker, "t")
    assert "column 'box'" in message and "lakegate maintain --resnapshot public.t" in message, message
    assert "Drop or change the column in the source, or leave" not in message
    pg.execute("ALTER TABLE t DROP COLUMN box")  # follow the advice
    _resnapshot(settings, "public.t")
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE t SET v = 'after' WHERE id % 7 = 0")
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.t")
    assert_readers_equal_source(pg, settings, "public.other")


@pytest.mark.parametrize(
    ("ddl", "bad", "fix"),
    [
        ("n numeric(10,2)", "'NaN'", "0"),
        ("n timestamptz", "'294270-01-01 00:00:00+00'", "'2024-01-01 00:00:00+00'"),
    ],
    ids=["numeric-nan", "timestamp-out-of-range"],
)
def test_a_value_the_lake_cannot_hold_stops_the_table_and_the_advice_works(
    pg, pg_dsn, lake_dir, ddl: str, bad: str, fix: str
) -> None:
    pg.execute(f"CREATE TABLE vals (id int PRIMARY KEY, {ddl})")
    pg.execute("CREATE TABLE other (id int PRIMARY KEY)")
    pg.execute("INSERT INTO vals (id) SELECT g FROM generate_series(1, 50) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.vals", "public.other"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute(f"UPDATE vals SET n = {bad} WHERE id = 7")
        wait_for(lambda: _status(worker, "vals") is not None, 30, "vals to stop")
        pg.execute("INSERT INTO other VALUES (1)")
        wait_for(lambda: len(list(_other_rows(settings))) == 1, 30, "other to go on")
    message = _status(worker, "vals")
    assert "column 'n'" in message and "lakegate maintain --resnapshot public.vals" in message, message
    pg.execute(f"UPDATE vals SET n = {fix} WHERE id = 7")  # follow the advice
    _resnapshot(settings, "public.vals")
    with running_worker(settings):
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.vals")


def _other_rows(settings):  # type: ignore[no-untyped-def]
    from tests.lakehelp import lake_table

    return lake_table(settings, "public.other").current().to_pylist()


def test_a_value_the_initial_copy_cannot_hold_stops_only_that_table(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE vals (id int PRIMARY KEY, n numeric(10,2))")
    pg.execute("CREATE TABLE other (id int PRIMARY KEY)")
    pg.execute("INSERT INTO vals VALUES (1, 'NaN'), (2, 1.5)")
    pg.execute("INSERT INTO other VALUES (1)")
    settings = make_settings(pg_dsn, lake_dir, ["public.vals", "public.other"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("INSERT INTO other VALUES (2)")
        wait_caught_up(pg)
    assert "Correct the value in PostgreSQL and restart the worker" in (_status(worker, "vals") or "")
    assert_readers_equal_source(pg, settings, "public.other")
    pg.execute("UPDATE vals SET n = 0 WHERE id = 1")
    with running_worker(settings):
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.vals")


def test_keys_in_their_own_order_and_replica_identity_using_index(
    pg: psycopg.Connection, pg_dsn, lake_dir
) -> None:
    pg.execute("CREATE TABLE k (a int, b text, v text, PRIMARY KEY (b, a))")  # the key is not in column order
    pg.execute("CREATE TABLE ri (id int NOT NULL, code text NOT NULL, v text)")
    pg.execute("CREATE UNIQUE INDEX ri_code_id ON ri (code, id)")
    pg.execute("ALTER TABLE ri REPLICA IDENTITY USING INDEX ri_code_id")
    pg.execute("INSERT INTO k SELECT g, 'b' || (g % 7), 'v' FROM generate_series(1, 200) g")
    pg.execute("INSERT INTO ri SELECT g, 'c' || (g % 5), 'v' FROM generate_series(1, 200) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.k", "public.ri"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("UPDATE k SET v = 'changed' WHERE a % 3 = 0")
        pg.execute("UPDATE k SET a = a + 1000 WHERE a % 10 = 0")  # key updates
        pg.execute("DELETE FROM k WHERE a % 11 = 0")
        pg.execute("UPDATE ri SET v = 'changed' WHERE id % 3 = 0")
        pg.execute("UPDATE ri SET code = 'moved' WHERE id % 10 = 0")
        pg.execute("DELETE FROM ri WHERE id % 11 = 0")
        wait_caught_up(pg)
        assert all(s.failed is None for s in worker.status.values()), {
            r: s.failed for r, s in worker.status.items()
        }
    assert_readers_equal_source(pg, settings, "public.k")
    assert_readers_equal_source(pg, settings, "public.ri")

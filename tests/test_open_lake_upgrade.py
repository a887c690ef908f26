"""Issue 12.6: a lake written by the first version (state copied on write by folds, the rest in the change-log tail)
is brought up to date with position deletes by committing only the tail; plain readers then see the source."""

from __future__ import annotations

import psycopg
import pyarrow as pa

from lakegate.connectors.iceberg import statesync
from tests import first_version
from tests.lakehelp import (
    _assert_same,
    arrow_rows,
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    source_rows,
    wait_caught_up,
)
from tests.readers import READERS


def _plain_readers_equal_source(pg: psycopg.Connection, settings, name: str, lake_dir) -> None:  # type: ignore[no-untyped-def]
    table = lake_table(settings, name)
    assert table.state is not None
    columns = [c.name for c in table.schema.columns]
    schema = table.state.schema().as_arrow()
    expected = source_rows(pg, name, pa.schema([schema.field(c) for c in columns]), table.schema.key)
    for reader in ("pyiceberg-arrow", "duckdb", "polars"):
        _assert_same(
            arrow_rows(READERS[reader](table.state, lake_dir), columns), expected, f"{name} by {reader}"
        )


def test_a_first_version_lake_catches_up_with_its_tail(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch
) -> None:
    first_version.writing(monkeypatch)
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text, n numeric(10,2))")
    pg.execute("CREATE TABLE pair (a int, b text, v int, PRIMARY KEY (a, b))")
    pg.execute("INSERT INTO t SELECT g, 'v' || g, g FROM generate_series(1, 2000) g")
    pg.execute("INSERT INTO pair SELECT g % 5, 'b' || g, g FROM generate_series(1, 300) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.t", "public.pair"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE t SET v = 'changed' WHERE id % 7 = 0")
        pg.execute("DELETE FROM t WHERE id % 11 = 0")
        pg.execute("UPDATE t SET id = id + 10000 WHERE id BETWEEN 100 AND 120")
        pg.execute("UPDATE pair SET v = -v WHERE a = 2")
        pg.execute("DELETE FROM pair WHERE a = 3")
        wait_caught_up(pg)
    assert first_version.fold(lake_table(settings, "public.t")) > 0  # one table folded part-way
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("INSERT INTO t VALUES (5000, 'new', 1.5)")
        pg.execute("TRUNCATE pair")
        pg.execute("INSERT INTO pair VALUES (1, 'x', 1), (2, 'y', 2)")
        wait_caught_up(pg)
    for name in ("public.t", "public.pair"):
        table = lake_table(settings, name)
        assert table.state_checkpoint() < table.checkpoint(), f"{name}: the first version left no tail"
        assert statesync.FORMAT_PROPERTY not in table.state.properties
    monkeypatch.undo()  # this version's worker, first start: it catches up before it streams
    with running_worker(settings):
        wait_caught_up(pg)
        for name in ("public.t", "public.pair"):
            table = lake_table(settings, name)
            assert table.state.properties[statesync.FORMAT_PROPERTY] == statesync.POSITION_DELETES
            assert table.state_checkpoint() == table.checkpoint()
            _plain_readers_equal_source(pg, settings, name, lake_dir)
        pg.execute("UPDATE t SET v = 'after the upgrade' WHERE id % 13 = 0")
        pg.execute("DELETE FROM pair WHERE a = 1")
        wait_caught_up(pg)
    for name in ("public.t", "public.pair"):
        table = lake_table(settings, name)
        _plain_readers_equal_source(pg, settings, name, lake_dir)
        assert_lake_equals_source(pg, settings, name)
        assert statesync.catch_up(table, statesync.state_of(table)) == 0, "a second catch-up finds nothing"


def test_a_tail_that_changes_no_row_still_moves_the_stamp(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch
) -> None:
    first_version.writing(monkeypatch)
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO t VALUES (1, 'a')")
    settings = make_settings(pg_dsn, lake_dir, ["public.t"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("INSERT INTO t VALUES (2, 'b')")
        pg.execute("DELETE FROM t WHERE id = 2")  # in one flush or two: the state ends where it began
        wait_caught_up(pg)
    table = lake_table(settings, "public.t")
    statesync.catch_up(table, statesync.state_of(table))
    assert table.state_checkpoint() == table.checkpoint()
    _plain_readers_equal_source(pg, settings, "public.t", lake_dir)


def test_following_the_change_log_survives_a_crash_between_the_two_commits(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from lakegate.connectors.changes import Position
    from lakegate.connectors.iceberg import merge
    from lakegate.connectors.iceberg.catalog import open_catalog
    from lakegate.connectors.iceberg.writer import LakeTable
    from tests.test_open_lake_deletes import COMPOSITE, Model

    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    model = Model(COMPOSITE, seed=41)
    table = LakeTable(catalog, _schema(COMPOSITE))
    table.create()
    with table.snapshot(Position(100, 0), 0) as sink:
        sink.write(pa.table({"a": pa.array([1, 2], pa.int32()), "b": ["x", "y"], "v": ["p", "q"]}))
    model.rows = {(1, "x"): {"a": 1, "b": "x", "v": "p"}, (2, "y"): {"a": 2, "b": "y", "v": "q"}}
    table.refresh()
    names = [c.name for c in COMPOSITE]
    follow = LakeTable._follow
    for step in range(8):
        batch = model.batch(60, truncate_at=25 if step == 5 else None)
        position = Position(model.lsn, 60)
        if step == 3:  # the worker dies between the change-log commit and the state commit
            monkeypatch.setattr(LakeTable, "_follow", lambda *args: None)
        table.append(batch, position)
        monkeypatch.setattr(LakeTable, "_follow", follow)
        if step != 3:  # the next flush's state commit holds the changes of both
            assert table.state_checkpoint() == position
            state_rows = table.state.scan().to_arrow()
            _assert_same(arrow_rows(state_rows, names), model.expected(), f"state after flush {step}")
        else:
            assert table.state_checkpoint() < position
    replayed = merge.replay(table.changelog.scan().to_arrow(), table.state.schema().as_arrow(), ("a", "b"))
    _assert_same(arrow_rows(replayed, names), model.expected(), "the change log replayed")


def _schema(columns):  # type: ignore[no-untyped-def]
    from lakegate.connectors.changes import TableRef, TableSchema

    return TableSchema(TableRef("public", "t"), columns, tuple(c.name for c in columns if c.key))

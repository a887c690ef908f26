"""DDL while streaming (issue 11): what DBAs and applications routinely do to a replicated table loses nothing.

Every test compares the lake with the source row by row through every reader (tests/lakecheck.py): the merged
state, the replayed change log, a plain pyiceberg scan of the state table and the gateway's view."""

from __future__ import annotations

import logging

import psycopg
import pyarrow.compute as pc

from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import lake_table, make_settings, running_worker, wait_caught_up

BIG = "repeat(md5(id::text), 400)"  # ~13 kB: stored out of line (TOAST), not resent by updates that keep it


def _toast_table(pg: psycopg.Connection, name: str, rows: int = 2000) -> None:
    pg.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v text, big text)")
    pg.execute(f"INSERT INTO {name} SELECT g, 'v' || g, NULL FROM generate_series(1, {rows}) g")
    pg.execute(f"UPDATE {name} SET big = {BIG} WHERE id % 10 = 0")


def test_add_column_with_defaults_while_streaming(pg, pg_dsn, lake_dir, caplog, capfd) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    _toast_table(pg, "t")
    settings = make_settings(pg_dsn, lake_dir, ["public.t"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("ALTER TABLE t ADD COLUMN a int DEFAULT 5")
        pg.execute("UPDATE t SET v = 'after a' WHERE id = 3")
        pg.execute("INSERT INTO t (id, v) VALUES (5001, 'new')")
        wait_caught_up(pg)
        pg.execute(
            "ALTER TABLE t ADD COLUMN b text NOT NULL DEFAULT 'it''s', "
            "ADD COLUMN c timestamptz NOT NULL DEFAULT now(), ADD COLUMN d int[] DEFAULT '{1,NULL,3}', "
            "ADD COLUMN n numeric(10,2) DEFAULT 1.5, ADD COLUMN u uuid DEFAULT 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"
        )
        pg.execute("UPDATE t SET v = 'after b' WHERE id BETWEEN 10 AND 20")  # big left unchanged (TOAST)
        with pg.transaction():  # the column appears in the middle of a transaction
            pg.execute("INSERT INTO t (id, v) VALUES (5002, 'before e')")
            pg.execute("UPDATE t SET v = 'before e' WHERE id = 30")
            pg.execute("ALTER TABLE t ADD COLUMN e int DEFAULT 7")
            pg.execute("UPDATE t SET v = 'after e' WHERE id = 40")
        pg.execute("ALTER TABLE t ADD COLUMN plain text")  # no default: existing rows hold NULL
        pg.execute("UPDATE t SET plain = 'set' WHERE id = 50")
        wait_caught_up(pg)
        pg.execute(
            "ALTER TABLE t ADD COLUMN r float8 DEFAULT random()"
        )  # volatile: PostgreSQL rewrites the table
        pg.execute("UPDATE t SET v = 'after r' WHERE id = 60")
        pg.execute("ALTER TABLE t ADD COLUMN late int")  # after the re-copy: no copy again
        pg.execute("UPDATE t SET late = 1 WHERE id = 70")
        pg.execute("UPDATE t SET v = 'end' WHERE id % 100 = 0")  # big unchanged again
        wait_caught_up(pg, timeout=120)
    assert_readers_equal_source(pg, settings, "public.t")
    copies = [r.getMessage() for r in caplog.records if "copying public.t again" in r.getMessage()]
    assert len(copies) == 1 and "'r' was added and PostgreSQL has rewritten" in copies[0], copies
    # writer processes (tests/test_ingest_processes_ddl.py) log to the worker's stderr, not to this process's
    said = [r.getMessage() for r in caplog.records] + capfd.readouterr().err.splitlines()
    backfills = {line[line.index("public.t: wrote") :] for line in said if "into the rows that existed before" in line}
    assert len(backfills) == 3, backfills


def test_rename_column_keeps_history_values_and_toast(pg, pg_dsn, lake_dir) -> None:
    _toast_table(pg, "rn")
    settings = make_settings(pg_dsn, lake_dir, ["public.rn"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("ALTER TABLE rn RENAME COLUMN big TO payload")
        pg.execute("UPDATE rn SET v = 'after rename' WHERE id % 20 = 0")  # payload unchanged (TOAST)
        pg.execute("ALTER TABLE rn RENAME COLUMN id TO rn_id")  # the key
        pg.execute("UPDATE rn SET v = 'key renamed' WHERE rn_id % 30 = 0")
        wait_caught_up(pg)
    table = lake_table(settings, "public.rn")
    fields = {f.name: f.field_id for f in table.state.schema().fields}
    assert "payload" in fields and "big" not in fields and "rn_id" in fields, fields
    assert_readers_equal_source(pg, settings, "public.rn")
    # renamed while the worker is stopped, with changes on both sides of the rename waiting in the slot
    pg.execute("UPDATE rn SET v = 'before second rename' WHERE rn_id % 40 = 0")
    pg.execute("ALTER TABLE rn RENAME COLUMN v TO label")
    pg.execute("UPDATE rn SET label = 'after second rename' WHERE rn_id % 50 = 0")
    pg.execute("ALTER TABLE rn RENAME COLUMN payload TO body")
    pg.execute("UPDATE rn SET label = 'after third rename' WHERE rn_id % 70 = 0")
    with running_worker(settings):
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.rn")
    history = lake_table(settings, "public.rn").changelog.scan().to_arrow()
    assert "label" in history.column_names and "body" in history.column_names
    snapshot_rows = history.filter(pc.equal(history["_op"], "r"))
    assert snapshot_rows.num_rows == 2000 and snapshot_rows["label"].null_count == 0, (
        "history keeps its values"
    )


def test_column_dropped_and_added_again_under_the_same_name(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE da (id int PRIMARY KEY, note text, n int)")
    pg.execute("INSERT INTO da SELECT g, 'old ' || g, g FROM generate_series(1, 500) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.da"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("ALTER TABLE da DROP COLUMN note")
        pg.execute("ALTER TABLE da ADD COLUMN note text")  # a new column: existing rows hold NULL
        pg.execute("UPDATE da SET note = 'new' WHERE id <= 10")
        pg.execute("ALTER TABLE da DROP COLUMN n, ADD COLUMN n int DEFAULT 42")
        pg.execute("UPDATE da SET note = 'newer' WHERE id = 11")
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.da")


def test_column_added_again_under_its_name_with_another_type(pg, pg_dsn, lake_dir) -> None:
    """``DROP COLUMN v; ADD COLUMN v int`` where v was text (issue 29.7): the lake keeps the old column aside
    (``v__dropped_<attnum>``, its history and values) and follows the new one, while streaming and while the
    worker is stopped; nothing stops."""
    pg.execute("CREATE TABLE dt (id int PRIMARY KEY, v text, n int, w text)")
    pg.execute("INSERT INTO dt SELECT g, 'old ' || g, g, 'w' || g FROM generate_series(1, 300) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.dt"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("ALTER TABLE dt DROP COLUMN v")
        pg.execute("ALTER TABLE dt ADD COLUMN v int")  # existing rows hold NULL
        pg.execute("UPDATE dt SET v = id * 10 WHERE id <= 20")
        pg.execute("ALTER TABLE dt DROP COLUMN n, ADD COLUMN n text DEFAULT 'forty-two'")  # existing rows: it
        pg.execute("UPDATE dt SET n = 'set' WHERE id = 21")
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.dt")
    pg.execute("UPDATE dt SET w = 'before' WHERE id = 30")
    pg.execute("ALTER TABLE dt DROP COLUMN w, ADD COLUMN w numeric(6, 2) DEFAULT 1.50")
    pg.execute("UPDATE dt SET w = 99.99 WHERE id = 31")
    with running_worker(settings):
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.dt")
    table = lake_table(settings, "public.dt")
    state = table.state.scan().to_arrow().sort_by("id")
    assert {"v__dropped_2", "n__dropped_3", "w__dropped_4"} <= set(state.column_names), state.column_names
    row = state.slice(99, 1).to_pylist()[0]  # id 100: no change since the drops but the new columns' values
    assert (row["id"], row["v__dropped_2"], row["n__dropped_3"], row["w__dropped_4"]) == (
        100,
        "old 100",
        100,
        "w100",
    ), row
    history = table.changelog.scan().to_arrow()
    assert "v__dropped_2" in history.column_names and history["v__dropped_2"].null_count < history.num_rows


def test_columns_added_while_the_worker_is_stopped(pg, pg_dsn, lake_dir) -> None:
    """The slot holds changes from before and after the ALTERs: each is met in order on the next start."""
    _toast_table(pg, "st", rows=1000)
    settings = make_settings(pg_dsn, lake_dir, ["public.st"])
    with running_worker(settings):
        wait_caught_up(pg)
    pg.execute("INSERT INTO st (id, v) VALUES (3001, 'before the default')")
    pg.execute("ALTER TABLE st ADD COLUMN z int NOT NULL DEFAULT 9")
    pg.execute("UPDATE st SET v = 'after z' WHERE id % 25 = 0")
    pg.execute("ALTER TABLE st ADD COLUMN w timestamptz DEFAULT clock_timestamp()")  # volatile: a rewrite
    pg.execute("UPDATE st SET v = 'after w' WHERE id % 33 = 0")
    with running_worker(settings):
        wait_caught_up(pg, timeout=120)
    assert_readers_equal_source(pg, settings, "public.st")

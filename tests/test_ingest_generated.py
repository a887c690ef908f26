"""Generated columns (issue 11.15): stored ones are replicated (PostgreSQL 18 publishes them with
``publish_generated_columns = stored``, and the snapshot copies them), in the initial copy and in the stream;
what a publication does not carry is named in a message."""

from __future__ import annotations

import logging

import psycopg
import pytest

from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import lake_table, make_settings, running_worker, wait_caught_up

TABLE = """
CREATE TABLE items (
    id int PRIMARY KEY,
    price numeric(10,2),
    qty int,
    total numeric(14,2) GENERATED ALWAYS AS (price * qty) STORED,
    label text GENERATED ALWAYS AS ('#' || id || ' x' || coalesce(qty, 0)) STORED,
    note text
)"""


def _needs_18(pg: psycopg.Connection) -> None:
    if pg.info.server_version < 180000:
        pytest.skip("PostgreSQL publishes generated columns from 18 on")


def _lake_columns(settings, name: str) -> set[str]:  # type: ignore[no-untyped-def]
    return {
        f.name for f in lake_table(settings, name).changelog.schema().fields if not f.name.startswith("_")
    }


@pytest.mark.parametrize("reader", ["duckdb", "psql"])
def test_stored_generated_columns_are_replicated_in_snapshot_and_stream(
    pg, pg_dsn, lake_dir, monkeypatch, reader: str
) -> None:
    from tests.lakehelp import use_reader

    _needs_18(pg)
    use_reader(monkeypatch, reader)
    pg.execute(TABLE)
    pg.execute("INSERT INTO items (id, price, qty) SELECT g, g * 1.25, g % 7 FROM generate_series(1, 500) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.items"])
    with running_worker(settings):
        wait_caught_up(pg)
        assert_readers_equal_source(pg, settings, "public.items")  # the snapshot
        pg.execute("UPDATE items SET qty = qty + 1 WHERE id % 3 = 0")
        pg.execute("UPDATE items SET note = 'generated columns unchanged' WHERE id % 5 = 0")
        pg.execute("INSERT INTO items (id, price, qty) VALUES (1001, 2.5, 4), (1002, NULL, 3)")
        pg.execute("DELETE FROM items WHERE id % 11 = 0")
        wait_caught_up(pg)
    assert _lake_columns(settings, "public.items") == {"id", "price", "qty", "total", "label", "note"}
    assert_readers_equal_source(pg, settings, "public.items")  # the stream


def test_stored_generated_and_identity_columns_added_while_streaming_are_replicated(
    pg, pg_dsn, lake_dir, caplog
) -> None:
    """Both rewrite the table (PostgreSQL computes a value for every existing row): the table is copied again."""
    _needs_18(pg)
    caplog.set_level(logging.INFO, logger="lakegate")
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, a int)")
    pg.execute("INSERT INTO t SELECT g, g FROM generate_series(1, 300) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.t"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("ALTER TABLE t ADD COLUMN doubled int GENERATED ALWAYS AS (a * 2) STORED")
        pg.execute("UPDATE t SET a = -a WHERE id <= 10")
        wait_caught_up(pg)
        pg.execute("ALTER TABLE t ADD COLUMN serial_no int GENERATED ALWAYS AS IDENTITY")
        pg.execute("UPDATE t SET a = 0 WHERE id BETWEEN 20 AND 30")
        pg.execute("INSERT INTO t (id, a) VALUES (1000, 1)")
        wait_caught_up(pg)
    assert {"doubled", "serial_no"} <= _lake_columns(settings, "public.t")
    assert_readers_equal_source(pg, settings, "public.t")
    copies = [r.getMessage() for r in caplog.records if "copying public.t again" in r.getMessage()]
    assert len(copies) == 2, copies


def test_what_a_publication_does_not_carry_is_named(pg, pg_dsn, lake_dir, caplog) -> None:
    """A publication the tables' owner created without publish_generated_columns: the stored column is left out
    with a message naming table, column and the fix; a virtual column is named too; the rest is exact."""
    _needs_18(pg)
    pg.execute(TABLE)
    pg.execute("ALTER TABLE items ADD COLUMN shown text GENERATED ALWAYS AS (upper(note)) VIRTUAL")
    pg.execute("INSERT INTO items (id, price, qty, note) SELECT g, g, g, 'n' FROM generate_series(1, 50) g")
    pg.execute("CREATE PUBLICATION theirs FOR TABLE items")
    settings = make_settings(pg_dsn, lake_dir, ["public.items"])
    settings.sources[0].publication = "theirs"
    with caplog.at_level(logging.WARNING), running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE items SET qty = 0, note = 'streamed' WHERE id <= 5")
        wait_caught_up(pg)
    messages = caplog.text
    assert "generated column 'total' of public.items is left out of the lake" in messages, messages
    assert "ALTER PUBLICATION theirs SET (publish_generated_columns = stored)" in messages
    assert "virtual generated column 'shown' of public.items is not in the lake" in messages
    assert _lake_columns(settings, "public.items") == {"id", "price", "qty", "note"}
    assert_readers_equal_source(pg, settings, "public.items")


def test_a_column_list_that_leaves_a_column_out_refuses_the_table(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE listed (id int PRIMARY KEY, kept text, secret text)")
    pg.execute("CREATE TABLE whole (id int PRIMARY KEY)")
    pg.execute("CREATE PUBLICATION theirs FOR TABLE listed (id, kept), whole")
    settings = make_settings(pg_dsn, lake_dir, ["public.listed", "public.whole"])
    settings.sources[0].publication = "theirs"
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("INSERT INTO whole VALUES (1)")
        wait_caught_up(pg)
        failed = {r.name: s.failed for r, s in worker.status.items()}
    assert "'secret' of public.listed out (a column list)" in str(failed.get("listed")), failed
    assert failed.get("whole") is None
    assert_readers_equal_source(pg, settings, "public.whole")

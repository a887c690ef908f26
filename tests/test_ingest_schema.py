"""Schema changes while streaming: added, dropped and widened columns evolve the lake; others stop the table."""

import psycopg

from lakegate.connectors.changes import parse_lsn
from tests.lakehelp import (
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    wait_caught_up,
    wait_for,
)


def test_add_drop_and_widen_columns_mid_stream(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    pg.execute(
        "CREATE TABLE m (id int PRIMARY KEY, qty int, code varchar(10), ratio real, price numeric(10,2), "
        "legacy text)"
    )
    pg.execute("INSERT INTO m SELECT g, g, 'c' || g, g / 3.0, g * 1.5, 'old' FROM generate_series(1, 500) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.m"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE m SET qty = qty + 1 WHERE id <= 100")
        with pg.transaction():  # rows before and after the change in one transaction
            pg.execute("INSERT INTO m VALUES (1001, 1, 'before', 1.5, 1.25, 'x')")
            pg.execute("ALTER TABLE m ADD COLUMN note text, ADD COLUMN tags int[]")
            pg.execute("INSERT INTO m VALUES (1002, 2, 'after', 2.5, 2.25, 'y', 'hello', '{1,2}')")
        pg.execute(
            "ALTER TABLE m ALTER COLUMN qty TYPE bigint, ALTER COLUMN code TYPE text, "
            "ALTER COLUMN ratio TYPE double precision, ALTER COLUMN price TYPE numeric(16,2)"
        )
        pg.execute(
            "UPDATE m SET qty = 9000000000, code = repeat('long', 10), ratio = 1e300, "
            "price = 12345678901234.56 WHERE id = 7"
        )
        pg.execute("ALTER TABLE m DROP COLUMN legacy")
        pg.execute("UPDATE m SET note = 'after drop' WHERE id BETWEEN 1 AND 50")
        pg.execute("INSERT INTO m (id, qty, note) VALUES (2000, 1, 'new row')")
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.m")
    types = {f.name: str(f.field_type) for f in table.state.schema().fields}
    assert types["qty"] == "long" and types["ratio"] == "double" and types["price"] == "decimal(16, 2)"
    assert types["note"] == "string" and types["tags"] == "list<int>" and "legacy" in types
    rows = {r["id"]: r for r in table.current().to_pylist()}
    assert rows[1]["legacy"] is None and rows[200]["legacy"] == "old", (
        "a dropped column is null after the drop"
    )


def test_incompatible_change_stops_only_that_table_and_holds_the_slot(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, caplog
) -> None:
    pg.execute("CREATE TABLE a (id int PRIMARY KEY, v text)")
    pg.execute("CREATE TABLE b (id int PRIMARY KEY, v int)")
    pg.execute("INSERT INTO a VALUES (1, '10'), (2, '20')")
    settings = make_settings(pg_dsn, lake_dir, ["public.a", "public.b"])

    def confirmed() -> int:
        return parse_lsn(
            pg.execute(
                "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'lakegate_pg'"
            ).fetchone()[0]
        )

    with running_worker(settings) as worker:
        wait_caught_up(pg)
        pg.execute("ALTER TABLE a ALTER COLUMN v TYPE int USING v::int")
        pg.execute("UPDATE a SET v = v + 1")
        (after,) = pg.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        pg.execute("INSERT INTO b VALUES (1, 1), (2, 2)")
        wait_for(
            lambda: worker.status[next(r for r in worker.status if r.name == "a")].failed is not None,
            what="table a to stop",
        )
        wait_for(
            lambda: (
                lake_table(settings, "public.b").changelog.current_snapshot().summary["total-records"] == "2"
            ),
            what="table b to keep streaming",
        )
        pg.execute("INSERT INTO b VALUES (3, 3)")
        wait_for(
            lambda: (
                lake_table(settings, "public.b").changelog.current_snapshot().summary["total-records"] == "3"
            ),
            what="table b to keep streaming",
        )
        assert confirmed() < parse_lsn(after), "the transaction with the stopped change may not be confirmed"
    message = worker.status[next(r for r in worker.status if r.name == "a")].failed
    assert "column 'v' of public.a changed to int" in message and "resnapshot public.a" in message
    assert any("table public.a stopped" in r.getMessage() for r in caplog.records)
    assert_lake_equals_source(pg, settings, "public.b")
    with running_worker(settings) as again:  # the change was not confirmed: a restart meets it again
        wait_for(lambda: any(s.failed for s in again.status.values()), what="table a to stop again")

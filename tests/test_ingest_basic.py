import psycopg

from tests.lakehelp import assert_lake_equals_source, make_settings, running_worker, wait_caught_up


def test_snapshot_then_stream_insert_update_delete(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    pg.execute("CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(12,2), seen timestamptz)")
    pg.execute(
        "INSERT INTO items SELECT g, 'item ' || g, g * 1.25, '2024-01-01'::timestamptz + g * interval '1h' "
        "FROM generate_series(1, 1000) g"
    )
    settings = make_settings(pg_dsn, lake_dir, ["public.items"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("INSERT INTO items VALUES (5000, 'new', 9.99, now())")
        pg.execute("UPDATE items SET price = price + 1 WHERE id % 10 = 0")
        pg.execute("DELETE FROM items WHERE id % 7 = 0")
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.items")

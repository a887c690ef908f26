"""Issue 12.5: the gateway reads a state table that holds everything its change log does as a plain Iceberg table
(no change-log scan, DuckDB applying the position deletes), at the current snapshot and at past ones."""

from __future__ import annotations

from pathlib import Path

import psycopg

from lakegate.gateway.lake import TimeTravel, view_sql
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import gateway_settings, pg_rows, rows_of, same_rows
from tests.lakehelp import lake_table, running_worker, wait_caught_up


def test_a_state_table_kept_with_position_deletes_is_read_plainly(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path
) -> None:
    pg.execute("CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(12,2))")
    pg.execute("INSERT INTO items SELECT g, 'item ' || g, g * 1.25 FROM generate_series(1, 500) g")
    settings = gateway_settings(pg_dsn, lake_dir, ["public.items"])
    settings.ingest.maintenance_interval = 0.0
    gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
    versions = []
    try:
        for step in (
            "UPDATE items SET price = price + 1 WHERE id % 3 = 0",
            "DELETE FROM items WHERE id % 7 = 0",
            "UPDATE items SET id = id + 1000 WHERE id < 20",
        ):
            with running_worker(settings):
                wait_caught_up(pg)
                pg.execute(step)
                wait_caught_up(pg)
            table = lake_table(settings, "public.items")
            assert table.state_checkpoint() == table.checkpoint()  # the worker's state commit at every flush
            entry = gateway.lake.entry("public", "items", gateway.lake.listing())
            sql = view_sql(entry)
            assert "__changelog" not in sql and "__tail" not in sql, sql
            got = rows_of(gateway.query("SELECT id, name, price FROM lake.public.items").table)
            want = pg_rows(pg, "SELECT id, name, price FROM public.items")
            assert same_rows(got, want, ordered=False), f"after {step!r}"
            snapshot = entry.table.current_snapshot()
            assert snapshot is not None
            versions.append((snapshot.snapshot_id, want))
        for snapshot_id, want in versions:  # a past version: the state snapshot with that stamp, read plainly
            entry = gateway.lake.entry("public", "items", gateway.lake.listing())
            assert "__tail" not in view_sql(entry, TimeTravel(snapshot_id=snapshot_id))
            got = rows_of(
                gateway.query(
                    f"SELECT id, name, price FROM lake.public.items FOR VERSION AS OF {snapshot_id}"
                ).table
            )
            assert same_rows(got, want, ordered=False), f"at version {snapshot_id}"
    finally:
        gateway.close()

"""Lake tables through the gateway: every committed change is visible at once (the state table, read as the plain
Iceberg table it is, agrees with LakeTable.current()), time travel by the state table's own snapshot ids and by
timestamp, a state table behind its change log read as of its stamp, change-log-only tables, and the freshness
figures of /v1/status."""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.gateway.errors import BadRequest, NotFound
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import gateway_settings, pg_rows, rows_of, same_rows
from tests.lakehelp import lake_table, running_worker, wait_caught_up

COLUMNS = "id, name, price, tags, seen"


def _check(gateway: Gateway, conn: psycopg.Connection, settings: Any, what: str) -> None:
    """Gateway view == PostgreSQL, and == LakeTable.current() (all columns, _lsn and _commit_ts included)."""
    got = rows_of(gateway.query(f"SELECT {COLUMNS} FROM lake.public.items").table)
    want = pg_rows(conn, f"SELECT {COLUMNS} FROM public.items")
    assert same_rows(got, want, ordered=False), f"{what}: gateway differs from PostgreSQL"
    merged = lake_table(settings, "public.items").current()
    view = gateway.query("SELECT * FROM lake.public.items").table
    assert sorted(view.column_names) == sorted(merged.column_names)
    assert same_rows(rows_of(view), rows_of(merged.select(view.column_names)), ordered=False), (
        f"{what}: gateway differs from LakeTable.current()"
    )


def _version(gateway: Gateway) -> tuple[int, int]:
    """(snapshot id, commit time ms) of the items state table's current snapshot."""
    listing = gateway.lake.listing()
    entry = gateway.lake.entry("public", "items", listing)
    snap = entry.table.current_snapshot()
    assert snap is not None
    return snap.snapshot_id, snap.timestamp_ms


def test_state_tables_time_travel_and_status(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pg.execute(
        "CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(12,2), tags text[], seen timestamptz)"
    )
    pg.execute(
        "INSERT INTO items SELECT g, 'item ' || g, g * 1.25, ARRAY['t' || (g % 3)], "
        "timestamptz '2024-01-01 00:00+00' + g * interval '1 hour' FROM generate_series(1, 300) g"
    )
    pg.execute("CREATE TABLE events (kind text, at timestamptz)")
    pg.execute("ALTER TABLE events REPLICA IDENTITY FULL")
    pg.execute("INSERT INTO events VALUES ('boot', '2024-01-01 00:00+00')")
    settings = gateway_settings(pg_dsn, lake_dir, ["public.items", "public.events"])
    settings.ingest.maintenance_interval = 0.0
    gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
    versions: list[tuple[int, int, list[tuple[Any, ...]]]] = []
    try:
        with running_worker(settings):
            wait_caught_up(pg)
            _check(gateway, pg, settings, "after the snapshot")
            steps = [
                "INSERT INTO items VALUES (1000, 'new', 9.99, ARRAY['x', NULL], now())",
                "UPDATE items SET price = price + 1, tags = ARRAY[]::text[] WHERE id % 10 = 0",
                "DELETE FROM items WHERE id % 7 = 0",
                "UPDATE items SET id = id + 5000 WHERE id BETWEEN 1 AND 3",  # key change: d + u
                "BEGIN; UPDATE items SET name = 'twice' WHERE id = 11; UPDATE items SET name = 'thrice' "
                "WHERE id = 11; COMMIT",
            ]
            for step in steps:
                pg.execute(step)
                wait_caught_up(pg)
                _check(gateway, pg, settings, step)
                snapshot_id, committed_ms = _version(gateway)
                versions.append(
                    (snapshot_id, committed_ms, pg_rows(pg, f"SELECT {COLUMNS} FROM public.items"))
                )
                time.sleep(0.05)  # commits of different steps get different times
            pg.execute("TRUNCATE items")
            pg.execute("INSERT INTO items VALUES (1, 'after truncate', 1.00, NULL, NULL)")
            wait_caught_up(pg)
            _check(gateway, pg, settings, "after TRUNCATE and an insert")
            pg.execute(
                "INSERT INTO events VALUES ('tick', '2024-01-02 00:00+00'), ('tick', '2024-01-03 00:00+00')"
            )
            wait_caught_up(pg)
            status = gateway.status()
            metrics = gateway.metrics.render(status)
        # a worker that stops between its two commits: the gateway reads the state as of its stamp until the
        # worker starts again and catches up
        before = rows_of(gateway.query(f"SELECT {COLUMNS} FROM lake.public.items").table)
        monkeypatch.setattr(LakeTable, "_follow", lambda *args: None)
        with running_worker(settings):
            pg.execute("UPDATE items SET name = 'not in the state yet'")
            wait_caught_up(pg)
        monkeypatch.undo()
        table = lake_table(settings, "public.items")
        assert table.state_checkpoint() < table.checkpoint()
        behind = rows_of(gateway.query(f"SELECT {COLUMNS} FROM lake.public.items").table)
        assert same_rows(behind, before, ordered=False), "not the state as of its stamp"
        with running_worker(settings):
            wait_caught_up(pg)
            _check(gateway, pg, settings, "after the worker started again")

        for snapshot_id, committed_ms, rows in versions:
            got = rows_of(
                gateway.query(
                    f"SELECT {COLUMNS} FROM lake.public.items FOR VERSION AS OF {snapshot_id}"
                ).table
            )
            assert same_rows(got, rows, ordered=False), f"version {snapshot_id} differs from the source then"
            at = datetime.datetime.fromtimestamp((committed_ms + 20) / 1000, datetime.UTC).isoformat()
            got = rows_of(
                gateway.query(
                    f"SELECT {COLUMNS} FROM lake.public.items FOR TIMESTAMP AS OF '{at}' AS i"
                ).table
            )
            assert same_rows(got, rows, ordered=False), f"time {at} differs from the source then"
        both = gateway.query(
            f"SELECT (SELECT count(*) FROM lake.public.items FOR VERSION AS OF {versions[0][0]}) AS a,"
            " (SELECT count(*) FROM lake.public.items) AS b"
        ).table.to_pylist()[0]
        assert (both["a"], both["b"]) == (len(versions[0][2]), 1)
        with pytest.raises(NotFound, match="no snapshot 12345"):
            gateway.query("SELECT * FROM lake.public.items FOR VERSION AS OF 12345")
        with pytest.raises(BadRequest, match="no snapshot at or before"):
            gateway.query("SELECT * FROM lake.public.items FOR TIMESTAMP AS OF '2001-01-01 00:00:00+00'")
        with pytest.raises(BadRequest, match="only for lake tables"):
            gateway.query("SELECT * FROM pg.public.items FOR VERSION AS OF 1")

        # a table without a key is kept as a change log only
        events = gateway.query(
            "SELECT kind, _op FROM lake.public.events__changelog ORDER BY at"
        ).table.to_pylist()
        assert [e["kind"] for e in events] == ["boot", "tick", "tick"]
        with pytest.raises(NotFound, match="events__changelog"):
            gateway.query("SELECT * FROM lake.public.events")
    finally:
        gateway.close()

    figures = {t["table"]: t for t in status["tables"]}
    items, events_status = figures["lake.public.items"], figures["lake.public.events__changelog"]
    assert items["kind"] == "state" and events_status["kind"] == "changelog"
    for key in ("committed_lsn", "folded_lsn", "source_lsn", "confirmed_lsn", "last_commit"):
        assert items[key], f"/v1/status lacks {key}"
    assert items["lag_bytes"] is not None and items["lag_bytes"] >= 0 and items["lag_seconds"] is not None
    assert items["rows"]["changelog"] >= 300 and items["files"]["state"] >= 1
    assert 'lakegate_table_lag_bytes{table="lake.public.items"}' in metrics
    assert 'lakegate_table_rows{table="lake.public.items",part="state"}' in metrics

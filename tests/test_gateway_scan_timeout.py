"""A federated query whose PostgreSQL scan waits on a lock is ended by the source's statement_timeout (the
gateway's time limit): DuckDB's interrupt does not reach a scan that waits inside PostgreSQL (issue 27.5)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa

from lakegate.connectors.iceberg import catalog as lake_catalog
from tests.gateway_fixtures.harness import database, gateway_settings, live_server


def test_a_scan_waiting_on_a_lock_ends_at_the_time_limit(pg_server: Any, tmp_path: Path) -> None:
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE dim (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO dim VALUES (1, 'a')")
        settings = gateway_settings(dsn, tmp_path, timeout="2s", cache_bytes=0)  # read dim live
        catalog = lake_catalog.from_settings(settings.lake)
        catalog.create_namespace("public")
        facts = catalog.create_table("public.facts", pa.schema([("id", pa.int64())]))
        facts.append(pa.table({"id": [1]}))
        sql = "SELECT count(*) AS n FROM lake.public.facts f JOIN pg.public.dim d ON d.id = f.id"
        with live_server(settings) as live, live.client() as client:
            assert client.post("/v1/query", json={"sql": sql}).json()["rows"] == [{"n": 1}]
            released = threading.Event()
            with psycopg.connect(dsn) as locker:
                locker.execute("LOCK TABLE dim IN ACCESS EXCLUSIVE MODE")  # held until this block ends
                response = client.post("/v1/query", json={"sql": sql})
                answered_while_locked = not released.is_set()
                locker.rollback()
                released.set()
            assert answered_while_locked, "the query waited for the lock to be released"
            assert response.status_code == 408, response.text
            assert response.json()["error"]["sqlstate"] == "57014", response.text

"""The worker says precisely what is wrong with a source it cannot replicate, and works without superuser."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from connectors.errors import SlotInUse, SourceConfigError
from ingest.worker import Worker
from lakegate import embedded
from tests.lakehelp import assert_lake_equals_source, make_settings, running_worker, wait_caught_up


def test_wal_level_replica_is_explained(tmp_path: Path, lake_dir) -> None:
    server = embedded.start(tmp_path / "replica-pg", {"wal_level": "replica"})
    try:
        with psycopg.connect(server.dsn(), autocommit=True) as conn:
            conn.execute("CREATE TABLE t (id int PRIMARY KEY)")
        settings = make_settings(server.dsn(), lake_dir, ["public.t"])
        with pytest.raises(
            SourceConfigError, match="wal_level is 'replica'.*ALTER SYSTEM SET wal_level = logical"
        ):
            Worker(settings).run()
    finally:
        server.stop("immediate")


def _role_dsn(dsn: str, role: str) -> str:
    return dsn.replace("user=postgres", f"user={role}")


def test_role_without_replication_is_explained_and_an_owner_with_replication_works(
    pg, pg_dsn, lake_dir
) -> None:
    name = pg.execute("SELECT current_database()").fetchone()[0]
    pg.execute("DROP ROLE IF EXISTS lg_plain")
    pg.execute("DROP ROLE IF EXISTS lg_repl")
    pg.execute("CREATE ROLE lg_plain LOGIN")
    pg.execute("CREATE ROLE lg_repl LOGIN REPLICATION")  # not a superuser: owns its tables, may replicate
    pg.execute(f'GRANT CREATE ON DATABASE "{name}" TO lg_repl')
    pg.execute("GRANT CREATE ON SCHEMA public TO lg_repl")
    try:
        with psycopg.connect(_role_dsn(pg_dsn, "lg_repl"), autocommit=True) as owner:
            owner.execute("CREATE TABLE owned (id int PRIMARY KEY, v text)")
            owner.execute("INSERT INTO owned VALUES (1, 'a'), (2, 'b')")
            owner.execute("GRANT SELECT ON owned TO lg_plain")
        plain = make_settings(_role_dsn(pg_dsn, "lg_plain"), lake_dir / "plain", ["public.owned"])
        with pytest.raises(
            SourceConfigError,
            match="role 'lg_plain' may not start logical replication.*ALTER ROLE lg_plain REPLICATION",
        ):
            Worker(plain).run()
        settings = make_settings(_role_dsn(pg_dsn, "lg_repl"), lake_dir / "repl", ["public.owned"])
        with running_worker(settings):
            wait_caught_up(pg)
            pg.execute("UPDATE owned SET v = 'changed' WHERE id = 2")
            wait_caught_up(pg)
        assert_lake_equals_source(pg, settings, "public.owned")
    finally:
        for role in ("lg_plain", "lg_repl"):
            pg.execute(f"DROP OWNED BY {role} CASCADE")
            pg.execute(f"DROP ROLE {role}")


def test_slot_in_use_names_the_process_and_the_second_worker_waits(pg, pg_dsn, lake_dir, caplog) -> None:
    pg.execute("CREATE TABLE s (id int PRIMARY KEY)")
    settings = make_settings(pg_dsn, lake_dir, ["public.s"])
    with running_worker(settings):
        wait_caught_up(pg)
        second = Worker(settings)
        thread = threading.Thread(target=second.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            "is in use by server process" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.1)
        second.stopping.set()
        thread.join(30)
    messages = [r.getMessage() for r in caplog.records if "is in use" in r.getMessage()]
    assert messages and "another lakegate worker is probably running" in messages[0], messages
    assert "pg_terminate_backend(" in messages[0]
    assert issubclass(SlotInUse, Exception)

"""The worker says precisely what is wrong with a source it cannot replicate, and works without superuser."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import psycopg
import pytest

from lakegate import embedded
from lakegate.connectors.errors import SlotInUse, SourceConfigError
from lakegate.ingest.worker import Worker
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
            Worker(settings.lake, settings.sources[0], settings.ingest).run()
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
            Worker(plain.lake, plain.sources[0], plain.ingest).run()
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


def test_a_second_worker_names_the_first_and_waits(pg, pg_dsn, lake_dir, caplog) -> None:
    pg.execute("CREATE TABLE s (id int PRIMARY KEY)")
    settings = make_settings(pg_dsn, lake_dir, ["public.s"])
    with running_worker(settings):
        wait_caught_up(pg)
        second = Worker(settings.lake, settings.sources[0], settings.ingest)
        thread = threading.Thread(target=second.run, daemon=True)
        thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            "another lakegate worker" in r.getMessage() for r in caplog.records
        ):
            time.sleep(0.1)
        second.stopping.set()
        thread.join(30)
    messages = [r.getMessage() for r in caplog.records if "another lakegate worker" in r.getMessage()]
    assert messages and "server process" in messages[0] and "lakegate-ingest" in messages[0], messages
    assert "pg_terminate_backend(" in messages[0] and "waits" in messages[0]
    assert not second.leased.is_set() and not second.lake, "the second worker opened the lake"


def test_a_slot_held_by_another_program_is_named(pg, pg_dsn, lake_dir) -> None:
    from lakegate.connectors.postgres.connection import connect
    from lakegate.connectors.postgres.replication import check_slot

    pg.execute("SELECT pg_create_logical_replication_slot('held_elsewhere', 'pgoutput')")
    holder = connect(pg_dsn, replication=True)
    try:
        holder.pgconn.send_query(
            b"START_REPLICATION SLOT held_elsewhere LOGICAL 0/0 (proto_version '1', publication_names 'none')"
        )
        holder.pgconn.get_result()
        with pytest.raises(SlotInUse, match="is in use by server process .*pg_terminate_backend"):
            check_slot(pg, "held_elsewhere")
    finally:
        holder.close()
        wait = time.monotonic() + 10
        while time.monotonic() < wait:
            try:
                pg.execute("SELECT pg_drop_replication_slot('held_elsewhere')")
                break
            except psycopg.errors.ObjectInUse:
                time.sleep(0.1)


def test_two_sources_stream_side_by_side_and_stop_together(pg_server, tmp_path, lake_dir) -> None:
    import signal

    from tests.procs import Proc, toml_value

    dsns = []
    for name in ("src_a", "src_b"):
        with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
            admin.execute(f"CREATE DATABASE {name}")
        dsns.append(pg_server.dsn(name))
    with psycopg.connect(dsns[0], autocommit=True) as a, psycopg.connect(dsns[1], autocommit=True) as b:
        a.execute("CREATE TABLE left_t (id int PRIMARY KEY, v text)")
        b.execute("CREATE TABLE right_t (id int PRIMARY KEY, v text)")
        a.execute("INSERT INTO left_t VALUES (1, 'a')")
        b.execute("INSERT INTO right_t VALUES (1, 'b')")
    config = tmp_path / "two.toml"
    config.write_text(
        f'[lake]\ncatalog_uri = "sqlite:///{lake_dir}/catalog.db"\nwarehouse = "{lake_dir}/warehouse"\n'
        f'[[sources]]\nname = "a"\ndsn = {toml_value(dsns[0])}\nreplicate = ["public.left_t"]\n'
        f'[[sources]]\nname = "b"\ndsn = {toml_value(dsns[1])}\nreplicate = ["public.right_t"]\n'
        '[ingest]\ncommit_interval = "0.2s"\n'
    )
    worker = Proc(["ingest", "--config", str(config)], tmp_path / "two.log")
    try:
        worker.wait_for_output("streaming from slot lakegate_a")
        worker.wait_for_output("streaming from slot lakegate_b")
        with psycopg.connect(dsns[0], autocommit=True) as a, psycopg.connect(dsns[1], autocommit=True) as b:
            a.execute("INSERT INTO left_t VALUES (2, 'a2')")
            b.execute("UPDATE right_t SET v = 'b2'")
            wait_caught_up(a, slot="lakegate_a")
            wait_caught_up(b, slot="lakegate_b")
    finally:
        worker.signal(signal.SIGTERM)
        assert worker.wait(60) == 0, worker.output()[-2000:]
    assert worker.output().count("stopped cleanly") == 2
    from lakegate import settings as settings_mod

    settings = settings_mod.load(config)
    with psycopg.connect(dsns[0], autocommit=True) as a, psycopg.connect(dsns[1], autocommit=True) as b:
        assert_lake_equals_source(a, settings, "public.left_t")
        assert_lake_equals_source(b, settings, "public.right_t")
    for name in ("src_a", "src_b"):
        with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
            admin.execute(
                f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                f"WHERE database = '{name}'"
            )
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


def test_two_sources_may_not_replicate_the_same_table() -> None:
    from lakegate import settings as settings_mod

    with pytest.raises(settings_mod.SettingsError, match="both replicate public.users"):
        settings_mod.load(
            None,
            environ={
                "LAKEGATE_SOURCES__A__DSN": "host=x",
                "LAKEGATE_SOURCES__A__REPLICATE": "public.users",
                "LAKEGATE_SOURCES__B__DSN": "host=y",
                "LAKEGATE_SOURCES__B__REPLICATE": "public.users",
            },
        )

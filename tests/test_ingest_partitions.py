"""Partitioned tables and inheritance (issue 11.6), and a worker role that owns nothing (issue 11.11).

Partitions map to their partitioned table whatever the publication publishes them as; rows moving between
partitions stay one row; partitions created, attached, detached, dropped or truncated leave the lake exact.
Every check compares every reader of the lake with the source row by row (tests/lakecheck.py)."""

from __future__ import annotations

import logging

import psycopg
import pytest

from lakegate.connectors.errors import SourceConfigError
from lakegate.ingest.worker import Worker
from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import make_settings, running_worker, wait_caught_up, wait_for


def _partitioned(pg: psycopg.Connection) -> None:
    pg.execute(
        "CREATE TABLE p (id int, region text, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)"
    )
    pg.execute("CREATE TABLE p_eu PARTITION OF p FOR VALUES IN ('eu')")
    pg.execute("CREATE TABLE p_us PARTITION OF p FOR VALUES IN ('us')")
    pg.execute("CREATE TABLE p_rest PARTITION OF p DEFAULT")
    pg.execute(
        "INSERT INTO p SELECT g, (ARRAY['eu', 'us', 'apac'])[g % 3 + 1], 'v' || g FROM generate_series(1, 900) g"
    )


def _changes(pg: psycopg.Connection, tag: str) -> None:
    pg.execute(f"UPDATE p SET v = '{tag}' WHERE id % 7 = 0")
    pg.execute(
        f"UPDATE p SET region = 'us', v = '{tag} moved' WHERE region = 'eu' AND id % 5 = 0"
    )  # moves rows
    pg.execute("DELETE FROM p WHERE id % 11 = 0")
    pg.execute(f"INSERT INTO p VALUES ({hash(tag) % 100000 + 10000}, 'eu', '{tag} new')")


@pytest.mark.parametrize(
    "publication",
    [
        None,  # lakegate's own (partitions published as themselves)
        "CREATE PUBLICATION mine FOR ALL TABLES",  # partitions published as themselves
        "CREATE PUBLICATION mine FOR TABLE p WITH (publish_via_partition_root = true)",  # as the root
    ],
    ids=["own", "all-tables", "via-root"],
)
def test_partitioned_table_under_any_publication(pg, pg_dsn, lake_dir, caplog, publication) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    _partitioned(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.p"])
    if publication:
        pg.execute(publication)
        settings.sources[0].publication = "mine"
    with running_worker(settings):
        wait_caught_up(pg)
        _changes(pg, "streamed")
        wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.p")
    copies = [r for r in caplog.records if "again under a fresh snapshot" in r.getMessage()]
    assert not copies, [r.getMessage() for r in copies]


def test_partitions_created_attached_detached_truncated(pg, pg_dsn, lake_dir, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    _partitioned(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.p"])

    def copies() -> list[str]:
        return [r.getMessage() for r in caplog.records if "again under a fresh snapshot" in r.getMessage()]

    def copied(n: int) -> None:  # the initial snapshot and n copies are complete, and streamed past
        wait_for(
            lambda: sum("snapshot of public.p complete" in r.getMessage() for r in caplog.records) == n + 1,
            90,
            f"copy {n}",
        )
        wait_caught_up(pg, timeout=120)

    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("CREATE TABLE p_asia PARTITION OF p FOR VALUES IN ('asia')")  # created: followed, no copy
        pg.execute("INSERT INTO p SELECT g, 'asia', 'asia ' || g FROM generate_series(2001, 2100) g")
        _changes(pg, "after create")
        wait_caught_up(pg)
        pg.execute("CREATE TABLE p_af (LIKE p INCLUDING ALL)")
        pg.execute("INSERT INTO p_af SELECT g, 'af', 'africa ' || g FROM generate_series(3001, 3050) g")
        pg.execute("ALTER TABLE p ATTACH PARTITION p_af FOR VALUES IN ('af')")  # rows came in: a copy
        pg.execute("UPDATE p SET v = 'after attach' WHERE id % 13 = 0")
        copied(1)
        assert "attached" in copies()[0], copies()
        pg.execute("ALTER TABLE p DETACH PARTITION p_us")  # rows left: a copy (seen by the catalog watch)
        pg.execute("UPDATE p SET v = 'after detach' WHERE id % 17 = 0")
        copied(2)
        assert "detached" in copies()[1], copies()
        pg.execute("TRUNCATE p_eu")  # one partition: a copy
        pg.execute("UPDATE p SET v = 'after truncate' WHERE id % 19 = 0")
        copied(3)
        assert "truncated" in copies()[2], copies()
        pg.execute("TRUNCATE p")  # every partition: the lake empties, no copy
        pg.execute("INSERT INTO p VALUES (1, 'eu', 'after the whole truncate')")
        wait_caught_up(pg, timeout=120)
    assert len(copies()) == 3, copies()
    assert_readers_equal_source(pg, settings, "public.p")


def test_inheritance_parent_holds_its_own_rows(pg, pg_dsn, lake_dir, monkeypatch) -> None:
    """The stream maintains the parent's own rows (children are published as themselves and not replicated), so
    the snapshot copies ONLY the parent, through both readers."""
    pg.execute("CREATE TABLE parent (id int PRIMARY KEY, v text)")
    pg.execute("CREATE TABLE child (extra int) INHERITS (parent)")
    pg.execute("INSERT INTO parent SELECT g, 'p' || g FROM generate_series(1, 300) g")
    pg.execute("INSERT INTO child SELECT g, 'c' || g, g FROM generate_series(1001, 1300) g")
    pg.execute("CREATE VIEW parent_only AS SELECT * FROM ONLY parent")
    for offset, (reader, lake) in enumerate((("duckdb", lake_dir / "a"), ("psql", lake_dir / "b"))):
        from tests.lakehelp import use_reader

        with monkeypatch.context() as patch:
            use_reader(patch, reader)
            settings = make_settings(pg_dsn, lake, ["public.parent"])
            settings.sources[0].slot = settings.sources[0].publication = f"inh_{reader}"
            with running_worker(settings):
                wait_caught_up(pg, slot=f"inh_{reader}")
                pg.execute("UPDATE parent SET v = 'changed' WHERE id % 10 = 0")  # children's rows too
                pg.execute(f"INSERT INTO child VALUES ({5000 + 2 * offset}, 'child later', 1)")
                pg.execute(f"INSERT INTO parent VALUES ({5001 + 2 * offset}, 'parent later')")
                wait_caught_up(pg, slot=f"inh_{reader}")
            assert_readers_equal_source(pg, settings, "public.parent", source="public.parent_only")
        pg.execute(f"SELECT pg_drop_replication_slot('inh_{reader}')")


def test_a_role_with_select_and_replication_and_the_owners_publication(pg, pg_dsn, lake_dir) -> None:
    name = pg.execute("SELECT current_database()").fetchone()[0]
    pg.execute("DROP ROLE IF EXISTS lg_reader")
    pg.execute("CREATE ROLE lg_reader LOGIN REPLICATION")  # owns nothing, not a superuser
    pg.execute(f'GRANT CONNECT ON DATABASE "{name}" TO lg_reader')
    try:
        pg.execute("CREATE TABLE owned (id int PRIMARY KEY, v text)")
        pg.execute("INSERT INTO owned SELECT g, 'v' || g FROM generate_series(1, 200) g")
        _partitioned(pg)
        pg.execute("GRANT SELECT ON owned, p TO lg_reader")
        dsn = pg_dsn.replace("user=postgres", "user=lg_reader")
        settings = make_settings(dsn, lake_dir, ["public.owned", "public.p"])
        # without a publication it cannot make one, and says what the owner must run
        with pytest.raises(
            SourceConfigError, match="as the owner run CREATE PUBLICATION lakegate_pg FOR TABLE"
        ):
            Worker(settings.lake, settings.sources[0], settings.ingest).run()
        pg.execute("CREATE PUBLICATION lakegate_pg FOR TABLE owned, p")  # by the owner, as README advises
        with running_worker(settings):
            wait_caught_up(pg)
            pg.execute("UPDATE owned SET v = 'changed' WHERE id % 3 = 0")
            _changes(pg, "reader")
            wait_caught_up(pg)
        assert_readers_equal_source(pg, settings, "public.owned")
        assert_readers_equal_source(pg, settings, "public.p")
        # a publication that lacks a table or an action is refused with the command that fixes it
        pg.execute("CREATE TABLE later (id int PRIMARY KEY)")
        pg.execute("GRANT SELECT ON later TO lg_reader")
        more = make_settings(dsn, lake_dir, ["public.owned", "public.p", "public.later"])
        with pytest.raises(SourceConfigError, match="ALTER PUBLICATION lakegate_pg ADD TABLE public.later"):
            Worker(more.lake, more.sources[0], more.ingest).run()
        pg.execute("ALTER PUBLICATION lakegate_pg SET (publish = 'insert, update, delete')")
        with pytest.raises(SourceConfigError, match="does not publish truncate"):
            Worker(settings.lake, settings.sources[0], settings.ingest).run()
    finally:
        pg.execute("DROP PUBLICATION IF EXISTS lakegate_pg")
        pg.execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = 'lakegate_pg'"
        )
        pg.execute("DROP OWNED BY lg_reader CASCADE")
        pg.execute("DROP ROLE lg_reader")

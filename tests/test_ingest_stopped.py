"""What happens while the worker is not running is never missed (issue 29.1): partitions attached with rows,
detached or dropped, and a table taken out of the publication and put back, between a stop and a start, leave the
lake exact for every reader; a stop and start with nothing of the kind copies nothing.

Each case: the worker streams, stops (gracefully), the source changes, the worker starts, and every reader of the
lake is compared with the source row by row (tests/lakecheck.py)."""

from __future__ import annotations

import logging

import psycopg
import pytest

from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import lake_table, make_settings, running_worker, wait_caught_up, wait_for

CHANGED = "changed while the worker was not running"


def _messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def _partitioned(pg: psycopg.Connection) -> None:
    pg.execute(
        "CREATE TABLE p (id int, region text, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)"
    )
    pg.execute("CREATE TABLE p_eu PARTITION OF p FOR VALUES IN ('eu')")
    pg.execute("CREATE TABLE p_us PARTITION OF p FOR VALUES IN ('us')")
    pg.execute(
        "INSERT INTO p SELECT g, (ARRAY['eu', 'us'])[g % 2 + 1], 'v' || g FROM generate_series(1, 400) g"
    )


def test_partitions_attached_and_detached_while_stopped(pg, pg_dsn, lake_dir, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    _partitioned(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.p"])
    with running_worker(settings):
        wait_caught_up(pg)
    # stopped: a table with rows attached in the transaction that also updates the table, another detached
    pg.execute("CREATE TABLE p_af (LIKE p INCLUDING ALL)")
    pg.execute("INSERT INTO p_af SELECT g, 'af', 'africa ' || g FROM generate_series(1001, 1050) g")
    with pg.transaction():
        pg.execute("ALTER TABLE p ATTACH PARTITION p_af FOR VALUES IN ('af')")
        pg.execute("UPDATE p SET v = 'with the attach' WHERE id % 10 = 0")
    pg.execute("ALTER TABLE p DETACH PARTITION p_us")
    pg.execute("UPDATE p SET v = 'after the detach' WHERE id % 7 = 0")
    with running_worker(settings):
        wait_caught_up(pg, timeout=120)
        pg.execute("UPDATE p SET v = 'streamed after the start' WHERE id % 9 = 0")
        wait_caught_up(pg)
    said = _messages(caplog, CHANGED)
    assert len(said) == 1 and "attached" in said[0] and "detached" in said[0], said
    assert len(_messages(caplog, "snapshot of public.p complete")) == 2  # the first copy and this one
    assert_readers_equal_source(pg, settings, "public.p")


def test_a_partition_created_while_stopped_is_followed_without_a_copy(pg, pg_dsn, lake_dir, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    _partitioned(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.p"])
    with running_worker(settings):
        wait_caught_up(pg)
    pg.execute("CREATE TABLE p_asia PARTITION OF p FOR VALUES IN ('asia')")  # its rows are all published
    pg.execute("INSERT INTO p SELECT g, 'asia', 'asia ' || g FROM generate_series(2001, 2040) g")
    with running_worker(settings):
        wait_caught_up(pg, timeout=120)
    with running_worker(
        settings
    ):  # the followed partition was recorded: the next start copies nothing either
        wait_caught_up(pg)
    assert _messages(caplog, CHANGED) == []
    assert len(_messages(caplog, "snapshot of public.p complete")) == 1
    assert_readers_equal_source(pg, settings, "public.p")


def test_a_table_out_of_the_publication_for_a_while_is_copied_again(pg, pg_dsn, lake_dir, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 300) g")
    pg.execute("CREATE TABLE other (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO other VALUES (1, 'one')")
    settings = make_settings(pg_dsn, lake_dir, ["public.t", "public.other"])
    with running_worker(settings):
        wait_caught_up(pg)
    # stopped: out of the publication, changed (nothing of it is published), put back, changed again
    pg.execute("ALTER PUBLICATION lakegate_pg DROP TABLE t")
    pg.execute("UPDATE t SET v = 'unpublished' WHERE id % 3 = 0")
    pg.execute("DELETE FROM t WHERE id % 11 = 0")
    pg.execute("ALTER PUBLICATION lakegate_pg ADD TABLE t")
    pg.execute("UPDATE t SET v = 'published again' WHERE id % 5 = 0")
    pg.execute("UPDATE other SET v = 'uno'")
    with running_worker(settings):
        wait_caught_up(pg, timeout=120)
    said = _messages(caplog, CHANGED)
    assert len(said) == 1 and said[0].startswith("public.t ") and "publication" in said[0], said
    assert_readers_equal_source(pg, settings, "public.t")
    assert_readers_equal_source(pg, settings, "public.other")
    assert len(_messages(caplog, "snapshot of public.other complete")) == 1  # the other table was not copied


def test_a_stop_and_start_with_nothing_changed_copies_nothing(pg, pg_dsn, lake_dir, caplog) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    _partitioned(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.p"])
    for round_ in range(3):
        with running_worker(settings):
            wait_caught_up(pg)
        pg.execute(f"UPDATE p SET v = 'round {round_}' WHERE id % 4 = 0")  # plain changes while stopped
    with running_worker(settings):
        wait_caught_up(pg)
    assert _messages(caplog, CHANGED) == []
    assert len(_messages(caplog, "snapshot of public.p complete")) == 1
    assert_readers_equal_source(pg, settings, "public.p")


def _recreate(pg: psycopg.Connection, tag: str) -> None:
    pg.execute("DROP TABLE r")
    pg.execute("CREATE TABLE r (id int PRIMARY KEY, v text, extra int)")  # another table, one more column
    pg.execute(f"INSERT INTO r SELECT g, '{tag} ' || g, g * 2 FROM generate_series(1, 120) g")


@pytest.mark.parametrize("when", ["streaming", "stopped"])
def test_a_table_dropped_and_created_again_is_copied_afresh(pg, pg_dsn, lake_dir, caplog, when) -> None:
    caplog.set_level(logging.INFO, logger="lakegate")
    pg.execute("CREATE TABLE r (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO r SELECT g, 'old ' || g FROM generate_series(1, 200) g")
    pg.execute("CREATE TABLE other (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO other VALUES (1, 'one')")
    settings = make_settings(pg_dsn, lake_dir, ["public.r", "public.other"])
    with running_worker(settings):
        wait_caught_up(pg)
        if when == "streaming":
            _recreate(pg, "new")
            pg.execute("UPDATE other SET v = 'uno'")
            wait_for(
                lambda: len(_messages(caplog, "snapshot of public.r complete")) == 2, 90, "the new r copied"
            )
            pg.execute("UPDATE r SET v = 'after the copy' WHERE id % 3 = 0")
            wait_caught_up(pg, timeout=120)
    if when == "stopped":
        _recreate(pg, "new")
        pg.execute("UPDATE other SET v = 'uno'")
    with running_worker(settings):  # (again) after a stop: the record names the new table, nothing is refused
        wait_caught_up(pg, timeout=120)
        pg.execute("UPDATE r SET v = 'streamed' WHERE id % 4 = 0")
        wait_caught_up(pg)
    assert len(_messages(caplog, "snapshot of public.r complete")) == 2, _messages(caplog, "snapshot of")
    assert len(_messages(caplog, "snapshot of public.other complete")) == 1
    assert_readers_equal_source(pg, settings, "public.r")
    assert_readers_equal_source(pg, settings, "public.other")
    state = lake_table(settings, "public.r").current()
    assert {"id", "v", "extra"} <= set(
        state.column_names
    )  # the new table's columns (the comparison is by common ones)
    assert sorted(state.select(["id", "extra"]).to_pylist(), key=lambda r: r["id"])[:2] == [
        {"id": 1, "extra": 2},
        {"id": 2, "extra": 4},
    ]


def _stops_alone(pg, pg_dsn, lake_dir, change: list[str]) -> dict[str, str]:
    """Run ``change`` on public.t while t and public.other stream; t must stop, other go on (issue 29.3).
    Returns the failed tables' messages; other is compared with the source through every reader."""
    pg.execute("CREATE TABLE other (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO other VALUES (1, 'one')")
    settings = make_settings(pg_dsn, lake_dir, ["public.t", "public.other"])
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        for statement in change:
            pg.execute(statement)
        wait_for(lambda: any(s.failed for s in worker.status.values()), 60, "public.t to stop")
        pg.execute("UPDATE other SET v = 'uno'")
        # the stopped table holds the slot back (its changes stay in PostgreSQL): wait for the other in the lake
        wait_for(
            lambda: lake_table(settings, "public.other").current().column("v").to_pylist() == ["uno"],
            60,
            "other",
        )
        failed = {str(ref): s.failed or "" for ref, s in worker.status.items() if s.failed}
    assert list(failed) == ["public.t"], failed
    assert_readers_equal_source(pg, settings, "public.other")
    return failed


def test_replica_identity_using_another_index_stops_only_that_table_and_says_so(pg, pg_dsn, lake_dir) -> None:
    """The primary key stays; the stream identifies rows by another index from then on: the message says what
    changed and how to put it back (issue 29.7), and the other table goes on (29.3)."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, a int NOT NULL UNIQUE, v text)")
    pg.execute("INSERT INTO t SELECT g, g + 1000, 'v' FROM generate_series(1, 50) g")
    failed = _stops_alone(
        pg,
        pg_dsn,
        lake_dir,
        ["ALTER TABLE t REPLICA IDENTITY USING INDEX t_a_key", "UPDATE t SET v = 'after' WHERE id = 1"],
    )
    assert "REPLICA IDENTITY" in failed["public.t"] and "(id) to (a)" in failed["public.t"], failed


def _rows_at_the_cut(settings, name: str) -> list[tuple]:
    """The state table as a reader at the source's consistent cut sees it (the gateway reads it so)."""
    from lakegate.connectors.iceberg import catalog as lake_catalog
    from lakegate.connectors.iceberg import cut

    table = lake_table(settings, name)
    assert table.state is not None
    properties = lake_catalog.from_settings(settings.lake).load_namespace_properties("public")
    at = cut.parse(properties).get("pg")
    snapshot = cut.snapshot_at(table.state, at) if at is not None else None
    if snapshot is None:
        return []
    rows = table.state.scan(snapshot_id=snapshot.snapshot_id, selected_fields=("id", "v")).to_arrow()
    return sorted(zip(rows["id"].to_pylist(), rows["v"].to_pylist(), strict=True))


def test_the_cut_reaches_a_copy_made_at_the_start_while_the_source_is_idle(pg, pg_dsn, lake_dir) -> None:
    """Issue 29.4, as reported: a table left out of 'replicate', changed, and put back is copied at the start;
    nothing else changes, so the slot has nothing new to stream, and the cut stayed below the copy (readers at the
    cut, the gateway among them, kept the pre-copy rows)."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 100) g")
    pg.execute("CREATE TABLE other (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO other VALUES (1, 'one')")
    both = make_settings(pg_dsn, lake_dir, ["public.t", "public.other"])
    with running_worker(both):
        wait_caught_up(pg)
    with running_worker(make_settings(pg_dsn, lake_dir, ["public.other"])):
        wait_caught_up(pg)
        pg.execute("UPDATE t SET v = 'while out' WHERE id % 2 = 0")  # not published: t is out of 'replicate'
        wait_caught_up(pg)
    source = sorted(pg.execute("SELECT id, v FROM t").fetchall())
    with running_worker(both):  # copies t at the start; then the source stays idle
        wait_caught_up(pg, timeout=120)
        wait_for(lambda: _rows_at_the_cut(both, "public.t") == source, 30, "the cut to reach the copy")


def test_replica_identity_nothing_while_streaming_stops_only_that_table(pg, pg_dsn, lake_dir) -> None:
    """Issue 29.3, mid-stream: updates and deletes of the table can no longer be captured; it stops with a
    message saying so and the other table goes on."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO t SELECT g, 'v' FROM generate_series(1, 20) g")
    # after the ALTER, PostgreSQL itself refuses UPDATE and DELETE of t: an INSERT carries the new identity
    failed = _stops_alone(
        pg, pg_dsn, lake_dir, ["ALTER TABLE t REPLICA IDENTITY NOTHING", "INSERT INTO t VALUES (21, 'after')"]
    )
    assert "REPLICA IDENTITY" in failed["public.t"], failed


def test_a_table_that_lost_its_key_stops_alone_at_a_reconnect(pg, pg_dsn, lake_dir) -> None:
    """The primary key dropped with no change after it: nothing in the stream shows it, the connection is lost,
    and the worker's reconnection (the same checks as a start) stops that table alone, saying why (29.3)."""
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO t SELECT g, 'v' FROM generate_series(1, 20) g")
    failed = _stops_alone(
        pg,
        pg_dsn,
        lake_dir,
        [
            "ALTER TABLE t DROP CONSTRAINT t_pkey",
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE active_pid IS NOT NULL",
        ],
    )
    assert "public.t" in failed["public.t"] and "key" in failed["public.t"].lower(), failed

"""Faults: SIGKILL at random moments, signals, dropped connections, a PostgreSQL restart, WAL retention."""

from __future__ import annotations

import random
import signal
import threading
import time
from pathlib import Path

import psycopg
import pytest

from lakegate import embedded
from lakegate.connectors.changes import parse_lsn
from tests.lakehelp import (
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    use_reader,
    wait_caught_up,
    wait_for,
)
from tests.procs import Proc, write_config


class Workload:
    """Random transactions against two tables until stopped."""

    def __init__(self, dsn: str, seed: int) -> None:
        self.dsn = dsn
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.transactions = 0
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Workload:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)
        if self.error:
            raise self.error

    def _run(self) -> None:
        try:
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                while not self.stop.is_set():
                    self._transaction(conn)
                    self.transactions += 1
        except BaseException as exc:  # reported by __exit__
            self.error = exc

    def _transaction(self, conn: psycopg.Connection) -> None:
        r = self.rng
        with conn.transaction():
            for _ in range(r.randint(1, 20)):
                choice = r.random()
                key = r.randint(1, 3000)
                if choice < 0.45:
                    conn.execute(
                        "INSERT INTO orders VALUES (%s, %s, %s, now()) ON CONFLICT (id) DO UPDATE "
                        "SET amount = EXCLUDED.amount",
                        (key, r.randint(1, 10**9) / 100, f"s{key % 7}"),
                    )
                elif choice < 0.75:
                    conn.execute(
                        "UPDATE orders SET amount = amount + 1, status = 'x' WHERE id BETWEEN %s AND %s",
                        (key, key + r.randint(0, 30)),
                    )
                elif choice < 0.85:
                    conn.execute(
                        "DELETE FROM orders WHERE id BETWEEN %s AND %s", (key, key + r.randint(0, 10))
                    )
                else:
                    conn.execute("INSERT INTO audit (note) VALUES (%s)", (f"note {key}",))


def _setup(pg: psycopg.Connection) -> None:
    pg.execute("CREATE TABLE orders (id int PRIMARY KEY, amount numeric(14,2), status text, at timestamptz)")
    pg.execute("CREATE TABLE audit (id bigserial PRIMARY KEY, note text)")
    pg.execute("INSERT INTO orders SELECT g, g / 3.0, 'new', now() FROM generate_series(1, 100000) g")


def _assert_no_duplicates(settings, name: str) -> None:
    changelog = lake_table(settings, name).changelog.scan(selected_fields=("_lsn", "_seq")).to_arrow()
    positions = changelog.group_by(["_lsn", "_seq"]).aggregate([("_lsn", "count")])
    duplicated = positions.filter(positions["_lsn_count"].to_numpy() > 1)
    assert duplicated.num_rows == 0, f"{name}: duplicated changes {duplicated.to_pylist()[:5]}"


@pytest.mark.slow
def test_sigkill_at_random_moments_loses_and_duplicates_nothing(pg, pg_dsn, lake_dir, tmp_path) -> None:
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.orders", "public.audit"])
    config = write_config(settings, tmp_path / "lakegate.toml")
    rng = random.Random(7)
    with Workload(pg_dsn, seed=1) as workload:
        for attempt in range(5):
            worker = Proc(["ingest", "--config", str(config)], tmp_path / f"worker{attempt}.log")
            if attempt == 0:  # inside the initial snapshot
                worker.wait_for_output("created replication slot")
            else:  # anywhere in the stream: between, inside or during commits
                worker.wait_for_output("streaming from slot")
                time.sleep(rng.uniform(0.1, 2.5))
            worker.kill()
        assert workload.transactions > 20
    final = Proc(["ingest", "--config", str(config)], tmp_path / "final.log")
    try:
        final.wait_for_output("streaming from slot")
        wait_caught_up(pg, timeout=120)
    finally:
        final.signal(signal.SIGTERM)
        assert final.wait(60) == 0, final.output()[-2000:]
    assert "stopped cleanly" in final.output()
    for name in ("public.orders", "public.audit"):
        assert_lake_equals_source(pg, settings, name)
        _assert_no_duplicates(settings, name)


def test_sigterm_flushes_and_stops_cleanly_and_a_second_signal_stops_at_once(
    pg, pg_dsn, lake_dir, tmp_path
) -> None:
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, ["public.orders", "public.audit"], commit_interval="30s")
    config = write_config(settings, tmp_path / "lakegate.toml")
    worker = Proc(["ingest", "--config", str(config)], tmp_path / "worker.log")
    worker.wait_for_output("streaming from slot")
    pg.execute("UPDATE orders SET status = 'sigterm' WHERE id <= 100")
    time.sleep(0.5)  # the change is read but, with a 30 s interval, not committed yet
    started = time.monotonic()
    worker.signal(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output()[-2000:]
    assert time.monotonic() - started < 15, "SIGTERM should cut the commit interval short"
    assert "stopped cleanly" in worker.output()
    assert_lake_equals_source(pg, settings, "public.orders")  # flushed before stopping

    worker = Proc(["ingest", "--config", str(config)], tmp_path / "worker2.log")
    worker.wait_for_output("streaming from slot")
    pg.execute("UPDATE orders SET status = 'twice' WHERE id <= 100")
    time.sleep(0.5)
    worker.signal(signal.SIGINT)
    worker.signal(signal.SIGINT)
    worker.wait(30)
    with running_worker(make_settings(pg_dsn, lake_dir, ["public.orders", "public.audit"])):
        # nothing the second signal cut short is lost
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.orders")


def test_reconnects_after_dropped_connection_and_server_restart(tmp_path, lake_dir) -> None:
    # a server of its own: a restart ends every connection to it, and the session's server is shared with the
    # session-long gateways of other test files (which run in any order on the pytest-xdist workers)
    server = embedded.start(tmp_path / "pg", {"fsync": "off", "synchronous_commit": "off"})
    try:
        _reconnects(server, server.dsn(), lake_dir)
    finally:
        server.stop("immediate")


def _reconnects(server, dsn: str, lake_dir) -> None:
    with psycopg.connect(dsn, autocommit=True) as pg:
        _setup(pg)
    settings = make_settings(dsn, lake_dir, ["public.orders", "public.audit"])
    with running_worker(settings) as worker:
        with psycopg.connect(dsn, autocommit=True) as pg:
            wait_caught_up(pg)
            pg.execute(
                "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                "WHERE slot_name = 'lakegate_pg'"
            )
            pg.execute("UPDATE orders SET status = 'after terminate' WHERE id % 2 = 0")
        flushes = worker.flushes
        server.restart("fast")
        with psycopg.connect(dsn, autocommit=True) as pg:
            pg.execute("DELETE FROM orders WHERE id % 5 = 0")
            wait_caught_up(pg, timeout=120)
            assert worker.flushes > flushes
            assert_lake_equals_source(pg, settings, "public.orders")


def test_idle_published_tables_do_not_hold_wal_back(pg, pg_dsn, lake_dir) -> None:
    pg.execute("CREATE TABLE published (id int PRIMARY KEY)")
    pg.execute("CREATE TABLE busy (id serial PRIMARY KEY, pad text)")
    settings = make_settings(pg_dsn, lake_dir, ["public.published"])

    def confirmed() -> int:
        (lsn,) = pg.execute(
            "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = 'lakegate_pg'"
        ).fetchone()
        return parse_lsn(lsn)

    with running_worker(settings):
        wait_caught_up(pg)
        start = confirmed()
        for _ in range(20):
            pg.execute("INSERT INTO busy (pad) SELECT repeat('x', 500) FROM generate_series(1, 200)")
        (written,) = pg.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        wait_for(lambda: confirmed() >= parse_lsn(written), timeout=60, what="the slot to confirm idle WAL")
    assert confirmed() - start > 1_000_000, "the slot should have moved past the unpublished table's WAL"
    changelog = lake_table(settings, "public.published").changelog
    assert changelog.current_snapshot().summary["total-records"] == "0"
    assert len(changelog.snapshots()) == 1, "idle tables must not get empty commits"


def test_a_slow_lake_makes_the_worker_stop_reading_instead_of_buffering(
    pg, pg_dsn, lake_dir, monkeypatch
) -> None:
    from lakegate.connectors.iceberg.writer import LakeTable

    original = LakeTable.append

    def slow_append(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        time.sleep(0.3)
        original(self, *args, **kwargs)

    monkeypatch.setattr(LakeTable, "append", slow_append)
    pg.execute("CREATE TABLE flood (id int PRIMARY KEY, pad text)")
    settings = make_settings(pg_dsn, lake_dir, ["public.flood"], commit_interval="0.05s", max_batch_rows=1000)
    peak = {"buffered": 0, "in_flight": 0}
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                if worker.source is not None and worker.committer is not None:
                    peak["buffered"] = max(peak["buffered"], worker.source._pending_rows)
                    peak["in_flight"] = max(peak["in_flight"], worker.committer.in_flight)
                time.sleep(0.005)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        for start in range(0, 30_000, 500):
            pg.execute(
                "INSERT INTO flood SELECT g, repeat('p', 100) FROM generate_series(%s::int, %s::int) g",
                (start, start + 499),
            )
        wait_caught_up(pg, timeout=120)
        done.set()
        sampler.join()
    assert peak["buffered"] <= 1000 + 1, f"the reader kept buffering: {peak}"
    assert peak["in_flight"] <= 2, f"flushes piled up: {peak}"
    assert peak["in_flight"] >= 1, "the lake was never the bottleneck; the test proves nothing"
    assert_lake_equals_source(pg, settings, "public.flood")


def test_a_huge_transaction_is_flushed_in_parts_and_survives_a_kill_between_them(
    pg, pg_dsn, lake_dir, tmp_path
) -> None:
    pg.execute("CREATE TABLE big (id int PRIMARY KEY, v text)")
    settings = make_settings(pg_dsn, lake_dir, ["public.big"], max_batch_rows=500, commit_interval="0.1s")
    config = write_config(settings, tmp_path / "lakegate.toml")
    with running_worker(settings):
        wait_caught_up(pg)
    pg.execute("INSERT INTO big SELECT g, 'row ' || g FROM generate_series(1, 20000) g")  # one transaction
    pg.execute("UPDATE big SET v = 'after' WHERE id <= 10")

    def stamps() -> list[tuple[int, int]]:
        table = lake_table(settings, "public.big")
        return [
            (
                int(s.summary.additional_properties["lakegate.lsn"]),
                int(s.summary.additional_properties["lakegate.seq"]),
            )
            for s in table.changelog.snapshots()
            if s.summary and "lakegate.lsn" in s.summary.additional_properties
        ]

    def files() -> (
        int
    ):  # the parts are written to storage (staged) before the transaction commits (issue 11.7)
        return len(list((Path(settings.lake.warehouse) / "public" / "big__changelog").rglob("*.parquet")))

    before, written = stamps(), files()
    worker = Proc(["ingest", "--config", str(config)], tmp_path / "worker.log")
    wait_for(lambda: files() >= written + 3, timeout=60, what="some parts of the big transaction")
    worker.kill()
    assert stamps() == before, "a part of the big transaction was committed"
    with running_worker(settings):
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.big")
    _assert_no_duplicates(settings, "public.big")
    changes = lake_table(settings, "public.big").changelog.scan().to_arrow().to_pylist()
    (big_lsn,) = {r["_lsn"] for r in changes if r["_op"] == "c"}
    last = max(r["_seq"] for r in changes if r["_lsn"] == big_lsn)
    inside = [(lsn, seq) for lsn, seq in stamps() if lsn == big_lsn and seq < last]
    assert not inside, f"a commit ended inside the big transaction: {inside}"


@pytest.mark.parametrize("reader", ["duckdb", "psql"])
def test_a_snapshot_whose_copy_is_cut_off_is_copied_again(
    pg, pg_dsn, lake_dir, monkeypatch, reader: str
) -> None:
    """The COPY's session dies mid-snapshot: the worker retries, copies the table again, and the lake is exact."""
    from lakegate.connectors.postgres import snapshot

    use_reader(monkeypatch, reader)
    monkeypatch.setattr(
        snapshot, "CHUNK_ROWS", 500
    )  # many small chunks: the copy takes long enough to be hit
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", 20_000)
    pg.execute("CREATE TABLE big (id int PRIMARY KEY, t text)")
    pg.execute("INSERT INTO big SELECT g, repeat('x', 100) FROM generate_series(1, 300000) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.big"])
    copying = (
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE backend_type = 'client backend' AND query ILIKE 'COPY%big%' AND pid <> pg_backend_pid()"
    )
    with running_worker(settings):
        deadline = time.monotonic() + 30
        while not pg.execute(copying).fetchall():
            assert time.monotonic() < deadline, "never saw the snapshot's COPY"
            time.sleep(0.02)
        wait_caught_up(pg, timeout=120)
        pg.execute("UPDATE big SET t = 'after' WHERE id % 1000 = 0")
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.big")
    assert table.changelog.scan(row_filter="_op == 'r'").to_arrow().num_rows == 300000  # one copy committed

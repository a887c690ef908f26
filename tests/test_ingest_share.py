"""Flushes that take a share of the tables (issue 11.16; connectors/postgres/handover.py, ingest/pacing.py).

When the writer cannot write every table with changes within about half a commit interval, each flush takes the
tables whose changes waited longest and leaves the others buffered. The worker here is made to take three tables
per flush while a workload keeps twelve tables busy, with transactions that span tables. Then: every lake table
equals its source row by row, no transaction is split between two flushes, and a worker that dies with tables
left behind in its buffers loses nothing (the position it confirmed stays before their changes) and duplicates
nothing when the next one starts.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import psycopg
import pytest

from lakegate.connectors.postgres import handover
from lakegate.connectors.postgres.cdc import Flush
from lakegate.ingest import pacing
from lakegate.ingest.worker import Worker
from tests.lakehelp import assert_lake_equals_source, make_settings, running_worker, wait_caught_up

TABLES = [f"t{i:02d}" for i in range(12)]
SHARE = 3


def _setup(pg: psycopg.Connection) -> None:
    for name in TABLES:
        pg.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v int NOT NULL, note text)")
        pg.execute(f"INSERT INTO {name} SELECT g, g, 'first' FROM generate_series(1, 50) g")


def _workload(dsn: str, transactions: int, seed: int, stop: threading.Event) -> None:
    """Single-table inserts, updates and deletes, and every seventh transaction over two or three of the first
    four tables (over any tables, they would soon join all twelve into one group that goes whole)."""
    rng = random.Random(seed)
    next_id = 1000 * (seed + 1)

    def mine() -> int:
        return 3 * rng.randint(0, 19) + seed % 3 + 1
    with psycopg.connect(dsn, autocommit=True) as conn:
        for n in range(transactions):
            if stop.is_set():
                return
            names = rng.sample(TABLES[:4], rng.choice([2, 3])) if n % 7 == 0 else [rng.choice(TABLES)]
            with conn.transaction():
                for name in names:
                    next_id += 1
                    conn.execute(f"INSERT INTO {name} VALUES (%s, %s, 'new')", (next_id, n))
                    # each connection its own rows (3k + seed): concurrent ones would deadlock on shared rows
                    conn.execute(f"UPDATE {name} SET v = v + 1, note = 'updated' WHERE id = %s", (mine(),))
                    if rng.random() < 0.3:
                        conn.execute(f"DELETE FROM {name} WHERE id = %s", (mine(),))


@pytest.fixture
def shares(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """The worker takes at most SHARE tables per flush (plus those sharing a transaction with them); records
    (tables with changes, tables taken) of every hand-over that left tables behind."""
    monkeypatch.setattr(pacing.Pace, "most", lambda self, waiting: SHARE)
    seen: list[tuple[int, int]] = []
    original = handover.oldest_first

    def recording(buffers: Any, most: int) -> set[Any]:
        chosen = original(buffers, most)
        waiting = sum(1 for b in buffers.values() if b)
        if len(chosen) < waiting:
            seen.append((waiting, len(chosen)))
        return chosen

    monkeypatch.setattr(handover, "oldest_first", recording)
    return seen


def _transactions(flushes: list[Flush]) -> dict[int, set[int]]:
    """Commit LSN -> the flushes (by number) that carried changes of it."""
    carried: dict[int, set[int]] = {}
    for number, flush in enumerate(flushes):
        for segment in flush.segments:
            for lsn in set(segment.lsns):
                carried.setdefault(lsn, set()).add(number)
    return carried


class _Hold:
    """Holds the lake writer at its next flush while the workload runs, so that every table has changes waiting
    when it goes on (on a fast machine the writer would otherwise keep up and never leave tables behind)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.armed, self.holding, self.released = threading.Event(), threading.Event(), threading.Event()
        original = Worker._write

        def write(worker: Worker, flush: Flush, source: Any) -> None:
            if self.armed.is_set() and not self.released.is_set():
                self.holding.set()
                assert self.released.wait(120), "the test never released the writer"
            original(worker, flush, source)

        monkeypatch.setattr(Worker, "_write", write)

    def around(self, dsn: str, transactions: int) -> None:
        """Run the workload (three connections) with the writer held, then let it go on."""
        stop = threading.Event()
        load = [threading.Thread(target=_workload, args=(dsn, transactions, seed, stop)) for seed in range(3)]
        self.armed.set()
        for thread in load:
            thread.start()
        for thread in load:
            thread.join(120)
        assert self.holding.wait(60), "the writer was never held"
        time.sleep(1.0)  # the reader reads on meanwhile
        self.released.set()


def _record(worker: Worker) -> list[Flush]:
    flushes: list[Flush] = []
    worker.on_flush = flushes.append
    return flushes


def test_flushes_of_a_share_of_the_tables_keep_every_table_exact(
    pg: psycopg.Connection,
    pg_dsn: str,
    lake_dir: Any,
    shares: list[tuple[int, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, [f"public.{n}" for n in TABLES], commit_interval="0.1s")
    hold = _Hold(monkeypatch)
    stop = threading.Event()
    with running_worker(settings) as worker:
        flushes = _record(worker)
        wait_caught_up(pg)
        hold.around(pg_dsn, 150)
        load = [threading.Thread(target=_workload, args=(pg_dsn, 100, seed + 10, stop)) for seed in range(3)]
        for thread in load:  # and a workload the writer may keep up with
            thread.start()
        for thread in load:
            thread.join(120)
        wait_caught_up(pg)
    assert shares, "no flush left tables behind: the test did not exercise shares"
    assert all(taken < waiting for waiting, taken in shares)
    split = {lsn: numbers for lsn, numbers in _transactions(flushes).items() if len(numbers) > 1}
    assert not split, f"transactions split between flushes: {split}"
    for name in TABLES:
        assert_lake_equals_source(pg, settings, f"public.{name}")


def test_a_worker_that_dies_with_tables_left_behind_loses_nothing(
    pg: psycopg.Connection,
    pg_dsn: str,
    lake_dir: Any,
    shares: list[tuple[int, int]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _setup(pg)
    settings = make_settings(pg_dsn, lake_dir, [f"public.{n}" for n in TABLES], commit_interval="0.1s")
    confirmed_with_backlog = threading.Event()
    original_confirm = Worker._confirm

    def confirm(self: Worker, source: Any, flush: Flush) -> None:
        original_confirm(self, source, flush)
        if shares and source.pending[0] > 0 and flush.ack is not None:
            confirmed_with_backlog.set()  # a share was confirmed while other tables held changes

    original_write = Worker._write

    def write(self: Worker, flush: Flush, source: Any) -> None:
        if confirmed_with_backlog.is_set():
            raise RuntimeError("the worker dies here (test)")  # buffers and this flush are lost
        original_write(self, flush, source)

    monkeypatch.setattr(Worker, "_confirm", confirm)
    monkeypatch.setattr(Worker, "_write", write)
    hold = _Hold(monkeypatch)
    with pytest.raises(RuntimeError, match="dies here"), running_worker(settings) as worker:
        wait_caught_up(pg)
        hold.around(pg_dsn, 200)
        deadline = time.monotonic() + 120
        while not confirmed_with_backlog.is_set() or worker.streaming.is_set():
            assert time.monotonic() < deadline, "no share was confirmed while other tables waited"
            time.sleep(0.05)  # until the worker died (it stops streaming) after such a confirmation
    monkeypatch.setattr(Worker, "_write", original_write)
    monkeypatch.setattr(Worker, "_confirm", original_confirm)
    with running_worker(settings):
        wait_caught_up(pg)
    for name in TABLES:
        assert_lake_equals_source(pg, settings, f"public.{name}")

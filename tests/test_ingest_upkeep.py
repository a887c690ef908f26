"""Background upkeep never dies quietly (issue 11.9): failures are retried with backoff, shown in /v1/status and
/metrics, and a worker whose upkeep has failed for longer than the limit exits non-zero."""

from __future__ import annotations

import threading

import pytest
from pyiceberg.exceptions import CommitFailedException

from lakegate.connectors.iceberg import maintenance
from lakegate.ingest import upkeep
from lakegate.ingest.upkeep import UpkeepFailed
from lakegate.ingest.worker import Worker
from tests.gateway_fixtures.harness import live_server
from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import lake_table, make_settings, running_worker, wait_caught_up, wait_for


def _conflicting(monkeypatch, failing: threading.Event) -> list[int]:
    """Compaction loses a commit race (pyiceberg's own exception) while ``failing`` is set."""
    real = maintenance.compact
    calls: list[int] = []

    def compact(table, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        if failing.is_set():
            raise CommitFailedException("Table has been updated by another process (simulated)")
        return real(table, **kwargs)

    monkeypatch.setattr(maintenance, "compact", compact)
    monkeypatch.setattr(upkeep, "FIRST_RETRY", 0.5)
    return calls


def test_upkeep_failures_are_retried_and_shown(pg, pg_dsn, lake_dir, monkeypatch) -> None:
    pg.execute("CREATE TABLE u (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO u SELECT g, 'v' || g FROM generate_series(1, 1000) g")
    failing = threading.Event()
    failing.set()
    calls = _conflicting(monkeypatch, failing)
    settings = make_settings(pg_dsn, lake_dir, ["public.u"], maintenance_interval="1s")
    settings.gateway.cache_bytes = 0
    with running_worker(settings) as worker, live_server(settings) as server, server.client() as http:
        wait_caught_up(pg)

        def upkeep_of_u() -> dict | None:
            tables = http.get("/v1/status").json()["tables"]
            return next(t for t in tables if t["table"] == "lake.public.u")["upkeep"]

        wait_for(lambda: upkeep_of_u() is not None, 30, "the failure in /v1/status")
        failure = upkeep_of_u()["maintenance"]
        assert "CommitFailedException" in failure["error"] and failure["since"], failure
        metrics = http.get("/metrics").text
        assert 'lakegate_table_upkeep_failing_seconds{step="maintenance",table="lake.public.u"}' in metrics or (
            'lakegate_table_upkeep_failing_seconds{table="lake.public.u",step="maintenance"}' in metrics
        ), metrics[-1500:]
        pg.execute("UPDATE u SET v = 'changed while maintenance fails' WHERE id % 3 = 0")
        wait_caught_up(pg)
        table = lake_table(settings, "public.u")  # the state table follows regardless
        assert table.state_checkpoint() == table.checkpoint()
        wait_for(lambda: len(calls) >= 3, 30, "retries")
        assert worker.upkeep.is_alive()
        failing.clear()
        wait_for(lambda: upkeep_of_u() is None, 60, "the recovery in /v1/status")
    assert_readers_equal_source(pg, settings, "public.u")


def test_a_worker_whose_upkeep_keeps_failing_exits(pg, pg_dsn, lake_dir, monkeypatch) -> None:
    pg.execute("CREATE TABLE x (id int PRIMARY KEY)")
    failing = threading.Event()
    failing.set()
    _conflicting(monkeypatch, failing)
    settings = make_settings(
        pg_dsn, lake_dir, ["public.x"], maintenance_interval="1s", upkeep_failure_limit="3s"
    )
    worker = Worker(settings.lake, settings.sources[0], settings.ingest)
    errors: list[BaseException] = []

    def run() -> None:
        try:
            worker.run()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(90)
    assert not thread.is_alive(), "the worker kept running"
    assert errors and isinstance(errors[0], UpkeepFailed), errors
    message = str(errors[0])
    assert "maintenance of public.x" in message and "upkeep_failure_limit" in message
    with pytest.raises(UpkeepFailed):
        raise errors[0]

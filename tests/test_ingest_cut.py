"""Issue 11.8: a query that reads several lake tables sees them all at one source position (a consistent cut).

The worker writes the tables of a flush side by side. The test holds the worker's commit of one table of a
two-table transaction until the other table is written, and asks the gateway (real HTTP) in that window: both
tables must still be before the transaction, and the response says the position it read at (``source_lsn``).
Then the worker goes on, and both tables are after it, at a later position. With the SQL catalog the tables of a
flush become visible together (connectors/iceberg/flushcatalog.py), so even a plain Iceberg reader sees neither
in that window; committed one by one (as with other catalogs), table a is visible there and the cut hides it.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest

from lakegate.connectors.changes import parse_lsn
from lakegate.connectors.iceberg import flushcatalog
from lakegate.connectors.iceberg.commits import PROP_LSN
from lakegate.connectors.iceberg.writer import LakeTable
from tests.gateway_fixtures.harness import gateway_settings, live_server
from tests.lakehelp import lake_table, running_worker, wait_caught_up, wait_for

BOTH = (
    "SELECT (SELECT count(*) FROM lake.public.a) AS a, (SELECT count(*) FROM lake.public.b) AS b, "
    "(SELECT coalesce(sum(v), 0) FROM lake.public.a) + (SELECT coalesce(sum(v), 0) FROM lake.public.b) AS total"
)


def _ask(client: Any) -> tuple[dict[str, Any], str | None]:
    response = client.post("/v1/query", json={"sql": BOTH})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body.get("source_lsn") == response.headers.get("x-lakegate-source-lsn")
    return body["rows"][0], body.get("source_lsn")


def _newest_stamp(settings: Any, name: str) -> int:
    """The source position stamped on the newest change-log commit of ``name``: the commit LSN of the last
    transaction it holds. A cut at or below it excludes that transaction (connectors/iceberg/cut.py)."""
    table = lake_table(settings, name)
    assert table.changelog is not None
    snapshot = table.changelog.current_snapshot()
    assert snapshot is not None and snapshot.summary is not None
    return int(snapshot.summary.additional_properties[PROP_LSN])


def _changes_in_log(settings: Any, name: str) -> int:
    table = lake_table(settings, name)
    assert table.changelog is not None
    return len(table.changelog.scan().to_arrow())


@pytest.mark.parametrize("together", [True, False], ids=["one-catalog-transaction", "table-by-table"])
def test_a_two_table_transaction_is_seen_whole_or_not_at_all(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, monkeypatch: pytest.MonkeyPatch, together: bool
) -> None:
    pg.execute("CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL)")
    pg.execute("CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL)")
    pg.execute("INSERT INTO a SELECT g, 10 FROM generate_series(1, 5) g")
    pg.execute("INSERT INTO b SELECT g, 10 FROM generate_series(1, 5) g")
    settings = gateway_settings(pg_dsn, lake_dir, ["public.a", "public.b"])

    hold = threading.Event()  #: armed: the worker stops before committing table b
    held = threading.Event()  #: the worker is waiting there
    release = threading.Event()
    written_a = threading.Event()  #: the worker has written table a's part of the transaction
    original = LakeTable.append

    def append(self: LakeTable, *args: Any, **kwargs: Any) -> Any:
        if hold.is_set() and (self.namespace, self.name) == ("public", "b"):
            held.set()
            assert release.wait(60), "the test never released the worker"
        result = original(self, *args, **kwargs)
        if hold.is_set() and (self.namespace, self.name) == ("public", "a"):
            written_a.set()
        return result

    monkeypatch.setattr(LakeTable, "append", append)
    if not together:  # as with a catalog that commits table by table
        monkeypatch.setattr(flushcatalog, "flush", lambda catalog: contextlib.nullcontext())
    with running_worker(settings), live_server(settings) as server, server.client() as client:
        wait_caught_up(pg)
        wait_for(lambda: _ask(client)[1] is not None, what="the worker to record a consistent cut")
        before, lsn_before = _ask(client)
        assert (before["a"], before["b"], before["total"]) == (5, 5, 100)
        log_a, log_b = _changes_in_log(settings, "public.a"), _changes_in_log(settings, "public.b")

        hold.set()
        with pg.transaction():  # one transaction over both tables: a transfer and a new row in each
            pg.execute("UPDATE a SET v = v - 7 WHERE id = 1")
            pg.execute("UPDATE b SET v = v + 7 WHERE id = 1")
            pg.execute("INSERT INTO a VALUES (6, 0)")
            pg.execute("INSERT INTO b VALUES (6, 0)")
        assert held.wait(60), "the worker did not reach its commit of table b"
        wait_for(written_a.is_set, what="the commit of table a")
        if together:  # not visible before table b's: for plain Iceberg readers either
            assert _changes_in_log(settings, "public.a") == log_a
        else:  # table a is committed with the transaction, table b is not: the failure the cut prevents is there
            wait_for(lambda: _changes_in_log(settings, "public.a") > log_a, what="table a's commit to be visible")
        assert _changes_in_log(settings, "public.b") == log_b
        during, lsn_during = _ask(client)
        assert during == before, "the gateway saw table a after the transaction and table b before it"
        # the position read at may have moved on while the worker was idle before the transaction (an idle cut,
        # recorded every few seconds), never to the transaction: checked below, once its commit LSN is known
        assert lsn_during is not None and lsn_before is not None
        assert parse_lsn(lsn_during) >= parse_lsn(lsn_before)

        hold.clear()
        release.set()
        wait_caught_up(pg)
        wait_for(lambda: _ask(client)[0]["a"] == 6, what="the transaction to become visible")
        after, lsn_after = _ask(client)
        assert (after["a"], after["b"], after["total"]) == (6, 6, 100)
        assert lsn_after is not None
        transaction = _newest_stamp(settings, "public.a")  # the transfer is the last change of table a
        assert parse_lsn(lsn_during) <= transaction < parse_lsn(lsn_after)
        # a single-table query carries the position as well; a PostgreSQL-route query carries none
        one = client.post("/v1/query", json={"sql": "SELECT count(*) AS n FROM lake.public.a"}).json()
        assert one["rows"] == [{"n": 6}] and parse_lsn(one["source_lsn"]) >= parse_lsn(lsn_after)
        live = client.post("/v1/query", json={"sql": "SELECT count(*) AS n FROM pg.public.a"}).json()
        assert "source_lsn" not in live


def test_a_huge_transaction_written_in_parts_is_seen_only_whole(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 11.7, the gateway's part: the worker writes a transaction larger than its batch in parts; the
    gateway reads none of it until its last part is committed."""
    pg.execute("CREATE TABLE a (id int PRIMARY KEY, v int NOT NULL)")
    pg.execute("CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL)")
    pg.execute("INSERT INTO a SELECT g, 10 FROM generate_series(1, 5) g")
    pg.execute("INSERT INTO b SELECT g, 10 FROM generate_series(1, 5) g")
    settings = gateway_settings(pg_dsn, lake_dir, ["public.a", "public.b"])
    settings.ingest.max_batch_rows = 500

    parts: list[int] = []  #: rows of each part of table a committed while armed
    hold = threading.Event()
    held = threading.Event()
    release = threading.Event()
    original = LakeTable.append

    def append(self: LakeTable, data: Any, *args: Any, **kwargs: Any) -> Any:
        if hold.is_set() and (self.namespace, self.name) == ("public", "a"):
            if parts:  # the first part is committed: hold the next one
                held.set()
                assert release.wait(60), "the test never released the worker"
            parts.append(data.num_rows)
        return original(self, data, *args, **kwargs)

    monkeypatch.setattr(LakeTable, "append", append)
    with running_worker(settings), live_server(settings) as server, server.client() as client:
        wait_caught_up(pg)
        wait_for(lambda: _ask(client)[1] is not None, what="the worker to record a consistent cut")
        before, lsn_before = _ask(client)
        log_a = _changes_in_log(settings, "public.a")
        hold.set()
        with pg.transaction():
            pg.execute("INSERT INTO a SELECT g, 0 FROM generate_series(100, 5099) g")
            pg.execute("INSERT INTO b VALUES (100, 0)")
        assert held.wait(60), "the worker did not write the transaction in parts"
        # parts are written to storage but not committed (issue 11.7: tests/test_ingest_large_txn.py reads them
        # with plain Iceberg readers)
        assert _changes_in_log(settings, "public.a") == log_a
        during, lsn_during = _ask(client)
        assert during == before, "the gateway saw part of a transaction"
        hold.clear()
        release.set()
        wait_caught_up(pg)
        wait_for(lambda: _ask(client)[0]["a"] == 5005, what="the transaction to become visible")
        after, lsn_after = _ask(client)
        assert after["b"] == 6
        # the position said with the held answer is before the transaction (an idle cut may have moved it on
        # before the transaction began), the one with the whole answer past it
        assert lsn_before is not None and lsn_during is not None and lsn_after is not None
        transaction = _newest_stamp(settings, "public.b")
        assert parse_lsn(lsn_before) <= parse_lsn(lsn_during) <= transaction < parse_lsn(lsn_after)
    assert len(parts) >= 2 and sum(parts) <= 5000

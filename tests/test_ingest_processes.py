"""Writer processes (ingest.tableprocs): the per-table work of each flush in processes of their own, the swap in
the worker. The lake must equal the source row by row exactly as without them, across schema changes that ask the
source, huge transactions staged in parts, failures of a table, and a writer process killed mid-stream.

(``LAKEGATE_TEST_PROCESSES=2 pytest tests/test_ingest_*.py`` runs every ingest test with writer processes.)"""

from __future__ import annotations

import os
import pickle
import signal
import time
from typing import Any

import psutil
import psycopg
import pyarrow as pa
import pytest

from lakegate.connectors.changes import TableRef
from lakegate.connectors.errors import Resnapshot, SchemaChangeError
from lakegate.connectors.iceberg.references import referenced_paths
from lakegate.connectors.postgres import introspect
from lakegate.connectors.postgres.connection import connect
from lakegate.connectors.postgres.types import ConversionError, codec_for
from lakegate.gateway.service import Gateway
from lakegate.ingest import tableprocs
from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import (
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    wait_caught_up,
    wait_for,
)

BIG = "(SELECT string_agg(md5(random()::text || g), '') FROM generate_series(1, 400) g)"  # stored out of line
TABLES = [f"public.t{i:02d}" for i in range(12)]


def _create(pg: psycopg.Connection) -> None:
    for ref in TABLES:
        name = ref.split(".")[1]
        pg.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, v numeric(12,3), big text, tags uuid[])")
        pg.execute(
            f"INSERT INTO {name} SELECT g, g / 7.0, {BIG}, ARRAY[gen_random_uuid()] FROM generate_series(1, 30) g"
        )


def _writers(worker: object) -> list[psutil.Process]:
    procs = getattr(worker, "procs", None)
    assert procs is not None, "the worker should write through its writer processes"
    return [psutil.Process(p.pid) for p in procs._procs]


def _churn(pg: psycopg.Connection, rounds: int, start: int = 1000) -> None:
    for r in range(rounds):
        with pg.transaction():  # several tables in one transaction
            for i, ref in enumerate(TABLES):
                name = ref.split(".")[1]
                key = start + r * 10 + i
                pg.execute(f"INSERT INTO {name} VALUES (%s, %s, 'small', ARRAY[gen_random_uuid(), NULL])", (key, r))
                pg.execute(f"UPDATE {name} SET v = v + 1 WHERE id = %s", (1 + (r + i) % 30,))  # TOAST unchanged
                pg.execute(f"DELETE FROM {name} WHERE id = %s", (start + (r - 1) * 10 + i,))


def _assert_readers_equal_source(pg: psycopg.Connection, settings: Any, refs: list[str]) -> None:
    """Each table equals the source row by row through every reader (merged state, replayed change log, a plain
    pyiceberg scan, the gateway), and its change log holds no change twice."""
    gateway = Gateway(settings.lake, settings.sources, settings.gateway)
    try:
        for ref in refs:
            assert_readers_equal_source(pg, settings, ref, gateway=gateway)
            log = lake_table(settings, ref).changelog.scan().to_arrow()
            positions = list(zip(log["_lsn"].to_pylist(), log["_seq"].to_pylist(), strict=True))
            assert len(positions) == len(set(positions)), f"{ref}: a change is in the change log twice"
    finally:
        gateway.close()


def test_writer_processes_keep_the_lake_equal_to_the_source(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    _create(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES, processes=2)
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        writers = _writers(worker)
        assert len(writers) == 2 and all(w.is_running() for w in writers)
        _churn(pg, 25)
        pg.execute("UPDATE t00 SET id = id + 5000 WHERE id <= 5")  # key updates
        pg.execute("TRUNCATE t01")
        pg.execute("INSERT INTO t01 VALUES (1, 1.5, 'after truncate', NULL)")
        wait_caught_up(pg)
        assert sum(w.cpu_times().user for w in writers) > 0.1, "the writer processes should have done the work"
    _assert_readers_equal_source(pg, settings, TABLES)
    for ref in TABLES:
        assert lake_table(settings, ref).changelog.scan().to_arrow().num_rows >= 30


def test_schema_changes_that_ask_the_source_work_in_a_writer_process(
    pg: psycopg.Connection, pg_dsn: str, lake_dir
) -> None:
    _create(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES, processes=2)
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        _writers(worker)
        pg.execute("ALTER TABLE t03 ADD COLUMN flag int NOT NULL DEFAULT 7")  # a value for every existing row
        pg.execute("ALTER TABLE t04 RENAME COLUMN big TO body")  # unchanged TOAST values under the new name
        pg.execute("ALTER TABLE t05 ADD COLUMN stamp timestamptz DEFAULT '2026-01-02 03:04:05+02'")
        _churn(pg, 6)
        pg.execute("UPDATE t03 SET flag = 8 WHERE id = 2")
        wait_caught_up(pg)
    _assert_readers_equal_source(pg, settings, ["public.t03", "public.t04", "public.t05", "public.t06"])
    renamed = lake_table(settings, "public.t04").state.schema().as_arrow().names
    assert "body" in renamed and "big" not in renamed


def test_writer_processes_compact_and_expire_their_tables_and_lose_nothing(
    pg: psycopg.Connection, pg_dsn: str, lake_dir
) -> None:
    """The writer processes' own upkeep (ingest.writerupkeep): change logs compacted from the rows kept in memory
    (and now and then from the lake), snapshots expired, the files only expired snapshots used deleted; across
    a schema change that starts a table's kept rows afresh. Every change is there once, every reader agrees with
    the source, and no file the lake references is gone."""
    _create(pg)
    rounds, every, keep = 40, 3, 4
    settings = make_settings(
        pg_dsn, lake_dir, TABLES, processes=2, changelog_compact_every=every, snapshot_keep=keep
    )
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        _writers(worker)
        for r in range(rounds):
            _churn(pg, 1, start=1000 + 10 * r)  # one round per flush or so: many small appends per table
            if r == rounds // 2:
                pg.execute("ALTER TABLE t02 ADD COLUMN note text")
            time.sleep(0.25)
        wait_caught_up(pg)
    _assert_readers_equal_source(pg, settings, TABLES)
    for ref in TABLES:
        table = lake_table(settings, ref)
        changes = table.changelog.scan().to_arrow()
        # the copy's 30 rows, then an insert and an update per round and a delete per round but the first
        assert changes.num_rows == 30 + 3 * rounds - 1, f"{ref}: changes lost or doubled by the upkeep"
        for lake in (table.changelog, table.state):
            snapshots = len(lake.metadata.snapshots)
            # without expiry every round leaves one or more; how many commits land between two expiries depends
            # on the machine's load (14 on a loaded 2-core CI run), so the bound is well below the round count
            assert snapshots < rounds // 2, f"{ref}: {snapshots} snapshots kept; expiry did not run"
            used = referenced_paths(lake)
            assert all(os.path.exists(p.removeprefix("file://")) for p in used), f"{ref}: a referenced file is gone"
        files = len(list(table.changelog.scan().plan_files()))
        # without compaction every append leaves a file; the table whose schema changed half-way keeps its
        # earlier files until a compaction from the lake (21 on a loaded 2-core run), so the bound is the rounds
        assert files < rounds, f"{ref}: {files} change-log files after {rounds} appends; nothing compacted them"
        for lake in (table.changelog, table.state):
            on_disk = {
                os.path.join(d, f)
                for d, _, names in os.walk(lake.location().removeprefix("file://"))
                for f in names
                if f.endswith((".parquet", ".avro"))
            }
            unreferenced = on_disk - {p.removeprefix("file://") for p in referenced_paths(lake)}
            assert not unreferenced, f"{ref}: files of expired snapshots were left behind: {sorted(unreferenced)[:3]}"


def test_a_huge_transaction_is_staged_in_the_writer_processes_and_seen_whole(
    pg: psycopg.Connection, pg_dsn: str, lake_dir
) -> None:
    _create(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES, processes=2, max_batch_rows=200)
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        _writers(worker)
        before = lake_table(settings, "public.t07").current().num_rows
        with pg.transaction():
            for ref in TABLES[6:10]:
                name = ref.split(".")[1]
                pg.execute(f"INSERT INTO {name} SELECT g, g, 'bulk', NULL FROM generate_series(100, 1099) g")
        seen: list[int] = []

        def whole() -> bool:  # a plain reader: the transaction's rows all at once or none of them
            rows = lake_table(settings, "public.t07").current().num_rows
            seen.append(rows)
            return rows == before + 1000

        wait_for(whole, 60, "the huge transaction to become visible")
        assert set(seen) <= {before, before + 1000}, f"a part of the transaction was visible: {sorted(set(seen))}"
        wait_caught_up(pg)
    _assert_readers_equal_source(pg, settings, TABLES[6:10])


def test_a_killed_writer_process_loses_and_duplicates_nothing(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    _create(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES, processes=2)
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        victim = _writers(worker)[0]
        _churn(pg, 5)
        os.kill(victim.pid, signal.SIGKILL)
        _churn(pg, 10, start=2000)
        wait_for(
            lambda: worker.procs is not None and victim.pid not in [p.pid for p in worker.procs._procs],
            60,
            "the worker to start new writer processes",
        )
        _churn(pg, 5, start=3000)
        wait_caught_up(pg, timeout=120)
    _assert_readers_equal_source(pg, settings, TABLES)


def test_a_value_the_lake_cannot_hold_stops_only_its_table(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    _create(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES, processes=2)
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        _writers(worker)
        pg.execute("INSERT INTO t02 VALUES (500, 'NaN', 'x', NULL)")  # NaN into numeric(12,3): no lake value
        _churn(pg, 3)
        wait_for(lambda: worker.status[TableRef.parse("public.t02")].failed is not None, 60, "t02 to stop")
        message = worker.status[TableRef.parse("public.t02")].failed
        assert "NaN" in message and "lakegate maintain --resnapshot public.t02" in message, message
        # the others go on: the last round's insert reaches them (a count would not do: each round after the first
        # inserts one row and deletes one, so the count is reached a round early, and the worker stopped then)
        last = 1000 + 2 * 10 + 5  # _churn's key for t05 in its third round
        wait_for(
            lambda: last in lake_table(settings, "public.t05").current()["id"].to_pylist(), 60, "the others to go on"
        )
    assert_lake_equals_source(pg, settings, "public.t05")


# ------------------------------------------------------------------------------------------------ the seams


@pytest.mark.parametrize(
    "declaration, text",
    [
        ("numeric(12,3)", "12.345"),
        ("numeric", "1e-20"),
        ("uuid[]", "{6a0b3c4e-0000-4000-8000-000000000001,NULL}"),
        ("timestamptz", "2026-12-04 10:00:00+00"),
        ("lg_amount", "3.14"),
        ("lg_mood[]", "{happy,sad}"),
        ("int4[][]", "{{1,2},{3,4}}"),
    ],
)
def test_a_codec_travels_to_another_process_and_converts_the_same(
    pg: psycopg.Connection, pg_dsn: str, declaration: str, text: str
) -> None:
    pg.execute("DO $$ BEGIN CREATE DOMAIN lg_amount AS numeric(8,2); EXCEPTION WHEN duplicate_object THEN END $$")
    pg.execute("DO $$ BEGIN CREATE TYPE lg_mood AS ENUM ('happy', 'sad'); EXCEPTION WHEN duplicate_object THEN END $$")
    pg.execute("DROP TABLE IF EXISTS lg_probe")
    pg.execute(f"CREATE TABLE lg_probe (c {declaration})")
    oid, typmod, ndims = pg.execute(
        "SELECT atttypid::int8, atttypmod, attndims FROM pg_attribute WHERE attrelid = 'lg_probe'::regclass "
        "AND attname = 'c'"
    ).fetchone()
    with connect(pg_dsn) as conn:
        codec = codec_for(introspect.type_catalog(conn), oid, typmod, ndims)
    travelled = pickle.loads(pickle.dumps(codec))
    values = pa.array([text, None])
    assert travelled.arrow_type == codec.arrow_type and travelled.source_type == codec.source_type
    assert travelled.convert(values).equals(codec.convert(values))


def test_errors_cross_the_pipe_as_the_worker_raises_them() -> None:
    for error in (
        Resnapshot(TableRef.parse("public.t"), "a column was added"),
        SchemaChangeError("public.t", "the key changed"),
        ConversionError("value 'NaN' cannot be stored as decimal(12,3)"),
    ):
        back = tableprocs._rebuilt(pickle.loads(pickle.dumps(tableprocs._portable(error))))
        assert type(back) is type(error) and str(back) == str(error)
        assert getattr(back, "table", None) == getattr(error, "table", None)
    carried = tableprocs.carried(tableprocs._sendable(tableprocs.Outcome(error=SchemaChangeError("t", "m"))).error)
    assert isinstance(carried, SchemaChangeError) and str(carried) == "m"


def test_how_many_processes() -> None:
    assert tableprocs.automatic(3, 5) == 3  # asked for
    assert tableprocs.automatic(0, tableprocs.AUTO_TABLES - 1) == 1  # few tables: the worker's own process
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    assert tableprocs.automatic(0, 400) == max(1, min(cores, tableprocs.AUTO_MOST))
    assert tableprocs.automatic(0, tableprocs.AUTO_TABLES) == max(1, min(cores, tableprocs.AUTO_TABLES // 4))


def test_a_worker_with_writer_processes_stops_them_when_it_stops(
    pg: psycopg.Connection, pg_dsn: str, lake_dir
) -> None:
    _create(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES[:3], processes=2)
    with running_worker(settings) as worker:
        wait_caught_up(pg)
        writers = _writers(worker)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in writers):
        time.sleep(0.1)
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in writers)


def test_a_swap_that_fails_after_the_processes_staged_loses_and_duplicates_nothing(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lakegate.connectors.errors import CommitConflict
    from lakegate.connectors.iceberg import flushcatalog

    _create(pg)
    settings = make_settings(pg_dsn, lake_dir, TABLES, processes=2)
    swap = flushcatalog.FlushCatalog._swap
    failed: list[int] = []

    def once(self: flushcatalog.FlushCatalog, staged: object) -> None:  # in the worker's process
        if not failed and staged.swaps:  # type: ignore[attr-defined]
            failed.append(len(staged.swaps))  # type: ignore[attr-defined]
            raise CommitConflict("another writer moved a table (injected by the test)")
        swap(self, staged)

    with running_worker(settings) as worker:
        wait_caught_up(pg)
        first = [p.pid for p in worker.procs._procs]  # type: ignore[union-attr]
        monkeypatch.setattr(flushcatalog.FlushCatalog, "_swap", once)
        _churn(pg, 8)
        wait_caught_up(pg, timeout=120)
        assert failed, "the injected conflict should have hit a flush the processes had staged"
        assert worker.procs is not None and [p.pid for p in worker.procs._procs] != first, (
            "the processes that staged the failed flush must not write again (their tables are stale)"
        )
    _assert_readers_equal_source(pg, settings, TABLES)

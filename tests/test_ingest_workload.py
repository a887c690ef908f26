"""Mixed workloads: the lake equals the source row by row, through the state table and through the change log."""

import threading
import time

import psycopg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from lakegate.connectors.errors import SourceConfigError
from lakegate.ingest.worker import Worker
from tests.lakehelp import (
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    use_reader,
    wait_caught_up,
)

BIG = "(SELECT string_agg(md5(random()::text || g), '') FROM generate_series(1, 400) g)"  # 12.8 kB, stored out of line


def test_mixed_workload(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    pg.execute("CREATE TABLE accounts (id int PRIMARY KEY, owner text NOT NULL, balance numeric(14,2))")
    pg.execute("CREATE TABLE ledger (a int, b int, note text, PRIMARY KEY (a, b))")
    pg.execute("CREATE TABLE events (kind text, payload jsonb)")
    pg.execute("ALTER TABLE events REPLICA IDENTITY FULL")
    pg.execute("INSERT INTO accounts SELECT g, 'owner' || g, g FROM generate_series(1, 200) g")
    pg.execute("INSERT INTO ledger SELECT g % 10, g, 'n' || g FROM generate_series(1, 100) g")
    settings = make_settings(
        pg_dsn, lake_dir, ["public.accounts", "public.ledger", "public.events"]
    )
    with running_worker(settings):
        wait_caught_up(pg)
        with pg.transaction():  # one transaction over three tables
            pg.execute("UPDATE accounts SET balance = balance * 2 WHERE id <= 50")
            pg.execute("INSERT INTO ledger VALUES (99, 1, 'multi')")
            pg.execute("INSERT INTO events VALUES ('tx', '{\"n\": 1}')")
        pg.execute("UPDATE accounts SET id = id + 1000 WHERE id BETWEEN 10 AND 20")  # primary-key updates
        pg.execute("UPDATE ledger SET b = -b, note = 'moved' WHERE a = 3")  # composite key update
        try:
            with pg.transaction():
                pg.execute("DELETE FROM accounts")
                pg.execute("INSERT INTO ledger VALUES (100, 100, 'never')")
                raise RuntimeError("roll back")
        except RuntimeError:
            pass
        pg.execute("DELETE FROM accounts WHERE id % 3 = 0")
        pg.execute("INSERT INTO accounts VALUES (3, 'back', 3.33)")  # a deleted key comes back
        pg.execute("TRUNCATE ledger")
        pg.execute("INSERT INTO ledger VALUES (1, 1, 'after truncate'), (2, 2, 'x')")
        pg.execute("UPDATE ledger SET note = 'updated after truncate' WHERE a = 1")
        pg.execute(
            "INSERT INTO events SELECT 'bulk', jsonb_build_object('i', g) FROM generate_series(1, 50) g"
        )
        pg.execute("DELETE FROM events WHERE payload->>'i' = '7'")
        pg.execute("UPDATE events SET kind = 'changed' WHERE payload->>'i' = '8'")
        for i in range(30):  # many small transactions
            pg.execute("UPDATE accounts SET balance = balance + 1 WHERE id = %s", (100 + i,))
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.accounts")
    assert_lake_equals_source(pg, settings, "public.ledger")
    events = lake_table(settings, "public.events")
    assert events.state is None, "a table without a key is kept as a change log only"
    ops = events.changelog.scan().to_arrow().group_by("_op").aggregate([("_op", "count")]).to_pylist()
    assert {r["_op"]: r["_op_count"] for r in ops} == {"c": 51, "d": 1, "u": 1}


def test_unchanged_toast_values_are_carried_over(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    pg.execute("CREATE TABLE docs (id int PRIMARY KEY, title text, body text, meta jsonb)")
    pg.execute(
        f"INSERT INTO docs SELECT g, 't' || g, {BIG}, jsonb_build_object('big', {BIG}) "
        "FROM generate_series(1, 5) g"
    )
    (stored,) = pg.execute("SELECT pg_column_size(body) FROM docs WHERE id = 1").fetchone()
    assert stored > 2000, "the test needs values stored out of line (TOAST)"
    settings = make_settings(pg_dsn, lake_dir, ["public.docs"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE docs SET title = 'renamed' WHERE id IN (1, 2)")  # body unchanged: lake lookup
        wait_caught_up(pg)
        with pg.transaction():  # insert and update in one batch: filled from the same batch
            pg.execute(f"INSERT INTO docs VALUES (10, 'new', {BIG}, '{{}}')")
            pg.execute("UPDATE docs SET title = 'renamed again' WHERE id = 10")
        pg.execute("UPDATE docs SET id = 100 WHERE id = 3")  # key update with unchanged TOAST values
        pg.execute("UPDATE docs SET title = 'third' WHERE id = 100")
        pg.execute("UPDATE docs SET title = 't', meta = '{\"small\": true}' WHERE id = 4")
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.docs")
    changes = table.changelog.scan().to_arrow().to_pylist()
    assert all(r["body"] is not None for r in changes if r["_op"] in ("r", "c", "u")), (
        "a body was written as NULL"
    )


def test_table_without_key_or_identity_is_refused(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    pg.execute("CREATE TABLE loose (a int, b text)")
    settings = make_settings(pg_dsn, lake_dir, ["public.loose", "public.nothere"])
    with pytest.raises(SourceConfigError) as info:
        Worker(settings.lake, settings.sources[0], settings.ingest).run()
    message = str(info.value)
    assert "public.loose has no primary key" in message and "REPLICA IDENTITY FULL" in message
    assert "public.nothere does not exist" in message


def test_state_table_equals_source_without_the_change_log(pg: psycopg.Connection, pg_dsn: str, lake_dir) -> None:
    pg.execute("CREATE TABLE t (id int PRIMARY KEY, v int)")
    pg.execute("INSERT INTO t SELECT g, g FROM generate_series(1, 3000) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.t"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE t SET v = -v WHERE id % 5 = 0")
        pg.execute("DELETE FROM t WHERE id % 11 = 0")
        pg.execute("INSERT INTO t VALUES (5000, 1)")
        wait_caught_up(pg)
    table = lake_table(settings, "public.t")
    assert table.state_checkpoint() == table.checkpoint()
    assert table.tail(table.state_checkpoint()).num_rows == 0
    rows = sorted((r["id"], r["v"]) for r in table.state.scan().to_arrow().to_pylist())
    assert rows == sorted(pg.execute("SELECT id, v FROM t").fetchall())


@pytest.mark.parametrize("reader", ["duckdb", "psql"])
def test_snapshot_in_many_chunks(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch, reader: str
) -> None:
    from lakegate.connectors.iceberg import datafiles
    from lakegate.connectors.postgres import snapshot

    use_reader(monkeypatch, reader)
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", 20_000)
    monkeypatch.setattr(snapshot, "CHUNK_ROWS", 700)
    monkeypatch.setattr(datafiles, "ROW_GROUP_ROWS", 1_000)
    pg.execute("CREATE TABLE wide (id int PRIMARY KEY, t text, n numeric(20,4))")
    pg.execute("INSERT INTO wide SELECT g, repeat('w', g % 50), g / 7.0 FROM generate_series(1, 20000) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.wide"])
    with running_worker(settings):
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.wide")
    # the chunks stream into one open file per table (a row group per ROW_GROUP_ROWS), not a file per chunk
    for iceberg_table in (table.state, table.changelog):
        (task,) = iceberg_table.scan().plan_files()
        with iceberg_table.io.new_input(task.file.file_path).open() as f:
            row_groups = pq.ParquetFile(f).metadata.num_row_groups
        assert row_groups > 10, "the snapshot should have been written in several chunks"
    assert table.changelog.current_snapshot().summary["added-records"] == "20000"


@pytest.mark.parametrize("reader", ["duckdb", "psql"])
def test_snapshot_row_longer_than_a_chunk(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch, reader: str
) -> None:
    """psql's reader buffer is a chunk plus 1 MiB: a longer row makes it grow instead of being cut."""
    from lakegate.connectors.postgres import snapshot

    use_reader(monkeypatch, reader)
    monkeypatch.setattr(snapshot, "CHUNK_BYTES", 20_000)
    pg.execute("CREATE TABLE long_rows (id int PRIMARY KEY, t text)")
    pg.execute("INSERT INTO long_rows SELECT g, repeat(chr(65 + g % 26), g) FROM generate_series(1, 2000) g")
    pg.execute("INSERT INTO long_rows VALUES (5000, repeat(E'tab\\there', 400000))")  # 3.6 MB, escaped
    pg.execute("INSERT INTO long_rows VALUES (5001, 'after the long one')")
    settings = make_settings(pg_dsn, lake_dir, ["public.long_rows"])
    with running_worker(settings):
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.long_rows")


def test_a_table_added_later_is_copied_while_the_others_resume(
    pg: psycopg.Connection, pg_dsn: str, lake_dir
) -> None:
    pg.execute("CREATE TABLE first (id int PRIMARY KEY, v int)")
    pg.execute("CREATE TABLE second (id int PRIMARY KEY, v int)")
    pg.execute("INSERT INTO first SELECT g, g FROM generate_series(1, 100) g")
    pg.execute("INSERT INTO second SELECT g, g FROM generate_series(1, 100) g")
    with running_worker(make_settings(pg_dsn, lake_dir, ["public.first"])):
        wait_caught_up(pg)
    # while no worker runs, both tables change; then 'second' joins the replicated tables
    pg.execute("UPDATE first SET v = -v WHERE id <= 10")
    pg.execute("UPDATE second SET v = -v WHERE id <= 20")
    settings = make_settings(pg_dsn, lake_dir, ["public.first", "public.second"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE second SET v = 0 WHERE id = 50")
        pg.execute("DELETE FROM first WHERE id = 1")
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.first")
    second = assert_lake_equals_source(pg, settings, "public.second")
    ops = second.changelog.scan().to_arrow()["_op"].to_pylist()
    assert ops.count("r") == 100 and ops.count("u") == 1, (
        "copied once at its own snapshot point, then streamed"
    )
    slots = pg.execute(
        "SELECT count(*) FROM pg_replication_slots WHERE slot_name LIKE 'lakegate_pg%'"
    ).fetchone()
    assert slots == (1,), "the temporary slot of the second copy must be gone"


def test_an_abandoned_duckdb_snapshot_read_ends_its_postgresql_session(
    pg: psycopg.Connection, pg_dsn: str, monkeypatch
) -> None:
    """A worker stopped mid-snapshot closes the chunk iterator: the read is interrupted, its session ends."""
    from lakegate.connectors.changes import TableRef
    from lakegate.connectors.postgres import introspect, snapshot

    monkeypatch.setattr(snapshot, "CHUNK_ROWS", 1000)
    pg.execute("CREATE TABLE many (id int PRIMARY KEY, t text)")
    pg.execute("INSERT INTO many SELECT g, repeat('x', 200) FROM generate_series(1, 200000) g")
    with psycopg.connect(pg_dsn, autocommit=True) as exporter:
        exporter.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        (name,) = exporter.execute("SELECT pg_export_snapshot()").fetchone()  # type: ignore[misc]
        table = introspect.describe(pg, TableRef("public", "many"))
        assert table is not None
        _, codecs = introspect.lake_schema(
            table.ref, table.columns, table.key, introspect.type_catalog(pg), "string"
        )
        chunks = snapshot.copy_chunks(pg, table, codecs, dsn=pg_dsn, snapshot_name=name)  # type: ignore[arg-type]
        first = next(chunks)
        assert first.num_rows == 1000 and first.column("id").to_pylist()[:3] == [1, 2, 3]
        reading = "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'lakegate-snapshot'"
        assert pg.execute(reading).fetchone() == (1,)
        chunks.close()
        deadline = time.monotonic() + 10
        while pg.execute(reading).fetchone() != (0,):
            assert time.monotonic() < deadline, "the abandoned read's session is still there"
            time.sleep(0.05)
    assert not [t for t in threading.enumerate() if t.name == "copy-public.many"]


@pytest.mark.parametrize("reader", ["duckdb", "psql"])
def test_a_partitioned_table_is_copied_and_streamed_as_one_table(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch, reader: str
) -> None:
    use_reader(monkeypatch, reader)
    pg.execute(
        "CREATE TABLE events (id int, day date, v text, PRIMARY KEY (id, day)) PARTITION BY RANGE (day)"
    )
    pg.execute("CREATE TABLE events_h1 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2024-07-01')")
    pg.execute("CREATE TABLE events_h2 PARTITION OF events FOR VALUES FROM ('2024-07-01') TO ('2025-01-01')")
    pg.execute(
        "INSERT INTO events SELECT g, date '2024-01-01' + g % 360, 'v' || g FROM generate_series(1, 5000) g"
    )
    settings = make_settings(pg_dsn, lake_dir, ["public.events"])
    with running_worker(settings):
        wait_caught_up(pg)
        pg.execute("UPDATE events SET v = 'changed' WHERE id % 7 = 0")
        # moves the row to the other partition
        pg.execute("UPDATE events SET day = '2024-12-31' WHERE id = 10")
        pg.execute("DELETE FROM events WHERE id % 11 = 0")
        pg.execute("INSERT INTO events VALUES (9001, '2024-12-31', 'late')")
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.events")
    assert table.changelog.scan(row_filter="_op == 'r'").to_arrow().num_rows == 5000


@pytest.mark.parametrize("reader", ["duckdb", "psql"])
def test_odd_table_and_column_names_are_copied(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch, reader: str
) -> None:
    """Names that differ only in case, reserved words, spaces and quotes (DuckDB compares names without case)."""
    use_reader(monkeypatch, reader)
    pg.execute(
        'CREATE TABLE "Odd Table" ("ID" int PRIMARY KEY, id int, "select" text, "with space" numeric(5,1), '
        '"quote""d" date)'
    )
    pg.execute("INSERT INTO \"Odd Table\" VALUES (1, 10, 'a', 1.5, '2024-01-01'), (2, 20, NULL, NULL, NULL)")
    settings = make_settings(pg_dsn, lake_dir, ["public.Odd Table"])
    with running_worker(settings):
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.Odd Table")
    assert [f.name for f in table.state.schema().fields][:5] == [
        "ID",
        "id",
        "select",
        "with space",
        'quote"d',
    ]


def test_a_table_duckdb_cannot_read_is_copied_through_the_text_reader(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch, caplog
) -> None:
    """A DuckDB error that is not a lost connection (here a binder error, as duplicate names once caused) before
    the first chunk: that table is copied through the text reader, with a warning, instead of retried forever."""
    from lakegate.connectors.postgres import duckcopy

    select_sql = duckcopy.select_sql
    monkeypatch.setattr(
        duckcopy, "select_sql", lambda conn, table: select_sql(conn, table).replace('AS "c1"', 'AS "C0"')
    )
    pg.execute("CREATE TABLE plain (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO plain SELECT g, 'v' || g FROM generate_series(1, 1000) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.plain"])
    with running_worker(settings):
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.plain")
    assert "DuckDB cannot read public.plain" in caplog.text and "duplicate column name" in caplog.text


def test_wide_rows_are_read_in_batches_sized_by_bytes_and_converted_in_slices(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch
) -> None:
    """DuckDB's batches are sized from the rows' estimated size (not a fixed row count that would hold GiBs of
    640 kB documents), and a batch larger than SLICE_BYTES is converted a slice at a time."""
    from lakegate.connectors.postgres import duckcopy

    sizes: list[int] = []
    batch_rows = duckcopy.batch_rows

    def spy(*args: object) -> int:
        sizes.append(batch_rows(*args))  # type: ignore[arg-type]
        return sizes[-1]

    monkeypatch.setattr(duckcopy, "batch_rows", spy)
    monkeypatch.setattr(duckcopy, "SLICE_BYTES", 2**20)
    pg.execute("CREATE TABLE documents (id int PRIMARY KEY, doc text, price numeric(10,2))")
    pg.execute(
        "INSERT INTO documents SELECT g, repeat(md5(g::text), 20000), g / 4.0 FROM generate_series(1, 60) g"
    )
    settings = make_settings(pg_dsn, lake_dir, ["public.documents"])
    with running_worker(settings):
        wait_caught_up(pg)
    assert_lake_equals_source(pg, settings, "public.documents")
    assert sizes and 16 <= sizes[0] <= 100, sizes  # 32 MiB of 640 kB rows


def test_a_duckdb_failure_part_way_copies_the_table_again_through_the_text_reader(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch, caplog
) -> None:
    """A DuckDB error that is not a lost connection after chunks were written: the partial snapshot is aborted
    and the retry reads text (a deterministic error is not retried forever, and nothing is written twice)."""
    from lakegate.connectors.postgres import duckcopy, snapshot

    monkeypatch.setattr(snapshot, "_TEXT_ONLY", set())
    monkeypatch.setattr(snapshot, "CHUNK_ROWS", 1000)
    read = duckcopy.read

    def failing_after_one_batch(dsn, name, query, rows, put, cancel, connections) -> None:  # type: ignore[no-untyped-def]
        sent = []

        def put_then_fail(item: object) -> None:
            if sent and isinstance(item, pa.RecordBatch):
                put(duckcopy.ReadError("Conversion Error: simulated, after the first batch"))
                cancel.wait(10)
                return
            sent.append(item)
            put(item)

        read(dsn, name, query, rows, put_then_fail, cancel, connections)

    monkeypatch.setattr(duckcopy, "read", failing_after_one_batch)
    pg.execute("CREATE TABLE halfway (id int PRIMARY KEY, v text)")
    pg.execute("INSERT INTO halfway SELECT g, 'v' || g FROM generate_series(1, 5000) g")
    settings = make_settings(pg_dsn, lake_dir, ["public.halfway"])
    with running_worker(settings):
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.halfway")
    assert table.changelog.scan(row_filter="_op == 'r'").to_arrow().num_rows == 5000
    assert "DuckDB failed part-way through public.halfway" in caplog.text

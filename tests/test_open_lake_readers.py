"""Issue 12 reader interop: after a mixed workload with a SIGKILL, every Iceberg engine reads the state tables as
plain Iceberg tables (no lakegate in the way) and must see exactly what PostgreSQL holds, row by row.

Readers: pyiceberg (Arrow and pandas), DuckDB alone (``iceberg_scan``), polars (``scan_iceberg``) and Spark in
local mode with the Iceberg runtime (its own test, skipped saying why where Java, pyspark or Maven is missing).
"""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pyarrow as pa
import pytest

from lakegate import settings as settings_mod
from tests.conftest import _drop_database
from tests.lakehelp import _assert_same, arrow_rows, lake_table, make_settings, source_rows, wait_caught_up
from tests.procs import Proc, write_config
from tests.readers import SPARK_WARNINGS, SparkReader, readers, spark  # noqa: F401  (spark is a fixture)

TABLES = ("public.orders", "public.ledger")

pytestmark = [pytest.mark.slow, *SPARK_WARNINGS]


@dataclass
class Lake:
    dsn: str
    settings: settings_mod.Settings
    dir: Path


def _setup(pg: psycopg.Connection) -> None:
    pg.execute(
        "CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(14,2), status text, at timestamptz, "
        "day date, flag boolean, score float8, qty int NOT NULL)"
    )
    pg.execute("CREATE TABLE ledger (a int, b text, note text, PRIMARY KEY (a, b))")
    pg.execute(
        "INSERT INTO orders SELECT g, g / 3.0, 's' || g % 7, '2024-01-01'::timestamptz + g * interval '1 min', "
        "'2024-01-01'::date + g % 400, g % 2 = 0, g / 7.0, g FROM generate_series(1, 5000) g"
    )
    pg.execute("INSERT INTO ledger SELECT g % 10, 'b' || g, 'n' || g FROM generate_series(1, 300) g")


def _workload(pg: psycopg.Connection, rng: random.Random, rounds: int) -> None:
    for _ in range(rounds):
        key = rng.randint(1, 6000)
        choice = rng.random()
        with pg.transaction():
            if choice < 0.35:
                pg.execute(
                    "INSERT INTO orders VALUES (%s, 1.25, 'new', now(), current_date, true, 0.5, 1) "
                    "ON CONFLICT (id) DO UPDATE SET amount = EXCLUDED.amount, status = 'upserted'",
                    (key,),
                )
            elif choice < 0.6:
                pg.execute(
                    "UPDATE orders SET amount = amount + 1, status = NULL, flag = NOT flag "
                    "WHERE id BETWEEN %s AND %s",
                    (key, key + rng.randint(0, 40)),
                )
            elif choice < 0.7:
                pg.execute("DELETE FROM orders WHERE id BETWEEN %s AND %s", (key, key + rng.randint(0, 15)))
            elif choice < 0.75:  # a primary-key update: one row leaves, another arrives
                pg.execute("UPDATE orders SET id = id + 100000 WHERE id = %s", (key,))
            elif choice < 0.9:
                pg.execute(
                    "INSERT INTO ledger VALUES (%s, %s, 'w') ON CONFLICT (a, b) DO UPDATE SET note = 'again'",
                    (key % 10, f"b{key}"),
                )
            else:
                pg.execute("DELETE FROM ledger WHERE a = %s AND b < %s", (key % 10, f"b{key}"))


@pytest.fixture(scope="module")
def lake(pg_server, tmp_path_factory) -> Iterator[Lake]:  # type: ignore[no-untyped-def]
    """A lake after a mixed workload, a SIGKILL, a truncate, a transaction written in parts and a clean stop, as the
    worker left it."""
    name = f"openlake_{int(time.time() * 1000) % 10**9}"
    with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    dsn = pg_server.dsn(name)
    root = tmp_path_factory.mktemp("openlake")
    (root / "lake").mkdir()
    settings = make_settings(dsn, root / "lake", list(TABLES), max_batch_rows=400)
    config = write_config(settings, root / "lakegate.toml")
    rng = random.Random(12)
    with psycopg.connect(dsn, autocommit=True) as pg:
        _setup(pg)
        first = Proc(["ingest", "--config", str(config)], root / "worker0.log")
        first.wait_for_output("streaming from slot")
        _workload(pg, rng, 150)
        first.kill()
        _workload(pg, rng, 50)
        pg.execute("TRUNCATE ledger")
        pg.execute("INSERT INTO ledger VALUES (1, 'after', 'truncate'), (2, 'x', 'y')")
        final = Proc(["ingest", "--config", str(config)], root / "worker1.log")
        try:
            final.wait_for_output("streaming from slot")
            _workload(pg, rng, 100)
            with pg.transaction():  # written in parts (issue 11.7): later parts delete rows of staged files
                pg.execute(
                    "INSERT INTO orders SELECT g, 2.5, 'big', now(), current_date, false, 1.5, g "
                    "FROM generate_series(200001, 201500) g"
                )
                pg.execute(
                    "UPDATE orders SET status = 'big, updated', qty = -qty WHERE id BETWEEN 200001 AND 200700"
                )
                pg.execute("DELETE FROM orders WHERE id BETWEEN 200701 AND 200900 OR id BETWEEN 1 AND 50")
                pg.execute("UPDATE orders SET amount = amount * 2 WHERE id BETWEEN 51 AND 450")
            _workload(pg, rng, 20)
            wait_caught_up(pg, timeout=120)
        finally:
            final.signal(signal.SIGTERM)
            assert final.wait(60) == 0, final.output()[-2000:]
    yield Lake(dsn, settings, root / "lake")
    with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
        _drop_database(admin, name)  # and its slot, whose name other tests' workers use on their databases


def _check_every_reader(lake: Lake, spark_reader: SparkReader | None, only: str | None = None) -> None:
    failures = []
    if only is not None:
        assert only in readers(spark_reader), f"no reader named {only!r}: nothing would be checked"
    with psycopg.connect(lake.dsn, autocommit=True) as pg:
        for name in TABLES:
            table = lake_table(lake.settings, name)
            state = table.state
            assert state is not None
            state.refresh()
            columns = [c.name for c in table.schema.columns]
            schema = state.schema().as_arrow()
            expected = source_rows(pg, name, pa.schema([schema.field(c) for c in columns]), table.schema.key)
            assert expected, f"{name}: the workload left the source empty"
            for reader, read in readers(spark_reader).items():
                if only is not None and reader != only:
                    continue
                try:
                    _assert_same(
                        arrow_rows(read(state, lake.dir), columns), expected, f"{name} read by {reader}"
                    )
                except AssertionError as exc:
                    failures.append(str(exc))
    assert not failures, "\n".join(failures)


def test_every_reader_sees_the_source_without_lakegate(lake: Lake) -> None:
    for name in TABLES:  # nothing left for lakegate to do: the state tables are exact as the worker left them
        table = lake_table(lake.settings, name)
        assert table.state_checkpoint() == table.checkpoint(), (
            f"{name}: the state table is behind its change log"
        )
    _check_every_reader(lake, None)


def test_spark_sees_the_source_without_lakegate(lake: Lake, spark: SparkReader) -> None:  # noqa: F811
    """Spark reading the files, and through the catalog configured as the README says (skipped, saying why,
    where Java, pyspark or Maven is missing)."""
    _check_every_reader(lake, spark, only="spark")
    with psycopg.connect(lake.dsn, autocommit=True) as pg:
        table = lake_table(lake.settings, "public.orders")
        columns = [c.name for c in table.schema.columns]
        schema = table.state.schema().as_arrow()
        expected = source_rows(pg, "public.orders", pa.schema([schema.field(c) for c in columns]), ("id",))
    read = spark.via_catalog(table.state, lake.dir, lake.settings.lake.name)
    _assert_same(arrow_rows(read, columns), expected, "public.orders read by Spark through the JDBC catalog")

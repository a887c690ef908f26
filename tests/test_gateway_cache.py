"""The lake cache and the plan cache against real DuckDB, Iceberg and PostgreSQL: a gateway with the cache answers
exactly what a gateway without it and PostgreSQL answer, right after every ingest commit (each a new state
snapshot, read through the cached one: its rows less the new deletes plus the new files); a snapshot that changed
much is loaded and the old entry dropped (not while a query still reads it); older versions are read through
the entry too; the byte budget holds by
evicting the least recently used; time travel reads the old version; a cached plan never outlives a change of
the tables it was routed on. Loads are asynchronous: tests wait for them with ``LakeCache.wait_idle``."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from pyiceberg.types import StringType

from lakegate.connectors.changes import Column, Position
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg import compaction
from lakegate.connectors.iceberg.commits import stamp
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import canon, gateway_settings, pg_rows, rows_of, same_rows
from tests.lakehelp import lake_table, running_worker, wait_caught_up
from tests.test_open_lake_deletes import Model, _create

COLUMNS = "id, name, price, ratio, tags, seen, day, raw, u"
ITEMS = """
CREATE TABLE items (id int PRIMARY KEY, name text, price numeric(30,8), ratio float8, tags text[], seen timestamptz,
                    day date, raw bytea, u uuid);
INSERT INTO items SELECT g, 'item ' || g, g * 1.25, CASE WHEN g % 50 = 0 THEN 'NaN'::float8 ELSE g / 3.0 END,
       ARRAY['t' || (g % 3)], timestamptz '2024-01-01 00:00+00' + g * interval '1 hour', date '2024-01-01' + g,
       decode(lpad(to_hex(g), 4, '0'), 'hex'), md5(g::text)::uuid
FROM generate_series(1, 2000) g;
"""
AGGREGATE = "SELECT count(*) AS n, sum(price) AS total, min(seen) AS first, max(name) AS last FROM {} WHERE id % 7 = 3"


def _cache_tables(gateway: Gateway) -> set[str]:
    """The lake cache's tables that exist in DuckDB now."""
    result = gateway.duckdb.run(
        "SELECT schema_name || '.' || table_name AS name FROM duckdb_tables() WHERE schema_name = 'lakegate_cache'"
    )
    try:
        return {row["name"] for row in pa.Table.from_batches(list(result), schema=result.schema).to_pylist()}
    finally:
        result.close()


def _entry(gateway: Gateway, table: str) -> Any:
    found = [e for e in gateway.cache.entries() if ".".join(e.version.ident) == table]
    assert len(found) <= 1
    return found[0] if found else None


def _snapshot_id(settings: Any, part: str) -> int:
    """The current snapshot id of the items state table or change log."""
    table = getattr(lake_table(settings, "public.items"), part)
    return int(table.current_snapshot().snapshot_id)


def _same_everywhere(
    cached: Gateway, plain: Gateway, pg: psycopg.Connection, what: str, *, hit: bool
) -> None:
    """The cached gateway == the gateway without cache == PostgreSQL, for rows and an aggregate; with ``hit``,
    the cached gateway must have read its cache for both."""
    hits = cached.cache.stats.hits
    for lake_sql, pg_sql, ordered in (
        (f"SELECT {COLUMNS} FROM lake.public.items", f"SELECT {COLUMNS} FROM public.items", False),
        (AGGREGATE.format("lake.public.items"), AGGREGATE.format("public.items"), True),
    ):
        got = rows_of(cached.query(lake_sql).table)
        assert same_rows(got, rows_of(plain.query(lake_sql).table), ordered), f"{what}: cache != no cache"
        assert same_rows(got, pg_rows(pg, pg_sql), ordered), f"{what}: cache != PostgreSQL"
    if hit:
        assert cached.cache.stats.hits >= hits + 2, f"{what}: the cached gateway did not read its cache"


def test_cache_is_never_stale_after_commits(pg: psycopg.Connection, pg_dsn: str, lake_dir: Path) -> None:
    pg.execute(ITEMS)
    settings = gateway_settings(pg_dsn, lake_dir, ["public.items"], cache_bytes="256MiB")
    settings.ingest.maintenance_interval = 0.0
    plain_settings = gateway_settings(pg_dsn, lake_dir, ["public.items"], cache_bytes=0)
    cached, plain = (
        Gateway(settings.lake, settings.sources, settings.gateway).open(),
        Gateway(plain_settings.lake, plain_settings.sources, plain_settings.gateway).open(),
    )
    versions: list[tuple[int, list[tuple[Any, ...]]]] = []
    try:
        with running_worker(settings):
            wait_caught_up(pg)
            _same_everywhere(cached, plain, pg, "before the cache is loaded", hit=False)
            assert cached.cache.wait_idle()
            first = _entry(cached, "public.items")
            assert first is not None and first.version.snapshot_id == _snapshot_id(settings, "state")
            assert first.rows == 2000 and not plain.cache.entries()
            _same_everywhere(cached, plain, pg, "with the cache loaded", hit=True)
            for step in (
                "INSERT INTO items VALUES (5000, 'new', 9.99, 0.5, ARRAY['x', NULL], now(), '2024-06-01', '\\x00', "
                "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11')",
                "UPDATE items SET price = price + 1, tags = ARRAY[]::text[] WHERE id % 10 = 0",
                "DELETE FROM items WHERE id % 9 = 0",
                "UPDATE items SET id = id + 10000 WHERE id BETWEEN 1 AND 3",
            ):
                pg.execute(step)
                wait_caught_up(pg)  # committed to the lake: the next query must see it
                through = cached.cache.stats.delta_hits
                _same_everywhere(cached, plain, pg, f"right after committing {step[:30]}", hit=True)
                assert cached.cache.stats.delta_hits >= through + 2, "the new snapshot was not read through the cache"
                versions.append(
                    (_snapshot_id(settings, "state"), pg_rows(pg, f"SELECT {COLUMNS} FROM public.items"))
                )
                assert cached.cache.wait_idle()
                kept = _entry(cached, "public.items")
                assert (kept.name, kept.version) == (first.name, first.version), "a small commit reloaded the table"

            pg.execute("UPDATE items SET name = name || '!' WHERE id % 2 = 0")  # half the table: worth a load
            wait_caught_up(pg)
            _same_everywhere(cached, plain, pg, "right after changing half the table", hit=True)
            versions.append((_snapshot_id(settings, "state"), pg_rows(pg, f"SELECT {COLUMNS} FROM public.items")))
            assert cached.cache.wait_idle()
            last = _entry(cached, "public.items")
            assert last is not None and last.version.snapshot_id == _snapshot_id(settings, "state")
            assert last.rows == len(versions[-1][1]) and first.name not in _cache_tables(cached), (
                "the entry of an older snapshot is still there"
            )
            _same_everywhere(cached, plain, pg, "with the newest snapshot loaded", hit=True)

        for snapshot_id, rows in versions:  # older versions: an older state snapshot, from Parquet
            sql = f"SELECT {COLUMNS} FROM lake.public.items FOR VERSION AS OF {snapshot_id}"
            assert same_rows(rows_of(cached.query(sql).table), rows, False), f"version {snapshot_id} differs"
    finally:
        cached.close()
        plain.close()


# ------------------------------------------------------------------------------------- plain Iceberg tables


@pytest.fixture
def lake(pg_dsn: str, lake_dir: Path) -> Iterator[tuple[Gateway, Any]]:
    settings = gateway_settings(pg_dsn, lake_dir, [], cache_bytes="256MiB", max_rows=1_000_000)
    catalog = lake_catalog.from_settings(settings.lake)
    catalog.create_namespace("public")
    gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
    try:
        yield gateway, catalog
    finally:
        gateway.close()


def _numbers(start: int, count: int) -> pa.Table:
    ids = pa.array(range(start, start + count), pa.int64())
    return pa.table({"id": ids, "x": pa.compute.multiply(ids.cast(pa.float64()), 0.5)})


def _count(gateway: Gateway, sql: str) -> int:
    return int(gateway.query(sql).table.column(0)[0].as_py())


def test_new_snapshot_is_loaded_and_old_entry_dropped_once_no_query_reads_it(
    lake: tuple[Gateway, Any],
) -> None:
    gateway, catalog = lake
    table = catalog.create_table("public.t", _numbers(0, 1).schema)
    table.append(_numbers(0, 200_000))
    old_snapshot = table.current_snapshot().snapshot_id
    assert _count(gateway, "SELECT count(*) FROM lake.public.t") == 200_000
    assert gateway.cache.wait_idle()
    old = _entry(gateway, "public.t")
    assert old is not None and old.version.snapshot_id == old_snapshot

    table.append(_numbers(200_000, 1000))  # a small commit: read through the old entry, which stays
    through = gateway.cache.stats.delta_hits
    assert _count(gateway, "SELECT count(*) FROM lake.public.t") == 201_000, "a stale snapshot was served"
    assert gateway.cache.stats.delta_hits == through + 1 and gateway.cache.wait_idle()
    assert _entry(gateway, "public.t").name == old.name, "a small commit reloaded the table"

    reading = gateway.prepare("SELECT id FROM lake.public.t")  # reads the old entry, slowly
    reading.start()
    batches = reading.batches()
    seen = next(batches).num_rows
    table.append(_numbers(201_000, 100_000))  # a third of the table from Parquet: the new snapshot is loaded
    assert _count(gateway, "SELECT count(*) FROM lake.public.t") == 301_000, "a stale snapshot was served"
    assert gateway.cache.wait_idle()
    new = _entry(gateway, "public.t")
    assert new is not None and new.version.snapshot_id == table.current_snapshot().snapshot_id
    assert old.name in _cache_tables(gateway), "the old entry was dropped while a query still read it"
    seen += sum(b.num_rows for b in batches)
    assert seen == 201_000, "the query that started on the older snapshot saw other rows"
    assert gateway.cache.wait_idle()
    assert old.name not in _cache_tables(gateway) and new.name in _cache_tables(gateway)
    assert _count(gateway, "SELECT count(*) FROM lake.public.t") == 301_000

    leases: list[Any] = []  # an older version (time travel, a consistent cut) is read through the entry
    _, plan = gateway.plan(f"SELECT count(*) FROM lake.public.t FOR VERSION AS OF {old_snapshot}", 10, leases)
    assert plan is not None and new.name in plan.sql and "iceberg_scan" not in plan.sql, plan.sql
    for lease in leases:
        lease.release()
    assert _count(gateway, f"SELECT count(*) FROM lake.public.t FOR VERSION AS OF {old_snapshot}") == 200_000
    current = table.current_snapshot().snapshot_id
    leases = []
    _, plan = gateway.plan(f"SELECT count(*) FROM lake.public.t FOR VERSION AS OF {current}", 10, leases)
    assert plan is not None and new.name in plan.sql, (
        "time travel to the cached snapshot did not use the cache"
    )
    for lease in leases:
        lease.release()
    assert _count(gateway, f"SELECT count(*) FROM lake.public.t FOR VERSION AS OF {current}") == 301_000

    with table.update_schema() as update:  # older versions are now under another schema: read from Parquet
        update.add_column("label", StringType())
    _, plan = gateway.plan(f"SELECT count(*) FROM lake.public.t FOR VERSION AS OF {old_snapshot}", 10, [])
    assert plan is not None and "snapshot_from_id" in plan.sql and "lakegate_cache" not in plan.sql
    assert _count(gateway, f"SELECT count(*) FROM lake.public.t FOR VERSION AS OF {old_snapshot}") == 200_000


def test_commits_compactions_and_truncates_are_read_through_the_cached_snapshot(lake: tuple[Gateway, Any]) -> None:
    """A state table kept with position deletes, changed by random batches, compacted now and then (data files
    rewritten, delete files merged) and truncated: after every commit the cached gateway equals the model."""
    gateway, catalog = lake
    columns = (Column("id", pa.int64(), "bigint", key=True), Column("name", pa.string(), "text"))
    state = _create(catalog, "s", columns)
    model = Model(columns, seed=5)

    def commit(batch: pa.Table) -> None:
        state.commit(batch, stamp(Position(model.lsn, 10**6)))

    def check(what: str) -> None:
        got = rows_of(gateway.query("SELECT id, name FROM lake.public.s").table)
        want = [(canon(key[0]), canon(row["name"])) for key, row in model.rows.items()]
        assert same_rows(got, want, ordered=False), f"{what}: the cached gateway differs from the model"

    commit(model.batch(400))
    check("before the cache is loaded")
    assert gateway.cache.wait_idle() and _entry(gateway, "public.s") is not None
    through = gateway.cache.stats.delta_hits
    limits = compaction.Thresholds(min_small_files=2, max_delete_files=2)
    for step in range(16):
        commit(model.batch(25, truncate_at=12 if step == 10 else None))
        check(f"after commit {step}")
        if step in (3, 7, 14):
            assert compaction.compact(state, stamp(Position(model.lsn, 10**6)), limits), "nothing was compacted"
            check(f"after compacting at commit {step}")
        assert gateway.cache.wait_idle()  # a reload, if one was asked for, replaces the entry meanwhile
    assert gateway.cache.stats.delta_hits > through + 10, "newer snapshots were not read through the entry"


def test_byte_budget_holds_by_evicting_the_least_recently_used(lake: tuple[Gateway, Any]) -> None:
    gateway, catalog = lake
    sizes = {"a": 300_000, "b": 300_000, "c": 300_000, "big": 1_200_000}
    for name, rows in sizes.items():
        catalog.create_table(f"public.{name}", _numbers(0, 1).schema).append(_numbers(0, rows))

    def read(name: str) -> None:
        assert _count(gateway, f"SELECT count(*) FROM lake.public.{name} WHERE x >= 0") == sizes[name]
        assert gateway.cache.wait_idle()

    read("a")
    size = _entry(gateway, "public.a").bytes
    gateway.cache.budget = int(size * 2.5)  # room for two of a, b, c
    gateway.cache.recent_seconds = 0.0
    read("b")
    read("a")  # b is now the least recently used
    read("c")
    assert {".".join(e.version.ident) for e in gateway.cache.entries()} == {"public.a", "public.c"}
    assert gateway.cache.stats.evictions == 1 and gateway.cache.bytes <= gateway.cache.budget
    assert gateway.duckdb.table_memory() <= gateway.cache.budget, "DuckDB holds more than the budget"
    read("big")  # larger than the whole budget: never loaded, still answered
    assert _entry(gateway, "public.big") is None and gateway.cache.stats.skipped >= 1
    gateway.cache.recent_seconds = 3600.0  # a and c were just used: b may not push them out
    skipped = gateway.cache.stats.skipped
    read("b")
    read("b")
    assert _entry(gateway, "public.b") is None and gateway.cache.stats.skipped == skipped + 1
    assert gateway.cache.bytes <= gateway.cache.budget


def test_plan_cache_never_serves_a_plan_across_a_change(
    lake: tuple[Gateway, Any], pg: psycopg.Connection
) -> None:
    gateway, catalog = lake
    table = catalog.create_table("public.t", _numbers(0, 1).schema)
    table.append(_numbers(0, 10))
    sql = "SELECT * FROM lake.public.t ORDER BY id"
    assert gateway.query(sql).table.column_names == ["id", "x"]
    assert gateway.cache.wait_idle()
    assert _entry(gateway, "public.t") is not None
    hits = gateway.plans.hits
    with table.update_schema() as update:  # a new schema, the same snapshot
        update.add_column("label", StringType())
    assert gateway.query(sql).table.column_names == ["id", "x", "label"]
    assert gateway.plans.hits == hits + 1, "the plan was not taken from the plan cache"
    table.append(pa.table({"id": pa.array([99], pa.int64()), "x": [1.5], "label": ["new"]}))
    assert gateway.query(sql).table.column("label")[-1].as_py() == "new"

    pg.execute("CREATE TABLE p (id int PRIMARY KEY, a text)")
    pg.execute("INSERT INTO p VALUES (1, 'one')")
    assert gateway.query("SELECT * FROM public.p").route == "postgres"
    assert gateway.query("SELECT * FROM public.p").route == "postgres"
    catalog.create_table("public.p", _numbers(0, 1).schema).append(_numbers(0, 3))
    shadowed = gateway.query("SELECT * FROM public.p")  # the lake comes first on the search path
    assert shadowed.route == "duckdb" and shadowed.table.num_rows == 3

    assert gateway.query("SELECT * FROM pg.public.p").table.column_names == ["id", "a"]
    pg.execute("ALTER TABLE p ADD COLUMN b int DEFAULT 7")
    assert gateway.query("SELECT * FROM pg.public.p").table.to_pylist() == [{"id": 1, "a": "one", "b": 7}]


def test_plan_cache_sees_a_new_postgres_table_first_on_the_search_path(
    pg_dsn: str, lake_dir: Path, pg: psycopg.Connection
) -> None:
    settings = gateway_settings(pg_dsn, lake_dir, [], search_path=["pg", "lake"])
    catalog = lake_catalog.from_settings(settings.lake)
    catalog.create_namespace("public")
    catalog.create_table("public.q", _numbers(0, 1).schema).append(_numbers(0, 5))
    gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
    try:
        for _ in range(2):
            assert gateway.query("SELECT count(*) AS n FROM public.q").route == "duckdb"
        assert gateway.plans.hits == 1
        time.sleep(
            0.25
        )  # name resolution re-reads a source's table list at most every 0.2 s, cached plan or not
        pg.execute("CREATE TABLE q (n int)")
        result = gateway.query("SELECT count(*) AS n FROM public.q")
        assert result.route == "postgres" and result.table.to_pylist() == [{"n": 0}]
    finally:
        gateway.close()


def test_closing_a_result_ends_its_duckdb_transaction(tmp_path: Path) -> None:
    """An Arrow reader not read to its end keeps DuckDB's transaction open (and every table dropped after it
    in memory) even after its cursor is closed; DuckDBResult.close closes the reader first."""
    from lakegate.connectors.duckdb.engine import DuckDBConfig, DuckDBEngine

    engine = DuckDBEngine(DuckDBConfig(warehouse=str(tmp_path)))
    engine.open()
    try:
        engine.execute("CREATE TABLE x AS SELECT range AS i FROM range(300000)")
        engine.execute("CREATE TABLE y AS SELECT range AS i, range * 2 AS j FROM range(3000000)")
        with_y = engine.table_memory()
        result = engine.run("SELECT i FROM x", batch_rows=1000)
        next(iter(result))
        result.close()
        engine.execute("DROP TABLE y")
        assert engine.table_memory() < with_y / 2, "the dropped table is still held"
    finally:
        engine.close()


def test_cache_takes_at_most_half_of_duckdbs_memory(pg_dsn: str, lake_dir: Path) -> None:
    settings = gateway_settings(pg_dsn, lake_dir, [], cache_bytes="4GiB", duckdb_memory_limit="512MiB")
    gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
    try:
        assert 0 < gateway.cache.budget <= 256 * 2**20
        assert gateway.cache_figures()["budget_bytes"] == gateway.cache.budget
    finally:
        gateway.close()


def _plan_sql(gateway: Gateway, sql: str) -> str:
    execution = gateway.prepare(sql)
    try:
        return str(execution.plan.sql)  # type: ignore[attr-defined]
    finally:
        execution.close()


def test_postgres_table_is_served_from_the_cache_only_while_the_server_is_unchanged(
    pg_dsn: str, lake_dir: Path, pg: psycopg.Connection
) -> None:
    """A small PostgreSQL table of a federated query is cached under the server's pg_current_snapshot(): the
    same token means no writing transaction began or ended, so the copy is exact; any write makes the next
    query read the table live (and see the write at once). Views are never cached (they may call now())."""
    pg.execute("CREATE TABLE regions (code text PRIMARY KEY, label text)")
    pg.execute("INSERT INTO regions SELECT 'r' || g, 'region ' || g FROM generate_series(1, 50) g")
    pg.execute("CREATE VIEW region_clock AS SELECT code, clock_timestamp() AS at FROM regions")
    settings = gateway_settings(pg_dsn, lake_dir, [], cache_bytes="256MiB")
    catalog = lake_catalog.from_settings(settings.lake)
    catalog.create_namespace("public")
    sales = pa.table({"region": [f"r{i % 60}" for i in range(600)], "amount": list(range(600))})
    catalog.create_table("public.sales", sales.schema).append(sales)
    sql = (
        "SELECT r.label, sum(s.amount) AS total FROM lake.public.sales s "
        "JOIN pg.public.regions r ON r.code = s.region GROUP BY r.label ORDER BY r.label"
    )

    def expected() -> list[dict[str, Any]]:
        labels = dict(pg.execute("SELECT code, label FROM regions").fetchall())
        totals: dict[str, int] = {}
        for region, amount in zip(sales["region"].to_pylist(), sales["amount"].to_pylist(), strict=True):
            if region in labels:
                totals[labels[region]] = totals.get(labels[region], 0) + amount
        return [{"label": k, "total": v} for k, v in sorted(totals.items())]

    gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
    try:
        assert gateway.query(sql).table.to_pylist() == expected()
        assert gateway.cache.wait_idle()
        assert "SELECT * FROM lakegate_cache." in _plan_sql(gateway, sql).split('"pg.public.regions" AS')[1]
        hits = gateway.cache.stats.hits
        assert gateway.query(sql).table.to_pylist() == expected()
        assert gateway.cache.stats.hits >= hits + 2, (
            "the lake table and the PostgreSQL table come from the cache"
        )

        pg.execute("UPDATE regions SET label = 'renamed' WHERE code = 'r1'")
        got = gateway.query(sql).table.to_pylist()
        assert {"label": "renamed", "total": expected()[-1]["total"]} in got and got == expected()
        assert '"pg.public.regions"' not in _plan_sql(gateway, sql), "after a write the table is read live"

        clock = (
            "SELECT count(*) AS n FROM lake.public.sales s JOIN pg.public.region_clock c ON c.code = s.region"
        )
        assert gateway.query(clock).table.to_pylist() == [{"n": 500}]
        assert gateway.cache.wait_idle()
        assert '"pg.public.region_clock"' not in _plan_sql(gateway, clock), "a view is never cached"
    finally:
        gateway.close()

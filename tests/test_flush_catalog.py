"""The flush catalog (connectors/iceberg/flushcatalog.py): the table commits of one flush become visible in one
catalog transaction, all or none, on a real SQLite catalog read by a second, plain pyiceberg catalog."""

from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog.sql import SqlCatalog

from lakegate.connectors.errors import CommitConflict
from lakegate.connectors.iceberg import cut, flushcatalog
from lakegate.connectors.iceberg.catalog import open_catalog


def _rows(*ids: int) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64())})


def _ids(catalog: SqlCatalog, name: str) -> list[int]:
    return sorted(catalog.load_table(name).scan().to_arrow()["id"].to_pylist())


@pytest.fixture
def catalogs(tmp_path: Path) -> tuple[SqlCatalog, SqlCatalog]:
    """(the writer's flush catalog, another reader/writer of the same database)."""
    uri = f"sqlite:///{tmp_path / 'catalog.db'}"
    writer = open_catalog("lake", uri, str(tmp_path / "warehouse"))
    assert isinstance(writer, flushcatalog.FlushCatalog)
    writer.create_namespace("public")
    for name in ("a", "b"):
        writer.create_table(f"public.{name}", _rows().schema).append(_rows(1))
    other = SqlCatalog("lake", uri=uri, warehouse=(tmp_path / "warehouse").as_uri())
    return writer, other


def test_the_tables_of_a_flush_become_visible_together(catalogs) -> None:  # type: ignore[no-untyped-def]
    writer, other = catalogs
    a, b = writer.load_table("public.a"), writer.load_table("public.b")
    with flushcatalog.flush(writer):
        a.append(_rows(2))
        a.append(_rows(3))  # twice in one flush: the second builds on the first
        b.append(_rows(20))
        assert _ids(writer, "public.a") == [1, 2, 3], "the flush reads what it staged"
        assert _ids(other, "public.a") == [1] and _ids(other, "public.b") == [1], "nothing visible before the end"
    assert _ids(other, "public.a") == [1, 2, 3]
    assert _ids(other, "public.b") == [1, 20]
    assert len(other.load_table("public.a").metadata.snapshots) == 3


def test_a_table_moved_by_another_writer_fails_the_whole_flush(catalogs) -> None:  # type: ignore[no-untyped-def]
    writer, other = catalogs
    a, b = writer.load_table("public.a"), writer.load_table("public.b")
    with pytest.raises(CommitConflict, match="public.b"), flushcatalog.flush(writer):
        a.append(_rows(2))
        b.append(_rows(20))
        other.load_table("public.b").append(_rows(99))  # another process commits b meanwhile
    assert _ids(other, "public.a") == [1], "all or nothing: a's commit is not visible either"
    assert _ids(other, "public.b") == [1, 99]
    assert a.metadata_location == other.load_table("public.a").metadata_location, "the writer reads a again"
    a.append(_rows(3))  # and commits on what the catalog holds
    assert _ids(other, "public.a") == [1, 3]


def test_the_cut_staged_in_a_flush_becomes_visible_with_its_tables(catalogs) -> None:  # type: ignore[no-untyped-def]
    writer, other = catalogs
    writer.update_namespace_properties("public", updates={cut.PREFIX + "pg": "100"})  # an earlier cut
    a = writer.load_table("public.a")
    assert not cut.stage(writer, "pg", ["public"], 200), "outside a flush the caller records it itself"
    with flushcatalog.flush(writer):
        assert not cut.stage(writer, "pg", ["public"], 200), "a flush that staged no table has no transaction"
        a.append(_rows(2))
        assert cut.stage(writer, "pg", ["public"], 200)
        assert cut.parse(other.load_namespace_properties("public")) == {"pg": 100}, "not before the tables"
        assert _ids(other, "public.a") == [1]
    assert cut.parse(other.load_namespace_properties("public")) == {"pg": 200}
    assert _ids(other, "public.a") == [1, 2]
    props = other.load_namespace_properties("public")
    assert sum(key.startswith(cut.PREFIX) for key in props) == 1, props


def test_a_flush_that_fails_leaves_the_cut_where_it_was(catalogs) -> None:  # type: ignore[no-untyped-def]
    writer, other = catalogs
    writer.update_namespace_properties("public", updates={cut.PREFIX + "pg": "100"})
    a, b = writer.load_table("public.a"), writer.load_table("public.b")
    with pytest.raises(CommitConflict), flushcatalog.flush(writer):
        a.append(_rows(2))
        b.append(_rows(20))
        assert cut.stage(writer, "pg", ["public"], 300)
        other.load_table("public.b").append(_rows(99))  # another process moves b: the swap rolls back
    assert cut.parse(other.load_namespace_properties("public")) == {"pg": 100}
    assert _ids(other, "public.a") == [1]


def test_a_commit_planned_before_another_writer_moved_the_table_is_planned_again(catalogs) -> None:  # type: ignore[no-untyped-def]
    writer, other = catalogs
    a = writer.load_table("public.a")
    other.load_table("public.a").append(_rows(99))  # the writer's view of a is stale now
    with flushcatalog.flush(writer):
        a.append(_rows(2))  # fails as a race inside, and pyiceberg's retry plans it on the new head
    assert _ids(other, "public.a") == [1, 2, 99]


def test_another_commit_of_the_process_waits_for_the_flush(catalogs, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    writer, _ = catalogs
    upkeep = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    a = writer.load_table("public.a")
    done = threading.Event()

    def commit_beside() -> None:
        upkeep.load_table("public.a").append(_rows(50))
        done.set()

    with flushcatalog.flush(writer):
        a.append(_rows(2))
        thread = threading.Thread(target=commit_beside)
        thread.start()
        thread.join(1.0)
        assert not done.is_set(), "the other commit must not land between the flush's check and its swap"
    thread.join(30)
    assert done.is_set()
    assert _ids(upkeep, "public.a") == [1, 2, 50]


def test_a_flush_that_loses_a_race_commits_nothing_and_the_worker_goes_on(
    pg, pg_dsn, lake_dir, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    """Another writer moves table b between the worker's staging and its swap: the flush commits nothing (not
    even table a), the worker starts again from the position it confirmed, and the lake equals the source."""
    from tests.lakehelp import assert_lake_equals_source, make_settings, running_worker, wait_caught_up
    from tests.test_ingest_faults import _assert_no_duplicates

    pg.execute("CREATE TABLE a (id int PRIMARY KEY, v text)")
    pg.execute("CREATE TABLE b (id int PRIMARY KEY, v text)")
    settings = make_settings(pg_dsn, lake_dir, ["public.a", "public.b"])
    armed, lost = threading.Event(), []
    swap = flushcatalog.FlushCatalog._swap

    def racing_swap(self, staged) -> None:  # type: ignore[no-untyped-def]
        if armed.is_set() and any(key == ("public", "b__changelog") for key, _, _ in staged.swaps):
            armed.clear()
            other = SqlCatalog("lake", uri=self.properties["uri"], warehouse=self.properties["warehouse"])
            with other.load_table("public.b__changelog").transaction() as txn:
                txn.set_properties({"test.raced": "yes"})
            try:
                swap(self, staged)
            except CommitConflict as exc:
                lost.append(exc)
                raise
            return
        swap(self, staged)

    monkeypatch.setattr(flushcatalog.FlushCatalog, "_swap", racing_swap)
    with running_worker(settings):
        pg.execute("INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 50) g")
        pg.execute("INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, 50) g")
        wait_caught_up(pg)
        armed.set()
        with pg.transaction():
            pg.execute("UPDATE a SET v = v || '!' WHERE id <= 10")
            pg.execute("UPDATE b SET v = v || '!' WHERE id <= 10")
            pg.execute("DELETE FROM b WHERE id > 45")
        wait_caught_up(pg)
    assert len(lost) == 1, "the race must have happened"
    assert "public.b__changelog" in str(lost[0]), lost[0]  # the message names the table that moved
    for name in ("public.a", "public.b"):
        assert_lake_equals_source(pg, settings, name)
        _assert_no_duplicates(settings, name)


def _open_at_barrier(uri: str, warehouse: str, barrier: object, results: object) -> None:
    barrier.wait()  # type: ignore[attr-defined]
    try:
        open_catalog("lake", uri, warehouse)
        results.put("ok")  # type: ignore[attr-defined]
    except Exception as exc:  # reported to the test, which names it
        results.put(repr(exc))  # type: ignore[attr-defined]


def test_processes_opening_one_fresh_catalog_together_all_succeed(tmp_path: Path) -> None:
    """Two workers started at once on a fresh lake both found no catalog tables and the slower one failed with
    "table iceberg_tables already exists" (seen in test_ingest_lease under load). Six real processes open one
    fresh SQLite catalog at the same instant, three times (before the fix 16 of 60 such opens failed)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")  # fast; this test starts no thread before
    for round_ in range(3):
        uri = f"sqlite:///{tmp_path / f'catalog{round_}.db'}"
        barrier, results = ctx.Barrier(6), ctx.Queue()
        args = (uri, str(tmp_path / "wh"), barrier, results)
        procs = [ctx.Process(target=_open_at_barrier, args=args) for _ in range(6)]
        for proc in procs:
            proc.start()
        outcomes = [results.get(timeout=120) for _ in procs]
        for proc in procs:
            proc.join(60)
        assert outcomes == ["ok"] * 6, outcomes
        assert SqlCatalog("lake", uri=uri, warehouse=(tmp_path / "wh").as_uri()).list_namespaces() == []

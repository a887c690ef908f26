"""Rows whose only value is NULL (or '') are rows: the PostgreSQL route's CSV reader and the snapshot's text
reader once skipped them as empty lines (issue 10, first item). Each result is compared with psycopg's."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from lakegate.connectors.postgres.engine import parse_csv
from lakegate.connectors.postgres.snapshot import parse_text
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import gateway_settings, pg_rows, rows_of
from tests.lakehelp import (
    assert_lake_equals_source,
    make_settings,
    running_worker,
    use_reader,
    wait_caught_up,
)

SETUP = """
CREATE TABLE notes (id int PRIMARY KEY, reason text);
INSERT INTO notes SELECT g, CASE WHEN g % 3 = 0 THEN 'r' || g WHEN g % 3 = 1 THEN NULL ELSE '' END
FROM generate_series(1, 60) g;
"""

QUERIES = [
    "SELECT reason FROM {s}.notes",
    "SELECT reason FROM {s}.notes WHERE reason IS NULL",
    "SELECT NULL::text FROM {s}.notes",
    "SELECT max(reason) FROM {s}.notes WHERE false",
    "SELECT sum(id) FROM {s}.notes WHERE id < 0",
    "SELECT count(*) FROM {s}.notes WHERE false",
    "SELECT reason, id FROM {s}.notes WHERE reason IS NULL OR reason = ''",
]


def test_parse_csv_keeps_empty_lines_as_null_rows() -> None:
    table = parse_csv(b'\n"x"\n\n""\n', ["a"])
    assert table["a"].to_pylist() == [None, "x", None, ""]


def test_parse_text_keeps_empty_lines_as_empty_strings() -> None:
    table = parse_text(b"\n\\N\nx\n\n", ["a"])
    assert table["a"].to_pylist() == ["", None, "x", ""]


def test_single_null_column_rows_on_both_routes(pg: psycopg.Connection, pg_dsn: str, lake_dir: Path) -> None:
    pg.execute(SETUP)
    settings = gateway_settings(pg_dsn, lake_dir, ["public.notes"])
    with running_worker(settings):
        wait_caught_up(pg)
        gateway = Gateway(settings.lake, settings.sources, settings.gateway).open()
        try:
            for query in QUERIES:
                want = pg_rows(pg, query.format(s="public"))
                for source in ("pg.public", "lake.public"):
                    got = rows_of(gateway.query(query.format(s=source)).table)
                    assert sorted(got, key=repr) == sorted(want, key=repr), (query, source, len(got), len(want))
        finally:
            gateway.close()


@pytest.mark.parametrize("reader", ["psql", "libpq"])
def test_single_column_table_through_the_text_reader(
    pg: psycopg.Connection, pg_dsn: str, lake_dir: Path, reader: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_reader(monkeypatch, reader)
    pg.execute("CREATE TABLE words (w text PRIMARY KEY)")
    pg.execute("INSERT INTO words VALUES (''), ('a'), ('b\\c'), (E'tab\\there')")
    settings = make_settings(pg_dsn, lake_dir, ["public.words"])
    with running_worker(settings):
        wait_caught_up(pg)
        table = assert_lake_equals_source(pg, settings, "public.words")
    assert table.current().num_rows == 4

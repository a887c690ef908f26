"""PostgreSQL's infinite timestamps in the lake (issue 29.6): stored as values every reader can hold
(``datetime.max`` and ``datetime.min`` + 1 µs), marked on the table, and read back by the gateway as PostgreSQL's
``infinity``; a source value equal to one of them is refused by name (tests/test_ingest_types.py)."""

import datetime

import polars as pl
import psycopg
import pytest

from lakegate.connectors.changes import INFINITY_PROPERTY
from lakegate.gateway.service import Gateway
from tests.lakecheck import assert_readers_equal_source
from tests.lakehelp import lake_table, make_settings, running_worker, use_reader, wait_caught_up

UTC = datetime.UTC
TOP, BOTTOM = datetime.datetime.max, datetime.datetime.min + datetime.timedelta(microseconds=1)
ROWS = (
    "(1, 'infinity', '-infinity', '{infinity,NULL,-infinity}', 'infinity'),"
    "(2, '-infinity', 'infinity', '{}', '2024-01-01'),"
    "(3, '2024-05-01 12:00', '2024-05-01 12:00+02', '{\"2020-01-01 00:00+00\"}', NULL),"
    "(4, NULL, NULL, NULL, NULL)"
)


@pytest.mark.parametrize("phase", ["snapshot", "snapshot-psql", "stream"])
def test_infinite_timestamps_are_read_by_every_reader(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, phase: str, monkeypatch
) -> None:
    if phase.startswith("snapshot-"):
        use_reader(monkeypatch, phase.split("-")[1])
    pg.execute(
        "CREATE TABLE inf (id int PRIMARY KEY, ts timestamp, tz timestamptz, tza timestamptz[], d date)"
    )
    settings = make_settings(pg_dsn, lake_dir, ["public.inf"])
    if phase.startswith("snapshot"):
        pg.execute("INSERT INTO inf VALUES " + ROWS)
    with running_worker(settings):
        wait_caught_up(pg)
        if phase == "stream":
            pg.execute("INSERT INTO inf VALUES " + ROWS)
            wait_caught_up(pg)
    gateway = Gateway(settings.lake, settings.sources, settings.gateway)
    try:
        assert_readers_equal_source(pg, settings, "public.inf", gateway=gateway)
        state = lake_table(settings, "public.inf").state
        assert state is not None
        arrow = state.scan(selected_fields=("id", "ts", "tz", "tza")).to_arrow().sort_by("id")
        # pyarrow's as_py(), pandas and polars read every value (DuckDB's infinities made each of them raise)
        rows = arrow.to_pylist()
        assert rows[0] == {
            "id": 1,
            "ts": TOP,
            "tz": BOTTOM.replace(tzinfo=UTC),
            "tza": [TOP.replace(tzinfo=UTC), None, BOTTOM.replace(tzinfo=UTC)],
        }
        assert rows[1]["ts"] == BOTTOM and rows[1]["tz"] == TOP.replace(tzinfo=UTC)
        frame = arrow.to_pandas()
        assert (
            str(frame["ts"][0]) == "9999-12-31 23:59:59.999999"
            and str(frame["ts"][1]) == "0001-01-01 00:00:00.000001"
        )
        polars = pl.from_arrow(arrow)
        assert isinstance(polars, pl.DataFrame)
        assert polars.to_dicts()[0]["ts"] == TOP and str(polars) != ""
        # the marks: exactly the timestamp columns that hold an infinity (the list's element field)
        schema = state.schema()
        marked = {
            int(k[len(INFINITY_PROPERTY) :]) for k in state.properties if k.startswith(INFINITY_PROPERTY)
        }
        element = schema.find_field("tza.element").field_id
        assert marked == {schema.find_field("ts").field_id, schema.find_field("tz").field_id, element}
        # the gateway answers as PostgreSQL: the infinities, their order and comparisons
        query = (
            "SELECT id, ts::text AS ts, tz::text AS tz, tza[1]::text AS tza, tza[3] = '-infinity' AS last, "
            "ts > '2030-01-01' AS later, tz = '-infinity' AS bottom FROM {}inf ORDER BY ts NULLS FIRST, id"
        )
        lake = gateway.query(query.format("lake.public.")).table.to_pylist()
        pg.execute("SET TimeZone = 'UTC'")
        want = [
            dict(zip(("id", "ts", "tz", "tza", "last", "later", "bottom"), r, strict=True))
            for r in pg.execute(query.format("")).fetchall()
        ]
        assert lake == want
        assert [r["ts"] for r in lake] == [None, "-infinity", "2024-05-01 12:00:00", "infinity"]
    finally:
        gateway.close()

"""Unit tests of the gateway's pure parts: parsing, the guard, row caps, encoders, naming, the watchdog, and the
import arrows (connectors know nothing of the gateway)."""

from __future__ import annotations

import datetime
import json
import threading
import time
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import sqlglot

from lakegate.connectors.config import LakeSettings
from lakegate.connectors.iceberg import cut
from lakegate.gateway import encoders, lakecut
from lakegate.gateway.errors import Forbidden, SqlSyntaxError, UnsupportedQuery
from lakegate.gateway.execute import Watchdog, unique_names
from lakegate.gateway.guard import Guard
from lakegate.gateway.lake import Lake
from lakegate.gateway.parse import DESCRIBE, EXPLAIN, QUERY, SHOW, parse
from lakegate.gateway.route import _name_like_postgres, cap_rows

ROOT = Path(__file__).resolve().parent.parent
GUARD = Guard(
    frozenset(
        {"lower", "upper", "sum", "count", "range", "generate_series", "read_csv", "glob", "current_setting"}
    )
)


def test_parse_kinds_and_comments() -> None:
    assert parse("/* redash: query 1 */ SELECT 1;").kind == QUERY
    assert parse("-- hi\nEXPLAIN SELECT * FROM t").kind == EXPLAIN
    show = parse("SHOW TABLES FROM pg.public")
    assert (show.kind, show.show, show.show_in) == (SHOW, "tables", ["pg", "public"])
    assert parse("DESCRIBE lake.public.t").kind == DESCRIBE
    with pytest.raises(UnsupportedQuery):
        parse("SHOW server_version")
    with pytest.raises(UnsupportedQuery):
        parse("EXPLAIN ANALYZE SELECT 1")


def test_syntax_errors_carry_line_and_column() -> None:
    with pytest.raises(SqlSyntaxError) as caught:
        parse("SELECT a,\n  b FROM t WHERE (")
    assert caught.value.line == 2 and caught.value.column is not None
    for empty in ("", "   ", "/* nothing */", ";"):
        with pytest.raises(SqlSyntaxError):
            parse(empty)


def test_one_statement_only() -> None:
    with pytest.raises(Forbidden, match="one statement"):
        parse("SELECT 1; SELECT 2")
    assert parse("SELECT ';' AS semicolon; ").kind == QUERY


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT lower(name), sum(x) FROM t",
        "WITH a AS (SELECT 1 AS x) SELECT * FROM a UNION ALL SELECT 2",
        "SELECT * FROM generate_series(1, 3) g",
        "SELECT * FROM range(10) r",
        "SELECT CAST(x AS int), x::text, CASE WHEN x THEN 1 END, coalesce(x, 1) FROM t",
        "VALUES (1), (2)",
        "SELECT DISTINCT ON (a) a FROM t ORDER BY a",
        "SELECT to_char(now(), 'YYYY'), age(now()), date_part('year', now())",
    ],
)
def test_guard_allows_queries(sql: str) -> None:
    GUARD.check(sqlglot.parse_one(sql, read="postgres"))


@pytest.mark.parametrize(
    "sql,why",
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "read_csv"),
        ("SELECT getenv('HOME')", "getenv"),
        ("SELECT current_setting('x')", "current_setting"),
        ("SELECT pg_read_file('/etc/passwd')", "pg_read_file"),
        ("SELECT * FROM some_unknown_function(1)", "some_unknown_function"),
        ("SELECT my_udf(1)", "my_udf"),
        ("DELETE FROM t", "DELETE"),
        ("WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d", "DELETE"),
        ("SELECT * INTO t2 FROM t", "INTO"),
        ("SELECT * FROM t FOR SHARE", "FOR UPDATE"),
        ("CREATE TABLE x (a int)", "CREATE"),
    ],
)
def test_guard_refuses(sql: str, why: str) -> None:
    with pytest.raises((Forbidden, UnsupportedQuery)) as caught:
        GUARD.check(sqlglot.parse_one(sql, read="postgres"))
    assert why.lower() in caught.value.message.lower()


def test_guard_extra_functions_and_parameters() -> None:
    Guard(frozenset(), frozenset({"my_udf"})).check(sqlglot.parse_one("SELECT my_udf(1)", read="postgres"))
    with pytest.raises(UnsupportedQuery, match="parameters"):
        GUARD.check(sqlglot.parse_one("SELECT * FROM t WHERE a = $1", read="postgres"))
    with pytest.raises(Forbidden) as caught:
        GUARD.check(sqlglot.parse_one("SELECT 1,\n  read_csv('x')", read="postgres"))
    assert caught.value.line == 2


@pytest.mark.parametrize(
    "sql,cap,expected",
    [
        ("SELECT * FROM t", 10, "SELECT * FROM t LIMIT 11"),
        ("SELECT * FROM t LIMIT 5", 10, "SELECT * FROM t LIMIT 5"),
        ("SELECT * FROM t LIMIT 50", 10, "SELECT * FROM t LIMIT 11"),
        ("SELECT 1 UNION SELECT 2 ORDER BY 1", 10, "SELECT 1 UNION SELECT 2 ORDER BY 1 LIMIT 11"),
        ("VALUES (1)", 10, "VALUES (1)"),
    ],
)
def test_cap_rows(sql: str, cap: int, expected: str) -> None:
    tree = sqlglot.parse_one(sql, read="postgres")
    cap_rows(tree, cap)
    assert tree.sql(dialect="postgres") == expected


def test_postgres_column_names_on_duckdb() -> None:
    tree = sqlglot.parse_one("SELECT count(*), sum(x), x, 1 + 1, x::int, y AS z FROM t", read="postgres")
    _name_like_postgres(tree)
    names = [e.alias_or_name for e in tree.expressions]
    assert names == ["count", "sum", "x", "?column?", "x", "z"]
    assert unique_names(pa.schema([("a", pa.int8()), ("a", pa.int8()), ("b", pa.int8())])).names == [
        "a",
        "a_2",
        "b",
    ]


def _encode(fmt: str, table: pa.Table) -> bytes:
    encoder = encoders.encoder(fmt)
    body = encoder.header(table.schema) + b"".join(
        encoder.batch(b) for b in table.to_batches(max_chunksize=2)
    )
    return body + encoder.footer({"truncated": False, "elapsed_ms": 1.0, "route": "duckdb"})


def test_json_encoding_is_exact() -> None:
    utc = datetime.UTC
    table = pa.table(
        {
            "d": pa.array(
                [Decimal("12345678901234567890.123456789"), None, Decimal("-0.000000001")],
                pa.decimal128(38, 9),
            ),
            "f": [0.1, float("nan"), float("-inf")],
            "s": ['quote " and \\ and \n', None, "ünï ✓"],
            "t": pa.array(
                [
                    datetime.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=utc),
                    None,
                    datetime.datetime(1970, 1, 1, tzinfo=utc),
                ],
                pa.timestamp("us", tz="UTC"),
            ),
            "n": pa.array([datetime.datetime(2024, 5, 1), None, None], pa.timestamp("us")),
            "day": pa.array([datetime.date(2024, 2, 29), None, datetime.date(1, 1, 1)]),
            "b": [b"\x00\x01", None, b""],
            "l": [[1, None], None, []],
            "ok": [True, None, False],
        }
    )
    body = json.loads(_encode("json", table), parse_float=Decimal)
    assert [c["type"] for c in body["columns"]] == [
        "float",
        "float",
        "string",
        "datetime",
        "datetime",
        "date",
        "string",
        "string",
        "boolean",
    ]
    first, second, third = body["rows"]
    assert first["d"] == Decimal("12345678901234567890.123456789") and third["d"] == Decimal("-0.000000001")
    assert first["f"] == Decimal("0.1") and second["f"] == "NaN" and third["f"] == "-Infinity"
    assert first["s"] == 'quote " and \\ and \n' and third["s"] == "ünï ✓"
    assert first["t"] == "2024-05-01T10:00:00.123456+00:00" and first["n"] == "2024-05-01T00:00:00.000000"
    assert first["day"] == "2024-02-29" and third["day"] == "0001-01-01"
    assert first["b"] == "\\x0001" and third["b"] == "\\x" and first["l"] == [1, None] and third["l"] == []
    assert set(second.values()) == {None, "NaN"}
    assert body["truncated"] is False and body["route"] == "duckdb"
    lines = _encode("ndjson", table).decode().splitlines()
    assert [json.loads(line, parse_float=Decimal) for line in lines] == body["rows"]


def test_csv_and_arrow_encoding() -> None:
    table = pa.table({"a": [1, None], "s": ["x,y", None], "f": [float("nan"), 1.5], "b": [b"\xff", None]})
    assert _encode("csv", table).decode().splitlines() == ["a,s,f,b", '1,"x,y","NaN","\\xff"', ',,"1.5",']
    assert pa.ipc.open_stream(_encode("arrow", table)).read_all().to_pylist()[1] == {
        "a": None,
        "s": None,
        "f": 1.5,
        "b": None,
    }


@pytest.mark.parametrize("zone", ["UTC", "Etc/UTC", None, "America/New_York", "+05:30"])
def test_iso_timestamps_write_what_strftime_writes(zone: str | None) -> None:
    """The fast path (UTC or no zone, years 1-9999) and the strftime one agree value for value: edges of the
    four-digit years, before 1970, leap days, nulls, a slice, and a batch reaching past year 9999."""
    low, high = -62_135_596_800_000_000, 253_402_300_799_999_999
    edges = [low, high, -1, 0, 1, 951_782_400_000_000, -2_208_988_800_000_000, None]
    spread = [low + (high - low) // 997 * i for i in range(997)]
    fmt = "%Y-%m-%dT%H:%M:%S%Ez" if zone else "%Y-%m-%dT%H:%M:%S"
    for micros in (edges + spread, [None, None], [], [high + 1, 0]):
        values = pa.array(micros, pa.timestamp("us", zone))
        for part in (values, values[1:]):
            try:
                want = pc.strftime(part, format=fmt)
            except pa.ArrowInvalid:  # beyond the years strftime handles: the encoders write those per value
                with pytest.raises(pa.ArrowInvalid):
                    encoders.iso_timestamps(part)
                continue
            assert encoders.iso_timestamps(part).to_pylist() == want.to_pylist()


def test_watchdog_fires_once_and_can_be_disarmed() -> None:
    dog = Watchdog()
    fired: list[str] = []
    done = threading.Event()
    dog.watch(time.monotonic() + 0.05, lambda: (fired.append("a"), done.set()))
    handle = dog.watch(time.monotonic() + 0.05, lambda: fired.append("b"))
    dog.unwatch(handle)
    assert done.wait(5)
    time.sleep(0.1)
    dog.stop()
    assert fired == ["a"]


def test_watchdog_fires_an_earlier_deadline_and_keeps_armed_ones_among_many_disarmed() -> None:
    dog = Watchdog()
    fired: list[str] = []
    early, armed = threading.Event(), threading.Event()
    dog.watch(time.monotonic() + 60, lambda: fired.append("late"))
    dog.watch(time.monotonic() + 0.05, lambda: (fired.append("early"), early.set()))  # before the sleeping one
    assert early.wait(5)
    dog.watch(time.monotonic() + 0.3, lambda: (fired.append("armed"), armed.set()))
    for _ in range(3000):  # disarmed deadlines are dropped from the heap once they are most of it
        dog.unwatch(dog.watch(time.monotonic() + 0.2, lambda: fired.append("disarmed")))
    assert armed.wait(5)
    time.sleep(0.1)
    dog.stop()
    assert fired == ["early", "armed"]


def test_the_cut_of_each_source_is_its_newest_in_any_namespace(tmp_path: Path) -> None:
    """lakecut.cuts reads the SQL catalog's namespace properties with one compiled query: the newest cut of a
    source wherever it is recorded, other properties ignored, read afresh at every call."""
    lake = Lake(LakeSettings(catalog_uri=f"sqlite:///{tmp_path}/catalog.db", warehouse=str(tmp_path / "w")))
    catalog = lake.catalog
    for namespace in ("public", "other", "empty"):
        catalog.create_namespace(namespace)
    catalog.update_namespace_properties("public", updates={cut.PREFIX + "pg": "100", "lakegateXcut.pg": "999"})
    catalog.update_namespace_properties("other", updates={cut.PREFIX + "pg": "200", cut.PREFIX + "it's": "7"})
    assert lakecut.cuts(lake) == {"pg": 200, "it's": 7}
    catalog.update_namespace_properties("public", updates={cut.PREFIX + "pg": "300"})
    assert lakecut.cuts(lake) == {"pg": 300, "it's": 7}


@pytest.mark.parametrize("password", ["s3cr3t", "'with space'"])
def test_duckdb_connection_errors_do_not_show_the_password(password: str) -> None:
    import duckdb

    from lakegate.connectors.duckdb.engine import clean_message, load_extensions

    con = duckdb.connect()
    load_extensions(con, ("postgres",))
    dsn = f"host=127.0.0.1 port=1 user=x password={password} dbname=y"
    with pytest.raises(duckdb.Error) as info:
        con.execute(f"ATTACH '{dsn.replace(chr(39), chr(39) * 2)}' AS s (TYPE postgres)")
    assert password.strip("'") in str(info.value)  # DuckDB quotes the connection string whole
    message = clean_message(str(info.value))
    assert password.strip("'").split()[0] not in message and "password" not in message
    assert "user=x" not in message and "dbname=y" not in message  # the connection string is not repeated
    assert "Unable to connect to Postgres:" in message and '"127.0.0.1", port 1' in message  # what went wrong stays

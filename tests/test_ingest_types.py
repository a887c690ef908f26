"""Every supported type survives snapshot and stream exactly, edge values included."""

import psycopg
import pytest

from lakegate.ingest.worker import Worker
from tests.lakehelp import (
    assert_lake_equals_source,
    lake_table,
    make_settings,
    running_worker,
    use_reader,
    wait_caught_up,
)

TYPES_DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN positive_amount AS numeric(10,3) CHECK (VALUE > 0);
CREATE TABLE all_types (
    id bigint PRIMARY KEY,
    i2 smallint, i4 integer, i8 bigint,
    n numeric(38,6), n_wide numeric(50,10), n_free numeric, money_ish numeric(12,2),
    r real, d double precision,
    b boolean,
    t text, vc varchar(20), c char(5),
    dt date, tm time, ts timestamp, tstz timestamptz,
    u uuid, by bytea, j json, jb jsonb,
    ia int[], ta text[], ia2 int[][], na numeric(10,2)[], tsa timestamptz[],
    e mood, dom positive_amount, iv interval
)
"""

ROWS = [
    # all NULL except the key
    "(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)",
    # extremes
    "(2, -32768, -2147483648, -9223372036854775808, 12345678901234567890123456789012.123456, "
    "1234567890123456789012345678901234567890.0123456789, 3.14159265358979323846264338327950288419716939937510, "
    "-0.01, 'NaN', 'Infinity', true, '', '', '', '0001-01-01', '00:00:00', '1900-01-01 00:00:00', "
    "'1969-12-31 23:59:59.999999+00', '00000000-0000-0000-0000-000000000000', '\\x00', '{}', '{}', "
    "'{}', '{}', '{}', '{}', '{}', 'sad', 0.001, '0 seconds')",
    "(3, 32767, 2147483647, 9223372036854775807, -99999999999999999999999999999999.999999, NULL, 1e-30, "
    "9999999999.99, '-Infinity', '-Infinity', false, 'unicode: żółw 🐢 日本語 \\ backslash \"quote\" ''single''', "
    "'tab\there', 'ab', '2024-02-29', '23:59:59.999999', '2038-01-19 03:14:08.5', '1900-06-01 12:00:00+05:30', "
    "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x00ff00deadbeef00', '{\"a\": [1, 2.50, null]}', "
    '\'{"b": {"c": "ż"}, "a": 1}\', \'{1,NULL,3}\', \'{"a,b",NULL,"","q\\"x","NULL"}\', '
    "'{{1,2},{3,4}}', '{1.50,NULL,-2.25}', '{\"2020-01-01 00:00:00+00\",\"1960-05-05 05:05:05.5-08\"}', "
    "'happy', 12345.678, '1 year 2 months 3 days 04:05:06.5')",
    "(4, 0, 0, 0, 0, 0, 0, 0, 1.17549435e-38, 2.2250738585072014e-308, NULL, 'line1\nline2\r\n', NULL, NULL, "
    "'1970-01-01', '12:00', 'infinity', '-infinity', NULL, '\\x', 'null', '[]', '{NULL}', '{}', '{}', '{}', NULL, "
    "'ok', NULL, '-1 day')",
    "(5, 1, 1, 1, 0.000001, -0.0000000001, -123456789012345678901234567890.123456789, 0.5, -0.0, 'NaN', true, "
    "repeat('x', 10000), 'x', 'abcde', '0044-03-15 BC', '01:02:03', '0001-01-01 00:00:00 BC', "
    "'2262-04-11 23:47:16.854775+00', 'ffffffff-ffff-ffff-ffff-ffffffffffff', decode(repeat('00', 5000), 'hex'), "
    "'\"str\"', '1.0', '{-2147483648,2147483647}', '{\"\"}', '{{NULL,1}}', '{0}', '{infinity}', 'sad', 1, 'P1Y')",
]


@pytest.mark.parametrize("phase", ["snapshot", "snapshot-psql", "snapshot-libpq", "stream"])
def test_type_round_trip(pg: psycopg.Connection, pg_dsn: str, lake_dir, phase: str, monkeypatch) -> None:
    if phase.startswith("snapshot-"):
        use_reader(monkeypatch, phase.split("-")[1])
    pg.execute(TYPES_DDL)
    settings = make_settings(pg_dsn, lake_dir, ["public.all_types"])
    if phase.startswith("snapshot"):
        pg.execute("INSERT INTO all_types VALUES " + ", ".join(ROWS))
    with running_worker(settings):
        wait_caught_up(pg)
        if phase == "stream":
            for row in ROWS:
                pg.execute("INSERT INTO all_types VALUES " + row)
            pg.execute("UPDATE all_types SET t = t || '!', ia = ia || 9 WHERE id IN (3, 5)")
            wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.all_types")
    schema = {f.name: str(f.field_type) for f in table.state.schema().fields}
    assert schema["n"] == "decimal(38, 6)" and schema["money_ish"] == "decimal(12, 2)"
    assert schema["n_wide"] == "string" and schema["n_free"] == "string"
    assert schema["r"] == "float" and schema["d"] == "double" and schema["i2"] == "int"
    assert schema["tstz"] == "timestamptz" and schema["ts"] == "timestamp" and schema["u"] == "uuid"
    assert schema["ia2"] == "list<list<int>>" and schema["dom"] == "decimal(10, 3)"
    assert table.state.schema().identifier_field_names() == {"id"}


def test_unsupported_type_is_refused_with_table_column_and_type(
    pg: psycopg.Connection, pg_dsn: str, lake_dir
) -> None:
    from lakegate.connectors.errors import SourceConfigError

    pg.execute("CREATE TABLE shapes (id int PRIMARY KEY, area point)")
    settings = make_settings(pg_dsn, lake_dir, ["public.shapes"])
    with pytest.raises(SourceConfigError, match=r"public\.shapes.*'area'.*point"):
        Worker(settings.lake, settings.sources[0], settings.ingest).run()


@pytest.mark.parametrize("reader", ["duckdb", "psql", "libpq"])
@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("numeric(10,3)", "'NaN'", r"value 'NaN' cannot be stored as decimal\(10,3\)"),
        ("timestamp", "'294276-12-31 23:59:59'", "after 294247 AD"),
        ("timestamptz", "'294270-01-01 00:00:00+00'", "after 294247 AD"),
        ("timestamp", "'9999-12-31 23:59:59.999999'", "stores PostgreSQL's infinity as 9999-12-31 23:59:59.999999"),
        ("timestamptz", "'0001-01-01 00:00:00.000001+00'", "and -infinity as 0001-01-01 00:00:00.000001"),
        ("timestamp[]", "'{infinity,\"0001-01-01 00:00:00.000001\"}'", "change the value by a microsecond"),
    ],
)
def test_a_value_the_lake_cannot_hold_stops_the_snapshot_naming_table_column_and_value(
    pg: psycopg.Connection,
    pg_dsn: str,
    lake_dir,
    monkeypatch,
    reader: str,
    column: str,
    value: str,
    message: str,
) -> None:
    """Every reader refuses the same values with the same explanation (none stores something else instead:
    DuckDB alone would read the NaN as 0 and wrap the timestamp around)."""
    from lakegate.connectors.postgres.types import ConversionError

    use_reader(monkeypatch, reader)
    pg.execute(f"CREATE TABLE odd (id int PRIMARY KEY, v {column})")
    pg.execute(f"INSERT INTO odd VALUES (1, NULL), (2, {value})")
    settings = make_settings(pg_dsn, lake_dir, ["public.odd"])
    with pytest.raises(ConversionError, match=rf"table public\.odd, column 'v': .*{message}"):
        Worker(settings.lake, settings.sources[0], settings.ingest).run()


@pytest.mark.parametrize("reader", ["duckdb", "psql"])
def test_text_of_types_whose_cast_to_text_is_not_their_output(
    pg: psycopg.Connection, pg_dsn: str, lake_dir, monkeypatch, reader: str
) -> None:
    """char(n) keeps its padding, inet/cidr their short form, "char" and name their text, boolean arrays t/f, and a
    domain over char(n) its padding: the lake holds what COPY's text format shows, whichever reader copies."""
    use_reader(monkeypatch, reader)
    pg.execute("CREATE DOMAIN code AS char(4)")
    pg.execute(
        'CREATE TABLE texts (id int PRIMARY KEY, c char(6), ip inet, net cidr, ch "char", nm name, ba bool[], '
        "dc code, ca char(3)[])"
    )
    pg.execute(
        "INSERT INTO texts VALUES (1, 'ab', '10.0.0.1', '10.0.0.0/8', 'x', 'a name', '{t,f,NULL}', 'z', '{a,bb}'), "
        "(2, NULL, '::1', '2001:db8::/32', NULL, NULL, '{}', NULL, NULL), "
        "(3, '', '192.168.1.5/24', '192.168.1.0/24', 'y', '', NULL, '', '{\"\"}')"
    )
    settings = make_settings(pg_dsn, lake_dir, ["public.texts"])
    with running_worker(settings):
        wait_caught_up(pg)
    table = assert_lake_equals_source(pg, settings, "public.texts")
    rows = {r["id"]: r for r in table.state.scan().to_arrow().to_pylist()}
    assert rows[1]["c"] == "ab    " and rows[1]["ip"] == "10.0.0.1" and rows[1]["dc"] == "z   "
    assert rows[1]["ba"] == [True, False, None] and rows[3]["ip"] == "192.168.1.5/24"


ARRAYS_DDL = """
CREATE TYPE hue AS ENUM ('red', 'green');
CREATE DOMAIN small AS int CHECK (VALUE < 1000);
CREATE TABLE arrays (
    id int PRIMARY KEY,
    ba bool[], i2a smallint[], i8a bigint[], oa oid[], ra real[], da double precision[], na numeric(8,3)[],
    nfa numeric[], dta date[], tma time[], tsa timestamp[], tza timestamptz[], ua uuid[], bya bytea[],
    ja json[], jba jsonb[], iva interval[], ipa inet[], ea hue[], doma small[], ca char(2)[], vca varchar(5)[]
)
"""

ARRAY_ROWS = [
    "(1, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, "
    "NULL, NULL, NULL, NULL, NULL)",
    "(2, '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', '{}', "
    "'{}', '{}', '{}', '{}', '{}')",
    "(3, '{true,NULL,false}', '{-32768,32767}', '{-9223372036854775808,NULL}', '{0,4294967295}', "
    "'{1.5,NaN,-Infinity,NULL}', '{1e-300,Infinity}', '{12345.678,-0.001,NULL}', '{1.5,NaN,123456789.0123456789}', "
    "'{2024-02-29,0044-03-15 BC,infinity}', '{00:00:00,23:59:59.999999,NULL}', "
    "'{\"1900-01-01 00:00:00\",-infinity}', '{\"1969-12-31 23:59:59.999999+00\",\"2020-06-01 12:00:00+05:30\"}', "
    "'{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11,NULL,00000000-0000-0000-0000-000000000000}', "
    "ARRAY['\\x00ff'::bytea, NULL, '\\x'], ARRAY['{\"a\": 1}'::json, NULL], ARRAY['[1, 2]'::jsonb, '{}'], "
    "'{\"1 day 02:00:00\",\"-1 year\"}', '{10.0.0.1,::1/128,NULL}', '{red,NULL,green}', '{1,999}', "
    "'{a,\"b \"}', '{\"x,y\",\"\"}')",
]


@pytest.mark.parametrize("phase", ["snapshot", "snapshot-psql", "stream"])
def test_arrays_of_every_scalar_type(pg: psycopg.Connection, pg_dsn: str, lake_dir, phase: str, monkeypatch) -> None:
    from tests.lakecheck import assert_readers_equal_source

    if phase.startswith("snapshot-"):
        use_reader(monkeypatch, phase.split("-")[1])
    pg.execute(ARRAYS_DDL)
    settings = make_settings(pg_dsn, lake_dir, ["public.arrays"])
    if phase.startswith("snapshot"):
        pg.execute("INSERT INTO arrays VALUES " + ", ".join(ARRAY_ROWS))
    with running_worker(settings):
        wait_caught_up(pg)
        if phase == "stream":
            for row in ARRAY_ROWS:
                pg.execute("INSERT INTO arrays VALUES " + row)
            pg.execute("UPDATE arrays SET ua = ua || 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid WHERE id = 3")
            wait_caught_up(pg)
    assert_readers_equal_source(pg, settings, "public.arrays")
    schema = {f.name: str(f.field_type) for f in lake_table(settings, "public.arrays").state.schema().fields}
    assert schema["ua"] == "list<uuid>" and schema["bya"] == "list<binary>" and schema["na"] == "list<decimal(8, 3)>"

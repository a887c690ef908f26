"""The Python client against a real gateway (``lakegate serve`` in a subprocess) over a real lake and
PostgreSQL:
PEP 249 behaviour, type codes, exceptions with the gateway's code and position, client-side parameters that
round-trip hostile strings on both routes, exact Arrow/pandas types, ``pandas.read_sql``, cancellation."""

from __future__ import annotations

import datetime
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from decimal import Decimal

import pandas as pd
import psycopg
import pyarrow as pa
import pytest

import lakegate
from lakegate.gateway import client
from tests.clienthelp import ROOT, Env, client_env, free_port


@pytest.fixture(scope="session")
def env(request: pytest.FixtureRequest, pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Env:
    return client_env(request, pg_server, tmp_path_factory)


@pytest.fixture
def conn(env: Env) -> client.Connection:
    with lakegate.connect(env.url, token=env.token) as connection:
        yield connection  # type: ignore[misc]


def test_module_surface_follows_pep_249() -> None:
    assert (lakegate.apilevel, lakegate.threadsafety, lakegate.paramstyle) == ("2.0", 2, "pyformat")
    for name in (
        "Warning",
        "Error",
        "InterfaceError",
        "DatabaseError",
        "DataError",
        "OperationalError",
        "IntegrityError",
        "InternalError",
        "ProgrammingError",
        "NotSupportedError",
    ):
        assert issubclass(getattr(lakegate, name), Exception)
    assert issubclass(lakegate.ProgrammingError, lakegate.DatabaseError)
    assert issubclass(lakegate.DatabaseError, lakegate.Error) and issubclass(
        lakegate.InterfaceError, lakegate.Error
    )
    assert not issubclass(lakegate.Warning, lakegate.Error)
    assert lakegate.Date(2024, 1, 2) == datetime.date(2024, 1, 2)
    assert isinstance(lakegate.TimestampFromTicks(0), datetime.datetime)
    with pytest.raises(AttributeError):
        lakegate.nothing_like_this  # noqa: B018


def test_import_stays_light() -> None:
    """The client and the CLI import neither DuckDB nor pyiceberg nor the gateway's server side."""
    code = (
        "import sys, lakegate; assert 'httpx' not in sys.modules and 'pyarrow' not in sys.modules;"
        "import lakegate.gateway.client, lakegate.gateway.cli;"
        "heavy = sorted(m for m in ('duckdb', 'pyiceberg', 'sqlglot', 'fastapi', 'uvicorn', 'psycopg',"
        " 'pandas',"
        " 'lakegate.gateway.service', 'lakegate.gateway.http') if m in sys.modules); print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_cursor_fetching(conn: client.Connection) -> None:
    cur = conn.cursor()
    assert cur.description is None and cur.rowcount == -1
    with pytest.raises(lakegate.ProgrammingError, match="no statement"):
        cur.fetchone()
    cur.execute("SELECT id, email FROM lake.public.users ORDER BY id")
    assert [d[0] for d in cur.description] == ["id", "email"] and cur.rowcount == 5
    assert cur.route == "duckdb" and cur.truncated is False
    assert cur.fetchone() == (1, "ada@example.com")
    cur.arraysize = 2
    assert [r[0] for r in cur.fetchmany()] == [2, 3]
    assert [r[0] for r in cur.fetchall()] == [4, 5]
    assert cur.fetchone() is None and cur.fetchall() == [] and cur.rownumber == 5
    assert [r[0] for r in cur.execute("SELECT id FROM pg.public.users ORDER BY id")] == [1, 2, 3, 4, 5]
    assert cur.route == "postgres"
    cur.execute("SELECT * FROM lake.public.users WHERE id < 0")
    assert cur.fetchall() == [] and cur.rowcount == 0 and len(cur.description) == 8
    cur.close()
    with pytest.raises(lakegate.InterfaceError, match="closed"):
        cur.execute("SELECT 1")
    conn.commit()
    conn.rollback()


def test_description_type_codes(conn: client.Connection) -> None:
    cur = conn.cursor()
    cur.execute("SELECT id, amount, ratio, label, at, day, raw, flag, u FROM pg.public.vals")
    codes = {d[0]: d[1] for d in cur.description}
    assert (
        codes["amount"] == lakegate.NUMBER
        and codes["id"] == lakegate.NUMBER
        and codes["ratio"] == lakegate.NUMBER
    )
    assert codes["at"] == lakegate.DATETIME and codes["day"] == lakegate.DATETIME
    assert (
        codes["raw"] == lakegate.BINARY
        and codes["label"] == lakegate.STRING
        and codes["u"] == lakegate.STRING
    )
    assert (
        codes["label"] != lakegate.NUMBER
        and codes["amount"] != lakegate.STRING
        and codes["id"] != lakegate.ROWID
    )
    amount = next(d for d in cur.description if d[0] == "amount")
    assert (amount[1], amount[4], amount[5]) == ("decimal128(30, 8)", 30, 8)
    assert str(codes["at"]).startswith("timestamp[us, tz=") and codes["day"] == "date32[day]"


def test_values_keep_their_exact_types_on_both_routes(conn: client.Connection) -> None:
    for table in ("pg.public.vals", "lake.public.vals"):
        rows = (
            conn.cursor()
            .execute(f"SELECT id, amount, ratio, label, at, day, raw, flag, u FROM {table} ORDER BY id")
            .fetchall()
        )
        first, second, third = rows
        assert first[1] == Decimal("12345678901234567890.12345678") and isinstance(first[1], Decimal)
        assert first[4] == datetime.datetime(2024, 5, 1, 10, 0, 0, 123456, tzinfo=datetime.UTC)
        assert first[4].utcoffset() == datetime.timedelta(0) and first[5] == datetime.date(2024, 5, 1)
        assert first[6] == b"\x00\xff\x10" and first[7] is True
        assert str(first[8]) == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
        assert second[1] == Decimal("-0.00000001") and second[2] != second[2]  # NaN
        assert second[3] == "quote ' \" backslash \\ newline\n tab\tend"
        assert third[2] == float("inf") and third[1:2] + third[3:] == (None,) * 7


@pytest.mark.parametrize("table", ["pg.public.users", "lake.public.users"])
def test_parameters_round_trip_on_both_routes(conn: client.Connection, table: str) -> None:
    hostile = [
        "it's",
        "back\\slash",
        "\\'; DROP TABLE users; --",
        "%s %(x)s %%",
        "$$dollar$$",
        "/* c */",
        "ünï ✓",
        "",
    ]
    cur = conn.cursor()
    for value in hostile:
        cur.execute(f"SELECT %s AS v, count(*) AS n FROM {table} WHERE email <> %s", (value, value))
        assert cur.fetchall() == [(value, 5)], value
    when = datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC)
    params = {
        "i": -7,
        "d": Decimal("-12.50"),
        "f": 0.1,
        "b": True,
        "n": None,
        "t": when,
        "day": datetime.date(2024, 2, 29),
        "u": uuid.UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
        "ids": (1, 3),
    }
    cur.execute(
        f"SELECT 10 - %(i)s AS i, %(d)s AS d, %(f)s AS f, %(b)s AS b, %(n)s AS n, %(t)s AS t, "
        "%(day)s AS day, "
        f"CAST(%(u)s AS text) AS u, (SELECT count(*) FROM {table} WHERE id IN %(ids)s) AS c, '100%%' AS p",
        params,
    )
    row = cur.fetchone()
    assert row[:5] == (17, Decimal("-12.50"), 0.1, True, None)
    assert row[5] == when and row[6] == datetime.date(2024, 2, 29) and row[7] == str(params["u"])
    assert row[8] == 2 and row[9] == "100%"
    cur.execute(f"SELECT count(*) FROM {table} WHERE email LIKE '%%example%%' AND id > %s", [0])
    assert cur.fetchone() == (5,)
    cur.execute(f"SELECT count(*) FROM {table} WHERE email LIKE '%example%'")  # no parameters: SQL as it is
    assert cur.fetchone() == (5,)


def test_parameter_errors(conn: client.Connection) -> None:
    cur = conn.cursor()
    with pytest.raises(lakegate.ProgrammingError, match="2 parameter"):
        cur.execute("SELECT %s", (1, 2))
    with pytest.raises(lakegate.ProgrammingError, match="more %s placeholders"):
        cur.execute("SELECT %s, %s", (1,))
    with pytest.raises(lakegate.ProgrammingError, match="no parameter named 'y'"):
        cur.execute("SELECT %(y)s", {"x": 1})
    with pytest.raises(lakegate.ProgrammingError, match="unsupported placeholder"):
        cur.execute("SELECT %d", (1,))
    with pytest.raises(lakegate.NotSupportedError, match="bytes"):
        cur.execute("SELECT %s", (b"x",))
    with pytest.raises(lakegate.NotSupportedError, match="NUL"):
        cur.execute("SELECT %s", ("a\x00b",))


def test_errors_carry_code_message_and_position(conn: client.Connection) -> None:
    cur = conn.cursor()
    with pytest.raises(lakegate.ProgrammingError) as syntax:
        cur.execute("SELECT *\nFROM pg.public.users WHERE")
    assert (syntax.value.code, syntax.value.line, syntax.value.column, syntax.value.status) == (
        "syntax_error",
        2,
        22,  # where WHERE starts
        400,
    )
    assert "syntax error" in syntax.value.message and syntax.value.request_id
    cases = [
        ("SELECT * FROM lake.public.userz", lakegate.ProgrammingError, "not_found"),
        ("DELETE FROM pg.public.users", lakegate.ProgrammingError, "forbidden"),
        ("SELECT nosuch FROM pg.public.users", lakegate.ProgrammingError, "query_error"),
        ("SHOW FUNCTIONS", lakegate.ProgrammingError, "forbidden"),  # only the settings drivers read are shown
        ("SELECT pg_sleep(5) FROM pg.public.users LIMIT 1", lakegate.OperationalError, "timeout"),
    ]
    with lakegate.connect(
        conn.url, token=conn._http.headers["authorization"].split()[1], timeout=0.5
    ) as short:
        for sql, cls, code in cases:
            with pytest.raises(cls) as info:
                short.cursor().execute(sql)
            assert info.value.code == code, (sql, info.value)
    assert "did you mean" in str(
        pytest.raises(lakegate.Error, conn.cursor().execute, "SELECT * FROM lake.public.userz").value
    )


def test_errors_carry_sqlstate(conn: client.Connection) -> None:
    """SQLSTATE as PostgreSQL would report the same failure, for code that branches on it."""
    cases = {
        "SELECT * FROM": "42601",  # syntax_error
        "SELECT * FROM lake.public.userz": "42P01",  # undefined_table
        "DELETE FROM pg.public.users": "42501",  # insufficient_privilege
        "SHOW FUNCTIONS": "42501",  # insufficient_privilege: only the settings drivers read are shown
    }
    for sql, sqlstate in cases.items():
        with pytest.raises(lakegate.DatabaseError) as info:
            conn.cursor().execute(sql)
        assert info.value.sqlstate == sqlstate, (sql, info.value.code, info.value.message)
    with lakegate.connect(conn.url, token="wrong") as bad, pytest.raises(lakegate.OperationalError) as refused:
        bad.cursor().execute("SELECT 1")
    assert refused.value.sqlstate == "28000"


def test_connection_failures_are_operational(env: Env) -> None:
    with lakegate.connect(env.url, token="wrong") as bad, pytest.raises(lakegate.OperationalError) as info:
        bad.cursor().execute("SELECT 1")
    assert (info.value.code, info.value.status) == ("unauthorized", 401)
    with (
        lakegate.connect(f"http://127.0.0.1:{free_port()}") as nowhere,
        pytest.raises(lakegate.OperationalError) as gone,
    ):
        nowhere.cursor().execute("SELECT 1")
    assert "cannot reach the lakegate gateway" in gone.value.message and gone.value.code is None
    with pytest.raises(lakegate.InterfaceError, match="http"):
        lakegate.connect("localhost:8080")
    os.environ["LAKEGATE_TOKEN"] = env.token
    try:
        with lakegate.connect(env.url) as from_env:
            assert from_env.cursor().execute("SELECT 1 AS x").fetchall() == [(1,)]
    finally:
        del os.environ["LAKEGATE_TOKEN"]


def test_to_arrow_and_to_pandas_keep_exact_types(conn: client.Connection) -> None:
    result = conn.query("SELECT id, amount, at, day, label FROM lake.public.vals ORDER BY id")
    table = result.to_arrow()
    assert (
        table.schema.field("amount").type == pa.decimal128(30, 8)
        and table.schema.field("day").type == pa.date32()
    )
    assert (
        pa.types.is_timestamp(table.schema.field("at").type) and table.schema.field("at").type.tz is not None
    )
    assert result.route == "duckdb" and result.truncated is False and len(result) == 3
    frame = result.to_pandas()
    assert frame["amount"].iloc[0] == Decimal("12345678901234567890.12345678")
    assert isinstance(frame["amount"].iloc[1], Decimal) and frame["amount"].iloc[1] == Decimal("-0.00000001")
    assert str(frame["at"].dtype).startswith("datetime64[") and frame["at"].dt.tz is not None
    assert frame["at"].iloc[0] == pd.Timestamp("2024-05-01 10:00:00.123456", tz="UTC")
    assert frame["day"].iloc[0] == datetime.date(2024, 5, 1)
    arrow_frame = result.to_pandas(arrow_dtypes=True)
    assert str(arrow_frame["amount"].dtype) == "decimal128(30, 8)[pyarrow]"
    assert str(arrow_frame["day"].dtype) == "date32[day][pyarrow]"


def test_pandas_read_sql(conn: client.Connection) -> None:
    with pytest.warns(UserWarning, match="SQLAlchemy"):  # pandas' note for any DBAPI2 object but sqlite3
        frame = pd.read_sql(
            "SELECT id, user_id, amount, created_at FROM lake.public.transactions ORDER BY id", conn
        )
    assert list(frame.columns) == ["id", "user_id", "amount", "created_at"] and list(frame["id"]) == [
        2,
        3,
        4,
        5,
        6,
    ]
    assert frame["amount"].iloc[2] == 14999.99 and frame["created_at"].dt.tz is not None  # coerce_float=True
    with pytest.warns(UserWarning):
        exact = pd.read_sql(
            "SELECT amount FROM lake.public.transactions ORDER BY id", conn, coerce_float=False
        )
    assert exact["amount"].iloc[2] == Decimal("14999.99") and isinstance(exact["amount"].iloc[2], Decimal)
    with pytest.warns(UserWarning):
        frame = pd.read_sql(
            "SELECT id FROM pg.public.users WHERE country = %(c)s ORDER BY id", conn, params={"c": "US"}
        )
    assert list(frame["id"]) == [2, 4]
    with (
        pytest.warns(UserWarning),
        pytest.raises(lakegate.ProgrammingError, match="did you mean lake.public.users"),
    ):
        pd.read_sql("SELECT * FROM lake.public.userz", conn)  # pandas 3 lets the driver's own error through


def test_row_cap_is_reported(env: Env) -> None:
    """A cut result is never silent: a lakegate.Warning (PEP 249's word for a truncation), or an error."""
    sql = "SELECT id FROM pg.public.users ORDER BY id"
    with lakegate.connect(env.url, token=env.token, max_rows=2) as capped:
        cur = capped.cursor().execute("SELECT 1 AS one")
        assert cur.fetchall() == [(1,)] and cur.truncated is False  # no warning (warnings are errors here)
        with pytest.warns(lakegate.Warning, match=r"row cap of 2 rows: rows are missing; add a LIMIT") as seen:
            cur = capped.cursor().execute(sql)
            assert cur.fetchall() == [(1,), (2,)] and cur.truncated is True
        assert seen[0].filename == __file__  # it points at the caller's line, not into lakegate
        with pytest.warns(lakegate.Warning):
            assert capped.query("SELECT id FROM lake.public.users ORDER BY id").truncated is True
        with pytest.warns(lakegate.Warning), pytest.warns(UserWarning, match="SQLAlchemy"):
            assert len(pd.read_sql(sql, capped)) == 2
    with lakegate.connect(env.url, token=env.token, max_rows=2, on_truncate="error") as strict:
        with pytest.raises(lakegate.DataError, match="more rows than the gateway's row cap of 2") as info:
            strict.cursor().execute(sql).fetchall()
        assert (info.value.code, info.value.sqlstate) == ("truncated", "54000")
        assert strict.cursor().execute(sql + " LIMIT 2").fetchall() == [(1,), (2,)]
    with pytest.raises(lakegate.InterfaceError, match="on_truncate"):
        lakegate.connect(env.url, on_truncate="ignore")  # type: ignore[arg-type]


def test_streaming_fetchmany_reads_large_results_in_batches(conn: client.Connection) -> None:
    cur = conn.cursor().execute("SELECT g AS i, 'row ' || g AS s FROM generate_series(0, 98999) g")
    total = 0
    while rows := cur.fetchmany(25000):
        assert rows[0][0] == total
        total += len(rows)
    assert total == 99000 and cur.rowcount == 99000 and cur.truncated is False
    with pytest.warns(lakegate.Warning, match="row cap of 100000 rows"):
        cur.execute("SELECT g AS i FROM generate_series(0, 149999) g")  # beyond the server's max_rows (100000)
        assert len(cur.fetchall()) == 100000 and cur.truncated is True
    # exactly the cap, streamed (10 MB): only the stream's trailer can tell that nothing was cut
    cur.execute("SELECT g AS i, repeat('x', 100) || g AS s FROM generate_series(0, 99999) g")
    assert len(cur.fetchall()) == 100000 and cur.truncated is False


def test_threads_may_share_a_connection(conn: client.Connection) -> None:
    results: list[int] = []

    def work(n: int) -> None:
        results.append(
            conn.cursor().execute("SELECT count(*) + %s FROM lake.public.transactions", (n,)).fetchone()[0]
        )

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == [5, 6, 7, 8, 9, 10]


def _sleeping(env: Env, seconds: int = 21) -> int:
    with psycopg.connect(env.dsn, autocommit=True) as pg:
        return pg.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE query ILIKE %s AND pid <> pg_backend_pid()",
            (f"%pg_sleep({seconds})%",),
        ).fetchone()[0]  # type: ignore[index]


#: a client process, as a user's Python session is: it runs the query until Ctrl-C, then says what it caught
CTRL_C_CLIENT = """
import signal, sys, lakegate
# as in a terminal session: a process started in the background by a shell without job control (a CI runner,
# nohup ... &) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler
signal.signal(signal.SIGINT, signal.default_int_handler)
conn = lakegate.connect(sys.argv[1], token=sys.argv[2])
print("connected", flush=True)
try:
    conn.cursor().execute("SELECT pg_sleep(21) FROM pg.public.users LIMIT 1")
except KeyboardInterrupt:
    print("interrupted", flush=True)
    conn.cursor().execute("SELECT 42 AS answer")  # the connection still works
    print("answered", flush=True)
"""


def test_ctrl_c_cancels_the_query_on_the_server(env: Env) -> None:
    """Ctrl-C in a client process (SIGINT to it, as a terminal sends) ends its query with KeyboardInterrupt and
    the gateway cancels the query on the server. A separate process: in this one, the kernel may hand a signal
    to any of the test's threads, and only the main thread's blocking read is interrupted."""
    proc = subprocess.Popen(
        [sys.executable, "-c", CTRL_C_CLIENT, env.url, env.token],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 30
        while not _sleeping(env) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)  # the query runs on the server
        assert _sleeping(env) == 1, "the client's query never reached the server"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()  # reaped, its pipes closed
    assert out.split() == ["connected", "interrupted", "answered"], (out, err)
    deadline = time.monotonic() + 10
    while _sleeping(env) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleeping(env) == 0, "the gateway did not cancel the query after the client went away"


def test_schema_status_and_explain(conn: client.Connection) -> None:
    names = {(s["name"], t["name"]) for s in conn.schema()["sources"] for t in s["tables"]}
    assert {("lake", "transactions"), ("pg", "users")} <= names
    assert {t["table"] for t in conn.status()["tables"]} >= {"lake.public.transactions"}
    assert conn.explain("SELECT * FROM pg.public.users")["route"] == "postgres"


def _wait_gone(env: Env, seconds: int) -> int:
    deadline = time.monotonic() + 10
    while (left := _sleeping(env, seconds)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def test_cancel_from_another_thread_cancels_the_server_query(env: Env, conn: client.Connection) -> None:
    cur = conn.cursor()
    threading.Timer(1.0, cur.cancel).start()
    started = time.monotonic()
    with pytest.raises(lakegate.OperationalError) as info:
        cur.execute("SELECT pg_sleep(22) FROM pg.public.users LIMIT 1")  # the server answers nothing yet
    assert time.monotonic() - started < 10
    assert (info.value.code, info.value.sqlstate) == ("cancelled", "57014")
    assert "canceling statement due to user request" in info.value.message
    assert _wait_gone(env, 22) == 0, "the gateway did not cancel the engine query"
    assert cur.execute("SELECT 42 AS answer").fetchall() == [(42,)]  # the cursor works again

    cur.execute("SELECT g AS i, repeat('x', 200) AS s FROM generate_series(0, 99999) g")  # rows streaming
    assert len(cur.fetchmany(10)) == 10
    cur.cancel()
    with pytest.raises(lakegate.OperationalError, match="canceling statement"):
        cur.fetchall()
    other = conn.cursor()  # another cursor of the same connection is not touched by either cancel
    assert other.execute("SELECT 1 AS one").fetchall() == [(1,)]


INFINITE = (
    "SELECT 'infinity'::timestamp AS ts, '-infinity'::timestamptz AS tz, 'infinity'::date AS d, "
    "'-infinity'::date AS d2, '2024-05-01 12:00'::timestamp AS plain"
)


@pytest.mark.parametrize("suffix", ["", " FROM pg.public.users LIMIT 1"], ids=["duckdb", "postgres"])
def test_infinite_timestamps_keep_their_column_types(conn: client.Connection, suffix: str) -> None:
    cur = conn.cursor().execute(INFINITE + suffix)
    assert all(column[1] == lakegate.DATETIME for column in cur.description)  # type: ignore[union-attr]
    utc = datetime.UTC
    assert cur.fetchall() == [
        (
            datetime.datetime.max,
            datetime.datetime.min.replace(tzinfo=utc),
            datetime.date.max,
            datetime.date.min,
            datetime.datetime(2024, 5, 1, 12, 0),
        )
    ]
    frame = conn.query(INFINITE + suffix).to_pandas()
    assert str(frame["ts"].dtype) == "datetime64[us]" and str(frame["tz"].dtype).startswith("datetime64[us, ")
    top = pd.Timestamp(2**63 - 1, unit="us")  # datetime64[us]'s largest: what +infinity is in Arrow
    assert frame["ts"].iloc[0] == top and frame["tz"].iloc[0] == pd.Timestamp(-(2**63 - 1), unit="us", tz="UTC")
    assert (frame["d"].iloc[0], frame["d2"].iloc[0]) == (datetime.date.max, datetime.date.min)
    assert frame["plain"].iloc[0] == pd.Timestamp("2024-05-01 12:00")


def test_time_24_00_is_an_error_not_midnight(conn: client.Connection) -> None:
    sql = "SELECT time '24:00' AS closes, time '23:59' AS last"
    with pytest.raises(lakegate.DataError, match=r"'closes' has the time 24:00:00") as info:
        conn.cursor().execute(sql).fetchall()
    assert info.value.sqlstate == "22000"
    result = conn.query(sql)
    with pytest.raises(lakegate.DataError, match="24:00:00"):
        result.to_pandas()
    assert result.to_arrow().column("closes").cast(pa.int64()).to_pylist() == [86_400_000_000]


def test_time_zone_of_a_connection(env: Env) -> None:
    """lakegate.connect(time_zone=...): timestamptz values come back as aware datetimes in that zone (the same
    instants), and ::date is the local date, on both routes."""
    with env.pg() as pg:
        pg.execute("SET TimeZone = 'America/New_York'")
        want = pg.execute("SELECT at, at::date FROM public.vals WHERE id = 1").fetchone()
    assert want is not None
    with lakegate.connect(env.url, token=env.token, time_zone="America/New_York") as conn:
        for table in ("pg", "lake"):
            got = conn.cursor().execute(f"SELECT at, at::date FROM {table}.public.vals WHERE id = 1").fetchone()
            assert got is not None and got == want, table
            assert got[0].utcoffset() == want[0].utcoffset() == datetime.timedelta(hours=-4), table

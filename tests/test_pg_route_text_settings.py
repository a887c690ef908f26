"""Issue 28 item 4: a PostgreSQL-route session prints values as a psql session on the same server does.

The gateway's pooled sessions once started with the ingest's settings (``IntervalStyle = iso_8601``, ``DateStyle
= ISO, YMD``, ``extra_float_digits = 3``, ``bytea_output = hex``), so ``interval::text`` in a query answered
``P1Y2M3D`` where psql shows ``1 year 2 mons 3 days``, and ``'01/02/03'::date`` read year-first. Now they keep the
server's, database's and role's defaults; the result columns the gateway itself parses (intervals, dates,
timestamps, bytea, floats) are sent to it in setting-free forms (:mod:`lakegate.connectors.postgres.textforms`).

Two databases of the test server: ``plain`` (the server's defaults) and ``odd`` (``ALTER DATABASE ... SET``
``IntervalStyle = postgres_verbose``, ``DateStyle = 'SQL, DMY'``, ``bytea_output = escape``,
``extra_float_digits = 0``). Text results are compared with a new psycopg session on the same database (its
defaults untouched); typed results (the gateway's Arrow values) with psycopg reading the same values in a session
set to ISO output (the values do not depend on the settings, only their text does).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pyarrow as pa
import pytest

from tests.answers_harness import IDENTICAL, compare, from_gateway, from_postgres, infinities
from tests.gateway_fixtures.harness import database, gateway_settings, live_server

DATA = """
CREATE TABLE t (id int PRIMARY KEY, iv interval, d date, ts timestamp, tz timestamptz, f float8, r real,
                b bytea, da date[], ta timestamptz[], ba bytea[], fa float8[], ia interval[]);
INSERT INTO t VALUES
 (1, '1 year 2 months 3 days 04:05:06.5', '2024-01-02', '2024-01-02 03:04:05.25', '2024-01-02 03:04:05+00',
  0.1, 0.1, '\\xdead00', '{2024-01-02,NULL}', '{"2024-01-02 03:04:05+00"}', '{"\\\\x00ff",NULL}',
  '{0.1,1e300,NaN}', '{"1 day","-2 mons 3 days"}'),
 (2, '-1 year -2 mons +3 days -04:05:06', '0044-03-15 BC', '0044-03-15 10:00:00 BC', '1999-12-31 23:59:59.999999+00',
  1e300, 'NaN', '', '{}', '{}', '{}', '{}', '{}'),
 (3, '0 seconds', '2000-02-29', 'infinity', '-infinity', 'NaN', '-Infinity', '\\x0a',
  '{2000-02-29,1999-01-01}', NULL, NULL, '{-0}', NULL),
 (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
"""
ODD = {
    "IntervalStyle": "postgres_verbose",
    "DateStyle": "SQL, DMY",
    "bytea_output": "escape",
    "extra_float_digits": "0",
}
#: text answers: identical to a psql-like session of the same database
TEXT = [
    "SELECT id, iv::text, d::text, ts::text, tz::text, f::text, r::text, b::text FROM {t} ORDER BY id",
    "SELECT id, da::text, ta::text, ba::text, fa::text, ia::text FROM {t} ORDER BY id",
    "SELECT '1 year 2 months 3 days'::interval::text, '01/02/03'::date::text, 0.1::float8::text, "
    "1e300::float8::text, 'NaN'::float8::text, decode('dead00', 'hex')::text FROM {t} WHERE id = 1",
    "SELECT id, to_char(d, 'YYYY-MM-DD'), iv::text || '!' FROM {t} WHERE '02/01/2024'::date > '2000-01-01' "
    "ORDER BY id",
    "SELECT id, format('%s|%s|%s', iv, d, f) FROM {t} ORDER BY id",
    "SELECT id, ia::text[] FROM {t} ORDER BY id",
]
#: typed answers: the gateway's values equal PostgreSQL's
TYPED = [
    "SELECT id, iv, d, ts, tz, f, r, b FROM {t} WHERE id <> 2 ORDER BY id",  # Python has no BC dates
    "SELECT id, iv, tz, f, r, b FROM {t} ORDER BY id",
    "SELECT id, da, ta, ba, fa FROM {t} ORDER BY id",
    "SELECT '1 year 2 months 3 days'::interval, '1 year 2 months 3 days'::interval * 2 AS twice FROM {t} "
    "WHERE id = 1",
    "SELECT id, iv + interval '1 month', d + 1, tz - ts FROM {t} WHERE id = 1",
    "SELECT id, (SELECT iv FROM {t} WHERE id = 1), random() < 2 AS volatile FROM {t} ORDER BY id",
]


@contextmanager
def _served(pg_server: Any, tmp: Path, settings: dict[str, str]) -> Iterator[tuple[str, httpx.Client]]:
    with database(pg_server) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(DATA)
            for name, value in settings.items():
                conn.execute(f"ALTER DATABASE \"{conn.info.dbname}\" SET {name} = '{value}'")
        with live_server(gateway_settings(dsn, tmp)) as server, server.client() as client:
            yield dsn, client


@pytest.fixture(scope="module", params=["plain", "odd"])
def served(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory, request: Any
) -> Iterator[tuple[str, Any]]:
    settings = ODD if request.param == "odd" else {}
    with _served(pg_server, tmp_path_factory.mktemp(request.param), settings) as setup:
        yield setup


def _types(conn: psycopg.Connection) -> dict[int, str]:
    return {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}


def test_casts_to_text_answer_as_a_new_session(served: tuple[str, httpx.Client]) -> None:
    """The simplest case of the issue, through the JSON result: an interval and a date cast to text."""
    dsn, client = served
    with psycopg.connect(dsn) as psql:
        want = psql.execute("SELECT '1 day'::interval::text, '2024-01-02'::date::text").fetchone()
    got = client.post(
        "/v1/query",
        json={
            "sql": "SELECT '1 day'::interval::text AS a, '2024-01-02'::date::text AS b FROM pg.public.t LIMIT 1"
        },
    ).json()
    assert got["rows"] == [{"a": want[0], "b": want[1]}]


@pytest.mark.parametrize("template", TEXT)
def test_text_output_answers_as_psql(served: tuple[str, httpx.Client], template: str) -> None:
    dsn, client = served
    with psycopg.connect(dsn, autocommit=True) as psql:  # a new session: the database's defaults, untouched
        want = from_postgres(psql, template.format(t="public.t"), _types(psql))
    assert want.error is None, want.error
    got = from_gateway(client, template.format(t="pg.public.t"))
    outcome, why = compare(want, got, True, may_refuse=False)
    assert outcome == IDENTICAL, f"{template}: {why}"


@pytest.mark.parametrize("template", TYPED)
def test_typed_values_are_postgresql_values(served: tuple[str, httpx.Client], template: str) -> None:
    dsn, client = served
    with psycopg.connect(dsn, autocommit=True) as conn:
        # ISO output only for psycopg to read the values exactly; the values do not depend on it
        conn.execute("SET DateStyle = 'ISO, YMD'; SET bytea_output = hex; SET extra_float_digits = 3")
        infinities(conn)
        want = from_postgres(conn, template.format(t="public.t"), _types(conn))
    assert want.error is None, want.error
    got = from_gateway(client, template.format(t="pg.public.t"))
    outcome, why = compare(want, got, True, may_refuse=False)
    assert outcome == IDENTICAL, f"{template}: {why}"


def test_bc_dates_and_timestamps(served: tuple[str, httpx.Client]) -> None:
    """BC values (which Python cannot hold): the gateway's days and microseconds since 1970 are PostgreSQL's."""
    dsn, client = served
    with psycopg.connect(dsn, autocommit=True) as conn:
        want = conn.execute(
            "SELECT d - date '1970-01-01', extract(epoch FROM ts)::numeric * 1000000 FROM public.t WHERE id = 2"
        ).fetchone()
    response = client.post(
        "/v1/query", json={"sql": "SELECT d, ts FROM pg.public.t WHERE id = 2", "format": "arrow"}
    )
    assert response.status_code == 200, response.text
    table = pa.ipc.open_stream(response.content).read_all()
    got = (table.column(0).cast(pa.int32()).to_pylist()[0], table.column(1).cast(pa.int64()).to_pylist()[0])
    assert want is not None and got == (want[0], int(want[1]))


def test_interval_arrays_print_as_the_server_does(served: tuple[str, httpx.Client]) -> None:
    """An interval array's elements come as text (no exact Arrow list of PostgreSQL intervals is kept): the
    server's text, as psql shows them."""
    dsn, client = served
    with psycopg.connect(dsn, autocommit=True) as psql:
        want = [row[0] for row in psql.execute("SELECT ia::text[] FROM public.t ORDER BY id").fetchall()]
    got = client.post("/v1/query", json={"sql": "SELECT ia FROM pg.public.t ORDER BY id"}).json()
    assert [row["ia"] for row in got["rows"]] == want

"""Issue 28 item 8: the catalog calls drivers and BI tools send answer as PostgreSQL does, or are refused by name.

``SHOW <setting>`` (answered by the gateway: ``TimeZone`` is the request's zone, the others the source's
defaults; only :data:`lakegate.gateway.functions.SHOWN_SETTINGS`, never paths or secrets), ``format_type()``,
``pg_typeof()`` and ``version()`` on the PostgreSQL route and as table-less statements; a table's ``int[][]``
column in ``SELECT *`` (its declared dimensions are read), and an array expression of two dimensions refused
with a message that is true. Every answer is compared with psycopg on the same database.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.answers_harness import IDENTICAL, compare, from_gateway, from_postgres, infinities
from tests.gateway_fixtures.harness import database, gateway_settings, live_server

DATA = """
CREATE TABLE t (id int PRIMARY KEY, m int[][], v varchar(20), r real, s smallint, i int);
INSERT INTO t VALUES (1, '{{1,2},{3,4}}', 'a', 1e10, 300, 1000), (2, '{{5,NULL}}', NULL, 0.5, -2, 7),
                     (3, NULL, 'c', NULL, NULL, NULL), (4, '{}', 'd', 1, 1, 1);
"""
SAME = [
    "SELECT * FROM {t} ORDER BY id",
    "SELECT id, m, m[1][2], v FROM {t} ORDER BY id",
    "SELECT format_type(23, -1), format_type(1043, 24), format_type(1700, 655366), format_type(0, NULL) FROM {t} "
    "WHERE id = 1",
    "SELECT id, pg_typeof(m), pg_typeof(v), pg_typeof(r::numeric) FROM {t} ORDER BY id",
    "SELECT version() FROM {t} WHERE id = 1",
    "SELECT id, round(r::numeric, 2), s * i, s * 1000 FROM {t} ORDER BY id",
    "SELECT format_type(a.atttypid, a.atttypmod) FROM pg_catalog.pg_attribute a WHERE false",
]
TABLELESS = [
    "SELECT format_type(23, -1), format_type(1043, 24)",
    "SELECT pg_typeof(1), pg_typeof('a'::text)",
    "SELECT round(1e10::real::numeric, 2), 300::smallint * 1000::int",
]
#: SHOW <setting>: the source's default (a new psql session on it shows the same)
SHOWN = [
    "DateStyle",
    "IntervalStyle",
    "server_version",
    "server_version_num",
    "server_encoding",
    "standard_conforming_strings",
    "integer_datetimes",
    "max_identifier_length",
    "bytea_output",
]


@pytest.fixture(scope="module")
def served(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, httpx.Client]]:
    with database(pg_server) as dsn:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(DATA)
        settings = gateway_settings(dsn, tmp_path_factory.mktemp("bi"))
        with live_server(settings) as server, server.client() as client:
            yield dsn, client


def _compare(dsn: str, client: httpx.Client, postgres_sql: str, gateway_sql: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        infinities(conn)  # numerics as their text (the scale is part of the answer)
        types = {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}
        want = from_postgres(conn, postgres_sql, types)
    assert want.error is None, want.error
    got = from_gateway(client, gateway_sql)
    outcome, why = compare(want, got, True, may_refuse=False)
    assert outcome == IDENTICAL, f"{gateway_sql}: {why}"


@pytest.mark.parametrize("template", SAME)
def test_postgres_route_answers_as_postgresql(served: tuple[str, httpx.Client], template: str) -> None:
    dsn, client = served
    _compare(dsn, client, template.format(t="public.t"), template.format(t="pg.public.t"))


@pytest.mark.parametrize("sql", TABLELESS)
def test_tableless_statements_answer_as_postgresql(served: tuple[str, httpx.Client], sql: str) -> None:
    dsn, client = served
    _compare(dsn, client, sql, sql)


@pytest.mark.parametrize("zone", [None, "Europe/Paris", "America/St_Johns"])
@pytest.mark.parametrize("sql", ["SHOW timezone", "show TIME ZONE;", 'SHOW "TimeZone"'])
def test_show_timezone_is_the_requests_zone(
    served: tuple[str, httpx.Client], sql: str, zone: str | None
) -> None:
    _, client = served
    response = client.post("/v1/query", json={"sql": sql, "time_zone": zone})
    assert response.status_code == 200, response.text
    body = response.json()
    assert [c["name"] for c in body["columns"]] == ["TimeZone"]  # PostgreSQL's column name
    assert body["rows"] == [{"TimeZone": zone or "UTC"}]


@pytest.mark.parametrize("name", SHOWN)
def test_show_setting_answers_as_psql(served: tuple[str, httpx.Client], name: str) -> None:
    dsn, client = served
    with psycopg.connect(dsn, autocommit=True) as psql:
        cur = psql.execute(f"SHOW {name}")
        assert cur.description is not None
        want = {cur.description[0].name: str((cur.fetchone() or [None])[0])}
    response = client.post("/v1/query", json={"sql": f"SHOW {name.lower()}"})
    assert response.status_code == 200, response.text
    assert response.json()["rows"] == [want]


@pytest.mark.parametrize(
    "name", ["data_directory", "config_file", "hba_file", "search_path", "app.secret", "all"]
)
def test_show_other_settings_is_refused_by_name(served: tuple[str, httpx.Client], name: str) -> None:
    _, client = served
    response = client.post("/v1/query", json={"sql": f"SHOW {name}"})
    assert response.status_code in (400, 403), response.text
    message = response.json()["error"]["message"]
    assert "SHOW" in message and name.split(".")[0] in message


def test_array_expression_of_two_dimensions_is_refused_truly(served: tuple[str, httpx.Client]) -> None:
    """PostgreSQL's result does not say how many dimensions an expression's arrays have: refused, saying so
    (not asking to declare a column that does not exist)."""
    _, client = served
    response = client.post("/v1/query", json={"sql": "SELECT ARRAY[[1, 2], [3, 4]] AS a FROM pg.public.t"})
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "'a'" in message and "expression" in message and "::text" in message
    ok = client.post("/v1/query", json={"sql": "SELECT ARRAY[[1, 2], [3, 4]]::text AS a FROM pg.public.t"})
    assert ok.status_code == 200 and ok.json()["rows"][0] == {"a": "{{1,2},{3,4}}"}


SESSION_CALLS = (
    "SELECT current_schema(), current_schema, pg_catalog.current_schema(), current_setting('TimeZone'), "
    "current_setting('timezone', true), current_setting('DateStyle'), upper(current_schema)"
)


@pytest.mark.parametrize("zone", [None, "Asia/Kolkata"])
@pytest.mark.parametrize("where", ["", " FROM {t} WHERE id = 1"])
def test_session_calls_answer_as_postgresql(served: tuple[str, httpx.Client], zone: str | None, where: str) -> None:
    """``current_schema()`` is ``public`` (what a one-part name means; the pooled session's search_path is
    pg_catalog alone) and ``current_setting('TimeZone')`` the request's zone, named and typed as PostgreSQL's
    own session answers them, table-less and on the PostgreSQL route."""
    dsn, client = served
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT set_config('TimeZone', %s, false)", (zone or "UTC",))
        types = {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}
        want = from_postgres(conn, SESSION_CALLS + where.format(t="public.t"), types)
    assert want.error is None, want.error
    assert want.rows[0][0] == "public" and want.types[0] == "name"
    got = from_gateway(client, SESSION_CALLS + where.format(t="pg.public.t"), zone)
    outcome, why = compare(want, got, True, may_refuse=False)
    assert outcome == IDENTICAL, why


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT current_setting('data_directory')",
        "SELECT current_setting('app.secret', true) FROM pg.public.t",
        "SELECT current_setting(v) FROM pg.public.t",
        "SELECT current_setting('Time' || 'Zone')",
        "SELECT current_setting('TimeZone', 'yes' = 'yes')",
        "SELECT ('config_file').current_setting",
        "SELECT set_config('TimeZone', 'UTC', false)",
        "SELECT current_schemas(true)",
    ],
)
def test_other_session_calls_are_refused(served: tuple[str, httpx.Client], sql: str) -> None:
    """Only the settings drivers read, named by a constant: never a path, a secret or a search path."""
    _, client = served
    response = client.post("/v1/query", json={"sql": sql})
    assert response.status_code == 403, response.text
    message = response.json()["error"]["message"]
    assert "not allowed" in message and ("current_s" in message or "set_config" in message), message

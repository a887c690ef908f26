"""The PostgreSQL route resolves an extension's operators and functions as psql does — or refuses, never a
different answer, and never runs what an untrusted role planted (issue 10; README "Guard" item 2).

Sessions that searched only ``pg_catalog`` compared ``citext_col = 'ABC'`` with text's ``=`` (case-sensitively)
where psql uses citext's. Now the schemas of extensions that no untrusted role can write are searched after
``pg_catalog``. Two databases of the test server: in ``safe`` (PostgreSQL 15+'s ``public``: only its owner
creates there) every query answers as psycopg with the default search_path, row by row; in ``open`` (``CREATE``
on ``public`` for ``PUBLIC``, as PostgreSQL 13/14 default, an extension in a schema a non-superuser owns, and a
hostile role that planted ``=`` operators and a ``lower`` in ``public``) a query that would need the extension
is refused with a 400 that names the schema and what to change, and the planted objects never run. Federated
statements (two sources, so DuckDB's PostgreSQL scanner reads both) answer the same or are refused."""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg
import pytest
import sqlglot

from lakegate.connectors.postgres.extensions import default_path
from lakegate.gateway.pgfootprint import footprint
from tests.answers_harness import IDENTICAL, REFUSED, Answer, compare, from_gateway, from_postgres, ordered
from tests.gateway_fixtures.harness import database, gateway_settings, live_server

ROWS = """
INSERT INTO people VALUES
 (1, 'Abc', 'abc', 'abc', 'a=>1'), (2, 'abc', 'Abc', 'Abc', 'b=>2'), (3, 'ABD', 'abd', 'abd', NULL),
 (4, NULL, NULL, NULL, 'a=>3'), (5, 'ab_', 'ab%', 'xyz', ''), (6, 'Ärger', 'ärger', 'ärger', 'a=>NULL');
INSERT INTO tags VALUES (10, 'ABC', 'first'), (11, 'abd', 'second'), (12, 'zz', 'third'), (13, NULL, 'none');
"""
SAFE = (
    """
CREATE EXTENSION citext;
CREATE EXTENSION pg_trgm;
CREATE EXTENSION hstore;
CREATE EXTENSION pgstattuple;  -- an administration extension: its functions stay refused
CREATE TABLE people (id int PRIMARY KEY, c citext, t text, v varchar(20), h hstore);
CREATE TABLE tags (id int PRIMARY KEY, c citext, label text);
-- the database's own function (not an extension's) named like a built-in: never run for a token holder
CREATE FUNCTION public.initcap(varchar) RETURNS text LANGUAGE sql AS $$ SELECT 'own function ran' $$;
"""
    + ROWS
)
#: identical to psycopg with the default search_path, row by row
EXACT = [
    "SELECT id FROM {people} WHERE c = 'ABC' ORDER BY id",
    "SELECT id FROM {people} WHERE c <> 'abc' ORDER BY id",
    "SELECT id FROM {people} WHERE c IN ('ABC', 'abd') ORDER BY id",
    "SELECT id FROM {people} WHERE c NOT IN ('ABC') ORDER BY id",
    "SELECT id FROM {people} WHERE c LIKE 'AB%' ORDER BY id",
    "SELECT id FROM {people} WHERE c NOT LIKE 'a%' ORDER BY id",
    "SELECT id FROM {people} WHERE c ILIKE 'AB\\_' ORDER BY id",
    "SELECT id FROM {people} WHERE c ~ '^ab' ORDER BY id",
    "SELECT id FROM {people} WHERE c BETWEEN 'ABC' AND 'abd' ORDER BY id",
    "SELECT id FROM {people} WHERE c = 'ärger' ORDER BY id",
    "SELECT id FROM {people} WHERE c = t ORDER BY id",
    "SELECT id, CASE c WHEN 'ABC' THEN 1 ELSE 0 END FROM {people} ORDER BY id",
    "SELECT id, nullif(c, 'ABC') FROM {people} ORDER BY id",
    "SELECT max(c), min(c) FROM {people}",
    "SELECT id, strpos(c, 'B'), replace(c, 'B', '-'), split_part(c, 'B', 1) FROM {people} ORDER BY id",
    "SELECT p.id, q.id FROM {people} p JOIN {tags} q ON p.c = q.c ORDER BY 1, 2",
    "SELECT p.id, q.label FROM {people} p LEFT JOIN {tags} q USING (c) ORDER BY 1, 2",
    "SELECT id FROM {people} WHERE c IN (SELECT c FROM {tags}) ORDER BY id",
    "SELECT k, count(*) FROM (SELECT c AS k FROM {people}) s WHERE k = 'abc' GROUP BY k",
    "SELECT c, count(*) FROM {people} GROUP BY c ORDER BY c",
    "SELECT DISTINCT c FROM {people} ORDER BY c",
    # other extensions: pg_trgm's function and operator, hstore's ->
    "SELECT id, similarity(t, 'abc') FROM {people} ORDER BY id",
    "SELECT id FROM {people} WHERE t % 'abx' ORDER BY id",
    "SELECT id, h -> 'a' FROM {people} ORDER BY id",
    "SELECT id, pg_catalog.initcap(v) FROM {people} ORDER BY id",
]
#: federated (DuckDB's PostgreSQL scanner on both sides): identical, or refused with a 400
FEDERATED = [
    "SELECT p.id FROM {pg:people} p JOIN {pg2:tags} q ON q.id = p.id + 9 WHERE p.c = 'ABC' ORDER BY 1",
    "SELECT p.id, q.id FROM {pg:people} p JOIN {pg2:tags} q ON p.c = q.c ORDER BY 1, 2",
    "SELECT p.id FROM {pg:people} p JOIN {pg2:tags} q ON q.id = p.id + 9 WHERE p.c LIKE 'ab%' ORDER BY 1",
    "SELECT p.c, q.c FROM {pg:people} p JOIN {pg2:tags} q ON q.id = p.id + 9 ORDER BY p.id",
]

OPEN = """
GRANT CREATE ON SCHEMA public TO PUBLIC;  -- PostgreSQL 13/14's default
CREATE EXTENSION citext;
CREATE SCHEMA kv AUTHORIZATION {hostile};
CREATE EXTENSION hstore SCHEMA kv;  -- in a schema a non-superuser owns
ALTER DATABASE {db} SET search_path = "$user", public, kv;
CREATE TABLE people (id int PRIMARY KEY, c citext, t text, v varchar(20), h kv.hstore);
CREATE TABLE tags (id int PRIMARY KEY, c citext, label text);
GRANT SELECT ON people, tags TO PUBLIC;
SET ROLE {hostile};
CREATE FUNCTION public.shadow_vv(varchar, varchar) RETURNS bool LANGUAGE plpgsql IMMUTABLE
  AS $$ BEGIN RAISE EXCEPTION 'shadow ran'; END $$;
CREATE OPERATOR public.= (LEFTARG = varchar, RIGHTARG = varchar, FUNCTION = public.shadow_vv);
CREATE FUNCTION public.shadow_ct(public.citext, text) RETURNS bool LANGUAGE plpgsql IMMUTABLE
  AS $$ BEGIN RAISE EXCEPTION 'shadow ran'; END $$;
CREATE OPERATOR public.= (LEFTARG = public.citext, RIGHTARG = text, FUNCTION = public.shadow_ct);
CREATE FUNCTION public.lower(varchar) RETURNS text LANGUAGE plpgsql IMMUTABLE
  AS $$ BEGIN RAISE EXCEPTION 'shadow ran'; END $$;
RESET ROLE;
"""
#: psql (the default search_path) runs the planted objects; the gateway answers with the built-ins
SHADOWED = [
    "SELECT id FROM {people} WHERE v = 'abc' ORDER BY id",
    "SELECT id, lower(v) FROM {people} ORDER BY id",
    "SELECT p.id FROM {people} p JOIN {people} q ON p.v = q.v ORDER BY 1",
]
FEDERATED_SHADOWED = [
    "SELECT p.id FROM {pg:people} p JOIN {pg2:tags} q ON q.id = p.id + 9 WHERE p.v = 'abc' ORDER BY 1",
    "SELECT p.id, lower(p.v) FROM {pg:people} p JOIN {pg2:tags} q ON q.id = p.id + 9 ORDER BY 1",
    "SELECT p.id FROM {pg:people} p JOIN {pg2:people} q ON p.v = q.v ORDER BY 1",
]
#: psql would use citext's or hstore's operators, which the gateway does not search there: refused (400)
OPEN_REFUSED = [
    ("SELECT id FROM {people} WHERE c = 'ABC'", ["=", "citext", "public", "PUBLIC", "REVOKE CREATE"]),
    ("SELECT id FROM {people} WHERE c = t", ["=", "citext", "public"]),
    ("SELECT id FROM {people} WHERE c ILIKE 'ab%'", ["operator ILIKE", "citext"]),
    ("SELECT max(c) FROM {people}", ["function max()", "citext"]),
    ("SELECT p.id FROM {people} p JOIN {tags} q ON p.c = q.c", ["=", "citext"]),
    ("SELECT id FROM {people} WHERE c IN (SELECT c FROM {tags})", ["citext"]),
    ("SELECT k FROM (SELECT c AS k FROM {people}) s WHERE k = 'abc'", ["=", "column k", "citext"]),
    ("SELECT id, h -> 'a' FROM {people}", ["operator -> on column h", "hstore", "kv", "owned by"]),
    ("SELECT id FROM {people} WHERE c = 'x'::citext", ["a cast to type citext"]),
]
#: what only passes an extension's values through answers as PostgreSQL there too
OPEN_EXACT = [
    "SELECT id, c, t FROM {people} ORDER BY id",
    "SELECT c, count(*) FROM {people} GROUP BY c ORDER BY c",
    "SELECT id FROM {people} WHERE c IS NULL",
    "SELECT id, c::text = 'abc' FROM {people} ORDER BY id",
]


@dataclasses.dataclass
class Setup:
    conn: psycopg.Connection
    client: httpx.Client
    types: dict[int, str]


def _two_sources(settings: Any) -> Any:
    """The source twice (pg, pg2): a statement over both runs in DuckDB through its PostgreSQL scanner."""
    second = dataclasses.replace(settings.sources[0], name="pg2", slot="", publication="")
    second.__post_init__()
    settings.sources.append(second)
    return settings


@contextmanager
def _served(pg_server: Any, tmp: Any, data: str, hostile: str | None = None) -> Iterator[Setup]:
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        db = conn.info.dbname
        conn.execute(data.format(hostile=hostile, db=f'"{db}"'))
        settings = _two_sources(gateway_settings(dsn, tmp))
        types = {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}
        # a new session: the database's default search_path, as psql's
        with psycopg.connect(dsn, autocommit=True) as fresh, live_server(settings) as server, server.client() as client:
            yield Setup(fresh, client, types)


@pytest.fixture(scope="module")
def safe(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    with _served(pg_server, tmp_path_factory.mktemp("ext_safe"), SAFE) as setup:
        yield setup


@pytest.fixture(scope="module")
def open_db(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    hostile = f"hostile_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {hostile} NOLOGIN")
    try:
        with _served(pg_server, tmp_path_factory.mktemp("ext_open"), OPEN + ROWS, hostile) as setup:
            yield setup
    finally:
        with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
            admin.execute(f"DROP ROLE IF EXISTS {hostile}")


def _postgres(setup: Setup, sql: str) -> Answer:
    return from_postgres(setup.conn, sql, setup.types)


def _plain(template: str) -> str:
    return template.replace("{pg:", "{").replace("{pg2:", "{").format(people="public.people", tags="public.tags")


@pytest.mark.parametrize("template", EXACT)
def test_extension_operators_and_functions_answer_as_psql(safe: Setup, template: str) -> None:
    want = _postgres(safe, _plain(template))
    assert want.error is None, want.error
    got = from_gateway(safe.client, template.format(people="pg.public.people", tags="pg.public.tags"))
    outcome, why = compare(want, got, ordered(template), may_refuse=False)
    assert outcome == IDENTICAL, f"{template}: {why}"


def test_the_test_can_tell_case_sensitive_from_insensitive(safe: Setup) -> None:
    """Built-in text semantics would answer differently: the comparisons above can fail."""
    with safe.conn.transaction():
        safe.conn.execute("SET LOCAL search_path = pg_catalog")
        builtin = _postgres(safe, _plain(EXACT[0]))
    assert builtin.rows != _postgres(safe, _plain(EXACT[0])).rows


def test_the_database_own_function_is_not_run(safe: Setup) -> None:
    assert _postgres(safe, "SELECT initcap(v) FROM public.people WHERE id = 1").rows == [("own function ran",)]
    response = safe.client.post("/v1/query", json={"sql": "SELECT initcap(v) FROM pg.public.people"})
    assert response.status_code == 403, response.text
    message = response.json()["error"]["message"]
    assert "public.initcap" in message and "pg_catalog.initcap" in message, message


def test_functions_of_administration_extensions_stay_refused(safe: Setup) -> None:
    assert _postgres(safe, "SELECT (pgstattuple('public.people')).tuple_count").error is None  # psql runs it
    response = safe.client.post("/v1/query", json={"sql": "SELECT pgstattuple('public.people') FROM pg.public.tags"})
    assert response.status_code == 403, response.text
    assert "pgstattuple() is not allowed" in response.json()["error"]["message"]


@pytest.mark.parametrize("template", FEDERATED)
def test_federated_statements_answer_as_psql_or_are_refused(safe: Setup, template: str) -> None:
    want = _postgres(safe, _plain(template))
    sql = template.replace("{pg:", "pg.public.{").replace("{pg2:", "pg2.public.{")
    got = from_gateway(safe.client, sql.format(people="people", tags="tags"))
    outcome, why = compare(want, got, ordered(template), may_refuse=True)
    assert outcome in (IDENTICAL, REFUSED), f"{template}: {outcome} {why}"


@pytest.mark.parametrize("template", SHADOWED)
def test_objects_a_hostile_role_planted_never_run(open_db: Setup, template: str) -> None:
    plain = _plain(template)
    assert "shadow ran" in str(_postgres(open_db, plain).error)  # psql would run them
    with open_db.conn.transaction():
        open_db.conn.execute("SET LOCAL search_path = pg_catalog")
        builtin = _postgres(open_db, plain)
    assert builtin.error is None, builtin.error
    got = from_gateway(open_db.client, template.format(people="pg.public.people"))
    outcome, why = compare(builtin, got, ordered(template), may_refuse=False)
    assert outcome == IDENTICAL, f"{template}: {why}"


@pytest.mark.parametrize("template", FEDERATED_SHADOWED)
def test_planted_objects_never_run_in_federated_statements(open_db: Setup, template: str) -> None:
    """DuckDB's PostgreSQL scanner pushes filters down in sessions of its own."""
    plain = _plain(template)
    assert "shadow ran" in str(_postgres(open_db, plain).error)
    with open_db.conn.transaction():
        open_db.conn.execute("SET LOCAL search_path = pg_catalog")
        builtin = _postgres(open_db, plain)
    sql = template.replace("{pg:", "pg.public.{").replace("{pg2:", "pg2.public.{")
    got = from_gateway(open_db.client, sql.format(people="people", tags="tags"))
    assert "shadow ran" not in str(got.error), got.error
    outcome, why = compare(builtin, got, ordered(template), may_refuse=True)
    assert outcome in (IDENTICAL, REFUSED), f"{template}: {outcome} {why}"


@pytest.mark.parametrize(("template", "words"), OPEN_REFUSED)
def test_an_extension_in_a_schema_others_can_write_is_refused(
    open_db: Setup, template: str, words: list[str]
) -> None:
    want = _postgres(open_db, _plain(template))
    # psql answers with the extension's operator (or runs the one planted for citext = text)
    assert want.error is None or "shadow ran" in want.error, want.error
    response = open_db.client.post(
        "/v1/query", json={"sql": template.format(people="pg.public.people", tags="pg.public.tags")}
    )
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert "shadow ran" not in message
    for word in words:
        assert word in message, f"{word!r} not in {message}"


@pytest.mark.parametrize("template", OPEN_EXACT)
def test_passing_extension_values_through_answers_there_too(open_db: Setup, template: str) -> None:
    want = _postgres(open_db, _plain(template))
    got = from_gateway(open_db.client, template.format(people="pg.public.people"))
    outcome, why = compare(want, got, ordered(template), may_refuse=False)
    assert outcome == IDENTICAL, f"{template}: {why}"


def test_the_default_search_path_is_read_as_postgresql_reads_it() -> None:
    assert default_path(None) == ("public",)
    assert default_path(['search_path="$user", Public, "Ext S", pg_catalog, "a""b"', "work_mem=4MB"]) == (
        "public",
        "Ext S",
        'a"b',
    )


def test_the_footprint_follows_a_column_through_aliases_and_keeps_pass_through_apart() -> None:
    sql = (
        "SELECT k, count(c), c::text FROM (SELECT c AS k, c FROM t) s WHERE k LIKE 'a%' "
        "GROUP BY k, c ORDER BY c"
    )
    fp = footprint(sqlglot.parse_one(sql, read="postgres"), (("public", "t"),), sql)
    assert fp.uses == (("k", "operator LIKE"),)
    assert ("c", "k") in fp.aliases and not fp.opaque
    assert "~~" in fp.operators and "count" in fp.functions
    natural = "SELECT 1 FROM t NATURAL JOIN u"
    assert footprint(sqlglot.parse_one(natural, read="postgres"), (), natural).opaque

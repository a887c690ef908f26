"""The guard proven by generation, not by a list (issue 27.1-2).

1. Every function of the source's ``pg_proc`` that the allow-list refuses, in every call syntax PostgreSQL
   accepts (functional and attribute notation on an expression, a column and a whole row, schema-qualified,
   named and VARIADIC arguments, in FROM, ROWS FROM, LATERAL, XMLTABLE and JSON_TABLE, in subqueries, CTEs,
   ORDER BY and HAVING), on the PostgreSQL route, the lake route and without a table: each statement is refused
   with a 403 that names the function. Every (function, syntax) pair is planned once, its route chosen by a hash,
   so every function and every syntax meets every route; the functions only a privileged role may run are also
   tried on a gateway whose source role is a superuser (``allow_privileged_role``), through every syntax and
   route, and a sample of both goes through real HTTP.
2. Mutations of allowed and hostile statements (comments, quoting, case, unicode escapes, dollar quotes,
   parentheses, schema qualification, operator forms, attribute notation): the gateway refuses exactly those in
   which PostgreSQL's own parser (libpg_query) finds a call the allow-list refuses.

Each generated statement is first shown to be a real statement of PostgreSQL's grammar, so a refusal is never
a parse failure counted as a success.
"""

from __future__ import annotations

import random
import uuid
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pgparse
import psycopg
import pyarrow as pa
import pytest

from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.gateway import pgcalls
from lakegate.gateway.errors import Forbidden, GatewayError
from lakegate.gateway.service import Gateway
from tests.gateway_fixtures.harness import database, gateway_settings, live_server

TOKEN = "generated-guard-token"
ROUTES = {
    "postgres": "FROM pg.public.t x",
    "lake": "FROM lake.public.facts x",
    "none": "",
}
#: call syntaxes: {f} the function (quoted where PostgreSQL needs it), {a} its arguments, {from} the route
SYNTAXES = {
    "call": "SELECT {f}({a}) {from}",
    "qualified": "SELECT {s}.{f}({a}) {from}",
    "named": "SELECT {f}(x => {a1}) {from}",
    "variadic": "SELECT {f}(VARIADIC ARRAY[{a1}]) {from}",
    "attribute-expression": "SELECT ({a1}).{f} {from}",
    "attribute-literal": "SELECT ('x'::text).{f} {from}",
    "attribute-column": "SELECT x.id.{f} {from}",
    "attribute-row": "SELECT x.{f} {from}",
    "from": "SELECT * FROM {f}({a})",
    "rows-from": "SELECT * FROM ROWS FROM (generate_series(1, 2), {f}({a})) r",
    "lateral": "SELECT 1 {from} CROSS JOIN LATERAL {f}({a}) l",
    "xmltable": "SELECT * FROM XMLTABLE('/a' PASSING {f}({a}) COLUMNS b int)",
    "json-table": "SELECT * FROM JSON_TABLE({f}({a})::jsonb, '$' COLUMNS (b int PATH '$'))",
    "subquery": "SELECT (SELECT {f}({a})) {from}",
    "cte": "WITH c AS (SELECT {f}({a}) AS v) SELECT v FROM c",
    "order-by": "SELECT 1 {from} ORDER BY {f}({a})",
    "having": "SELECT count(*) {from} GROUP BY 1 HAVING {f}({a}) IS NULL",
    "case": "SELECT CASE WHEN true THEN {f}({a}) END {from}",
}
#: what only a privileged role may run (EXECUTE revoked from PUBLIC or granted to pg_* roles): read on the server
_PRIVILEGED = """
SELECT DISTINCT p.proname FROM pg_catalog.pg_proc p
WHERE p.proacl IS NOT NULL AND NOT has_function_privilege('public', p.oid, 'EXECUTE')
"""


def ident(name: str) -> str:
    """``name`` as PostgreSQL must read it (quoted unless a plain lower-case identifier)."""
    plain = name.isidentifier() and name == name.lower() and name.isascii()
    return name if plain and not _reserved(name) else '"' + name.replace('"', '""') + '"'


def _reserved(name: str) -> bool:
    try:
        pgparse.parse(f"SELECT {name}(1)")
    except pgparse.PGQueryError:
        return True
    return False


def statement(syntax: str, route: str, name: str, schema: str, args: int) -> str:
    values = ", ".join(["NULL"] * max(args, 1)) if args else ""
    source = ROUTES[route] or ("FROM (VALUES (1)) x(id)" if syntax == "lateral" else "")
    return SYNTAXES[syntax].format(
        f=ident(name), s=ident(schema), a=values, a1="NULL::text", **{"from": source}
    ).strip()


def route_of(name: str, syntax: str) -> str:
    """A fixed, spread choice of route for each (function, syntax) pair."""
    return list(ROUTES)[zlib.crc32(f"{name}/{syntax}".encode()) % len(ROUTES)]


@pytest.fixture(scope="module")
def env(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    lake_dir: Path = tmp_path_factory.mktemp("lake")
    role = f"gen_reader_{uuid.uuid4().hex[:6]}"
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE t (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO t VALUES (1, 'work_mem')")
        conn.execute("CREATE FUNCTION public.leak(text) RETURNS text LANGUAGE sql AS $$ SELECT 'pwned' $$")
        conn.execute(
            "CREATE FUNCTION public.leak2(text, text) RETURNS boolean LANGUAGE sql AS $$ SELECT true $$"
        )
        conn.execute("CREATE OPERATOR public.<-> (LEFTARG = text, RIGHTARG = text, FUNCTION = public.leak2)")
        conn.execute("CREATE TYPE public.mood AS ENUM ('ok', 'bad')")
        conn.execute(
            "CREATE FUNCTION public.to_mood(integer) RETURNS public.mood LANGUAGE sql AS $$ SELECT 'ok'::mood $$"
        )
        conn.execute("CREATE CAST (integer AS public.mood) WITH FUNCTION public.to_mood(integer)")
        conn.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{role}'")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
        reader = gateway_settings(f"{dsn} user={role} password=pw-{role}", lake_dir, tokens=[TOKEN])
        reader.sources[0].allow_privileged_role = False
        privileged = gateway_settings(dsn, lake_dir, tokens=[TOKEN])  # the test server's superuser
        catalog = lake_catalog.from_settings(reader.lake)
        catalog.create_namespace("public")
        facts = catalog.create_table("public.facts", pa.schema([("id", pa.int64()), ("v", pa.string())]))
        facts.append(pa.table({"id": [1], "v": ["a"]}))
        gateways = {
            "reader": Gateway(reader.lake, reader.sources, reader.gateway).open(),
            "privileged": Gateway(privileged.lake, privileged.sources, privileged.gateway).open(),
        }
        rows = conn.execute(
            "SELECT DISTINCT ON (p.proname) p.proname, n.nspname, p.pronargs FROM pg_catalog.pg_proc p "
            "JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace ORDER BY p.proname, p.oid"
        ).fetchall()
        # and those that check the role inside: other sessions, the server's files and configuration
        restricted = {r[0] for r in conn.execute(_PRIVILEGED)} | {
            "pg_terminate_backend",
            "pg_cancel_backend",
            "pg_read_file",
            "pg_ls_dir",
            "pg_stat_file",
            "pg_reload_conf",
        }
        try:
            yield {
                "conn": conn,
                "gateways": gateways,
                "functions": [(str(r[0]), str(r[1]), int(r[2])) for r in rows],
                "privileged": restricted,
                "settings": {"reader": reader, "privileged": privileged},
            }
        finally:
            for gateway in gateways.values():
                gateway.close()
            conn.execute(f"DROP OWNED BY {role}")
            conn.execute(f"DROP ROLE {role}")


def refused_functions(env: dict[str, Any]) -> list[tuple[str, str, int]]:
    guard = env["gateways"]["reader"].guard
    return [f for f in env["functions"] if not guard.call_allowed(f[0])]


def outcome(gateway: Gateway, sql: str) -> tuple[int, str]:
    try:
        gateway.plan(sql)
    except GatewayError as exc:
        return exc.status, str(exc)
    return 200, ""


def test_every_refused_function_in_every_syntax_and_route(env: dict[str, Any]) -> None:
    functions = refused_functions(env)
    assert len(functions) > 2000, "pg_proc must be enumerated, not a sample"
    gateway = env["gateways"]["reader"]
    misses: list[str] = []
    planned = 0
    for name, schema, args in functions:
        for syntax in SYNTAXES:
            sql = statement(syntax, route_of(name, syntax), name, schema, args)
            pgparse.parse(sql)  # a statement of PostgreSQL's grammar (raises otherwise)
            status, message = outcome(gateway, sql)
            planned += 1
            if status != 403 or name not in message:
                misses.append(f"{sql} -> {status} {message[:200]}")
    print(f"\ngenerated guard: {len(functions)} functions x {len(SYNTAXES)} syntaxes = {planned} statements")
    assert not misses, f"{len(misses)} of {planned} not refused naming the function:\n" + "\n".join(misses[:40])


def test_privileged_functions_on_a_privileged_role(env: dict[str, Any]) -> None:
    """With ``allow_privileged_role`` the source role could run pg_read_file, pg_ls_dir, pg_terminate_backend...:
    each of them, in every syntax and on every route, is still refused."""
    restricted = [f for f in refused_functions(env) if f[0] in env["privileged"]]
    assert {"pg_read_file", "pg_ls_dir", "pg_terminate_backend"} <= {f[0] for f in restricted}
    gateway = env["gateways"]["privileged"]
    misses = []
    for name, schema, args in restricted:
        for syntax in SYNTAXES:
            for route in ROUTES:
                sql = statement(syntax, route, name, schema, args)
                status, message = outcome(gateway, sql)
                if status != 403 or name not in message:
                    misses.append(f"{sql} -> {status} {message[:200]}")
    print(f"\nprivileged: {len(restricted)} functions x {len(SYNTAXES)} syntaxes x {len(ROUTES)} routes")
    assert not misses, "\n".join(misses[:40])


def test_a_sample_through_http(env: dict[str, Any]) -> None:
    """The same refusals as the service's, as HTTP answers: 403, SQLSTATE 42501, the function named, a
    position; on both gateways."""
    rng = random.Random(27)
    functions = refused_functions(env)
    sample = [(rng.choice(functions), rng.choice(list(SYNTAXES)), rng.choice(list(ROUTES))) for _ in range(60)]
    for kind in ("reader", "privileged"):
        with live_server(env["settings"][kind]) as live, live.client(TOKEN) as client:
            for (name, schema, args), syntax, route in sample:
                sql = statement(syntax, route, name, schema, args)
                response = client.post("/v1/query", json={"sql": sql})
                error = response.json()["error"]
                assert response.status_code == 403, (sql, response.text)
                assert error["sqlstate"] == "42501" and name in error["message"], (sql, error)
                assert error["line"] == 1 and error["column"] >= 1, (sql, error)


@pytest.mark.parametrize(
    "sql, name",
    [
        # the reported exploits: attribute notation ran each of these as a reader
        ("SELECT ('work_mem'::text).current_setting FROM pg.public.t", "current_setting"),
        ("SELECT x.v.current_setting FROM pg.public.t x", "current_setting"),
        ("SELECT (0.5).setseed FROM pg.public.t", "setseed"),
        ("SELECT (id::bigint).pg_advisory_lock FROM pg.public.t", "pg_advisory_lock"),
        ("SELECT ('SELECT 1'::text).ts_stat FROM pg.public.t", "ts_stat"),
        ("SELECT (1).pg_cancel_backend FROM pg.public.t", "pg_cancel_backend"),
        ("SELECT query_to_xml('SELECT 1', true, true, '') FROM pg.public.t", "query_to_xml"),
        ("SELECT xpath('/a', query_to_xml('SELECT 1', true, true, '')) FROM pg.public.t", "xpath"),
        ("SELECT (query_to_xml('SELECT 1', true, true, '')).xpath FROM pg.public.t", "query_to_xml"),
        ("SELECT database_to_xml(true, true, '')", "database_to_xml"),
        ("SELECT ('/etc/passwd'::text).pg_read_file FROM pg.public.t", "pg_read_file"),
        ("SELECT ('.'::text).pg_ls_dir FROM pg.public.t", "pg_ls_dir"),
        ("SELECT (pg_backend_pid()).pg_terminate_backend", "pg_backend_pid"),
        ("SELECT (42).pg_terminate_backend FROM lake.public.facts", "pg_terminate_backend"),
        # user-defined operators (qualified: unqualified ones resolve among trusted schemas only), casts and
        # functions run functions of their own
        ("SELECT v OPERATOR(public.<->) 'x' FROM pg.public.t", "OPERATOR(public.<->)"),
        ("SELECT id::public.mood FROM pg.public.t", "mood"),
        ("SELECT (v).leak FROM pg.public.t", "leak"),
        ("SELECT 'pg_read_file'::regproc", "regproc"),
        ("SELECT 'pg_read_file(text)'::regprocedure", "regprocedure"),
        ("SELECT 'pg_authid'::regclass", "regclass"),
        ("SELECT * FROM pg.public.t TABLESAMPLE system_time(1)", "system_time"),
        ("SELECT x.v FROM pg.public.t x, LATERAL pg_ls_dir('.') d", "pg_ls_dir"),
    ],
)
def test_reported_exploits(env: dict[str, Any], sql: str, name: str) -> None:
    for gateway in env["gateways"].values():
        with pytest.raises(Forbidden) as caught:
            gateway.plan(sql)
        assert name in str(caught.value), str(caught.value)


def test_columns_named_like_functions_are_columns(env: dict[str, Any]) -> None:
    """Attribute notation on a column of that name is a column: no false refusal of ``t.name``-style
    references (``name``, ``date``, ``text``, ``path`` are functions of PostgreSQL too)."""
    conn = env["conn"]
    conn.execute("CREATE TABLE IF NOT EXISTS named (id int PRIMARY KEY, name text, date date, path text)")
    conn.execute("GRANT SELECT ON named TO PUBLIC")
    gateway = env["gateways"]["reader"]
    gateway.catalog.version("pg", refresh=True)
    for sql in (
        "SELECT n.name, n.date, n.path FROM pg.public.named n",
        "SELECT named.name FROM pg.public.named",
        "SELECT public.named.name FROM public.named",
        "SELECT c.name FROM (SELECT name FROM pg.public.named) c",
        "WITH c AS (SELECT * FROM pg.public.named) SELECT c.path FROM c",
        "SELECT c.name FROM pg.public.named c, LATERAL (SELECT name FROM pg.public.named c) d",
        "WITH RECURSIVE r(id, path) AS (SELECT 1, 'a' UNION ALL SELECT id + 1, r.path FROM r WHERE id < 3) "
        "SELECT r.path FROM r",
    ):
        assert outcome(gateway, sql) == (200, ""), sql


# ------------------------------------------------------------------------------------------------ mutations

SEEDS = [
    "SELECT lower(v), upper(v), length(v) FROM pg.public.t",
    "SELECT count(*), sum(id) FROM lake.public.facts WHERE v = 'a'",
    "SELECT coalesce(v, 'x') || 'y', abs(-id) FROM pg.public.t ORDER BY 1",
    "SELECT date_trunc('day', now()), extract(year FROM now())",
    "SELECT id FROM pg.public.t WHERE v LIKE 'w%' AND id > 0",
    "SELECT * FROM generate_series(1, 3) g",
    "SELECT string_agg(v, ',') FROM lake.public.facts",
    "SELECT current_setting('work_mem')",
    "SELECT pg_read_file('/etc/passwd') FROM pg.public.t",
    "SELECT setseed(0.5)",
    "SELECT ts_stat('SELECT 1')",
    "SELECT lower(current_setting('work_mem')) FROM lake.public.facts",
]


def mutate(sql: str, rng: random.Random) -> str:
    """One random rewriting of ``sql`` that PostgreSQL reads as the same calls, or a call in another syntax."""
    try:
        tree = pgparse.parse(sql)
    except pgparse.PGQueryError:
        return sql
    calls = [c for c in pgcalls.calls(tree) if c.syntax == pgcalls.CALL and c.location >= 0]
    choice = rng.randrange(8)
    if calls and choice < 5:
        call = rng.choice(calls)
        start = call.location
        end = start + len(call.name)
        if sql[start:end].lower() != call.name:
            return sql
        written = [
            f'"{call.name}"',
            call.name.upper(),
            f"pg_catalog.{call.name}",
            "U&\"" + "".join(f"\\{ord(c):04x}" for c in call.name) + '"',
            f"{call.name}/**/ /* c */",
        ][choice]
        return sql[:start] + written + sql[end:]
    if choice == 5:
        return sql.replace("'", "$q$", 2) if sql.count("'") >= 2 else sql
    if choice == 6:
        return sql.replace("(", "((", 1).replace(")", "))", 1)
    return sql.replace(" ", " /* x */ ", rng.randrange(1, 4)).replace("=", "OPERATOR(pg_catalog.=)", 1)


def pg_refuses(guard: Any, sql: str) -> bool:
    """Does PostgreSQL's reading of ``sql`` call a function the allow-list refuses?"""
    for call in pgcalls.calls(pgparse.parse(sql)):
        plain = call.syntax in (pgcalls.CALL, pgcalls.TABLE) and call.schema in ("", "pg_catalog")
        if plain and not guard.call_allowed(call.name):
            return True
    return False


def test_mutations_agree_with_postgresql(env: dict[str, Any]) -> None:
    rng = random.Random(2027)
    gateway = env["gateways"]["reader"]
    disagreements: list[str] = []
    tried = 0
    for _ in range(1500):
        sql = rng.choice(SEEDS)
        for _ in range(rng.randrange(1, 4)):
            sql = mutate(sql, rng)
        try:
            pgparse.parse(sql)
        except pgparse.PGQueryError:
            continue
        tried += 1
        expect = pg_refuses(gateway.guard, sql)
        status, message = outcome(gateway, sql)
        if expect and status != 403:
            disagreements.append(f"runs a refused call: {sql} -> {status} {message[:150]}")
        elif not expect and status == 403:
            disagreements.append(f"refused though PostgreSQL calls nothing refused: {sql} -> {message[:150]}")
    print(f"\nmutations: {tried} statements of PostgreSQL's grammar")
    assert tried > 1000
    assert not disagreements, "\n".join(disagreements[:30])

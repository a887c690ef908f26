"""The guard's pure parts, unit level: SQL scoping of table names (gateway/scope.py), the settings it refuses at
start, token checks. The hostile suite (test_gateway_hostile.py) sends the same shapes through HTTP."""

from __future__ import annotations

import pytest
import sqlglot

from lakegate import settings as settings_mod
from lakegate.gateway import scope
from lakegate.gateway.errors import Forbidden, UnsupportedQuery

CASES = [
    # (sql, names bound to a CTE, names resolved through the catalog)
    ("SELECT path FROM duckdb_databases, (WITH duckdb_databases AS (SELECT 1) SELECT 1) s", [], ["duckdb_databases"]),
    ("WITH a AS (SELECT 1) SELECT * FROM a, b", ["a"], ["b"]),
    ("WITH a AS (SELECT * FROM a) SELECT * FROM a", ["a"], ["a"]),  # not recursive: the inner a is outside
    ("WITH a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", ["a"], ["b"]),  # b is not yet visible
    ("WITH a AS (SELECT 1), b AS (SELECT * FROM a) SELECT * FROM b", ["a", "b"], []),
    ("SELECT * FROM (WITH x AS (SELECT 1) SELECT * FROM x) s, x", ["x"], ["x"]),
    ("SELECT (WITH x AS (SELECT 1) SELECT * FROM x), (SELECT * FROM x)", ["x"], ["x"]),
    (
        "WITH x AS (SELECT 1) SELECT 1 WHERE EXISTS (SELECT * FROM x) AND 1 IN (SELECT 1 FROM pg.public.x)",
        ["x"],
        ["pg.public.x"],
    ),
    ("SELECT * FROM t, LATERAL (SELECT * FROM t) s", [], ["t", "t"]),
    ("WITH a AS (SELECT 1) SELECT * FROM a UNION SELECT * FROM a", ["a", "a"], []),
    ("(WITH a AS (SELECT 1) SELECT * FROM a) UNION SELECT * FROM a", ["a"], ["a"]),
    ('WITH "A" AS (SELECT 1) SELECT * FROM a', [], ["a"]),
    ('WITH a AS (SELECT 1) SELECT * FROM "A"', [], ['"A"']),
    ("WITH a AS (SELECT 1) SELECT * FROM public.a", [], ["public.a"]),
    ("WITH RECURSIVE t AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM t WHERE n < 3) SELECT * FROM t", ["t", "t"], []),
    (
        "WITH RECURSIVE t AS ((SELECT 1 AS n) UNION ALL (SELECT n + 1 FROM t JOIN u ON true)) SELECT * FROM t",
        ["t", "t"],
        ["u"],
    ),
    ("WITH c AS (SELECT 1) SELECT * FROM (WITH c AS (SELECT * FROM c) SELECT * FROM c) s", ["c", "c"], []),
]


@pytest.mark.parametrize("sql,ctes,tables", CASES)
def test_bind(sql: str, ctes: list[str], tables: list[str]) -> None:
    bound = scope.bind(sqlglot.parse_one(sql, read="postgres"))
    assert sorted(t.sql(dialect="postgres") for t in bound.ctes) == sorted(ctes)
    assert sorted(t.sql(dialect="postgres") for t in bound.tables) == sorted(tables)


@pytest.mark.parametrize(
    "sql,message",
    [
        ("WITH RECURSIVE d AS (SELECT * FROM d) SELECT * FROM d", "only in FROM/JOIN of its recursive term"),
        ("WITH RECURSIVE d AS (SELECT x FROM d UNION ALL SELECT 1) SELECT * FROM d", "recursive term"),
        ("WITH RECURSIVE d AS (SELECT 1 UNION ALL SELECT x FROM (SELECT * FROM d) s) SELECT * FROM d", "recursive"),
        ("WITH RECURSIVE d AS (SELECT 1 INTERSECT SELECT x FROM d) SELECT * FROM d", "recursive"),
        ("WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1) SELECT * FROM a", "defined later"),
        ("SELECT * FROM lake.public.t FOR VERSION AS OF (SELECT 1 FROM d)", "constant"),
        ("SELECT * FROM lake.public.t FOR TIMESTAMP AS OF x", "constant"),
    ],
)
def test_refused(sql: str, message: str) -> None:
    with pytest.raises(UnsupportedQuery, match=message) as caught:
        scope.bind(sqlglot.parse_one(sql, read="postgres"))
    assert caught.value.line == 1 and caught.value.column


def test_verify_accepts_only_generated_names() -> None:
    ast = sqlglot.parse_one('WITH c AS (SELECT 1) SELECT * FROM "lake.public.t", pg.public.u, c', read="postgres")
    scope.verify(ast, {("lake.public.t",), ("pg", "public", "u")})
    with pytest.raises(Forbidden, match="could not be bound"):
        scope.verify(ast, {("lake.public.t",)})


def test_deep_nesting_does_not_overflow_the_walk() -> None:
    sql = "SELECT " + "(SELECT " * 400 + "1" + ")" * 400
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(20000)  # sqlglot's parser recurses; the walk itself must not
    try:
        ast = sqlglot.parse_one(sql, read="postgres")
    finally:
        sys.setrecursionlimit(limit)
    assert scope.bind(ast).tables == []


@pytest.mark.parametrize("name", ["system", "TEMP", "memory", "main"])
def test_source_names_of_duckdb_databases_are_reserved(name: str) -> None:
    with pytest.raises(settings_mod.SettingsError, match="reserved"):
        settings_mod.load(environ={f"LAKEGATE_SOURCES__{name.upper()}__DSN": "host=/tmp"})


@pytest.mark.parametrize("tokens", ["a,,b", " ", "  padded "])
def test_empty_or_padded_tokens_are_refused_at_start(tokens: str, tmp_path) -> None:
    config = tmp_path / "lakegate.toml"
    config.write_text(f"[gateway]\ntokens = {[t for t in tokens.split(',')]!r}\n".replace("'", '"'))
    with pytest.raises(settings_mod.SettingsError, match=r"gateway.tokens\[\d\] is empty"):
        settings_mod.load(config, environ={})


def test_lakegate_serve_exits_2_naming_the_key(tmp_path) -> None:
    from lakegate.cli import main

    config = tmp_path / "lakegate.toml"
    config.write_text('[gateway]\ntokens = ["good", ""]\n')
    assert main(["serve", "--config", str(config)]) == 2


def test_tokens_are_compared_whole_and_never_from_the_user_name() -> None:
    import base64

    from lakegate.gateway.http_limits import presented_token, unauthorized_reason

    def basic(user: str, password: str) -> str:
        return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    assert presented_token(basic("tok", "")) is None
    assert presented_token(basic("", "tok")) == "tok"
    assert presented_token("Bearer ") is None and presented_token("Bearer tok") == "tok"
    assert unauthorized_reason(basic("tok", ""), ["tok"]) is not None
    assert unauthorized_reason("Bearer tok", ["other", "tok"]) is None
    assert unauthorized_reason("Bearer to", ["tok"]) == "the token is not valid"
    assert unauthorized_reason("", []) is None


def test_planning_is_interrupted_at_its_deadline_and_nothing_is_left_pending() -> None:
    import time

    from lakegate.gateway.deadline import Interrupted, interruptible, shielded
    from lakegate.gateway.execute import Watchdog

    watchdog = Watchdog()
    sql = "SELECT 1 WHERE 1 IN (" + ", ".join(["1"] * 200_000) + ")"  # seconds of sqlglot work
    try:
        with pytest.raises(Interrupted), interruptible(time.monotonic() + 0.2, watchdog):
            sqlglot.parse_one(sql, read="postgres")
        assert sum(range(3_000_000)) > 0  # no exception was left pending for this thread
        # a shielded block (I/O, locks) is never interrupted; a deadline that passed in it ends the region after
        finished = False
        with pytest.raises(Interrupted), interruptible(time.monotonic() + 0.05, watchdog), shielded():
            time.sleep(0.3)
            finished = True
        assert finished
        with interruptible(time.monotonic() + 30, watchdog):  # in time: no trace of the earlier regions
            assert sqlglot.parse_one("SELECT 1", read="postgres") is not None
    finally:
        watchdog.stop()


def test_statements_past_the_token_cap_are_refused_before_parsing() -> None:
    """A 1 MiB list of names (520,000 tokens) made the garbage collector pause every thread for seconds; past
    MAX_TOKENS the statement is refused (54000) before sqlglot builds its tree. A 100,000-element IN list, the
    largest the hostile suite sends, stays under the cap."""
    from lakegate.gateway import parse
    from lakegate.gateway.errors import BadRequest

    with pytest.raises(BadRequest) as caught:
        parse.parse("SELECT " + ", ".join(["a"] * (parse.MAX_TOKENS // 2 + 1)) + " FROM t")
    assert caught.value.sqlstate == "54000" and "more than the 250,000 the gateway reads" in str(caught.value)
    ok = parse.parse("SELECT 1 WHERE 1 IN (" + ", ".join(["1"] * 100_000) + ")")
    assert ok.kind == parse.QUERY

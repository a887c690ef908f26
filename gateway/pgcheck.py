"""PostgreSQL's own analysis and planning of a statement the DuckDB route runs: where PostgreSQL refuses the
statement, its error is the answer.

PostgreSQL analyses a statement (names, types, the resolution of functions and operators, the rules of GROUP BY
and of aggregates) and folds its constant subexpressions while planning it, before it reads a row. An error
raised there is PostgreSQL's answer whatever the data: ``SELECT 1/0``, ``CASE WHEN x THEN 1/0 ELSE 0 END``,
``array_agg('a' ORDER BY 'a')`` (42725), ``'x'::int`` in a CTE column nobody reads (22P02), ``int[] @> bigint[]``
(42883). DuckDB resolves, folds and prunes by its own rules: the lake route answered such statements with rows or
with DuckDB's own words (found by the differential fuzzer, ``tests/fuzz``; about one generated query in ten).

The lake's tables are replicas of source tables the gateway can read, so the gateway asks the source:
``EXPLAIN`` of the user's own text with every table named as its source table (EXPLAIN without ANALYZE plans
and runs nothing), in the pooled read-only session with a short statement timeout and the request's time zone.
It runs once per statement text — the plan cache keeps what passed — so a repeated dashboard query pays nothing.
An error there is raised with PostgreSQL's SQLSTATE and words; a success tells nothing more and the DuckDB route
runs.

Errors about the replica rather than the statement are not answers, and are ignored (the DuckDB route answers
as before): a column only the lake has (``_lsn``), a table or column the source has dropped or renamed since, a
permission the gateway's role lacks there, a time-out or a lost connection — only SQLSTATE classes 22 (data:
constant folding), 42 (syntax and access rules, but undefined tables/columns and privileges) and 0A000 count.
Statements that PostgreSQL could not read as written are not checked: time travel, change-log tables, lake tables
whose source the gateway does not query, tables of several sources, columns written with their source name,
texts whose names cannot be rewritten in place (:func:`lakegate.gateway.pgtext.user_text`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping

import psycopg
from sqlglot import exp

from lakegate.connectors.iceberg.schema import CHANGELOG_SUFFIX
from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.gateway import functions, pggrammar, pgtext, scope
from lakegate.gateway.catalog import LAKE, TableRef
from lakegate.gateway.errors import QueryFailed

log = logging.getLogger(__name__)

#: SQLSTATEs of class 42 that speak of the replica (names and privileges), not of the statement
_REPLICA = frozenset({"42703", "42P01", "42501", "42P02", "3F000"})
#: the longest the check may take, and its share of what is left of the request's time: a statement whose
#: constants are costly to fold (``repeat('x', 1000000000)``) is not an answer worth the wait, and is left to the
#: DuckDB route's own bounds
TIMEOUT_S = 0.25
SHARE = 0.4


#: PostgreSQL's words for a function name it has no function of at all (not an overload that does not match)
_NO_FUNCTION = re.compile(r"^function ([\w.]+)\(.*\) does not exist")


def _adopted(sqlstate: str, message: str) -> bool:
    """Whether PostgreSQL's error is the answer (see the module doc). A function PostgreSQL does not have at all
    is one of DuckDB's that the lake route offers (the guard allowed it): not an answer."""
    found = _NO_FUNCTION.match(message) if sqlstate == "42883" else None
    if found and found.group(1).split(".")[-1].lower() not in functions.POSTGRES_FUNCTIONS:
        return False
    return sqlstate not in _REPLICA and (sqlstate[:2] in ("22", "42") or sqlstate == "0A000")


def source_text(
    sql: str,
    ast: exp.Expression,
    resolve: Callable[[exp.Table], TableRef],
    lake_source: Callable[[TableRef], str | None],
) -> tuple[str, str] | None:
    """(source, the statement as that source's PostgreSQL reads it), or None where it cannot be stated."""
    if any(c.args.get("catalog") is not None for c in ast.find_all(exp.Column)):
        return None
    tables: list[tuple[exp.Table, str]] = []
    sources: set[str] = set()
    for table in scope.bind(ast).tables:
        if table.args.get("version"):
            return None
        ref = resolve(table)
        if ref.kind == LAKE:
            if ref.name.endswith(CHANGELOG_SUFFIX):
                return None
            try:
                source = lake_source(ref)
            except Exception:  # noqa: BLE001 - an unreadable lake table is the route's to report, not the check's
                return None
            if source is None:
                return None
        else:
            source = ref.source
        sources.add(source)
        tables.append((table, f"{_quote(ref.schema)}.{_quote(ref.name)}"))
    if len(sources) > 1:
        return None
    source = sources.pop() if sources else ""  # a statement without tables: any source answers it
    tree = pggrammar.tree(sql)
    text = pgtext.user_text(sql, tree, ast, tables, None) if tree else None
    return (source, text) if text else None


def explain(engine: PostgresEngine, text: str, zone: str, seconds: float = TIMEOUT_S) -> QueryFailed | None:
    """PostgreSQL's error for ``text`` at analysis or planning, where it is an answer (see the module doc)."""
    try:
        conn = engine.connection(timeout=seconds)
    except Exception:  # noqa: BLE001 - a source that cannot be reached is the route's to report, not the check's
        return None
    try:
        with conn.transaction():
            conn.execute(
                "SELECT set_config('statement_timeout', %s, true), set_config('TimeZone', %s, true)",
                (f"{max(1, int(seconds * 1000))}ms", zone),
            )
            conn.execute(f"EXPLAIN (COSTS OFF) {text}")
    except psycopg.Error as exc:
        sqlstate = exc.sqlstate or ""
        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if _adopted(sqlstate, message):
            return QueryFailed(f"PostgreSQL: {message} (SQLSTATE {sqlstate})", sqlstate=sqlstate)
        log.debug("the PostgreSQL check of a lake statement failed with %s: %s", sqlstate, exc)
    finally:
        engine.release(conn)
    return None


def check(
    sql: str,
    ast: exp.Expression,
    zone: str,
    resolve: Callable[[exp.Table], TableRef],
    lake_source: Callable[[TableRef], str | None],
    engines: Mapping[str, PostgresEngine],
    deadline: float | None = None,
) -> None:
    """Raise PostgreSQL's error for the DuckDB-route statement ``sql`` where PostgreSQL refuses it; ``deadline``
    (monotonic) is the request's."""
    stated = source_text(sql, ast, resolve, lake_source)
    if stated is None:
        return
    source, text = stated
    engine = engines.get(source) if source else next(iter(engines.values()), None)
    if engine is None:
        return
    seconds = TIMEOUT_S
    if deadline is not None:
        seconds = min(seconds, SHARE * (deadline - time.monotonic()))
        if seconds < 0.01:
            return
    error = explain(engine, text, zone, seconds)
    if error is not None:
        raise error


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'

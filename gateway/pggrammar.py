"""PostgreSQL's own grammar decides what is a statement (issue 10.2).

sqlglot reads SQL generously: it takes PostgreSQL's reserved words as bare names (``SELECT overlaps FROM t``,
``FROM t AS user``, ``SELECT end FROM t``), ``LIMIT 1, 2``, window frames PostgreSQL's grammar forbids. The
PostgreSQL route sends the user's text, so PostgreSQL rejects such a statement there; the lake route (DuckDB)
would answer it. So every query, on every route, is first read by PostgreSQL's parser itself — libpg_query, the
PostgreSQL server's grammar and lexer (``gram.y``, ``scan.l``) compiled as a library — and a statement it rejects
is answered as PostgreSQL answers it: SQLSTATE 42601 (a few of the grammar's errors have another code: see
``_CODES``), PostgreSQL's message (``syntax error at or near "overlaps"``, ``LIMIT #,# syntax is not
supported``), at its line and column. No keyword list of ours to keep in step with PostgreSQL's, and none of the
grammar's many positions (``SELECT 1 AS from`` and, since PostgreSQL 14, ``SELECT 1 all`` are valid; ``FROM t AS
select`` is not) to reimplement. (sqlglot itself still refuses a few statements PostgreSQL accepts, such as
``SELECT 1 AS select``: an error there, never an answer PostgreSQL would not give.)

Why this dependency (``pgparse``): the check must be PostgreSQL's grammar exactly, which only PostgreSQL's own
parser is; libpg_query is that parser extracted from PostgreSQL's source (by pganalyze, BSD-3), and ``pgparse``
is its thin Python binding (BSD-3, like libpg_query: fit for this Apache-2.0 project; abi3 wheels for Linux
x86_64/aarch64 and macOS arm64; PostgreSQL 17's grammar: for each of PostgreSQL 18's 494 keywords in nine
positions — a column, a bare or ``AS`` label, a table alias with and without ``AS``, after a dot, a function, a
CTE, a table — it accepts and rejects exactly what PostgreSQL 18's parser does, compared when it was chosen). A parse
takes about 15 µs and happens once per statement text (the plan cache keeps the result). ``pglast``, the
better-known binding (PostgreSQL 18's grammar), is GPL-3.0-or-later: a runtime dependency under it is the
project owner's decision for an Apache-2.0 distribution, not a helper's; only :func:`_parse` would change.

Not checked: a statement with time travel (``FOR VERSION AS OF``, ``FOR TIMESTAMP AS OF``: the gateway's own
clause, not PostgreSQL's), which sqlglot alone reads.
"""

from __future__ import annotations

import pgparse
from sqlglot import exp

from lakegate.gateway.errors import SqlSyntaxError

#: errors of PostgreSQL's grammar whose SQLSTATE is not 42601 (syntax_error): gram.y's ereport()s
_CODES = {
    "stack depth limit exceeded": "54001",
    "frame start cannot be UNBOUNDED FOLLOWING": "42P20",
    "frame end cannot be UNBOUNDED PRECEDING": "42P20",
    "frame starting from current row cannot have preceding rows": "42P20",
    "frame starting from following row cannot end with current row": "42P20",
    "frame starting from following row cannot have preceding rows": "42P20",
}


def _parse(sql: str) -> tuple[str, int] | None:
    """PostgreSQL's error for ``sql`` (its message and 1-based character position; 0: none), or None."""
    try:
        pgparse.normalize(sql)  # the raw parser, without building the tree in Python (deep nesting recursed)
    except pgparse.PGQueryError as exc:
        return str(exc.message), int(exc.position or 0)
    return None


def check(sql: str, ast: exp.Expr | None) -> None:
    """Raise PostgreSQL's syntax error where PostgreSQL's grammar rejects ``sql`` (whose sqlglot tree is
    ``ast``); a statement with time travel is not checked."""
    if ast is not None and any(table.args.get("version") for table in ast.find_all(exp.Table)):
        return
    error = _parse(sql)
    if error is None:
        return
    message, position = error
    line = column = None
    if position > 0:
        before = sql[: position - 1]
        line = before.count("\n") + 1
        column = position - (before.rfind("\n") + 1)
    raise SqlSyntaxError(message, line=line, column=column, sqlstate=_CODES.get(message, "42601"))

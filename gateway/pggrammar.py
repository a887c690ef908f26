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
project owner's decision for an Apache-2.0 distribution, not a helper's; only :func:`_inline` would change.

No statement stalls the server (issue 27.4). libpg_query holds the interpreter lock for the whole call and is
quadratic on a run of operator characters (``+-*/<>=~!@#%^&|`?``): the lexer rescans the rest of the run at every
comment start in it (``/**//**/...``, nested ``/*/*...*/*/``) and at every ``+``/``-`` it trims off an operator's
end (``+++...``). Measured here: 40,000 ``/**/`` 15 s, 100,000 ``+`` 8 s, 1 MiB of ``/**/`` about 20 minutes
(0.7 to 3.3 ns times the square of the run's length); every other shape tried (spaces, strings, dollar quotes,
comments with text, identifiers, lists, IN lists, deep nesting) is linear. So a statement is read here, in the
server's process, only when it is provably cheap (:func:`cheap`): at most :data:`INLINE_CHARS` characters and the
squares of its operator runs summing to at most :data:`INLINE_RUN_COST`, which bounds the quadratic part to under
1 ms, and the linear part to about 1 ms more (measured here, best of 9: sixteen runs of 64 ``+`` 0.74 ms, a 4 KiB
``SELECT 1,1,...`` 0.88 ms, every other 4 KiB shape above less). Any other statement is read by a worker process
(:mod:`lakegate.gateway.isolate`) that is killed when the request's deadline passes: a 408 like every other phase
of planning. Same parser, same answers: only where it runs differs. A :func:`heavy` statement (over 16 KiB, or
with long operator runs: the ones that may parse until their deadline) may use all worker processes but one, so
that the others never wait behind it, and the HTTP front end lets ``[gateway] large_statements`` of them be
planned at a time.

The verdict comes from ``pgparse.fingerprint`` (the raw parser and a walk over its tree), not ``normalize``: the
same raw parser and so the same errors (compared on every statement of the test corpus and 5,000 mutations of
them: identical), but ``normalize`` is super-linear in a target list's constants (a 1 MiB ``SELECT 1,1,...`` took
19 s) and overran the C stack (a crash of the whole process) on 25,000 chained ``+1`` or ``::int`` (which the
sqlglot guard refuses as too deep first, today).

Not checked: a statement with time travel (``FOR VERSION AS OF``, ``FOR TIMESTAMP AS OF``: the gateway's own
clause, not PostgreSQL's), which sqlglot alone reads.
"""

from __future__ import annotations

import re
import threading
import time
from typing import Any

import pgparse
from sqlglot import exp

from lakegate.gateway import deadline as deadline_mod
from lakegate.gateway import isolate
from lakegate.gateway.errors import QueryTimeout, SqlSyntaxError

#: errors of PostgreSQL's grammar whose SQLSTATE is not 42601 (syntax_error): gram.y's ereport()s
_CODES = {
    "stack depth limit exceeded": "54001",
    "frame start cannot be UNBOUNDED FOLLOWING": "42P20",
    "frame end cannot be UNBOUNDED PRECEDING": "42P20",
    "frame starting from current row cannot have preceding rows": "42P20",
    "frame starting from following row cannot end with current row": "42P20",
    "frame starting from following row cannot have preceding rows": "42P20",
}
#: Longest statement read in the server's process (characters): the same bound as the one below which
#: planning is not preempted (:data:`lakegate.gateway.service.PREEMPT_SQL`).
INLINE_CHARS = 4096
#: Largest sum of the squares of a statement's operator runs read in the server's process (a run of 256).
INLINE_RUN_COST = 1 << 16
#: Longer statements are *heavy*: sqlglot plans them for up to seconds, the parser may take long.
HEAVY_CHARS = 16 * 1024
#: A statement whose runs of 64 operator characters or more have squares summing beyond this is heavy (about
#: 50 ms of libpg_query); the shorter runs of one within :data:`HEAVY_CHARS` add at most 63 x 16 Ki.
HEAVY_RUN_COST = 1 << 24
#: How long a worker may parse when no request deadline is armed (callers outside a request).
DEFAULT_SECONDS = 60.0
_RUN = re.compile(r"[-+*/<>=~!@#%^&|`?]{2,}")
_LONG_RUN = re.compile(r"[-+*/<>=~!@#%^&|`?]{64,}")
_local = threading.local()  # the last text this thread read, and PostgreSQL's verdict on it


def cheap(sql: str) -> bool:
    """Whether libpg_query reads ``sql`` in about a millisecond at most (see the module doc)."""
    if len(sql) > INLINE_CHARS:
        return False
    cost = 0
    for run in _RUN.finditer(sql):  # runs in literals and comments count too: an overestimate is only slower
        cost += (run.end() - run.start()) ** 2
    return cost <= INLINE_RUN_COST


def heavy(sql: str) -> bool:
    """Whether ``sql`` may keep the server busy for long (see :data:`HEAVY_CHARS`, :data:`HEAVY_RUN_COST`): such
    statements take turns (``[gateway] large_statements``) and leave a parser process to the others. Cheap to
    tell on any text: at most one regex match per 64 characters of the first :data:`HEAVY_CHARS`."""
    if len(sql) > HEAVY_CHARS:
        return True
    cost = 0
    for run in _LONG_RUN.finditer(sql):
        cost += (run.end() - run.start()) ** 2
    return cost > HEAVY_RUN_COST


def _inline(sql: str, op: bytes) -> tuple[Any, ...]:
    try:
        if op == isolate.TREE:
            return ("ok", pgparse.parse(sql))
        pgparse.fingerprint(sql)
        return ("ok", None)
    except pgparse.PGQueryError as exc:
        return ("error", str(exc.message), int(exc.position or 0))


def _isolated(sql: str, op: bytes) -> tuple[Any, ...]:
    """The worker's answer; the deadline of the request this thread plans (else :data:`DEFAULT_SECONDS`)."""
    armed = deadline_mod.current()
    deadline = armed if armed is not None else time.monotonic() + DEFAULT_SECONDS
    try:
        with deadline_mod.shielded():  # waiting on a pipe: no interruption inside, the deadline is ours to keep
            try:
                return isolate.POOL.run(op, sql, deadline, heavy=heavy(sql))
            except isolate.Timeout:
                if armed is not None:
                    raise deadline_mod.Interrupted() from None  # the planner's 408, like every other phase
                raise
    except isolate.Timeout:
        raise QueryTimeout(
            f"PostgreSQL's parser did not finish reading the statement ({len(sql)} characters) within "
            f"{DEFAULT_SECONDS:g} s; it was stopped: make the statement smaller"
        ) from None
    except isolate.Crashed as crash:
        raise SqlSyntaxError(
            f"PostgreSQL's parser could not read the statement ({len(sql)} characters): its process ended "
            f"with {crash.how}; the statement is too deeply nested or too large, simplify it",
            sqlstate="54001",
        ) from None


def _read(sql: str, op: bytes) -> tuple[Any, ...]:
    """PostgreSQL's reading of ``sql``: ``("ok", tree or None)``, ``("error", message, position)``; raises
    RecursionError where decoding the tree of a deeply nested statement does."""
    memo: tuple[str, tuple[Any, ...]] | None = getattr(_local, "memo", None)
    if memo is not None and op == isolate.CHECK and (memo[0] is sql or memo[0] == sql):
        return memo[1]
    answer = _inline(sql, op) if cheap(sql) else _isolated(sql, op)
    if answer[0] == "recursion":
        raise RecursionError("maximum recursion depth exceeded while decoding PostgreSQL's parse tree")
    _local.memo = (sql, answer if answer[0] == "error" else ("ok", None))  # the verdict, not the tree
    return answer


def tree(sql: str) -> list[Any] | None:
    """libpg_query's parse tree of ``sql`` (the list ``pgparse.parse`` returns), or None where PostgreSQL's
    grammar rejects it (:func:`check` reports that error, without parsing again). Read in a worker process
    unless :func:`cheap`; a 408 when the request's deadline passes first."""
    answer = _read(sql, isolate.TREE)
    return answer[1] if answer[0] == "ok" else None


def check(sql: str, ast: exp.Expr | None) -> None:
    """Raise PostgreSQL's syntax error where PostgreSQL's grammar rejects ``sql`` (whose sqlglot tree is
    ``ast``); a statement with time travel is not checked."""
    if ast is not None and any(table.args.get("version") for table in ast.find_all(exp.Table)):
        return
    answer = _read(sql, isolate.CHECK)
    if answer[0] == "ok":
        return
    _, message, position = answer
    line = column = None
    if position > 0:
        before = sql[: position - 1]
        line = before.count("\n") + 1
        column = position - (before.rfind("\n") + 1)
    raise SqlSyntaxError(message, line=line, column=column, sqlstate=_CODES.get(message, "42601"))

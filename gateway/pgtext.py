"""The PostgreSQL route sends PostgreSQL the user's own text: sqlglot's regeneration of valid PostgreSQL is not
always valid PostgreSQL (``to_hex`` becomes ``hex``, ``date_bin`` and ``= ALL(array)`` change meaning...).

Only the table names change (``pg.public.t`` -> ``public.t``), by their positions in the text, which sqlglot's
tokens carry. The row cap wraps the query: ``SELECT * FROM (<text>) AS _lakegate LIMIT n``.

Trailing semicolons and comments are cut off (the text ends at its last token), so that what the cap appends
is never commented out nor a second statement.

The text is used only where sqlglot's reading of it cannot differ from PostgreSQL's: the guard checked sqlglot's
parse, so a text that PostgreSQL's lexer could read differently (backslash escapes, dollar quoting, nested
comments, Unicode escapes) goes out regenerated from the AST instead.
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import TokenError
from sqlglot.tokens import TokenType

from lakegate.gateway.pgdialect import DIALECT

#: lexical features whose reading may differ between sqlglot and PostgreSQL
_RISKY = re.compile(r"\\|\$|[uU]&|/\*.*/\*", re.DOTALL)


def user_text(sql: str, ast: exp.Expression, tables: list[tuple[exp.Table, str]]) -> str | None:
    """``sql`` with each table of ``tables`` replaced by its PostgreSQL name, or None where that is unsafe or
    the positions are not known."""
    if _RISKY.search(sql):
        return None
    if any(
        c.args.get("catalog") is not None or c.args.get("db") is not None for c in ast.find_all(exp.Column)
    ):
        return None  # source.schema.table.column references: regenerate
    spans: list[tuple[int, int, str]] = []
    for table, name in tables:
        starts, ends = [], []
        for part in table.parts:
            meta = part.meta
            if "start" not in meta or "end" not in meta:
                return None
            starts.append(meta["start"])
            ends.append(meta["end"])
        spans.append((min(starts), max(ends) + 1, name))
    stop = _end_of_statement(sql)
    if stop is None:
        return None
    spans.sort()
    out, at = [], 0
    for start, end, name in spans:
        if start < at or end > stop:
            return None
        out += [sql[at:start], name]
        at = end
    out.append(sql[at:stop])
    return "".join(out).strip()


def _end_of_statement(sql: str) -> int | None:
    """Where the statement's last token (not a ``;``) ends in ``sql``: what follows is semicolons and comments."""
    try:
        tokens = Dialect.get_or_raise(DIALECT).tokenize(sql)
    except TokenError:
        return None
    last = [t for t in tokens if t.token_type != TokenType.SEMICOLON]
    return last[-1].end + 1 if last else None


def capped(text: str, ast: exp.Expression, max_rows: int | None) -> str:
    """``text`` returning at most ``max_rows + 1`` rows: a LIMIT appended where the statement has none, the
    whole wrapped where its own LIMIT is larger or not a literal (a FETCH clause is left alone, as before)."""
    if max_rows is None or not isinstance(ast, exp.Select | exp.SetOperation) or ast.args.get("fetch"):
        return text
    cap = max_rows + 1
    limit = ast.args.get("limit")
    if limit is None and ast.args.get("offset") is None and ast.args.get("locks") is None:
        return f"{text} LIMIT {cap}"  # the text ends at a token (user_text), never inside a comment
    if limit is not None:
        value = limit.expression
        if isinstance(value, exp.Literal) and value.is_int and int(value.this) <= cap:
            return text
    return f"SELECT * FROM (\n{text}\n) AS _lakegate LIMIT {cap}"

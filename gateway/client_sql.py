"""SQL text on the client side: a small lexer that knows where literals and comments are, statement splitting,
and client-side parameter binding with safe quoting. Used by
:mod:`lakegate.gateway.client` and :mod:`lakegate.gateway.cli`.

Hand-written (no sqlglot) because the client must stay light: it imports neither the gateway's parser nor its
engines. The lexer only has to find the places where ``;`` and ``%s`` are *not* meaningful — inside
``'...'``, ``E'...'``, ``"..."``, ``$tag$...$tag$``, ``-- ...`` and (nested) ``/* ... */`` — which is a much
smaller job than parsing.

Parameters are bound client-side because the gateway takes SQL text only. Values become literals that the
gateway reads the same way on both routes (PostgreSQL and DuckDB, through sqlglot's PostgreSQL dialect):
strings are quoted with ``'`` doubled and nothing else (standard-conforming strings: a backslash is an
ordinary character in both engines and in sqlglot), numbers are written exactly, and typed values are
``CAST('text' AS type)``. Types without a literal both engines read alike (bytes, dicts) are refused rather
than guessed."""

from __future__ import annotations

import datetime
import decimal
import math
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

CODE, QUOTED, COMMENT = "code", "quoted", "comment"
_DOLLAR_TAG = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)?\$")
_PLACEHOLDER = re.compile(r"%(?:\((?P<name>[^)]*)\))?(?P<kind>.)?", re.DOTALL)


class SqlTextError(ValueError):
    """The SQL text or the parameters cannot be bound; the message says why and what to write instead."""


class UnsupportedValue(SqlTextError):
    """A parameter of a type that has no portable literal."""


def _quoted_end(sql: str, i: int, quote: str, backslash: bool) -> tuple[int, bool]:
    """End (index past the closing ``quote``) of a literal opened at ``i``, and whether it is closed."""
    j, n = i + 1, len(sql)
    while j < n:
        ch = sql[j]
        if backslash and ch == "\\":
            j += 2
            continue
        if ch == quote:
            if j + 1 < n and sql[j + 1] == quote:
                j += 2
                continue
            return j + 1, True
        j += 1
    return n, False


def _block_comment_end(sql: str, i: int) -> tuple[int, bool]:
    depth, j, n = 0, i, len(sql)
    while j < n:
        if sql.startswith("/*", j):
            depth += 1
            j += 2
        elif sql.startswith("*/", j):
            depth -= 1
            j += 2
            if depth == 0:
                return j, True
        else:
            j += 1
    return n, False


def _special_end(sql: str, i: int) -> tuple[str, int, bool] | None:
    """If a literal or comment starts at ``i``: its kind, its end and whether it is closed."""
    ch = sql[i]
    if ch == "'":
        escapes = i > 0 and sql[i - 1] in "eE" and (i < 2 or not (sql[i - 2].isalnum() or sql[i - 2] == "_"))
        return (QUOTED, *_quoted_end(sql, i, "'", escapes))
    if ch == '"':
        return (QUOTED, *_quoted_end(sql, i, '"', False))
    if sql.startswith("--", i):
        end = sql.find("\n", i)
        return COMMENT, len(sql) if end < 0 else end, True
    if sql.startswith("/*", i):
        return (COMMENT, *_block_comment_end(sql, i))
    if ch == "$" and (i == 0 or not (sql[i - 1].isalnum() or sql[i - 1] == "_")):
        match = _DOLLAR_TAG.match(sql, i)
        if match:
            end = sql.find(match.group(0), match.end())
            if end < 0:
                return QUOTED, len(sql), False
            return QUOTED, end + len(match.group(0)), True
    return None


def _pieces(sql: str) -> Iterator[tuple[str, str, bool]]:
    start = i = 0
    n = len(sql)
    while i < n:
        special = _special_end(sql, i)
        if special is None:
            i += 1
            continue
        if i > start:
            yield CODE, sql[start:i], True
        kind, end, closed = special
        yield kind, sql[i:end], closed
        start = i = end
    if start < n:
        yield CODE, sql[start:], True


def segments(sql: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` pieces of ``sql`` in order: ``code``, ``quoted`` (literals, quoted names) or
    ``comment``.
    An unterminated literal or comment runs to the end of the text."""
    for kind, text, _ in _pieces(sql):
        yield kind, text


def is_open(sql: str) -> bool:
    """True while ``sql`` ends inside a literal, quoted name or block comment (more lines are needed)."""
    return any(not closed for _, _, closed in _pieces(sql))


def split_statements(sql: str) -> tuple[list[str], str]:
    """Complete statements (each ending at a ``;`` outside literals and comments, without it) and the rest
    after the last ``;`` (possibly only whitespace). Empty statements are dropped."""
    statements: list[str] = []
    current: list[str] = []
    for kind, text in segments(sql):
        if kind != CODE:
            current.append(text)
            continue
        parts = text.split(";")
        for part in parts[:-1]:
            current.append(part)
            statement = "".join(current).strip()
            if statement and not only_comments(statement):
                statements.append(statement)
            current = []
        current.append(parts[-1])
    return statements, "".join(current)


def only_comments(sql: str) -> bool:
    return all(kind == COMMENT or not text.strip() for kind, text in segments(sql))


# ------------------------------------------------------------------------------------------------ binding


def bind(sql: str, params: Sequence[Any] | Mapping[str, Any] | None) -> str:
    """``sql`` with ``%s`` (sequence) or ``%(name)s`` (mapping) placeholders replaced by literals. ``%%`` is a
    literal ``%`` (also inside quotes, as with psycopg). Placeholders inside literals and comments are left
    alone. ``params=None``: the SQL is sent as it is (no ``%%`` processing either)."""
    if params is None:
        return sql
    named = isinstance(params, Mapping)
    if not named and (isinstance(params, str | bytes) or not isinstance(params, Sequence)):
        raise SqlTextError(
            f"parameters must be a sequence (for %s) or a mapping (for %(name)s), not {type(params).__name__}"
        )
    used = 0
    out: list[str] = []
    for kind, text in segments(sql):
        if kind == QUOTED:  # as with psycopg, %% is a % everywhere once parameters are given
            out.append(text.replace("%%", "%"))
            continue
        if kind == COMMENT:
            out.append(text)
            continue
        pieces, used = _bind_code(text, params, named, used)
        out.append(pieces)
    if not named and used != len(params):  # type: ignore[arg-type]
        raise SqlTextError(
            f"the query has {used} %s placeholder(s) but {len(params)} parameter(s) were given"
        )  # type: ignore[arg-type]
    return "".join(out)


def _bind_code(text: str, params: Any, named: bool, used: int) -> tuple[str, int]:
    out: list[str] = []
    pos = 0
    for match in _PLACEHOLDER.finditer(text):
        out.append(text[pos : match.start()])
        pos = match.end()
        name, kind = match.group("name"), match.group("kind")
        if kind == "%" and name is None:
            out.append("%")
            continue
        if kind != "s":
            raise SqlTextError(
                f"unsupported placeholder {match.group(0)!r}: use %s or %(name)s, and %% for a literal %"
            )
        if (name is not None) != named:
            raise SqlTextError(
                "use %(name)s placeholders with a mapping of parameters and %s with a sequence, not both"
            )
        if named:
            if name not in params:
                raise SqlTextError(
                    f"no parameter named {name!r} was given (given: {', '.join(map(str, params))})"
                )
            out.append(literal(params[name]))
        else:
            if used >= len(params):
                raise SqlTextError(
                    f"the query has more %s placeholders than the {len(params)} parameter(s) given"
                )
            out.append(literal(params[used]))
            used += 1
    out.append(text[pos:])
    return "".join(out), used


def _number(text: str) -> str:
    return f"({text})" if text.startswith("-") else text


def _cast(text: str, sql_type: str) -> str:
    return f"CAST({quote(text)} AS {sql_type})"


def quote(text: str) -> str:
    """A string literal: ``'`` doubled, everything else as it is."""
    if "\x00" in text:
        raise UnsupportedValue(
            "a string parameter contains a NUL character, which PostgreSQL text cannot hold"
        )
    return "'" + text.replace("'", "''") + "'"


def literal(value: Any) -> str:
    """The SQL literal of a Python value (see the module docstring)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return _number(str(value))
    if isinstance(value, float):
        if math.isfinite(value):
            return _cast(repr(value), "DOUBLE PRECISION")
        return _cast(
            "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity"), "DOUBLE PRECISION"
        )
    if isinstance(value, decimal.Decimal):
        if value.is_finite():
            return _number(format(value, "f"))
        return _cast("NaN" if value.is_nan() else ("Infinity" if value > 0 else "-Infinity"), "NUMERIC")
    if isinstance(value, str):
        return quote(value)
    return _typed(value)


def _typed(value: Any) -> str:
    if isinstance(value, datetime.datetime):
        return _cast(value.isoformat(), "TIMESTAMPTZ" if value.utcoffset() is not None else "TIMESTAMP")
    if isinstance(value, datetime.date):
        return _cast(value.isoformat(), "DATE")
    if isinstance(value, datetime.time):
        return _cast(value.isoformat(), "TIME")
    if isinstance(value, datetime.timedelta):
        micros = value // datetime.timedelta(microseconds=1)
        return _cast(f"{micros} microseconds", "INTERVAL")
    if isinstance(value, uuid.UUID):
        return _cast(str(value), "UUID")
    if isinstance(value, tuple):
        if not value:
            raise UnsupportedValue("an empty tuple cannot be an IN list; leave the condition out instead")
        return "(" + ", ".join(literal(v) for v in value) + ")"
    if isinstance(value, list):
        if not value:
            raise UnsupportedValue("an empty list has no element type; write e.g. ARRAY[]::int[] in the SQL")
        return "ARRAY[" + ", ".join(literal(v) for v in value) + "]"
    if isinstance(value, bytes | bytearray | memoryview):
        raise UnsupportedValue(
            "bytes parameters are not supported (the gateway's engines read binary literals differently); "
            "compare encode(column, 'hex') with the hex text instead"
        )
    raise UnsupportedValue(
        f"cannot pass a {type(value).__name__} as a parameter; pass str, int, float, Decimal, bool, None, "
        "date/time/datetime/timedelta, UUID, a tuple (for IN) or a list (for ARRAY)"
    )

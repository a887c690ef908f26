"""Bounds on the lake route's calls that DuckDB cannot interrupt (rules of :mod:`lakegate.gateway.dialect`).

DuckDB sees an interrupt between vectors of 2048 rows, never inside one call over a vector nor while it folds a
constant at plan time; :mod:`lakegate.connectors.duckdb.pgbounds` bounds the arguments of the functions whose one
call can take seconds. This module bounds what is syntax rather than a call, on the statement:

* numeric literals: one longer than PostgreSQL's numeric holds (131072 digits before the point, 16383 after) is
  refused as PostgreSQL refuses it (22003, ``value overflows numeric format``), before another rule writes it out
  (``1e99999999`` was a 100 MB error body, ``1e999999999`` a MemoryError); one of more than 38 digits without an
  exponent, which DuckDB reads as a double (``111...1`` of 5000 digits answered ``Infinity``), is refused as the
  decimal rules refuse the others;
* ``LIKE``/``ILIKE`` (and DuckDB's ``~~``, ``like_escape``... called by name, and ``~~~``, its GLOB): DuckDB
  matches with backtracking, so that each ``%`` followed by more pattern multiplies the cost by the text's length
  (``'%a%a%a_b'`` over 2000 characters: 13 s, over 20,000: hours). A literal pattern with two such ``%`` becomes
  the regular expression it means, which RE2 matches in linear time; any other pattern (a column, a concatenation)
  goes through ``pg_like``, which refuses (54000) a text too long for its pattern's ``%`` before matching;
* volatile functions (``random()``, ``uuid()``...) in the arguments of the functions whose bound is a ``CASE``
  (:func:`~lakegate.connectors.duckdb.pgbounds.case_checked`) are refused: DuckDB would compute the argument once
  for the check and again for the call;
* ``lpad``/``rpad`` to a literal length, ``replace`` and ``printf`` with literal patterns within their bounds call
  the built-in without the macro's per-row check (``pg_raw_*``): the gateway checked them here.

The literal rule runs first among the rules; the rest is :func:`bound`, a pass over the rewritten statement
(it must see the ``LIKE`` that other rules make, such as ``LIKE ANY``). Written by hand: no library does this.
"""

from __future__ import annotations

import collections
import re
from decimal import Decimal, InvalidOperation

from sqlglot import exp

from lakegate.connectors.duckdb import pgbounds
from lakegate.gateway.dialect import Rule, call, refusal
from lakegate.gateway.errors import BadRequest, QueryFailed, UnsupportedQuery
from lakegate.gateway.parse import position
from lakegate.gateway.pgtyping import Typer

NUMERIC_BEFORE = 131072  #: PostgreSQL's numeric: digits before the decimal point
NUMERIC_AFTER = 16383  #: and after it
DECIMAL_DIGITS = 38  #: DuckDB's decimal

#: DuckDB's names of LIKE and its kin: (case-insensitive, negated, glob, has an escape argument)
LIKE_NAMES: dict[str, tuple[bool, bool, bool, bool]] = {
    "~~": (False, False, False, False),
    "!~~": (False, True, False, False),
    "~~*": (True, False, False, False),
    "!~~*": (True, True, False, False),
    "like_escape": (False, False, False, True),
    "not_like_escape": (False, True, False, True),
    "ilike_escape": (True, False, False, True),
    "not_ilike_escape": (True, True, False, True),
    "~~~": (False, False, True, False),
}
VOLATILE = frozenset({"random", "uuid", "gen_random_uuid", "uuidv4", "uuidv7", "nextval", "currval"})
_CALL = re.compile(r'("?)([A-Za-z_][A-Za-z0-9_$]*|[~!]+\*?)\1\s*\(')
_REGEX_SPECIAL = set(".^$|?*+()[]{}\\")


# ---------------------------------------------------------------------------------------------- literals


def overflows(value: Decimal) -> bool:
    """Whether PostgreSQL's numeric cannot hold ``value`` (a finite decimal)."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    scale = max(0, -exponent)
    before = 0 if not any(digits) else len(digits) + exponent
    return before > NUMERIC_BEFORE or scale > NUMERIC_AFTER


def _decimal(text: str) -> Decimal | None:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        return None
    return value if value.is_finite() else None


def _overflow(node: exp.Expr) -> QueryFailed:
    line, column = position(node)  # type: ignore[arg-type]
    return QueryFailed("value overflows numeric format", line=line, column=column, sqlstate="22003")


def _literals(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A number PostgreSQL's numeric cannot hold, written or cast from text, is its error; a long one without an
    exponent (a double in DuckDB) is refused."""
    if isinstance(node, exp.Literal) and not node.is_string:
        value = _decimal(node.this)
        if value is not None and overflows(value):
            raise _overflow(node)
        text = node.this.strip().lstrip("+-")
        if (
            value is not None
            and "e" not in text.lower()
            and len(text.replace(".", "").lstrip("0")) > DECIMAL_DIGITS
        ):
            shown = text if len(text) <= 48 else f"{text[:40]}... ({len(text)} characters)"
            raise refusal(node, f"the numeric {shown} (more than {DECIMAL_DIGITS} digits)")
    elif isinstance(node, exp.Cast) and node.to.this == exp.DType.DECIMAL and not node.to.expressions:
        inner = node.this
        if isinstance(inner, exp.Literal) and inner.is_string:
            value = _decimal(inner.this)
            if value is not None and overflows(value):
                raise _overflow(node)
    return None


# ------------------------------------------------------------------------------------------------- LIKE


def _inner_wildcards(pattern: str, escape: str | None, wildcard: str) -> int:
    """Runs of ``wildcard`` that more pattern follows (each one a level of DuckDB's backtracking)."""
    runs, i, in_run = 0, 0, False
    while i < len(pattern):
        char = pattern[i]
        if escape is not None and char == escape:
            i += 2
            in_run = False
            continue
        if char == wildcard:
            if not in_run:
                runs += 1
            in_run = True
        else:
            in_run = False
        i += 1
    return runs - (1 if pattern.endswith(wildcard) and in_run else 0)


def like_regex(pattern: str, escape: str | None) -> str | None:
    """The RE2 expression a LIKE pattern means, matched whole with ``.`` across newlines (None: a pattern that
    ends with its escape character, which is an error the matcher itself should report)."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if escape is not None and char == escape:
            if i + 1 >= len(pattern):
                return None
            char = pattern[i + 1]
            out.append("\\" + char if char in _REGEX_SPECIAL else char)
            i += 2
            continue
        if char == "%":
            if not out or out[-1] != ".*":
                out.append(".*")
        elif char == "_":
            out.append(".")
        else:
            out.append("\\" + char if char in _REGEX_SPECIAL else char)
        i += 1
    return "".join(out)


def _costly(pattern: str, escape: str | None, insensitive: bool) -> bool:
    """Whether DuckDB would backtrack over the pattern: two ``%`` with more pattern after each, and not DuckDB's
    linear matcher (LIKE with only ``%`` and text, no escape)."""
    if _inner_wildcards(pattern, escape, "%") < 2:
        return False
    return insensitive or escape is not None or "_" in pattern


def _string(node: exp.Expr | None) -> str | None:
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def _like(
    node: exp.Expr,
    subject: exp.Expr,
    pattern: exp.Expr,
    escape: exp.Expr | None,
    kind: tuple[bool, bool, bool, bool],
) -> exp.Expr | None:
    """The bounded form of one LIKE (None: leave it as it is)."""
    insensitive, negated, glob, _ = kind
    text, escape_text = _string(pattern), _string(escape) if escape is not None else None
    literal = text is not None and (escape is None or escape_text is not None)
    if glob:
        if literal and _inner_wildcards(text or "", None, "*") < 2:
            return None
        out: exp.Expr = call("pg_glob", subject.copy(), pattern.copy())
    elif literal:
        assert text is not None
        if not _costly(text, escape_text or None, insensitive):
            return None
        regex = like_regex(text, escape_text or None)
        if regex is None:
            return None
        out = call(
            "pg_ilike_regex" if insensitive else "pg_like_regex", subject.copy(), exp.Literal.string(regex)
        )
    else:
        esc = escape.copy() if escape is not None else exp.Literal.string("")
        name = "pg_ilike" if insensitive else "pg_like"
        out = call(name, subject.copy(), pattern.copy(), esc)
    return exp.Not(this=out) if negated else out


def _like_site(
    node: exp.Expr,
) -> tuple[exp.Expr, exp.Expr, exp.Expr, exp.Expr | None, tuple[bool, bool, bool, bool]] | None:
    """(the node to replace, subject, pattern, escape, kind) of a LIKE in any of its spellings."""
    if isinstance(node, exp.Like | exp.ILike) and not isinstance(node.expression, exp.Any | exp.All):
        kind = (isinstance(node, exp.ILike), bool(node.args.get("negate")), False, False)
        parent = node.parent
        if isinstance(parent, exp.Escape) and parent.this is node:
            return parent, node.this, node.expression, parent.expression, kind
        return node, node.this, node.expression, None, kind
    if isinstance(node, exp.Anonymous) and node.name.lower() in LIKE_NAMES:
        kind = LIKE_NAMES[node.name.lower()]
        args = list(node.expressions)
        if len(args) == (3 if kind[3] else 2):
            return node, args[0], args[1], args[2] if kind[3] else None, kind
    return None


# ---------------------------------------------------------------------------------------------- volatile


def volatile(node: exp.Expr) -> bool:
    """Whether ``node`` is itself a call of a volatile function (``random()``, ``gen_random_uuid()`` ...)."""
    if isinstance(node, exp.Rand | exp.Uuid):
        return True
    return isinstance(node, exp.Anonymous) and node.name.lower() in VOLATILE


def _calls(node: exp.Expr) -> collections.Counter[str]:
    return collections.Counter(m.group(2).lower() for m in _CALL.finditer(node.sql(dialect="duckdb")))


def _own_calls(node: exp.Expr) -> set[str]:
    """The DuckDB functions ``node`` itself calls (its SQL's calls, less its arguments')."""
    own = _calls(node)
    for child in node.iter_expressions():
        own -= _calls(child)
    return set(own)


def _refuse_volatile_arguments(ast: exp.Expr) -> None:
    """A volatile call inside the arguments of a function whose bound is checked by a CASE is refused."""
    seen: set[int] = set()
    for node in ast.walk():
        if not volatile(node):
            continue
        ancestor = node.parent
        while ancestor is not None:  # a scalar subquery in an argument is computed twice too
            if id(ancestor) not in seen:
                seen.add(id(ancestor))
                names = sorted(_own_calls(ancestor) & pgbounds.case_checked())
                if names:
                    line, column = position(ancestor)  # type: ignore[arg-type]
                    raise UnsupportedQuery(
                        f"{names[0]}() over {node.sql(dialect='postgres')} cannot run on the lake route: DuckDB "
                        "would compute the volatile argument once to check its size and again for the call; "
                        "compute it on a PostgreSQL source, or without the volatile function",
                        line=line,
                        column=column,
                    )
            ancestor = ancestor.parent


# ------------------------------------------------------------------------------------- literal arguments


def _int(node: exp.Expr | None) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string and node.is_int:
        return int(node.this)
    return None


def _checked_here(node: exp.Expr) -> exp.Expr | None:
    """A call whose bounding arguments are literals within the bound, to the built-in without the shadowing
    macro's per-row check (None: leave it to the macro). ``rpad(c, 10, ' ')`` is what every char(n) column
    costs."""
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    if isinstance(node, exp.Pad) or name in ("lpad", "rpad") and len(node.expressions) == 3:
        if isinstance(node, exp.Pad):
            left = bool(node.args.get("is_left"))
            args = [node.this, node.expression, node.args.get("fill_pattern") or exp.Literal.string(" ")]
        else:
            left, args = name == "lpad", list(node.expressions)
        length = _int(args[1])
        if length is not None and length <= pgbounds.MAX_TEXT:
            return call("pg_raw_lpad" if left else "pg_raw_rpad", *(a.copy() for a in args))
    elif isinstance(node, exp.Replace) or name == "replace" and len(node.expressions) == 3:
        args = list(node.expressions) if name else [node.this, node.expression, node.args.get("replacement")]
        old, new = _string(args[1]), _string(args[2])
        if old is not None and new is not None and len(new) <= 16 * max(len(old), 1):
            return call("pg_raw_replace", *(a.copy() for a in args if a is not None))
    elif name == "printf" and 1 <= len(node.expressions) <= 17:
        fmt = _string(node.expressions[0])
        if fmt is not None and not pgbounds.printf_too_wide(fmt):
            return call(f"pg_raw_printf{len(node.expressions) - 1}", *(a.copy() for a in node.expressions))
    return None


def bound(ast: exp.Expr) -> None:
    """The pass over the rewritten statement: LIKE in its bounded form, volatile arguments refused, calls whose
    literal arguments are within their bounds unchecked. Children go first: a node replaced after its parent
    would be one the parent's replacement no longer holds (it holds copies)."""
    for node in reversed(list(ast.walk())):
        site = _like_site(node)
        if site is not None:
            replaced, subject, pattern, escape, kind = site
            new = _like(replaced, subject, pattern, escape, kind)
            if new is not None:
                replaced.replace(new)
    _refuse_volatile_arguments(ast)
    _finite_ages(ast)
    for node in reversed(list(ast.walk())):
        unchecked = _checked_here(node)
        if unchecked is not None:
            node.replace(unchecked)
    _refuse_expansion(ast)


def _finite_ages(ast: exp.Expr) -> None:
    """``age()`` with every argument checked finite (``pg_finite_ts``), whichever rule wrote the call: DuckDB's
    answer for an infinite timestamp is a huge interval or NULL, PostgreSQL 17's an infinite interval."""
    for node in list(ast.find_all(exp.Anonymous)):
        if node.name.lower() == "age":
            node.set("expressions", [_finite(a) for a in node.expressions])


def _finite(arg: exp.Expr) -> exp.Expr:
    if isinstance(arg, exp.Literal) and arg.is_string:  # typed by the other argument; only 'infinity' is checked
        if arg.this.strip().lower().lstrip("+-") != "infinity":
            return arg
        arg = exp.Cast(this=arg, to=exp.DataType.build("TIMESTAMP"))
    return exp.Anonymous(this="pg_finite_ts", expressions=[arg])


#: the most nodes a statement may have once DuckDB has expanded its macros (TPC-H's queries: a few hundred)
MAX_EXPANDED = 200_000


def _refuse_expansion(ast: exp.Expr) -> None:
    """A statement whose macro calls DuckDB would expand past :data:`MAX_EXPANDED` nodes is refused before
    DuckDB sees it: each macro copies an argument as often as its body uses it, nested calls multiply, and
    DuckDB's binder does not stop for a time limit (nested regexp_replace: 7 copies a level)."""
    from lakegate.connectors.duckdb.engine import macro_fanouts  # built once, on first use

    fanouts = macro_fanouts()
    size: dict[int, int] = {}
    for node in reversed(list(ast.walk())):  # children first
        name = (
            node.name
            if isinstance(node, exp.Anonymous)
            else node.sql_name()
            if isinstance(node, exp.Func)
            else ""
        )
        fan = fanouts.get(name.lower(), 1) if name else 1
        size[id(node)] = 1 + fan * sum(size.get(id(c), 1) for c in node.iter_expressions())
        if size[id(node)] > MAX_EXPANDED:
            raise BadRequest(
                f"the statement is too complex: DuckDB would expand its nested calls of {name.lower() or 'functions'}"
                f"() to more than {MAX_EXPANDED:,} expressions (each call copies its argument), and could not be "
                "stopped meanwhile; nest fewer calls, or compute the inner value once in a subquery",
                code="too_large",
                sqlstate="54001",
            )


RULES: list[Rule] = [_literals]

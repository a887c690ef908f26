"""``SIMILAR TO`` and ``format()`` on the DuckDB route as PostgreSQL computes them (rules of
:mod:`lakegate.gateway.dialect`).

``SIMILAR TO`` with a literal pattern becomes the regular expression PostgreSQL's ``similar_to_escape`` builds
(``^(?:...)$``; ``%`` -> ``.*``, ``_`` -> ``.``, ``(`` -> ``(?:``, ``.``/``^``/``$``/``\\`` escaped, the escape
character (backslash unless ``ESCAPE`` says otherwise) quoting the next one), matched by RE2 with ``.`` across
newlines, as PostgreSQL's regular expressions match. Whether a match exists is the same in both engines for what
this produces; bracket expressions, escaped letters or digits (class escapes such as ``\\d``, whose classes the
engines define differently), bounds other than ``{m}``/``{m,}``/``{m,n}`` and the ``\\"`` separators of
``SUBSTRING`` are refused, as is a pattern that is not a literal.

``format()`` with a literal format string of ``%s``, ``%L`` and ``%%`` over text and integer arguments becomes a
concatenation (``%s`` of NULL is empty, ``%L`` of NULL is ``NULL`` unquoted, as PostgreSQL's; ``%I`` is
:mod:`lakegate.connectors.duckdb.pgident`'s ``quote_ident``, NULL an error); widths and positions are refused.
Written by hand: no library translates either.
"""

from __future__ import annotations

import re
from typing import Any

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, refusal
from lakegate.gateway.pgtyping import Typer

try:  # Python's own parser of regular expressions (re._parser since 3.11), to count and check groups
    import re._parser as re_parser  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_parse as re_parser  # type: ignore[no-redef]

_BOUND = re.compile(r"\{\d+(?:,\d*)?\}")
_FORMAT = re.compile(r"%(.)", re.DOTALL)


def similar_regex(pattern: str, escape: str | None) -> str | None:
    """The regular expression of a SIMILAR TO pattern (None: not one this module translates exactly)."""
    out = ["^(?:"]
    after_escape = False
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if after_escape:
            if char.isalnum() or char == '"':
                return None  # class escapes (\d ...) and SUBSTRING's separators
            out.append("\\" + char)
            after_escape = False
        elif escape is not None and char == escape:
            after_escape = True
        elif char == "[":
            return None
        elif char == "{":
            bound = _BOUND.match(pattern, i)
            if bound is None:
                return None
            out.append(bound.group(0))
            i = bound.end()
            continue
        elif char == "%":
            out.append(".*")
        elif char == "_":
            out.append(".")
        elif char == "(":
            out.append("(?:")
        elif char in "\\.^$":
            out.append("\\" + char)
        else:
            out.append(char)
        i += 1
    if after_escape:
        return None  # PostgreSQL: "invalid escape string"
    out.append(")$")
    return "".join(out)


def _similar(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.SimilarTo) and isinstance(node.parent, exp.Escape):
        return None  # with its ESCAPE clause, below
    escape: str | None = "\\"
    if isinstance(node, exp.Escape) and isinstance(node.this, exp.SimilarTo):
        clause = node.expression
        if not (isinstance(clause, exp.Literal) and clause.is_string and len(clause.name) <= 1):
            raise refusal(node, "SIMILAR TO with an ESCAPE other than one character")
        escape = clause.name or None
        similar = node.this
    elif isinstance(node, exp.SimilarTo):
        similar = node
    else:
        return None
    pattern = similar.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise refusal(node, "SIMILAR TO with a pattern that is not a literal")
    regex = similar_regex(pattern.name, escape)
    if regex is None:
        raise refusal(
            node,
            f"SIMILAR TO {pattern.name!r} (bracket expressions, class escapes and other bounds than {{m,n}} "
            "differ between PostgreSQL's regular expressions and DuckDB's)",
        )
    return call("regexp_matches", similar.this, exp.Literal.string(regex), exp.Literal.string("s"))


def _format(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Format):
        return None
    text, args = node.this, list(node.expressions)
    if not (isinstance(text, exp.Literal) and text.is_string):
        raise refusal(node, "format() with a format string that is not a literal")
    for arg in args:
        typ = types.of(arg)
        if typ is None or not (typ.string or typ.integer):
            raise refusal(node, "format() of other than text and integer values (their text differs)")
    pieces: list[exp.Expr] = []
    at, used = 0, 0
    for match in _FORMAT.finditer(text.name):
        pieces.append(exp.Literal.string(text.name[at : match.start()]))
        at = match.end()
        kind = match.group(1)
        if kind == "%":
            pieces.append(exp.Literal.string("%"))
            continue
        if kind not in "sLI" or used >= len(args):
            raise refusal(node, f"format() with %{kind} (or too few arguments)")
        value = args[used]
        used += 1
        if kind == "s":
            pieces.append(call("coalesce", exp.cast(value, "text"), exp.Literal.string("")))
        elif kind == "I":
            pieces.append(call("pg_format_ident", exp.cast(value, "text")))
        else:
            pieces.append(
                call("coalesce", call("quote_literal", exp.cast(value, "text")), exp.Literal.string("NULL"))
            )
    if "%" in text.name[at:]:
        raise refusal(node, "format() with an unterminated % specifier")
    pieces.append(exp.Literal.string(text.name[at:]))
    out: exp.Expr = pieces[0]
    for piece in pieces[1:]:
        out = exp.DPipe(this=out, expression=piece, safe=True)
    return exp.Paren(this=out)


def match_groups(pattern: str) -> int | None:
    """The capture groups of a regular expression whose every group takes part in every match (None: a
    pattern this module does not translate — an optional or alternative group, which PostgreSQL reports as
    NULL and DuckDB's regexp_extract as '', lookaround or back references)."""
    try:
        parsed = re_parser.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return None
    return parsed.state.groups - 1 if _every_group_matches(list(parsed), False) else None


def literal_pattern(node: exp.Expr, name: str, pattern: Any, flags: Any, allowed: str) -> int:
    """The number of groups of the literal pattern of ``name()`` (``regexp_match``, ``regexp_matches``), whose
    flags may be those of ``allowed``; or the refusal of what the lake route cannot match as PostgreSQL does."""
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise refusal(node, f"{name}() with a pattern that is not a literal")
    if flags is not None and not (
        isinstance(flags, exp.Literal) and flags.is_string and set(flags.this) <= set(allowed)
    ):
        raise refusal(node, f"{name}() with flags other than {' and '.join(repr(f) for f in allowed)}")
    groups = match_groups(pattern.this)
    if groups is None or re.search(r"\\[A-Za-z]|\[\[:", pattern.this):
        raise refusal(
            node,
            f"{name}() with the pattern {pattern.this!r} (class escapes such as \\w, whose classes the engines "
            "define differently, optional or alternative groups, lookaround)",
        )
    return groups


def _every_group_matches(items: list[Any], optional: bool) -> bool:
    for op, av in items:
        name = str(op)
        if name == "SUBPATTERN":
            if (optional and av[0] is not None) or not _every_group_matches(list(av[-1]), optional):
                return False
        elif name == "BRANCH":
            if not all(_every_group_matches(list(b), True) for b in av[1]):
                return False
        elif name.endswith("REPEAT"):
            if not _every_group_matches(list(av[2]), optional or av[0] == 0):
                return False
        elif name in ("ASSERT", "ASSERT_NOT", "GROUPREF", "GROUPREF_EXISTS", "ATOMIC_GROUP"):
            return False
    return True


def _regexp_match(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``regexp_match(s, pattern[, flags])``: the first match's groups (or the whole match), NULL without one;
    ``.`` matches newlines, as in PostgreSQL's regular expressions."""
    if not (isinstance(node, exp.Anonymous) and node.name.lower() == "regexp_match"):
        return None
    args = list(node.expressions)
    pattern, flags = (args + [None, None])[1:3]
    if len(args) > 3:
        raise refusal(node, "regexp_match() with a pattern that is not a literal")
    groups = literal_pattern(node, "regexp_match", pattern, flags, "i")
    assert isinstance(pattern, exp.Literal)
    options = exp.Literal.string("s" + (flags.this if isinstance(flags, exp.Literal) else ""))
    parts = [
        call("regexp_extract", args[0].copy(), pattern.copy(), exp.Literal.number(g), options.copy())
        for g in range(1 if groups else 0, groups + 1)
    ]
    found = call("regexp_matches", args[0].copy(), pattern.copy(), options.copy())
    return exp.Case(ifs=[exp.If(this=found, true=exp.Array(expressions=parts))])


#: escapes whose class PostgreSQL takes from the text's locale (Unicode letters and spaces in a UTF-8 one) and
#: RE2 from ASCII, or that mean another thing (``\b`` is a backspace in PostgreSQL, a word boundary in RE2)
_LOCALE_CLASSES = re.compile(r"\\[wWsSbB]|\[\[:")
_REGEX_NODES = (exp.RegexpLike, exp.RegexpILike, exp.RegexpReplace, exp.RegexpCount, exp.RegexpSubstr)
_REGEX_FUNCTIONS = ("regexp_matches", "regexp_split_to_array", "regexp_split_to_table", "regexp_instr")


def _regex_classes(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A regular expression with a class escape the engines define differently is refused (``t ~ '\\w'`` matched
    ``Ünïcödé`` in PostgreSQL, not in DuckDB)."""
    pattern: exp.Expr | None = None
    if isinstance(node, _REGEX_NODES):
        pattern = node.args.get("expression")
    elif (
        isinstance(node, exp.Anonymous)
        and node.name.lower() in _REGEX_FUNCTIONS
        and len(node.expressions) > 1
    ):
        pattern = node.expressions[1]
    if isinstance(pattern, exp.Literal) and pattern.is_string and _LOCALE_CLASSES.search(pattern.this):
        raise refusal(
            node,
            f"the regular expression {pattern.this!r} (its class escapes match otherwise in DuckDB's RE2)",
        )
    return None


RULES: list[Rule] = [_similar, _format, _regexp_match, _regex_classes]

"""Text on the DuckDB route as PostgreSQL computes it (rules of :mod:`lakegate.gateway.dialect`).

``char(n)`` (``bpchar``): the lake keeps PostgreSQL's padded values (``'ab      '``); DuckDB's PostgreSQL
scanner strips the padding. PostgreSQL's rules, which the rewrites follow for both forms:

* comparing two ``char(n)``, or ``char(n)`` with ``varchar`` or a literal, ignores trailing spaces; with
  ``text`` the ``char(n)`` side loses its trailing spaces (and the text keeps its own);
* converting to text (``::text``, ``||``, text functions, ``length``) drops the trailing spaces;
* ``LIKE``/``ILIKE``/``~``/``SIMILAR``, ``octet_length``, ``concat``, ``concat_ws`` (its values), ``format``,
  a cast to ``bytea`` and the output see the padded value.

Also: ``LIKE`` gets PostgreSQL's escape character (backslash), ``LIKE ANY/ALL (ARRAY[...])`` becomes ``OR``/
``AND``, casts to ``char(n)``/``varchar(n)`` truncate (and pad), text to boolean takes PostgreSQL's spellings,
and functions whose DuckDB result is ``BIGINT`` where PostgreSQL's is ``integer`` are cast.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal, rewrap
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

_COMPARE = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ)
_EQUALITY = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ)
_PATTERNS = (exp.Like, exp.ILike, exp.RegexpLike, exp.RegexpILike, exp.SimilarTo)


def trimmed(node: exp.Expr, typ: PgType | None) -> exp.Expr:
    """``node`` (a char(n) value) as text: without its trailing spaces."""
    if typ is not None and typ.bpchar and typ.padded:
        return call("rtrim", node, exp.Literal.string(" "))
    return node


def padded(node: exp.Expr, typ: PgType | None, what: exp.Expr) -> exp.Expr:
    """``node`` (a char(n) value) padded to its length, as PostgreSQL holds it."""
    if typ is None or not typ.bpchar or typ.padded:
        return node
    if typ.length is None:
        raise refusal(what, "this use of a char value of unknown length (PostgreSQL pads it)")
    return call("rpad", node, exp.Literal.number(typ.length), exp.Literal.string(" "))


def _comparison(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, _COMPARE):
        pairs = [(node.this, node.expression)]
    elif isinstance(node, exp.In) and node.expressions:
        pairs = [(node.this, e) for e in node.expressions]
    elif isinstance(node, exp.Between):  # x >= low AND x <= high, as PostgreSQL's parser writes it
        pairs = [(node.this, node.args["low"]), (node.this, node.args["high"])]
    elif isinstance(node, exp.In) and node.args.get("query") is not None:
        projected = _single_projection(node.args["query"])  # x IN (SELECT c ...): x = c for each row
        if projected is None:
            return None
        pairs = [(node.this, projected)]
    else:
        return None
    if _padded_literals(node, types):
        return None
    left = types.of(node.this)
    # how the left side must be read: once for all the values of an IN list
    lefts: set[Callable[..., exp.Expr]] = set()
    for _, b in pairs:
        right = types.of(b)
        if left is None or right is None or not (left.bpchar or right.bpchar):
            continue
        as_key = (
            left.bpchar
            and right.bpchar
            or left.bpchar
            and right.is_("varchar", "unknown")
            or (right.bpchar and left.is_("varchar", "unknown"))
        )
        # as char(n) keys, or (char(n) against text) the char side as text
        lefts.add(_as_bpchar_key if as_key else trimmed)
        rewrap(b, functools.partial(_as_bpchar_key if as_key else trimmed, typ=right), types)
    if len(lefts) > 1:
        raise refusal(node, "an IN list or BETWEEN that compares a value both as char(n) and as text")
    if lefts:
        rewrap(node.this, functools.partial(lefts.pop(), typ=left), types)
    return None


def _padded_literals(node: exp.Expr, types: Typer) -> bool:
    """``col = 'lit'`` (``<>``, ``IS [NOT] DISTINCT FROM``, ``IN ('a', 'b')``) on a char(n) column of the lake:
    the literals padded to n instead of ``rtrim(col)`` on every row, so DuckDB compares the column with constants
    (TPC-H Q19 on cached tables: 88 ms -> 23 ms). Exact because the lake holds every char(n) value padded to n
    characters, as PostgreSQL stores it: ``rtrim(col) = rtrim(lit)`` exactly when ``col = rpad(rtrim(lit), n)``,
    provided ``rtrim(lit)`` has at most n characters (a longer literal keeps the trimmed comparison)."""
    if isinstance(node, exp.In):
        column, literals = node.this, list(node.expressions)
    elif isinstance(node, _EQUALITY):
        column, literals = node.this, [node.expression]
        if _text_literal(column):
            column, literals = node.expression, [node.this]
    else:
        return False
    typ = types.of(column)
    if typ is None or not typ.bpchar or not typ.padded or typ.length is None or not literals:
        return False
    length = typ.length
    if not all(_text_literal(x) and len(x.this.rstrip(" ")) <= length for x in literals):
        return False
    for literal in literals:
        padded_text = literal.this.rstrip(" ").ljust(length)
        rewrap(literal, functools.partial(_string, text=padded_text), types)
    return True


def _string(_: exp.Expr, text: str) -> exp.Expr:
    return exp.Literal.string(text)


def _text_literal(node: exp.Expr) -> bool:
    return isinstance(node, exp.Literal) and node.is_string


def _single_projection(query: exp.Expr) -> exp.Expr | None:
    """The one expression a subquery selects (under its alias), or None."""
    inner = query.this if isinstance(query, exp.Subquery) else query
    if not isinstance(inner, exp.Select) or len(inner.expressions) != 1:
        return None
    item = inner.expressions[0]
    return item.this if isinstance(item, exp.Alias) else item


def _as_bpchar_key(node: exp.Expr, typ: PgType) -> exp.Expr:
    """A value compared as char(n): trailing spaces do not count (a literal loses them here)."""
    if isinstance(node, exp.Literal) and node.is_string:
        return exp.Literal.string(node.this.rstrip(" "))
    if typ.bpchar and not typ.padded:
        return node
    return call("rtrim", node, exp.Literal.string(" "))


def _patterns(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """LIKE & co. see a char(n) value padded; LIKE's default escape is the backslash; LIKE ANY/ALL."""
    if not isinstance(node, _PATTERNS):
        return None
    subject = types.of(node.this)
    if subject is not None and subject.bpchar:
        rewrap(node.this, lambda n: padded(n, subject, node), types)
    pattern = node.expression
    if isinstance(pattern, exp.Any | exp.All) and isinstance(node, exp.Like | exp.ILike):
        return _like_any(node, pattern)
    if isinstance(node, exp.Like | exp.ILike) and not isinstance(node.parent, exp.Escape):
        return _escaped(node)
    return None


def _escaped(node: exp.Like | exp.ILike) -> exp.Expr:
    """PostgreSQL's LIKE escapes with a backslash by default, DuckDB's LIKE has no escape character: a literal
    pattern without a backslash means the same to both and keeps DuckDB's fast LIKE (``like_escape`` takes about
    twice as long: TPC-H Q13); any other pattern gets ``ESCAPE '\\'``."""
    pattern = node.expression
    if isinstance(pattern, exp.Literal) and pattern.is_string and "\\" not in pattern.this:
        return node
    return exp.Escape(this=node, expression=exp.Literal.string("\\"))


def _like_any(node: exp.Like | exp.ILike, quantified: exp.Expr) -> exp.Expr:
    array = quantified.this.this if isinstance(quantified.this, exp.Paren) else quantified.this
    if not isinstance(array, exp.Array) or not array.expressions:
        raise refusal(node, "LIKE ANY/ALL over something other than ARRAY[...]")
    kind = type(node)
    parts: list[exp.Expr] = [_escaped(kind(this=node.this.copy(), expression=p)) for p in array.expressions]
    joiner = exp.Or if isinstance(quantified, exp.Any) else exp.And
    result = parts[0]
    for part in parts[1:]:
        result = joiner(this=result, expression=part)
    return exp.Paren(this=result)


def _to_text(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """char(n) converted to text loses its trailing spaces: ||, text functions, casts to text/varchar."""
    if isinstance(node, exp.DPipe):
        result = types.of(node)
        if (
            result is not None
            and result.string
            and any(isinstance(c, exp.Null) for c in (node.this, node.expression))
        ):
            return cast(exp.Null(), "VARCHAR")  # a NULL text (DuckDB folds it to an untyped NULL)
        for child in (node.this, node.expression):
            rewrap(child, lambda n: trimmed(n, types.of(n)), types)
        return None
    if isinstance(node, exp.Cast) and node.to.this in (exp.DType.TEXT, exp.DType.VARCHAR):
        source = types.of(node.this)
        inner = trimmed(node.this, source)
        length = _length(node.to)
        if length is not None:
            inner = call("left", inner, exp.Literal.number(length))
        return cast(inner, "VARCHAR")
    if isinstance(node, exp.Cast) and node.to.this in (exp.DType.CHAR, exp.DType.BPCHAR, exp.DType.NCHAR):
        length = _length(node.to) or (1 if node.to.this != exp.DType.BPCHAR else None)
        inner = cast(trimmed(node.this, types.of(node.this)), "VARCHAR")
        if length is None:
            return inner
        return call(
            "rpad",
            call("left", inner, exp.Literal.number(length)),
            exp.Literal.number(length),
            exp.Literal.string(" "),
        )
    if isinstance(node, exp.GroupConcat):
        _trim_listed(node, types)
        return None
    if isinstance(node, exp.Func) and _takes_text(node):
        for child in list(node.iter_expressions()):
            rewrap(child, lambda n: trimmed(n, types.of(n)), types)
    return None


def _trim_listed(node: exp.GroupConcat, types: Typer) -> None:
    """string_agg's value (inside its ORDER BY and DISTINCT) and separator as text. With DISTINCT, PostgreSQL
    sorts the converted values, and DuckDB wants an ORDER BY key of a DISTINCT aggregate among its arguments:
    a key equal to the value is converted with it."""
    order = node.this if isinstance(node.this, exp.Order) else None
    inner = order.this if order is not None else node.this
    distinct = isinstance(inner, exp.Distinct)
    for value in list(inner.expressions if distinct else [inner]):
        original = value.copy()
        rewrap(value, lambda n: trimmed(n, types.of(n)), types)
        for key in order.expressions if order is not None and distinct else []:
            if isinstance(key, exp.Ordered) and key.this == original:
                rewrap(key.this, lambda n: trimmed(n, types.of(n)), types)
    separator = node.args.get("separator")
    if separator is not None:
        rewrap(separator, lambda n: trimmed(n, types.of(n)), types)


def _length(to: exp.DataType) -> int | None:
    if not to.expressions:
        return None
    param = to.expressions[0]
    value = param.this if isinstance(param, exp.DataTypeParam) else param
    return int(value.this) if isinstance(value, exp.Literal) and value.is_int else None


#: functions whose arguments PostgreSQL converts to text (a char(n) argument loses its padding)
_TEXT_FUNCTIONS = {
    "length",
    "upper",
    "lower",
    "initcap",
    "trim",
    "substring",
    "left",
    "right",
    "replace",
    "translate",
    "pad",
    "repeat",
    "reverse",
    "splitpart",
    "md5",
    "strposition",
    "startswith",
    "regexpreplace",
    "ascii",
    "stringtoarray",
    "groupconcat",
    "overlay",
    "bitlength",
}


def _takes_text(node: exp.Func) -> bool:
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in (
            "quote_literal",
            "quote_ident",
            "regexp_match",
            "regexp_matches",
            "regexp_split_to_array",
            "split_part",
        )
    return node.key in _TEXT_FUNCTIONS


def _padded_functions(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """octet_length, concat and concat_ws's values (not its separator, a text) see char(n) padded."""
    if isinstance(node, exp.ConcatWs) and node.expressions:
        separator, *values = node.expressions
        rewrap(separator, lambda n: trimmed(n, types.of(n)), types)
        for child in values:
            rewrap(child, lambda n: padded(n, types.of(n), node), types)
    elif (
        isinstance(node, exp.Concat)  # (ConcatWs is a Concat)
        or isinstance(node, exp.Anonymous)
        and node.name.lower() == "octet_length"
    ):
        for child in list(node.expressions):
            rewrap(child, lambda n: padded(n, types.of(n), node), types)
    if isinstance(node, exp.Anonymous) and node.name.lower() == "octet_length":
        return cast(call("strlen", *node.expressions), "INTEGER")
    return None


_INT4_RESULTS = {
    "length",
    "bitlength",
    "strposition",
    "ascii",
    "arrayposition",
    "regexpcount",
    "ntile",
    "grouping",
    "widthbucket",
}
_INT4_NAMES = {"array_upper", "array_lower", "cardinality", "array_ndims"}


def _int4_results(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """Functions that are integer in PostgreSQL and BIGINT in DuckDB."""
    if isinstance(node, exp.Window) and isinstance(node.this, exp.Ntile):
        return cast(node, "INTEGER")
    if isinstance(node, exp.Ntile):
        return None
    key = node.name.lower() if isinstance(node, exp.Anonymous) else node.key
    if (
        key in _INT4_RESULTS
        and not isinstance(node, exp.Anonymous)
        or key in _INT4_NAMES
        and isinstance(node, exp.Anonymous)
    ):
        return cast(node, "INTEGER")
    return None


def _boolean(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.Cast) and node.to.this == exp.DType.BOOLEAN:
        source = types.of(node.this)
        if source is not None and source.string:
            node.set("this", call("pg_bool_text", node.this))
    return None


def _case_mapping(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """upper/lower/initcap with PostgreSQL's (libc's simple) case mapping: ß has no one-letter upper case."""
    if isinstance(node, exp.Upper):
        return call("pg_upper", node.this)
    if isinstance(node, exp.Initcap):
        return call("pg_initcap", node.this)
    if isinstance(node, exp.StringToArray) and node.expression is not None and not node.args.get("null"):
        return call("pg_string_to_array", node.this, node.expression)
    return None


def _hex(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """to_hex() is lower case in PostgreSQL."""
    if isinstance(node, exp.Hex):
        return exp.Lower(this=node)
    return None


def _substring(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """substr/substring with a start below 1 (PostgreSQL counts the positions before the string)."""
    if not isinstance(node, exp.Substring):
        return None
    start, length = node.args.get("start"), node.args.get("length")
    if start is None:
        return None
    args = [node.this, start] + ([length] if length is not None else [])
    return call("pg_substr", *args)


RULES: list[Rule] = [
    _comparison,
    _patterns,
    _padded_functions,
    _to_text,
    _boolean,
    _substring,
    _int4_results,
    _case_mapping,
    _hex,
]

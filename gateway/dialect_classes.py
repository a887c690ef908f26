"""Classes of values whose PostgreSQL answers DuckDB's own functions miss (issue 28.4), as rules of
:mod:`lakegate.gateway.dialect` (before :mod:`lakegate.gateway.dialect_text`, whose cast to text would end the
turn):

* the text of a value — ``::text``/``::varchar``, ``||`` with text, ``concat``/``concat_ws``, the elements of
  ``array_to_string`` and of an array's text — is PostgreSQL's output: floats as their shortest exact text
  (``NaN``, ``Infinity``, ``-0``, ``1e+16``: DuckDB writes ``nan``, ``inf``, ``-0.0``, ``1e16`` otherwise),
  bytea in hex (``\\x0102``; DuckDB writes ``\\x01\\x02`` and printable bytes as themselves), dates and
  timestamps before year 1 as ``0044-03-15 BC`` (DuckDB: ``0044-03-15 (BC)``), intervals in IntervalStyle
  ``postgres`` (``1 year 2 mons -1 days +02:00:00``; DuckDB: ``1 year 2 months -1 day 02:00:00``), arrays as
  ``{1,NULL,"a b"}`` with array_out's quoting (DuckDB: ``[1, NULL, a b]``), booleans in arrays as ``t``/``f``;
* ``array_to_string(a, d[, null])``: NULL for a NULL delimiter, NULL elements skipped (or the null string), each
  element as its output text, a multidimensional array's elements in order (DuckDB: NULL for ``{NULL}``);
* ``NULLIF`` with a ``char(n)`` operand compares as ``=`` does: trailing spaces do not count, and against text
  the ``char(n)`` side is text (its spaces dropped, as the result then is);
* ``to_hex`` of a negative ``integer`` is its two's complement in 32 bits (DuckDB: 64), of a ``smallint``
  PostgreSQL's error (no such function);
* ``split_part(s, d, 0)`` is PostgreSQL's error (22023) when it runs (DuckDB: '');
* ``version()`` is refused: DuckDB's version is not that of the PostgreSQL the data comes from.
"""

from __future__ import annotations

import functools
import math

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal, rewrap
from lakegate.gateway.dialect_patterns import literal_pattern
from lakegate.gateway.dialect_text import padded, trimmed
from lakegate.gateway.errors import QueryFailed
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

_TEXT_TYPES = (exp.DType.TEXT, exp.DType.VARCHAR)


def value_text(node: exp.Expr, typ: PgType | None, what: exp.Expr) -> exp.Expr | None:
    """DuckDB SQL of PostgreSQL's output text of ``node`` (of type ``typ``) where DuckDB's cast to VARCHAR writes
    another text; None where that cast writes PostgreSQL's."""
    if typ is None:
        return None
    if typ.dims:
        return call("pg_array_braces", _element_texts(node, typ, what, quoted=True))
    if typ.is_("float8"):
        return call("pg_float8_out", node)
    if typ.is_("float4"):
        return call("pg_float4_out", node)
    if typ.is_("bytea"):
        return call("pg_bytea_out", node)
    if typ.is_("date", "timestamp"):
        return call("pg_datetime_out", node)
    if typ.is_("interval"):
        return call("pg_interval_out", node)
    return None


def _element_texts(node: exp.Expr, typ: PgType, what: exp.Expr, quoted: bool, depth: int = 0) -> exp.Expr:
    """The list of the output texts of the array ``node``'s elements (``quoted``: as array_out writes them, inner
    arrays in braces; else flattened, NULL for a NULL element)."""
    name = f"__pg_e{depth}"
    element = exp.column(name)
    elem = typ.elem
    if elem.dims:
        inner = _element_texts(element, elem, what, quoted, depth + 1)
        if not quoted:
            return call("flatten", call("list_transform", node, _lambda(inner, name)))
        body: exp.Expr = call("pg_array_braces", inner)
    else:
        text = _scalar_text(element, elem, what)
        body = call("pg_array_quote", text) if quoted else text
    return call("list_transform", node, _lambda(body, name))


def _lambda(body: exp.Expr, name: str) -> exp.Lambda:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(name)])


def _scalar_text(node: exp.Expr, typ: PgType, what: exp.Expr) -> exp.Expr:
    """An array element's output text (NULL for NULL)."""
    own = value_text(node, typ, what)
    if own is not None:
        return own
    if typ.is_("bool"):
        return boolout(node)
    if typ.bpchar:
        return padded(node, typ, what)
    if typ.string:
        return node
    if typ.integer or typ.is_("uuid") or typ.numeric and not typ.loose_scale:
        return cast(node, "VARCHAR")
    raise refusal(what, f"the text of an array of {typ.typname} (PostgreSQL's output of its elements)")


def boolout(node: exp.Expr) -> exp.Expr:
    """A boolean's output text: t and f (a cast to text writes true and false)."""
    return exp.Case(
        ifs=[
            exp.If(this=node.copy(), true=exp.Literal.string("t")),
            exp.If(this=exp.Not(this=node.copy()), true=exp.Literal.string("f")),
        ]
    )


def _text_cast(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Cast) or node.to.this not in _TEXT_TYPES:
        return None
    text = value_text(node.this, types.of(node.this), node)
    if text is None:
        return None
    length = node.to.expressions[0] if node.to.expressions else None
    if length is not None:
        value = length.this if isinstance(length, exp.DataTypeParam) else length
        text = call("left", text, value.copy())
    return text


def _text_operands(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``||`` with text and ``concat``/``concat_ws`` write each operand's output text."""
    if isinstance(node, exp.DPipe):
        result = types.of(node)
        operands = [node.this, node.expression]
        if result is None or not result.string or any((types.of(o) or _NONE).dims for o in operands):
            return None
    elif isinstance(node, exp.Concat | exp.ConcatWs):
        operands = list(node.expressions)
    else:
        return None
    for operand in operands:
        typ = types.of(operand)
        if typ is not None and typ.is_("bool") and not isinstance(node, exp.DPipe):  # concat: the output, t/f
            rewrap(operand, boolout, types)
        elif _own_text(typ):
            rewrap(operand, functools.partial(_text_or_value, typ=typ, what=node), types)
    return None


def _own_text(typ: PgType | None) -> bool:
    """Whether PostgreSQL's output text of a value of ``typ`` is not DuckDB's cast to VARCHAR."""
    return typ is not None and (
        typ.dims > 0 or typ.is_("float8", "float4", "bytea", "date", "timestamp", "interval")
    )


def _text_or_value(node: exp.Expr, typ: PgType | None, what: exp.Expr) -> exp.Expr:
    return value_text(node, typ, what) or node


_NONE = PgType("unknown")


def _array_to_string(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.ArrayToString):
        return None
    typ = types.of(node.this)
    if typ is None or not typ.dims:
        return None
    texts = _element_texts(node.this, typ, node, quoted=False)
    null = node.args.get("null")
    if null is not None:
        return call("pg_array_join_nulls", texts, node.expression, null)
    return call("pg_array_join", texts, node.expression)


def _nullif(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """NULLIF(a, b) is ``CASE WHEN a = b THEN NULL ELSE a END`` with PostgreSQL's ``=`` of the operands' types."""
    if not isinstance(node, exp.Nullif):
        return None
    a, b = node.this, node.expression
    left, right = types.of(a), types.of(b)
    if left is None or right is None or not (left.bpchar or right.bpchar) or isinstance(b, exp.Null):
        return None
    as_key = (
        left.bpchar
        and (right.bpchar or right.is_("varchar", "unknown"))
        or right.bpchar
        and left.is_("varchar", "unknown")
    )
    if as_key:  # char(n) = char(n): trailing spaces do not count; the result is a as it is
        equal = exp.EQ(this=_key(a.copy(), left), expression=_key(b.copy(), right))
        result = a.copy()
    else:  # char(n) = text is text = text: the char(n) side without its trailing spaces
        equal = exp.EQ(this=trimmed(a.copy(), left), expression=trimmed(b.copy(), right))
        result = trimmed(a.copy(), left)
    return exp.Case(ifs=[exp.If(this=equal, true=exp.Null())], default=result)


def _key(node: exp.Expr, typ: PgType) -> exp.Expr:
    if isinstance(node, exp.Literal) and node.is_string:
        return exp.Literal.string(node.this.rstrip(" "))
    if typ.bpchar and not typ.padded:
        return node
    return call("rtrim", node, exp.Literal.string(" "))


def _to_hex(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Hex):
        return None
    typ = types.of(node.this)
    if typ is not None and typ.is_("int2"):
        raise QueryFailed("function to_hex(smallint) is not unique", sqlstate="42725")
    if typ is None or not typ.is_("int4"):
        return None
    masked = exp.BitwiseAnd(this=cast(node.this, "BIGINT"), expression=exp.Literal.number(0xFFFFFFFF))
    return exp.Lower(this=exp.Hex(this=masked))


def _version(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.CurrentVersion):
        raise refusal(
            node, "version() (the lake route runs on DuckDB, not on the PostgreSQL the data comes from)"
        )
    return None


def _width_bucket(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """width_bucket's numeric version (PostgreSQL's choice where a bound or the operand is numeric and none is a
    float) in exact arithmetic, the thresholds version by PostgreSQL's binary search, and PostgreSQL's errors
    (SQLSTATE 2201G) where every argument is a constant."""
    if not isinstance(node, exp.WidthBucket):
        return None
    thresholds = node.args.get("threshold")
    if thresholds is not None:
        typ = types.of(thresholds)
        if typ is None or typ.dims != 1:
            raise refusal(node, "width_bucket() with thresholds other than a one-dimensional array")
        return call("pg_width_bucket_array", node.this, thresholds)
    args = [node.this, node.args.get("min_value"), node.args.get("max_value"), node.args.get("num_buckets")]
    if any(a is None for a in args):
        return None
    _bucket_errors([_constant(a) for a in args if a is not None])
    kinds = [types.of(a) for a in args[:3]]
    numeric = any(k is not None and k.numeric for k in kinds)
    if numeric and not any(k is None or k.floating for k in kinds):
        return call("pg_width_bucket_numeric", *[a.copy() for a in args if a is not None])
    for arg, kind in zip(args[:3], kinds, strict=True):  # the float8 version: a numeric operand is a float8
        if arg is not None and kind is not None and kind.numeric:
            arg.replace(cast(arg.copy(), "DOUBLE"))
    return None


def _bucket_errors(values: list[float | None]) -> None:
    if any(v is None for v in values):  # not all constants, or a NULL: strict, or checked as it runs
        return
    x, lo, hi, count = (v for v in values if v is not None)
    message = (
        "count must be greater than zero"
        if count <= 0
        else "operand, lower bound, and upper bound cannot be NaN"
        if any(math.isnan(v) for v in (x, lo, hi))
        else "lower and upper bounds must be finite"
        if math.isinf(lo) or math.isinf(hi)
        else "lower bound cannot equal upper bound"
        if lo == hi
        else None
    )
    if message is not None:
        raise QueryFailed(message, sqlstate="2201G")


def _constant(node: exp.Expr) -> float | None:
    """The number a constant argument is (None: not a constant, or NULL)."""
    if isinstance(node, exp.Paren):
        return _constant(node.this)
    if isinstance(node, exp.Neg):
        inner = _constant(node.this)
        return -inner if inner is not None else None
    if isinstance(node, exp.Cast) and isinstance(node.this, exp.Literal | exp.Neg | exp.Paren):
        return _constant(node.this)
    if isinstance(node, exp.Literal):
        try:
            return float(node.this)
        except ValueError:
            return None
    return None


def _percentile(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """percentile_cont interpolates in float8 (PostgreSQL converts an integer or numeric to float8 first; DuckDB
    interpolated decimals as decimals); of intervals it is refused."""
    if not isinstance(node, exp.WithinGroup) or not isinstance(node.this, exp.PercentileCont):
        return None
    order = node.args.get("expression")
    key = order.expressions[0] if isinstance(order, exp.Order) and order.expressions else None
    if not isinstance(key, exp.Ordered):
        return None
    typ = types.of(key.this)
    if typ is not None and typ.is_("interval"):
        raise refusal(node, "percentile_cont() of intervals (PostgreSQL interpolates them field by field)")
    if typ is not None and (typ.integer or typ.numeric):
        key.set("this", cast(key.this, "DOUBLE"))
    return None


def _regexp_matches(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``regexp_matches(s, pattern[, flags])`` is a set-returning function in PostgreSQL (DuckDB's is a boolean):
    a row of the first match's groups (or the whole match), every match's with ``'g'``, no row without a
    match; in a select list, as an UNNEST of that list. Patterns are held to what ``regexp_match()`` takes."""
    if not (isinstance(node, exp.Anonymous) and node.name.lower() == "regexp_matches"):
        return None
    args = list(node.expressions)
    if len(args) not in (2, 3):
        return None
    subject, pattern = trimmed(args[0].copy(), types.of(args[0])), args[1]
    flags = args[2] if len(args) == 3 else exp.Literal.string("")
    groups = literal_pattern(node, "regexp_matches", pattern, flags, "gi")
    item = node.parent if isinstance(node.parent, exp.Alias) else node
    if not isinstance(item.parent, exp.Select) or item.arg_key != "expressions":
        raise refusal(node, "regexp_matches() elsewhere than in a select list (it returns a set of rows)")
    options = exp.Literal.string("s" + ("i" if "i" in flags.this else ""))
    numbers = list(range(1, groups + 1)) if groups else [0]
    if "g" not in flags.this:
        parts = [
            call("regexp_extract", subject.copy(), pattern.copy(), exp.Literal.number(g), options.copy())
            for g in numbers
        ]
        found = call("regexp_matches", subject.copy(), pattern.copy(), options.copy())
        rows: exp.Expr = exp.Case(
            ifs=[exp.If(this=found, true=exp.Array(expressions=[exp.Array(expressions=parts)]))],
            default=cast(exp.Array(expressions=[]), "VARCHAR[][]"),
        )
    else:
        every = [
            call("regexp_extract_all", subject.copy(), pattern.copy(), exp.Literal.number(g), options.copy())
            for g in numbers
        ]
        index = exp.column("__pg_i")
        row = exp.Array(expressions=[exp.Bracket(this=e.copy(), expressions=[index.copy()]) for e in every])
        positions = call(
            "range",
            exp.Literal.number(1),
            exp.Add(this=call("len", every[0].copy()), expression=exp.Literal.number(1)),
        )
        rows = exp.Case(
            ifs=[exp.If(this=exp.Is(this=subject.copy(), expression=exp.Null()), true=exp.Null())],
            default=call(
                "list_transform", positions, exp.Lambda(this=row, expressions=[exp.to_identifier("__pg_i")])
            ),
        )
    return call("unnest", rows)


def _split_part(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``split_part(s, d, 0)`` is PostgreSQL's error when it runs (DuckDB answered '')."""
    if not isinstance(node, exp.SplitPart):
        return None
    index = node.args.get("part_index")
    if isinstance(index, exp.Literal) and index.is_int and int(index.this) != 0:
        return None  # DuckDB's answer is PostgreSQL's (negative fields count from the end in both)
    return call(
        "pg_split_part", node.this, node.args["delimiter"], index if index is not None else exp.Null()
    )


RULES: list[Rule] = [
    _split_part,
    _regexp_matches,
    _text_cast,
    _text_operands,
    _array_to_string,
    _nullif,
    _to_hex,
    _version,
    _width_bucket,
    _percentile,
]

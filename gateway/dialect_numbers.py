"""Numbers on the DuckDB route as PostgreSQL computes them (rules of :mod:`lakegate.gateway.dialect`).

* ``/`` and ``%``: integers divide as integers (DuckDB runs with ``integer_division``), numerics exactly at
  PostgreSQL's result scale (``pg_numeric_div``, see :mod:`lakegate.connectors.duckdb.pgnumeric`), floats with
  PostgreSQL's ``division by zero`` and ``value out of range`` errors; division by zero is an error for every type.
* float ``+ - *`` raise PostgreSQL's overflow/underflow errors where DuckDB would answer ``inf`` or 0.
* ``avg`` of integers/numerics and ``variance``/``stddev`` family of integers/numerics are numerics computed
  exactly from ``count``, ``sum`` and the sum of squares; ``sum(int2|int4)`` is ``int8``, ``sum(float4)`` float4.
* ``round``/``trunc``/``ceil``/``floor``/``sign`` and the float functions take PostgreSQL's overload: an integer
  argument is a float8 (``round(i)`` is a float, ``round(i, 2)`` a numeric); ``round(float8)`` rounds half to
  even; ``sqrt``/``ln``/``exp``/``log``/``power`` of a numeric (PostgreSQL computes them in numeric arithmetic at
  its own precision) are refused.
* casts to ``numeric``: an integer keeps scale 0, a literal its own digits, a float its 15 significant digits
  (PostgreSQL's float8 -> numeric), text is checked to fit ``DECIMAL(38, 18)``; ``'1.5'::int`` is an error.
"""

from __future__ import annotations

from decimal import Decimal, InvalidOperation

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.dialect_scale import rewrapped, text_of
from lakegate.gateway.errors import QueryFailed
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

DEFAULT_SCALE = 24  #: fractional digits of an exact quotient (PostgreSQL's scale is per value)
TEXT_SCALE = 18  #: fractional digits of text (or a float) cast to unconstrained numeric
_INT_DIGITS = {"int2": 5, "int4": 10, "int8": 19}


def _digits(typ: PgType | None) -> int | None:
    """Integer digits a value of ``typ`` can have, where known."""
    if typ is None:
        return None
    if typ.name in _INT_DIGITS and not typ.dims:
        return _INT_DIGITS[typ.name]
    if typ.numeric and typ.precision is not None and typ.scale is not None:
        return typ.precision - typ.scale
    return None


def quotient_scale(digits: int | None) -> int:
    """The decimal scale of an exact quotient whose integer part has at most ``digits`` digits."""
    return DEFAULT_SCALE if digits is None else max(DEFAULT_SCALE, min(32, 38 - digits))


def exact_divide(
    a: exp.Expr,
    b: exp.Expr,
    scale: int,
    mode: str = "div",
    loose: tuple[bool, bool] = (False, False),
    a_text: exp.Expr | None = None,
) -> exp.Expr:
    """DuckDB SQL of PostgreSQL's numeric ``a / b`` (``trunc``: ``div(a, b)``), as ``DECIMAL(38, scale)``. An
    operand of ``loose`` scale (unconstrained numeric, read as ``DECIMAL(38, 18)``) goes as its value's own
    digits (PostgreSQL's result scale follows the operands' display scales); ``a_text`` replaces ``a``'s text."""
    texts = [
        _loose_text(operand) if is_loose else cast(operand, "VARCHAR")
        for operand, is_loose in zip((a, b), loose, strict=True)
    ]
    text = call(
        "pg_numeric_div",
        a_text if a_text is not None else texts[0],
        texts[1],
        exp.Literal.number(scale),
        exp.Literal.string(mode),
    )
    return cast(text, f"DECIMAL(38, {scale})")


def _loose_text(operand: exp.Expr) -> exp.Expr:
    """An unconstrained numeric's text with its display scale: its own text where it is read from one (a lake
    column, a quotient), else its value's digits (trailing zeros it may have had are not known there)."""
    text = text_of(operand)
    return text.copy() if text is not None else call("pg_loose_text", operand)


def _division(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Div | exp.Mod):
        return None
    a, b = node.this, node.expression
    left, right = types.of(a), types.of(b)
    if left is None or right is None or left.is_("unknown") or right.is_("unknown"):
        return call("pg_div" if isinstance(node, exp.Div) else "pg_mod", a, b)  # checked when it runs
    if left.is_("interval") or right.is_("interval"):
        raise refusal(node, "dividing an interval")
    if not (left.number and right.number):
        return None  # no such operator: DuckDB reports it
    if left.floating or right.floating:
        if isinstance(node, exp.Mod):
            raise refusal(node, "% of floating-point values (PostgreSQL has no such operator)")
        return call("pg_float_div", *_floats(a, b, left, right))
    if isinstance(node, exp.Mod):
        return call("pg_mod", a, b)
    if left.numeric or right.numeric:
        loose = (left.loose_scale, right.loose_scale)
        # a NULL dividend is no division by zero (the operator is strict): the check sees NULL then
        check = exp.Case(
            ifs=[exp.If(this=exp.Is(this=a.copy(), expression=exp.Null()), true=exp.Null())], default=b.copy()
        )
        return call("pg_zero_check", check, exact_divide(a, b, quotient_scale(None), loose=loose))
    return call("pg_div", a, b)


def _floats(a: exp.Expr, b: exp.Expr, left: PgType, right: PgType) -> list[exp.Expr]:
    """Operands of float arithmetic: float4 with anything but float4 is float8 in PostgreSQL."""
    if left.is_("float4") and right.is_("float4"):
        return [a, b]
    return [
        cast(a, "DOUBLE") if not left.is_("float8") else a,
        cast(b, "DOUBLE") if not right.is_("float8") else b,
    ]


def _int_div(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``div(a, b)`` (sqlglot: a cast of ``//`` to numeric): the integral part of the exact quotient."""
    if isinstance(node, exp.IntDiv):
        return cast(exact_divide(node.this, node.expression, 0, "trunc"), "DECIMAL(38, 0)")
    return None


_FLOAT_OPS = {exp.Add: "pg_float_add", exp.Sub: "pg_float_sub", exp.Mul: "pg_float_mul"}


def _float_arithmetic(node: exp.Expr, types: Typer) -> exp.Expr | None:
    name = _FLOAT_OPS.get(type(node))  # type: ignore[arg-type]
    if name is None:
        return None
    left, right = types.of(node.this), types.of(node.expression)  # type: ignore[arg-type]
    if left is None or right is None or not (left.floating or right.floating):
        return None
    if not (left.number or left.is_("unknown")) or not (right.number or right.is_("unknown")):
        return None
    return call(name, *_floats(node.this, node.expression, left, right))  # type: ignore[arg-type]


def _statistic_kind(node: exp.Expr) -> str | None:
    kinds = {
        exp.Stddev: "stddev_samp",
        exp.StddevSamp: "stddev_samp",
        exp.StddevPop: "stddev_pop",
        exp.Variance: "var_samp",
        exp.VariancePop: "var_pop",
    }
    return kinds.get(type(node))  # type: ignore[arg-type]


def _aggregates(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """avg/variance/stddev of exact types, sum of int2/int4/float4 — on the outermost node of the call
    (the aggregate, its FILTER, its OVER), so that both halves of avg = sum / count carry them."""
    agg = _unwrap(node)
    if agg is None or _outermost(agg) is not node:
        return None
    arg = types.of(agg.this)
    if arg is None:
        return _unknown_aggregate(agg, node)
    exact = arg.integer or arg.numeric
    if isinstance(agg, exp.Sum):
        to = "BIGINT" if arg.is_("int2", "int4") else "FLOAT" if arg.is_("float4") else None
        return cast(node, to) if to else None
    if isinstance(agg, exp.Avg) and exact:
        total, count = _rewrap(node, agg, exp.Sum), _rewrap(node, agg, exp.Count)
        if not arg.loose_scale:
            return exact_divide(total, count, quotient_scale(_digits(arg)))
        # the sum's display scale is the largest of its values' (not DECIMAL(38, 18)'s)
        argument = _argument(agg)
        own = text_of(argument)
        own_scale = (
            call("pg_numeric_scale", own.copy())
            if own is not None
            else call("pg_text_scale", argument.copy())
        )
        digits = _rewrap(node, agg, exp.Max, own_scale)
        text = call("pg_numeric_rescale", cast(total.copy(), "VARCHAR"), digits)
        return exact_divide(total, count, quotient_scale(None), a_text=text)
    kind = _statistic_kind(agg)
    if kind is not None and exact:
        value = _argument(agg)
        square = exp.Mul(
            this=cast(value.copy(), "HUGEINT") if arg.integer else value.copy(),
            expression=cast(value.copy(), "HUGEINT") if arg.integer else value.copy(),
        )
        parts = [
            _rewrap(node, agg, exp.Count),
            _rewrap(node, agg, exp.Sum),
            _rewrap(node, agg, exp.Sum, square),
        ]
        scale = DEFAULT_SCALE
        text = call(
            "pg_numeric_var",
            *[cast(p, "VARCHAR") for p in parts],
            exp.Literal.string(kind),
            exp.Literal.number(scale),
        )
        return cast(text, f"DECIMAL(38, {scale})")
    return None


def _unknown_aggregate(agg: exp.Expr, node: exp.Expr) -> exp.Expr | None:
    if isinstance(agg, exp.Avg):  # of a value of unknown type: refused when it is exact (checked as it runs)
        agg.set("this", call("pg_avg_arg", agg.this))
    return None


def _argument(agg: exp.Expr) -> exp.Expr:
    inner = agg.this
    if isinstance(inner, exp.Distinct):
        return inner.expressions[0]
    return inner


_AGGREGATES = (exp.Sum, exp.Avg, exp.Stddev, exp.StddevSamp, exp.StddevPop, exp.Variance, exp.VariancePop)


def _unwrap(node: exp.Expr) -> exp.Expr | None:
    inner = node.this if isinstance(node, exp.Window) else node
    inner = inner.this if isinstance(inner, exp.Filter) else inner
    return inner if isinstance(inner, _AGGREGATES) else None


def _outermost(agg: exp.Expr) -> exp.Expr:
    node = agg
    if isinstance(node.parent, exp.Filter) and node.arg_key == "this":
        node = node.parent
    if isinstance(node.parent, exp.Window) and node.arg_key == "this":
        node = node.parent
    return node


def _rewrap(
    outer: exp.Expr,
    agg: exp.Expr,
    kind: type[exp.Expr],
    value: exp.Expr | None = None,
) -> exp.Expr:
    """A copy of ``outer`` (the aggregate with its FILTER/OVER) with the aggregate replaced by ``kind``."""
    argument = agg.this.copy()
    if value is not None:
        argument = exp.Distinct(expressions=[value]) if isinstance(agg.this, exp.Distinct) else value
    return rewrapped(outer, agg, kind(this=argument))


_FLOAT_ONLY = {"sqrt": "sqrt()", "ln": "ln()", "exp": "exp()", "log": "log()", "pow": "power()"}


def _math(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """PostgreSQL's overloads: integers take the float8 version (numeric for round(i, n))."""
    key = node.key
    if key not in ("round", "trunc", "ceil", "floor", "sign", *_FLOAT_ONLY):
        return None
    arg = types.of(node.this)
    if arg is None:
        return None
    if key in _FLOAT_ONLY and (arg.numeric or key in ("pow", "log") and _any_numeric(node, types)):
        raise refusal(node, f"{_FLOAT_ONLY[key]} of a numeric (PostgreSQL computes it in numeric arithmetic)")
    decimals = node.args.get("decimals")
    if key == "round" and arg.floating and decimals is None:
        return call("round_even", node.this, exp.Literal.number(0))
    if key == "sign":
        return cast(node, "DECIMAL(1, 0)" if arg.numeric else "DOUBLE")
    widened = _more_digits(node, key, arg, decimals)
    if widened is not None:
        return widened
    if arg.integer and decimals is None:
        node.set("this", cast(node.this, "DOUBLE"))
    elif arg.integer:
        node.set("this", cast(node.this, "DECIMAL(38, 0)"))
    return None


def _more_digits(node: exp.Expr, key: str, arg: PgType, decimals: exp.Expr | None) -> exp.Expr | None:
    """``round``/``trunc`` of a ``numeric(p, s)`` to ``d > s`` places: PostgreSQL's result has scale ``d``
    (``trunc(1.5, 3)`` is ``1.500``); DuckDB keeps the argument's decimal type. The value is the argument's."""
    if key not in ("round", "trunc") or not arg.numeric or arg.loose_scale or arg.dims:
        return None
    if (
        arg.precision is None
        or arg.scale is None
        or not isinstance(decimals, exp.Literal)
        or not decimals.is_int
    ):
        return None
    places = int(decimals.this)
    if places <= arg.scale:
        return None
    digits = arg.precision - arg.scale + places
    if digits > 38:
        raise refusal(
            node, f"{key} of a numeric({arg.precision}, {arg.scale}) to {places} places (more than 38 digits)"
        )
    return cast(node.this, f"DECIMAL({digits}, {places})")


def _any_numeric(node: exp.Expr, types: Typer) -> bool:
    other = types.of(node.expression) if isinstance(node.expression, exp.Expr) else None
    return other is not None and other.numeric


def _cast(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Cast):
        return None
    to = node.to
    source = types.of(node.this)
    if (
        to.this in (exp.DType.INT, exp.DType.SMALLINT, exp.DType.BIGINT)
        and source is not None
        and source.string
    ):
        node.set("this", call("pg_int_text", node.this))
        return None
    if to.this in (exp.DType.DOUBLE, exp.DType.FLOAT) and source is not None and source.string:
        node.set(
            "this", call("pg_float8_text" if to.this == exp.DType.DOUBLE else "pg_float4_text", node.this)
        )
        return None
    if to.this != exp.DType.DECIMAL:
        return None
    if source is not None and source.floating:
        node.set(
            "this", call("pg_float_numeric", node.this, exp.Literal.number(6 if source.is_("float4") else 15))
        )
        source = None  # text of at most 15 significant digits
    if to.expressions:
        return None
    return _to_numeric(node, source)


def _to_numeric(node: exp.Cast, source: PgType | None) -> exp.Expr:
    inner = node.this
    if isinstance(inner, exp.Literal) and not inner.is_string and not inner.is_int:
        return _numeric_literal(node, inner.this)  # 1e3: a double in DuckDB
    if source is not None and source.numeric:
        return inner  # numeric::numeric changes nothing
    if source is not None and source.integer:
        # as few digits as the integer type holds: DuckDB compares (IN, =, UNION) two decimals in one type of at
        # most 38 digits, and DECIMAL(38, 0) against numeric(20, 6) rounded the latter to whole numbers
        digits = 5 if source.is_("int2") else 10 if source.is_("int4") else 19 if source.is_("int8") else 38
        return cast(inner, f"DECIMAL({digits}, 0)")
    if isinstance(inner, exp.Literal) and inner.is_string:
        return _numeric_literal(node, inner.this)
    return cast(call("pg_numeric_text", inner, exp.Literal.number(TEXT_SCALE)), f"DECIMAL(38, {TEXT_SCALE})")


def _numeric_literal(node: exp.Expr, text: str) -> exp.Expr:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        # PostgreSQL refuses it: so do we, in its words
        raise QueryFailed(f'invalid input syntax for type numeric: "{text}"', sqlstate="22P02") from None
    if not value.is_finite():
        raise refusal(node, f"the numeric {text.strip()} (DuckDB's decimal has no NaN or infinity)")
    exponent = int(value.as_tuple().exponent)
    scale = max(0, -exponent)
    digits = max(len(value.as_tuple().digits) + exponent, 1) + scale
    text = format(value, "f")  # PostgreSQL reads 1e3 as 1000
    if digits > 38:
        raise refusal(node, f"the numeric {text.strip()} (more than 38 digits)")
    return cast(exp.Literal.string(text), f"DECIMAL({max(digits, scale, 1)}, {scale})")


def _exponent_literal(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A number written with an exponent (``1e3``) is a numeric in PostgreSQL (DuckDB: a double)."""
    exponent = isinstance(node, exp.Literal) and not node.is_string and "e" in node.this.lower()
    # a cast to numeric or a float reads the literal itself (:func:`_to_numeric`); to text it writes the numeric's
    cast_operand = (
        isinstance(node.parent, exp.Cast)
        and node.arg_key == "this"
        and node.parent.to.this in (exp.DType.DECIMAL, exp.DType.DOUBLE, exp.DType.FLOAT)
    )
    if (
        exponent and not cast_operand and node.find_ancestor(exp.Version) is None
    ):  # not a time-travel argument
        return _numeric_literal(node, node.this)
    return None


def _shift(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``<<`` and ``>>`` of integers as PostgreSQL computes them (see the ``pg_shl`` macro): DuckDB raises on
    overflow (``2147483647 << 7``) and shifts a negative count to 0 (``-1 >> -2``: PostgreSQL -1)."""
    if not isinstance(node, exp.BitwiseLeftShift | exp.BitwiseRightShift):
        return None
    typ = types.of(node.this)
    if typ is None or not typ.integer or typ.dims:
        return None
    name = "BIGINT" if typ.is_("int8") else "INTEGER" if typ.is_("int4") else "SMALLINT"
    bits, mask = {"BIGINT": (64, 63), "INTEGER": (32, 31), "SMALLINT": (16, 31)}[name]
    count = cast(node.expression, "INTEGER")
    if isinstance(node, exp.BitwiseLeftShift):
        shifted = call("pg_shl", node.this, count, exp.Literal.number(bits), exp.Literal.number(mask))
    else:
        shifted = call("pg_shr", node.this, count, exp.Literal.number(mask))
    return cast(shifted, name)


RULES: list[Rule] = [
    _exponent_literal,
    _shift,
    _division,
    _int_div,
    _float_arithmetic,
    _aggregates,
    _math,
    _cast,
]

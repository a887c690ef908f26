"""Result types of PostgreSQL's functions (as sqlglot parses them), for :mod:`lakegate.gateway.pgtyping`.

A table by sqlglot's expression key (``count``, ``strposition`` ...) or, for functions sqlglot does not know,
by name (``anonymous``). Each entry is a fixed type, ``ARG`` (the first argument's type), or a function of the
argument types; PostgreSQL's overload choice is followed where it matters (``round(int)`` is ``float8``:
integers are cast to the preferred float8 version; ``sum(int4)`` is ``int8``, ``avg`` of exact types is
``numeric``). Written by hand from PostgreSQL's catalog (``pg_proc``); unknown functions are ``None``.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from lakegate.gateway.pgtype import (
    BOOL,
    BYTEA,
    DATE,
    FLOAT4,
    FLOAT8,
    INT4,
    INT8,
    INTERVAL,
    JSON,
    JSONB,
    LOOSE_NUMERIC,
    NUMERIC,
    TEXT,
    TIME,
    TIMESTAMP,
    TIMESTAMPTZ,
    UUID,
    PgType,
    as_text,
    common,
)
from lakegate.gateway.scope import fold

TypeOf = Callable[[exp.Expr | None], "PgType | None"]
Rule = Callable[[exp.Func, TypeOf], "PgType | None"]


def _first(node: exp.Func) -> exp.Expr | None:
    if node.this is not None and isinstance(node.this, exp.Expr):
        return node.this
    return node.expressions[0] if node.expressions else None


def _arg(node: exp.Func, of: TypeOf) -> PgType | None:
    return of(_first(node))


def _fixed(result: PgType) -> Rule:
    return lambda node, of: result


def _sum(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = _arg(node, of)
    if arg is None:
        return None
    if arg.is_("int2", "int4"):
        return INT8
    if arg.is_("int8"):
        return NUMERIC
    if arg.numeric:
        return PgType("numeric", loose_scale=arg.loose_scale)
    return arg if arg.is_("float4", "float8", "interval", "money") else None


def _avg(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = _arg(node, of)
    if arg is None:
        return None
    if arg.integer or arg.numeric:
        return LOOSE_NUMERIC
    return FLOAT8 if arg.floating else INTERVAL if arg.is_("interval") else None


def _exact_or_float(node: exp.Func, of: TypeOf) -> PgType | None:
    """Functions with a numeric and a float8 version (integers take float8's): stddev, round(x), sqrt ..."""
    arg = _arg(node, of)
    if arg is None:
        return None
    return NUMERIC if arg.numeric else FLOAT8 if arg.number or arg.is_("unknown") else None


def _round(node: exp.Func, of: TypeOf) -> PgType | None:
    if node.args.get("decimals") is not None:  # round(numeric, int): integers become numeric
        return NUMERIC
    return _exact_or_float(node, of)


def _statistic(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = _arg(node, of)
    if arg is None:
        return None
    return LOOSE_NUMERIC if arg.integer or arg.numeric else FLOAT8 if arg.floating else None


def _power(node: exp.Func, of: TypeOf) -> PgType | None:
    args = [of(node.this), of(node.expression)]
    if any(a is None for a in args):
        return None
    return NUMERIC if any(a is not None and a.numeric for a in args) else FLOAT8


def _extreme(node: exp.Func, of: TypeOf) -> PgType | None:
    """min/max: the argument's type; of a cidr an inet (PostgreSQL has min(inet), which a cidr is cast to)."""
    arg = of(_first(node))
    return as_text("inet") if arg is not None and arg.is_("cidr") else arg


def _lag(node: exp.Func, of: TypeOf) -> PgType | None:
    """lag/lead(x, n, default): x's type; a numeric with a default of another type or scale is a numeric
    without a scale of its own (PostgreSQL's common typmod is none: each value keeps its display scale)."""
    value = of(node.this)
    default = node.args.get("default")
    other = of(default) if default is not None else None
    if value is None or other is None or other.is_("unknown"):
        return value
    if other == value and not (value.numeric and value.scale is None and not value.loose_scale):
        return value  # (numeric literals of one type may differ in scale)
    if value.numeric or value.integer and other.numeric:
        return LOOSE_NUMERIC
    return value


def _common_args(node: exp.Func, of: TypeOf) -> PgType | None:
    args = [node.this, *node.expressions] if isinstance(node.this, exp.Expr) else list(node.expressions)
    return common([of(a) for a in args])


def _nullif(node: exp.Func, of: TypeOf) -> PgType | None:
    """NULLIF returns the first argument of its implied ``=``, which PostgreSQL promotes to the second's
    numeric type where no ``=`` takes the two as they are (``nullif(1, 1.5)`` is a numeric); integers of two
    widths and floats of two widths have such operators (``nullif(int4, int8)`` is an int4)."""
    first, second = of(node.this), of(node.expression) if isinstance(node.expression, exp.Expr) else None
    if first is None or second is None or not first.number or not second.number:
        return first
    if first.integer and second.integer or first.floating and second.floating:
        return first
    return common([first, second])


def _array_of_arg(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = _arg(node, of)
    return arg.array() if arg is not None and not arg.is_("unknown") else None


def _element_of_arg(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = _arg(node, of)
    return arg.elem if arg is not None and arg.dims else None


def _array_arg(node: exp.Func, of: TypeOf) -> PgType | None:
    for arg in (node.this, node.expression, *node.expressions):
        typ = of(arg) if isinstance(arg, exp.Expr) else None
        if typ is not None and typ.dims:
            return typ
    return None


_INT_RANK = {"int2": 0, "int4": 1, "int8": 2}


def _array_common(node: exp.Func, of: TypeOf) -> PgType | None:
    """array_append/prepend/remove/replace/cat take anycompatible arguments: an integer array with a wider
    integer (element or array) is an array of the wider type (``array_remove(int4[], int8)`` is ``int8[]``)."""
    typ = _array_arg(node, of)
    if typ is None or typ.dims != 1 or typ.elem.name not in _INT_RANK:
        return typ
    best = typ.elem
    for arg in (node.this, node.expression, *node.expressions):
        other = of(arg) if isinstance(arg, exp.Expr) else None
        element = (other.elem if other.dims else other) if other is not None else None
        if (
            element is not None
            and element.name in _INT_RANK
            and _INT_RANK[element.name] > _INT_RANK[best.name]
        ):
            best = element
    return typ if best is typ.elem else PgType(best.name).array()


def _date_trunc(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = of(node.this)
    if arg is None:
        return None
    if arg.is_("date", "timestamptz", "unknown"):  # a date takes the timestamptz version
        return TIMESTAMPTZ
    return arg if arg.is_("timestamp", "interval") else None


def _extract(node: exp.Func, of: TypeOf) -> PgType | None:
    return FLOAT8 if node.args.get("_date_part") else NUMERIC


def _percentile(node: exp.Func, of: TypeOf) -> PgType | None:
    within = node.parent
    order = within.args.get("expression") if isinstance(within, exp.WithinGroup) else None
    key = order.expressions[0] if isinstance(order, exp.Order) and order.expressions else None
    typ = of(key.this if isinstance(key, exp.Ordered) else key)
    if isinstance(node, exp.PercentileCont):
        return INTERVAL if typ is not None and typ.is_("interval") else FLOAT8
    return typ


def _json_of_arg(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = _arg(node, of)
    return arg if arg is not None and arg.is_("json", "jsonb") else None


def _mod(node: exp.Func, of: TypeOf) -> PgType | None:
    from lakegate.gateway.pgtype import arithmetic

    return arithmetic(of(node.this), of(node.expression))


def _gcd(node: exp.Func, of: TypeOf) -> PgType | None:
    """gcd/lcm exist for int4, int8 and numeric: a smallint is promoted to int4 (``gcd(int2, int2)`` is int4),
    any numeric argument makes both numeric (``gcd(int4, numeric)`` is a numeric without typmod)."""
    args = [of(a) for a in (node.this, node.expression, *node.expressions) if isinstance(a, exp.Expr)]
    known = [a for a in args if a is not None and (a.integer or a.numeric)]
    if not args or len(known) < len(args):
        return None
    if any(a.numeric for a in known):
        return PgType("numeric", loose_scale=any(a.loose_scale for a in known))
    return INT8 if any(a.is_("int8") for a in known) else INT4


def _sign(node: exp.Func, of: TypeOf) -> PgType | None:
    return _exact_or_float(node, of)


def _concat(node: exp.Func, of: TypeOf) -> PgType | None:
    return TEXT


def _string_agg(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = _arg(node, of)
    return BYTEA if arg is not None and arg.is_("bytea") else TEXT


def _to_timestamp(node: exp.Func, of: TypeOf) -> PgType | None:
    return TIMESTAMPTZ


def _date_bin(node: exp.Func, of: TypeOf) -> PgType | None:
    arg = of(
        node.expressions[1]
        if isinstance(node, exp.Anonymous) and len(node.expressions) > 1
        else node.expression
    )
    return arg if arg is not None and arg.is_("timestamp", "timestamptz") else None


def _age(node: exp.Func, of: TypeOf) -> PgType | None:
    return INTERVAL


def _generate_series(node: exp.Func, of: TypeOf) -> PgType | None:
    start = of(node.args.get("start") or _first(node))
    if start is None:
        return None
    if start.is_("unknown"):
        return None
    if start.is_("date", "timestamptz"):
        return TIMESTAMPTZ if start.is_("timestamptz") or start.is_("date") else start
    return start


_BY_KEY: dict[str, Rule | PgType] = {
    "sha2digest": BYTEA,  # sha224/256/384/512(bytea)
    "count": INT8,
    "sum": _sum,
    "avg": _avg,
    "min": _extreme,
    "max": _extreme,
    "stddev": _statistic,
    "stddevsamp": _statistic,
    "stddevpop": _statistic,
    "variance": _statistic,
    "variancepop": _statistic,
    "corr": FLOAT8,
    "covarpop": FLOAT8,
    "covarsamp": FLOAT8,
    "regrslope": FLOAT8,
    "regrintercept": FLOAT8,
    "regrr2": FLOAT8,
    "regravgx": FLOAT8,
    "regravgy": FLOAT8,
    "regrsxx": FLOAT8,
    "regrsyy": FLOAT8,
    "regrsxy": FLOAT8,
    "regrcount": INT8,
    "logicaland": BOOL,
    "logicalor": BOOL,
    "bitwiseandagg": _arg,
    "bitwiseoragg": _arg,
    "bitwisexoragg": _arg,
    "groupconcat": _string_agg,
    "arrayagg": _array_of_arg,
    "jsonarrayagg": JSON,
    "jsonobjectagg": JSON,
    "jsonbobjectagg": JSONB,
    "percentilecont": _percentile,
    "percentiledisc": _percentile,
    "mode": _percentile,
    "rownumber": INT8,
    "rank": INT8,
    "denserank": INT8,
    "ntile": INT4,
    "percentrank": FLOAT8,
    "cumedist": FLOAT8,
    "lag": _lag,
    "lead": _lag,
    "firstvalue": _arg,
    "lastvalue": _arg,
    "nthvalue": _arg,
    "grouping": INT4,
    "length": INT4,
    "bitlength": INT4,
    "strposition": INT4,
    "ascii": INT4,
    "arraysize": INT4,
    "arrayposition": INT4,
    "regexpcount": INT4,
    "widthbucket": INT4,
    "upper": TEXT,
    "lower": TEXT,
    "initcap": TEXT,
    "trim": TEXT,
    "substring": TEXT,
    "left": TEXT,
    "right": TEXT,
    "replace": TEXT,
    "translate": TEXT,
    "pad": TEXT,
    "repeat": TEXT,
    "reverse": TEXT,
    "concat": _concat,
    "concatws": TEXT,
    "splitpart": TEXT,
    "md5": TEXT,
    "hex": TEXT,
    "chr": TEXT,
    "format": TEXT,
    "regexpreplace": TEXT,
    "encode": TEXT,
    "decode": BYTEA,
    "overlay": TEXT,
    "timetostr": TEXT,
    "arraytostring": TEXT,
    "startswith": BOOL,
    "regexplike": BOOL,
    "abs": _arg,
    "sign": _sign,
    "round": _round,
    "trunc": _round,
    "ceil": _exact_or_float,
    "floor": _exact_or_float,
    "sqrt": _exact_or_float,
    "exp": _exact_or_float,
    "ln": _exact_or_float,
    "log": _exact_or_float,
    "cbrt": FLOAT8,
    "pow": _power,
    "pi": FLOAT8,
    "rand": FLOAT8,
    "degrees": FLOAT8,
    "radians": FLOAT8,
    "sin": FLOAT8,
    "cos": FLOAT8,
    "tan": FLOAT8,
    "asin": FLOAT8,
    "acos": FLOAT8,
    "atan": FLOAT8,
    "atan2": FLOAT8,
    "mod": _mod,
    "factorial": NUMERIC,
    "coalesce": _common_args,
    "greatest": _common_args,
    "least": _common_args,
    "nullif": _nullif,
    "timestamptrunc": _date_trunc,
    "datetrunc": _date_trunc,
    "extract": _extract,
    "currenttimestamp": TIMESTAMPTZ,
    "currentdate": DATE,
    "localtimestamp": TIMESTAMP,
    "timefromparts": TIME,
    "timestampfromparts": TIMESTAMP,
    "makeinterval": INTERVAL,
    "unixtotime": _to_timestamp,
    "strtotime": _to_timestamp,
    "strtodate": DATE,
    "tonumber": NUMERIC,
    "datebin": _date_bin,
    "justifyhours": INTERVAL,
    "justifydays": INTERVAL,
    "justifyinterval": INTERVAL,
    "explodinggenerateseries": _generate_series,
    "generateseries": _generate_series,
    "arrayappend": _array_common,
    "arrayprepend": _array_common,
    "arrayconcat": _array_common,
    "arrayremove": _array_common,
    "arrayreverse": _array_arg,
    "arraysort": _array_arg,
    "explode": _element_of_arg,
    "jsonbdeleteatpath": JSONB,
    "jsonstripnulls": JSON,
    "stringtoarray": PgType("text", 1),
    "uuid": UUID,
    "currentuser": PgType("name"),
    "currentschema": PgType("name"),
}

_BY_NAME: dict[str, Rule | PgType] = {
    "every": BOOL,
    "current_setting": TEXT,
    "jsonb_agg": JSONB,
    "octet_length": INT4,
    "array_upper": INT4,
    "array_lower": INT4,
    "cardinality": INT4,
    "array_ndims": INT4,
    "array_dims": TEXT,
    "array_positions": PgType("int4", 1),
    "array_replace": _array_common,
    "quote_ident": TEXT,
    "to_char": TEXT,
    "to_date": DATE,
    "to_timestamp": TIMESTAMPTZ,
    "quote_literal": TEXT,
    "quote_nullable": TEXT,
    "gcd": _gcd,
    "lcm": _gcd,
    "age": _age,
    "clock_timestamp": TIMESTAMPTZ,
    "statement_timestamp": TIMESTAMPTZ,
    "transaction_timestamp": TIMESTAMPTZ,
    "make_date": DATE,
    "make_timestamptz": TIMESTAMPTZ,
    "isfinite": BOOL,
    "jsonb_typeof": TEXT,
    "json_typeof": TEXT,
    "jsonb_array_length": INT4,
    "json_array_length": INT4,
    "jsonb_build_object": JSONB,
    "json_build_object": JSON,
    "jsonb_build_array": JSONB,
    "json_build_array": JSON,
    "to_json": JSON,
    "to_jsonb": JSONB,
    "jsonb_set": JSONB,
    "jsonb_insert": JSONB,
    "date_bin": _date_bin,
    "jsonb_strip_nulls": JSONB,
    "json_strip_nulls": JSON,
    "jsonb_pretty": TEXT,
    "jsonb_object": JSONB,
    "array_to_json": JSON,
    "jsonb_extract_path_text": TEXT,
    "json_extract_path_text": TEXT,
    "jsonb_extract_path": JSONB,
    "json_extract_path": JSON,
    "jsonb_path_query_first": JSONB,
    "jsonb_array_elements": JSONB,
    "json_array_elements": JSON,
    "jsonb_array_elements_text": TEXT,
    "json_array_elements_text": TEXT,
    "jsonb_object_keys": TEXT,
    "json_object_keys": TEXT,
    "regexp_split_to_array": PgType("text", 1),
    "regexp_match": PgType("text", 1),
    "regexp_matches": PgType("text", 1),
    "regexp_split_to_table": TEXT,
    "string_to_table": TEXT,
    "uuid_generate_v4": UUID,
    "gen_random_uuid": UUID,
    "sha256": BYTEA,
    "pg_typeof": PgType("regtype"),
    "num_nulls": INT4,
    "num_nonnulls": INT4,
    "to_ascii": TEXT,
    "unistr": TEXT,
    "date_part": FLOAT8,
    "float4": FLOAT4,
    "float8": FLOAT8,
    "time": TIME,
    "date": DATE,
}


def known(node: exp.Expr) -> bool:
    """Whether the table has a rule for ``node``."""
    if isinstance(node, exp.Anonymous):
        return node.name.lower() in _BY_NAME
    return node.key in _BY_KEY or isinstance(node, exp.AtTimeZone)


def result(node: exp.Expr, of: TypeOf) -> PgType | None:
    """The result type of the function call ``node`` (``of`` types its arguments), None when unknown."""
    if isinstance(node, exp.AtTimeZone):
        return _at_time_zone(node, of)
    rule = _BY_NAME.get(node.name.lower()) if isinstance(node, exp.Anonymous) else _BY_KEY.get(node.key)
    if rule is None:
        return None
    if isinstance(rule, PgType):
        return rule
    return rule(node, of)  # type: ignore[arg-type]


def _at_time_zone(node: exp.Expr, of: TypeOf) -> PgType | None:
    arg = of(node.this)
    if arg is None:
        return None
    if arg.is_("timestamp"):
        return TIMESTAMPTZ
    if arg.is_("timestamptz", "date", "unknown"):  # a string literal is read as a timestamptz
        return TIMESTAMP
    return None


# ------------------------------------------------------------------------------------------ row generators


def generator_columns(func: exp.Expr, of: TypeOf) -> list[tuple[str, PgType | None]] | None:
    """The columns of a row generator in FROM (``unnest``, ``generate_series``, ``jsonb_each`` ...)."""
    if isinstance(func, exp.Unnest):
        return [(f"unnest{i}", _element(of(e))) for i, e in enumerate(func.expressions)] or None
    if isinstance(func, exp.ExplodingGenerateSeries | exp.GenerateSeries):
        return [("generate_series", _generate_series(func, of))]  # type: ignore[arg-type]
    if isinstance(func, exp.Explode):
        return [("unnest", _element(of(func.this)))]
    name = func.name.lower() if isinstance(func, exp.Anonymous) else ""
    if name in ("jsonb_each", "json_each"):
        return [("key", TEXT), ("value", JSONB if name == "jsonb_each" else JSON)]
    if name in ("jsonb_each_text", "json_each_text"):
        return [("key", TEXT), ("value", TEXT)]
    if isinstance(func, exp.Func):
        typ = result(func, of)
        return [(name or func.key, typ)] if typ is not None else None
    return None


def generator_name(item: exp.Expr) -> str:
    func = item.this if isinstance(item, exp.Table) else item
    if isinstance(func, exp.Anonymous):
        return fold(exp.to_identifier(func.name))
    if isinstance(func, exp.Unnest | exp.Explode):
        return "unnest"
    if isinstance(func, exp.ExplodingGenerateSeries | exp.GenerateSeries):
        return "generate_series"
    return ""


def _element(typ: PgType | None) -> PgType | None:
    return typ.elem if typ is not None and typ.dims else None

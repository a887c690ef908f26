"""Arrays, quantified comparisons and dates on the DuckDB route as PostgreSQL computes them (rules of
:mod:`lakegate.gateway.dialect`).

* arrays: ``||`` and ``array_cat``/``array_append``/``array_prepend`` treat a NULL array as empty (DuckDB's
  ``||`` gives NULL), ``array_remove`` keeps NULL elements (and removes them when asked to), ``array_length``/
  ``array_upper``/``array_lower`` are NULL for an empty array, ``cardinality`` counts elements;
* ``x = ANY(array)`` / ``x = ALL(array)``: NULL for a NULL array, and NULL rather than false when no element
  matches but one is NULL (SQL's three-valued logic, which DuckDB's list search does not follow);
* ``extract`` is ``numeric`` (seconds and epoch keep their microseconds), ``date_part`` ``float8``; of an
  infinite date or timestamp PostgreSQL's fields are NULL, or +/-Infinity for year, epoch and the like (a float
  in ``date_part``; ``extract``'s numeric Infinity has no DuckDB decimal: an error); ``date_trunc`` of a date is a
  ``timestamptz`` and of an infinity is that infinity; fields and truncation of a ``timestamptz`` are those of
  its local time in the session's zone (:mod:`lakegate.gateway.dialect_zones`).
"""

from __future__ import annotations

from sqlglot import exp
from sqlglot.dialects.dialect import apply_index_offset

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.dialect_gaps import array_literal
from lakegate.gateway.dialect_text import trimmed
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

_DUCK_INTEGERS = {"int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT"}


def _array_widening(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """The arguments of array_append/prepend/remove/replace/cat in their common integer type (PostgreSQL's
    anycompatible; DuckDB kept the array's narrower type), in place."""
    if isinstance(node, exp.DPipe):  # array || element, element || array, array || array
        sides = [types.of(node.this), types.of(node.expression)]
        if any(t is None for t in sides) or not any(t.dims == 1 for t in sides if t is not None):
            return None
        elements = [(t.elem if t.dims else t).name for t in sides if t is not None]
        if not all(e in _DUCK_INTEGERS for e in elements):
            return None
        widest = max(elements, key=list(_DUCK_INTEGERS).index)
        result = PgType(widest).array()
        types.note(node, result)
    elif (
        isinstance(node, exp.ArrayAppend | exp.ArrayPrepend | exp.ArrayRemove | exp.ArrayConcat)
        or isinstance(node, exp.Anonymous)
        and node.name.lower() == "array_replace"
    ):
        found = types.of(node)
        if found is not None and found.dims == 1 and found.elem.is_("text", "varchar"):
            if not isinstance(node, exp.ArrayPrepend):  # char(n) first: PostgreSQL's result is char(n)[]
                _unpadded_elements(node, types)
            return None
        if found is None or found.dims != 1 or found.elem.name not in _DUCK_INTEGERS:
            return None
        result = found
    else:
        return None
    duck = _DUCK_INTEGERS[result.elem.name]
    args: list[exp.Expr] = [
        a for a in (node.args.get("this"), node.args.get("expression")) if isinstance(a, exp.Expr)
    ]
    args += list(node.expressions)
    for arg in args:
        typ = types.of(arg)
        if typ is None or isinstance(arg, exp.Null):
            continue
        element = typ.elem if typ.dims else typ
        if element.name in _DUCK_INTEGERS and element.name != result.elem.name:
            widened = cast(arg.copy(), f"{duck}[]" if typ.dims else duck)
            types.note(widened, result if typ.dims else result.elem)
            arg.replace(widened)
    return None


def _unpadded_elements(node: exp.Expr, types: Typer) -> None:
    """A char(n) element put into a text array is text: without its padding (PostgreSQL's bpchar -> text)."""
    for key in ("this", "expression"):
        arg = node.args.get(key)
        typ = types.of(arg) if isinstance(arg, exp.Expr) else None
        if isinstance(arg, exp.Expr) and typ is not None and typ.bpchar and not typ.dims:
            text = trimmed(arg.copy(), typ)
            if text is not arg:
                types.note(text, PgType("text"))
                arg.replace(text)


def _array_concat(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.ArrayConcat) and len(node.expressions) == 1:
        return call("pg_array_cat", node.this, node.expressions[0])
    if not isinstance(node, exp.DPipe):
        return None
    left, right = types.of(node.this), types.of(node.expression)
    if any(t is not None and t.is_("json", "jsonb") for t in (left, right)):
        return None  # dialect_jsonedit's
    if left is None or right is None or not (left.dims or right.dims):
        return None
    if left.dims and right.dims:
        if left.dims != right.dims:
            return (
                call("list_append", node.this, node.expression)
                if left.dims > right.dims
                else call("list_prepend", node.this, node.expression)
            )
        return call("pg_array_cat", node.this, node.expression)
    if left.dims:
        return call("list_append", node.this, node.expression)
    return call("list_prepend", node.this, node.expression)


def _array_functions(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.ArrayRemove):
        return call("pg_array_remove", node.this, node.expression)
    if isinstance(node, exp.ArraySize):
        dim = node.expression if isinstance(node.expression, exp.Expr) else exp.Literal.number(1)
        return call("pg_array_length", node.this, dim)
    if not isinstance(node, exp.Anonymous):
        return None
    name = node.name.lower()
    macros = {
        "array_upper": "pg_array_upper",
        "array_lower": "pg_array_lower",
        "cardinality": "pg_cardinality",
    }
    if name in macros:
        return call(macros[name], *node.expressions)
    return None


def _quantifier(node: exp.Expr) -> tuple[str, exp.Expr] | None:
    """("any" | "all", the operand) of ``ANY (...)``/``ALL (...)`` (sqlglot reads ``ALL(x)`` as a call)."""
    if isinstance(node, exp.Any | exp.All):
        operand = node.this
        return ("any" if isinstance(node, exp.Any) else "all"), operand
    if (
        isinstance(node, exp.Anonymous)
        and node.name.upper() in ("ANY", "SOME", "ALL")
        and len(node.expressions) == 1
    ):
        return ("all" if node.name.upper() == "ALL" else "any"), node.expressions[0]
    return None


#: comparisons with an array quantifier, and their macros' names (``pg_<name>_any``/``pg_<name>_all``)
_QUANTIFIED: dict[type[exp.Expr], str] = {
    exp.EQ: "eq",
    exp.NEQ: "ne",
    exp.LT: "lt",
    exp.LTE: "le",
    exp.GT: "gt",
    exp.GTE: "ge",
}


def _quantified(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``x <op> ANY/ALL(array)`` with SQL's NULLs: NULL for a NULL array, NULL where no comparison decides and one
    is NULL (DuckDB answered true or false). Ordering comparisons of text keep the collation rules' own path."""
    name = _QUANTIFIED.get(type(node))
    found = _quantifier(node.expression) if name else None
    if found is None:
        return None
    kind, array = found
    inner = array.this if isinstance(array, exp.Paren) else array
    if isinstance(inner, exp.Query | exp.Subquery):
        return None
    if isinstance(inner, exp.Null):  # x = ANY(NULL) is NULL, x evaluated (DuckDB: false, x not evaluated)
        test = exp.If(this=exp.Is(this=node.this, expression=exp.Null()), true=cast(exp.Null(), "BOOLEAN"))
        return exp.Case(ifs=[test])
    if isinstance(inner, exp.Literal) and inner.is_string:  # x = ANY('{1,2}'): an array of x's type
        inner, literal_type = _quantified_literal(node, inner, types.of(node.this))
        if name not in ("eq", "ne") and literal_type.elem.string:
            raise refusal(
                node, "an ordering comparison of text with ANY/ALL of an array literal (collations)"
            )
        return call(f"pg_{name}_{kind}", node.this, inner)
    typ = types.of(inner)
    if typ is None or not typ.dims:
        return None
    if name not in ("eq", "ne") and typ.name in ("text", "varchar", "bpchar", "unknown", "name"):
        return None
    return call(f"pg_{name}_{kind}", node.this, inner)


#: DuckDB's element types of the arrays ``x <op> ANY('{...}')`` reads for each type of ``x``
_LITERAL_ELEMENTS = {
    "int2": "SMALLINT",
    "int4": "INTEGER",
    "int8": "BIGINT",
    "text": "VARCHAR",
    "varchar": "VARCHAR",
}


def _quantified_literal(node: exp.Expr, literal: exp.Literal, left: PgType | None) -> tuple[exp.Expr, PgType]:
    """The string literal of ``x <op> ANY/ALL('{...}')`` as PostgreSQL reads it: an array of ``x``'s type."""
    element = _LITERAL_ELEMENTS.get(left.name) if left is not None and not left.dims else None
    if left is None or element is None:
        raise refusal(
            node,
            f"ANY/ALL of the array literal {literal.this!r} here (the lake route reads one of integers or text)",
        )
    target = left.array(1)
    to = exp.DataType.build(f"{element}[]", dialect="duckdb")
    return array_literal(exp.Cast(this=literal.copy(), to=to), target), target


_INFINITE_FIELDS = {"YEAR", "DECADE", "CENTURY", "MILLENNIUM", "EPOCH", "JULIAN", "ISOYEAR"}
_EXACT = {"SECOND": "pg_extract_second", "EPOCH": "pg_extract_epoch"}
_YEAR_FIELDS = {"YEAR", "DECADE", "CENTURY", "MILLENNIUM", "ISOYEAR"}
_NOT_EXACT = {"MILLISECONDS", "MICROSECONDS", "JULIAN", "TIMEZONE", "TIMEZONE_HOUR", "TIMEZONE_MINUTE"}


def _extract(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Extract):
        return None
    unit = node.this.name.upper()
    if unit in _NOT_EXACT:
        raise refusal(node, f"extract({unit.lower()} ...)")
    source = types.of(node.expression)
    value = node.expression
    if (
        source is not None
        and source.is_("date")
        and unit in ("HOUR", "MINUTE", "SECOND")
        and not node.args.get("_date_part")
    ):
        raise refusal(node, f"extract({unit.lower()} from a date) (PostgreSQL refuses it)")
    if source is not None and source.is_("timestamptz") and types.zone != "UTC" and unit != "EPOCH":
        value = call("timezone", exp.Literal.string(types.zone), value)  # the fields of the local time
    plain = exp.Extract(this=node.this, expression=value)
    dated = source is not None and source.is_("date", "timestamp", "timestamptz")
    if unit == "EPOCH" and source is not None and source.is_("interval"):
        exact: exp.Expr = call("pg_interval_epoch", value)  # 365.25 days a year, 30 days a month
    elif unit == "EPOCH" and source is not None and source.is_("date"):  # whole seconds: PostgreSQL's scale 0
        exact = cast(
            exp.IntDiv(this=call("epoch_us", value), expression=exp.Literal.number(1000000)), "DECIMAL(38, 0)"
        )
    elif unit in _EXACT:
        exact = call(_EXACT[unit], value)
    elif unit in _YEAR_FIELDS and dated:  # no year 0: 44 BC is -44 (DuckDB: -43)
        exact = cast(call("pg_year_field", exp.Literal.string(unit.lower()), value), "DECIMAL(38, 0)")
    else:
        exact = cast(plain, "DECIMAL(38, 0)")
    date_part = bool(node.args.get("_date_part"))
    if date_part:
        exact = cast(exact, "DOUBLE")
    if source is None or not source.is_("date", "timestamp", "timestamptz"):
        return exact
    if unit in _INFINITE_FIELDS:
        field = exp.Literal.string(unit.lower())
        infinite: exp.Expr = (
            call("pg_infinity_sign", value) if date_part else call("pg_infinite_field", value, field)
        )
    else:
        infinite = exp.Null()
    return call("pg_finite_field", value, exact, infinite)


def _date_trunc(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.TimestampTrunc | exp.DateTrunc):
        return None
    value = node.this
    source = types.of(value)
    if source is None or not source.is_("date", "timestamp", "timestamptz"):
        return None
    unit = node.args.get("unit")
    name = exp.Literal.string(unit.name if unit is not None else "day")
    zone = types.zone
    if zone != "UTC" and source.is_("timestamptz") and name.this.upper() in _CLOCK_UNITS:
        return _clock_trunc(value, name, zone)
    if zone != "UTC" and source.is_("date", "timestamptz"):  # truncated in local time, back to an instant
        local = (
            cast(value, "TIMESTAMP")
            if source.is_("date")
            else call("timezone", exp.Literal.string(zone), value)
        )
        return call("timezone", exp.Literal.string(zone), call("pg_date_trunc", name, local))
    if source.is_("date"):
        value = cast(value, "TIMESTAMPTZ")
    return call("pg_date_trunc", name, value)


#: units below a day: PostgreSQL truncates the local time and keeps the instant's offset (no new offset is
#: looked up, as for a day or more): in the hour a daylight-saving change repeats, 01:30-04 becomes 01:00-04
_CLOCK_UNITS = {"HOUR", "MINUTE", "SECOND", "MILLISECONDS", "MILLISECOND", "MICROSECONDS", "MICROSECOND"}


def _clock_trunc(value: exp.Expr, unit: exp.Literal, zone: str) -> exp.Expr:
    """``date_trunc(unit, value)`` of a timestamptz below a day: the instant less what truncating its local time
    takes away (the offset stays; an infinity stays)."""
    local = call("timezone", exp.Literal.string(zone), value.copy())
    cut = exp.Paren(this=exp.Sub(this=local, expression=call("date_trunc", unit, local.copy())))
    return exp.Case(
        ifs=[exp.If(this=call("isinf", value.copy()), true=value.copy())],
        default=exp.Sub(this=value, expression=cut),
    )


_CONTAINMENT = {
    exp.ArrayContainsAll: ("pg_array_contains", False),
    exp.ArrayContainedBy: ("pg_array_contains", True),
    exp.ArrayOverlaps: ("pg_array_overlaps", False),
}


def _containment(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``@>``, ``<@``, ``&&`` of arrays: a NULL element equals nothing (DuckDB's list_has_all matched
    ``ARRAY[NULL]``), a multidimensional array's elements count whatever their dimension; an untyped literal
    (``'{}'``) is an array of the other side's type."""
    found = _CONTAINMENT.get(type(node))  # type: ignore[arg-type]
    if found is None:
        return None
    name, swapped = found
    sides = [node.this, node.expression]
    kinds = [types.of(side) for side in sides]
    if any(k is not None and k.is_("json", "jsonb") for k in kinds):
        return None  # dialect_json's
    for i, (side, kind) in enumerate(zip(sides, kinds, strict=True)):
        other = kinds[1 - i]
        if isinstance(side, exp.Literal) and side.is_string and other is not None and other.dims:
            target = other.elem.array()
            to = exp.DataType.build(f"{_DUCK.get(target.name, 'VARCHAR')}[]", dialect="duckdb")
            sides[i] = array_literal(exp.Cast(this=side.copy(), to=to), target)
            kinds[i] = target
        elif kind is None or not kind.dims:
            return None
    flat = [_flattened(side, kind) for side, kind in zip(sides, kinds, strict=True)]
    return call(name, *(reversed(flat) if swapped else flat))


_DUCK = {"int2": "SMALLINT", "int4": "INTEGER", "int8": "BIGINT", "text": "VARCHAR", "varchar": "VARCHAR"}


def _flattened(side: exp.Expr, kind: PgType | None) -> exp.Expr:
    for _ in range((kind.dims if kind is not None else 1) - 1):
        side = call("flatten", side)
    return side


def _subscript(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``a[i]``, ``a[i][j]``, ``a[lo:hi]``: PostgreSQL's NULL for an index below 1 (DuckDB counts from the end)
    and for a count of subscripts other than the array's dimensions; a slice's bounds clamped to the array."""
    if not isinstance(node, exp.Bracket) or isinstance(node.parent, exp.Bracket) and node.arg_key == "this":
        return None  # the chain a[i][j] is taken whole, at its outermost subscript
    chain: list[exp.Expr] = []
    base: exp.Expr = node
    while isinstance(base, exp.Bracket):
        chain[:0] = base.expressions
        base = base.this
    typ = types.of(base)
    if typ is None or not typ.dims:
        return None
    if any(isinstance(index, exp.Slice) for index in chain):
        if typ.dims > 1 or len(chain) > 1:
            raise refusal(node, "a slice of a multidimensional array")
        bound = chain[0]
        low, high = bound.args.get("this"), bound.args.get("expression")
        return call(
            "pg_slice",
            base,
            low.copy() if low is not None else exp.Literal.number(1),
            high.copy() if high is not None else exp.Literal.number(2147483647),
        )
    if len(chain) != typ.dims:
        elem = _DUCK.get(typ.name)
        if elem is None:
            raise refusal(node, f"{len(chain)} subscripts of an array of {typ.dims} dimensions")
        return cast(exp.Null(), elem)
    value = base
    for index in chain:
        # as written: sqlglot reads PostgreSQL's integer-typed subscripts less one (its lists count from 0), which
        # its writer adds back to a subscript (not to a call's argument)
        written = apply_index_offset(base.copy(), [index.copy()], 1, dialect="postgres")[0]
        value = call("pg_subscript", value, written)
    return value


RULES: list[Rule] = [
    _array_widening,
    _array_concat,
    _array_functions,
    _quantified,
    _extract,
    _date_trunc,
    _containment,
    _subscript,
]

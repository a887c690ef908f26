"""json values built from SQL values on the DuckDB route, with PostgreSQL's text (rules of
:mod:`lakegate.gateway.dialect`).

``json(b)_build_object``, ``json(b)_build_array``, ``to_json(b)``, ``json(b)_agg`` (with ORDER BY and FILTER),
and ``json(b)_each(_text)`` in FROM call :mod:`lakegate.connectors.duckdb.pgjson`, which writes
PostgreSQL's text (jsonb: keys shorter first then bytewise, the last of repeated keys, ``{"a": 1}``; json:
``{"a" : 1}`` and json arguments as written). A value goes to it as its text with its kind, so only kinds whose text
DuckDB prints as PostgreSQL does, or whose text it reads exactly, are taken: text and char(n) (padded), integers,
numerics whose scale the statement fixes (a column's, a literal's) or held as their text (an unconstrained column,
a quotient), floats (written as PostgreSQL writes them), booleans, json and jsonb, NULL; others (dates, arrays,
records, a numeric computed with a display scale PostgreSQL picks per value) are refused, as are these aggregates
as window functions.

Written by hand: DuckDB's json functions print numbers through a double and without PostgreSQL's spacing.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.dialect_jsontext import array_literal
from lakegate.gateway.dialect_scale import text_of
from lakegate.gateway.pgtyping import Typer

_BUILD = {
    "jsonb_build_object": "jsonb_object",
    "json_build_object": "json_object",
    "jsonb_build_array": "jsonb_array",
    "json_build_array": "json_array",
    "to_jsonb": "jsonb_value",
    "to_json": "json_value",
}
_AGGREGATES = {"jsonb_agg": "jsonb_array", "json_agg": "json_array"}
_EACH = {
    "jsonb_each": "jsonb",
    "jsonb_each_text": "jsonb_text",
    "json_each": "json",
    "json_each_text": "json_text",
}


def kind(value: exp.Expr, types: Typer, node: exp.Expr, what: str = "") -> str:
    """The letter pgjsonmake reads ``value``'s text by (``what``: the function named in a refusal)."""
    if isinstance(value, exp.Null):
        return "s"
    typ = types.of(value)
    name = typ.name if typ is not None and not typ.dims else None
    if name in ("text", "varchar", "bpchar", "name", "unknown"):
        return "s"
    if name in ("int2", "int4", "int8"):
        return "n"
    if (
        name == "numeric"
        and typ is not None
        and (not typ.loose_scale and (typ.scale is not None or _literal(value)) or text_of(value) is not None)
    ):
        return "n"
    if name in ("float8", "float4"):
        return "f" if name == "float8" else "r"
    if name == "bool":
        return "b"
    if name in ("json", "jsonb"):
        return "j" if name == "json" else "J"
    name_of = typ.name + "[]" * typ.dims if typ is not None else "untyped"
    raise refusal(
        node, f"{what or _name(node)}() of a {name_of} value (DuckDB prints it otherwise than PostgreSQL)"
    )


def text(value: exp.Expr) -> exp.Expr:
    """``value``'s text for pgjsonmake: an unconstrained numeric's (or a quotient's) own text, with its display
    scale; DuckDB's text of anything else."""
    return cast((text_of(value) or value).copy(), "VARCHAR")


def _literal(value: exp.Expr) -> bool:
    inner = value.this if isinstance(value, exp.Neg | exp.Cast) else value
    return (
        isinstance(inner, exp.Literal)
        and not inner.is_string
        or isinstance(value, exp.Cast)
        and (isinstance(value.this, exp.Literal))
    )


def _name(node: exp.Expr) -> str:
    return node.name.lower() if isinstance(node, exp.Anonymous) else "json_agg"


def _build(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Anonymous) or node.name.lower() not in _BUILD:
        return None
    shape, args = _BUILD[node.name.lower()], list(node.expressions)
    if shape.endswith("_object") and len(args) % 2:
        raise refusal(node, f"{_name(node)}() with an odd number of arguments")
    if shape.endswith("_value") and len(args) != 1:
        return None
    kinds = "".join(kind(a, types, node) for a in args)
    if shape.endswith("_object") and any(k in "jJfr" for k in kinds[0::2]):
        raise refusal(node, f"{_name(node)}() with a json or float key")
    values: exp.Expr = exp.Array(expressions=[text(a) for a in args])
    if not args:
        values = cast(values, "VARCHAR[]")
    return cast(
        call("pg_json_build", exp.Literal.string(kinds or "s"), values, exp.Literal.string(shape)), "JSON"
    )


def _aggregate(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """json(b)_agg(x [ORDER BY ...]) [FILTER (WHERE ...)]: pgjson.build of DuckDB's list of the values' texts."""
    agg = node.this if isinstance(node, exp.Filter) else node
    name = (
        "json_agg"
        if isinstance(agg, exp.JSONArrayAgg)
        else _name(agg)
        if isinstance(agg, exp.Anonymous)
        else ""
    )
    if name not in _AGGREGATES or isinstance(node.parent, exp.Filter):
        return None  # a FILTER is rewritten with its aggregate, at the FILTER
    if (
        isinstance(node.parent, exp.Window)
        or isinstance(node, exp.Filter)
        and isinstance(node.parent, exp.Window)
    ):
        raise refusal(agg, f"{name}() as a window function")
    inner = (
        agg.this
        if isinstance(agg, exp.JSONArrayAgg)
        else (agg.expressions[0] if len(agg.expressions) == 1 else None)
    )
    if inner is None:
        return None
    order = inner if isinstance(inner, exp.Order) else None
    value = order.this if order is not None else inner
    letter = kind(value, types, agg)
    texts = text(value)
    listed: exp.Expr = call(
        "list", exp.Order(this=texts, expressions=[o.copy() for o in order.expressions]) if order else texts
    )
    if isinstance(node, exp.Filter):
        listed = exp.Filter(this=listed, expression=node.expression.copy())
    return cast(
        call("pg_json_build", exp.Literal.string(letter), listed, exp.Literal.string(_AGGREGATES[name])),
        "JSON",
    )


def _each(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """json(b)_each(_text)(x) AS e(k, v) in FROM: a lateral subquery over pgjson.each's (key, value) pairs."""
    if not isinstance(node, exp.Table) or not isinstance(node.this, exp.Anonymous):
        return None
    function = node.this
    mode = _EACH.get(function.name.lower())
    if mode is None:
        return None
    if len(function.expressions) != 1:
        raise refusal(function, f"{function.name}() with {len(function.expressions)} arguments")
    alias = node.args.get("alias")
    names = [c.name for c in alias.columns] if alias is not None and alias.columns else []
    key, value = (names + ["key", "value"][len(names) :])[:2]
    pairs = call(
        "unnest",
        call("pg_json_each", cast(function.expressions[0].copy(), "VARCHAR"), exp.Literal.string(mode)),
    )
    inner = exp.select(exp.alias_(pairs, "__pair")).subquery("__pairs")
    value_sql: exp.Expr = exp.Dot(this=exp.column("__pair", "__pairs"), expression=exp.to_identifier("value"))
    if not mode.endswith("_text"):
        value_sql = cast(value_sql, "JSON")
    select = exp.select(
        exp.alias_(exp.Dot(this=exp.column("__pair", "__pairs"), expression=exp.to_identifier("key")), key),
        exp.alias_(value_sql, value),
    ).from_(inner)
    return exp.Lateral(
        this=select.subquery(),
        alias=exp.TableAlias(this=exp.to_identifier(alias.name if alias else function.name.lower())),
    )


_ELEMENTS = {"int2": "n", "int4": "n", "int8": "n", "text": "s", "varchar": "s", "bool": "b", "float8": "f"}


def _printed(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``jsonb_pretty``, ``jsonb_object`` (one array of keys and values, or two) and ``array_to_json`` of a
    one-dimensional array of integers, text, booleans or float8s (others, and the ``pretty`` form, refused)."""
    if not isinstance(node, exp.Anonymous):
        return None
    name, args = node.name.lower(), list(node.expressions)
    if name == "jsonb_pretty" and len(args) == 1:
        return call("pg_jsonb_pretty", cast(args[0].copy(), "VARCHAR"))
    if name == "jsonb_object" and len(args) in (1, 2):
        arrays = [_text_array(a, node) for a in args]
        values = arrays[1] if len(args) == 2 else cast(exp.Null(), "VARCHAR[]")
        shape = exp.Literal.string("jsonb" if len(args) == 2 else "jsonb alternating")
        return cast(call("pg_json_object_from", arrays[0], values, shape), "JSON")
    if name != "array_to_json":
        return None
    typ = types.of(args[0]) if len(args) == 1 else None
    letter = _ELEMENTS.get(typ.name) if typ is not None and typ.dims == 1 else None
    if letter is None:
        what = typ.typname if typ is not None else "a value of unknown type"
        raise refusal(
            node,
            f"array_to_json() of {what} with {len(args)} argument(s) (DuckDB writes its elements otherwise)",
        )
    each = exp.Lambda(this=cast(exp.column("__e"), "VARCHAR"), expressions=[exp.to_identifier("__e")])
    items = call("list_transform", args[0].copy(), each)
    return cast(call("pg_array_to_json", exp.Literal.string(letter), items), "JSON")


def _text_array(value: exp.Expr, node: exp.Expr) -> exp.Expr:
    """A text[] argument as DuckDB's list (a literal in PostgreSQL's array text read as PostgreSQL does)."""
    if isinstance(value, exp.Literal) and value.is_string:
        parts = [exp.Null() if p is None else exp.Literal.string(p) for p in array_literal(value.name, node)]
        return cast(exp.Array(expressions=parts), "VARCHAR[]")
    return cast(value.copy(), "VARCHAR[]")


RULES: list[Rule] = [_build, _aggregate, _each, _printed]

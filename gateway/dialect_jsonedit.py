"""jsonb values edited on the DuckDB route as PostgreSQL edits them (rules of :mod:`lakegate.gateway.dialect`).

* ``jsonb || jsonb`` (a string literal or NULL on either side is read as jsonb, as PostgreSQL resolves it):
  objects merge, arrays join, an object or a scalar is an element of an array;
* ``jsonb - text`` (a key, or string elements of an array), ``jsonb - int`` (an index, negative from the end),
  ``jsonb - text[]`` (keys), ``jsonb #- text[]`` (a path);
* ``jsonb_set`` (with ``create_if_missing``), ``jsonb_insert`` (before or ``insert_after``),
  ``json(b)_strip_nulls`` (with ``strip_in_arrays``), ``json(b)_object_agg`` (with ORDER BY and FILTER; its
  values of the kinds :func:`lakegate.gateway.dialect_jsonbuild.kind` takes; without ORDER BY, json's members
  follow the order the plan reads the rows, which PostgreSQL leaves unspecified: the same members in DuckDB's
  order, see :mod:`lakegate.gateway.dialect_aggregates`; the value jsonb keeps of a repeated key is the one read
  last: an error at run time when a key does repeat with different values).

Each calls :mod:`lakegate.connectors.duckdb.pgjsonedit` over the values' texts, which writes PostgreSQL's text
and raises PostgreSQL's errors. Refused: ``||`` of jsonb with a value of another type (PostgreSQL concatenates
their texts), json (not jsonb) operands, these aggregates as window functions. Written by hand: DuckDB's json
functions print numbers through a double and have none of these operations.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.dialect_jsonbuild import kind, text
from lakegate.gateway.dialect_jsontext import path_list
from lakegate.gateway.pgtyping import Typer

_TEXTS = ("text", "varchar", "bpchar", "name", "unknown")
_INTEGERS = ("int2", "int4", "int8")


def _text(value: exp.Expr) -> exp.Expr:
    return cast(value.copy(), "VARCHAR")


def _json(value: exp.Expr) -> exp.Expr:
    return cast(value, "JSON")


def _is(value: exp.Expr, types: Typer, *names: str) -> bool:
    typ = types.of(value)
    return typ is not None and typ.is_(*names)


def _literal_or_null(value: exp.Expr) -> bool:
    return isinstance(value, exp.Null) or isinstance(value, exp.Literal) and value.is_string


def _concat(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.DPipe):
        return None
    sides = (node.this, node.expression)
    if not any(_is(s, types, "json", "jsonb") for s in sides):
        return None
    if not all(_is(s, types, "jsonb") or _literal_or_null(s) for s in sides):
        what = [types.of(s) for s in sides]
        names = " and ".join(t.typname if t is not None else "an untyped value" for t in what)
        raise refusal(node, f"|| of {names} (only jsonb || jsonb is computed on the lake route)")
    return _json(call("pg_jsonb_concat", *(_text(s) for s in sides)))


def _delete(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``jsonb - text``, ``jsonb - int``, ``jsonb - text[]`` and ``jsonb #- text[]``."""
    if isinstance(node, exp.JSONBDeleteAtPath):
        if not _is(node.this, types, "jsonb"):
            raise refusal(node, "#- of other than a jsonb value")
        path = path_list(node.expression, node)
        return _json(call("pg_jsonb_edit_path", _text(node.this), path, exp.Null(), _how("delete")))
    if not isinstance(node, exp.Sub) or not _is(node.this, types, "jsonb"):
        return None
    right = node.expression
    typ = types.of(right)
    if isinstance(right, exp.Null) or typ is not None and typ.is_(*_TEXTS):
        what, how = _text(right), "key"
    elif typ is not None and typ.is_(*_INTEGERS):
        what, how = _text(right), "index"
    elif typ is not None and typ.dims == 1 and typ.name in _TEXTS:
        what, how = path_list(right, node), "keys"
    else:
        raise refusal(node, f"jsonb - {typ.typname if typ is not None else 'an untyped value'}")
    return _json(call("pg_jsonb_delete", _text(node.this), what, _how(how)))


def _how(text: str) -> exp.Expr:
    return exp.Literal.string(text)


def _choice(flag: exp.Expr | None, true: str, false: str) -> exp.Expr:
    """``true`` or ``false`` by the boolean ``flag`` (NULL when it is NULL: these functions are strict)."""
    if flag is None:
        return _how(false)
    return exp.Case(
        ifs=[
            exp.If(this=flag.copy(), true=_how(true)),
            exp.If(this=exp.Not(this=exp.Paren(this=flag.copy())), true=_how(false)),
        ]
    )


def _functions(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``jsonb_set``, ``jsonb_insert``, ``json(b)_strip_nulls``."""
    if isinstance(node, exp.JSONStripNulls):  # sqlglot's name for json_strip_nulls
        if node.args.get("include_arrays") or node.args.get("remove_empty"):
            return None
        flag = node.expression
        name, args = "json_strip_nulls", [node.this, *([flag] if flag is not None else [])]
    elif isinstance(node, exp.Anonymous):
        name, args = node.name.lower(), list(node.expressions)
    else:
        return None
    if name in ("jsonb_set", "jsonb_insert"):
        if len(args) not in (3, 4):
            raise refusal(node, f"{name}() with {len(args)} arguments")
        target, path, new, *flag = args
        how = (
            _choice(flag[0] if flag else exp.Boolean(this=True), "create", "set")
            if name == "jsonb_set"
            else _choice(flag[0] if flag else None, "after", "before")
        )
        steps = path_list(path, node)
        return _json(call("pg_jsonb_edit_path", _text(target), steps, _text(new), how))
    if name in ("jsonb_strip_nulls", "json_strip_nulls"):
        if len(args) not in (1, 2):
            raise refusal(node, f"{name}() with {len(args)} arguments")
        in_arrays = args[1].copy() if len(args) == 2 else exp.Boolean(this=False)
        mode = _how(name.split("_")[0])
        return _json(call("pg_json_strip_nulls", _text(args[0]), in_arrays, mode))
    return None


def _object_agg(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """json(b)_object_agg(k, v [ORDER BY ...]) [FILTER (WHERE ...)]: pgjsonedit.object_agg of DuckDB's list of
    the (key, value) texts."""
    agg = node.this if isinstance(node, exp.Filter) else node
    if not isinstance(agg, exp.JSONObjectAgg | exp.JSONBObjectAgg) or isinstance(node.parent, exp.Filter):
        return None  # a FILTER is rewritten with its aggregate, at the FILTER
    name = "jsonb_object_agg" if isinstance(agg, exp.JSONBObjectAgg) else "json_object_agg"
    if isinstance(node.parent, exp.Window):
        raise refusal(agg, f"{name}() as a window function")
    if isinstance(agg, exp.JSONBObjectAgg):
        key, value = agg.this, agg.expression
    elif len(agg.expressions) == 2:
        key, value = agg.expressions
    else:
        raise refusal(agg, f"{name}() with {len(agg.expressions)} arguments")
    order = value if isinstance(value, exp.Order) else None
    value = order.this if order is not None else value
    if kind(key, types, agg, name) in "jJfr":
        raise refusal(agg, f"{name}() with a json or float key")
    letter = kind(value, types, agg, name)
    member = exp.Struct(
        expressions=[
            exp.PropertyEQ(this=exp.to_identifier("k"), expression=_text(key)),
            exp.PropertyEQ(this=exp.to_identifier("v"), expression=text(value)),
        ]
    )
    listed: exp.Expr = call(
        "list", exp.Order(this=member, expressions=[o.copy() for o in order.expressions]) if order else member
    )
    if isinstance(node, exp.Filter):
        listed = exp.Filter(this=listed, expression=node.expression.copy())
    shape = name.split("_")[0] + ("" if order is not None or name == "json_object_agg" else " unordered")
    return _json(call("pg_json_object_agg", _how(letter), listed, _how(shape)))


RULES: list[Rule] = [_concat, _delete, _functions, _object_agg]

"""json and jsonb values on the DuckDB route read from their text, exactly (rules of
:mod:`lakegate.gateway.dialect`).

DuckDB's JSON functions re-serialise what they extract: a number goes through a double (``1.50`` comes back
``1.5``, ``12345678901234567890.123`` as ``12345678901234567000.0``) and containers lose PostgreSQL's spacing.
So every operation that *returns* a json value, or the text of one, calls the functions of
:mod:`lakegate.connectors.duckdb.pgjson`, which read the text as PostgreSQL does:

* ``->``, ``->>`` (a key, an index, negative from the end, or an expression of either type), ``#>``, ``#>>`` and
  ``json(b)_extract_path(_text)`` (a literal path or a text[] expression; an element indexes an array as
  PostgreSQL's strtol reads it): jsonb's text (keys in jsonb's order, ``{"a": 1}``, every digit of a number),
  json's text as written, or the ``_text`` form;
* ``json(b)_array_elements(_text)`` and ``json(b)_object_keys`` in a select list: ``unnest`` of the elements or
  keys, with PostgreSQL's errors for a value of the wrong kind;
* a cast to jsonb: PostgreSQL's jsonb text of the value (``'{"b": 1, "a": 1.50}'::jsonb``);
* ``=``, ``<>``, ``IS [NOT] DISTINCT FROM`` of jsonb: numbers compared by value (``1.0`` = ``1``), as jsonb's
  equality;
* what compares jsonb values otherwise (ORDER BY, GROUP BY, DISTINCT, ``<``, ``min``...) is refused: DuckDB would
  order and group their texts, and jsonb's order (objects > arrays > booleans > numbers > strings > null, numbers
  by value) is not the text's; a cast of json(b) to another type than text is refused (DuckDB reads the number
  through a double).

Written by hand: sqlglot maps these operators to DuckDB functions whose results differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.pgtype import TEXT
from lakegate.gateway.pgtyping import Typer

_EXTRACTS = exp.JSONExtract | exp.JSONExtractScalar | exp.JSONBExtract | exp.JSONBExtractScalar
_SET_RETURNING = {
    "jsonb_array_elements": ("elements", "jsonb"),
    "json_array_elements": ("elements", "json"),
    "jsonb_array_elements_text": ("elements", "jsonb_text"),
    "json_array_elements_text": ("elements", "json_text"),
    "jsonb_object_keys": ("keys", "jsonb"),
    "json_object_keys": ("keys", "json"),
}


def _kind(value: exp.Expr, types: Typer, node: exp.Expr) -> str:
    typ = types.of(value)
    if typ is not None and typ.is_("jsonb"):
        return "jsonb"
    if typ is not None and typ.is_("json"):
        return "json"
    raise refusal(
        node, f"{node.sql(dialect='postgres')[:60]} (a json operand whose type the gateway cannot tell)"
    )


def _text(value: exp.Expr) -> exp.Expr:
    return cast(value, "VARCHAR")


def _as_json(value: exp.Expr) -> exp.Expr:
    return cast(value, "JSON")


def _steps_literal(steps: Sequence[object]) -> exp.Expr:
    return exp.Literal.string(json.dumps(steps))


def _operand_step(operand: exp.Expr, types: Typer, node: exp.Expr) -> exp.Expr:
    """The step of ``->``/``->>`` with this right operand (a JSON list of one step, as SQL)."""
    if isinstance(operand, exp.JSONPath):
        parts = operand.expressions[1:]
        if len(parts) == 1 and isinstance(parts[0], exp.JSONPathKey) and isinstance(parts[0].this, str):
            return _steps_literal(["k" + parts[0].this])
        if len(parts) == 1 and isinstance(parts[0], exp.JSONPathSubscript) and isinstance(parts[0].this, int):
            return _steps_literal([parts[0].this])
        raise refusal(node, f"the json operand {operand.sql(dialect='postgres')}")
    if isinstance(operand, exp.Neg) and isinstance(operand.this, exp.Literal) and not operand.this.is_string:
        return _steps_literal([-int(operand.this.name)])
    typ = types.of(operand)
    if typ is not None and typ.is_("int2", "int4", "int8"):
        return call("to_json", exp.Array(expressions=[cast(operand.copy(), "BIGINT")]))
    if typ is not None and typ.is_("text", "varchar", "bpchar", "unknown", "name"):
        text = _text(operand.copy())
        if typ.is_("bpchar"):  # char(n) as text has no trailing spaces ('a'::char(4) is the key 'a')
            text = call("rtrim", text, exp.Literal.string(" "))
        key = exp.DPipe(this=exp.Literal.string("k"), expression=text)
        return call("to_json", exp.Array(expressions=[key]))
    raise refusal(
        node, f"the json operand {operand.sql(dialect='postgres')[:60]} (neither text nor an integer)"
    )


def _path_steps(path: exp.Expr, node: exp.Expr) -> exp.Expr:
    """The steps of ``#>``/``#>>`` for a text[] path (each element a key or an array index)."""
    if isinstance(path, exp.Array) and all(
        isinstance(e, exp.Literal) and e.is_string for e in path.expressions
    ):
        return _steps_literal(["p" + e.name for e in path.expressions])
    if isinstance(path, exp.Literal) and path.is_string:
        parts = array_literal(path.name, node)
        return _steps_literal([None if p is None else "p" + p for p in parts])
    each = exp.Lambda(
        this=exp.DPipe(this=exp.Literal.string("p"), expression=exp.column("e")),
        expressions=[exp.to_identifier("e")],
    )
    return call("to_json", call("list_transform", cast(path.copy(), "VARCHAR[]"), each))


def path_list(path: exp.Expr, node: exp.Expr) -> exp.Expr:
    """A text[] path as a JSON list of its elements (null for NULL), as SQL."""
    if isinstance(path, exp.Array) and all(
        isinstance(e, exp.Literal) and e.is_string for e in path.expressions
    ):
        return _steps_literal([e.name for e in path.expressions])
    if isinstance(path, exp.Literal) and path.is_string:
        return _steps_literal(array_literal(path.name, node))
    return call("to_json", cast(path.copy(), "VARCHAR[]"))


def array_literal(text: str, what: exp.Expr) -> list[str | None]:
    """The elements of a one-dimensional text[] literal such as ``{a,"b c",NULL}``."""
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise refusal(what, f"the json path {text!r}")
    inner = inner[1:-1]
    parts: list[str | None] = []
    for match in re.finditer(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^,{}"\\]*?))\s*(?:,|$)', inner):
        quoted, bare = match.group(1), match.group(2)
        if match.start() == len(inner) and parts:
            break
        if quoted is not None:
            parts.append(re.sub(r"\\(.)", r"\1", quoted))
        elif bare:
            parts.append(None if bare.upper() == "NULL" else bare)
        elif inner.strip():
            raise refusal(what, f"the json path {text!r}")
    return parts


def _get(doc: exp.Expr, steps: exp.Expr, mode: str) -> exp.Expr:
    got = call("pg_json_get", _text(doc), steps, exp.Literal.string(mode))
    return got if mode.endswith("_text") else _as_json(got)


def _extract(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """->, ->>, #>, #>> and json(b)_extract_path(_text)."""
    if isinstance(node, _EXTRACTS):
        kind = _kind(node.this, types, node)
        text = isinstance(node, exp.JSONExtractScalar | exp.JSONBExtractScalar)
        if isinstance(node, exp.JSONBExtract | exp.JSONBExtractScalar):
            steps = _path_steps(node.expression, node)
        else:
            steps = _operand_step(node.expression, types, node)
        return _get(node.this, steps, kind + "_text" if text else kind)
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    if name in (
        "jsonb_extract_path",
        "jsonb_extract_path_text",
        "json_extract_path",
        "json_extract_path_text",
    ):
        value, *parts = node.expressions
        if not parts:
            return None
        kind = _kind(value, types, node)
        steps = _path_steps(exp.Array(expressions=[p.copy() for p in parts]), node)
        return _get(value, steps, kind + "_text" if name.endswith("_text") else kind)
    return None


def _set_returning(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Anonymous) or node.name.lower() not in _SET_RETURNING:
        return None
    name = node.name.lower()
    item = node.parent if isinstance(node.parent, exp.Alias) else node
    if len(node.expressions) != 1 or not isinstance(item.parent, exp.Select) or item.arg_key != "expressions":
        raise refusal(node, f"{name}() outside a select list")
    what, mode = _SET_RETURNING[name]
    value = node.expressions[0]
    listed: exp.Expr = call(f"pg_json_{what}", _text(value), exp.Literal.string(mode))
    if what == "elements" and not mode.endswith("_text"):
        listed = cast(listed, "JSON[]")
    return call("unnest", listed)


def _casts(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A cast to jsonb: PostgreSQL's jsonb text. A cast of jsonb to numeric: the number's digits (PostgreSQL's
    error for another kind of value), for the numeric rules to read as text. Other casts of json(b) than to
    text or json(b): refused."""
    if not isinstance(node, exp.Cast):
        return None
    to = node.to
    source = types.of(node.this)
    if to.is_type(exp.DType.JSONB):
        if source is not None and source.is_("jsonb"):
            return node.this
        if isinstance(node.parent, exp.ArrayContainsAll | exp.ArrayContainedBy):
            return None  # a containment's literal: read by dialect_json's rule
        return _as_json(call("pg_jsonb_in", _text(node.this)))
    if (
        source is None
        or not source.is_("json", "jsonb")
        or to.is_type(*exp.DataType.TEXT_TYPES, exp.DType.JSON)
    ):
        return None
    if source.is_("jsonb") and to.is_type(exp.DType.DECIMAL) and not to.expressions:
        number = call("pg_jsonb_number", _text(node.this))
        types.note(number, TEXT)
        node.set("this", number)
        return None
    raise refusal(
        node,
        f"a cast of {source.name} to {to.sql(dialect='postgres')} (DuckDB reads numbers through a double)",
    )


def _is_jsonb(value: exp.Expr, types: Typer) -> bool:
    typ = types.of(value.this if isinstance(value, exp.Alias) else value)
    return typ is not None and typ.is_("jsonb")


def _equality(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """=, <> and IS [NOT] DISTINCT FROM of jsonb: as jsonb's equality (numbers by value)."""
    if isinstance(node, exp.EQ | exp.NEQ | exp.NullSafeEQ | exp.NullSafeNEQ):
        if _is_jsonb(node.this, types) or _is_jsonb(node.expression, types):
            key = [call("pg_jsonb_key", _text(side)) for side in (node.this, node.expression)]
            return type(node)(this=key[0], expression=key[1])
        return None
    ordered = isinstance(node, exp.GT | exp.GTE | exp.LT | exp.LTE | exp.In | exp.Min | exp.Max)
    if ordered and (
        _is_jsonb(node.this, types) or _is_jsonb(node.args.get("expression") or node.this, types)
    ):
        raise refusal(node, "<, >, IN, min() or max() of jsonb values (jsonb's order is not its text's)")
    return None


def _ordering(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """ORDER BY, GROUP BY, DISTINCT, PARTITION BY and set operations over jsonb values: refused."""
    checked: list[exp.Expr] = []
    if isinstance(node, exp.Ordered):
        checked, what = [node.this], "ORDER BY a jsonb value (jsonb's order is not its text's order)"
    elif isinstance(node, exp.Distinct):
        checked, what = list(node.expressions), "DISTINCT of jsonb values (jsonb calls 1.0 and 1 equal)"
    elif isinstance(node, exp.Group):
        checked, what = list(node.expressions), "GROUP BY a jsonb value (jsonb calls 1.0 and 1 equal)"
    elif isinstance(node, exp.Window):
        checked, what = (
            list(node.args.get("partition_by") or []),
            "PARTITION BY a jsonb value (jsonb calls 1.0 and 1 equal)",
        )
    for value in checked:
        if value is not None and _is_jsonb(_projection(value, node), types):
            raise refusal(value, what)
    if isinstance(node, exp.Select) and node.args.get("distinct") is not None:
        for value in node.expressions:
            if _is_jsonb(value, types):
                raise refusal(value, "SELECT DISTINCT of jsonb values (jsonb calls 1.0 and 1 equal)")
    if isinstance(node, exp.Union | exp.Intersect | exp.Except) and node.args.get("distinct", True):
        for value in node.selects:
            if _is_jsonb(value, types):
                raise refusal(
                    node, "UNION, INTERSECT or EXCEPT of jsonb values (jsonb calls 1.0 and 1 equal)"
                )
    return None


def _projection(value: exp.Expr, node: exp.Expr) -> exp.Expr:
    """An ORDER BY / GROUP BY position or output name as the select-list item it stands for (of a set
    operation: its first SELECT's)."""
    select = node.find_ancestor(exp.Select, exp.SetOperation)
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return value
    items = select.expressions
    if isinstance(value, exp.Literal) and not value.is_string and value.name.isdigit():
        position = int(value.name)
        return items[position - 1] if 0 < position <= len(items) else value
    if isinstance(value, exp.Column) and not value.table:
        for item in items:
            if isinstance(item, exp.Alias) and item.alias == value.name:
                return item
    return value


#: before the numeric rules, which would read a jsonb number through DuckDB's double
FIRST: list[Rule] = [_casts]
RULES: list[Rule] = [_ordering, _extract, _set_returning, _equality]

"""jsonb tests on the DuckDB route as PostgreSQL computes them (rules of :mod:`lakegate.gateway.dialect`);
what returns a json value or its text is :mod:`lakegate.gateway.dialect_jsontext`'s.

* ``?``, ``?|``, ``?&``: a key of an object, a string element of an array, or the string itself (``?|``/``?&``
  with an ``ARRAY[...]`` of literals; NULL elements are skipped, as PostgreSQL does);
* ``@>`` and ``<@`` of jsonb values (or string literals): :func:`lakegate.connectors.duckdb.pgjson.contains`
  over their texts (objects by key, arrays by any element, an array containing a scalar, numbers by value).

Written by hand: sqlglot translates these operators to DuckDB functions whose semantics differ.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from lakegate.gateway import dialect_jsontext
from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.pgtyping import Typer

_EXISTS = (
    "CASE WHEN __j IS NULL OR __k IS NULL THEN NULL "
    "WHEN json_type(__j) = 'OBJECT' THEN list_contains(json_keys(__j), __k) "
    "WHEN json_type(__j) = 'ARRAY' THEN list_contains(list_transform(list_filter(json_extract(__j, '$[*]'), "
    "e -> json_type(e) = 'VARCHAR'), e -> json_extract_string(e, '$')), __k) "
    "WHEN json_type(__j) = 'VARCHAR' THEN json_extract_string(__j, '$') = __k ELSE false END"
)


def _template(sql: str, **values: exp.Expr) -> exp.Expr:
    """``sql`` (DuckDB) with each ``__name`` column replaced by a copy of ``values[name]``."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    for node in list(tree.find_all(exp.JSONExtract, exp.JSONExtractScalar)):  # as written, not as -> / ->>
        name = "json_extract" if isinstance(node, exp.JSONExtract) else "json_extract_string"
        path = exp.Literal.string(node.expression.sql(dialect="duckdb").strip("'"))
        node.replace(call(name, node.this, path))
    for column in list(tree.find_all(exp.Column)):
        name = column.name
        if name.startswith("__") and name[2:] in values:
            column.replace(values[name[2:]].copy())
    return tree


def _exists(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.JSONBContainsTopKey):
        return _template(_EXISTS, j=node.this, k=node.expression)
    if not isinstance(node, exp.JSONBContainsAnyTopKeys | exp.JSONBContainsAllTopKeys):
        return None
    keys = node.expression
    if not isinstance(keys, exp.Array) or not all(
        isinstance(k, exp.Null) or isinstance(k, exp.Literal) and k.is_string for k in keys.expressions
    ):
        raise refusal(node, "?| and ?& with other than an ARRAY[...] of string literals")
    tests = [_template(_EXISTS, j=node.this, k=k) for k in keys.expressions if not isinstance(k, exp.Null)]
    combine = exp.Or if isinstance(node, exp.JSONBContainsAnyTopKeys) else exp.And
    if not tests:
        return exp.Boolean(this=combine is exp.And)
    out: exp.Expr = exp.Paren(this=tests[0])
    for test in tests[1:]:
        out = combine(this=out, expression=exp.Paren(this=test))
    return exp.Paren(this=out)


RULES: list[Rule] = [_exists, *dialect_jsontext.RULES]


def _contains(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``a @> b`` and ``b <@ a`` of jsonb: pgjson.contains over the texts (jsonb's JsonbDeepContains, numbers
    compared by value)."""
    if isinstance(node, exp.ArrayContainsAll):
        haystack, needle = node.this, node.expression
    elif isinstance(node, exp.ArrayContainedBy):
        haystack, needle = node.expression, node.this
    else:
        return None
    sides = (haystack, needle)
    if not any(_jsonb(side, types) for side in sides):
        return None
    if not all(
        _jsonb(side, types) or _literal(side) is not None or isinstance(side, exp.Null) for side in sides
    ):
        raise refusal(node, "jsonb containment (@>, <@) of a value of another type than jsonb")
    texts = [_text(side) for side in sides]
    return call("pg_jsonb_contains", *texts)


def _text(side: exp.Expr) -> exp.Expr:
    literal = _literal(side)
    return literal if literal is not None else cast(side.copy(), "VARCHAR")


def _jsonb(value: exp.Expr, types: Typer) -> bool:
    typ = types.of(value)
    return typ is not None and typ.is_("jsonb")


def _literal(value: exp.Expr) -> exp.Expr | None:
    """A string literal (or one cast to jsonb), whose text is read as jsonb."""
    inner = value.this if isinstance(value, exp.Cast) and value.to.is_type(exp.DType.JSONB) else value
    return inner.copy() if isinstance(inner, exp.Literal) and inner.is_string else None


RULES.append(_contains)


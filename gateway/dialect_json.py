"""jsonb tests on the DuckDB route as PostgreSQL computes them (rules of :mod:`lakegate.gateway.dialect`);
what returns a json value or its text is :mod:`lakegate.gateway.dialect_jsontext`'s.

* ``?``, ``?|``, ``?&``: a key of an object, a string element of an array, or the string itself (``?|``/``?&``
  with an ``ARRAY[...]`` of literals; NULL elements are skipped, as PostgreSQL does);
* ``j @> 'literal'`` and ``'literal' <@ j``: PostgreSQL's containment spelled out for the literal's structure
  (objects by key, arrays by any element, an array containing a scalar); the literal's numbers must be integers
  of bigint's range, and a non-integer number they are compared with is a run-time error (DuckDB reads it as a
  double).

Written by hand: sqlglot translates these operators to DuckDB functions whose semantics differ.
"""

from __future__ import annotations

import json

import sqlglot
from sqlglot import exp

from lakegate.gateway import dialect_jsontext
from lakegate.gateway.dialect import Rule, call, refusal
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
    """``j @> 'literal'`` (and ``'literal' <@ j``) of jsonb: PostgreSQL's containment, spelled out for the
    literal's structure (objects by key, arrays by any element, an array containing a scalar)."""
    if isinstance(node, exp.ArrayContainsAll):
        haystack, needle = node.this, node.expression
    elif isinstance(node, exp.ArrayContainedBy):
        haystack, needle = node.expression, node.this
    else:
        return None
    typ = types.of(haystack)
    if typ is None or not typ.is_("jsonb"):
        return None
    literal = needle.this if isinstance(needle, exp.Cast) else needle
    if not (isinstance(literal, exp.Literal) and literal.is_string):
        raise refusal(node, "jsonb containment (@>, <@) of other than a literal")
    try:
        value = json.loads(literal.this, parse_float=_no_float, parse_constant=_no_float)
        test = _contained("__h", value, 1, top=True)
    except (ValueError, _Unsupported):
        raise refusal(
            node,
            f"jsonb containment of {literal.this!r} (only strings, integers of bigint's range, booleans, null)",
        ) from None
    return exp.Paren(this=_template(f"CASE WHEN __h IS NULL THEN NULL ELSE {test} END", h=haystack))


class _Unsupported(ValueError):
    pass


def _no_float(text: str) -> object:
    raise _Unsupported(text)


def _contained(x: str, value: object, depth: int, top: bool = False) -> str:
    """SQL that is true when the JSON value ``x`` (SQL) contains ``value``."""
    if isinstance(value, dict):
        tests = [f"json_type({x}) = 'OBJECT'"]
        for key, inner in value.items():
            pointer = "/" + key.replace("~", "~0").replace("/", "~1")
            tests.append(f"list_contains(json_keys({x}), {_quote(key)})")
            tests.append(_contained(f"json_extract({x}, {_quote(pointer)})", inner, depth + 1))
        return "(" + " AND ".join(tests) + ")"
    if isinstance(value, list):
        tests = [f"json_type({x}) = 'ARRAY'"]
        for inner in value:
            found = (
                _contained(f"e{depth}", inner, depth + 1)
                if isinstance(inner, dict | list)
                else _equal(f"e{depth}", inner)
            )
            tests.append(f"len(list_filter(json_extract({x}, '$[*]'), e{depth} -> {found})) > 0")
        return "(" + " AND ".join(tests) + ")"
    if top:  # an array contains a scalar too
        return (
            f"(CASE WHEN json_type({x}) = 'ARRAY' THEN len(list_filter(json_extract({x}, '$[*]'), e{depth} -> "
            f"{_equal(f'e{depth}', value)})) > 0 ELSE {_equal(x, value)} END)"
        )
    return _equal(x, value)


def _equal(x: str, value: object) -> str:
    """SQL: the JSON value ``x`` is the scalar ``value`` (jsonb equality; integers compared exactly)."""
    if value is None:
        return f"(json_type({x}) = 'NULL')"
    if isinstance(value, bool):
        return f"(json_type({x}) = 'BOOLEAN' AND json_extract_string({x}, '$') = '{str(value).lower()}')"
    if isinstance(value, str):
        return f"(json_type({x}) = 'VARCHAR' AND json_extract_string({x}, '$') = {_quote(value)})"
    assert isinstance(value, int)
    if not -(2**63) <= value < 2**63:
        raise _Unsupported(str(value))
    return (
        f"(CASE WHEN json_type({x}) IN ('UBIGINT', 'BIGINT', 'HUGEINT') "
        f"THEN CAST(json_extract_string({x}, '$') AS HUGEINT) = {value} "
        f"WHEN json_type({x}) = 'DOUBLE' THEN error('jsonb containment compares the "
        f"number ' || json_extract_string({x}, '$') || ' with {value}: not exactly on the lake route (DuckDB "
        "reads it as a double); run the query on a PostgreSQL source') ELSE false END)"
    )


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


RULES.append(_contains)

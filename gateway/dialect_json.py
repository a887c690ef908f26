"""jsonb on the DuckDB route as PostgreSQL computes it (rules of :mod:`lakegate.gateway.dialect`).

DuckDB holds json and jsonb as its JSON text and re-serialises what its JSON functions return: a number goes
through a double (``1.50`` comes back ``1.5``, long decimals lose digits) and containers lose PostgreSQL's
spacing (``{"a":1}`` for ``{"a": 1}``). Where the result is *text* (``->>``, ``#>>``,
``jsonb_array_elements_text``) PostgreSQL's text cannot be rebuilt from that, so an object, an array or a
non-integer number there is a run-time error that says so; strings, integers, booleans and null are exact.

* ``?``, ``?|``, ``?&``: a key of an object, a string element of an array, or the string itself (``?|``/``?&``
  with an ``ARRAY[...]`` of literals; NULL elements are skipped, as PostgreSQL does);
* ``#>``, ``#>>`` (and ``jsonb_extract_path``/``_text``) with a literal path (``'{a,0}'`` or ``ARRAY[...]``):
  JSON pointers (an element that is a non-negative integer indexes an array, or names a key of an object, as in
  PostgreSQL); negative indexes and
  other paths are refused;
* ``j @> 'literal'`` and ``'literal' <@ j``: PostgreSQL's containment spelled out for the literal's structure
  (objects by key, arrays by any element, an array containing a scalar); the literal's numbers must be integers,
  and a non-integer number they are compared with is a run-time error (DuckDB holds it as a double);
* ``jsonb_array_elements``/``_text`` and ``jsonb_object_keys`` (and the json forms) in a select list:
  ``unnest`` of the elements or keys, with PostgreSQL's errors for a value of the wrong kind; keys come in the
  order of the value's text, which is jsonb's order for a stored column (so another argument is refused).

Written by hand: sqlglot translates these operators to DuckDB functions whose semantics differ.
"""

from __future__ import annotations

import json
import re

import sqlglot
from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, refusal
from lakegate.gateway.pgtyping import Typer

_TEXT_GUARD = (
    "CASE WHEN json_type(__x) IN ('OBJECT', 'ARRAY', 'DOUBLE') THEN error('the text of a jsonb object, array or "
    "non-integer number (' || left(CAST(__x AS VARCHAR), 60) || ') cannot be computed exactly as PostgreSQL "
    "prints it on the lake route (DuckDB); run the query on a PostgreSQL source, or take the value as jsonb "
    "(-> or #>)') ELSE json_extract_string(__x, '$') END"
)
_EXISTS = (
    "CASE WHEN __j IS NULL OR __k IS NULL THEN NULL "
    "WHEN json_type(__j) = 'OBJECT' THEN list_contains(json_keys(__j), __k) "
    "WHEN json_type(__j) = 'ARRAY' THEN list_contains(list_transform(list_filter(json_extract(__j, '$[*]'), "
    "e -> json_type(e) = 'VARCHAR'), e -> json_extract_string(e, '$')), __k) "
    "WHEN json_type(__j) = 'VARCHAR' THEN json_extract_string(__j, '$') = __k ELSE false END"
)
_ELEMENTS = (
    "CASE WHEN __j IS NULL OR json_type(__j) = 'ARRAY' THEN json_extract(__j, '$[*]') ELSE error("
    "'cannot extract elements from ' || CASE json_type(__j) WHEN 'OBJECT' THEN 'an object' ELSE 'a scalar' END) END"
)
_KEYS = (
    "CASE WHEN __j IS NULL OR json_type(__j) = 'OBJECT' THEN json_keys(__j) ELSE error("
    "'cannot call {name} on ' || CASE json_type(__j) WHEN 'ARRAY' THEN 'an array' ELSE 'a scalar' END) END"
)
_INDEX = re.compile(r"0|[1-9][0-9]*")
_NUMBERISH = re.compile(r"\s*[+-]?\d+\s*")


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


def as_text(value: exp.Expr) -> exp.Expr:
    """The text of a JSON value as PostgreSQL prints a jsonb scalar (strings unquoted, null as NULL)."""
    return _template(_TEXT_GUARD, x=value)


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


def _path(node: exp.Expr, what: exp.Expr) -> str:
    """A PostgreSQL text[] path (a literal) as a JSON pointer."""
    if isinstance(node, exp.Array) and all(
        isinstance(e, exp.Literal) and e.is_string for e in node.expressions
    ):
        parts = [e.name for e in node.expressions]
    elif isinstance(node, exp.Literal) and node.is_string:
        parts = _array_literal(node.name, what)
    else:
        raise refusal(what, "a jsonb path that is not a literal")
    for part in parts:
        if _NUMBERISH.fullmatch(part) and not _INDEX.fullmatch(part):
            raise refusal(what, f"the jsonb path element {part!r} (a negative or non-canonical index)")
    return "".join("/" + part.replace("~", "~0").replace("/", "~1") for part in parts)


def _array_literal(text: str, what: exp.Expr) -> list[str]:
    """The elements of a one-dimensional text[] literal such as ``{a,"b c"}`` (no NULLs)."""
    inner = text.strip()
    if not (inner.startswith("{") and inner.endswith("}")):
        raise refusal(what, f"the jsonb path {text!r}")
    inner = inner[1:-1]
    parts: list[str] = []
    for match in re.finditer(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^,{}"\\]*?))\s*(?:,|$)', inner):
        quoted, bare = match.group(1), match.group(2)
        if match.start() == len(inner) and parts:
            break
        if quoted is not None:
            parts.append(re.sub(r"\\(.)", r"\1", quoted))
        elif bare:
            if bare.upper() == "NULL":
                raise refusal(what, f"the jsonb path {text!r} (a NULL element)")
            parts.append(bare)
        elif inner.strip():
            raise refusal(what, f"the jsonb path {text!r}")
    return parts


def _extract(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """#>, #>>, jsonb_extract_path(_text) and ->> (whose text is checked)."""
    if isinstance(node, exp.JSONBExtract | exp.JSONBExtractScalar):
        pointer = _path(node.expression, node)
        value = call("json_extract", node.this, exp.Literal.string(pointer)) if pointer else node.this
        return as_text(value) if isinstance(node, exp.JSONBExtractScalar) else value
    if isinstance(node, exp.JSONExtractScalar):
        return as_text(exp.JSONExtract(this=node.this, expression=node.expression))
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    if name in ("jsonb_extract_path", "jsonb_extract_path_text") and len(node.expressions) > 1:
        value, *parts = node.expressions  # jsonb_extract_path(j, VARIADIC path): j #> path
        pointer = _path(exp.Array(expressions=[p.copy() for p in parts]), node)
        value = call("json_extract", value, exp.Literal.string(pointer)) if pointer else value
        return as_text(value) if name.endswith("_text") else value
    return None


def _set_returning(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Anonymous):
        return None
    name = node.name.lower()
    if name not in (
        "jsonb_array_elements",
        "json_array_elements",
        "jsonb_array_elements_text",
        "json_array_elements_text",
        "jsonb_object_keys",
        "json_object_keys",
    ):
        return None
    item = node.parent if isinstance(node.parent, exp.Alias) else node
    if len(node.expressions) != 1 or not isinstance(item.parent, exp.Select) or item.arg_key != "expressions":
        raise refusal(node, f"{name}() outside a select list")
    value = node.expressions[0]
    if name.endswith("object_keys"):
        if not _stored(value):
            raise refusal(
                node, f"{name}() of a computed value (the lake keeps jsonb's key order only as stored)"
            )
        return call("unnest", _template(_KEYS.format(name=name), j=value))
    elements = _template(_ELEMENTS, j=value)
    if name.endswith("_text"):
        each = exp.Lambda(this=as_text(exp.column("e")), expressions=[exp.to_identifier("e")])
        elements = call("list_transform", elements, each)
    return call("unnest", elements)


def _stored(value: exp.Expr) -> bool:
    """A column, or a part of one (``->``): its text is jsonb's, keys in jsonb's order."""
    while isinstance(value, exp.JSONExtract | exp.Paren):
        value = value.this
    return isinstance(value, exp.Column)


RULES: list[Rule] = [_exists, _extract, _set_returning]


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
    except (ValueError, _Unsupported):
        raise refusal(
            node, f"jsonb containment of {literal.this!r} (only strings, integers, booleans, null)"
        ) from None
    test = _contained("__h", value, 1, top=True)
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

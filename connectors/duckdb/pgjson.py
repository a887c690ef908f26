"""json and jsonb values read from their text exactly as PostgreSQL reads them (functions of the gateway's
DuckDB; :mod:`lakegate.gateway.dialect_json` rewrites statements to call them).

DuckDB's JSON functions parse with yyjson and write what they parse back: a number that is not an integer goes
through a double (``12345678901234567890.123`` comes back ``12345678901234567000.0``, ``1.50`` as ``1.5``) and
containers lose PostgreSQL's spacing; its JSON reader has no setting that keeps every number's text (it keeps
only integers beyond 64 bits and numbers beyond a double's range as raw text). PostgreSQL keeps a json value's
text as written and a jsonb number as a ``numeric`` (every digit, its display scale). So the lake route reads the
text here: a small parser that keeps each number's digits and each value's place in the text, and PostgreSQL's
jsonb output (keys shorter first then bytewise, the last of repeated keys, ``{"a": 1, "b": [1, 2]}``, numbers as
``numeric`` prints them, strings escaped as ``escape_json`` does). Written by hand: Python's json module gives
neither the text of a nested value nor numbers' display scale.

Modes: ``jsonb`` (results are PostgreSQL's jsonb text), ``json`` (results are the text as written), and the
``_text`` forms of ``->>``/``#>>`` (a string unquoted, null as NULL).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import duckdb
import pyarrow as pa


class JsonError(ValueError):
    """A json value or path PostgreSQL would reject, in PostgreSQL's words."""


# a parsed value: (kind, payload, start, end); kinds o (payload: list of (key, value)), a (list of values),
# s (str), n (the number's text), t, f, z (null)
Node = tuple[str, Any, int, int]

_SPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_scan = json.decoder.scanstring  # type: ignore[attr-defined]


def parse(text: str) -> Node:
    """``text`` (one JSON value) as a tree that keeps every number's text and every value's span."""
    node, at = _value(text, _SPACE.match(text, 0).end())  # type: ignore[union-attr]
    at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
    if at != len(text):
        raise JsonError(f"invalid input syntax for type json: {_short(text)}")
    return node


def _value(text: str, at: int) -> tuple[Node, int]:
    char = text[at : at + 1]
    if char == "{":
        return _object(text, at)
    if char == "[":
        return _array(text, at)
    if char == '"':
        value, end = _scan(text, at + 1, True)
        return ("s", value, at, end), end
    for word, kind in (("true", "t"), ("false", "f"), ("null", "z")):
        if text.startswith(word, at):
            return (kind, None, at, at + len(word)), at + len(word)
    found = _NUMBER.match(text, at)
    if not found:
        raise JsonError(f"invalid input syntax for type json: {_short(text)}")
    return ("n", found.group(), at, found.end()), found.end()


def _object(text: str, start: int) -> tuple[Node, int]:
    pairs: list[tuple[str, Node]] = []
    at = _SPACE.match(text, start + 1).end()  # type: ignore[union-attr]
    if text[at : at + 1] == "}":
        return ("o", pairs, start, at + 1), at + 1
    while True:
        if text[at : at + 1] != '"':
            raise JsonError(f"invalid input syntax for type json: {_short(text)}")
        key, at = _scan(text, at + 1, True)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at : at + 1] != ":":
            raise JsonError(f"invalid input syntax for type json: {_short(text)}")
        value, at = _value(text, _SPACE.match(text, at + 1).end())  # type: ignore[union-attr]
        pairs.append((key, value))
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at : at + 1] == "}":
            return ("o", pairs, start, at + 1), at + 1
        if text[at : at + 1] != ",":
            raise JsonError(f"invalid input syntax for type json: {_short(text)}")
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]


def _array(text: str, start: int) -> tuple[Node, int]:
    items: list[Node] = []
    at = _SPACE.match(text, start + 1).end()  # type: ignore[union-attr]
    if text[at : at + 1] == "]":
        return ("a", items, start, at + 1), at + 1
    while True:
        value, at = _value(text, at)
        items.append(value)
        at = _SPACE.match(text, at).end()  # type: ignore[union-attr]
        if text[at : at + 1] == "]":
            return ("a", items, start, at + 1), at + 1
        if text[at : at + 1] != ",":
            raise JsonError(f"invalid input syntax for type json: {_short(text)}")
        at = _SPACE.match(text, at + 1).end()  # type: ignore[union-attr]


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


# ------------------------------------------------------------------------------------------- jsonb output


def numeric_text(raw: str) -> str:
    """A JSON number's text as PostgreSQL's numeric prints it: no exponent, the display scale the digits had
    (``1.5e2`` -> ``150``, ``100E-2`` -> ``1.00``), no negative zero."""
    value = Decimal(raw)
    text = format(value, "f")
    return text[1:] if value.is_zero() and text.startswith("-") else text


def _key(name: str) -> tuple[int, bytes]:
    data = name.encode()
    return len(data), data  # jsonb's key order: shorter keys first, then bytewise


def pairs(node: Node, jsonb: bool) -> list[tuple[str, Node]]:
    """An object's members: jsonb keeps the last of repeated keys, in jsonb's key order; json keeps them all."""
    if not jsonb:
        return list(node[1])
    members = dict(node[1])
    return [(k, members[k]) for k in sorted(members, key=_key)]


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f]')


def quote(text: str) -> str:
    """A string as PostgreSQL's escape_json writes it."""
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04x}"), text) + '"'


def jsonb_text(node: Node) -> str:
    """``node`` as PostgreSQL prints a jsonb value."""
    kind, payload = node[0], node[1]
    if kind == "o":
        members = pairs(node, True)
        return "{" + ", ".join(f"{quote(k)}: {jsonb_text(v)}" for k, v in members) + "}"
    if kind == "a":
        return "[" + ", ".join(jsonb_text(v) for v in payload) + "]"
    if kind == "s":
        return quote(payload)
    if kind == "n":
        return numeric_text(payload)
    return {"t": "true", "f": "false", "z": "null"}[kind]


def output(node: Node, source: str, mode: str) -> str | None:
    """The result of an extraction: jsonb's text, the text as written (json), or the ``_text`` form."""
    if mode.endswith("_text"):
        if node[0] == "z":
            return None
        if node[0] == "s":
            return str(node[1])
        if node[0] == "n" and mode == "jsonb_text":
            return numeric_text(node[1])
    if mode.startswith("jsonb"):
        return jsonb_text(node)
    return source[node[2] : node[3]]


# ------------------------------------------------------------------------------------------- operations

STRTOL = re.compile(r"\s*([+-]?[0-9]+)")


def _index(items: list[Node], index: int) -> Node | None:
    if index < 0:
        index += len(items)
    return items[index] if 0 <= index < len(items) else None


def step(node: Node, how: object, jsonb: bool, root: bool = False) -> Node | None:
    """One step of ``->`` or ``#>``: ``how`` an int (``-> int``), ``"k" + key`` (``-> text``: objects only) or
    ``"p" + element`` (a ``#>`` path element: a key of an object, or an index of an array as strtol reads it)."""
    if isinstance(how, int):
        if node[0] == "a":
            return _index(node[1], how)
        # jsonb holds a scalar datum as a one-element array: ``'1'::jsonb -> 0`` (or ``-> -1``) is the scalar
        return node if jsonb and root and how in (0, -1) and node[0] != "o" else None
    assert isinstance(how, str)
    kind, name = how[:1], how[1:]
    if node[0] == "o":
        found = None
        for key, value in node[1]:
            if key == name:
                found = value  # the last of repeated keys (json keeps them all)
        return found
    if node[0] == "a" and kind == "p":
        number = STRTOL.fullmatch(name)
        return _index(node[1], int(number.group(1))) if number and abs(int(number.group(1))) < 2**31 else None
    return None


def get(doc: str, steps: str, mode: str) -> str | None:
    """``doc -> ...`` / ``#>`` / ``->>`` / ``#>>``: ``steps`` a JSON list of :func:`step` arguments."""
    path = json.loads(steps)
    if any(p is None for p in path):
        return None
    node: Node | None = parse(doc)
    for number, how in enumerate(path):
        assert node is not None
        node = step(node, how, mode.startswith("jsonb"), root=number == 0 and len(path) == 1)
        if node is None:
            return None
    assert node is not None
    return output(node, doc, mode)


def elements(doc: str, mode: str) -> list[str | None]:
    """``json(b)_array_elements(_text)``: each element of an array, PostgreSQL's error for anything else."""
    node = parse(doc)
    if node[0] != "a":
        what = "an object" if node[0] == "o" else "a scalar"
        raise JsonError(f"cannot extract elements from {what}")
    return [output(item, doc, mode) for item in node[1]]


def keys(doc: str, mode: str) -> list[str]:
    """``json(b)_object_keys``: jsonb's keys in jsonb's order, json's as written (repeated keys too)."""
    node = parse(doc)
    if node[0] != "o":
        what = "an array" if node[0] == "a" else "a scalar"
        raise JsonError(f"cannot call {mode}_object_keys on {what}")
    return [k for k, _ in pairs(node, mode == "jsonb")]


_TYPES = {
    "o": "object",
    "a": "array",
    "s": "string",
    "n": "number",
    "t": "boolean",
    "f": "boolean",
    "z": "null",
}


def typeof(doc: str) -> str:
    return _TYPES[parse(doc)[0]]


def each(doc: str, mode: str) -> list[dict[str, str | None]]:
    """``json(b)_each(_text)``: (key, value) of each member, PostgreSQL's error for anything else."""
    node = parse(doc)
    if node[0] != "o":
        if mode.startswith("jsonb"):
            name = "jsonb_each_text" if mode.endswith("_text") else "jsonb_each"
            raise JsonError(f"cannot call {name} on a non-object")
        raise JsonError("cannot deconstruct " + ("an array as an object" if node[0] == "a" else "a scalar"))
    return [{"key": k, "value": output(v, doc, mode)} for k, v in pairs(node, mode.startswith("jsonb"))]


def number(doc: str) -> str:
    """``jsonb::numeric``: a number's digits; PostgreSQL's error for another kind of value."""
    node = parse(doc)
    if node[0] != "n":
        raise JsonError(f"cannot cast jsonb {_TYPES[node[0]]} to type numeric")
    return numeric_text(node[1])


def canonical(doc: str) -> str:
    """A text cast to jsonb: PostgreSQL's jsonb text of it."""
    return jsonb_text(parse(doc))


def equality_key(doc: str) -> str:
    """A text equal for two jsonb values exactly when PostgreSQL's jsonb ``=`` holds: numbers compared by value
    (``1.0`` = ``1``)."""
    return _equality(parse(doc))


def _equality(node: Node) -> str:
    kind = node[0]
    if kind == "o":
        return "{" + ",".join(f"{quote(k)}:{_equality(v)}" for k, v in pairs(node, True)) + "}"
    if kind == "a":
        return "[" + ",".join(_equality(v) for v in node[1]) + "]"
    if kind == "n":
        value = Decimal(node[1])
        return "0" if value.is_zero() else format(value.normalize(), "f")
    return jsonb_text(node)


def contains(haystack: str, needle: str) -> bool:
    """``haystack @> needle`` as jsonb's JsonbDeepContains: objects by key (a value of the same kind, scalars
    equal as jsonb's equality has it, containers contained), arrays by any element (a scalar among the
    scalars, a container in a container of its kind), a top-level array containing a scalar, never a
    top-level scalar containing an array."""
    return _contains(parse(haystack), parse(needle), top=True)


def _contains(a: Node, b: Node, top: bool = False) -> bool:
    if a[0] == "o":
        if b[0] != "o":
            return False
        members = dict(pairs(a, True))
        for key, inner in pairs(b, True):
            found = members.get(key)
            if found is None:
                return False
            if found[0] in "oa" or inner[0] in "oa":
                if found[0] != inner[0] or not _contains(found, inner):
                    return False
            elif _equality(found) != _equality(inner):
                return False
        return True
    if b[0] == "o":
        return False
    if a[0] != "a":  # a top-level scalar: jsonb's one-element raw array, which no array fits in
        return b[0] != "a" and _equality(a) == _equality(b)
    wanted = list(b[1]) if b[0] == "a" else [b] if top else []
    if b[0] != "a" and not top:
        return False
    scalars = {_equality(x) for x in a[1] if x[0] not in "oa"}
    for item in wanted:
        if item[0] not in "oa":
            if _equality(item) not in scalars:
                return False
        elif not any(x[0] == item[0] and _contains(x, item) for x in a[1]):
            return False
    return True


# ------------------------------------------------------------------------------------------- registration


def udf(fn: Callable[..., Any], arity: int, out: pa.DataType) -> Callable[..., pa.Array]:
    """A per-value function -> a vectorised (Arrow) DuckDB function; NULL in the first argument, NULL out."""

    def vectorised(*columns: pa.Array) -> pa.Array:
        rows = zip(*(c.to_pylist() for c in columns), strict=True)
        return pa.array([None if values[0] is None else fn(*values) for values in rows], type=out)

    params = [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(arity)]
    vectorised.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # DuckDB counts them
    return vectorised


_TEXTS = pa.list_(pa.string())
_PAIRS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.string())]))
FUNCTIONS: tuple[tuple[str, Callable[..., Any], list[str], str, pa.DataType], ...] = (
    ("pg_json_get", get, ["VARCHAR", "VARCHAR", "VARCHAR"], "VARCHAR", pa.string()),
    ("pg_json_elements", elements, ["VARCHAR", "VARCHAR"], "VARCHAR[]", _TEXTS),
    ("pg_json_keys", keys, ["VARCHAR", "VARCHAR"], "VARCHAR[]", _TEXTS),
    ("pg_json_typeof", typeof, ["VARCHAR"], "VARCHAR", pa.string()),
    ("pg_json_each", each, ["VARCHAR", "VARCHAR"], "STRUCT(key VARCHAR, value VARCHAR)[]", _PAIRS),
    ("pg_jsonb_number", number, ["VARCHAR"], "VARCHAR", pa.string()),
    ("pg_jsonb_in", canonical, ["VARCHAR"], "VARCHAR", pa.string()),
    ("pg_jsonb_key", equality_key, ["VARCHAR"], "VARCHAR", pa.string()),
    (
        "pg_jsonb_contains",
        lambda a, b: None if b is None else contains(a, b),
        ["VARCHAR", "VARCHAR"],
        "BOOLEAN",
        pa.bool_(),
    ),
)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create the functions in ``con`` (before its configuration is locked)."""
    for name, fn, parameters, returns, arrow in FUNCTIONS:
        made: Any = udf(fn, len(parameters), arrow)
        con.create_function(name, made, parameters, returns, type="arrow", null_handling="special")  # type: ignore[call-overload]

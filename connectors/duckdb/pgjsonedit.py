"""jsonb values edited on the lake route as PostgreSQL edits them: ``||``, ``-`` (a key, an index, keys),
``#-``, ``jsonb_set``, ``jsonb_insert``, ``json(b)_strip_nulls`` and ``json(b)_object_agg`` (functions of the
gateway's DuckDB; :mod:`lakegate.gateway.dialect_jsonedit` rewrites statements to call them).

They follow PostgreSQL's ``jsonfuncs.c``: ``jsonb_concat`` (two objects merge, the right's keys winning; two
arrays join; otherwise an object or a scalar is one element of an array), ``jsonb_delete*`` and the one walk
``setPath`` that ``jsonb_set``, ``jsonb_insert`` and ``#-`` share (a path element is checked where the walk
reaches it: NULL is an error there, an array index is read as ``strtoint`` reads it, a negative one counts from
the end, one beyond the start prepends when creating). Written by hand over
:mod:`lakegate.connectors.duckdb.pgjson`'s reading and writing of PostgreSQL's json text, as that module.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa

from lakegate.connectors.duckdb.pgjson import STRTOL, JsonError, Node, jsonb_text, pairs, parse, quote
from lakegate.connectors.duckdb.pgjsonmake import fragment, json_fragment

_SET, _CREATE, _BEFORE, _AFTER, _DELETE = "set", "create", "before", "after", "delete"


def _elements(node: Node) -> list[Node]:
    """An array's elements; a scalar as jsonb holds it (a one-element raw array)."""
    return list(node[1]) if node[0] == "a" else [node]


def concat(left: str | None, right: str | None) -> str | None:
    """``jsonb || jsonb``."""
    if left is None or right is None:
        return None
    a, b = parse(left), parse(right)
    if a[0] == "o" and b[0] == "o":
        return jsonb_text(("o", pairs(a, True) + pairs(b, True), 0, 0))
    return jsonb_text(("a", _elements(a) + _elements(b), 0, 0))


def delete(doc: str | None, what: str | None, how: str) -> str | None:
    """``jsonb - text`` (``how`` "key"), ``jsonb - int`` ("index"), ``jsonb - text[]`` ("keys": ``what`` a JSON
    list of the keys, null for NULL elements)."""
    if doc is None or what is None:
        return None
    node = parse(doc)
    if node[0] not in "oa":
        raise JsonError("cannot delete from scalar")
    if how == "index":
        if node[0] == "o":
            raise JsonError("cannot delete from object using integer index")
        items, index = list(node[1]), int(what)
        index = index + len(items) if index < 0 else index
        if 0 <= index < len(items):
            del items[index]
        return jsonb_text(("a", items, 0, 0))
    keys = {what} if how == "key" else {k for k in json.loads(what) if k is not None}
    if node[0] == "o":
        return jsonb_text(("o", [(k, v) for k, v in pairs(node, True) if k not in keys], 0, 0))
    return jsonb_text(("a", [v for v in node[1] if not (v[0] == "s" and v[1] in keys)], 0, 0))


def edit_path(doc: str | None, steps: str | None, new: str | None, how: str) -> str | None:
    """``jsonb_set`` (``how`` "set" or "create"), ``jsonb_insert`` ("before", "after") and ``#-`` ("delete"):
    ``steps`` the path as a JSON list of strings (null for NULL elements)."""
    if doc is None or steps is None or how is None or (new is None and how != _DELETE):
        return None
    path: list[str | None] = json.loads(steps)
    node = parse(doc)
    if node[0] not in "oa":
        raise JsonError("cannot delete path in scalar" if how == _DELETE else "cannot set path in scalar")
    if not path or how in (_DELETE, _SET) and not node[1]:  # PostgreSQL returns an empty one at once
        return jsonb_text(node)
    value = parse(new) if new is not None else None
    return jsonb_text(_walk(node, path, 0, value, how))


def _walk(node: Node, path: list[str | None], level: int, value: Node | None, how: str) -> Node:
    """PostgreSQL's setPath: ``node`` with the path from ``level`` on edited."""
    key = path[level]
    if key is None:
        raise JsonError(f"path element at position {level + 1} is null")
    last = level == len(path) - 1
    if node[0] == "o":
        return _walk_object(node, key, path, level, value, how)
    if node[0] != "a":
        return node  # a scalar inside the value: left as it is
    found = STRTOL.fullmatch(key)
    if not found or not -(2**31) <= int(found.group(1)) < 2**31:
        raise JsonError(f'path element at position {level + 1} is not an integer: "{key}"')
    items, index = list(node[1]), int(found.group(1))
    creating = how != _DELETE and how != _SET
    # None: before the start
    at = index if index >= 0 else index + len(items) if -index <= len(items) else None
    if not last:
        if at is not None and at < len(items):
            items[at] = _walk(items[at], path, level + 1, value, how)
        return ("a", items, 0, 0)
    assert value is not None or how == _DELETE
    if at is None or not items:
        return ("a", [value, *items] if creating else items, 0, 0)  # type: ignore[list-item]
    if at >= len(items):
        return ("a", [*items, value] if creating else items, 0, 0)  # type: ignore[list-item]
    before, current, after = items[:at], items[at], items[at + 1 :]
    middle = {
        _DELETE: [],
        _SET: [value],
        _CREATE: [value],
        _BEFORE: [value, current],
        _AFTER: [current, value],
    }[how]
    return ("a", [*before, *middle, *after], 0, 0)  # type: ignore[list-item]


def _walk_object(
    node: Node, key: str, path: list[str | None], level: int, value: Node | None, how: str
) -> Node:
    members, last = pairs(node, True), level == len(path) - 1
    out: list[tuple[str, Node]] = []
    found = False
    for name, inner in members:
        if name != key:
            out.append((name, inner))
            continue
        found = True
        if not last:
            out.append((name, _walk(inner, path, level + 1, value, how)))
        elif how in (_BEFORE, _AFTER):
            raise JsonError("cannot replace existing key")
        elif how != _DELETE:
            assert value is not None
            out.append((name, value))
    if last and not found and how not in (_DELETE, _SET):
        assert value is not None
        out.append((key, value))
    return ("o", out, 0, 0)


def strip_nulls(doc: str | None, in_arrays: bool | None, mode: str) -> str | None:
    """``json(b)_strip_nulls(doc [, strip_in_arrays])``: object members whose value is null removed, at every
    depth (array elements that are null too when asked); json is written compactly, as PostgreSQL does."""
    if doc is None or in_arrays is None:
        return None
    node = _strip(parse(doc), in_arrays, mode == "jsonb")
    return jsonb_text(node) if mode == "jsonb" else _compact(node, doc)


def _strip(node: Node, in_arrays: bool, jsonb: bool) -> Node:
    if node[0] == "o":
        kept = [(k, _strip(v, in_arrays, jsonb)) for k, v in pairs(node, jsonb) if v[0] != "z"]
        return ("o", kept, node[2], node[3])
    if node[0] == "a":
        kept_items = [_strip(v, in_arrays, jsonb) for v in node[1] if not (in_arrays and v[0] == "z")]
        return ("a", kept_items, node[2], node[3])
    return node


def _compact(node: Node, source: str) -> str:
    """json_strip_nulls' output: no spaces, strings as escape_json writes them, numbers as written."""
    kind, payload = node[0], node[1]
    if kind == "o":
        return "{" + ",".join(f"{quote(k)}:{_compact(v, source)}" for k, v in payload) + "}"
    if kind == "a":
        return "[" + ",".join(_compact(v, source) for v in payload) + "]"
    if kind == "s":
        return quote(payload)
    return source[node[2] : node[3]]


def object_agg(kind: str, members: list[dict[str, str | None]] | None, shape: str) -> str | None:
    """``json(b)_object_agg(key, value)``: ``members`` the (k, v) texts in aggregation order, ``kind`` the
    letter :func:`~lakegate.connectors.duckdb.pgjsonmake.fragment` reads the values by; ``shape`` ``json``,
    ``jsonb`` or ``jsonb unordered`` (no ORDER BY: a key met twice with different values is an error, as
    PostgreSQL keeps the one its plan reads last)."""
    if members is None:
        return None  # no rows
    for member in members:
        if member["k"] is None:
            raise JsonError(
                "null value not allowed for object key" if shape == "json" else "field name must not be null"
            )
    if shape != "json":
        built = [(str(m["k"]), fragment(kind, m["v"])) for m in members]
        if shape.endswith("unordered"):
            _one_value_per_key(built)
        return jsonb_text(("o", built, 0, 0))
    if not members:
        return None
    return "{ " + ", ".join(f"{quote(str(m['k']))} : {json_fragment(kind, m['v'])}" for m in members) + " }"


def _one_value_per_key(members: list[tuple[str, Node]]) -> None:
    seen: dict[str, str] = {}
    for key, value in members:
        text = jsonb_text(value)
        if seen.setdefault(key, text) != text:
            raise JsonError(
                f'jsonb_object_agg() meets the key "{key}" with the values {seen[key]} and {text}: PostgreSQL '
                "keeps the one its plan reads last, which the lake route cannot know; add ORDER BY to the "
                "aggregate, or run the query on a PostgreSQL source"
            )


_MEMBERS = "STRUCT(k VARCHAR, v VARCHAR)[]"
FUNCTIONS: tuple[tuple[str, Callable[..., Any], list[str]], ...] = (
    ("pg_jsonb_concat", concat, ["VARCHAR", "VARCHAR"]),
    ("pg_jsonb_delete", delete, ["VARCHAR", "VARCHAR", "VARCHAR"]),
    ("pg_jsonb_edit_path", edit_path, ["VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR"]),
    ("pg_json_strip_nulls", strip_nulls, ["VARCHAR", "BOOLEAN", "VARCHAR"]),
    ("pg_json_object_agg", object_agg, ["VARCHAR", _MEMBERS, "VARCHAR"]),
)


def _vectorised(fn: Callable[..., Any], arity: int) -> Callable[..., pa.Array]:
    """``fn`` over Arrow columns: every argument reaches it, NULLs included (each function says what a NULL
    gives)."""

    def run(*columns: pa.Array) -> pa.Array:
        rows = zip(*(c.to_pylist() for c in columns), strict=True)
        return pa.array([fn(*values) for values in rows], type=pa.string())

    params = [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(arity)]
    run.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # DuckDB counts them
    return run


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create the functions in ``con`` (before its configuration is locked)."""
    for name, fn, parameters in FUNCTIONS:
        made: Any = _vectorised(fn, len(parameters))
        con.create_function(name, made, parameters, "VARCHAR", type="arrow", null_handling="special")  # type: ignore[call-overload]

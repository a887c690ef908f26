"""json values made on the lake route as PostgreSQL makes them: ``json(b)_build_*``, ``to_json(b)``, ``json(b)_agg``
and ``jsonb_set`` (functions of the gateway's DuckDB; :mod:`lakegate.gateway.dialect_jsonbuild` calls them), over
:mod:`lakegate.connectors.duckdb.pgjson`'s reading and writing of PostgreSQL's json text. Written by hand, as that
module.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa

from lakegate.connectors.duckdb.pgjson import STRTOL, JsonError, Node, jsonb_text, pairs, parse, quote, udf


def _fragment(kind: str, value: str | None) -> Node:
    """An SQL value as a json node: s text, n a number's text, b a boolean's, j json text, J jsonb text."""
    if value is None:
        return ("z", None, 0, 0)
    if kind == "s":
        return ("s", value, 0, 0)
    if kind == "n":
        return ("n", value, 0, 0)
    if kind == "b":
        return ("t" if value == "true" else "f", None, 0, 0)
    return parse(value)


def _json_fragment(kind: str, value: str | None) -> str:
    """The text json_build_*/json_agg write for a value (json values as written)."""
    if value is not None and kind == "j":
        return value
    node = _fragment(kind, value)
    return jsonb_text(node)


def build(kinds: str, values: list[str | None] | None, shape: str) -> str | None:
    """``json(b)_build_object``/``_array``, ``to_json(b)``, ``json(b)_agg``: ``kinds`` one letter per value (one
    letter: every value's), ``shape`` ``{jsonb|json}_{object|array|value}``."""
    if values is None or shape.endswith("_value") and values[0] is None:
        return None  # an aggregate over no rows; to_json(NULL)
    kinds = kinds * len(values) if len(kinds) == 1 else kinds
    jsonb, form = shape.split("_")[0] == "jsonb", shape.split("_")[1]
    if form == "object":
        keys = values[0::2]
        for position, key in enumerate(keys):
            if key is None:
                raise JsonError(f"argument {2 * position + 1}: key must not be null")
        if jsonb:
            members = [
                (k, _fragment(kind, v)) for k, kind, v in zip(keys, kinds[1::2], values[1::2], strict=True)
            ]
            return jsonb_text(("o", members, 0, 0))
        texts = [
            f"{quote(str(k))} : {_json_fragment(kind, v)}"
            for k, kind, v in zip(keys, kinds[1::2], values[1::2], strict=True)
        ]
        return "{" + ", ".join(texts) + "}"
    if form == "value":
        return jsonb_text(_fragment(kinds[0], values[0])) if jsonb else _json_fragment(kinds[0], values[0])
    if jsonb:
        return jsonb_text(("a", [_fragment(k, v) for k, v in zip(kinds, values, strict=True)], 0, 0))
    return "[" + ", ".join(_json_fragment(k, v) for k, v in zip(kinds, values, strict=True)) + "]"


def set_path(doc: str, steps: str, new: str | None, create: bool | None) -> str | None:
    """``jsonb_set(doc, path, new, create)``: ``steps`` the path as a JSON list of strings (null for NULL)."""
    path = json.loads(steps)
    if new is None or create is None or path is None:
        return None
    node = parse(doc)
    if not path:
        return jsonb_text(node)
    if node[0] not in "oa":
        raise JsonError("cannot set path in scalar")
    return jsonb_text(_set(node, path, 0, parse(new), create))


def _set(node: Node, path: list[str | None], level: int, value: Node, create: bool) -> Node:
    key, last = path[level], level == len(path) - 1
    if key is None:
        raise JsonError(f"path element at position {level + 1} is null")
    if node[0] == "o":
        members = pairs(node, True)
        out = [
            (k, (value if last else _set(v, path, level + 1, value, create)) if k == key else v)
            for k, v in members
        ]
        if last and create and all(k != key for k, _ in members):
            out.append((key, value))
        return ("o", out, 0, 0)
    if node[0] != "a":
        return node  # a scalar inside the value: left as it is
    index = STRTOL.fullmatch(key)
    if not index or abs(int(index.group(1))) >= 2**31:
        raise JsonError(f'path element at position {level + 1} is not an integer: "{key}"')
    items, at = list(node[1]), int(index.group(1))
    at = at + len(items) if at < 0 else at
    if 0 <= at < len(items):
        items[at] = value if last else _set(items[at], path, level + 1, value, create)
    elif last and create:
        items = [value, *items] if at < 0 else [*items, value]
    return ("a", items, 0, 0)


FUNCTIONS: tuple[tuple[str, Callable[..., Any], list[str]], ...] = (
    ("pg_json_build", build, ["VARCHAR", "VARCHAR[]", "VARCHAR"]),
    ("pg_jsonb_set", set_path, ["VARCHAR", "VARCHAR", "VARCHAR", "BOOLEAN"]),
)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create the functions in ``con`` (before its configuration is locked)."""
    for name, fn, parameters in FUNCTIONS:
        made: Any = udf(fn, len(parameters), pa.string())
        con.create_function(name, made, parameters, "VARCHAR", type="arrow", null_handling="special")  # type: ignore[call-overload]

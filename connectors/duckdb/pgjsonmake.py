"""json values made on the lake route as PostgreSQL makes them: ``json(b)_build_*``, ``to_json(b)`` and
``json(b)_agg`` (functions of the gateway's DuckDB; :mod:`lakegate.gateway.dialect_jsonbuild` calls them), over
:mod:`lakegate.connectors.duckdb.pgjson`'s reading and writing of PostgreSQL's json text. Written by hand, as that
module.

A float goes in as DuckDB's text of it (which reads back as the same float) and comes out as PostgreSQL's
``float8out``/``float4out`` text: the shortest digits that read back as the value, in exponent form below 1e-4 or
from 1e15 (float4: 1e6) up (``1e+15``, ``1.5e-05``); in jsonb that text read as a ``numeric`` (``1000000000000000``);
NaN and the infinities as strings, as PostgreSQL writes them.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable
from decimal import Decimal, localcontext
from typing import Any

import duckdb
import pyarrow as pa

from lakegate.connectors.duckdb.pgjson import JsonError, Node, jsonb_text, pairs, parse, quote, udf


def float_text(text: str, single: bool) -> str:
    """PostgreSQL's text of the float8 (float4 when ``single``) DuckDB wrote as ``text``."""
    value = float(text)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    if single:
        value = struct.unpack("f", struct.pack("f", value))[0]
    low, high = _bounds(value, single)
    with localcontext() as exact:
        exact.prec = 1100  # every float is a finite binary fraction: its decimal expansion is exact
        shortest = next(f"{value:.{p}e}" for p in range(17) if low < Decimal(f"{value:.{p}e}") < high)
    sign, digits, exponent = Decimal(shortest).normalize().as_tuple()
    assert isinstance(exponent, int)
    text_digits = "".join(map(str, digits))
    power = exponent + len(text_digits) - 1  # of the first digit
    if power < -4 or power >= (6 if single else 15):
        mantissa = text_digits[0] + ("." + text_digits[1:] if len(text_digits) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}"
    return format(Decimal((sign, digits, exponent)), "f")


def _bounds(value: float, single: bool) -> tuple[Decimal, Decimal]:
    """The midpoints between ``value`` and its neighbours (exclusive: PostgreSQL's Ryu writes a digit more
    rather than a number on one of them)."""
    if single:
        bits = struct.unpack("<i", struct.pack("<f", abs(value)))[0]
        below, above = (struct.unpack("<f", struct.pack("<i", b))[0] for b in (bits - 1, bits + 1))
        below, above = (math.copysign(below, value), math.copysign(above, value))
    else:
        below, above = math.nextafter(value, -math.inf), math.nextafter(value, math.inf)
    with localcontext() as exact:
        exact.prec = 1100
        exact_value = Decimal(value)
        # beyond the largest float (either sign) the next step would be as wide as the last one
        lower = 2 * exact_value - Decimal(above) if math.isinf(below) else Decimal(below)
        upper = 2 * exact_value - lower if math.isinf(above) else Decimal(above)
        ends = sorted([(lower + exact_value) / 2, (exact_value + upper) / 2])
    return ends[0], ends[1]


def fragment(kind: str, value: str | None) -> Node:
    """An SQL value as a json node: s text, n a number's text, b a boolean's, j json text, J jsonb text, f a
    float8's, r a float4's."""
    if value is None:
        return ("z", None, 0, 0)
    if kind == "s":
        return ("s", value, 0, 0)
    if kind == "n":
        return ("n", value, 0, 0)
    if kind in "fr":
        text = float_text(value, kind == "r")
        return ("s", text, 0, 0) if text[-1] in "yN" else ("n", text, 0, 0)
    if kind == "b":
        return ("t" if value == "true" else "f", None, 0, 0)
    return parse(value)


def json_fragment(kind: str, value: str | None) -> str:
    """The text json_build_*/json_agg write for a value (json values as written)."""
    if value is not None and kind == "j":
        return value
    if value is not None and kind in "fr":
        text = float_text(value, kind == "r")
        return quote(text) if text[-1] in "yN" else text
    node = fragment(kind, value)
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
                (k, fragment(kind, v)) for k, kind, v in zip(keys, kinds[1::2], values[1::2], strict=True)
            ]
            return jsonb_text(("o", members, 0, 0))
        texts = [
            f"{quote(str(k))} : {json_fragment(kind, v)}"
            for k, kind, v in zip(keys, kinds[1::2], values[1::2], strict=True)
        ]
        return "{" + ", ".join(texts) + "}"
    if form == "value":
        return jsonb_text(fragment(kinds[0], values[0])) if jsonb else json_fragment(kinds[0], values[0])
    if jsonb:
        return jsonb_text(("a", [fragment(k, v) for k, v in zip(kinds, values, strict=True)], 0, 0))
    return "[" + ", ".join(json_fragment(k, v) for k, v in zip(kinds, values, strict=True)) + "]"


def pretty(doc: str) -> str:
    """``jsonb_pretty``: four spaces a level, ``"key": value``, an empty container's closer on its own line."""
    return _pretty(parse(doc), 0)


def _pretty(node: Node, level: int) -> str:
    indent = "    " * level
    if node[0] == "o":
        members = pairs(node, True)
        inner = ",\n".join(f"{indent}    {quote(k)}: {_pretty(v, level + 1)}" for k, v in members)
        return "{\n" + (inner + "\n" if members else "") + indent + "}"
    if node[0] == "a":
        inner = ",\n".join(f"{indent}    {_pretty(v, level + 1)}" for v in node[1])
        return "[\n" + (inner + "\n" if node[1] else "") + indent + "]"
    return jsonb_text(node)


def object_from(keys: list[str | None] | None, values: list[str | None] | None, shape: str) -> str | None:
    """``jsonb_object(text[])`` (keys and values alternating: ``shape`` ends with " alternating") and
    ``jsonb_object(keys, values)``: every value a string (NULL: null), PostgreSQL's errors for NULL keys and
    uneven arrays."""
    if keys is None or values is None and not shape.endswith("alternating"):
        return None
    if values is None:
        if len(keys) % 2:
            raise JsonError("array must have even number of elements")
        keys, values = keys[0::2], keys[1::2]
    elif (not keys) != (not values):  # an empty array has no dimension in PostgreSQL
        raise JsonError("wrong number of array subscripts")
    elif len(keys) != len(values):
        raise JsonError("mismatched array dimensions")
    named: list[str] = []
    for key in keys:
        if key is None:
            raise JsonError("null value not allowed for object key")
        named.append(key)
    if shape.startswith("jsonb"):
        return jsonb_text(("o", [(k, fragment("s", v)) for k, v in zip(named, values, strict=True)], 0, 0))
    return (
        "{"
        + ", ".join(f"{quote(k)} : {json_fragment('s', v)}" for k, v in zip(named, values, strict=True))
        + "}"
    )


def array_json(kind: str, items: list[str | None] | None) -> str | None:
    """``array_to_json(array)`` of a one-dimensional array: its elements as json_build_array writes them, without
    spaces."""
    return None if items is None else "[" + ",".join(json_fragment(kind, v) for v in items) + "]"


FUNCTIONS: tuple[tuple[str, Callable[..., Any], list[str]], ...] = (
    ("pg_json_build", build, ["VARCHAR", "VARCHAR[]", "VARCHAR"]),
    ("pg_jsonb_pretty", pretty, ["VARCHAR"]),
    ("pg_json_object_from", lambda k, v, s: object_from(k, v, s), ["VARCHAR[]", "VARCHAR[]", "VARCHAR"]),
    ("pg_array_to_json", lambda kind, items: array_json(kind, items), ["VARCHAR", "VARCHAR[]"]),
)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create the functions in ``con`` (before its configuration is locked)."""
    for name, fn, parameters in FUNCTIONS:
        made: Any = udf(fn, len(parameters), pa.string())
        con.create_function(name, made, parameters, "VARCHAR", type="arrow", null_handling="special")  # type: ignore[call-overload]

"""PostgreSQL types -> Arrow types, and PostgreSQL text values -> typed Arrow arrays, a column at a time.

Values arrive as the types' text output (pgoutput in text mode, ``COPY ... (FORMAT csv)``), in sessions set to
``TimeZone=UTC``, ``DateStyle=ISO``, ``IntervalStyle=iso_8601``, ``bytea_output=hex`` and
``extra_float_digits=3`` (see :data:`SESSION_OPTIONS`). Scalars convert with vectorised Arrow casts; only values a
cast cannot parse (``infinity``, BC dates, ``24:00:00``) take a per-value path. The array-literal parser is
hand-written: psycopg parses arrays only into Python objects, and we want the element text so that elements go
through the same vectorised casts as scalars.

Mapping (see README "Types"): integers -> int32/int64, ``numeric(p,s)`` -> ``decimal(p,s)`` (p <= 38; wider or
unconstrained numeric -> exact text, or a chosen decimal), real/double -> float32/float64 with NaN and infinities,
temporal types -> date32 / time64[us] / timestamp[us] / timestamp[us, UTC], uuid -> uuid, bytea -> binary,
json/jsonb/enum/text-like -> string, domains -> their base type, arrays -> (nested) lists. Anything else is
refused by :class:`UnsupportedType` naming the type.
"""

from __future__ import annotations

import binascii
import dataclasses
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lakegate.connectors.changes import TS_INFINITY, TS_MINUS_INFINITY

#: Session settings every connection that reads values (replication, COPY) runs with.
SESSION_OPTIONS = {
    "TimeZone": "UTC",
    "DateStyle": "ISO, YMD",
    "IntervalStyle": "iso_8601",
    "bytea_output": "hex",
    "extra_float_digits": "3",
    "client_encoding": "UTF8",
}

# DuckDB's representation of infinite temporal values: dates keep it (they read back as 'infinity' in DuckDB).
INT64_INF = 2**63 - 1
INT32_INF = 2**31 - 1
SENTINEL_HELP = (
    "the lake stores PostgreSQL's infinity as 9999-12-31 23:59:59.999999 and -infinity as 0001-01-01 "
    "00:00:00.000001 (so that every reader can read them); change the value by a microsecond or leave the column "
    "out of the publication"
)


class UnsupportedType(ValueError):
    """A column type lakegate cannot keep exactly in the lake."""


class ConversionError(ValueError):
    """A value the lake type cannot hold. The message names the column, the value and what to do."""


@dataclass(frozen=True)
class PgType:
    """One row of ``pg_type``."""

    oid: int
    namespace: str
    name: str
    typtype: str  #: b base, c composite, d domain, e enum, p pseudo, r range, m multirange
    category: str  #: typcategory: A array, B boolean, D datetime, N numeric, S string, U user ...
    elem: int  #: element type of an array, else 0
    basetype: int  #: base type of a domain, else 0
    basetypmod: int


TYPE_QUERY = """
SELECT t.oid::int8, n.nspname, t.typname, t.typtype, t.typcategory, t.typelem::int8, t.typbasetype::int8, t.typtypmod
FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
WHERE t.oid = ANY(%s)
"""


class TypeCatalog:
    """``pg_type`` rows by oid, fetched on demand through ``fetch(oids) -> rows`` and cached."""

    def __init__(self, fetch: Callable[[list[int]], Iterable[Sequence[Any]]]) -> None:
        self._fetch = fetch
        self._types: dict[int, PgType] = {}

    def get(self, oid: int) -> PgType:
        if oid not in self._types:
            for row in self._fetch([oid]):
                self._types[int(row[0])] = PgType(
                    int(row[0]), row[1], row[2], row[3], row[4], int(row[5]), int(row[6]), int(row[7])
                )
        try:
            return self._types[oid]
        except KeyError:
            raise UnsupportedType(f"type oid {oid} is not in pg_type (was it dropped?)") from None


@dataclass(frozen=True)
class Codec:
    """How one column is kept in the lake: its Arrow type and the text -> Arrow conversion.

    A codec made by :func:`codec_for` pickles as its recipe (the ``pg_type`` rows it was made from, typmod,
    dimensions, numeric setting) and is made again on the other side: its conversion is a closure, and row
    segments travel to the table writer processes with their codecs (:mod:`lakegate.ingest.tableprocs`)."""

    arrow_type: pa.DataType
    convert: Callable[[pa.Array], pa.Array]  #: a string array of text values -> an array of ``arrow_type``
    source_type: str
    recipe: tuple[Any, ...] | None = dataclasses.field(default=None, compare=False, repr=False)

    def __reduce__(self) -> tuple[Any, ...]:
        if self.recipe is None:
            raise TypeError(f"a codec of {self.source_type} not made by codec_for cannot be pickled")
        return (_from_recipe, self.recipe)


# ---------------------------------------------------------------------------------------------- scalar casts


def _fail(values: pa.Array, parse: Callable[[str], Any], what: str) -> ConversionError:
    for value in values.to_pylist():
        if value is None:
            continue
        try:
            parse(value)
        except (ValueError, ArithmeticError) as exc:
            return ConversionError(f"value {value!r} cannot be stored as {what}: {exc}")
    return ConversionError(f"a value cannot be stored as {what}")


def _cast(target: pa.DataType, what: str) -> Callable[[pa.Array], pa.Array]:
    def convert(values: pa.Array) -> pa.Array:
        try:
            return values.cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            raise _fail(values, lambda v: pa.array([v]).cast(target), what) from None

    return convert


def _bool(values: pa.Array) -> pa.Array:
    return pc.equal(values, "t")


def _identity(values: pa.Array) -> pa.Array:
    return values.cast(pa.string())


def _per_value(parse: Callable[[str], Any], target: pa.DataType) -> Callable[[pa.Array], pa.Array]:
    def convert(values: pa.Array) -> pa.Array:
        return pa.array([None if v is None else parse(v) for v in values.to_pylist()], type=target)

    return convert


def _with_fallback(
    fast: Callable[[pa.Array], pa.Array], slow: Callable[[str], Any], target: pa.DataType, what: str
) -> Callable[[pa.Array], pa.Array]:
    """Vectorised cast; if any value defeats it, convert the column value by value with ``slow``."""

    def convert(values: pa.Array) -> pa.Array:
        try:
            return fast(values)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        out: list[int | None] = []
        for value in values.to_pylist():
            if value is None:
                out.append(None)
                continue
            try:
                out.append(slow(value))
            except (ValueError, ArithmeticError) as exc:
                raise ConversionError(f"value {value!r} cannot be stored as {what}: {exc}") from None
        return pa.array(out, type=pa.int64() if target.bit_width == 64 else pa.int32()).cast(target)

    return convert


_DATE = re.compile(r"^(\d{4,})-(\d\d)-(\d\d)( BC)?$")
_TS = re.compile(
    r"^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-]\d\d(?::?\d\d(?::?\d\d)?)?)?( BC)?$"
)
_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?$")


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Proleptic Gregorian date -> days since 1970-01-01, for any year (H. Hinnant's algorithm)."""
    year -= month <= 2
    era = year // 400  # floor division: C's (y >= 0 ? y : y - 399) / 400
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


def _year(digits: str, bc: str | None) -> int:
    return 1 - int(digits) if bc else int(digits)


def parse_date(text: str) -> int:
    """PostgreSQL date text -> days since the epoch; infinities map to DuckDB's infinite dates."""
    if text == "infinity":
        return INT32_INF
    if text == "-infinity":
        return -INT32_INF
    m = _DATE.match(text)
    if not m:
        raise ValueError("not an ISO date")
    return _days_from_civil(_year(m.group(1), m.group(4)), int(m.group(2)), int(m.group(3)))


def _offset_seconds(text: str | None) -> int:
    if not text:
        return 0
    sign = -1 if text[0] == "-" else 1
    digits = text[1:].replace(":", "")
    hours, minutes, seconds = int(digits[0:2]), int(digits[2:4] or 0), int(digits[4:6] or 0)
    return sign * (hours * 3600 + minutes * 60 + seconds)


def parse_timestamp(text: str) -> int:
    """PostgreSQL timestamp[tz] text -> microseconds since the epoch (UTC for timestamptz)."""
    if text == "infinity":
        return INT64_INF
    if text == "-infinity":
        return -INT64_INF
    m = _TS.match(text)
    if not m:
        raise ValueError("not an ISO timestamp")
    days = _days_from_civil(_year(m.group(1), m.group(9)), int(m.group(2)), int(m.group(3)))
    seconds = days * 86400 + int(m.group(4)) * 3600 + int(m.group(5)) * 60 + int(m.group(6))
    seconds -= _offset_seconds(m.group(8))
    micros = seconds * 1_000_000 + int((m.group(7) or "0").ljust(6, "0"))
    if micros >= INT64_INF:  # PostgreSQL goes on to 294276 AD
        raise ValueError(
            "after 294247 AD: the lake counts microseconds since 1970 in 64 bits; change the value or leave the "
            "column out of the publication"
        )
    return micros


def refuse_sentinels(values: pa.Array, what: str) -> None:
    """Raise when a finite timestamp is one of the values the lake keeps for an infinity."""
    hit = pc.is_in(values.cast(pa.int64()), pa.array([TS_INFINITY, TS_MINUS_INFINITY], pa.int64()))
    if pc.any(hit).as_py():
        value = values[pc.index(hit, True).as_py()].as_py()
        raise ConversionError(f"value '{value}' cannot be stored as {what}: {SENTINEL_HELP}")


def lake_timestamps(values: pa.Array, what: str) -> pa.Array:
    """A timestamp array holding DuckDB's infinities (±(2**63 - 1) µs) as the lake stores it: the finite values
    checked by :func:`refuse_sentinels`, the infinities as :data:`TS_INFINITY` / :data:`TS_MINUS_INFINITY`."""
    refuse_sentinels(values, what)
    micros = values.cast(pa.int64())
    mapped = pc.if_else(
        pc.equal(micros, INT64_INF),
        pa.scalar(TS_INFINITY, pa.int64()),
        pc.if_else(pc.equal(micros, -INT64_INF), pa.scalar(TS_MINUS_INFINITY, pa.int64()), micros),
    )
    return mapped.cast(values.type)


def lake_values(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """A converted column as the lake stores it: timestamps (also in lists) through :func:`lake_timestamps`. The
    codecs keep DuckDB's infinities (the gateway's PostgreSQL route reads its results with them); the ingest
    calls this on what it writes."""
    if isinstance(values, pa.ChunkedArray):
        if not _has_timestamps(values.type):
            return values
        return pa.chunked_array([lake_values(chunk) for chunk in values.chunks], type=values.type)
    typ = values.type
    if pa.types.is_timestamp(typ):
        return lake_timestamps(values, "timestamptz" if typ.tz else "timestamp")
    if (pa.types.is_list(typ) or pa.types.is_large_list(typ)) and _has_timestamps(typ):
        return type(values).from_arrays(values.offsets, lake_values(values.values), mask=values.is_null())
    return values


def _has_timestamps(typ: pa.DataType) -> bool:
    while pa.types.is_list(typ) or pa.types.is_large_list(typ):
        typ = typ.value_type
    return pa.types.is_timestamp(typ)


def parse_time(text: str) -> int:
    m = _TIME.match(text)
    if not m:
        raise ValueError("not an ISO time of day")
    micros = (int(m.group(1)) * 3600 + int(m.group(2)) * 60 + int(m.group(3))) * 1_000_000
    micros += int((m.group(4) or "0").ljust(6, "0"))
    if micros > 86_400_000_000:
        raise ValueError("time of day beyond 24:00:00")
    return micros


def _time_fast(values: pa.Array) -> pa.Array:
    stamped = pc.binary_join_element_wise("1970-01-01 ", values, "")
    return stamped.cast(pa.timestamp("us")).cast(pa.time64("us"))


def _bytea(text: str) -> bytes:
    if not text.startswith("\\x"):
        raise ValueError("bytea not in hex output format (set bytea_output = hex)")
    return binascii.unhexlify(text[2:])


def _uuid(values: pa.Array) -> pa.Array:
    raw = [None if v is None else binascii.unhexlify(v.replace("-", "")) for v in values.to_pylist()]
    return pa.ExtensionArray.from_storage(pa.uuid(), pa.array(raw, type=pa.binary(16)))


# --------------------------------------------------------------------------------------------------- arrays

_UNQUOTED_END = re.compile(r"[,{}]")


def parse_array(text: str) -> list[Any]:
    """A PostgreSQL array literal -> nested lists of element text (``None`` for NULL).

    Handles quoting, backslash escapes, NULL, nested dimensions and a leading ``[lo:hi]=`` bounds
    decoration (bounds are dropped: lists start at 1).
    """
    if text.startswith("["):
        text = text[text.index("=") + 1 :]
    value, pos = _parse_level(text, 0)
    if pos != len(text):
        raise ValueError(f"junk after array literal at offset {pos}")
    return value


def _parse_level(text: str, pos: int) -> tuple[list[Any], int]:
    if text[pos] != "{":
        raise ValueError(f"expected '{{' at offset {pos}")
    pos += 1
    items: list[Any] = []
    if text[pos] == "}":
        return items, pos + 1
    while True:
        char = text[pos]
        if char == "{":
            item, pos = _parse_level(text, pos)
            items.append(item)
        elif char == '"':
            buf = []
            pos += 1
            while text[pos] != '"':
                if text[pos] == "\\":
                    pos += 1
                buf.append(text[pos])
                pos += 1
            items.append("".join(buf))
            pos += 1
        else:
            end = _UNQUOTED_END.search(text, pos)
            if end is None:
                raise ValueError("unterminated array literal")
            word = text[pos : end.start()].strip()
            items.append(None if word.upper() == "NULL" else word)
            pos = end.start()
        if text[pos] == ",":
            pos += 1
        elif text[pos] == "}":
            return items, pos + 1
        else:
            raise ValueError(f"expected ',' or '}}' at offset {pos}")


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list):
        depth += 1
        value = value[0] if value else None
    return depth


def _array_codec(element: Codec, ndims: int, source_type: str) -> Codec:
    arrow_type = element.arrow_type
    for _ in range(ndims):
        arrow_type = pa.list_(arrow_type)

    def convert(values: pa.Array) -> pa.Array:
        parsed: list[Any] = []
        for text in values.to_pylist():
            if text is None:
                parsed.append(None)
                continue
            value = parse_array(text)
            if value and _depth(value) != ndims:
                raise ConversionError(
                    f"array value {text[:80]!r} has {_depth(value)} dimension(s) but the column is declared with "
                    f"{ndims}; declare the column with the dimensions it holds (e.g. int[][]) so its lake type fits"
                )
            parsed.append(value)
        return _build_lists(parsed, ndims, element)

    return Codec(arrow_type, convert, source_type)


def _build_lists(values: list[Any], ndims: int, element: Codec) -> pa.Array:
    offsets = [0]
    mask = []
    flat: list[Any] = []
    for value in values:
        mask.append(value is None)
        if value is not None:
            flat.extend(value)
        offsets.append(len(flat))
    inner = (
        _build_lists(flat, ndims - 1, element)
        if ndims > 1
        else element.convert(pa.array(flat, type=pa.string()))
    )
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), inner, mask=pa.array(mask, pa.bool_()))


# ------------------------------------------------------------------------------------------------- resolver

_STRING_TYPES = {
    "text",
    "varchar",
    "bpchar",
    "char",
    "name",
    "json",
    "jsonb",
    "xml",
    "citext",
    "interval",
    "timetz",
    "money",
    "inet",
    "cidr",
    "macaddr",
    "macaddr8",
    "bit",
    "varbit",
    "pg_lsn",
    "tsvector",
    "tsquery",
    "jsonpath",
}


def numeric_typmod(typmod: int) -> tuple[int, int] | None:
    """``numeric`` typmod -> (precision, scale), or None when unconstrained."""
    if typmod < 4:
        return None
    raw = typmod - 4
    scale = raw & 0x7FF
    if scale & 0x400:  # PostgreSQL 15+: negative scale, sign-extended from 11 bits
        scale -= 0x800
    return (raw >> 16) & 0xFFFF, scale


def _numeric(typmod: int, unbounded: str) -> Codec:
    spec = numeric_typmod(typmod)
    source = "numeric" if spec is None else f"numeric({spec[0]},{spec[1]})"
    if spec is None:
        if unbounded == "string":
            return Codec(pa.string(), _identity, source)
        m = re.fullmatch(r"decimal\((\d+),\s*(\d+)\)", unbounded.replace(" ", ""))
        if not m:
            raise UnsupportedType(
                f"[ingest] unbounded_numeric = {unbounded!r}: write 'string' or 'decimal(P,S)'"
            )
        precision, scale = int(m.group(1)), int(m.group(2))
    else:
        precision, scale = spec
        if scale < 0:
            precision, scale = precision - scale, 0
    if precision > 38:
        return Codec(pa.string(), _identity, source)  # wider than any Iceberg decimal: exact text
    target = pa.decimal128(precision, scale)
    return Codec(target, _cast(target, f"decimal({precision},{scale}) (the lake type of {source})"), source)


def _scalar(t: PgType, typmod: int, unbounded_numeric: str) -> Codec:
    name = t.name
    if t.namespace == "pg_catalog":
        simple: dict[str, tuple[pa.DataType, Callable[[pa.Array], pa.Array]]] = {
            "bool": (pa.bool_(), _bool),
            "int2": (pa.int32(), _cast(pa.int32(), "int")),
            "int4": (pa.int32(), _cast(pa.int32(), "int")),
            "int8": (pa.int64(), _cast(pa.int64(), "long")),
            "oid": (pa.int64(), _cast(pa.int64(), "long")),
            "float4": (pa.float32(), _cast(pa.float32(), "float")),
            "float8": (pa.float64(), _cast(pa.float64(), "double")),
            "date": (pa.date32(), _with_fallback(_cast_only(pa.date32()), parse_date, pa.date32(), "date")),
            "time": (pa.time64("us"), _with_fallback(_time_fast, parse_time, pa.time64("us"), "time")),
            "timestamp": (
                pa.timestamp("us"),
                _with_fallback(
                    _cast_only(pa.timestamp("us")), parse_timestamp, pa.timestamp("us"), "timestamp"
                ),
            ),
            "timestamptz": (
                pa.timestamp("us", tz="UTC"),
                _with_fallback(
                    _cast_only(pa.timestamp("us", tz="UTC")),
                    parse_timestamp,
                    pa.timestamp("us", tz="UTC"),
                    "timestamptz",
                ),
            ),
            "uuid": (pa.uuid(), _uuid),
            "bytea": (pa.binary(), _per_value(_bytea, pa.binary())),
        }
        if name in simple:
            arrow_type, convert = simple[name]
            return Codec(arrow_type, convert, name)
        if name == "numeric":
            return _numeric(typmod, unbounded_numeric)
        if name in _STRING_TYPES:
            length = f"({typmod - 4})" if name in ("bpchar", "varchar") and typmod >= 4 else ""
            return Codec(pa.string(), _identity, name + length)
    if t.typtype == "e" or (t.typtype == "b" and t.category == "S"):
        return Codec(pa.string(), _identity, f"{t.namespace}.{name}")  # enums, citext and other text types
    kinds = {"c": "a composite type", "r": "a range type", "m": "a multirange type", "p": "a pseudo-type"}
    raise UnsupportedType(
        f"type {t.namespace}.{name} ({kinds.get(t.typtype, 'not a type lakegate maps')}) "
        "has no exact lake type"
    )


def _cast_only(target: pa.DataType) -> Callable[[pa.Array], pa.Array]:
    return lambda values: values.cast(target)


def codec_for(
    catalog: TypeCatalog, oid: int, typmod: int, ndims: int = 0, *, unbounded_numeric: str = "string"
) -> Codec:
    """The lake representation of a column of type ``oid`` with ``typmod``; ``ndims`` declared array dimensions.

    Raises :class:`UnsupportedType` when the type has no exact lake type.
    """
    codec = _codec_for(catalog, oid, typmod, ndims, unbounded_numeric)
    types = tuple(sorted(_used_types(catalog, oid), key=lambda t: t.oid))
    return dataclasses.replace(codec, recipe=(types, oid, typmod, ndims, unbounded_numeric))


def _used_types(catalog: TypeCatalog, oid: int) -> set[PgType]:
    """The ``pg_type`` rows :func:`codec_for` reads for ``oid``: the type, its domains' bases, array elements."""
    found: set[PgType] = set()
    todo = [oid]
    while todo:
        t = catalog.get(todo.pop())
        if t not in found:
            found.add(t)
            todo += [o for o in (t.basetype, t.elem) if o]
    return found


@functools.lru_cache(maxsize=1024)
def _from_recipe(types: tuple[PgType, ...], oid: int, typmod: int, ndims: int, unbounded_numeric: str) -> Codec:
    """A pickled codec made again (once per recipe and process)."""
    rows = {t.oid: t for t in types}
    catalog = TypeCatalog(lambda oids: [dataclasses.astuple(rows[o]) for o in oids if o in rows])
    return codec_for(catalog, oid, typmod, ndims, unbounded_numeric=unbounded_numeric)


def _codec_for(catalog: TypeCatalog, oid: int, typmod: int, ndims: int, unbounded_numeric: str) -> Codec:
    t = catalog.get(oid)
    while t.typtype == "d":  # domains keep their base type's representation
        typmod = t.basetypmod if typmod < 0 else typmod
        t = catalog.get(t.basetype)
    if t.category == "A" and t.elem:
        element = _codec_for(catalog, t.elem, typmod, 0, unbounded_numeric)
        dims = max(1, ndims)
        return _array_codec(element, dims, element.source_type + "[]" * dims)
    return _scalar(t, typmod, unbounded_numeric)


def text_column(values: Sequence[bytes | None]) -> pa.Array:
    """Raw text values from the wire -> an Arrow string array (validating UTF-8)."""
    return pa.array(values, type=pa.binary()).cast(pa.string())

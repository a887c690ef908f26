"""Arrow record batches -> response bytes: ``json`` (Redash's shape), ``ndjson``, ``csv``, ``arrow`` (IPC stream).

Encoders work batch by batch, so a result streams with bounded memory. JSON text is built column-wise with Arrow
compute (every value becomes its JSON text, then rows are joined element-wise) instead of a Python dict per
row: that is what makes JSON output keep up with the engines. Types without a vectorised path (lists, structs,
binary, uuid, intervals) fall back to Python per value.

Exact values: integers and decimals are JSON numbers written from their exact text (decimals never pass through
a float); NaN and infinities, which JSON numbers cannot hold, are the strings ``"NaN"``, ``"Infinity"``,
``"-Infinity"``; timestamps with a time zone are ISO 8601 with offset (``2024-05-01T12:00:00.000000+00:00``);
dates ``YYYY-MM-DD``; infinite timestamps and dates ``"infinity"``/``"-infinity"``; binary is PostgreSQL's hex
form ``\\x0a1b``; NULL is ``null``.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import io
import json
import uuid
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from lakegate.connectors import intervals
from lakegate.gateway.client_types import infinities
from lakegate.gateway.execute import unique_names
from lakegate.gateway.pgtypes import marked, pg_type

JSON, NDJSON, CSV, ARROW = "json", "ndjson", "csv", "arrow"
MEDIA_TYPES = {
    JSON: "application/json",
    NDJSON: "application/x-ndjson",
    CSV: "text/csv; charset=utf-8",
    ARROW: "application/vnd.apache.arrow.stream",
}
NUMERIC_TEXT = b"lakegate.numeric"
_CONTROL = r"[\x00-\x1f]"


def redash_type(field: pa.Field) -> str:
    """Arrow type -> Redash's column type (integer, float, boolean, string, datetime, date)."""
    t = field.type
    if pa.types.is_integer(t):
        return "integer"
    if pa.types.is_floating(t) or pa.types.is_decimal(t) or _numeric_text(field):
        return "float"
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_timestamp(t):
        return "datetime"
    if pa.types.is_date(t):
        return "date"
    return "string"


def _numeric_text(field: pa.Field) -> bool:
    return bool(field.metadata and field.metadata.get(NUMERIC_TEXT))


# ------------------------------------------------------------------------------------------ JSON values


def _quoted(values: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise('"', values, '"', "")


def _json_strings(values: pa.Array) -> pa.Array:
    if pa.types.is_large_string(values.type) or pa.types.is_string_view(values.type):
        values = values.cast(pa.string())
    if pc.any(pc.match_substring_regex(values, _CONTROL)).as_py():
        return pa.array(
            [None if v is None else json.dumps(v, ensure_ascii=False) for v in values.to_pylist()],
            pa.string(),
        )
    escaped = pc.replace_substring(pc.replace_substring(values, "\\", "\\\\"), '"', '\\"')
    return _quoted(escaped)


def _json_floats(values: pa.Array) -> pa.Array:
    text = values.cast(pa.string())
    if pc.any(pc.invert(pc.is_finite(values))).as_py():
        text = pc.if_else(pc.is_nan(values), '"NaN"', text)
        text = pc.if_else(pc.and_(pc.is_inf(values), pc.greater(values, 0)), '"Infinity"', text)
        text = pc.if_else(pc.and_(pc.is_inf(values), pc.less(values, 0)), '"-Infinity"', text)
    return text


def decimal_text(values: pa.Array) -> pa.Array:
    """Decimals as PostgreSQL writes numerics: every digit of the type's scale, never an exponent (Arrow writes
    ``1.00000000E-10`` and ``0E-18`` where the adjusted exponent is below -6)."""
    text = values.cast(pa.string())
    if not pc.any(pc.match_substring(text, "E")).as_py():
        return text
    return pa.array(
        [None if v is None else format(decimal.Decimal(v), "f") for v in text.to_pylist()], pa.string()
    )


def _json_numeric_text(values: pa.Array) -> pa.Array:
    special = pc.is_in(values, pa.array(["NaN", "Infinity", "-Infinity"]))
    return pc.if_else(special, _quoted(values), values)


def _infinite(values: pa.Array, text: Callable[[pa.Array], pa.Array], quote: str) -> pa.Array:
    """``text(values)`` with PostgreSQL's ``infinity`` and ``-infinity`` (timestamps and dates travel as the
    largest value of their storage type and its negation, as DuckDB keeps them) written as words."""
    masks = infinities(values)
    if masks is None:
        return text(values)
    positive, negative = masks
    finite = text(pc.if_else(pc.or_(positive, negative), pa.scalar(None, values.type), values))
    word = pc.if_else(negative, f"{quote}-infinity{quote}", finite)
    return pc.if_else(positive, f"{quote}infinity{quote}", word)


_UTC = frozenset({"UTC", "Etc/UTC", "+00:00"})
#: 0001-01-01 00:00:00 and 9999-12-31 23:59:59.999999 in microseconds since the epoch
_FOUR_DIGIT_YEARS = (-62_135_596_800_000_000, 253_402_300_799_999_999)


def iso_timestamps(values: pa.Array) -> pa.Array:
    """``strftime(values, "%Y-%m-%dT%H:%M:%S%Ez")`` (without the offset for timestamps without a zone). Arrow's
    strftime formats value by value through a stream, about 2 µs each: most of the CPU of a JSON or CSV result
    with a timestamp column. For microseconds in UTC within the years 1-9999 (what PostgreSQL and DuckDB send),
    Arrow's cast to string writes the same digits (``YYYY-MM-DD HH:MM:SS.ffffff``) several times faster."""
    t: pa.TimestampType = values.type
    if t.unit == "us" and (t.tz is None or t.tz in _UTC):
        bounds = pc.min_max(values.view(pa.int64()))
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if low is None or (low >= _FOUR_DIGIT_YEARS[0] and high <= _FOUR_DIGIT_YEARS[1]):
            wall = values.view(pa.timestamp("us")).cast(pa.string())  # the UTC wall time, a space before it
            text = pc.utf8_replace_slice(wall, start=10, stop=11, replacement="T")
            return pc.binary_join_element_wise(text, "+00:00", "") if t.tz else text
    return pc.strftime(values, format="%Y-%m-%dT%H:%M:%S%Ez" if t.tz else "%Y-%m-%dT%H:%M:%S")


def _json_timestamps(values: pa.Array) -> pa.Array:
    t: pa.TimestampType = values.type
    if t.unit == "ns":
        values = values.cast(pa.timestamp("us", t.tz))

    def text(finite: pa.Array) -> pa.Array:
        try:
            return _quoted(iso_timestamps(finite))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):  # out-of-range values: per value
            return _per_value(finite)

    return _infinite(values, text, '"')


def _json_dates(values: pa.Array) -> pa.Array:
    return _infinite(values.cast(pa.date32()), lambda v: _quoted(v.cast(pa.string())), '"')


def _json_times(values: pa.Array) -> pa.Array:
    """Times of day as PostgreSQL prints them, 24:00:00 included (Python's time stops at 23:59:59.999999)."""
    micros = values.cast(pa.int64()).to_pylist() if values.type.unit == "us" else None
    if micros is None:
        return _per_value(values)
    out: list[str | None] = []
    for value in micros:
        if value is None:
            out.append(None)
            continue
        seconds, fraction = divmod(value, 1_000_000)
        text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
        digits = f".{fraction:06d}".rstrip("0") if fraction else ""
        out.append(f'"{text}{digits}"')
    return pa.array(out, pa.string())


def _default(value: Any) -> Any:
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, decimal.Decimal | uuid.UUID | datetime.timedelta):
        return str(value)
    if isinstance(value, float):
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return value
    return str(value)


def _python_json(value: Any) -> str:
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return json.dumps(_default(value))
    if isinstance(value, list | tuple):
        return "[" + ",".join("null" if v is None else _python_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{"
            + ",".join(
                f"{json.dumps(str(k))}:{'null' if v is None else _python_json(v)}" for k, v in value.items()
            )
            + "}"
        )
    if isinstance(value, bool | int | str) or value is None:
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, decimal.Decimal):
        return str(value) if value.is_finite() else json.dumps(str(value))
    return json.dumps(_default(value), ensure_ascii=False)


def _per_value(values: pa.Array) -> pa.Array:
    try:
        items = values.to_pylist()
    except (ValueError, OverflowError, pa.ArrowException):  # e.g. timestamps beyond Python's range
        items = values.cast(pa.string()).to_pylist()
    return pa.array([None if v is None else _python_json(v) for v in items], pa.string())


def json_values(values: pa.Array, field: pa.Field) -> pa.Array:
    """Each value's JSON text (non-null: NULL becomes ``null``)."""
    t = values.type
    if pa.types.is_null(t):
        return pa.array(["null"] * len(values), pa.string())
    converters: list[tuple[Callable[[pa.DataType], bool], Callable[[pa.Array], pa.Array]]] = [
        (pa.types.is_boolean, lambda v: pc.if_else(v, "true", "false")),
        (pa.types.is_integer, lambda v: v.cast(pa.string())),
        (pa.types.is_floating, _json_floats),
        (pa.types.is_decimal, decimal_text),
        (pa.types.is_timestamp, _json_timestamps),
        (pa.types.is_date, _json_dates),
        (pa.types.is_time, _json_times),
        (pa.types.is_interval, lambda v: _quoted(intervals.from_arrow(v))),
    ]
    if _numeric_text(field):
        text = _json_numeric_text(values)
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        text = _json_strings(values)
    else:
        text = next((convert(values) for test, convert in converters if test(t)), None)
        if text is None:
            text = _per_value(values)
    return pc.fill_null(text, "null")


# --------------------------------------------------------------------------------------------- encoders


class Encoder:
    media_type = ""

    def header(self, schema: pa.Schema) -> bytes:
        return b""

    def batch(self, batch: pa.RecordBatch) -> bytes:
        raise NotImplementedError

    def footer(self, meta: dict[str, Any]) -> bytes:
        return b""


def _rows(batch: pa.RecordBatch, prefix: str, suffix: str) -> pa.Array:
    """One JSON object text per row, each wrapped in ``prefix`` ... ``suffix``; repeated column names are
    keyed apart (``a``, ``a_2``: :func:`lakegate.gateway.execute.unique_names`)."""
    parts: list[Any] = []
    keys = unique_names(batch.schema).names
    for i, field in enumerate(batch.schema):
        key = json.dumps(keys[i], ensure_ascii=False)
        parts.append(("{" if i == 0 else ",") + key + ":")
        parts.append(json_values(batch.column(i), field))
    if not parts:
        return pa.array([prefix + "{}" + suffix] * batch.num_rows, pa.string())
    parts[0] = prefix + parts[0]
    parts.append("}" + suffix)
    return pc.binary_join_element_wise(*parts, "")


def _concat(rows: pa.Array) -> bytes:
    """The text of a string array's values, back to back (its data buffer between the first and last offset)."""
    if len(rows) == 0:
        return b""
    _, offsets, data = rows.buffers()
    width = pa.int64() if pa.types.is_large_string(rows.type) else pa.int32()
    bounds = pa.Array.from_buffers(width, len(rows) + 1, [None, offsets], offset=rows.offset)
    start, end = bounds[0].as_py(), bounds[len(rows)].as_py()
    return data.slice(start, end - start).to_pybytes()


class JsonEncoder(Encoder):
    """``{"columns": [...], "rows": [{...}, ...], "truncated", "elapsed_ms", "route"}``, streamed. ``truncated``
    is true whenever ``rows`` is not the whole result: the row cap cut it, or the query failed after rows were
    sent (the size cap reached mid-stream, the time limit...); the footer then also holds ``"error"``, the
    object an error response holds (see lakegate.gateway.http_query)."""

    media_type = MEDIA_TYPES[JSON]

    def __init__(self) -> None:
        self._first = True

    def header(self, schema: pa.Schema) -> bytes:
        columns = [  # name: the rows' key (repeated names keyed apart), friendly_name: the column's name
            {"name": key, "friendly_name": f.name, "type": redash_type(f), "pg_type": pg_type(f)}
            for key, f in zip(unique_names(schema).names, schema, strict=True)
        ]
        return ('{"columns":' + json.dumps(columns, ensure_ascii=False) + ',"rows":[').encode()

    def batch(self, batch: pa.RecordBatch) -> bytes:
        if batch.num_rows == 0:
            return b""
        data = _concat(_rows(batch, ",", ""))
        if self._first:
            self._first = False
            data = data[1:]
        return data

    def footer(self, meta: dict[str, Any]) -> bytes:
        return ("]," + json.dumps(meta, ensure_ascii=False)[1:]).encode()


class NdjsonEncoder(Encoder):
    """One JSON object per line; a failure after rows were sent ends with a line ``{"error": {...}}`` (the rows
    before it are then not the whole result)."""

    media_type = MEDIA_TYPES[NDJSON]

    def batch(self, batch: pa.RecordBatch) -> bytes:
        return _concat(_rows(batch, "", "\n")) if batch.num_rows else b""

    def footer(self, meta: dict[str, Any]) -> bytes:
        return (json.dumps({"error": meta["error"]}) + "\n").encode() if "error" in meta else b""


def _csv_column(values: pa.Array, field: pa.Field) -> pa.Array:
    """A column as CSV writes it: timestamps in ISO 8601, binary as hex, nested values as JSON."""
    t = values.type
    if pa.types.is_timestamp(t):
        try:
            return _infinite(values, iso_timestamps, "")
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return _plain_text(values, field)
    if pa.types.is_date(t):
        return _infinite(values.cast(pa.date32()), lambda v: v.cast(pa.string()), "")
    if pa.types.is_floating(t) and pc.any(pc.invert(pc.is_finite(values))).as_py():
        return pc.replace_substring(_json_floats(values), '"', "")
    if pa.types.is_decimal(t):
        return decimal_text(values)
    if (
        pa.types.is_nested(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or isinstance(t, pa.BaseExtensionType)
        or pa.types.is_duration(t)
        or pa.types.is_interval(t)
        or pa.types.is_time(t)
    ):
        return _plain_text(values, field)
    return values


def _plain_text(values: pa.Array, field: pa.Field) -> pa.Array:
    """Each value's JSON text with JSON strings unquoted; NULL stays NULL."""
    text = json_values(values, field).to_pylist()
    valid = pc.is_valid(values).to_pylist()
    return pa.array(
        [
            None if not ok else (json.loads(v) if v.startswith('"') else v)
            for v, ok in zip(text, valid, strict=True)
        ],
        pa.string(),
    )


class CsvEncoder(Encoder):
    """RFC 4180 CSV with a header line; NULL is an empty field."""

    media_type = MEDIA_TYPES[CSV]

    def __init__(self) -> None:
        self._header = True

    def header(self, schema: pa.Schema) -> bytes:
        sink = io.StringIO()
        csv.writer(sink, lineterminator="\n").writerow([f.name for f in schema])
        self._header = False
        return sink.getvalue().encode()

    def batch(self, batch: pa.RecordBatch) -> bytes:
        if batch.num_rows == 0:
            return b""
        columns = [_csv_column(batch.column(i), f) for i, f in enumerate(batch.schema)]
        plain = pa.table(columns, names=[f"c{i}" for i in range(len(columns))])
        sink = io.BytesIO()
        pacsv.write_csv(plain, sink, pacsv.WriteOptions(include_header=False, quoting_style="needed"))
        return sink.getvalue()


class ArrowEncoder(Encoder):
    """The Arrow IPC stream format: schema, record batches, then an empty batch whose custom metadata says
    ``lakegate.truncated`` / ``lakegate.elapsed_ms`` / ``lakegate.route`` (HTTP headers are gone by then for a
    streamed result), and the end-of-stream marker."""

    media_type = MEDIA_TYPES[ARROW]

    def __init__(self) -> None:
        self._sink = io.BytesIO()
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._schema = pa.schema([])

    def _take(self) -> bytes:
        data = self._sink.getvalue()
        self._sink.seek(0)
        self._sink.truncate()
        return data

    def header(self, schema: pa.Schema) -> bytes:
        schema = marked(schema)  # every field says its PostgreSQL type name (lakegate.pg_type)
        self._schema = schema
        self._writer = pa.ipc.new_stream(self._sink, schema)
        return self._take()

    def batch(self, batch: pa.RecordBatch) -> bytes:
        assert self._writer is not None
        self._writer.write_batch(batch)
        return self._take()

    def footer(self, meta: dict[str, Any]) -> bytes:
        if self._writer is not None and "error" not in meta:
            trailer = {f"lakegate.{key}": json.dumps(value) for key, value in meta.items()}
            # pa.nulls, not from_pylist: pyarrow 26 cannot build an empty list of an extension type (uuid[])
            empty = pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in self._schema], schema=self._schema)
            self._writer.write_batch(empty, custom_metadata=trailer)
            self._writer.close()
        return self._take()


def encoder(fmt: str) -> Encoder:
    return {JSON: JsonEncoder, NDJSON: NdjsonEncoder, CSV: CsvEncoder, ARROW: ArrowEncoder}[fmt]()

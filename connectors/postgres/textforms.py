"""Result columns in text that the PostgreSQL route's codecs read, whatever the session's settings.

The gateway's pooled sessions keep the server's defaults for every setting that changes text output
(``DateStyle``, ``IntervalStyle``, ``bytea_output``, ``extra_float_digits``), so that a query's own casts to text
answer as in psql (issue 28.4). The codecs (:mod:`.types`, :mod:`lakegate.connectors.intervals`) read ISO dates,
ISO 8601 intervals, hex bytea and exact floats; a result column whose text differs in the session's settings is
sent through a form that does not depend on them, around the query (``COPY (SELECT <forms> FROM (<query>) ...)``),
which leaves what the query computes untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lakegate.connectors.postgres.types import Codec, ConversionError

#: the settings :func:`text_forms` takes, in its order (selected with the transaction's other settings)
STYLES = (
    "current_setting('DateStyle'), current_setting('IntervalStyle'), current_setting('bytea_output'), "
    "current_setting('extra_float_digits')"
)

#: ISO 8601 (what :mod:`lakegate.connectors.intervals` reads) from the fields, whatever ``IntervalStyle`` is
_INTERVAL = (
    "CASE WHEN isfinite({x}) THEN 'P' || extract(year FROM {x}) || 'Y' || extract(month FROM {x}) || 'M' || "
    "extract(day FROM {x}) || 'DT' || extract(hour FROM {x}) || 'H' || extract(minute FROM {x}) || 'M' || "
    "extract(second FROM {x}) || 'S' ELSE {x}::text END"
)
#: DateStyle ISO's text of dates and timestamps, whatever ``DateStyle`` is (timestamptz in UTC)
_STAMP = "CASE WHEN isfinite({x}) THEN replace(to_char({y}, '{f} BC'), ' AD', '') ELSE {x}::text END"
_DATE_FORMS = {
    "date": _STAMP.format(x="{x}", y="{x}::timestamp", f="YYYY-MM-DD"),
    "timestamp": _STAMP.format(x="{x}", y="{x}", f="YYYY-MM-DD HH24:MI:SS.US"),
    "timestamptz": _STAMP.format(x="{x}", y="{x} AT TIME ZONE 'UTC'", f='YYYY-MM-DD HH24:MI:SS.US"+00"'),
}
_BYTEA = "E'\\\\x' || encode({x}, 'hex')"
#: the IEEE 754 bits in hex, whatever ``extra_float_digits`` is (scalars only; arrays print as the server does)
_FLOATS = {"float4": "encode(float4send({x}), 'hex')", "float8": "encode(float8send({x}), 'hex')"}
#: a one-dimensional array's elements through their form (a value of more dimensions prints as it is)
_ARRAY = (
    "CASE WHEN array_ndims({x}) = 1 THEN ARRAY(SELECT {form} FROM unnest({x}) WITH ORDINALITY AS _u(e, n) "
    "ORDER BY n) ELSE {x}::text[] END"
)


def text_forms(styles: tuple[str, ...], codecs: Sequence[Codec]) -> list[str]:
    """Per result column, the SQL form (``{x}`` the value) in which its codec can read it under the session's
    ``styles`` (DateStyle, IntervalStyle, bytea_output, extra_float_digits), or '' to send it as it prints."""
    date_style, interval_style, bytea_output, digits = styles
    forms: dict[str, str] = {}
    if interval_style != "iso_8601":
        forms["interval"] = _INTERVAL
    if not date_style.upper().startswith("ISO"):
        forms.update(_DATE_FORMS)
    if bytea_output != "hex":
        forms["bytea"] = _BYTEA
    out = []
    for codec in codecs:
        kind = codec.source_type
        if kind.endswith("[]") and not kind.endswith("[][]") and kind[:-2] in forms and kind != "interval[]":
            out.append(_ARRAY.format(x="{x}", form=forms[kind[:-2]].format(x="_u.e")))
        elif kind in _FLOATS and int(digits) < 1:
            out.append(_FLOATS[kind])
        else:
            out.append(forms.get(kind, ""))
    return out


def codecs(forms: Sequence[str], codecs: Sequence[Codec]) -> list[Codec]:
    """The codecs that read ``forms`` (floats' bits; the others' forms are the text the codecs read)."""
    return [_FLOAT_CODECS.get(f, c) if f else c for f, c in zip(forms, codecs, strict=True)]


def wrap(sql: str, forms: Sequence[str]) -> str:
    """``sql`` with its columns in their ``forms``; the query runs once, as it is (``OFFSET 0``: each value
    is computed once, however often its form names it)."""
    if not any(forms):
        return sql
    names = ", ".join(f"c{i}" for i in range(len(forms)))
    select = ", ".join((f or "{x}").format(x=f"_r.c{i}") for i, f in enumerate(forms))
    return f"SELECT {select} FROM (SELECT * FROM ({sql}) AS _q OFFSET 0) AS _r({names})"


def _ieee(width: int, target: pa.DataType) -> Callable[[pa.Array], pa.Array]:
    """Hex of IEEE 754 bits (``float8send``) -> floats, NaN and infinities included."""

    def convert(values: pa.Array) -> pa.Array:
        raw = pc.fill_null(values, "0" * (2 * width)).to_pylist()
        floats = np.frombuffer(bytes.fromhex("".join(raw)), dtype=f">f{width}").astype(f"=f{width}")
        return pa.array(floats, type=target, mask=values.is_null().to_numpy(zero_copy_only=False))

    return convert


_FLOAT_CODECS = {
    _FLOATS["float4"]: Codec(pa.float32(), _ieee(4, pa.float32()), "float4"),
    _FLOATS["float8"]: Codec(pa.float64(), _ieee(8, pa.float64()), "float8"),
}


def one_dimension(convert: Callable[[pa.Array], pa.Array], name: str) -> Callable[[pa.Array], pa.Array]:
    """An expression's array column, read as one-dimensional: a value of more dimensions is refused, saying so
    (the message of a table's column asks to declare its dimensions, which an expression has none of)."""

    def checked(values: pa.Array) -> pa.Array:
        try:
            return convert(values)
        except ConversionError as exc:
            if "dimension(s)" not in str(exc):
                raise
            raise ConversionError(
                f"result column {name!r} is an array expression holding a value of more than one dimension: "
                "PostgreSQL's result does not say how many dimensions an expression's arrays have, and the "
                "gateway reads them as one-dimensional; select a table column declared with its dimensions "
                "(e.g. int[][]), or the value as text (::text)"
            ) from None

    return checked

"""The PEP 249 vocabulary of :mod:`lakegate.gateway.client`: the exception tree (and the gateway's error codes
mapped onto it), type codes and type objects, constructors, and Arrow -> Python rows. Plain and pure: no HTTP here.

Hand-written because PEP 249 prescribes these names; they are re-exported by :mod:`lakegate.gateway.client` and
``lakegate``.
"""

from __future__ import annotations

import builtins
import datetime
import decimal
import json
from typing import Any

import pyarrow as pa

NUMERIC_TEXT = b"lakegate.numeric"
#: How PostgreSQL's and DuckDB's ±infinity travel in Arrow: the largest value of the storage type and its negation.
INFINITY = {pa.int64(): 2**63 - 1, pa.int32(): 2**31 - 1}
DAY_MICROS = 86_400_000_000


# ------------------------------------------------------------------------------------------------ errors


class Warning(builtins.Warning):  # noqa: A001 - the name PEP 249 prescribes
    """Important warnings (PEP 249), such as a result cut at the gateway's row cap. A subclass of Python's
    ``Warning`` (itself an ``Exception``), so that it goes through :mod:`warnings`: shown once by default,
    silenced or turned into an exception with the usual filters."""


class Error(Exception):
    """Base of every lakegate client error. ``code``, ``line`` and ``column`` come from the gateway."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        line: int | None = None,
        column: int | None = None,
        status: int | None = None,
        request_id: str | None = None,
        sqlstate: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.line = line
        self.column = column
        self.status = status
        self.request_id = request_id
        #: the SQLSTATE: the gateway's when it sends one (PostgreSQL's own), else the class of ``code``
        self.sqlstate = sqlstate or SQLSTATES.get(code or "")


class InterfaceError(Error):
    pass


class DatabaseError(Error):
    pass


class DataError(DatabaseError):
    pass


class OperationalError(DatabaseError):
    pass


class IntegrityError(DatabaseError):
    pass


class InternalError(DatabaseError):
    pass


class ProgrammingError(DatabaseError):
    pass


class NotSupportedError(DatabaseError):
    pass


ERROR_CLASSES: dict[str, type[DatabaseError]] = {
    "syntax_error": ProgrammingError,
    "query_error": ProgrammingError,
    "forbidden": ProgrammingError,
    "not_found": ProgrammingError,
    "bad_request": ProgrammingError,
    "unsupported": NotSupportedError,
    "unauthorized": OperationalError,
    "timeout": OperationalError,
    "too_large": OperationalError,
    "client_closed": OperationalError,
    "unavailable": OperationalError,
    "internal": InternalError,
}


#: SQLSTATE of each gateway error code, as PostgreSQL would report the same failure (its errcodes appendix).
SQLSTATES: dict[str, str] = {
    "syntax_error": "42601",  # syntax_error
    "query_error": "42000",  # syntax_error_or_access_rule_violation: the engine refused the query
    "forbidden": "42501",  # insufficient_privilege
    "not_found": "42P01",  # undefined_table
    "bad_request": "08P01",  # protocol_violation: the request itself was malformed
    "unsupported": "0A000",  # feature_not_supported
    "unauthorized": "28000",  # invalid_authorization_specification
    "timeout": "57014",  # query_canceled (statement_timeout)
    "cancelled": "57014",  # query_canceled (cursor.cancel(), Ctrl-C)
    "client_closed": "57014",
    "too_large": "54000",  # program_limit_exceeded
    "truncated": "54000",
    "unavailable": "53000",  # insufficient_resources: every worker busy, or a source down
    "internal": "XX000",  # internal_error
    "data": "22000",  # data_exception: a value Python or pandas cannot hold
}


def error_from_body(status: int, body: bytes) -> Error:
    """The exception for a gateway error response (``{"error": {"code", "message", "line", "column"}}``)."""
    try:
        error = json.loads(body)["error"]
        code, message = str(error["code"]), str(error["message"])
    except (ValueError, KeyError, TypeError):
        text = body.decode("utf-8", "replace").strip()[:500]
        return InterfaceError(
            f"the server answered HTTP {status} without a lakegate error body: {text or '(empty)'}; "
            "is the URL the gateway's?",
            status=status,
        )
    cls = ERROR_CLASSES.get(code, OperationalError if status >= 500 else DatabaseError)
    return cls(
        message,
        code=code,
        line=error.get("line"),
        column=error.get("column"),
        status=status,
        request_id=error.get("request_id"),
        sqlstate=error.get("sqlstate"),
    )


# ----------------------------------------------------------------------------------- types (PEP 249)


class TypeCode(str):
    """A column's type code in ``Cursor.description``: the Arrow type's name (``int64``, ``decimal128(12, 2)``,
    ``timestamp[us, tz=UTC]``, ...; ``numeric`` for PostgreSQL's unbounded numeric, which travels as exact
    text), carrying the Arrow type itself as ``.arrow``. Compares equal to the module's type objects
    (``NUMBER``, ``STRING``, ``DATETIME``, ``BINARY``, ``ROWID``) the way PEP 249 says."""

    arrow: pa.DataType
    numeric_text: bool

    @classmethod
    def of(cls, field: pa.Field) -> TypeCode:
        is_text = numeric_text(field)
        code = cls("numeric" if is_text else str(field.type))
        code.arrow = field.type
        code.numeric_text = is_text
        return code


class DBAPITypeObject:
    def __init__(self, name: str, test: Any) -> None:
        self.name = name
        self._test = test

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TypeCode):
            return bool(self._test(other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"lakegate.{self.name}"


def _is_number(code: TypeCode) -> bool:
    t = code.arrow
    return code.numeric_text or pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _is_binary(code: TypeCode) -> bool:
    t = code.arrow
    return pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t)


def _is_datetime(code: TypeCode) -> bool:
    t = code.arrow
    return pa.types.is_timestamp(t) or pa.types.is_date(t) or pa.types.is_time(t)


NUMBER = DBAPITypeObject("NUMBER", _is_number)
BINARY = DBAPITypeObject("BINARY", _is_binary)
DATETIME = DBAPITypeObject("DATETIME", _is_datetime)
STRING = DBAPITypeObject("STRING", lambda c: not (_is_number(c) or _is_binary(c) or _is_datetime(c)))
ROWID = DBAPITypeObject("ROWID", lambda c: False)

Date = datetime.date
Time = datetime.time
Timestamp = datetime.datetime
Binary = bytes


def DateFromTicks(ticks: float) -> datetime.date:  # noqa: N802 - PEP 249 names
    return datetime.date.fromtimestamp(ticks)


def TimeFromTicks(ticks: float) -> datetime.time:  # noqa: N802
    return datetime.datetime.fromtimestamp(ticks).time()


def TimestampFromTicks(ticks: float) -> datetime.datetime:  # noqa: N802
    return datetime.datetime.fromtimestamp(ticks)


def describe(schema: pa.Schema) -> list[tuple[Any, ...]]:
    """``Cursor.description`` for an Arrow schema: (name, type_code, display_size, internal_size, precision,
    scale, null_ok)."""
    out = []
    for field in schema:
        t = field.type
        precision = t.precision if pa.types.is_decimal(t) else None
        scale = t.scale if pa.types.is_decimal(t) else None
        out.append((field.name, TypeCode.of(field), None, None, precision, scale, field.nullable))
    return out


def numeric_text(field: pa.Field) -> bool:
    """PostgreSQL ``numeric`` without precision travels as exact text, marked in the field's metadata."""
    return bool(field.metadata and field.metadata.get(NUMERIC_TEXT))


def _column_values(column: pa.Array, field: pa.Field) -> list[Any]:
    """Python values of a column (see :func:`check_times` and :func:`temporal_values` for the values Python's
    types cannot hold)."""
    if numeric_text(field):
        return [None if v is None else decimal.Decimal(v) for v in column.to_pylist()]
    t = column.type
    if pa.types.is_timestamp(t) or t == pa.date32():
        return temporal_values(column, field)
    check_times(column, field)
    try:
        return column.to_pylist()
    except (ValueError, OverflowError, pa.ArrowException) as exc:
        raise _unholdable(field, exc) from exc


def _unholdable(field: pa.Field, exc: Exception) -> DataError:
    return DataError(
        f"column {field.name!r} ({field.type}) has a value Python cannot hold ({exc}); select it as text "
        f'("{field.name}"::text) or read the result with to_arrow(), which keeps it',
        code="data",
    )


def infinities(column: pa.Array) -> tuple[pa.Array, pa.Array] | None:
    """Masks of +infinity and -infinity in a timestamp or date32 column, or None when it has neither."""
    import pyarrow.compute as pc  # here, not at the top: ~50 ms of start-up that a query without times never needs

    storage = pa.int64() if pa.types.is_timestamp(column.type) else pa.int32()
    raw = column.cast(storage)
    top = INFINITY[storage]
    positive, negative = pc.equal(raw, top), pc.less_equal(raw, -top)
    if not (pc.any(positive).as_py() or pc.any(negative).as_py()):
        return None
    return positive, negative


def temporal_values(column: pa.Array, field: pa.Field) -> list[Any]:
    """Timestamps and dates; PostgreSQL's ``infinity`` and ``-infinity`` become ``datetime.max`` and
    ``datetime.min`` (``date.max``/``date.min``; UTC-aware for ``timestamptz``), psycopg's documented recipe,
    so that the column keeps one type. Any other value beyond Python's years 1-9999 is a :class:`DataError`."""
    masks = infinities(column)
    if masks is None:
        try:
            return column.to_pylist()
        except (ValueError, OverflowError, pa.ArrowException) as exc:
            raise _unholdable(field, exc) from exc
    positive, negative = masks
    import pyarrow.compute as pc

    finite = pc.if_else(pc.or_(positive, negative), pa.scalar(None, column.type), column)
    try:
        values = finite.to_pylist()
    except (ValueError, OverflowError, pa.ArrowException) as exc:
        raise _unholdable(field, exc) from exc
    top, bottom = _extremes(column.type)
    for i, (pos, neg) in enumerate(zip(positive.to_pylist(), negative.to_pylist(), strict=True)):
        if pos:
            values[i] = top
        elif neg:
            values[i] = bottom
    return values


class InfiniteDatetime(datetime.datetime):
    """PostgreSQL's ``infinity``/``-infinity`` timestamp: equal to ``datetime.max``/``datetime.min`` (psycopg's
    recipe), printed as PostgreSQL prints it."""

    def __str__(self) -> str:
        return "infinity" if self.year == datetime.MAXYEAR else "-infinity"


class InfiniteDate(datetime.date):
    """PostgreSQL's ``infinity``/``-infinity`` date: equal to ``date.max``/``date.min``, printed as PostgreSQL."""

    def __str__(self) -> str:
        return "infinity" if self.year == datetime.MAXYEAR else "-infinity"


def _extremes(t: pa.DataType) -> tuple[Any, Any]:
    if pa.types.is_date(t):
        top, bottom = datetime.date.max, datetime.date.min
        return InfiniteDate(top.year, top.month, top.day), InfiniteDate(bottom.year, bottom.month, bottom.day)
    tz = datetime.UTC if t.tz else None  # type: ignore[attr-defined]
    hi, lo = datetime.datetime.max, datetime.datetime.min
    return (
        InfiniteDatetime(hi.year, hi.month, hi.day, hi.hour, hi.minute, hi.second, hi.microsecond, tzinfo=tz),
        InfiniteDatetime(lo.year, lo.month, lo.day, tzinfo=tz),
    )


def check_times(column: pa.Array, field: pa.Field) -> None:
    """PostgreSQL's ``time '24:00'`` has no ``datetime.time`` (Arrow would wrap it round to 00:00): a clear
    :class:`DataError` instead of a wrong value."""
    if not pa.types.is_time(column.type) or not len(column):
        return
    import pyarrow.compute as pc

    unit = {"s": 1_000_000, "ms": 1000, "us": 1, "ns": 0.001}[column.type.unit]
    largest = pc.max(column.cast(pa.int64())).as_py()
    if largest is not None and largest * unit >= DAY_MICROS:
        raise DataError(
            f"column {field.name!r} has the time 24:00:00, which Python's datetime.time cannot hold; select it "
            f'as text ("{field.name}"::text) or as an interval ("{field.name}" - time \'00:00\'), or read the '
            "result with to_arrow(), which keeps it (86400 seconds after midnight)",
            code="data",
        )


def batch_rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    if not batch.num_columns:
        return []
    columns = [_column_values(c, f) for c, f in zip(batch.columns, batch.schema, strict=True)]
    return list(zip(*columns, strict=True))

"""The PEP 249 vocabulary of :mod:`lakegate.gateway.client`: the exception tree (and the gateway's error codes
mapped onto it), type codes and type objects, constructors, and Arrow -> Python rows. Plain and pure: no HTTP here.

Hand-written because PEP 249 prescribes these names; they are re-exported by :mod:`lakegate.gateway.client` and
``lakegate``.
"""

from __future__ import annotations

import datetime
import decimal
import json
from typing import Any

import pyarrow as pa

NUMERIC_TEXT = b"lakegate.numeric"


# ------------------------------------------------------------------------------------------------ errors


class Warning(Exception):  # noqa: A001 - the name PEP 249 prescribes
    """Important warnings (PEP 249). lakegate raises none today."""


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
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.line = line
        self.column = column
        self.status = status
        self.request_id = request_id


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
    """Python values of a column; values Python cannot hold (e.g. infinite timestamps) become their text."""
    if numeric_text(field):
        return [None if v is None else decimal.Decimal(v) for v in column.to_pylist()]
    try:
        return column.to_pylist()
    except (ValueError, OverflowError, pa.ArrowException):
        return column.cast(pa.string()).to_pylist()


def batch_rows(batch: pa.RecordBatch) -> list[tuple[Any, ...]]:
    if not batch.num_columns:
        return []
    columns = [_column_values(c, f) for c, f in zip(batch.columns, batch.schema, strict=True)]
    return list(zip(*columns, strict=True))

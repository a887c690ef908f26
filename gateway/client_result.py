"""A whole query result of :mod:`lakegate.gateway.client`: the Arrow table, and pandas with exact types."""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from lakegate.gateway.client_types import (
    DataError,
    Error,
    check_times,
    infinities,
    numeric_text,
    temporal_values,
)

if TYPE_CHECKING:
    import pandas


@dataclass
class Result:
    """A whole query result. ``truncated`` is None when the gateway could not say (see the README)."""

    table: pa.Table
    route: str | None
    truncated: bool | None
    elapsed_ms: float | None

    def to_arrow(self) -> pa.Table:
        return self.table

    def to_pandas(self, *, arrow_dtypes: bool = False, **kwargs: Any) -> pandas.DataFrame:
        """A DataFrame. By default decimals are ``Decimal`` objects, ``timestamptz`` is
        ``datetime64[us, UTC]`` and dates are ``datetime.date`` objects (``numeric`` without precision, which
        travels as exact text, becomes ``Decimal`` too); ``arrow_dtypes=True`` keeps every column's Arrow type
        (``pd.ArrowDtype``). Other keyword arguments go to ``pyarrow.Table.to_pandas``.

        PostgreSQL's ``infinity``/``-infinity`` timestamps become the largest and smallest ``datetime64[us]``
        (year 294247 and its negative: what they are in Arrow), dates ``date.max``/``date.min``; a
        ``time '24:00'`` raises :class:`DataError`. Conversion failures are lakegate errors."""
        try:
            if arrow_dtypes:
                import pandas as pd

                kwargs.setdefault("types_mapper", pd.ArrowDtype)
                return self.table.to_pandas(**kwargs)
            table, python = self.table, self._python_columns()
            for i in python:  # Python values go in after the conversion (e.g. date.max, beyond pandas)
                table = table.set_column(i, table.field(i), pa.nulls(len(table), table.field(i).type))
            frame = table.to_pandas(**kwargs)
            for i, values in python.items():
                frame.isetitem(i, values)
            return frame
        except (pa.ArrowException, ValueError, OverflowError, TypeError) as exc:
            if isinstance(exc, Error):
                raise
            raise DataError(
                f"the result could not be converted to pandas ({type(exc).__name__}: {exc}); "
                "to_pandas(arrow_dtypes=True) or to_arrow() keep every value",
                code="data",
            ) from exc

    def _python_columns(self) -> dict[int, list[Any]]:
        """Columns pandas gets as Python objects of ours: exact numerics as ``Decimal``, dates with
        ±infinity; and a ``time '24:00'`` refused."""
        out: dict[int, list[Any]] = {}
        for i, field in enumerate(self.table.schema):
            column = self.table.column(i).combine_chunks()
            check_times(column, field)
            if numeric_text(field):  # exact text of an unbounded numeric -> Decimal
                out[i] = [None if v is None else decimal.Decimal(v) for v in column.to_pylist()]
            elif field.type == pa.date32() and len(column) and infinities(column) is not None:
                out[i] = temporal_values(column, field)
        return out

    def __len__(self) -> int:
        return self.table.num_rows

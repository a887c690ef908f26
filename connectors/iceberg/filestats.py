"""The statistics of a written Parquet data file for its manifest entry: what pyiceberg's
``data_file_statistics_from_parquet_metadata(...).to_serialized_dict()`` returns, computed with less Python.

For each file pyiceberg builds a statistics aggregator per column (a physical-type check through its schema
visitor), converts every min/max through pyarrow's Python scalars (timestamps through time-zone objects), and
compares types and truncates through pydantic models and singletons: about half the CPU of writing a small data
file, and a flush writes two per table (issue 11.16). Here the per-column decisions (metrics mode, how a bound is
encoded) are taken once per statistics plan, and the common types read their raw Parquet bounds:

- booleans, ints, longs, floats, doubles, dates, and times / timestamps stored in microseconds: the raw value,
  encoded by pyiceberg's own ``to_bytes``;
- decimals stored as INT32/INT64 (lakegate writes ``store_decimal_as_integer``): the unscaled raw value made a
  ``Decimal`` as pyiceberg does;
- strings: pyarrow's decoded value, truncated as pyiceberg truncates (``truncate(16)`` by default).

Every other column (binary, UUID, fixed, wide decimals, nested leaves, an unexpected physical or logical type) is
handled by pyiceberg's own ``StatsAggregator``, exactly as its function does. ``tests/test_datafiles.py`` compares
the two on files of every supported type, with nulls, NaNs, long and non-ASCII strings and several row groups.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow
import pyarrow.parquet as pq
from pyiceberg.conversions import to_bytes
from pyiceberg.io.pyarrow import MetricModeTypes, StatisticsCollector, StatsAggregator
from pyiceberg.types import (
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    PrimitiveType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
)
from pyiceberg.utils.decimal import unscaled_to_decimal
from pyiceberg.utils.truncate import truncate_upper_bound_text_string

log = logging.getLogger(__name__)

_RAW = {  # iceberg type -> the Parquet physical type whose raw bound is the value pyiceberg encodes
    BooleanType: "BOOLEAN",
    IntegerType: "INT32",
    LongType: "INT64",
    FloatType: "FLOAT",
    DoubleType: "DOUBLE",
    DateType: "INT32",
    TimeType: "INT64",
    TimestampType: "INT64",
    TimestamptzType: "INT64",
}
_MICROS = (TimeType, TimestampType, TimestamptzType)  #: raw only when stored in microseconds


@dataclass(frozen=True)
class _Column:
    field_id: int
    collector: StatisticsCollector
    counts_only: bool  #: counts mode: no bounds
    kind: str  #: "raw", "decimal", "string" or "generic" (pyiceberg's aggregator)
    physical: str  #: the physical type the fast kinds expect
    trunc: int | None


@dataclass(frozen=True)
class Plan:
    """Per Parquet column path: what to collect (``None``: metrics mode ``none``, sizes only)."""

    columns: dict[str, tuple[int, _Column | None]]


def plan(stats_columns: dict[int, StatisticsCollector], mapping: dict[str, int]) -> Plan:
    """Digest pyiceberg's statistics plan (``compute_statistics_plan``) and column mapping once."""
    columns: dict[str, tuple[int, _Column | None]] = {}
    for path, field_id in mapping.items():
        collector = stats_columns[field_id]
        mode = collector.mode.type
        if mode == MetricModeTypes.NONE:
            columns[path] = (field_id, None)
            continue
        kind, physical = _kind(collector.iceberg_type)
        columns[path] = (
            field_id,
            _Column(
                field_id, collector, mode == MetricModeTypes.COUNTS, kind, physical, collector.mode.length
            ),
        )
    return Plan(columns)


def _kind(typ: PrimitiveType) -> tuple[str, str]:
    if type(typ) in _RAW:
        return "raw", _RAW[type(typ)]
    if isinstance(typ, DecimalType):
        return "decimal", "INT32" if typ.precision <= 9 else "INT64"
    if isinstance(typ, StringType):
        return "string", "BYTE_ARRAY"
    return "generic", ""


def statistics(metadata: pq.FileMetaData, file_plan: Plan) -> dict[str, Any]:
    """``data_file_statistics_from_parquet_metadata(metadata, ...).to_serialized_dict()``."""
    sizes: dict[int, int] = {}
    values: dict[int, int] = {}
    nulls: dict[int, int] = {}
    split_offsets: list[int] = []
    bounds: dict[int, list[Any]] = {}  #: field id -> [min, max] (fast kinds)
    generic: dict[int, StatsAggregator] = {}
    invalid: set[int] = set()
    micros: dict[int, bool] = {}
    for r in range(metadata.num_row_groups):
        group = metadata.row_group(r)
        first = group.column(0)
        data_offset, dictionary_offset = first.data_page_offset, first.dictionary_page_offset
        use_dictionary = first.has_dictionary_page and dictionary_offset < data_offset
        split_offsets.append(dictionary_offset if use_dictionary else data_offset)
        for pos in range(metadata.num_columns):
            column = group.column(pos)
            field_id, col = file_plan.columns[column.path_in_schema]
            sizes[field_id] = sizes.get(field_id, 0) + column.total_compressed_size
            if col is None:
                continue
            values[field_id] = values.get(field_id, 0) + column.num_values
            if not column.is_stats_set:
                invalid.add(field_id)
                log.warning("PyArrow statistics missing for column %d when writing file", pos)
                continue
            try:
                stats = column.statistics
                if stats.has_null_count:
                    nulls[field_id] = nulls.get(field_id, 0) + stats.null_count
                if col.counts_only:
                    continue
                kind = col.kind
                if kind != "generic" and stats.physical_type != col.physical:
                    kind = "generic"
                elif kind == "raw" and isinstance(col.collector.iceberg_type, _MICROS):
                    if field_id not in micros:
                        micros[field_id] = (
                            "microseconds" in metadata.schema.column(pos).logical_type.to_json()
                        )
                    kind = "raw" if micros[field_id] else "generic"
                if kind == "generic" or field_id in generic:
                    _generic(generic, field_id, col, stats)
                    continue
                if kind == "string":
                    low, high = stats.min, stats.max
                else:
                    low, high = stats.min_raw, stats.max_raw
                    if kind == "decimal":
                        scale = col.collector.iceberg_type.scale  # type: ignore[attr-defined]
                        low = unscaled_to_decimal(low, scale) if low is not None else None
                        high = unscaled_to_decimal(high, scale) if high is not None else None
                _update(bounds, field_id, low, high)
            except pyarrow.lib.ArrowNotImplementedError as exc:
                invalid.add(field_id)
                log.warning(exc)
    split_offsets.sort()
    for field_id in invalid:
        bounds.pop(field_id, None)
        generic.pop(field_id, None)
        nulls.pop(field_id, None)
    lower, upper = _encode(bounds, generic, file_plan)
    return {
        "record_count": metadata.num_rows,
        "column_sizes": sizes,
        "value_counts": values,
        "null_value_counts": nulls,
        "nan_value_counts": {},
        "lower_bounds": lower,
        "upper_bounds": upper,
        "split_offsets": split_offsets,
    }


def _generic(generic: dict[int, StatsAggregator], field_id: int, col: _Column, stats: Any) -> None:
    """One column chunk through pyiceberg's aggregator, as its function does."""
    collector = col.collector
    if field_id not in generic:
        try:
            generic[field_id] = StatsAggregator(
                collector.iceberg_type, stats.physical_type, collector.mode.length
            )
        except ValueError as exc:
            raise ValueError(f"{exc} for column '{collector.column_name}'") from exc
    aggregator = generic[field_id]
    typ = collector.iceberg_type
    if isinstance(typ, DecimalType) and stats.physical_type != "FIXED_LEN_BYTE_ARRAY":
        if stats.min_raw is not None:
            aggregator.update_min(unscaled_to_decimal(stats.min_raw, typ.scale))
        if stats.max_raw is not None:
            aggregator.update_max(unscaled_to_decimal(stats.max_raw, typ.scale))
    else:
        aggregator.update_min(stats.min)
        aggregator.update_max(stats.max)


def _update(bounds: dict[int, list[Any]], field_id: int, low: Any, high: Any) -> None:
    known = bounds.get(field_id)
    if known is None:
        bounds[field_id] = [low, high]
        return
    if low is not None:
        known[0] = low if known[0] is None else min(low, known[0])
    if high is not None:
        known[1] = high if known[1] is None else max(high, known[1])


def _encode(
    bounds: dict[int, list[Any]], generic: dict[int, StatsAggregator], file_plan: Plan
) -> tuple[dict[int, bytes], dict[int, bytes]]:
    """Lower and upper bounds as pyiceberg's ``StatsAggregator.min_as_bytes`` / ``max_as_bytes`` encode them, in
    the order its aggregators were created (the order of the columns in the file)."""
    lower: dict[int, bytes] = {}
    upper: dict[int, bytes] = {}
    by_id = {col.field_id: col for _, col in file_plan.columns.values() if col is not None}
    for field_id in sorted({*bounds, *generic}, key=_first_seen(file_plan)):
        if field_id in generic:
            low, high = generic[field_id].min_as_bytes(), generic[field_id].max_as_bytes()
        else:
            low, high = _encode_bounds(by_id[field_id], *bounds[field_id])
        if low is not None:
            lower[field_id] = low
        if high is not None:
            upper[field_id] = high
    return lower, upper


def _first_seen(file_plan: Plan) -> Callable[[int], int]:
    order = {field_id: n for n, (field_id, _) in enumerate(file_plan.columns.values())}
    return lambda field_id: order.get(field_id, len(order))


def _encode_bounds(col: _Column, low: Any, high: Any) -> tuple[bytes | None, bytes | None]:
    typ = col.collector.iceberg_type
    if col.kind == "string":
        if low is not None:
            low = to_bytes(typ, low[: col.trunc] if col.trunc is not None else low)
        if high is not None:
            truncated = truncate_upper_bound_text_string(high, col.trunc)
            high = to_bytes(typ, truncated) if truncated is not None else None
        return low, high
    return (
        to_bytes(typ, low) if low is not None else None,
        to_bytes(typ, high) if high is not None else None,
    )

"""PostgreSQL intervals in their ISO 8601 form (``IntervalStyle = iso_8601``: ``P1Y2M3DT4H5M6.5S``, ``P-3M``,
``PT0S``) <-> Arrow's month-day-nanosecond intervals, both ways, value by value.

PostgreSQL keeps an interval as months, days and microseconds, each with its own sign; so does Arrow's
``month_day_nano_interval`` and DuckDB's ``INTERVAL``, and so does this text. Written by hand: neither Arrow nor
DuckDB reads or writes PostgreSQL's ISO 8601 intervals.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pyarrow as pa

_ISO = re.compile(
    r"P(?:(?P<Y>-?\d+)Y)?(?:(?P<M>-?\d+)M)?(?:(?P<W>-?\d+)W)?(?:(?P<D>-?\d+)D)?"
    r"(?:T(?:(?P<h>-?\d+)H)?(?:(?P<m>-?\d+)M)?(?:(?P<s>-?\d+(?:\.\d+)?)S)?)?"
)


class Infinite(ValueError):
    """An infinite interval, which Arrow's month-day-nanosecond interval cannot hold."""


def parse(text: str) -> tuple[int, int, int]:
    """ISO 8601 interval text -> (months, days, microseconds); ValueError for anything else."""
    match = _ISO.fullmatch(text.strip())
    if text.strip() in (
        "infinity",
        "-infinity",
    ):  # PostgreSQL 17's infinite intervals: no Arrow value holds one
        raise Infinite(f"the interval {text.strip()} (PostgreSQL 17) has no value in Arrow's interval type")
    if not match or text.strip() in ("P", "PT"):
        raise ValueError(f"{text!r} is not an ISO 8601 interval")
    g = {k: v or "0" for k, v in match.groupdict().items()}
    months = int(g["Y"]) * 12 + int(g["M"])
    days = int(g["W"]) * 7 + int(g["D"])
    micros = (int(g["h"]) * 3600 + int(g["m"]) * 60) * 1_000_000 + int(Decimal(g["s"]) * 1_000_000)
    return months, days, micros


def text(months: int, days: int, micros: int) -> str:
    """(months, days, microseconds) -> PostgreSQL's ISO 8601 text of that interval."""
    years, months = (
        abs(months) // 12 * (1 if months >= 0 else -1),
        abs(months) % 12 * (1 if months >= 0 else -1),
    )
    out = "P"
    out += f"{years}Y" if years else ""
    out += f"{months}M" if months else ""
    out += f"{days}D" if days else ""
    if micros:
        sign = -1 if micros < 0 else 1
        hours, rest = divmod(abs(micros), 3_600_000_000)
        minutes, rest = divmod(rest, 60_000_000)
        seconds, fraction = divmod(rest, 1_000_000)
        out += "T"
        out += f"{sign * hours}H" if hours else ""
        out += f"{sign * minutes}M" if minutes else ""
        if seconds or fraction:
            digits = f".{fraction:06d}".rstrip("0") if fraction else ""
            out += f"{'-' if sign < 0 else ''}{seconds}{digits}S"
    return "PT0S" if out == "P" else out


def to_arrow(values: pa.Array) -> pa.Array:
    """A string array of ISO 8601 intervals -> ``month_day_nano_interval``."""
    out: list[pa.MonthDayNano | None] = []
    for value in values.to_pylist():
        if value is None:
            out.append(None)
            continue
        months, days, micros = parse(value)
        out.append(pa.MonthDayNano([months, days, micros * 1000]))
    return pa.array(out, type=pa.month_day_nano_interval())


def from_arrow(values: pa.Array) -> pa.Array:
    """``month_day_nano_interval`` -> a string array of ISO 8601 intervals."""
    return pa.array(
        [None if v is None else text(v.months, v.days, v.nanoseconds // 1000) for v in values.to_pylist()],
        type=pa.string(),
    )

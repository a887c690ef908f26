"""How ``lakegate sql`` shows results: psql's aligned tables (and ``\\x`` expanded records), CSV and JSON, and
errors with the line and a caret under the column.

Hand-written rather than a table library so that the output matches psql's closely enough for muscle memory:
numbers right-aligned, text left-aligned, ``+`` at the end of a cell that continues on the next line, NULL as
an empty cell, booleans as ``t``/``f``, a ``(N rows)`` footer and an empty line after it.
"""

from __future__ import annotations

import csv
import datetime
import decimal
import json
import math
import uuid
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from lakegate.gateway.client import NUMBER
from lakegate.gateway.client_types import InfiniteDate, InfiniteDatetime

ALIGNED, CSV, JSON = "aligned", "csv", "json"
FORMATS = (ALIGNED, CSV, JSON)


def text(value: Any) -> str:
    """A value as psql would print it."""
    if value is None:
        return ""
    if type(value).__name__ == "MonthDayNano":  # pyarrow's interval value (a named tuple, not an array)
        return interval_text(*value)
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return repr(value)
    if isinstance(value, InfiniteDatetime | InfiniteDate):
        return str(value)  # infinity, -infinity
    if isinstance(value, datetime.datetime):
        return _timestamp(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else str(value)
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, list | tuple):
        return "{" + ",".join("NULL" if v is None else _array_item(v) for v in value) + "}"
    if isinstance(value, dict):
        return json.dumps(value, default=str, ensure_ascii=False)
    return str(value)


def _timestamp(value: datetime.datetime) -> str:
    """ISO 8601 with a space, and the offset as psql shows it (``+00``, ``+05:30``)."""
    out = value.isoformat(sep=" ")
    offset = value.utcoffset()
    if offset is not None and offset.seconds % 3600 == 0 and out.endswith(":00"):
        out = out[:-3]
    return out


def _array_item(value: Any) -> str:
    item = text(value)
    if item == "" or any(c in item for c in ' ,{}"\\') or item.upper() == "NULL":
        return '"' + item.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return item


def _width(s: str) -> int:
    return len(s)


def footer(count: int) -> str:
    return f"({count} row{'' if count == 1 else 's'})"


def aligned(
    out: TextIO, names: Sequence[str], numeric: Sequence[bool], rows: Sequence[Sequence[Any]], title: str = ""
) -> None:
    """psql's aligned table."""
    cells = [[text(v).split("\n") for v in row] for row in rows]
    widths = [_width(n) for n in names]
    for row in cells:
        for i, lines in enumerate(row):
            widths[i] = max(widths[i], *(_width(line) for line in lines))
    total = sum(widths) + 3 * len(widths) - 1
    if title:
        out.write(_center(title, total).rstrip() + "\n")
    out.write("|".join(f" {_center(n, w)} " for n, w in zip(names, widths, strict=True)).rstrip() + "\n")
    out.write("+".join("-" * (w + 2) for w in widths) + "\n")
    for row in cells:
        height = max((len(lines) for lines in row), default=1)
        for k in range(height):
            parts = []
            for i, lines in enumerate(row):
                piece = lines[k] if k < len(lines) else ""
                mark = "+" if k < len(lines) - 1 else " "
                padded = piece.rjust(widths[i]) if numeric[i] else piece.ljust(widths[i])
                parts.append(f" {padded}{mark}")
            out.write("|".join(parts).rstrip() + "\n")
    out.write(footer(len(rows)) + "\n\n")


def expanded(out: TextIO, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """psql's ``\\x`` display: one block per record."""
    if not rows:
        out.write("(0 rows)\n\n")
        return
    name_width = max(_width(n) for n in names)
    value_width = max((_width(line) for row in rows for v in row for line in text(v).split("\n")), default=0)
    for number, row in enumerate(rows, 1):
        out.write(record_header(number, name_width, value_width) + "\n")
        for name, value in zip(names, row, strict=True):
            lines = text(value).split("\n")
            for k, line in enumerate(lines):
                label = name if k == 0 else ""
                mark = "+" if k < len(lines) - 1 else ""
                out.write(f"{label.ljust(name_width)} | {line}{mark}".rstrip() + "\n")
    out.write("\n")


def record_header(number: int, name_width: int, value_width: int) -> str:
    """psql's ``-[ RECORD n ]----+----`` line (its border-1 rule, where the ``+`` appears only when the label
    is shorter than the names' column)."""
    line = f"-[ RECORD {number} ]"
    used = len(line) + 1
    line += "-" * max(0, name_width - used)
    used -= name_width
    for ch in "-+-":
        if used <= 0:
            line += ch
        used -= 1
    return line + "-" * max(0, value_width - max(used, 0))


def _center(value: str, width: int) -> str:
    """Centred like psql: the odd space goes to the right."""
    left = (width - _width(value)) // 2
    return " " * left + value + " " * (width - _width(value) - left)


def csv_rows(out: TextIO, names: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]]) -> int:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    count = 0
    for rows in batches:
        writer.writerows([text(v) for v in row] for row in rows)
        count += len(rows)
    return count


def json_value(value: Any) -> Any:
    """A value for JSON output: exact numbers stay numbers (decimals as their text), times in ISO 8601."""
    if isinstance(value, decimal.Decimal):
        return _Raw(format(value, "f")) if value.is_finite() else str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return text(value)
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, bytes):
        return "\\x" + value.hex()
    if isinstance(value, uuid.UUID | datetime.timedelta):
        return str(value)
    if type(value).__name__ == "MonthDayNano":
        return interval_text(*value)
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    return value


class _Raw(str):
    """A number's exact text, written into JSON as it is (decimals never pass through a float)."""


def _dumps(value: Any) -> str:
    if isinstance(value, _Raw):
        return str(value)
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(f"{json.dumps(k, ensure_ascii=False)}: {_dumps(v)}" for k, v in value.items())
            + "}"
        )
    if isinstance(value, list):
        return "[" + ", ".join(_dumps(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, default=str)


def json_rows(out: TextIO, names: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]]) -> int:
    """A JSON array of row objects, one row per line; a repeated column name is keyed apart (``a``, ``a_2``),
    as the gateway's json format keys it."""
    count = 0
    keys = json_keys(names)
    out.write("[")
    for rows in batches:
        for row in rows:
            record = {k: json_value(v) for k, v in zip(keys, row, strict=True)}
            out.write(("\n" if count == 0 else ",\n") + _dumps(record))
            count += 1
    out.write("\n]\n" if count else "]\n")
    return count


def json_keys(names: Sequence[str]) -> list[str]:
    """Column names as keys of a JSON object: the second ``a`` is ``a_2`` (the result keeps PostgreSQL's
    names, repeated ones too)."""
    seen: dict[str, int] = {}
    keys = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        keys.append(name if seen[name] == 1 else f"{name}_{seen[name]}")
    return keys


def numeric_columns(description: Sequence[Sequence[Any]]) -> list[bool]:
    return [column[1] == NUMBER for column in description]


def error_lines(
    message: str, code: str | None, line: int | None, column: int | None, sql: str | None
) -> list[str]:
    """``ERROR:  ...`` and, when the position is known, psql's ``LINE n: ...`` with a caret under the
    column."""
    lines = [f"ERROR:  {code + ': ' if code else ''}{message}"]
    if sql is None or not line or not column:
        return lines
    source = sql.split("\n")
    if not 1 <= line <= len(source):
        return lines
    text_line = source[line - 1].replace("\t", " ")
    col = min(max(column, 1), len(text_line) + 1)  # the gateway reports where the offending token starts
    prefix = f"LINE {line}: "
    lines.append(prefix + text_line)
    lines.append(" " * (len(prefix) + col - 1) + "^")
    return lines


def interval_text(months: int, days: int, nanoseconds: int) -> str:
    """An interval as PostgreSQL prints it (IntervalStyle ``postgres``): ``1 year 2 mons 3 days 04:05:06.5``,
    each part with its own sign, ``+`` on a positive part after a negative one (``-1 days +02:00:00``)."""
    parts: list[str] = []
    negative_seen = False

    def signed(value: int, text: str) -> str:
        nonlocal negative_seen
        sign = "+" if negative_seen and value > 0 else ""
        negative_seen = negative_seen or value < 0
        return sign + text

    years, mons = int(months / 12), months - int(months / 12) * 12  # both take the sign of months
    for value, unit in ((years, "year"), (mons, "mon"), (days, "day")):
        if value:
            parts.append(signed(value, f"{value} {unit}{'' if value == 1 else 's'}"))
    micros = int(nanoseconds / 1000)
    if micros or not parts:
        total = abs(micros)
        hours, rest = divmod(total, 3_600_000_000)
        minutes, rest = divmod(rest, 60_000_000)
        seconds, fraction = divmod(rest, 1_000_000)
        clock = f"{hours:02d}:{minutes:02d}:{seconds:02d}" + (
            f".{fraction:06d}".rstrip("0") if fraction else ""
        )
        parts.append(signed(micros, ("-" if micros < 0 else "") + clock))
    return " ".join(parts)

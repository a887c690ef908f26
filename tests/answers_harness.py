"""The differential harness: one query, three ways — psycopg on PostgreSQL, the gateway on ``pg.*``, the
gateway on ``lake.*`` — compared as strictly as a user sees them: column names, PostgreSQL type names and
values.

Corpus files (``tests/answers/*.sql``) hold one query per line (``--`` starts a comment line); ``{name}``
stands for a table of the data set and becomes ``public.name``, ``pg.public.name`` or ``lake.public.name``. A
query with ORDER BY at its top level is compared in order, any other as a multiset.

Outcomes per route: ``identical`` (the same column names as psycopg's ``cursor.description`` —
``?column?`` and repeated names included —, the same PostgreSQL type names and the same values: numerics with
their scale, floats exactly, timestamptz as the instant and the offset shown, no ``'42'`` for ``42`` nor
``true`` for ``1``; or PostgreSQL raised an error and the gateway answered 400 with the same SQLSTATE), ``refused``
(PostgreSQL answered, the gateway answered 400 with SQLSTATE 0A000 and its own words naming what it cannot
translate exactly — never an engine's raw error — and the refusal is pinned in
``tests/answers/refusals.txt``), ``differing`` (anything else, an unpinned refusal, or a pinned refusal now
answered identically: the suite fails).
"""

from __future__ import annotations

import datetime
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pyarrow as pa
import sqlglot
from psycopg.types.datetime import DateLoader, TimestampLoader, TimestamptzLoader
from psycopg.types.string import TextLoader
from sqlglot import exp

from lakegate.gateway.encoders import json_values
from tests.answers_refusals import KNOWN, PINNED, Pin, read_pins, suggestion, words

CORPUS = Path(__file__).parent / "answers"  # the same as tests.answers_refusals.CORPUS
IDENTICAL, REFUSED, DIFFERING = "identical", "refused", "differing"
KNOWN_DIFFERENCE = "known difference"  #: pinned in tests/answers/differences.txt (issue 28: to fix)
#: PostgreSQL type names that one gateway type name stands for (the lake has no varchar(n) or char(n))
_SAME_TYPE = {"varchar": "text", "bpchar": "text", "name": "text", "unknown": "text", "jsonb": "json"}


@dataclass(frozen=True)
class Query:
    file: str
    line: int
    template: str

    def on(self, schema: str, tables: set[str]) -> str:
        return re.sub(
            r"\{(\w+)\}",
            lambda m: f"{schema}.{m.group(1)}" if m.group(1) in tables else m.group(0),
            self.template,
        )

    def federated(self, swap: bool = False) -> str:
        """A federated query (``federated.sql``): ``{pg:x}`` a PostgreSQL table and ``{lake:x}`` a lake table,
        or the other way round (``swap``)."""
        sides = {"pg": "lake", "lake": "pg"} if swap else {"pg": "pg", "lake": "lake"}
        return re.sub(
            r"\{(pg|lake):(\w+)\}", lambda m: f"{sides[m.group(1)]}.public.{m.group(2)}", self.template
        )

    @property
    def plain(self) -> str:
        """A federated query as PostgreSQL runs it (every table its own)."""
        return re.sub(r"\{(?:pg|lake):(\w+)\}", r"public.\1", self.template)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


def read_corpus(names: list[str]) -> list[Query]:
    out = []
    for name in names:
        path = CORPUS / name
        for number, raw in enumerate(path.read_text().splitlines(), 1):
            text = raw.strip()
            if text and not text.startswith("--"):
                out.append(Query(name, number, text))
    return out


def ordered(sql: str) -> bool:
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return False
    return isinstance(tree, exp.Query) and tree.args.get("order") is not None


#: how an unordered aggregate's value is compared as a multiset: "array" (its elements), "json" (the members of
#: a json array or object, each by its exact text), "text:<separator>" (the values string_agg joined)
Unordered = dict[int, str]


def unordered_columns(sql: str) -> Unordered:
    """The result columns of ``sql`` that are an aggregate listing its input in an order PostgreSQL leaves
    unspecified (the plan's: heap order, changed by UPDATE and VACUUM): ``array_agg``, ``string_agg`` (with a
    literal separator), ``json(b)_agg`` and ``json_object_agg`` without ORDER BY or DISTINCT inside (DISTINCT
    sorts), as a select-list item of the top-level SELECT, also with FILTER or over a window without ORDER BY.
    Only these columns are compared with their elements' order ignored (see gateway/dialect_aggregates.py)."""
    try:
        tree = sqlglot.parse_one(sql, read="postgres")
    except sqlglot.errors.ParseError:
        return {}
    if not isinstance(tree, exp.Select):
        return {}
    out: Unordered = {}
    for i, item in enumerate(tree.expressions):
        node = item.unalias()
        if isinstance(node, exp.Window):
            if node.args.get("order") is not None:
                continue
            node = node.this
        if isinstance(node, exp.Filter):
            node = node.this
        how = _listing(node)
        if how:
            out[i] = how
    return out


def _listing(node: exp.Expr) -> str:
    if isinstance(node, exp.ArrayAgg | exp.GroupConcat | exp.JSONArrayAgg):
        argument = node.this
        how = "array" if isinstance(node, exp.ArrayAgg) else "json"
        if isinstance(node, exp.GroupConcat):
            separator = node.args.get("separator")
            literal = isinstance(separator, exp.Literal) and separator.is_string and separator.this
            how = f"text:{separator.this}" if literal and separator is not None else ""
    elif isinstance(node, exp.Anonymous) and node.name.lower() in ("json_agg", "jsonb_agg"):
        argument, how = (node.expressions or [None])[0], "json"
    elif isinstance(node, exp.JSONObjectAgg) and len(node.expressions) == 2:
        argument, how = node.expressions[1], "json"
    else:
        return ""
    return "" if isinstance(argument, exp.Order | exp.Distinct) else how


def _json_members(text: str) -> tuple[str, tuple[str, ...]] | str:
    """A json array's or object's members, each its exact text (split at the commas of its top level)."""
    if len(text) < 2 or text[0] not in "[{":
        return text
    members, depth, start, quoted, escaped = [], 0, 1, False, False
    for i, char in enumerate(text):
        if quoted:
            quoted, escaped = (char != '"' or escaped), (char == "\\" and not escaped)
        elif char == '"':
            quoted = True
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == "," and depth == 1:
            members.append(text[start:i].strip())
            start = i + 1
    members.append(text[start:-1].strip())
    return text[0] + text[-1], tuple(sorted(members))


def as_multiset(value: Any, how: str) -> Any:
    """An unordered aggregate's canonical value with its elements sorted (see :func:`unordered_columns`)."""
    if value is None:
        return None
    if how == "array" and isinstance(value, tuple):
        return ("multiset", tuple(sorted(value, key=_sort_key)))
    if how == "json" and isinstance(value, tuple) and value[:1] == ("json",):
        return ("json multiset", _json_members(value[1]))
    if how.startswith("text:") and isinstance(value, str):
        return ("text multiset", tuple(sorted(value.split(how[5:]))))
    return value


# ------------------------------------------------------------------------------------------- values


def canon(value: Any, pg_type: str = "") -> Any:
    """A value in a form that compares equal only where a user sees the same answer: integers exactly,
    numerics as their text (the display scale is part of the answer), floats exactly (PostgreSQL writes the
    shortest text that reads back as the same float: ``-0`` is not ``0``, NaN equals only NaN), booleans as
    booleans (never ``1``), char(n) with its padding, timestamps with a zone as their instant and the offset
    they are shown with, intervals as (months, days, microseconds)."""
    if value is None or isinstance(value, bool):
        return value
    if pg_type in ("json", "jsonb"):  # the text: PostgreSQL's exact numbers, key order and spacing
        return ("json", value)
    if isinstance(value, int | Decimal):
        return (
            ("num", str(Decimal(value).normalize() + 0))
            if Decimal(value).is_finite()
            else ("num", str(value))
        )
    if isinstance(value, float):  # repr: the shortest text that reads back as this float, as PostgreSQL's
        return ("float", repr(value))
    if pg_type == "numeric":  # the text PostgreSQL prints / the gateway's JSON shows (see numeric_texts)
        return ("numeric", value) if isinstance(value, str) else canon(value)
    if isinstance(value, str) and pg_type == "interval":
        return pg_interval(value) or verbose_interval(value) or iso_interval(value) or value
    if isinstance(value, str) and pg_type == "time":
        return value
    if isinstance(value, datetime.time):  # as PostgreSQL writes it (an array's elements come as Python times)
        return _time_text((value.hour * 3600 + value.minute * 60 + value.second) * 10**6 + value.microsecond)
    if isinstance(value, str):
        return value  # char(n) with its padding: PostgreSQL returns it padded
    if isinstance(value, datetime.datetime) and value.tzinfo is not None:  # the instant, and its offset shown
        return ("timestamptz", value.astimezone(datetime.UTC).replace(tzinfo=None), value.utcoffset())
    if isinstance(value, datetime.timedelta):
        return ("interval", 0, value.days, value.seconds * 10**6 + value.microseconds)
    if isinstance(value, pa.MonthDayNano):
        return ("interval", value.months, value.days, value.nanoseconds // 1000)
    if isinstance(value, dict):
        return ("object", tuple(sorted((k, canon(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return tuple(canon(v, pg_type.lstrip("_")) for v in value)
    if isinstance(value, memoryview | bytearray):
        return bytes(value)
    if type(value).__name__ == "UUID":
        return str(value)
    return value


def _float_text(values: list[Any], pg_type: str) -> list[Any]:
    """PostgreSQL's float4 has 6-9 significant digits: compare float4 values as float4 (both sides)."""
    if pg_type == "_float4":
        return [v if v is None else type(v)(_float_text(list(v), "float4")) for v in values]
    if pg_type != "float4":
        return values
    return [float(pa.scalar(v, pa.float32()).as_py()) if isinstance(v, float) else v for v in values]


@dataclass
class Answer:
    rows: list[tuple[Any, ...]] | None = None
    types: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    error: str | None = None  #: the error message
    status: int = 0  #: the gateway's HTTP status (0 for psycopg)
    sqlstate: str = ""


def normal_type(name: str) -> str:
    if name.startswith("_"):  # an array of them
        return "_" + _SAME_TYPE.get(name[1:], name[1:])
    return _SAME_TYPE.get(name, name)


def _values(column: pa.ChunkedArray) -> list[Any]:
    """Python values of a column; dates and timestamps out of Python's range (PostgreSQL's infinities, which
    DuckDB keeps as its largest values) as 'infinity' / '-infinity'; times of day as text (24:00:00 is one)."""
    if pa.types.is_time(column.type):
        micros = column.cast(pa.int64()).to_pylist() if column.type.unit == "us" else None
        if micros is not None:
            return [None if m is None else _time_text(m) for m in micros]
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        pass
    out: list[Any] = []
    date = pa.types.is_date32(column.type)
    raw = column.cast(pa.int32() if date else pa.int64()).to_pylist()
    for scalar, number in zip(column, raw, strict=True):
        try:
            out.append(scalar.as_py())
        except (OverflowError, ValueError):
            if abs(number) >= (2**31 - 1 if date else 2**63 - 1):  # DuckDB's infinities
                out.append("infinity" if number > 0 else "-infinity")
            else:  # a BC date or one past 9999: days, or microseconds (UTC for a timestamptz), since 1970
                unit = column.type.unit if not date else "d"
                micros = (
                    number * {"s": 10**6, "ms": 10**3, "us": 1, "ns": 0}.get(unit, 1) if not date else number
                )
                out.append(("date", micros) if date else ("timestamp", micros))
    return out


def numeric_texts(column: pa.ChunkedArray, field: pa.Field) -> list[Any]:
    """A numeric column's values as the gateway's JSON shows them (CSV and ``lakegate sql`` show the same text;
    ``tests/test_gateway_unit.py`` holds them to it): the text of each number, ``NaN`` unquoted, arrays as lists
    of texts — to be compared with PostgreSQL's own text of the value."""
    texts = json_values(column.combine_chunks(), field).to_pylist()
    return [
        None
        if text == "null"
        else json.loads(text, parse_float=str, parse_int=str, parse_constant=str)
        if text.startswith(("[", '"'))
        else text
        for text in texts
    ]


def _time_text(micros: int) -> str:
    seconds, fraction = divmod(micros, 1_000_000)
    text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return text + (f".{fraction:06d}".rstrip("0") if fraction else "")


_FAR = re.compile(
    r"(-?\d+)-(\d\d)-(\d\d)(?: (\d\d):(\d\d):(\d\d)(?:\.(\d+))?([+-]\d\d(?::?\d\d){0,2})?)?( BC)?"
)
_CYCLE_DAYS = 146097  #: days in 400 Gregorian years (the calendar repeats)


def far_value(text: str) -> tuple[str, int]:
    """A date or timestamp Python cannot hold (BC, or after 9999) -> ("date", days) or ("timestamp",
    microseconds) since 1970-01-01 (UTC for a timestamptz), as :func:`_values` makes of Arrow's."""
    m = _FAR.fullmatch(text)
    if m is None:
        raise ValueError(f"not a date or timestamp: {text!r}")
    year = int(m.group(1))
    year = 1 - year if m.group(9) else year  # 1 BC is year 0
    cycles = 0
    while year < 1:
        year, cycles = year + 400, cycles - 1
    while year > 9999:
        year, cycles = year - 400, cycles + 1
    days = (datetime.date(year, int(m.group(2)), int(m.group(3))) - datetime.date(1970, 1, 1)).days
    days += cycles * _CYCLE_DAYS
    if m.group(4) is None:
        return ("date", days)
    micros = ((days * 24 + int(m.group(4))) * 60 + int(m.group(5))) * 60 + int(m.group(6))
    micros = micros * 10**6 + int((m.group(7) or "0").ljust(6, "0")[:6])
    if m.group(8):  # the offset shown: back to UTC
        sign = -1 if m.group(8)[0] == "-" else 1
        parts = [int(p) for p in re.findall(r"\d\d", m.group(8))] + [0, 0]
        micros -= sign * ((parts[0] * 60 + parts[1]) * 60 + parts[2]) * 10**6
    return ("timestamp", micros)


def _far_or(text: str, load: Any, data: Any) -> Any:
    if "infinity" in text:
        return text
    try:
        return load(data)
    except psycopg.DataError:  # BC, or after 9999
        return far_value(text)


class _InfDate(DateLoader):
    def load(self, data: Any) -> Any:
        return _far_or(bytes(data).decode(), super().load, data)


class _InfTimestamp(TimestampLoader):
    def load(self, data: Any) -> Any:
        return _far_or(bytes(data).decode(), super().load, data)


class _InfTimestamptz(TimestamptzLoader):
    def load(self, data: Any) -> Any:
        return _far_or(bytes(data).decode(), super().load, data)


class _Text(TextLoader):
    """Intervals (ISO 8601, the session's style) and times as text: psycopg's timedelta loses the months, and
    Python's time has no 24:00."""


_ISO = re.compile(
    r"P(?:(?P<Y>-?\d+)Y)?(?:(?P<M>-?\d+)M)?(?:(?P<D>-?\d+)D)?"
    r"(?:T(?:(?P<h>-?\d+)H)?(?:(?P<m>-?\d+)M)?(?:(?P<s>-?[\d.]+)S)?)?"
)


_PG_INTERVAL = re.compile(
    r"(?:(?P<Y>[-+]?\d+) years? ?)?(?:(?P<M>[-+]?\d+) mons? ?)?(?:(?P<D>[-+]?\d+) days? ?)?"
    r"(?:(?P<sign>[-+])?(?P<h>\d+):(?P<m>\d\d):(?P<s>\d\d(?:\.\d+)?))?"
)


def pg_interval(text: str) -> tuple[str, int, int, int] | None:
    """PostgreSQL's interval text in its default style (``1 year 2 mons -3 days +04:05:06.5``) -> ("interval",
    months, days, microseconds)."""
    match = _PG_INTERVAL.fullmatch(text.strip())
    if not match or not text.strip():
        return None
    g = match.groupdict()
    micros = 0
    if g["h"] is not None:
        micros = (int(g["h"]) * 3600 + int(g["m"]) * 60) * 10**6 + int(Decimal(g["s"]) * 10**6)
        micros = -micros if g["sign"] == "-" else micros
    months = int(g["Y"] or 0) * 12 + int(g["M"] or 0)
    return ("interval", months, int(g["D"] or 0), micros)


_VERBOSE_PART = re.compile(r"([-+]?\d+(?:\.\d+)?) (year|mon|day|hour|min|sec)s?")
_VERBOSE_MICROS = {"hour": 3_600_000_000, "min": 60_000_000, "sec": 1_000_000}


def verbose_interval(text: str) -> tuple[str, int, int, int] | None:
    """An interval in the ``postgres_verbose`` style (``@ 1 year 2 mons 4 hours 6.5 secs ago``)."""
    body = text.strip()
    if not body.startswith("@"):
        return None
    body, ago = body[1:].strip(), body.endswith(" ago")
    body = body.removesuffix(" ago").strip()
    months = days = micros = 0
    if body == "0":
        return ("interval", 0, 0, 0)
    rest = _VERBOSE_PART.sub("", body).strip()
    if rest:
        return None
    for number, unit in _VERBOSE_PART.findall(body):
        if unit == "year":
            months += int(number) * 12
        elif unit == "mon":
            months += int(number)
        elif unit == "day":
            days += int(number)
        else:
            micros += int(Decimal(number) * _VERBOSE_MICROS[unit])
    sign = -1 if ago else 1
    return ("interval", sign * months, sign * days, sign * micros)


def iso_interval(text: str) -> tuple[str, int, int, int] | None:
    """PostgreSQL's ISO 8601 interval text -> ("interval", months, days, microseconds)."""
    match = _ISO.fullmatch(text)
    if not match or text == "P":
        return None
    g = {k: v or "0" for k, v in match.groupdict().items()}
    micros = (int(g["h"]) * 3600 + int(g["m"]) * 60) * 10**6 + int(Decimal(g["s"]) * 10**6)
    return ("interval", int(g["Y"]) * 12 + int(g["M"]), int(g["D"]), micros)


def infinities(conn: psycopg.Connection) -> None:
    """Let psycopg read PostgreSQL's infinite dates and timestamps (as the strings 'infinity', '-infinity'),
    intervals as their text (the server's default style, as psql shows them; see :func:`pg_interval`), times as
    text, numerics as their text (``1.50`` is not ``1.5``: the display scale is part of the answer) and
    json/jsonb as their text (compared exactly: a number's digits, jsonb's key order and spacing are part of the
    answer)."""
    conn.execute("RESET intervalstyle")
    conn.adapters.register_loader("numeric", _Text)
    conn.adapters.register_loader("interval", _Text)
    conn.adapters.register_loader("time", _Text)
    conn.adapters.register_loader("json", _Text)
    conn.adapters.register_loader("jsonb", _Text)
    conn.adapters.register_loader("date", _InfDate)
    conn.adapters.register_loader("timestamp", _InfTimestamp)
    conn.adapters.register_loader("timestamptz", _InfTimestamptz)


def from_postgres(conn: psycopg.Connection, sql: str, type_names: dict[int, str]) -> Answer:
    try:
        with conn.transaction():
            cur = conn.execute(sql)
            rows = cur.fetchall()
            types = [type_names.get(d.type_code, str(d.type_code)) for d in cur.description or []]
            names = [d.name for d in cur.description or []]
    except psycopg.Error as exc:
        return Answer(error=str(exc).strip().splitlines()[0], sqlstate=getattr(exc, "sqlstate", "") or "")
    columns = [_float_text([r[i] for r in rows], t) for i, t in enumerate(types)]
    rows = list(zip(*columns, strict=True)) if columns else [() for _ in rows]
    return Answer([tuple(canon(v, t) for v, t in zip(r, types, strict=True)) for r in rows], types, names)


def from_gateway(client: httpx.Client, sql: str, zone: str | None = None) -> Answer:
    response = client.post("/v1/query", json={"sql": sql, "format": "arrow", "time_zone": zone})
    if response.status_code != 200:
        try:
            error = response.json()["error"]
        except ValueError:
            error = {"message": response.text[:300]}
        return Answer(
            error=str(error.get("message")), status=response.status_code, sqlstate=error.get("sqlstate") or ""
        )
    table = pa.ipc.open_stream(response.content).read_all()
    types = [(f.metadata or {}).get(b"lakegate.pg_type", b"?").decode() for f in table.schema]
    columns = [
        numeric_texts(table.column(i), table.schema.field(i))
        if t.lstrip("_") == "numeric"
        else _float_text(_values(table.column(i)), t)
        for i, t in enumerate(types)
    ]
    rows = list(zip(*columns, strict=True)) if columns else [() for _ in range(table.num_rows)]
    return Answer(
        [tuple(canon(v, t) for v, t in zip(r, types, strict=True)) for r in rows], types, table.schema.names
    )


#: columns every lake state table has besides the source's (the public contract: ``SELECT *`` shows them)
LAKE_COLUMNS = ("_lsn", "_commit_ts")


def without_lake_columns(want: Answer, got: Answer) -> Answer:
    """``got`` without the lake's own columns where PostgreSQL's answer has no column of that name."""
    keep = [i for i, n in enumerate(got.names) if n not in LAKE_COLUMNS or n in want.names]
    if len(keep) == len(got.names) or got.rows is None:
        return got
    return Answer(
        [tuple(r[i] for i in keep) for r in got.rows],
        [got.types[i] for i in keep],
        [got.names[i] for i in keep],
    )


def same(a: Any, b: Any) -> bool:
    """Equal canonical values (see :func:`canon`: exact, floats by their shortest text)."""
    return type(a) is type(b) and a == b


def _sort_key(row: Any) -> str:
    """A key that sorts rows alike on both sides: equal canonical rows have equal keys."""
    return repr(row)


#: an engine's own error, passed through: never a refusal (``DuckDB: Invalid Input Error: ...``)
RAW_ENGINE_ERROR = re.compile(r"^(?:DuckDB|PostgreSQL): (?:[A-Z][\w ]*)?Error: |Python exception occurred")


def refusal(got: Answer) -> bool:
    """Whether the gateway's error is a refusal: a 400 with SQLSTATE 0A000 (feature_not_supported) in the
    gateway's own words, not an engine's raw error."""
    return (
        got.status == 400
        and got.sqlstate == "0A000"
        and got.error is not None
        and not RAW_ENGINE_ERROR.search(got.error)
    )


def compare(
    want: Answer, got: Answer, in_order: bool, may_refuse: bool, unordered: Unordered | None = None
) -> tuple[str, str]:
    """(outcome, why) of the gateway's answer ``got`` against PostgreSQL's ``want``; the columns of
    ``unordered`` (:func:`unordered_columns`) compared with their elements' order ignored. ``may_refuse``: a
    :func:`refusal` counts as ``refused`` (whether it is one accepted is the caller's: :class:`Tally`)."""
    if want.error is not None:  # the same SQLSTATE, with a client error's status (42P01 is a 404)
        if got.error is None or not 400 <= (got.status or 0) < 500:
            return (
                DIFFERING,
                f"PostgreSQL refused ({want.error}) but the gateway answered {got.status or 200}",
            )
        if got.sqlstate == want.sqlstate:
            return IDENTICAL, ""
        if may_refuse and refusal(got):
            return REFUSED, got.error
        return DIFFERING, (
            f"PostgreSQL raised SQLSTATE {want.sqlstate} ({want.error}), the gateway "
            f"{got.sqlstate or 'no SQLSTATE'} ({got.error})"
        )
    if got.error is not None:
        if may_refuse and refusal(got):
            return REFUSED, got.error
        what = "a refusal where none may be" if refusal(got) else "an error that is no refusal"
        return DIFFERING, f"{what}: {got.status} SQLSTATE {got.sqlstate or 'none'}: {got.error}"
    assert want.rows is not None and got.rows is not None
    got = without_lake_columns(want, got)
    assert got.rows is not None
    if want.names != got.names:
        return DIFFERING, f"column names {want.names} != {got.names}"
    want_types = [normal_type(t) for t in want.types]
    got_types = [normal_type(t) for t in got.types]
    if want_types != got_types:
        return DIFFERING, f"types {want.types} != {got.types}"
    want_rows, got_rows = want.rows, got.rows
    if unordered:
        want_rows, got_rows = _multisets(want_rows, unordered), _multisets(got_rows, unordered)
    if not in_order:
        want_rows, got_rows = sorted(want_rows, key=_sort_key), sorted(got_rows, key=_sort_key)
    if not same(tuple(want_rows), tuple(got_rows)) and not _tied(want_rows, got_rows, in_order):
        return DIFFERING, f"rows differ: PostgreSQL {_short(want.rows)} gateway {_short(got.rows)}"
    return IDENTICAL, ""


def _tie_key(value: Any) -> Any:
    """What ORDER BY compares of a canonical value: ``-0`` equals ``0``, ``1.50`` equals ``1.5``."""
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "float":
        number = float(value[1])
        return ("n", 0.0 if number == 0 else number) if number == number else ("nan",)
    if isinstance(value, tuple) and len(value) == 2 and value[0] in ("numeric", "num"):
        try:
            return ("n", Decimal(value[1]).normalize())
        except ArithmeticError:
            return value
    if isinstance(value, tuple):
        return tuple(_tie_key(v) for v in value)
    return value


def _tied(want: list[tuple[Any, ...]], got: list[tuple[Any, ...]], in_order: bool) -> bool:
    """Ordered rows that differ only in the order of rows ORDER BY ties (values that compare equal but show
    differently, such as ``-0`` and ``0``): either order is PostgreSQL's answer."""
    if not in_order or len(want) != len(got):
        return False
    if [_tie_key(r) for r in want] != [_tie_key(r) for r in got]:
        return False
    return same(tuple(sorted(want, key=_sort_key)), tuple(sorted(got, key=_sort_key)))


def _multisets(rows: list[tuple[Any, ...]], unordered: Unordered) -> list[tuple[Any, ...]]:
    return [
        tuple(as_multiset(v, unordered[i]) if i in unordered else v for i, v in enumerate(r)) for r in rows
    ]


def _short(rows: list[tuple[Any, ...]]) -> str:
    text = repr(rows[:4]) + (f" ... ({len(rows)} rows)" if len(rows) > 4 else "")
    return text if len(text) < 400 else text[:400] + "..."


@dataclass
class Tally:
    """Outcomes per route; a refusal is accepted only where ``tests/answers/refusals.txt`` pins it (see
    :mod:`tests.answers_refusals`), and a pinned query answered identically is a difference (unpin it)."""

    outcomes: dict[str, Counter[str]] = field(default_factory=lambda: {"pg": Counter(), "lake": Counter()})
    differing: list[str] = field(default_factory=list)
    refused: Counter[str] = field(default_factory=Counter)
    pins: dict[tuple[str, str, str | None], Pin] = field(default_factory=read_pins)
    known: dict[tuple[str, str, str | None], Pin] = field(default_factory=lambda: read_pins(KNOWN))
    known_seen: list[str] = field(default_factory=list)  #: the known differences met (reported, not failed)

    def add(self, route: str, query: Query, outcome: str, why: str, zone: str = "UTC") -> None:
        outcome, why = self.judge(route, query, outcome, why, zone)
        self.outcomes.setdefault(route, Counter())[outcome] += 1
        if outcome == DIFFERING:
            self.differing.append(f"{query.where} [{route}] {query.template}\n      {why}")
        elif outcome == REFUSED:
            self.refused[words(why)[:160]] += 1

    def judge(self, route: str, query: Query, outcome: str, why: str, zone: str) -> tuple[str, str]:
        """The outcome with the pinned list applied."""
        known = self.known.get((query.where, route, zone)) or self.known.get((query.where, route, None))
        if known is not None:
            if outcome == DIFFERING:
                self.known_seen.append(f"{query.where} [{route}@{zone}] {known.prefix}")
                return KNOWN_DIFFERENCE, why
            return (
                DIFFERING,
                f"{outcome}, but {KNOWN.name} line {known.line} pins a difference: delete that line",
            )
        pin = self.pins.get((query.where, route, zone)) or self.pins.get((query.where, route, None))
        where = f"{PINNED.name} line {pin.line}" if pin else ""
        if outcome == REFUSED and pin is None:
            return DIFFERING, (
                f"a refusal nobody pinned: {words(why)}\n      if it is deliberate, add to {PINNED.name}: "
                f"{suggestion(query.where, route, zone, why)}"
            )
        if outcome == REFUSED and pin is not None and not words(why).startswith(pin.prefix):
            return DIFFERING, f"refused in other words than {where} pins ({pin.prefix!r}): {words(why)}"
        if outcome == IDENTICAL and pin is not None:
            return DIFFERING, f"answered identically, but {where} pins a refusal: delete that line"
        if outcome == DIFFERING and pin is not None:
            return DIFFERING, f"{why} ({where} pins a refusal)"
        return outcome, why

    def report(self, title: str) -> str:
        lines = [f"{title}:"]
        for route, counts in self.outcomes.items():
            if not counts:
                continue
            lines.append(
                f"  {route + '.*':7} identical {counts[IDENTICAL]}, refused with a reason {counts[REFUSED]}, "
                f"differing {counts[DIFFERING]}, known differences {counts[KNOWN_DIFFERENCE]}"
            )
        if self.known_seen:
            lines.append(f"  known differences ({KNOWN.name}, issue 28):")
            lines += [f"    {seen[:150]}" for seen in self.known_seen]
        if self.refused:
            lines.append("  refused (pinned):")
            lines += [f"    {n:3} x {why}" for why, n in self.refused.most_common()]
        return "\n".join(lines)


def run_corpus(
    queries: list[Query],
    conn: psycopg.Connection,
    client: httpx.Client,
    tables: set[str],
    tally: Tally,
    zone: str = "UTC",
) -> None:
    """Every query of ``queries`` on PostgreSQL and on both routes, in time zone ``zone`` (PostgreSQL's
    session's, the gateway's request's)."""
    infinities(conn)
    conn.execute("SELECT set_config('TimeZone', %s, false)", (zone,))
    type_names = {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}
    for query in queries:
        sql = query.on("public", tables)
        want = from_postgres(conn, sql, type_names)
        in_order, unordered = ordered(sql), unordered_columns(sql)
        for route, schema in (("pg", "pg.public"), ("lake", "lake.public")):
            got = from_gateway(client, query.on(schema, tables), zone)
            outcome, why = compare(want, got, in_order, may_refuse=True, unordered=unordered)
            tally.add(route, query, outcome, why, zone)

"""The session time zone on the DuckDB route (a rule of :mod:`lakegate.gateway.dialect`).

DuckDB's ``TimeZone`` cannot change per query: the sandbox locks DuckDB's configuration once it is set up
(:mod:`lakegate.connectors.duckdb.engine`), so DuckDB computes in UTC and the statement is rewritten to compute
what PostgreSQL computes in the session's zone ``Z``, with ICU's explicit-zone ``timezone(Z, x)``:

* a ``timestamptz`` becomes local time where PostgreSQL reads its fields: ``::date``/``::time``/``::timestamp``,
  ``extract``/``date_part`` (not the epoch, which is absolute) and ``date_trunc`` (whose result is local
  midnight etc. back as a ``timestamptz``), ``current_date``, ``localtimestamp``;
* a ``timestamp``, a ``date`` and a timestamp literal without an offset become a ``timestamptz`` as local time
  in ``Z`` (``::timestamptz``, and the implicit casts of comparisons, ``BETWEEN``, ``IN``, ``coalesce``...);
* ``timestamptz ± interval`` adds days and months in local time (across a daylight-saving change a day is 23
  or 25 hours, as in PostgreSQL); an interval that mixes calendar and clock parts, or is not a literal, is
  refused, and so is every other function of a ``timestamptz`` whose result depends on the zone
  (``age``, ``generate_series``, ``date_bin``, text conversions ...): a 400 that names it, never a UTC answer.

How values display (their offset) is the encoders' business: result columns carry the zone (see
:func:`lakegate.gateway.execute.in_zone`). In UTC the rule does nothing.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

UTC = "UTC"
#: a date or date-and-time literal without an offset or zone name (read as local time in the session's zone)
_LOCAL_LITERAL = re.compile(
    r"\s*\d{4,}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?\s*", re.IGNORECASE
)
#: literals whose meaning does not depend on the zone
_ABSOLUTE_WORDS = {"infinity", "-infinity", "+infinity", "epoch", "now"}
_CALENDAR_UNITS = {"YEAR", "MONTH", "WEEK", "DAY", "DECADE", "CENTURY", "MILLENNIUM", "QUARTER"}
_CLOCK_UNITS = {"HOUR", "MINUTE", "SECOND", "MILLISECOND", "MICROSECOND"}
_CALENDAR_WORDS = re.compile(r"year|mon|week|day|decade|centur|millenn|\d\s*[ydw]\b")
_CLOCK_WORDS = re.compile(r"\d:\d|hour|min|sec|\d\s*(?:h|m|s|ms|us)\b")
#: functions through which a timestamptz passes unchanged (or that the other rules make zone-aware)
_PASS = (
    exp.Cast,
    exp.Extract,
    exp.TimestampTrunc,
    exp.DateTrunc,
    exp.Min,
    exp.Max,
    exp.Count,
    exp.Coalesce,
    exp.Greatest,
    exp.Least,
    exp.Nullif,
    exp.Case,
    exp.If,
    exp.ArrayAgg,
    exp.AnyValue,
    exp.First,
    exp.Last,
    exp.FirstValue,
    exp.LastValue,
    exp.NthValue,
    exp.Lag,
    exp.Lead,
    exp.AtTimeZone,
    exp.Array,
    exp.Unnest,
    exp.Struct,
)
_COMBINING = (exp.Coalesce, exp.Greatest, exp.Least, exp.Nullif, exp.In)


def local(value: exp.Expr, zone: str) -> exp.Expr:
    """A ``timestamptz`` as the local ``timestamp`` in ``zone``."""
    return call("timezone", exp.Literal.string(zone), value)


def instant(value: exp.Expr, zone: str) -> exp.Expr:
    """A ``timestamp`` (or ``date``) read as local time in ``zone``: a ``timestamptz``."""
    return call("timezone", exp.Literal.string(zone), cast(value, "TIMESTAMP"))


def _is_tz(typ: PgType | None) -> bool:
    return typ is not None and typ.is_("timestamptz")


def _as_instant(node: exp.Expr, types: Typer, zone: str) -> exp.Expr | None:
    """``node`` where PostgreSQL reads it as a ``timestamptz`` in ``zone``: a rewrite, None if it is one
    already or its meaning does not depend on the zone; refused where the gateway cannot tell."""
    if isinstance(node, exp.Literal) and node.is_string:
        text = node.this.strip().lower()
        if text in _ABSOLUTE_WORDS:
            return None
        if _LOCAL_LITERAL.fullmatch(node.this):
            return instant(node, zone)
        if re.search(r"(?:[+-]\d{1,2}(?::?\d{2}){0,2}|z|utc|gmt)$", text) or "/" in text:
            return None  # an explicit offset or zone: DuckDB reads it as PostgreSQL does
        raise refusal(node, f"the timestamp {node.this!r} in time zone {zone}")
    typ = types.of(node)
    if typ is not None and typ.is_("timestamp", "date"):
        return instant(node, zone)
    if typ is None or typ.is_("text", "varchar", "unknown"):
        if isinstance(node, exp.Null):
            return None
        raise refusal(node, f"a text value read as a timestamptz in time zone {zone}")
    return None


def _interval_kind(node: exp.Expr) -> str | None:
    """ "calendar" (years, months, days), "clock" (hours and less), or None (mixed, or not a literal)."""
    if isinstance(node, exp.Paren):
        return _interval_kind(node.this)
    if isinstance(node, exp.Interval):
        unit = node.args.get("unit")
        if unit is not None:
            name = unit.name.upper().rstrip("S")
            return "calendar" if name in _CALENDAR_UNITS else "clock" if name in _CLOCK_UNITS else None
        text = node.this.name if isinstance(node.this, exp.Literal) else None
    elif (
        isinstance(node, exp.Cast)
        and isinstance(node.this, exp.Literal)
        and node.to.this == exp.DType.INTERVAL
    ):
        text = node.this.name
    else:
        return None
    if text is None:
        return None
    lower = text.lower()
    calendar, clock = bool(_CALENDAR_WORDS.search(lower)), bool(_CLOCK_WORDS.search(lower))
    if calendar == clock:
        return None
    return "calendar" if calendar else "clock"


#: PostgreSQL's timestamp forms DuckDB does not read (no seconds before an offset, an offset of hours only)
_PG_TIMESTAMP = re.compile(
    r"\s*(\d{4,}-\d{1,2}-\d{1,2})[ T](\d{1,2}):(\d{2})(?::(\d{2})(\.\d+)?)?\s*"
    r"(?:([+-])(\d{1,2})(?::?(\d{2}))?)?\s*"
)


def _fix_literal(node: exp.Expr, with_zone: bool) -> None:
    """A timestamp literal in a form DuckDB reads (``2024-01-01 00:00+00`` -> ``2024-01-01 00:00:00+00:00``),
    in place; for a ``timestamp`` without its offset, which PostgreSQL ignores there."""
    if not (isinstance(node, exp.Literal) and node.is_string):
        return
    match = _PG_TIMESTAMP.fullmatch(node.this)
    if match is None:
        return
    day, hours, minutes, seconds, fraction, sign, off_h, off_m = match.groups()
    text = f"{day} {int(hours):02d}:{minutes}:{seconds or '00'}{fraction or ''}"
    if sign and with_zone:
        text += f"{sign}{int(off_h):02d}:{off_m or '00'}"
    node.set("this", text)


def _timestamp_literals(node: exp.Expr, types: Typer) -> None:
    """Literals read as timestamps (casts, and the implicit casts of comparisons) in forms DuckDB reads."""
    if isinstance(node, exp.Cast) and node.to.this in (exp.DType.TIMESTAMP, exp.DType.TIMESTAMPTZ):
        _fix_literal(node.this, node.to.this == exp.DType.TIMESTAMPTZ)
    elif isinstance(node, (exp.Binary, exp.Between, *_COMBINING)):
        slots = _slots(node)
        kinds = [types.of(v) for _, _, v in slots]
        if any(_is_tz(k) for k in kinds) or any(k is not None and k.is_("timestamp") for k in kinds):
            for _, _, value in slots:
                _fix_literal(value, any(_is_tz(k) for k in kinds))


def _in_zone(node: exp.Expr, types: Typer) -> exp.Expr | None:
    _timestamp_literals(node, types)
    zone = types.zone
    if isinstance(node, exp.AtTimeZone) and isinstance(node.this, exp.Literal) and node.this.is_string:
        # 'text' AT TIME ZONE z: PostgreSQL reads the literal as a timestamptz (DuckDB: no best candidate)
        _fix_literal(node.this, True)
        instant_ = (_as_instant(node.this, types, zone) if zone != UTC else None) or cast(
            node.this.copy(), "TIMESTAMPTZ"
        )
        types.note(instant_, PgType("timestamptz"))
        node.set("this", instant_)
        return None
    if zone == UTC:
        if isinstance(node, exp.Cast) and _is_tz(types.of(node.this)) and node.to.is_type(exp.DType.TIME):
            return _time_of(node.this, zone)  # DuckDB has no timestamptz -> time cast
        return None
    if isinstance(node, exp.Cast):
        return _cast(node, types, zone)
    if isinstance(node, exp.CurrentDate):
        return cast(local(exp.CurrentTimestamp(), zone), "DATE")
    if isinstance(node, exp.Localtimestamp):
        return local(exp.CurrentTimestamp(), zone)
    if isinstance(node, exp.CurrentTime):
        raise refusal(node, f"current_time in time zone {zone}")
    if isinstance(node, exp.Add | exp.Sub) and (
        _is_tz(types.of(node.this)) or _is_tz(types.of(node.expression))
    ):
        return _shift(node, types, zone)
    if isinstance(node, exp.DPipe):  # text || timestamptz: the timestamptz's text in the zone
        for side in (node.this, node.expression):
            if _is_tz(types.of(side)):
                text = _text(side.copy(), zone)
                side.replace(text)
                types.note(text, PgType("text"))
        return None
    if isinstance(node, (exp.Binary, exp.Between, *_COMBINING)):
        _peers(node, types, zone)
        return None
    zone_free = _zone_free(node, types)
    if zone_free is not None:
        return None if zone_free is node else zone_free
    if (
        isinstance(node, exp.Func)
        and not isinstance(node, _PASS)
        and any(_is_tz(types.of(arg)) for arg in _arguments(node))
    ):
        name = node.sql(dialect="postgres").split("(")[0].strip().lower()  # as the user wrote it
        raise refusal(node, f"{name}() of a timestamptz in time zone {zone}")
    return None


def _series_of_dates(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``generate_series(date, date, interval)`` is PostgreSQL's ``generate_series(timestamptz, timestamptz,
    interval)``: each date read as its local midnight in the session's zone, the result timestamptz (DuckDB's
    own of dates gave timestamps). In place; the zone's other rules then see timestamptz arguments."""
    if not isinstance(node, exp.GenerateSeries | exp.ExplodingGenerateSeries):
        return None
    ends = [node.args.get("start"), node.args.get("end")]
    kinds = [types.of(end) if end is not None else None for end in ends]
    if not all(kind is not None and kind.is_("date") for kind in kinds):
        return None
    for end in ends:
        assert end is not None
        moment = instant(end.copy(), types.zone)
        end.replace(moment)
        types.note(moment, PgType("timestamptz"))
    return None


def _zone_free(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """Functions of timestamptz values that PostgreSQL computes without the session's zone, or with its local
    fields only: ``node`` itself where it stays, its rewrite, or None (not one of them)."""
    name = node.name.lower() if isinstance(node, exp.Anonymous) else ""
    args = node.expressions if isinstance(node, exp.Anonymous) else []
    if name in ("isfinite", "to_char"):
        return node  # an instant is finite in every zone; to_char: dialect_formats
    if name == "date_bin" and len(args) == 3 and all(_is_tz(types.of(a)) for a in args[1:]):
        return node  # timestamptz_bin: the instant and the origin, a fixed stride of microseconds
    if name == "age" and len(args) == 2 and all(_is_tz(types.of(a)) for a in args):
        # timestamptz_age subtracts the local fields of both and ignores their offsets
        return call("age", local(args[0].copy(), types.zone), local(args[1].copy(), types.zone))
    if isinstance(node, exp.GenerateSeries | exp.ExplodingGenerateSeries) and any(
        _is_tz(types.of(end)) for end in (node.args.get("start"), node.args.get("end")) if end is not None
    ):
        step = node.args.get("step")
        if step is not None and _interval_kind(step) == "clock":
            return node  # steps of hours and less: instants plus microseconds, as in any zone
        if step is not None and _interval_kind(step) == "calendar" and "-" not in step.sql():
            return _local_series(node, step, types.zone)
    return None


def _local_series(node: exp.Expr, step: exp.Expr, zone: str) -> exp.Expr | None:
    """``FROM generate_series(a, b, days or months) AS g``: the table macro ``pg_series_local`` (local times in
    ``zone``, stepped as PostgreSQL steps them), its one column named as PostgreSQL names it; in a select list
    the rows of the list ``pg_series_local_list``."""
    start, end = node.args.get("start"), node.args.get("end")
    assert start is not None and end is not None
    arguments = [start.copy(), end.copy(), step.copy(), exp.Literal.string(zone)]
    table = node.parent
    if isinstance(table, exp.Table) and node.arg_key == "this" and table.args.get("alias") is None:
        # PostgreSQL names the table and its one column after the function (not after the unnest below)
        name = exp.to_identifier("generate_series")
        table.set("alias", exp.TableAlias(this=name, columns=[name.copy()]))
    if isinstance(node, exp.GenerateSeries):  # in a select list: the rows of a list
        return exp.Unnest(expressions=[call("pg_series_local_list", *arguments)])
    if not isinstance(table, exp.Table) or node.arg_key != "this":
        return None
    alias = table.args.get("alias")
    if isinstance(alias, exp.TableAlias) and alias.this is not None and not alias.columns:
        alias.set("columns", [exp.to_identifier(alias.name)])
    return call("pg_series_local", *arguments)


def _arguments(node: exp.Expr) -> list[exp.Expr]:
    out: list[exp.Expr] = []
    for value in node.args.values():
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, exp.Expr):
                out.append(item)
    return out


def _cast(node: exp.Cast, types: Typer, zone: str) -> exp.Expr | None:
    source, target = types.of(node.this), types.of(node)
    if target is None:
        return None
    if _is_tz(source):
        if target.is_("time"):
            return _time_of(node.this, zone)
        if target.is_("date", "timestamp"):
            return cast(local(node.this, zone), node.to.sql(dialect="duckdb"))
        if target.is_("text", "varchar") and not node.to.expressions:
            return _text(node.this, zone)
        if target.is_("text", "varchar", "bpchar", "timetz", "json", "jsonb"):
            raise refusal(node, f"a timestamptz as {target.name} in time zone {zone}")
        return None
    if target.is_("timestamptz"):
        return _as_instant(node.this, types, zone)
    return None


#: the offset from UTC in seconds of the instant ``v`` in the zone ``z``
_OFFSET = "((epoch_us(timezone(z, v)) - epoch_us(v)) // 1000000)"
#: timestamptz_out in DateStyle ISO: the local time, then the offset from UTC as +HH, +HH:MM or +HH:MM:SS
_TEXT = sqlglot.parse_one(
    "CASE WHEN NOT isfinite(v) THEN CAST(v AS VARCHAR) ELSE CAST(timezone(z, v) AS VARCHAR) || "
    f"CASE WHEN {_OFFSET} < 0 THEN '-' ELSE '+' END || printf('%02d', abs({_OFFSET}) // 3600) || "
    f"CASE WHEN abs({_OFFSET}) % 3600 <> 0 THEN printf(':%02d', abs({_OFFSET}) % 3600 // 60) ELSE '' END || "
    f"CASE WHEN abs({_OFFSET}) % 60 <> 0 THEN printf(':%02d', abs({_OFFSET}) % 60) ELSE '' END END",
    read="duckdb",
)


def _text(value: exp.Expr, zone: str) -> exp.Expr:
    """A timestamptz as PostgreSQL's text in ``zone`` (``2024-01-15 05:30:00-05``, ``... 12:00:00+05:30``)."""

    def put(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.name in ("v", "z"):
            return value.copy() if node.name == "v" else exp.Literal.string(zone)
        return node

    return _TEXT.copy().transform(put)


def _time_of(value: exp.Expr, zone: str) -> exp.Expr:
    """A timestamptz's local time of day; NULL for an infinity, as PostgreSQL's timestamptz_time."""
    finite = exp.If(this=call("isfinite", value.copy()), true=cast(local(value, zone), "TIME"))
    return exp.Case(ifs=[finite])


def _shift(node: exp.Add | exp.Sub, types: Typer, zone: str) -> exp.Expr | None:
    """``timestamptz ± interval``: days and months in local time."""
    left, right = node.this, node.expression
    if _is_tz(types.of(left)) and _is_tz(types.of(right)):
        return None  # the difference of two instants does not depend on the zone
    moment, step = (left, right) if _is_tz(types.of(left)) else (right, left)
    step_type = types.of(step)
    if step_type is None or not step_type.is_("interval"):
        other = _as_instant(step, types, zone)  # timestamptz - timestamp: the timestamp is local time
        if other is not None:
            node.set("expression" if step is right else "this", other)
        return None
    kind = _interval_kind(step)
    if kind == "clock":
        return None
    if kind is None:
        raise refusal(node, f"adding an interval with days or months to a timestamptz in time zone {zone}")
    shifted = (
        node.__class__(this=local(moment, zone), expression=step)
        if moment is left
        else node.__class__(this=step, expression=local(moment, zone))
    )
    return call("timezone", exp.Literal.string(zone), shifted)


def _peers(node: exp.Expr, types: Typer, zone: str) -> None:
    """The operands of a comparison (or coalesce, IN, ...) with a timestamptz: the others are read as
    timestamptz in ``zone`` (PostgreSQL's implicit cast), in place."""
    operands = _slots(node)
    if not any(_is_tz(types.of(v)) for _, _, v in operands):
        return
    for key, index, value in operands:
        typ = types.of(value)
        if typ is not None and not typ.is_("timestamp", "date", "text", "varchar", "unknown"):
            continue  # a timestamptz already, or a type PostgreSQL would not cast (an error either way)
        replaced = _as_instant(value, types, zone)
        if replaced is None:
            continue
        types.note(replaced, typ)
        if index is None:
            node.set(key, replaced)
        else:
            node.args[key][index] = replaced
            replaced.parent, replaced.arg_key, replaced.index = node, key, index


def _slots(node: exp.Expr) -> list[tuple[str, int | None, exp.Expr]]:
    if isinstance(node, exp.Binary):
        if not isinstance(
            node, exp.EQ | exp.NEQ | exp.GT | exp.GTE | exp.LT | exp.LTE | exp.NullSafeEQ | exp.NullSafeNEQ
        ):
            return []
        return [("this", None, node.this), ("expression", None, node.expression)]
    if isinstance(node, exp.Between):
        return [(k, None, node.args[k]) for k in ("this", "low", "high") if node.args.get(k) is not None]
    out: list[tuple[str, int | None, exp.Expr]] = []
    if isinstance(node.args.get("this"), exp.Expr):
        out.append(("this", None, node.this))
    for i, item in enumerate(node.args.get("expressions") or []):
        out.append(("expressions", i, item))
    if isinstance(node, exp.Nullif) and node.args.get("expression") is not None:
        out.append(("expression", None, node.expression))
    return out


RULES: list[Rule] = [_series_of_dates, _in_zone]

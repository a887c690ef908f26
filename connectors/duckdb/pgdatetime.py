"""PostgreSQL's interval and timestamp functions DuckDB lacks, as DuckDB macros of the gateway's engine:
``justify_hours``, ``justify_days``, ``justify_interval`` (under their own names), ``pg_date_bin`` and
``pg_overlaps`` (:mod:`lakegate.gateway.dialect_datetime` rewrites ``date_bin`` and ``OVERLAPS`` to them), and
the table macro ``pg_series_local`` and the list ``pg_series_local_list`` (``generate_series`` of timestamptz by
days or months in a session time zone, in FROM and in a select list: :mod:`lakegate.gateway.dialect_zones`).

They follow PostgreSQL's ``timestamp.c`` step by step: an interval is its three fields (months, days,
microseconds; DuckDB keeps them apart as PostgreSQL does), whole days and months are truncated toward zero and
the signs of the fields then made to agree; ``date_bin`` rounds toward minus infinity, returns an infinite
timestamp as it is and raises PostgreSQL's errors; ``OVERLAPS`` takes each pair's lesser end first and follows
the SQL standard's NULL rules as PostgreSQL spells them out. Written by hand (DuckDB has no such functions);
compared with PostgreSQL 18 on 9,000 random intervals before the corpus.
"""

from __future__ import annotations

import duckdb

_DAY = 86_400_000_000  #: microseconds

def _once(body: str, name: str = "iv") -> str:
    """``body`` with its argument ``name`` evaluated once: DuckDB expands a macro's argument at each use, so a
    macro that reads it n times, nested d deep, is n**d copies (justify_hours(justify_days(justify_hours(x)))
    took 127 s to bind, a request that no time limit could stop). Bound once by a one-element lambda."""
    return f"list_transform([{name}], lambda {name}: {body})[1]"


#: months, days with the time's whole days, and the time left, of ``iv`` (justify_hours, justify_interval)
_DAY_AND_TIME = (
    f"pg_interval_months(iv), datepart('day', iv) + pg_whole(pg_interval_usecs(iv), {_DAY}), "
    f"pg_interval_usecs(iv) % {_DAY}"
)

MACROS: tuple[str, ...] = (
    "CREATE MACRO pg_interval_months(iv) AS datepart('year', iv) * 12 + datepart('month', iv)",
    # PostgreSQL compares intervals as one span (interval_cmp_value: a month is 30 days, a day 24 hours):
    # '1 mon -1 day' = '29 days'; DuckDB carries days into months and compared them unequal
    "CREATE MACRO pg_interval_span(iv) AS (pg_interval_months(iv)::HUGEINT * 30 + datepart('day', iv)) "
    "* 86400000000 + pg_interval_usecs(iv)",
    # the microseconds field (DuckDB's 'microseconds' part is the seconds' share only)
    "CREATE MACRO pg_interval_usecs(iv) AS datepart('hour', iv)::BIGINT * 3600000000 "
    "+ datepart('minute', iv)::BIGINT * 60000000 + datepart('microseconds', iv)",
    "CREATE MACRO pg_interval(m, d, us) AS "
    "to_months(CAST(m AS INTEGER)) + to_days(CAST(d AS INTEGER)) + to_microseconds(CAST(us AS BIGINT))",
    "CREATE MACRO pg_whole(x, unit) AS (x - x % unit) // unit",  # truncated toward zero, as C divides
    # interval_out in IntervalStyle postgres (EncodeInterval): each nonzero field with its unit (plural unless 1),
    # a '+' on a positive field after a negative one, the time as [-|+]HH:MM:SS[.f] when nonzero or alone
    "CREATE MACRO pg_iv_field(v, unit, lead, before) AS CASE WHEN v = 0 THEN '' ELSE "
    "CASE WHEN lead THEN ' ' ELSE '' END || CASE WHEN before AND v > 0 THEN '+' ELSE '' END || v::VARCHAR "
    "|| ' ' || unit || CASE WHEN v = 1 THEN '' ELSE 's' END END",
    "CREATE MACRO pg_iv_two(n) AS CASE WHEN n < 10 THEN '0' ELSE '' END || n::VARCHAR",
    "CREATE MACRO pg_iv_time(t, lead, before) AS CASE WHEN lead THEN ' ' ELSE '' END "
    "|| CASE WHEN t < 0 THEN '-' WHEN before THEN '+' ELSE '' END || pg_iv_two(abs(t::HUGEINT) // 3600000000) "
    "|| ':' || pg_iv_two(abs(t::HUGEINT) // 60000000 % 60) || ':' || pg_iv_two(abs(t::HUGEINT) // 1000000 % 60) "
    "|| CASE WHEN abs(t::HUGEINT) % 1000000 = 0 THEN '' "
    "ELSE '.' || rtrim(printf('%06d', abs(t::HUGEINT) % 1000000), '0') END",
    "CREATE MACRO pg_iv_out(y, mo, d, t) AS pg_iv_field(y, 'year', false, false) "
    "|| pg_iv_field(mo, 'mon', y <> 0, y < 0) "
    "|| pg_iv_field(d, 'day', y <> 0 OR mo <> 0, CASE WHEN mo <> 0 THEN mo < 0 ELSE y < 0 END) "
    "|| CASE WHEN (y = 0 AND mo = 0 AND d = 0) OR t <> 0 THEN pg_iv_time(t, y <> 0 OR mo <> 0 OR d <> 0, "
    "CASE WHEN d <> 0 THEN d < 0 WHEN mo <> 0 THEN mo < 0 ELSE y < 0 END) ELSE '' END",
    "CREATE MACRO pg_interval_out(iv) AS "
    "pg_iv_out(datepart('year', iv), datepart('month', iv), datepart('day', iv), pg_interval_usecs(iv))",
    # justify_hours: whole days out of the time, then day and time of one sign
    f"CREATE MACRO pg_justify_time(m, d, t) AS CASE WHEN d > 0 AND t < 0 THEN pg_interval(m, d - 1, t + {_DAY}) "
    f"WHEN d < 0 AND t > 0 THEN pg_interval(m, d + 1, t - {_DAY}) ELSE pg_interval(m, d, t) END",
    "CREATE MACRO justify_hours(iv) AS " + _once(f"pg_justify_time({_DAY_AND_TIME})"),
    # justify_days: whole months (30 days) out of the days, then month and day of one sign
    "CREATE MACRO pg_justify_months(m, d, t) AS CASE WHEN m > 0 AND d < 0 THEN pg_interval(m - 1, d + 30, t) "
    "WHEN m < 0 AND d > 0 THEN pg_interval(m + 1, d - 30, t) ELSE pg_interval(m, d, t) END",
    "CREATE MACRO justify_days(iv) AS "
    + _once(
        "pg_justify_months(pg_interval_months(iv) + pg_whole(datepart('day', iv), 30), datepart('day', iv) % 30, "
        "pg_interval_usecs(iv))"
    ),
    # justify_interval: both, with the month's sign deciding over the day's and the time's
    "CREATE MACRO pg_justify_all(m, d, t) AS CASE "
    "WHEN m > 0 AND (d < 0 OR d = 0 AND t < 0) THEN pg_justify_time(m - 1, d + 30, t) "
    "WHEN m < 0 AND (d > 0 OR d = 0 AND t > 0) THEN pg_justify_time(m + 1, d - 30, t) "
    "ELSE pg_justify_time(m, d, t) END",
    "CREATE MACRO pg_justify_days_of(m, d, t) AS pg_justify_all(m + pg_whole(d, 30), d % 30, t)",
    "CREATE MACRO justify_interval(iv) AS " + _once(f"pg_justify_days_of({_DAY_AND_TIME})"),
    # make_interval(years, months, weeks, days, hours, mins, secs): secs rounded to microseconds half to even (rint)
    "CREATE MACRO pg_make_interval(y, mo, w, d, h, mi, s) AS pg_interval(y * 12 + mo, w * 7 + d, "
    "h::BIGINT * 3600000000 + mi::BIGINT * 60000000 + CAST(round_even(CAST(s AS DOUBLE) * 1000000, 0) AS BIGINT))",
    # extract(epoch from interval): PostgreSQL counts a year as 365.25 days and a month as 30 days (DuckDB 360 days a
    # year), whole years and the months left apart: numeric with microseconds
    "CREATE MACRO pg_interval_epoch(iv) AS CAST((pg_whole(pg_interval_months(iv), 12)::HUGEINT * 31557600 "
    "+ (pg_interval_months(iv) % 12) * 2592000 + datepart('day', iv)::HUGEINT * 86400) * 1000000 "
    "+ pg_interval_usecs(iv) AS DECIMAL(38, 0)) * 0.000001",
    # year, decade, century, millennium and isoyear of a date before year 1 (DuckDB's years count a year 0, which
    # is 1 BC; PostgreSQL's have none: 44 BC is -44), as timestamp.c computes them
    "CREATE MACRO pg_bc_field(field, y) AS CASE field WHEN 'year' THEN y - 1 WHEN 'isoyear' THEN y - 1 "
    "WHEN 'decade' THEN CASE WHEN y >= 0 THEN y // 10 ELSE -((8 - (y - 1)) // 10) END "
    "WHEN 'century' THEN -((99 - (y - 1)) // 100) WHEN 'millennium' THEN -((999 - (y - 1)) // 1000) END",
    "CREATE MACRO pg_year_field(field, x) AS CASE "
    "WHEN field = 'isoyear' AND isoyear(x) <= 0 THEN pg_bc_field(field, isoyear(x)) "
    "WHEN field <> 'isoyear' AND year(x) <= 0 THEN pg_bc_field(field, year(x)) ELSE date_part(field, x) END",
    # date_bin(stride, x, origin): timestamp_bin / timestamptz_bin
    "CREATE MACRO pg_floor_multiple(d, s) AS d - ((d % s) + s) % s",
    f"CREATE MACRO pg_stride_usecs(iv) AS datepart('day', iv)::BIGINT * {_DAY} + pg_interval_usecs(iv)",
    "CREATE MACRO pg_date_bin(stride, x, origin) AS CASE "
    "WHEN stride IS NULL OR x IS NULL OR origin IS NULL THEN NULL WHEN isinf(x) THEN x "
    "WHEN isinf(origin) THEN error('origin out of range') "
    "WHEN pg_interval_months(stride) <> 0 THEN "
    "error('timestamps cannot be binned into intervals containing months or years') "
    "WHEN pg_stride_usecs(stride) <= 0 THEN error('stride must be greater than zero') "
    "ELSE origin + to_microseconds(pg_floor_multiple(epoch_us(x) - epoch_us(origin), pg_stride_usecs(stride))) "
    "END",
    # (a1, b1) OVERLAPS (a2, b2): overlaps_timestamp's NULL rules, each pair's lesser end first
    "CREATE MACRO pg_overlaps_ends(s1, e1, s2, e2) AS CASE WHEN s1 IS NULL OR s2 IS NULL THEN NULL "
    "WHEN s1 > s2 THEN CASE WHEN e2 IS NULL THEN NULL WHEN s1 < e2 THEN true WHEN e1 IS NULL THEN NULL "
    "ELSE false END "
    "WHEN s1 < s2 THEN CASE WHEN e1 IS NULL THEN NULL WHEN s2 < e1 THEN true WHEN e2 IS NULL THEN NULL "
    "ELSE false END "
    "ELSE CASE WHEN e1 IS NULL OR e2 IS NULL THEN NULL ELSE true END END",
    "CREATE MACRO pg_lesser_end(a, b) AS CASE WHEN a IS NULL THEN b WHEN b IS NULL OR a <= b THEN a ELSE b END",
    "CREATE MACRO pg_greater_end(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL WHEN a <= b THEN b ELSE a END",
    "CREATE MACRO pg_overlaps(a1, b1, a2, b2) AS pg_overlaps_ends(pg_lesser_end(a1, b1), pg_greater_end(a1, b1), "
    "pg_lesser_end(a2, b2), pg_greater_end(a2, b2))",
    # generate_series(timestamptz, timestamptz, days or months) in the zone z: PostgreSQL adds each step to the
    # previous value's local time and reads the sum as local time again; the local times w step alike as long as
    # none is skipped by a change to daylight-saving time (PostgreSQL would step on from the moved time): such a
    # w is an error, never a guess. The first value is a itself (its local time may be a repeated one).
    "CREATE MACRO pg_series_local(a, b, step, z) AS TABLE SELECT CASE WHEN w = timezone(z, a) THEN a "
    "WHEN timezone(z, timezone(z, w)) = w THEN timezone(z, w) "
    "ELSE error('generate_series() in time zone ' || z || ' reaches the local time ' || CAST(w AS VARCHAR) || "
    "', which a change to daylight-saving time skips; PostgreSQL steps on from the moved time, which the lake "
    "route does not: run the query on a PostgreSQL source') END AS generate_series "
    "FROM generate_series(timezone(z, a), timezone(z, b) + INTERVAL 1 DAY, step) AS s(w) "
    "WHERE CASE WHEN w = timezone(z, a) THEN a ELSE timezone(z, w) END <= b",
    # the same as a list, for generate_series in a select list (UNNEST of it)
    "CREATE MACRO pg_series_local_list(a, b, step, z) AS list_transform(list_filter(generate_series("
    "timezone(z, a), timezone(z, b) + INTERVAL 1 DAY, step), "
    "lambda w: CASE WHEN w = timezone(z, a) THEN a ELSE timezone(z, w) END <= b), "
    "lambda w: CASE WHEN w = timezone(z, a) THEN a WHEN timezone(z, timezone(z, w)) = w THEN timezone(z, w) "
    "ELSE error('generate_series() in time zone ' || z || ' reaches the local time ' || CAST(w AS VARCHAR) || "
    "', which a change to daylight-saving time skips; PostgreSQL steps on from the moved time, which the lake "
    "route does not: run the query on a PostgreSQL source') END)",
)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create the macros in ``con`` (before its configuration is locked)."""
    for statement in MACROS:
        con.execute(statement)

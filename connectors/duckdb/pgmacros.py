"""DuckDB macros that compute as PostgreSQL does, created in the gateway's DuckDB before its configuration is
locked (the gateway's :mod:`lakegate.gateway.dialect` rewrites statements to call them).

DuckDB runs with ``integer_division = true``: ``/`` of two integers truncates toward zero, as in PostgreSQL.
Errors are raised with PostgreSQL's message text (``division by zero``), so that a client sees the same error on
both routes; refusals say what cannot be computed exactly and what to do.
"""

from __future__ import annotations

_NOT_EXACT = (
    " cannot be computed exactly as PostgreSQL does on the lake route (DuckDB); run it on a PostgreSQL source, "
    "or cast the operands to float8"
)

SETTINGS = ("SET integer_division = true",)

MACROS = (
    # / and %: PostgreSQL raises division by zero for every numeric type; numeric division picks its result
    # scale from the values (select_div_scale), which a DuckDB decimal cannot follow
    "CREATE MACRO pg_div(a, b) AS CASE WHEN b = 0 THEN error('division by zero') "
    "WHEN starts_with(typeof(a), 'DECIMAL') OR starts_with(typeof(b), 'DECIMAL') "
    f"THEN error('division of numeric values{_NOT_EXACT}') ELSE a / b END",
    "CREATE MACRO pg_mod(a, b) AS CASE WHEN b = 0 THEN error('division by zero') ELSE a % b END",
    # avg of integers or decimals is a numeric in PostgreSQL (scale from the values), a double in DuckDB
    "CREATE MACRO pg_avg_arg(x) AS CASE WHEN typeof(x) IN ('DOUBLE', 'FLOAT') OR x IS NULL THEN x "
    f"ELSE error('avg() of integer or numeric values (a numeric in PostgreSQL){_NOT_EXACT}') END",
    # '1.5'::int is an error in PostgreSQL (DuckDB rounds)
    "CREATE MACRO pg_int_text(s) AS CASE WHEN s IS NULL OR regexp_full_match(s, '\\s*[+-]?[0-9]+\\s*') THEN s "
    "ELSE error('invalid input syntax for type integer: \"' || s || '\"') END",
    # substr(s, start[, n]): positions before 1 count (PostgreSQL), not from the end (DuckDB)
    "CREATE MACRO pg_substr(s, start) AS substring(s, greatest(start, 1)), "
    "(s, start, n) AS CASE WHEN n < 0 THEN error('negative substring length not allowed') "
    "WHEN start < 1 THEN substring(s, 1, greatest(start + n - 1, 0)) ELSE substring(s, start, n) END",
    # extract() is numeric in PostgreSQL: seconds and epoch keep their microseconds
    "CREATE MACRO pg_extract_second(x) AS CAST(microsecond(x) AS DECIMAL(18, 0)) * 0.000001",
    "CREATE MACRO pg_extract_epoch(x) AS CAST(epoch_us(x) AS DECIMAL(38, 0)) * 0.000001",
)

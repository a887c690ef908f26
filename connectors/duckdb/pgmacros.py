"""DuckDB macros and functions that compute as PostgreSQL does, created in the gateway's DuckDB before its
configuration is locked (the gateway's :mod:`lakegate.gateway.dialect` rewrites statements to call them).

DuckDB runs with ``integer_division = true``: ``/`` of two integers truncates toward zero, as in PostgreSQL.
Errors are raised with PostgreSQL's message text (``division by zero``, ``value out of range: overflow``), so
that a client sees the same error on both routes (the gateway adds PostgreSQL's SQLSTATE from the text);
refusals say what cannot be computed exactly and what to do. Exact numeric division and statistics are Python
functions over Arrow batches (:mod:`lakegate.connectors.duckdb.pgnumeric`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import duckdb
import pyarrow as pa

from lakegate.connectors.duckdb import pgkeys, pgnumeric

_NOT_EXACT = (
    " cannot be computed exactly as PostgreSQL does on the lake route (DuckDB); run it on a PostgreSQL source, "
    "or cast the operands to float8"
)

SETTINGS = ("SET integer_division = true",)

_FLOAT_CHECK = (
    "CASE WHEN isinf({r}) AND NOT isinf(a) AND NOT isinf(b) THEN error('value out of range: overflow') "
    "{under}ELSE {r} END"
)

MACROS = (
    # / and % of values whose types the gateway could not tell: division by zero is an error for every type
    # (not of a NULL dividend: PostgreSQL's operators are strict, NULL / 0 is NULL);
    # numeric division picks its result scale from the values (the gateway rewrites it when it knows the types)
    "CREATE MACRO pg_div(a, b) AS CASE WHEN a IS NULL THEN NULL WHEN b = 0 THEN error('division by zero') "
    "WHEN starts_with(typeof(a), 'DECIMAL') OR starts_with(typeof(b), 'DECIMAL') "
    f"THEN error('division of numeric values whose types the gateway cannot tell{_NOT_EXACT}') ELSE a / b END",
    # an integer modulo -1 is 0 (PostgreSQL's int4mod spares the minimum value's overflow; DuckDB raised one)
    "CREATE MACRO pg_mod(a, b) AS CASE WHEN a IS NULL THEN NULL WHEN b = 0 THEN error('division by zero') "
    "WHEN b = -1 AND typeof(a) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT') THEN a - a "
    "ELSE a % b END",
    # unconstrained numerics (DECIMAL(38, 18) on the lake route) as their values' own digits: PostgreSQL's
    # result scales follow the display scale of each value (trailing zeros a value was written with are lost)
    "CREATE MACRO pg_loose_text(x) AS regexp_replace(regexp_replace(CAST(x AS VARCHAR), "
    "'([.][0-9]*?)0+$', '\\1'), '[.]$', '')",
    "CREATE MACRO pg_text_scale(x) AS CASE WHEN x IS NULL THEN NULL "
    "WHEN strpos(pg_loose_text(x), '.') = 0 THEN 0 "
    "ELSE length(pg_loose_text(x)) - strpos(pg_loose_text(x), '.') END",
    "CREATE MACRO pg_numeric_rescale(s, d) AS CASE WHEN s IS NULL OR strpos(s, '.') = 0 THEN s "
    "ELSE left(s, strpos(s, '.') + coalesce(d, 0)) END",
    # display scales (gateway/dialect_scale.py): of a numeric's exact text; of DuckDB's decimal type, where it is
    # PostgreSQL's; one scale for equal values of a group or a min/max tie (NULL, which pg_numeric_show refuses)
    "CREATE MACRO pg_numeric_scale(s) AS CASE WHEN s IS NULL THEN NULL WHEN strpos(s, '.') = 0 THEN 0 "
    "ELSE length(rtrim(s)) - strpos(s, '.') END",
    "CREATE MACRO pg_type_scale(x) AS CASE WHEN starts_with(typeof(x), 'DECIMAL(') "
    "THEN CAST(regexp_extract(typeof(x), ',([0-9]+)\\)', 1) AS INTEGER) ELSE 0 END",
    "CREATE MACRO pg_same_scale(a, b) AS CASE WHEN a = b THEN a END",
    # split_part: PostgreSQL refuses field 0 (DuckDB: ''); strict, so NULL arguments first
    "CREATE MACRO pg_split_part(s, d, n) AS CASE WHEN s IS NULL OR d IS NULL OR n IS NULL THEN NULL "
    "WHEN n = 0 THEN error('field position must not be zero') ELSE split_part(s, d, n) END",
    # << and >> as PostgreSQL's C computes them: the count taken modulo the promoted operand's width (32 bits for
    # smallint and integer, 64 for bigint: the machine's shift), the result wrapped to the type (no overflow error)
    "CREATE MACRO pg_wrap(x, bits) AS CASE WHEN ((x % (1::HUGEINT << bits)) + (1::HUGEINT << bits)) "
    "% (1::HUGEINT << bits) >= (1::HUGEINT << (bits - 1)) THEN ((x % (1::HUGEINT << bits)) + (1::HUGEINT << bits)) "
    "% (1::HUGEINT << bits) - (1::HUGEINT << bits) ELSE ((x % (1::HUGEINT << bits)) + (1::HUGEINT << bits)) "
    "% (1::HUGEINT << bits) END",
    "CREATE MACRO pg_shl(a, n, bits, mask) AS pg_wrap(a::HUGEINT * (1::HUGEINT << (n & mask)), bits)",
    "CREATE MACRO pg_shr(a, n, mask) AS a::BIGINT >> (n & mask)",
    "CREATE MACRO pg_zero_check(b, value) AS CASE WHEN b = 0 THEN error('division by zero') ELSE value END",
    # float arithmetic: PostgreSQL raises where the result overflows (or underflows) from finite operands
    "CREATE MACRO pg_float_div(a, b) AS CASE WHEN a IS NULL THEN NULL WHEN b = 0 THEN error('division by zero') ELSE "
    + _FLOAT_CHECK.format(
        r="(a / b)", under="WHEN (a / b) = 0 AND a <> 0 THEN error('value out of range: underflow') "
    )
    + " END",
    "CREATE MACRO pg_float_mul(a, b) AS "
    + _FLOAT_CHECK.format(
        r="(a * b)",
        under="WHEN (a * b) = 0 AND a <> 0 AND b <> 0 THEN error('value out of range: underflow') ",
    ),
    "CREATE MACRO pg_float_add(a, b) AS " + _FLOAT_CHECK.format(r="(a + b)", under=""),
    "CREATE MACRO pg_float_sub(a, b) AS " + _FLOAT_CHECK.format(r="(a - b)", under=""),
    # avg of a value whose type the gateway could not tell: a numeric in PostgreSQL when it is exact
    "CREATE MACRO pg_avg_arg(x) AS CASE WHEN typeof(x) IN ('DOUBLE', 'FLOAT') OR x IS NULL THEN x "
    f"ELSE error('avg() of integer or numeric values whose type the gateway cannot tell{_NOT_EXACT}') END",
    # '1.5'::int is an error in PostgreSQL (DuckDB rounds)
    "CREATE MACRO pg_int_text(s) AS CASE WHEN s IS NULL OR regexp_full_match(s, '\\s*[+-]?[0-9]+\\s*') THEN s "
    "ELSE error('invalid input syntax for type integer: \"' || s || '\"') END",
    # text -> float8/real: a value beyond the type's range, or one that underflows to zero, is PostgreSQL's error
    # (DuckDB reads it as an infinity or as 0)
    *(
        f"CREATE MACRO pg_{t}_text(s) AS CASE WHEN s IS NULL THEN NULL "
        f"WHEN (isinf(TRY_CAST(s AS {cast})) AND NOT regexp_full_match(s, '(?i)\\s*[+-]?inf(inity)?\\s*')) "
        f"OR (TRY_CAST(s AS {cast}) = 0 AND regexp_matches(s, '^\\s*[+-]?0*[.]?0*[1-9]')) "
        f"THEN error('\"' || s || '\" is out of range for type {name}') ELSE CAST(s AS {cast}) END"
        for t, cast, name in (("float8", "DOUBLE", "double precision"), ("float4", "FLOAT", "real"))
    ),
    # text -> unconstrained numeric: exact, or an error (DuckDB rounds what does not fit its decimal)
    "CREATE MACRO pg_numeric_text(s, scale) AS CASE WHEN s IS NULL THEN NULL "
    "WHEN NOT regexp_full_match(trim(s), '[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)') "
    "THEN error('invalid input syntax for type numeric: \"' || s || '\"') "
    "WHEN length(rtrim(split_part(trim(s), '.', 2), '0')) > scale "
    "OR length(ltrim(split_part(ltrim(trim(s), '+-'), '.', 1), '0')) > 38 - scale "
    "THEN error('the numeric ' || trim(s) || ' does not fit the lake route''s decimal(38, ' || scale || ')') "
    "ELSE trim(s) END",
    # float8 -> numeric goes through 15 significant digits in PostgreSQL, float4 -> numeric through 6
    "CREATE MACRO pg_float_numeric(x, digits) AS CASE WHEN isnan(x) OR isinf(x) "
    "THEN error('cannot convert ' || x || ' to a numeric the lake route''s decimal can hold') "
    "ELSE CAST(printf('%.' || digits || 'g', CAST(x AS DOUBLE)) AS VARCHAR) END",
    # PostgreSQL's spellings of booleans: t, true, y, yes, on, 1 and their opposites, any case, trimmed
    "CREATE MACRO pg_bool_text(s) AS CASE WHEN s IS NULL THEN NULL "
    "WHEN lower(trim(s)) IN ('t', 'tr', 'tru', 'true', 'y', 'ye', 'yes', 'on', '1') THEN true "
    "WHEN lower(trim(s)) IN ('f', 'fa', 'fal', 'fals', 'false', 'n', 'no', 'of', 'off', '0') THEN false "
    "ELSE error('invalid input syntax for type boolean: \"' || s || '\"') END",
    # substr(s, start[, n]): positions before 1 count (PostgreSQL), not from the end (DuckDB)
    "CREATE MACRO pg_substr(s, start) AS substring(s, greatest(start, 1)), "
    "(s, start, n) AS CASE WHEN n < 0 THEN error('negative substring length not allowed') "
    "WHEN start < 1 THEN substring(s, 1, greatest(start + n - 1, 0)) ELSE substring(s, start, n) END",
    # extract() is numeric in PostgreSQL: seconds and epoch keep their microseconds
    "CREATE MACRO pg_extract_second(x) AS CAST(microsecond(x) AS DECIMAL(18, 0)) * 0.000001",
    "CREATE MACRO pg_extract_epoch(x) AS CAST(epoch_us(x) AS DECIMAL(38, 0)) * 0.000001",
    "CREATE MACRO pg_date_trunc(unit, x) AS CASE WHEN isinf(x) THEN x ELSE date_trunc(unit, x) END",
    # date - date: an infinite date is an error (DuckDB subtracts its sentinel values)
    "CREATE MACRO pg_date_difference(a, b) AS CASE WHEN isinf(a) OR isinf(b) "
    "THEN error('cannot subtract infinite dates') ELSE CAST(a - b AS INTEGER) END",
    "CREATE MACRO pg_finite_field(x, value, infinite) AS CASE WHEN isinf(x) THEN infinite ELSE value END",
    # age() of an infinite timestamp: DuckDB answers a huge interval (infinity) or NULL (-infinity), PostgreSQL 17
    # an infinite interval, which the lake route cannot hold: the refusal of infinite arithmetic (pgerrors)
    "CREATE MACRO pg_finite_ts(x) AS CASE WHEN isinf(x) THEN error('Cannot subtract infinite timestamps') "
    "ELSE x END",
    "CREATE MACRO pg_infinity_sign(x) AS "
    "CASE WHEN x > '2000-01-01' THEN 'infinity'::DOUBLE ELSE '-infinity'::DOUBLE END",
    "CREATE MACRO pg_infinite_field(x, field) AS "
    "error('extract(' || field || ') of an infinite date or timestamp is ' || CASE WHEN x > '2000-01-01' "
    "THEN '' ELSE '-' END || 'Infinity in PostgreSQL, which the lake route''s decimal cannot hold; use "
    "date_part(), which is a float, or filter with isfinite()')",
    # arrays: a NULL array is an empty one for concatenation (DuckDB's || gives NULL)
    "CREATE MACRO pg_array_cat(a, b) AS CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE list_concat(a, b) END",
    "CREATE MACRO pg_array_remove(a, e) AS list_filter(a, lambda x: x IS DISTINCT FROM e)",
    # the array bound once (a one-element lambda), so nested calls do not copy it
    "CREATE MACRO pg_array_positions(a, e) AS list_transform([a], lambda l: "
    "CAST(list_filter(range(1, len(l) + 1), lambda i: l[i] IS NOT DISTINCT FROM e) AS INTEGER[]))[1]",
    "CREATE MACRO pg_array_length(a, d) AS CASE WHEN d <> 1 THEN "
    "error('array_length() of a dimension other than 1 is not supported on the lake route') "
    "WHEN len(a) = 0 THEN NULL ELSE CAST(len(a) AS INTEGER) END",
    "CREATE MACRO pg_array_upper(a, d) AS pg_array_length(a, d)",
    "CREATE MACRO pg_array_lower(a, d) AS CASE WHEN pg_array_length(a, d) IS NULL THEN NULL ELSE 1 END",
    "CREATE MACRO pg_cardinality(a) AS CAST(len(a) AS INTEGER)",
    # PostgreSQL functions DuckDB lacks, under their own names (exact: each is in the differential corpus)
    "CREATE MACRO jsonb_typeof(j) AS CASE json_type(CAST(j AS JSON)) WHEN 'OBJECT' THEN 'object' "
    "WHEN 'ARRAY' THEN 'array' WHEN 'VARCHAR' THEN 'string' WHEN 'BOOLEAN' THEN 'boolean' WHEN 'NULL' THEN 'null' "
    "WHEN 'UBIGINT' THEN 'number' WHEN 'BIGINT' THEN 'number' WHEN 'DOUBLE' THEN 'number' "
    "WHEN 'HUGEINT' THEN 'number' WHEN 'UHUGEINT' THEN 'number' END",
    "CREATE MACRO json_typeof(j) AS jsonb_typeof(j)",
    "CREATE MACRO every(x) AS bool_and(x)",
    "CREATE MACRO jsonb_array_length(j) AS CASE WHEN j IS NULL THEN NULL "
    "WHEN json_type(CAST(j AS JSON)) = 'ARRAY' THEN CAST(json_array_length(CAST(j AS JSON)) AS INTEGER) "
    "WHEN json_type(CAST(j AS JSON)) = 'OBJECT' THEN error('cannot get array length of a non-array') "
    "ELSE error('cannot get array length of a scalar') END",
    "CREATE MACRO array_dims(a) AS CASE WHEN a IS NULL OR len(a) = 0 THEN NULL "
    "WHEN typeof(a) LIKE '%[][]' THEN error('array_dims() of a multidimensional array is not supported on "
    "the lake route') ELSE '[1:' || len(a) || ']' END",
    # width_bucket of float8 as PostgreSQL 14+ computes it (strict: NULL for a NULL argument), of numerics in exact
    # arithmetic (the gateway calls pg_width_bucket_numeric where it knows them), of a sorted thresholds array
    "CREATE MACRO width_bucket(x, lo, hi, n) AS CASE "
    "WHEN x IS NULL OR lo IS NULL OR hi IS NULL OR n IS NULL THEN NULL "
    "WHEN typeof(x) LIKE 'DECIMAL%' OR typeof(lo) LIKE 'DECIMAL%' OR typeof(hi) LIKE 'DECIMAL%' THEN "
    f"error('width_bucket() of numeric values{_NOT_EXACT}') "
    "WHEN n <= 0 THEN error('count must be greater than zero') "
    "WHEN isnan(CAST(x AS DOUBLE)) OR isnan(CAST(lo AS DOUBLE)) OR isnan(CAST(hi AS DOUBLE)) "
    "THEN error('operand, lower bound, and upper bound cannot be NaN') "
    "WHEN isinf(CAST(lo AS DOUBLE)) OR isinf(CAST(hi AS DOUBLE)) THEN error('lower and upper bounds must be finite') "
    "WHEN lo = hi THEN error('lower bound cannot equal upper bound') "
    "WHEN lo < hi THEN CASE WHEN x < lo THEN 0 WHEN x >= hi THEN CAST(n AS INTEGER) + 1 "
    "ELSE CAST(least(trunc(n * pg_bucket_share(x, lo, hi)), n - 1) AS INTEGER) + 1 END "
    "ELSE CASE WHEN x > lo THEN 0 WHEN x <= hi THEN CAST(n AS INTEGER) + 1 "
    "ELSE CAST(least(trunc(n * pg_bucket_share(-CAST(x AS DOUBLE), -CAST(lo AS DOUBLE), -CAST(hi AS DOUBLE))), "
    "n - 1) AS INTEGER) + 1 END END",
    "CREATE MACRO pg_bucket_share(x, lo, hi) AS CASE WHEN isinf(CAST(hi AS DOUBLE) - lo) "
    "THEN (CAST(x AS DOUBLE) / 2 - CAST(lo AS DOUBLE) / 2) / (CAST(hi AS DOUBLE) / 2 - CAST(lo AS DOUBLE) / 2) "
    "ELSE (CAST(x AS DOUBLE) - lo) / (CAST(hi AS DOUBLE) - lo) END",
    "CREATE MACRO pg_width_bucket_numeric(x, lo, hi, n) AS CASE "
    "WHEN x IS NULL OR lo IS NULL OR hi IS NULL OR n IS NULL THEN NULL "
    "WHEN n <= 0 THEN error('count must be greater than zero') "
    "WHEN lo = hi THEN error('lower bound cannot equal upper bound') "
    "WHEN lo < hi THEN CASE WHEN x < lo THEN 0 WHEN x >= hi THEN CAST(n AS INTEGER) + 1 "
    "ELSE CAST(pg_numeric_div(CAST((x - lo) * n AS VARCHAR), CAST(hi - lo AS VARCHAR), 0, 'trunc') AS INTEGER) + 1 END "
    "ELSE CASE WHEN x > lo THEN 0 WHEN x <= hi THEN CAST(n AS INTEGER) + 1 "
    "ELSE CAST(pg_numeric_div(CAST((lo - x) * n AS VARCHAR), CAST(lo - hi AS VARCHAR), 0, 'trunc') AS INTEGER) + 1 "
    "END END",
    "CREATE MACRO pg_bounds0(a) AS {'l': CAST(0 AS BIGINT), 'r': CAST(len(a) AS BIGINT)}",
    # width_bucket(x, thresholds): PostgreSQL's binary search (on an unsorted array too), log2(n) + 1 steps
    "CREATE MACRO pg_width_bucket_array(x, a) AS CASE WHEN x IS NULL OR a IS NULL THEN NULL "
    "WHEN list_contains(list_transform(a, lambda e: e IS NULL), true) "
    "THEN error('thresholds array must not contain NULLs') "
    "ELSE CAST(list_reduce(list_transform(range(CAST(ceil(log2(len(a) + 1)) AS BIGINT) + 1), lambda i: pg_bounds0(a)), "
    "lambda s, i: CASE WHEN s.l >= s.r THEN s WHEN x < a[(s.l + s.r) // 2 + 1] THEN {'l': s.l, 'r': (s.l + s.r) // 2} "
    "ELSE {'l': (s.l + s.r) // 2 + 1, 'r': s.r} END, pg_bounds0(a)).l AS INTEGER) END",
    # PostgreSQL's output text (gateway/dialect_classes.py): bytea in hex, dates and timestamps before year 1 with
    # BC after them (DuckDB writes "(BC)" after the date), an array's elements quoted as array_out quotes them
    r"CREATE MACRO pg_bytea_out(b) AS '\x' || lower(hex(b))",
    "CREATE MACRO pg_datetime_out(x) AS CASE WHEN contains(CAST(x AS VARCHAR), ' (BC)') "
    "THEN replace(CAST(x AS VARCHAR), ' (BC)', '') || ' BC' ELSE CAST(x AS VARCHAR) END",
    "CREATE MACRO pg_array_quote(s) AS CASE WHEN s IS NULL THEN 'NULL' "
    r"""WHEN s = '' OR upper(s) = 'NULL' OR regexp_matches(s, '[{}",\\ \t\n\r\x0b\f]') """
    r"""THEN '"' || replace(replace(s, '\', '\\'), '"', '\"') || '"' ELSE s END""",
    "CREATE MACRO pg_array_braces(texts) AS CASE WHEN texts IS NULL THEN NULL "
    "ELSE '{' || array_to_string(texts, ',') || '}' END",
    # array_to_string: NULL for a NULL array or delimiter; NULL elements skipped, or written as the null string
    "CREATE MACRO pg_array_join(texts, d) AS CASE WHEN texts IS NULL OR d IS NULL THEN NULL "
    "ELSE array_to_string(list_filter(texts, lambda t: t IS NOT NULL), d) END",
    "CREATE MACRO pg_array_join_nulls(texts, d, n) AS "
    "pg_array_join(list_transform(texts, lambda t: coalesce(t, n)), d)",
    # @>, <@ and &&: a NULL element equals nothing (PostgreSQL's array_contain_compare); flattened by the gateway
    "CREATE MACRO pg_array_contains(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL "
    "ELSE len(list_filter(b, lambda e: e IS NULL OR NOT list_contains(a, e))) = 0 END",
    "CREATE MACRO pg_array_overlaps(a, b) AS CASE WHEN a IS NULL OR b IS NULL THEN NULL "
    "ELSE len(list_filter(a, lambda e: e IS NOT NULL AND list_contains(b, e))) > 0 END",
    # subscripts: an index below 1 (or past the end) is NULL, a slice's bounds are clamped to the array
    "CREATE MACRO pg_subscript(a, i) AS CASE WHEN i >= 1 THEN a[i] END",
    "CREATE MACRO pg_slice(a, lo, hi) AS CASE WHEN a IS NULL THEN NULL "
    "WHEN greatest(lo, 1) > least(hi, len(a)) THEN list_slice(a, 1, 0) "
    "ELSE list_slice(a, greatest(lo, 1), least(hi, len(a))) END",
    # quote_literal: doubled quotes, and E'' with doubled backslashes when there is a backslash
    "CREATE MACRO quote_literal(s) AS CASE WHEN contains(CAST(s AS VARCHAR), chr(92)) THEN 'E''' || "
    "replace(replace(CAST(s AS VARCHAR), chr(92), chr(92) || chr(92)), '''', '''''') || '''' "
    "ELSE '''' || replace(CAST(s AS VARCHAR), '''', '''''') || '''' END",
    "CREATE MACRO overlay(s, r, f) AS left(s, f - 1) || r || substr(s, f + length(r)), "
    "(s, r, f, n) AS left(s, f - 1) || r || substr(s, f + n)",
    # x = ANY/ALL(array) with SQL's NULLs. x is looked at first: PostgreSQL evaluates it whatever the array (its
    # error is raised for an empty or NULL one too), where DuckDB skips it for a constant empty list.
    "CREATE MACRO pg_eq_any(x, a) AS CASE WHEN x IS NULL THEN CASE WHEN len(a) = 0 THEN false END "
    "WHEN a IS NULL THEN NULL WHEN len(a) = 0 THEN false WHEN list_contains(a, x) THEN true "
    "WHEN list_contains(list_transform(a, lambda e: e IS NULL), true) THEN NULL ELSE false END",
    "CREATE MACRO pg_eq_all(x, a) AS CASE WHEN x IS NULL THEN CASE WHEN len(a) = 0 THEN true END "
    "WHEN a IS NULL THEN NULL WHEN len(a) = 0 THEN true "
    "WHEN list_contains(list_transform(a, lambda e: e IS NOT NULL AND e <> x), true) THEN false "
    "WHEN list_contains(list_transform(a, lambda e: e IS NULL), true) THEN NULL ELSE true END",
    "CREATE MACRO pg_bools_any(b) AS CASE WHEN b IS NULL THEN NULL WHEN list_contains(b, true) THEN true "
    "WHEN list_count(b) < len(b) THEN NULL ELSE false END",
    "CREATE MACRO pg_bools_all(b) AS CASE WHEN b IS NULL THEN NULL WHEN list_contains(b, false) THEN false "
    "WHEN list_count(b) < len(b) THEN NULL ELSE true END",
    # x <op> ANY/ALL(array): NULL for a NULL array, else true/false/NULL over the comparisons as SQL's OR/AND
    # (x evaluated first, as above)
    *(
        f"CREATE MACRO pg_{name}_{kind}(x, a) AS CASE WHEN x IS NULL THEN CASE WHEN len(a) = 0 THEN {empty} END "
        f"ELSE pg_bools_{kind}(list_transform(a, lambda e: x {op} e)) END"
        for name, op in (("ne", "<>"), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="))
        for kind, empty in (("any", "false"), ("all", "true"))
    ),
    # case mapping as libc's towupper/towlower (PostgreSQL's with a libc collation): ß stays ß (DuckDB: ẞ)
    "CREATE MACRO pg_upper(s) AS replace(upper(replace(s, 'ß', chr(57344))), chr(57344), 'ß')",
    "CREATE MACRO pg_initcap(s) AS array_to_string(list_transform(range(1, length(s) + 1), lambda i: "
    "CASE WHEN i = 1 OR NOT regexp_matches(substring(s, i - 1, 1), '[\\pL\\pN]') "
    "THEN pg_upper(substring(s, i, 1)) ELSE lower(substring(s, i, 1)) END), '')",
    # string_to_array: an empty string has no elements; an empty delimiter keeps the string whole
    "CREATE MACRO pg_string_to_array(s, d) AS CASE WHEN s = '' THEN CAST([] AS VARCHAR[]) "
    "WHEN d IS NULL THEN string_split(s, '') WHEN d = '' THEN [s] ELSE string_split(s, d) END",
    # PostgreSQL's ISO 8601 interval text (IntervalStyle iso_8601, as the ingest keeps intervals)
    "CREATE MACRO pg_iso_interval(s) AS CASE WHEN s IS NULL THEN NULL ELSE "
    "to_months(CAST(coalesce(nullif(regexp_extract(s, '^P(-?[0-9]+)Y', 1), ''), '0') AS INTEGER) * 12 "
    "+ CAST(coalesce(nullif(regexp_extract(s, '^P(?:-?[0-9]+Y)?(-?[0-9]+)M', 1), ''), '0') AS INTEGER)) "
    "+ to_days(CAST(coalesce(nullif(regexp_extract(s, '^P[^T]*?(-?[0-9]+)D', 1), ''), '0') AS INTEGER)) "
    "+ to_microseconds(CAST(round(("
    "CAST(coalesce(nullif(regexp_extract(s, 'T(?:.*?)(-?[0-9]+)H', 1), ''), '0') AS DECIMAL(38, 6)) * 3600 "
    "+ CAST(coalesce(nullif(regexp_extract(s, 'T(?:[^M]*?H)?(-?[0-9]+)M', 1), ''), '0') AS DECIMAL(38, 6)) * 60 "
    "+ CAST(coalesce(nullif(regexp_extract(s, 'T(?:.*?)(-?[0-9.]+)S', 1), ''), '0') AS DECIMAL(38, 6))"
    ") * 1000000) AS BIGINT)) END",
)


def _text_udf(fn: Callable[..., str | None], arity: int) -> Callable[..., pa.Array]:
    """A per-value Python function -> a vectorised (Arrow) DuckDB function of ``arity`` arguments; NULL in,
    NULL out."""

    def vectorised(*columns: pa.Array) -> pa.Array:
        out: list[str | None] = []
        for values in zip(*(c.to_pylist() for c in columns), strict=True):
            out.append(None if any(v is None for v in values) else fn(*values))
        return pa.array(out, type=pa.string())

    params = [inspect.Parameter(f"a{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(arity)]
    vectorised.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]  # DuckDB counts them
    return vectorised


def _divide(a: str, b: str, scale: int, mode: str) -> str:
    if mode == "trunc":
        return pgnumeric.integral(a, b)
    return pgnumeric.divide(a, b, int(scale))


def _variance(n: str, total: str, squares: str, kind: str, scale: int) -> str | None:
    return pgnumeric.variance(
        n, total, squares, sample=kind.endswith("samp"), root=kind.startswith("stddev"), scale=int(scale)
    )


def _show(values: pa.Array, scales: pa.Array) -> pa.Array:
    """pg_numeric_show(text, scale): a decimal's text at PostgreSQL's display scale (NULL scale: equal values of
    different scales met, which PostgreSQL shows in its plan's order)."""
    out: list[str | None] = []
    for text, scale in zip(values.to_pylist(), scales.to_pylist(), strict=True):
        if text is None:
            out.append(None)
        elif scale is None:
            raise ValueError(
                f"equal numeric values written with different display scales meet here (one is {text}), and "
                "PostgreSQL shows whichever its plan reads first: the lake route cannot tell which; run the query "
                "on a PostgreSQL source, or round the values to one scale"
            )
        else:
            out.append(pgnumeric.shown(text, int(scale)))
    return pa.array(out, type=pa.string())


def _float_out(single: bool) -> Callable[[pa.Array], pa.Array]:
    """pg_float8_out(x) / pg_float4_out(x): PostgreSQL's output text of a float (see pgnumeric.float_text)."""

    def vectorised(values: pa.Array) -> pa.Array:
        texts = [None if v is None else pgnumeric.float_text(v, single) for v in values.to_pylist()]
        return pa.array(texts, type=pa.string())

    return vectorised


FUNCTIONS: tuple[tuple[str, Callable[..., Any], list[str]], ...] = (
    ("pg_numeric_div", _divide, ["VARCHAR", "VARCHAR", "INTEGER", "VARCHAR"]),
    ("pg_numeric_var", _variance, ["VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "INTEGER"]),
)


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create the macros and functions in ``con`` (before its configuration is locked)."""
    for statement in (*SETTINGS, *MACROS):
        con.execute(statement)
    for name, fn, parameters in FUNCTIONS:
        udf: Any = _text_udf(fn, len(parameters))
        con.create_function(name, udf, parameters, "VARCHAR", type="arrow", null_handling="special")  # type: ignore[call-overload]
    for name, vectorised, parameters, result in pgkeys.FUNCTIONS:  # keys of types held as text
        con.create_function(name, vectorised, parameters, result, type="arrow", null_handling="special")  # type: ignore[call-overload]
    for name, single, parameter in (("pg_float8_out", False, "DOUBLE"), ("pg_float4_out", True, "FLOAT")):
        con.create_function(  # type: ignore[call-overload]
            name, _float_out(single), [parameter], "VARCHAR", type="arrow", null_handling="special"
        )
    con.create_function(  # type: ignore[call-overload]
        "pg_numeric_show", _show, ["VARCHAR", "INTEGER"], "VARCHAR", type="arrow", null_handling="special"
    )

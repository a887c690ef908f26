-- errors PostgreSQL raises: the gateway must answer 400 with the same SQLSTATE on both routes
SELECT id, 100 / (i4 - i4) FROM {nums} WHERE i4 IS NOT NULL
SELECT id, n / 0 FROM {nums} WHERE n IS NOT NULL
SELECT id, i8 % 0 FROM {nums} WHERE i8 IS NOT NULL
SELECT ln(0) FROM {one}
SELECT ln(-1) FROM {one}
SELECT log(-1) FROM {one}
SELECT sqrt(-1) FROM {one}
SELECT sqrt(-1::float8) FROM {one}
SELECT 40000::smallint FROM {one}
SELECT 3000000000::bigint::int FROM {one}
SELECT 1e20::float8::int FROM {one}
SELECT 1e20::float8::bigint FROM {one}
SELECT id, (i4::bigint * 10)::int FROM {nums} WHERE i4 IS NOT NULL
SELECT id, i2 * 1000::smallint FROM {nums} WHERE i2 IS NOT NULL
SELECT id, i8 * 2 FROM {nums} WHERE i8 IS NOT NULL
SELECT id, i8 - (-9223372036854775807 - 1) FROM {nums} WHERE i8 IS NOT NULL
SELECT 'x'::uuid FROM {one}
SELECT 'abc'::bigint FROM {one}
SELECT 'abc'::smallint FROM {one}
SELECT 'abc'::numeric FROM {one}
SELECT ' 12 '::int, '  7'::bigint FROM {one}
SELECT '1e3'::int FROM {one}
SELECT 'abc'::float8 FROM {one}
SELECT 'yes'::boolean, 'off'::boolean FROM {one}
SELECT 123.456::numeric(4,2) FROM {one}
SELECT id, n::numeric(3,1) FROM {nums} WHERE n IS NOT NULL
SELECT '2024-13-01'::date FROM {one}
SELECT '2024-01-01 25:00'::timestamp FROM {one}
SELECT 'tomorrowish'::timestamp FROM {one}
SELECT 'soon'::timestamptz FROM {one}
SELECT id, t ~ '[a' FROM {strs}
SELECT id, t ~ 'a**' FROM {strs}
SELECT id, regexp_replace(t, '(', 'x') FROM {strs}
SELECT substr('abc', 1, -1) FROM {one}
SELECT id, substring(t from 2 for -1) FROM {strs}
SELECT id, i4 / 0 FROM {nums} WHERE false
SELECT count(*) / 0 FROM {nums}
SELECT avg(i4) / 0 FROM {nums}
SELECT id, d / 0 FROM {nums} WHERE d IS NOT NULL
SELECT id, r / 0::real FROM {nums} WHERE r IS NOT NULL
SELECT 10 / (SELECT count(*) FROM {nums} WHERE id < 0) FROM {one}
SELECT '1e400'::float8 FROM {one}
SELECT '1e-400'::float8 FROM {one}
SELECT '1e39'::real FROM {one}
SELECT x::float8, x::real FROM {one}, unnest(ARRAY[' inf ', '-Infinity', 'NaN', '1.4e-45', '0e-400', '-0', '3.4e38', '1e308']) x
SELECT t::float8 FROM {strs} WHERE id = 11
-- aggregates PostgreSQL does not run as window functions (DuckDB computes them; one ran seconds past its limit)
SELECT id, count(DISTINCT x) OVER (ORDER BY id) FROM {grp}
SELECT id, sum(DISTINCT x) FILTER (WHERE h = 1) OVER () FROM {grp}
SELECT id, array_agg(x ORDER BY id) OVER () FROM {grp}
SELECT id, string_agg(x::text, ',' ORDER BY id) OVER (PARTITION BY g) FROM {grp}
SELECT id, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) OVER () FROM {grp}
SELECT id, mode() WITHIN GROUP (ORDER BY x) OVER (PARTITION BY g) FROM {grp}

-- Differences the 30-minute run (python -m tests.fuzz --minutes 30 --seed 1, 2026-12-07) found outside
-- tests/fuzz/known.py, minimised, one per kind: not fixed yet (issue 28). Fix one, then move its query to
-- regressions.sql (which CI runs) and delete it here. Not run by the suite.
-- [lake] PostgreSQL refused (cannot add infinite interval to time) but the gateway answered 200
SELECT CAST('01:30:00' AS TIME) + AGE(a.ts, '1970-01-01') FROM {fz_time} AS a
-- [lake] an error that is no refusal: 400 SQLSTATE 2201G: DuckDB: operand, lower bound, and upper bound cannot be NaN (SQLSTATE 2201G)
SELECT WIDTH_BUCKET(a.f4, 0, 100, 5) % ARRAY_UPPER(CAST('{}' AS TEXT[]), 1) AS r0 FROM {fz_num} AS a LEFT JOIN {fz_time} AS b ON a.k = b.k
-- [lake] PostgreSQL raised SQLSTATE 22008 (cannot subtract infinite interval from time), the gateway no SQLSTATE (DuckDB: Binder Error: Could not choose a best candidate function for the fu
SELECT CAST('00:00:00' AS TIME) + b.iv - AGE('-infinity', '2000-01-01 00:00:00') FROM {fz_time} AS a FULL JOIN {fz_time} AS b ON a.k = b.k
-- [lake] the 30-minute run of 23f66a8: DuckDB groups intervals of mixed-sign fields otherwise than PostgreSQL
-- ('1 mon -1 day' and '29 days' are one value in PostgreSQL: one span); comparisons are fixed (pg_interval_span),
-- EXCEPT / INTERSECT / UNION / DISTINCT / GROUP BY are not
SELECT a.iv FROM {fz_time} AS a EXCEPT SELECT JUSTIFY_DAYS(b.iv) FROM {fz_time} AS b
-- [lake] a float4 min() over an outer join: PostgreSQL -3.4e+38, the gateway -3.3999999521443642e+38 (shown as double?)
SELECT a.id, MIN(b.f4) FROM {fz_num} AS a LEFT JOIN {fz_num} AS b ON a.id = b.k + 1 GROUP BY 1

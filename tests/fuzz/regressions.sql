-- Minimal queries the fuzzer found answered differently (fixed since): tests/test_fuzz.py runs each on
-- PostgreSQL, pg.*, lake.* and federated. `python -m tests.fuzz --save` appends what a run finds.
-- interval literals with PostgreSQL's unit words were a DuckDB syntax error
SELECT (time '00:00:00' - interval '1 mon')::text, sum(interval '1 mon') FROM {fz_time} a
-- 'type literal'::cast is (type literal)::cast: the lake typed it as the literal's type
SELECT timestamp '2000-01-01 00:00:00'::date FROM {fz_time} a
-- x <op> ANY/ALL(array) of a NULL array is NULL, and NULL elements decide nothing
SELECT a.id, (1 > ALL(a.ia)), (1 < ANY(a.ia)), (2 <> ALL(a.ia)) FROM {fz_arr} a
-- every() with FILTER (DuckDB's every is a macro)
SELECT every(a.b) FILTER (WHERE a.k > 0), every(NOT a.b) FROM {fz_num} a
-- date - date of an infinite date is PostgreSQL's 22008
SELECT (b.d - b.d) FROM {fz_time} b
-- decode(char(n), 'escape') reads the value without its padding; text::bytea is PostgreSQL's byteain
SELECT decode(a.c, 'escape'), a.t::bytea FROM {fz_txt} a WHERE a.t NOT LIKE '%\\%'
-- degrees/radians to the last bit
SELECT degrees(a.f8), radians(a.f8) FROM {fz_num} a
-- -2147483648 is an int4 (PostgreSQL negates the constant)
SELECT (-2147483648), -2147483648 FROM {fz_txt} a
-- sha256(bytea) is a bytea
SELECT a.by || (sha256(a.by) || decode('ß', 'escape')) FROM {fz_txt} a
-- an aggregate with DISTINCT or ORDER BY under OVER is PostgreSQL's 0A000
SELECT count(DISTINCT a.k) OVER (ORDER BY a.id) FROM {fz_num} a
-- constant subexpressions PostgreSQL folds while planning raise its errors, whatever the rows (gateway/pgcheck.py)
WITH c AS (SELECT CAST(' x ' AS INT) AS c2 FROM {fz_num} AS a) SELECT 1 AS r2 FROM c
SELECT array_agg('12' ORDER BY '12') FROM {fz_arr} a
-- ORDER BY a constant inside an aggregate
SELECT string_agg(a.t, ',' ORDER BY 'É') FROM {fz_txt} a WHERE a.t IS NOT NULL AND a.id < 3
-- sin() of an infinity is PostgreSQL's 22003
SELECT sin(a.f8) FROM {fz_num} a
-- interval::text on the lake is PostgreSQL's output (IntervalStyle postgres: mons, days, +/- fields)
SELECT CAST(INTERVAL '1 year 2 mons 3 days' AS TEXT) FROM {fz_arr} AS a CROSS JOIN LATERAL UNNEST(a.ta) WITH ORDINALITY AS u(x, n)
-- NULL / 0 is NULL (strict operators), not division by zero
WITH c AS (SELECT a.k FROM {fz_num} AS a) SELECT CAST(CAST('"s"' AS JSONB) ->> 'a' AS DECIMAL) / c.k AS r0 FROM c
-- interval::text on the lake is PostgreSQL's output (IntervalStyle postgres: mons, days, +/- fields)
SELECT MODE() WITHIN GROUP (ORDER BY CAST(INTERVAL '1 MON' AS TEXT)) FROM {fz_txt} AS a
-- integer::numeric took DECIMAL(38, 0), and IN against numeric(20, 6) rounded the column to whole numbers
SELECT a.nu FROM {fz_num} AS a WHERE a.n IN (SELECT CAST(b.i8 AS DECIMAL) FROM {fz_num} AS b)
-- integer << past the type's width wraps as PostgreSQL's C does (DuckDB raised an overflow)
SELECT a.id, u.x << 7 FROM {fz_arr} AS a CROSS JOIN LATERAL UNNEST(a.ia) WITH ORDINALITY AS u(x, n)
-- a shift count is taken modulo the operand's width (DuckDB: a negative count gave 0)
SELECT -1 >> -2 FROM {fz_arr} AS a CROSS JOIN LATERAL UNNEST(a.ia) WITH ORDINALITY AS u(x, n)
-- interval::text on the lake is PostgreSQL's output (IntervalStyle postgres: mons, days, +/- fields)
SELECT CAST(a.iv AS TEXT) FROM {fz_time} AS a FULL JOIN {fz_txt} AS b ON a.id = b.k
-- 1e3 is a numeric: its text is 1000 (DuckDB read a double: 1000.0)
SELECT ARRAY_AGG(CAST(1e3 AS TEXT) ORDER BY 1e3 NULLS FIRST) FROM {fz_txt} AS a
-- interval::text on the lake is PostgreSQL's output (IntervalStyle postgres: mons, days, +/- fields)
SELECT CAST(a.iv AS TEXT) FROM {fz_time} AS a
-- trunc/round of numeric(p, s) to more than s places has that scale
SELECT SUM(TRUNC(a.n, 10)) FROM {fz_num} AS a
-- trunc/round of numeric(p, s) to more than s places has that scale
SELECT 'ß', TRUNC(a.n, 10) FROM {fz_num} AS a GROUP BY 1, 2
-- split_part(s, d, 0) is PostgreSQL's 22023 when it runs (DuckDB answered '')
SELECT '00:00:00', a.u, MODE() WITHIN GROUP (ORDER BY SPLIT_PART(a.t, ',', 0)) FROM {fz_txt} AS a GROUP BY 1, 2
-- 'text' AT TIME ZONE z reads the literal as a timestamptz (DuckDB: no best candidate)
WITH c AS (SELECT a.ts AT TIME ZONE 'UTC' AS c1 FROM {fz_time} AS a) SELECT '2000-01-01 00:00:00' AT TIME ZONE 'UTC' AS r1 FROM c
-- a string beside a bytea in COALESCE/CASE/lag is bytea input ('\x' was a DuckDB conversion error)
SELECT CAST('\x' AS BYTEA), COALESCE(a.by, '\x'), CASE WHEN a.id > 2 THEN a.by ELSE '\x00' END FROM {fz_txt} AS a
-- x = ANY/ALL of a string literal: an array of x's type
SELECT a.id FROM {fz_num} AS a WHERE a.i4 = ANY('{1,2,3}') OR a.i8 <> ALL('{1,NULL}')
SELECT a.id FROM {fz_txt} AS a WHERE a.t = ANY('{hello,"Hello World"}')
-- array_append/prepend/remove/cat and || of integer arrays take the wider integer type (anycompatible)
SELECT ARRAY_REMOVE(ARRAY[2147483647], a.i8) AS r2 FROM {fz_num} AS a JOIN {fz_time} AS b ON a.k = b.id
SELECT a.ta, ARRAY_REMOVE(a.ia, 9223372036854775807) FROM {fz_arr} AS a GROUP BY 1, 2
SELECT CASE WHEN NULL THEN a.k END, ARRAY_APPEND(a.ia[3:2], 9223372036854775807), STRING_TO_ARRAY('a%', ',') FROM {fz_arr} AS a INTERSECT SELECT CARDINALITY(ARRAY[1, NULL]), NULL, ARRAY['a', 'b'] FROM {fz_num} AS b
SELECT ARRAY_APPEND(a.ia, a.id::int8), ARRAY_PREPEND(a.id::int2, a.ia), ARRAY_CAT(a.ia, ARRAY[1::int8]), a.ia || 5000000000, ARRAY[1::int2] || a.ia FROM {fz_arr} AS a
-- decimals whose common type needs more than 38 digits (DuckDB rounded the fractions away): a named 0A000
SELECT GREATEST(a.n38, a.n) FROM {fz_num} AS a
SELECT a.n38 FROM {fz_num} AS a UNION ALL SELECT b.n FROM {fz_num} AS b
SELECT a.id FROM {fz_num} AS a WHERE a.n38 IN (SELECT b.n FROM {fz_num} AS b)
SELECT ARRAY[a.n38, a.n], a.n38 IN (1.5, 2), COALESCE(a.n, 0), CASE WHEN a.b THEN a.n ELSE a.i8 END FROM {fz_num} AS a
-- a char(n) appended to (or removed from) a text array is text, without its padding
SELECT ARRAY_APPEND(a.ta, CAST(' x ' AS CHAR(4))), ARRAY_REMOVE(a.ta, CAST('b ' AS CHAR(3))) FROM {fz_arr} AS a
-- the display scale of a grouped greatest/coalesce/case of numerics is the group's (was a DuckDB binder error)
SELECT INTERVAL '-2 HOURS', GREATEST(a.n38, a.i2) FROM {fz_num} AS a GROUP BY 1, 2
SELECT a.k, GREATEST(a.n, a.i2), COALESCE(a.n, a.i4), count(*) FROM {fz_num} AS a GROUP BY 1, 2, 3
-- a whole-row reference counts the rows a LEFT JOIN matched (DuckDB counted its struct, never NULL: every row)
SELECT COUNT(b.*), COUNT(a.*) FROM {fz_num} AS a LEFT JOIN {fz_txt} AS b ON a.id = b.id + 3
SELECT a.k, COUNT(b) FROM {fz_txt} AS a LEFT JOIN {fz_txt} AS b ON a.id = b.id + 3 GROUP BY 1 ORDER BY 1
-- DuckDB's struct printed the lake's own _lsn and _commit_ts: refused
SELECT b::text FROM {fz_txt} AS a LEFT JOIN {fz_txt} AS b ON a.id = b.id + 3
-- an aggregate's arguments and ORDER BY keys are evaluated only for the rows its FILTER keeps
SELECT SUM(100 / a.i4) FILTER (WHERE a.i4 <> 0), COUNT(CAST(a.i8 AS SMALLINT)) FILTER (WHERE a.i8 BETWEEN -5 AND 5) FROM {fz_num} AS a
SELECT STRING_AGG(a.v, ',' ORDER BY SUBSTRING(a.v FROM 2 FOR -1)) FILTER(WHERE NULL) FROM {fz_txt} AS a
-- first_value/lag/lead evaluate their argument at the picked row only (and lead's default past the end only)
SELECT FIRST_VALUE(CAST(a.t AS BYTEA)) OVER (ORDER BY a.by, a.id) FROM {fz_txt} AS a
SELECT LEAD(CAST(a.t AS BYTEA), 2, '\x') OVER (PARTITION BY a.id ORDER BY a.id, a.id) FROM {fz_txt} AS a
-- extract(epoch from date) is a whole number of seconds (scale 0); a rewrite's decimal(38, 0) IN (SELECT numeric(20, 6))
SELECT FIRST_VALUE(EXTRACT(EPOCH FROM CAST('2024-01-01' AS DATE))) OVER (PARTITION BY 'ß' ORDER BY a.i8, a.id) FROM {fz_num} AS a
SELECT a.n FROM {fz_num} AS a WHERE EXTRACT(HOUR FROM INTERVAL '-2 HOURS') IN (SELECT b.n FROM {fz_num} AS b)
-- greatest of an unconstrained numeric in a grouped query (was a DuckDB binder error: nested aggregates)
SELECT a.k, GREATEST(a.nu, a.k) FROM {fz_num} AS a WHERE a.nu < 1000 GROUP BY 1, 2
-- lead's numeric literal default beside a computed numeric: each value's own scale (a CASE in a decimal for both)
SELECT LEAD(32767 + a.n, 2, 1e3) OVER (ORDER BY '2024-03-10', a.id) FROM {fz_num} AS a
SELECT LEAD(1e3, 2, 0.000001) OVER (PARTITION BY a.k ORDER BY FALSE, a.id) FROM {fz_txt} AS a
-- interval > ALL of an array literal: refused by name (was a DuckDB binder error)
SELECT a.tm AS r3 FROM {fz_time} AS a WHERE a.tz - a.tz > ALL('{}')
-- PostgreSQL 16's integer literals: 0x1F, 0o17, 1_000 (sqlglot read 1 AS _000 and 0 AS o17; 0x1F as a blob)
SELECT 0x1F + a.id, 0b101, 1_000, 0o17, 0X1f, 1_000.5, 1e1_0 FROM {fz_num} AS a WHERE a.id = 1
-- refused by name: a cast to interval with a field restriction (DuckDB ignored it), bit string literals
SELECT CAST('3 years 4 months 5 days' AS INTERVAL YEAR), a.id FROM {fz_num} AS a WHERE a.id = 1
SELECT x'1F', b'101', a.id FROM {fz_num} AS a WHERE a.id = 1
-- pg_typeof names PostgreSQL's type (DuckDB's typeof said decimal(20,6), varchar, double)
SELECT pg_typeof(a.i2), pg_typeof(a.n), pg_typeof(a.i2 + 1), pg_typeof(1.5), pg_typeof(a.f4 * 2), pg_typeof(ARRAY[a.i4]) FROM {fz_num} AS a WHERE a.id = 1
-- nullif(int4, int8) is an int4 (integers of two widths have an = of their own): sum() of it is an int8
SELECT b.k, SUM(NULLIF(b.k, b.i8)) FROM {fz_num} AS a RIGHT JOIN {fz_num} AS b ON a.k = b.k GROUP BY 1
-- PostgreSQL's analysis error comes before the lake route's evaluation of a constant
SELECT ARRAY_AGG('a%' ORDER BY 'a%' NULLS FIRST) FROM {fz_num} AS a WHERE CAST('abc' AS DECIMAL)
-- a quotient of numerics as a GROUP BY key: refused by name (was a DuckDB binder error)
SELECT a.n38 / NULLIF(a.nu, 0) FROM {fz_num} AS a GROUP BY 1
-- the 30-minute run of 23f66a8: numerics DuckDB's decimal(38) cannot hold, refused by name (were raw DuckDB errors)
SELECT STDDEV_SAMP(a.i8), VAR_POP(a.n) FROM {fz_num} AS a
SELECT CAST(CAST(1e300 AS DOUBLE PRECISION) AS DECIMAL), CAST(CAST('-Infinity' AS TEXT) AS DECIMAL) FROM {fz_txt} AS a
-- an integer modulo -1 is 0 (DuckDB: overflow of -2147483648 / -1); 'text' - date is date - date (infinite: 22008)
SELECT -2147483648 % NULLIF(a.i4, 0), a.i8 % -1, a.n % -1 FROM {fz_num} AS a
SELECT '2000-02-29' - a.d FROM {fz_time} AS a
-- age() of two text literals reads them as timestamptz (DuckDB could not choose)
SELECT AGE('2024-03-10 02:30:00', '2024-11-03 01:30:00.25') FROM {fz_arr} AS b
-- a grouped numeric shown from other columns than its key: refused by name (was a DuckDB binder error)
SELECT CAST(a.f8 AS DECIMAL) FROM {fz_num} AS a GROUP BY 1
SELECT '\x', a.nu - a.i4 FROM {fz_num} AS a GROUP BY 1, 2
-- gcd/lcm of a smallint is an int4 (there is no gcd(int2, int2))
SELECT GCD(CAST(a.k AS SMALLINT), a.id), GCD(a.i2, a.i2), LCM(CAST(3 AS SMALLINT), 4), GCD(a.i8, 6) FROM {fz_num} AS a WHERE a.id < 4
-- two intervals compare as PostgreSQL's one span of each ('1 mon -1 day' = '29 days'; DuckDB said false)
SELECT a.iv AS r2 FROM {fz_time} AS a WHERE JUSTIFY_DAYS(a.iv) <> a.iv
SELECT 'x' FROM {fz_time} AS a LEFT JOIN {fz_txt} AS b ON a.k = b.k WHERE a.iv BETWEEN MAKE_INTERVAL(days => 10) AND JUSTIFY_DAYS(a.iv)
SELECT a.id, a.iv > '1 day', a.iv = INTERVAL '29 days', '1 mon -1 day' = a.iv, a.iv IS DISTINCT FROM '1 mon -1 day' FROM {fz_time} AS a
-- PostgreSQL folds every minus over a number into the constant: - -2147483648 is the bigint 2147483648
SELECT - -2147483648, -(-2147483648), - - -2147483648, - -9223372036854775808 FROM {fz_num} AS a JOIN {fz_arr} AS b ON a.k = b.k
-- x = ANY(a) IN (...) is (x = ANY(a)) IN (...); x = ANY(NULL) is NULL (DuckDB: false)
SELECT a.n AS r1 FROM {fz_num} AS a WHERE a.i2 = ANY(NULL) IN (SELECT b.b FROM {fz_num} AS b)
SELECT a.id, a.i2 = ANY(NULL), a.i2 <> ALL(NULL) IS NULL FROM {fz_num} AS a
-- x <op> ANY/ALL of an empty array evaluates x (and raises its error) before answering false/true
SELECT a.b FROM {fz_num} AS a WHERE WIDTH_BUCKET(a.f8, 0, 100, 5) = ANY('{}')
SELECT a.id FROM {fz_num} AS a WHERE WIDTH_BUCKET(a.f8, 0, 100, 5) < ALL(CAST('{}' AS INT[]))
SELECT a.id, a.i4 = ANY('{}'), a.i4 <> ALL('{}'), a.i4 < ANY('{1,NULL}'), NULL::int = ANY('{}'), a.i4 >= ALL(NULL::int[]) FROM {fz_num} AS a
-- BETWEEN SYMMETRIC of intervals keeps SYMMETRIC (the span rewrite dropped it: 0 rows)
SELECT a.id, a.iv FROM {fz_time} AS a WHERE a.iv BETWEEN SYMMETRIC INTERVAL '30 days' AND INTERVAL '1 day'
-- grouped numerics shown by a qualified or unqualified key are answered (were refused)
SELECT a.n FROM {fz_num} AS a GROUP BY n
SELECT n FROM {fz_num} AS a GROUP BY a.n
-- count(t.*) of a member of a parenthesised join counts its present rows (DuckDB counted its struct: 1, not 0)
SELECT a.id, count(b.*) FROM {fz_num} AS a LEFT JOIN ({fz_txt} AS b JOIN {fz_time} AS x ON b.id = x.id) ON a.id = b.id AND b.id < 3 GROUP BY a.id
-- an unaliased generator's column is named after it (was refused as a whole-row reference to the item)
SELECT a.id, generate_series, unnest FROM {fz_num} AS a, generate_series(1, 2), unnest(ARRAY[3, 4]) WHERE a.id < 3
-- pg_typeof evaluates its argument: an aggregate's one row (none on an empty input), the argument's errors
SELECT pg_typeof(sum(a.i4)), pg_typeof(count(*)) FROM {fz_num} AS a WHERE a.id < 0
SELECT pg_typeof(100 / a.i4) FROM {fz_num} AS a
-- pg_typeof(x) = '23' compares regtype OIDs (true); refused (text compare answered false)
SELECT a.id FROM {fz_num} AS a WHERE pg_typeof(a.i4) = '23'
-- lead(e, 1, d) of a decimal whose digits the gateway cannot tell with a wider default: refused (d was rounded)
SELECT a.id, lead(a.n * 2, 1, 0.1234567) OVER (ORDER BY a.id) FROM {fz_num} AS a
-- lag/lead with a NULL offset is NULL, not the default
SELECT a.id, lag(100 / a.i4, NULL, 7) OVER (ORDER BY a.id), lead(a.i4 + 1, CASE WHEN a.id = 3 THEN NULL ELSE 1 END, 7) OVER (ORDER BY a.id) FROM {fz_num} AS a
-- a volatile FILTER condition is drawn once per row (the lazy rewrite drew random() again: a quarter, not a half)
SELECT count(a.id + g) FILTER (WHERE random() < 0.5) BETWEEN 5000 AND 9000 FROM {fz_num} AS a, generate_series(1, 1000) AS g
-- gcd/lcm with a numeric argument is numeric
SELECT pg_typeof(gcd(a.i4, a.nu)), pg_typeof(lcm(a.n, a.i2)) FROM {fz_num} AS a WHERE a.id < 3
-- interval typmods: INTERVAL '...' YEAR was read as the alias "year" (3 years 4 months); DAY TO MINUTE, SECOND(0),
-- INTERVAL(0) '...' and ::interval second(0) were syntax errors on every route (the lake route refuses them)
SELECT INTERVAL '3 years 4 months' YEAR, INTERVAL '1 day 02:03:04' DAY TO MINUTE AS x FROM {fz_num} AS a
SELECT a.iv::interval second(0), INTERVAL(0) '1.5 seconds' FROM {fz_time} AS a
-- intervals in IN lists, sorts and min/max by PostgreSQL's span ('1 mon -1 day' is 29 days)
SELECT a.id FROM {fz_time} AS a WHERE a.iv IN (INTERVAL '29 days', '3 days')
SELECT a.id, a.iv FROM {fz_time} AS a WHERE a.iv IS NOT NULL ORDER BY a.iv, a.id
SELECT min(a.iv), max(a.iv), max(a.iv) FILTER (WHERE a.id > 3) FROM {fz_time} AS a
SELECT string_agg(a.id::text, ',' ORDER BY a.iv, a.id) FROM {fz_time} AS a
-- justify_* nested: each macro expanded its argument ~27 times, so three levels took 127 s to bind (a request no
-- time limit stops); the argument is now bound once
SELECT JUSTIFY_HOURS(JUSTIFY_DAYS(JUSTIFY_HOURS(JUSTIFY_INTERVAL(JUSTIFY_DAYS(JUSTIFY_HOURS(a.iv)))))) FROM {fz_time} AS a RIGHT JOIN {fz_time} AS b ON a.id = b.id
-- found by the 30-minute run of 2026-12-07 (seed 1): a char(n) json key is its text without trailing spaces;
-- ORDER BY position of a jsonb column of a UNION is refused as ORDER BY jsonb is; an infinite interval literal
-- is a named refusal; to_timestamp() out of range is PostgreSQL's 22008
SELECT a.jb ->> CAST('a' AS CHAR(4)) AS r0, a.jb -> CAST('a' AS CHAR(4)) AS r1 FROM {fz_arr} AS a
SELECT a.jb FROM {fz_arr} AS a UNION ALL SELECT '"s"' FROM {fz_arr} AS b ORDER BY 1
SELECT 'infinity' + a.ts FROM {fz_time} AS a
SELECT a.f4 FROM {fz_num} AS a WHERE '2000-01-01 00:00:00' < TO_TIMESTAMP(a.i8) GROUP BY 1
-- lead(0.5, 2, (3.75)): a parenthesised default was not seen as the wider literal (DuckDB printed 3.80)
SELECT a.id, LEAD(0.5, 2, (3.75)) OVER (ORDER BY a.i2, a.id), LAG(a.n, 1, (-0.1234567)) OVER (ORDER BY a.id) FROM {fz_num} AS a
-- nested macros that copy their argument (regexp_replace: 7 copies a level) are refused past 200,000 expanded
-- nodes (54001: DuckDB's binder cannot be stopped); four levels still answer
SELECT regexp_replace(regexp_replace(regexp_replace(regexp_replace(a.t, 'a', 'b'), 'b', 'c'), 'c', 'd'), 'd', 'e') FROM {fz_txt} AS a
-- an unknown literal in a set operation takes the other branch's type (a time; an integer, 'x' raising 22P02),
-- where DuckDB made the column VARCHAR
SELECT '12:00:00', a.jb FROM {fz_arr} AS a EXCEPT ALL SELECT CAST('23:59:59.999999' AS TIME), b.jb FROM {fz_arr} AS b
SELECT a.id FROM {fz_num} AS a UNION SELECT '7' FROM {fz_num} AS b ORDER BY 1
SELECT a.id FROM {fz_num} AS a UNION ALL SELECT 'x' FROM {fz_num} AS b
-- age() of an infinite timestamp: DuckDB answered a huge interval (infinity) or NULL (-infinity), PostgreSQL 17
-- an infinite interval: refused (0A000) where an argument is infinite, answered where none is
SELECT CAST('01:30:00' AS TIME) + AGE(a.ts, '1970-01-01') FROM {fz_time} AS a
SELECT a.id, AGE(a.tz) IS NULL FROM {fz_time} AS a
SELECT a.id, AGE(a.ts) FROM {fz_time} AS a WHERE isfinite(a.ts)
SELECT a.id, AGE(a.ts, 'infinity') FROM {fz_time} AS a
-- concat_ws() and a cast to bytea see a char(n) value padded (its output), concat_ws's separator not
SELECT a.id, concat(a.c, '|'), concat_ws(',', a.c, a.c), concat_ws(a.c, 'x', 'y'), a.c || '|', format('%s|', a.c) FROM {fz_txt} AS a
SELECT a.id, CAST(a.c AS BYTEA), CAST(a.c AS TEXT), CAST(a.c AS VARCHAR) FROM {fz_txt} AS a
-- concat/concat_ws write a boolean as t/f (its output; || and ::text write true/false)
SELECT a.id, u.x, u.n, concat(u.x, 1_000, true) FROM {fz_arr} a CROSS JOIN LATERAL unnest(a.ta) WITH ORDINALITY AS u(x, n)
SELECT a.id, a.b || 'x', 'x' || a.b, concat_ws(',', a.b, NOT a.b), a.b::text FROM {fz_num} AS a
-- BETWEEN compares char(n) as >= and <= do (trailing spaces ignored against varchar)
SELECT a.v, a.u, STRING_AGG(a.c, ',' ORDER BY a.c) FILTER(WHERE a.v BETWEEN a.c AND a.v) FROM {fz_txt} AS a GROUP BY 1, 2
-- sha384/sha512: sqlglot wrote DuckDB's sha256 (only a logged warning): what it cannot write is refused
SELECT sha384(('\x00ff10')::bytea) AS v, sha512(a.by) FROM {fz_txt} a WHERE a.id = 2
-- array bounds in a type name are documentation ('{}'::int[5] was read as a subscript, int[][5] not at all)
SELECT '{}'::int[5], CAST('{1,2}' AS int[3]), '{{1},{2}}'::int[][5], '{1.5}'::numeric(4,1)[2], '{1}'::double precision[1] FROM {fz_num} a WHERE a.id = 1
-- num_nulls/num_nonnulls, array_positions and scale() of a fixed-scale numeric, which DuckDB lacks
SELECT a.id, num_nonnulls(a.id, a.k, a.f4), num_nulls(a.k, NULL, a.b), scale(a.n), scale(a.n38) FROM {fz_num} AS a
SELECT a.id, array_positions(a.ia, 1), array_positions(a.ia, NULL), array_positions(a.ta, 'a') FROM {fz_arr} AS a
-- DuckDB's conversion error names its source column: still PostgreSQL's 22P02
SELECT CAST(a.t AS DOUBLE PRECISION) FROM {fz_txt} AS a
SELECT CAST(a.v AS REAL), CAST(a.c AS DOUBLE PRECISION) FROM {fz_txt} AS a

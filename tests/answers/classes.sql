-- Issue 28.4: classes of lake-route answers an outside corpus found different from PostgreSQL's, over the edge
-- values of the table edges (NULL, NaN, +-Infinity, -0, negative, multi-byte, BC dates).
-- NULLIF on char(n): compared as char(n) (trailing spaces do not count), the result is the padded first value
SELECT id, NULLIF(c, 'ab') AS z FROM {edges} ORDER BY id
SELECT id, NULLIF(c, 'ab   ') AS z, NULLIF(c, '') AS e FROM {edges} ORDER BY id
SELECT id, NULLIF('ab'::char(4), c) AS z FROM {edges} ORDER BY id
SELECT id, NULLIF(c, 'x'::text) AS z, NULLIF(c, NULL) AS n FROM {edges} ORDER BY id
SELECT id, NULLIF(c, c) AS z, length(NULLIF(c, 'zz')) AS l, NULLIF(c, 'ab') || '|' AS t FROM {edges} ORDER BY id
SELECT id, NULLIF(c, 'é'::char(3)) AS z, NULLIF(c::varchar, 'ab') AS v FROM {edges} ORDER BY id
-- width_bucket: NULL arguments (strict: NULL, whatever the others), infinities, NaN, reversed bounds, numerics
SELECT width_bucket(NULL, 0, 10, 5) AS a, width_bucket(1, NULL, 10, 5) AS b, width_bucket(1, 0, 10, NULL) AS c FROM {one}
SELECT width_bucket(NULL, 0, 10, 0) AS a, width_bucket(NULL::float8, 1, 1, 5) AS b FROM {one}
SELECT id, width_bucket(f, -1, 1e300::float8, 4) AS w FROM {edges} WHERE id <> 1 ORDER BY id
SELECT id, width_bucket(f, 1e300::float8, -1, 4) AS w FROM {edges} WHERE id <> 1 ORDER BY id
SELECT width_bucket('NaN'::float8, 0, 1, 3) AS w FROM {one}
SELECT width_bucket(1, 0, 'Infinity'::float8, 3) AS w FROM {one}
SELECT width_bucket(0.5, -1.7976931348623157e308::float8, 1.7976931348623157e308::float8, 10) AS w FROM {one}
SELECT id, width_bucket(i4, -100, 100, 7) AS w FROM {edges} ORDER BY id
SELECT id, width_bucket(n, -10, 10, 7) AS w, width_bucket(nu, 10, -10, 3) AS r FROM {edges} ORDER BY id
SELECT id, width_bucket(n, 0.1, 0.4, 3) AS w FROM {edges} ORDER BY id
SELECT width_bucket(5, 0, 10, 0) AS w FROM {one}
SELECT width_bucket(5, 3, 3, 2) AS w FROM {one}
SELECT width_bucket(10, 0, 10, 2147483647) AS w FROM {one}
SELECT id, width_bucket(i4, ARRAY[-100, 0, 100]) AS w FROM {edges} ORDER BY id
SELECT id, width_bucket(f, ARRAY[0, 0.5, 1e20]::float8[]) AS w FROM {edges} WHERE id <> 1 ORDER BY id
-- percentile_cont (float8, interpolated) and percentile_disc (the value itself, with its display scale)
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY n) AS a, percentile_cont(0.25) WITHIN GROUP (ORDER BY nu) AS b FROM {edges}
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY n) AS a, percentile_disc(0.25) WITHIN GROUP (ORDER BY nu) AS b FROM {edges}
SELECT percentile_disc(0) WITHIN GROUP (ORDER BY nu) AS a, percentile_disc(1) WITHIN GROUP (ORDER BY n) AS b FROM {edges}
SELECT percentile_disc(ARRAY[0.1, 0.5, 0.9]) WITHIN GROUP (ORDER BY n) AS a FROM {edges}
SELECT percentile_cont(ARRAY[0.1, 0.5]) WITHIN GROUP (ORDER BY nu) AS a FROM {edges}
SELECT id % 2 AS g, percentile_disc(0.5) WITHIN GROUP (ORDER BY n DESC) AS d, percentile_cont(0.5) WITHIN GROUP (ORDER BY n DESC) AS c FROM {edges} GROUP BY 1 ORDER BY 1
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY f) AS a, percentile_disc(0.5) WITHIN GROUP (ORDER BY r) AS b FROM {edges} WHERE id > 1
SELECT percentile_cont(0.3) WITHIN GROUP (ORDER BY i8) AS a, percentile_disc(0.3) WITHIN GROUP (ORDER BY i4) AS b FROM {edges}
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY iv) AS a FROM {edges}
SELECT percentile_disc(0.5) WITHIN GROUP (ORDER BY iv) AS b, percentile_disc(0.5) WITHIN GROUP (ORDER BY n) AS n FROM {edges}
-- ::text of floats: NaN, infinities, -0, large and small exponents (PostgreSQL's shortest exact text)
SELECT id, f::text AS f, r::text AS r FROM {edges} ORDER BY id
SELECT id, CAST(f AS varchar) AS f, f || '' AS c, concat(r, '|') AS r FROM {edges} ORDER BY id
SELECT id, (f * 2)::text AS f, (r / 3)::text AS r, (-f)::text AS n FROM {edges} WHERE id <> 5 ORDER BY id
SELECT 1e22::float8::text AS a, 1e21::float8::text AS b, 1e-4::float8::text AS c, 123456789.125::float8::text AS d FROM {one}
-- ::text of arrays: NULL elements, elements that need quotes, char(n), floats, bytea, numerics, two dimensions
SELECT id, ia::text AS i, ta::text AS t FROM {edges} ORDER BY id
SELECT id, ARRAY[f, r]::text AS f, ARRAY[n]::text AS n, ARRAY[i4, i8]::text AS i FROM {edges} ORDER BY id
SELECT id, ARRAY[n, nu]::text AS n FROM {edges} ORDER BY id
SELECT id, ARRAY[c]::text AS c, ARRAY[b]::text AS b FROM {edges} ORDER BY id
SELECT id, ARRAY[d]::text AS d, ARRAY[d::timestamp]::text AS ts FROM {edges} ORDER BY id
SELECT ARRAY[[1, 2], [3, NULL]]::text AS a, ARRAY[ARRAY['a b', 'c'], ARRAY['"', NULL]]::text AS b FROM {one}
SELECT ARRAY[true, NULL, false]::text AS a, ARRAY['2024-01-15'::date]::text AS b FROM {one}
-- ::text of bytea (hex output)
SELECT id, b::text AS b, CAST(b AS varchar) AS v, concat(b, '|') AS c FROM {edges} ORDER BY id
SELECT id, b::text || '|' AS b, length(b::text) AS l FROM {edges} ORDER BY id
-- extract(epoch from interval): a year is 365.25 days, a month 30 days; the other fields of intervals
SELECT id, extract(epoch FROM iv) AS e, date_part('epoch', iv) AS p FROM {edges} ORDER BY id
SELECT id, extract(year FROM iv) AS y, extract(month FROM iv) AS m, extract(day FROM iv) AS d FROM {edges} ORDER BY id
SELECT id, extract(hour FROM iv) AS h, extract(minute FROM iv) AS mi, extract(second FROM iv) AS s FROM {edges} ORDER BY id
SELECT extract(epoch FROM interval '1 year') AS y, extract(epoch FROM interval '1 month') AS m, extract(epoch FROM interval '-1.5 years 3 days') AS x FROM {one}
-- bytea literals compared to columns (hex and escape formats)
SELECT id FROM {edges} WHERE b = '\x0102' ORDER BY id
SELECT id FROM {edges} WHERE b = '\x0102'::bytea OR b = '\xFF' ORDER BY id
SELECT id FROM {edges} WHERE b IN ('\x01', '\xdeadbeef', 'a') ORDER BY id
SELECT id, b > '\x01' AS gt, b < '\x0102' AS lt, '\x0A5C27'::bytea = b AS eq FROM {edges} ORDER BY id
SELECT id FROM {edges} WHERE b <> '\x0102' ORDER BY id
SELECT id, b || '\x03'::bytea AS b FROM {edges} ORDER BY id
SELECT '\x0102'::bytea AS a, 'a\\b'::bytea AS b FROM {one}
-- array containment and overlap with NULL elements (a NULL element matches nothing)
SELECT id, ia @> ARRAY[1] AS a, ia @> ARRAY[NULL::int] AS b, ia <@ ARRAY[1, 2, 3, NULL] AS c FROM {edges} ORDER BY id
SELECT id, ia && ARRAY[NULL, 1]::int[] AS a, ia @> '{}' AS b, ia <@ '{}' AS c FROM {edges} ORDER BY id
SELECT id, ta @> ARRAY['a'] AS a, ta && ARRAY['é', 'x'] AS b, ARRAY['a', NULL] <@ ta AS c FROM {edges} ORDER BY id
SELECT id FROM {edges} WHERE ia @> ARRAY[2] ORDER BY id
SELECT ARRAY[[1, 2], [3, 4]] @> ARRAY[4, 1] AS a, ARRAY[1, 2] <@ ARRAY[[1, 2], [3, 4]] AS b FROM {one}
-- subscripts: negative, zero, past the end, slices, two dimensions
SELECT id, ia[-1] AS a, ia[0] AS b, ia[1] AS c, ia[3] AS d, ia[4] AS e FROM {edges} ORDER BY id
SELECT id, ia[0:2] AS a, ia[-1:1] AS b, ia[2:] AS c, ia[:1] AS d, ia[3:2] AS e FROM {edges} ORDER BY id
SELECT (ARRAY[[1, 2], [3, 4]])[2][1] AS a, (ARRAY[[1, 2], [3, 4]])[1] AS b, (ARRAY[[1, 2], [3, 4]])[0][1] AS c FROM {one}
SELECT (ARRAY[[1, 2], [3, 4]])[2:2][1:1]::text AS a FROM {one}
SELECT id, ta[-1] AS a, ta[2] AS b, ta[1:2] AS c FROM {edges} ORDER BY id
-- array_to_string: NULL elements skipped, or written as the null string
SELECT id, array_to_string(ia, ',') AS a, array_to_string(ia, ',', '*') AS b FROM {edges} ORDER BY id
SELECT id, array_to_string(ta, '|') AS a, array_to_string(ta, '|', 'NULL') AS b, array_to_string(ta, '') AS c FROM {edges} ORDER BY id
SELECT id, array_to_string(ia, NULL) AS a, array_to_string(ia, ',', NULL) AS b FROM {edges} ORDER BY id
SELECT id, array_to_string(ARRAY[f, r], ';') AS a, array_to_string(ARRAY[n], ';') AS b FROM {edges} ORDER BY id
SELECT array_to_string(ARRAY[[1, NULL], [3, 4]], ',', '-') AS a FROM {one}
-- make_timestamptz: in the session's time zone, or the one it names
SELECT make_timestamptz(2024, 3, 10, 2, 30, 0) AS a, make_timestamptz(2024, 1, 15, 10, 30, 59.5) AS b FROM {one}
SELECT make_timestamptz(2024, 1, 15, 10, 30, 0, 'America/New_York') AS a, make_timestamptz(2024, 7, 1, 12, 0, 0, 'Asia/Kolkata') AS b FROM {one}
SELECT id, make_timestamptz(2000 + id, id, id, id, id, id) AS t FROM {edges} ORDER BY id
SELECT make_timestamptz(2024, 11, 3, 1, 30, 0, 'America/New_York') AS a, make_timestamptz(2024, 3, 10, 2, 30, 0, 'America/New_York') AS b FROM {one}
-- BC dates: never read as AD
SELECT '0044-03-15 BC'::date::text AS d, '0044-03-15 BC'::date < '0001-01-01'::date AS before FROM {one}
SELECT id, d::text AS d FROM {edges} ORDER BY id
SELECT id, extract(year FROM d) AS y, date_part('year', d) AS p, extract(century FROM d) AS c FROM {edges} ORDER BY id
SELECT id, extract(month FROM d) AS m, extract(day FROM d) AS dd, extract(decade FROM d) AS de, extract(millennium FROM d) AS mi FROM {edges} ORDER BY id
SELECT id FROM {edges} WHERE d < '0001-01-01' ORDER BY id
SELECT id, d = '0044-03-15 BC' AS a, d - '0001-01-01'::date AS days FROM {edges} ORDER BY id
SELECT min(d)::text AS lo, max(d)::text AS hi FROM {edges}
SELECT id, (d + 1)::text AS d, (d::timestamp)::text AS ts FROM {edges} ORDER BY id
SELECT '0044-03-15 12:00:00 BC'::timestamp::text AS a, extract(year FROM '0044-03-15 12:00:00 BC'::timestamp) AS y FROM {one}
SELECT id, d::text AS d FROM {edges} ORDER BY d, id
-- regexp_matches: one row without 'g', one per match with it, none without a match
SELECT regexp_matches('a1b22c333', '[0-9]+') AS m FROM {one}
SELECT regexp_matches('a1b22c333', '[0-9]+', 'g') AS m FROM {one}
SELECT regexp_matches('a1B2', '([a-z])([0-9])', 'gi') AS m FROM {one}
SELECT regexp_matches('xyz', '[0-9]') AS m FROM {one}
SELECT id, regexp_matches(c, '(a)(b)?') AS m FROM {edges} ORDER BY id
SELECT id, regexp_matches(c, '(a)(b)') AS m, regexp_matches(c, 'b$') AS e FROM {edges} ORDER BY id
SELECT id, regexp_matches(ta::text, '([a-z])', 'g') AS m FROM {edges}
SELECT regexp_matches('k1=v1,k2=v2', '([a-z0-9]+)=([a-z0-9]+)', 'g') AS m FROM {one}
SELECT regexp_matches('abc', 'x*', 'g') AS m FROM {one}
-- to_hex of negative integers: two's complement
SELECT id, to_hex(i4) AS a, to_hex(i8) AS b FROM {edges} ORDER BY id
SELECT to_hex(-1) AS a, to_hex(-1::bigint) AS b, to_hex(-2147483647) AS d FROM {one}
SELECT to_hex(-256::smallint) AS d FROM {one}
-- version(): the source's PostgreSQL, or refused
SELECT version() AS v FROM {one}

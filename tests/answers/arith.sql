-- arithmetic and division
SELECT id, i4 / 2, i4 % 3 FROM {nums}
SELECT id, i8 / i4 FROM {nums} WHERE i4 <> 0
SELECT id, i2 / 2, i2 % 4, -i2 / 3 FROM {nums}
SELECT count(*) / 5 FROM {nums}
SELECT 7 / 0 FROM {one}
SELECT 7 % 0 FROM {one}
SELECT id, n / 3 FROM {nums}
SELECT id, n * 2, n + 1, n - 0.5 FROM {nums}
SELECT id, d / 2 FROM {nums}
SELECT id, abs(i4), abs(n), abs(d) FROM {nums}
SELECT id, i4 + i8 FROM {nums}
SELECT 2147483647 + 1 FROM {one}
SELECT id, power(2, i2) FROM {nums} WHERE i2 BETWEEN 0 AND 10
SELECT sum(i4), sum(i8), sum(n), sum(d) FROM {nums}
SELECT avg(i4), avg(n) FROM {nums}
SELECT round(2.5::float8), round(3.5::float8), round(-2.5::float8) FROM {one}
SELECT round(2.5), round(-2.5), round(2.345, 2) FROM {one}
SELECT id, round(n, 1), trunc(n, 2), ceil(n), floor(n) FROM {nums}
SELECT '1.234567'::numeric FROM {one}
SELECT id, nu FROM {nums} ORDER BY nu NULLS LAST, id
SELECT min(nu), max(nu), sum(nu) FROM {nums}
SELECT @ -5 FROM {one}
SELECT to_hex(255), to_hex(i4) FROM {nums} WHERE i4 > 0
SELECT id, i4 * 2, i4 - 1, -i4 FROM {nums} WHERE i4 BETWEEN -1000 AND 1000
SELECT id, i8 % 7, i8 / 1000 FROM {nums}
SELECT id, i4 / NULLIF(i2, 0) FROM {nums}
SELECT id, d * 2, d + 1, -d FROM {nums}
SELECT id, r * 2 FROM {nums}
SELECT id, d / 0.5::float8 FROM {nums}
SELECT id, d / 0::float8 FROM {nums} WHERE id = 3
SELECT id, sqrt(abs(d)) FROM {nums} WHERE d IS NOT NULL AND d < 1e300
SELECT id, sign(i4), sign(d) FROM {nums}
SELECT id, greatest(i4, i2), least(i4, i2) FROM {nums}
SELECT id, i4::float8, i4::numeric(20,2), i4::text FROM {nums}
SELECT id, n::int, n::bigint FROM {nums}
SELECT id, d::int FROM {nums} WHERE abs(d) < 1e9
SELECT id, d::numeric(30,4) FROM {nums} WHERE abs(d) < 1e9
SELECT '42'::int, '-7'::bigint, ' 12 '::int FROM {one}
SELECT '1.5'::int FROM {one}
SELECT 'abc'::int FROM {one}
SELECT '2.5'::float8, '1e3'::float8, 'NaN'::float8, '-Infinity'::float8 FROM {one}
SELECT 1.5::numeric(5,2), 3.14159::numeric(6,3) FROM {one}
SELECT 12345.678::numeric(5,2) FROM {one}
SELECT 2147483647::int + 1 FROM {one}
SELECT 9223372036854775807::bigint + 1 FROM {one}
SELECT id, i4 + 1 FROM {nums} WHERE i4 = 2147483647
SELECT id, n * n FROM {nums}
SELECT id, n + i4 FROM {nums}
SELECT id, i4 * 1.5 FROM {nums}
SELECT sum(n), min(n), max(n) FROM {nums}
SELECT min(d), max(d) FROM {nums}
SELECT min(r), max(r), sum(r) FROM {nums} WHERE r < 1e30
SELECT count(d), count(DISTINCT d) FROM {nums}
SELECT avg(d) FROM {nums} WHERE d < 1e300 AND d > -1e300
SELECT id, d = 'NaN'::float8, d > 0 FROM {nums}
SELECT id FROM {nums} ORDER BY d, id
SELECT id FROM {nums} ORDER BY d DESC NULLS LAST, id
SELECT id, trunc(d), ceil(d), floor(d) FROM {nums} WHERE abs(d) < 1e10
SELECT id, mod(i4, 3), mod(i8, 5) FROM {nums}
SELECT id, div(i4, 2) FROM {nums}
SELECT id, i4 & 3, i4 | 8, i4 # 5 FROM {nums}
SELECT id, i4 << 2, i4 >> 1 FROM {nums} WHERE abs(i4) < 1000
SELECT 7 / 2, -7 / 2, 7 % -3, -7 % 3 FROM {one}
SELECT 1 / 3.0 FROM {one}
SELECT 10 / 4.0 FROM {one}
SELECT width_bucket(d, 0, 10, 5) FROM {nums} WHERE abs(d) < 100
SELECT ln(2.0::float8), exp(1.0::float8), log(100.0::float8) FROM {one}
SELECT pi(), cbrt(27.0::float8) FROM {one}
SELECT id, nu * 2 FROM {nums}
SELECT id, nu > 1 FROM {nums}
SELECT count(*) FROM {nums} WHERE nu > 0
SELECT id, i4::bool FROM {nums} WHERE i4 IS NOT NULL
SELECT factorial(5) FROM {one}
SELECT gcd(12, 18), lcm(4, 6) FROM {one}
SELECT avg(nu), avg(nu) FILTER (WHERE id > 2), avg(DISTINCT nu) FROM {nums}
SELECT g, avg(nu) FROM {nums} n JOIN (VALUES (1, 'a'), (2, 'b'), (4, 'a'), (9, 'b')) v(k, g) ON v.k = n.id GROUP BY g
SELECT id, nu / 3, nu / 8 FROM {nums} WHERE abs(nu) >= 1
SELECT id, nu / n FROM {nums} WHERE n <> 0 AND abs(nu) >= 1

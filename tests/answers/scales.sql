-- numeric display scales (issue 10.1): PostgreSQL prints each numeric with its display scale — an unconstrained
-- column's values as written (100.10, 1e-10 as 0.0000000001), a quotient's and an average's per value
-- (select_div_scale), + and - the larger of the operands', * their sum, sum() its inputs' largest; compared by text
SELECT id, nu FROM {nums}
SELECT * FROM {nums} ORDER BY id
SELECT id, nu FROM {nums} ORDER BY 2 DESC NULLS LAST, 1
SELECT id, nu AS x FROM {nums} ORDER BY x NULLS FIRST, id
SELECT id, nu + 1, nu - n, 2.50 - nu FROM {nums}
SELECT id, nu * nu, nu * 1.50, nu * i4 FROM {nums} WHERE abs(nu) < 1000
SELECT id, -nu, abs(nu), +nu FROM {nums}
SELECT id, round(nu), round(nu, 3), round(nu, -1), trunc(nu, 1), ceil(nu), floor(nu) FROM {nums}
SELECT id, nu / 7, nu / 0.25, 1 / nu FROM {nums} WHERE nu <> 0
SELECT id % 3 AS k, sum(nu), min(nu), max(nu), count(nu) FROM {nums} GROUP BY id % 3 ORDER BY k
SELECT nu, count(*) FROM {nums} GROUP BY nu
SELECT nu, count(*) FROM {nums} GROUP BY 1 ORDER BY 1 NULLS FIRST
SELECT id, CASE WHEN id > 5 THEN nu ELSE n END, coalesce(nu, n), coalesce(nu, 0) FROM {nums}
WITH s AS (SELECT id, nu FROM {nums}) SELECT nu FROM s ORDER BY nu NULLS LAST
SELECT * FROM (SELECT id, nu FROM {nums}) s ORDER BY 2, 1
SELECT s.x FROM (SELECT nu AS x FROM {nums} WHERE id < 5) s WHERE s.x > -3 ORDER BY s.x
SELECT id, nu FROM {nums} WHERE nu IN (SELECT nu FROM {nums} WHERE id > 6) ORDER BY id
SELECT id, max(nu) OVER (PARTITION BY id % 2), sum(nu) OVER (ORDER BY id) FROM {nums}
SELECT avg(nu) * 2, sum(nu) / count(*), avg(nu) + 1 FROM {nums}
SELECT id, '1.50'::numeric + nu, ('0.1' || id)::numeric, ('  ' || id || '.0  ')::numeric FROM {nums}
SELECT id, i4::numeric / 3, d::numeric, r::numeric FROM {nums} WHERE id IN (1, 2, 3, 9, 10)
SELECT g, sum(y), avg(y) * 1.5, sum(y) / 4, max(y) - min(y) FROM {grp} GROUP BY g
SELECT id, n * 2.50, n + 1.5, n - nu FROM {nums}
SELECT sum(n * n), sum(nu * 2), min(n / 4) FROM {nums}
SELECT id, nu::text, nu::float8, nu::numeric(20, 3) FROM {nums}
SELECT id, div(nu, 2), nu % 3 FROM {nums} WHERE nu IS NOT NULL
SELECT id, greatest(nu, 1), least(nu, n) FROM {nums}
SELECT id, nu FROM {nums} UNION ALL SELECT id, nu FROM {nums} ORDER BY 1
SELECT DISTINCT nu FROM {nums}
SELECT count(DISTINCT nu), sum(DISTINCT nu) FROM {nums}
SELECT 0.1 + 0.20, 1.000 * 2, 5.0 / 2, 1e3::numeric, 12.3450::numeric FROM {one}
SELECT id, sum(nu) FILTER (WHERE id > 3) OVER (), min(nu) FILTER (WHERE id < 8) OVER () FROM {nums}
SELECT * FROM (SELECT g, avg(x) AS a, sum(y) / 3 AS b FROM {grp} GROUP BY g) s ORDER BY g NULLS FIRST
WITH q AS (SELECT id, nu * 2 AS twice, nu / 4 AS quarter FROM {nums}) SELECT id, twice + 1, quarter FROM q WHERE twice > 0 ORDER BY id
WITH q AS (SELECT id % 2 AS k, nu FROM {nums}) SELECT k, max(nu), count(*) FROM q GROUP BY k ORDER BY k
SELECT s.k, s.m FROM (SELECT id % 3 AS k, min(nu) AS m FROM {nums} GROUP BY 1) s ORDER BY s.m NULLS FIRST
SELECT id, concat(nu, '!'), concat_ws(',', nu, id), nu || '?', concat(nu * 2) FROM {nums}
SELECT array_agg(nu ORDER BY id) FROM {nums}
SELECT g, array_agg(y ORDER BY id) FROM {grp} WHERE id < 9 GROUP BY g ORDER BY g NULLS LAST
SELECT * FROM {nums} UNION ALL SELECT * FROM {nums} ORDER BY id, nu
SELECT DISTINCT * FROM (SELECT nu FROM {nums}) s
SELECT * FROM {nums} UNION ALL SELECT * FROM {nums} ORDER BY id DESC
-- display scales the rules follow (issue 10.3): greatest/least (the first argument equal to the result),
-- sum(DISTINCT) (one scale per distinct value, else an error), value window functions (the picked row's),
-- lag/lead defaults, and CASE/COALESCE/VALUES of numerics of different scales (each value its own)
SELECT id, greatest(nu, 1), least(nu, n, 2.50), greatest(nu, NULL), greatest(n, nu, i4) FROM {nums}
SELECT id, greatest(v, 1.5), least(v, 1.50, NULL), greatest(v), least(NULL::numeric, v) FROM {ties}
SELECT sum(DISTINCT nu), sum(DISTINCT n), sum(DISTINCT i4), min(DISTINCT nu), max(DISTINCT n) FROM {nums}
SELECT g, sum(DISTINCT y), sum(DISTINCT y * 2) FILTER (WHERE id > 3) FROM {grp} GROUP BY g ORDER BY g
SELECT sum(DISTINCT v) FROM {ties} WHERE id > 4
SELECT sum(DISTINCT v) FROM {ties}
SELECT id, first_value(nu) OVER (ORDER BY id), last_value(nu) OVER (ORDER BY id), nth_value(nu, 2) OVER (ORDER BY id), lag(nu) OVER (ORDER BY id), lead(nu, 2, 0) OVER (ORDER BY id) FROM {nums}
SELECT id, lag(n, 1, 7.5) OVER (ORDER BY id), lag(n, 2, 0) OVER (ORDER BY id), lead(nu, 1, -2.5) OVER (PARTITION BY id % 2 ORDER BY id), avg(nu) OVER (ORDER BY id), avg(n) OVER (ORDER BY id ROWS 1 PRECEDING) FROM {nums}
SELECT id, lead(i4, 1, 0.50) OVER (ORDER BY id) FROM {nums}
SELECT id, COALESCE(n, 7.5), CASE WHEN id > 5 THEN n ELSE 0 END, CASE WHEN id > 5 THEN 1.5 ELSE 2.25 END, COALESCE(nu, n) FROM {nums} ORDER BY id
SELECT sum(CASE WHEN id > 3 THEN n ELSE 0 END), sum(COALESCE(n, 0)), max(CASE WHEN id > 3 THEN nu ELSE 1.50 END) FROM {nums}
SELECT n FROM {nums} UNION ALL SELECT y FROM {grp} WHERE id < 3
SELECT x FROM (VALUES (1.5), (2.25), (NULL)) v(x), {one}

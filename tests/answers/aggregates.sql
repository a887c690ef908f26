-- aggregates, FILTER, ordered aggregates, grouping sets
SELECT count(*), count(x), count(DISTINCT g) FROM {grp}
SELECT g, count(*) FROM {grp} GROUP BY g
SELECT g, sum(x), min(x), max(x) FROM {grp} GROUP BY g
SELECT g, sum(y), max(y) FROM {grp} GROUP BY g
SELECT g, avg(x) FROM {grp} GROUP BY g
SELECT g, avg(y) FROM {grp} GROUP BY g
SELECT g, avg(x::float8) FROM {grp} GROUP BY g
SELECT h, count(*) FILTER (WHERE x > 5) FROM {grp} GROUP BY h
SELECT h, sum(x) FILTER (WHERE g = 'a') FROM {grp} GROUP BY h
SELECT g, string_agg(id::text, ',' ORDER BY id DESC) FROM {grp} GROUP BY g
SELECT g, array_agg(x ORDER BY x NULLS FIRST, id) FROM {grp} GROUP BY g
SELECT g, h, count(*) FROM {grp} GROUP BY ROLLUP (g, h)
SELECT g, h, count(*) FROM {grp} GROUP BY CUBE (g, h)
SELECT g, h, sum(x) FROM {grp} GROUP BY GROUPING SETS ((g), (h), ())
SELECT g, h, grouping(g, h), count(*) FROM {grp} GROUP BY ROLLUP (g, h)
SELECT x IS NULL, count(*) FROM {grp} GROUP BY ROLLUP (x IS NULL)
SELECT g, count(*) FROM {grp} GROUP BY g HAVING count(*) > 9
SELECT g, count(*) FROM {grp} GROUP BY 1 ORDER BY 2 DESC, 1 NULLS LAST
SELECT count(*) FROM {grp} WHERE false
SELECT sum(x), max(g), avg(y) FROM {grp} WHERE false
SELECT g, percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM {grp} GROUP BY g
SELECT g, percentile_disc(0.5) WITHIN GROUP (ORDER BY x) FROM {grp} GROUP BY g
SELECT mode() WITHIN GROUP (ORDER BY h) FROM {grp}
SELECT g, stddev(x), variance(x) FROM {grp} GROUP BY g
SELECT g, stddev_pop(x::float8), var_samp(x::float8) FROM {grp} GROUP BY g
SELECT corr(x, h), covar_pop(x, h) FROM {grp}
SELECT bit_and(x), bit_or(x) FROM {grp}
SELECT count(DISTINCT (g, h)) FROM {grp}
SELECT g, max(x) - min(x) FROM {grp} GROUP BY g
SELECT sum(x) / count(x) FROM {grp}
SELECT g, round(avg(y), 2) FROM {grp} GROUP BY g
SELECT g, sum(x)::float8 / count(*) FROM {grp} GROUP BY g
SELECT h, sum(y) * 2 FROM {grp} GROUP BY h
SELECT DISTINCT g FROM {grp}
SELECT DISTINCT g, h FROM {grp} ORDER BY g NULLS FIRST, h
SELECT DISTINCT ON (g) g, id, x FROM {grp} ORDER BY g, id DESC
SELECT DISTINCT ON (h) h, x FROM {grp} ORDER BY h, x NULLS LAST, id
SELECT count(*) FROM (SELECT DISTINCT x FROM {grp}) s
SELECT g, count(*) OVER () FROM {grp} GROUP BY g
SELECT sum(i4), sum(i8) FROM {nums}
SELECT sum(i2) FROM {nums}
SELECT h, sum(h) FROM {grp} GROUP BY h
SELECT min(id) FILTER (WHERE g IS NULL) FROM {grp}
SELECT array_agg(DISTINCT g ORDER BY g) FROM {grp}
SELECT g, bool_or(x > 8) FROM {grp} GROUP BY g
SELECT count(*) FROM {grp} GROUP BY ()
SELECT g, h, count(*) FROM {grp} GROUP BY g, ROLLUP (h)
SELECT x, count(*) FROM {grp} GROUP BY x ORDER BY x NULLS FIRST
SELECT avg(d) FROM {nums} WHERE id IN (1, 2, 3)
SELECT sum(n) / 2 FROM {nums}

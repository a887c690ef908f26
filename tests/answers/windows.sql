-- window functions
SELECT id, row_number() OVER (ORDER BY id) FROM {grp}
SELECT id, g, row_number() OVER (PARTITION BY g ORDER BY id) FROM {grp}
SELECT id, rank() OVER (ORDER BY h), dense_rank() OVER (ORDER BY h) FROM {grp}
SELECT id, x, sum(x) OVER (ORDER BY id) FROM {grp}
SELECT id, x, sum(x) OVER (PARTITION BY g ORDER BY id ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING) FROM {grp}
SELECT id, lag(x) OVER (ORDER BY id), lead(x, 2) OVER (ORDER BY id) FROM {grp}
SELECT id, lag(x, 1, -1) OVER (ORDER BY id) FROM {grp}
SELECT id, first_value(x) OVER (PARTITION BY g ORDER BY id), last_value(x) OVER (PARTITION BY g ORDER BY id) FROM {grp}
SELECT id, nth_value(x, 2) OVER (ORDER BY id) FROM {grp}
SELECT id, ntile(4) OVER (ORDER BY id) FROM {grp}
SELECT id, percent_rank() OVER (ORDER BY h), cume_dist() OVER (ORDER BY h) FROM {grp}
SELECT id, count(*) OVER (PARTITION BY h) FROM {grp}
SELECT id, avg(x) OVER (PARTITION BY h) FROM {grp}
SELECT id, max(y) OVER (PARTITION BY g) FROM {grp}
SELECT id, sum(x) OVER w, min(x) OVER w FROM {grp} WINDOW w AS (PARTITION BY h ORDER BY id)
SELECT id, x, sum(x) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM {grp}
SELECT id, sum(x) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) FROM {grp}
SELECT id, row_number() OVER (ORDER BY x NULLS FIRST, id) FROM {grp}
SELECT id, rank() OVER (PARTITION BY g ORDER BY x DESC NULLS LAST) FROM {grp}
SELECT * FROM (SELECT id, row_number() OVER (PARTITION BY g ORDER BY id) AS rn FROM {grp}) s WHERE rn = 1
SELECT id, sum(x) FILTER (WHERE h = 1) OVER (ORDER BY id) FROM {grp}
SELECT g, sum(sum(x)) OVER (ORDER BY g NULLS FIRST) FROM {grp} GROUP BY g
SELECT id, x - lag(x) OVER (ORDER BY id) FROM {grp}
SELECT id, count(x) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM {grp}
SELECT id, array_agg(id) OVER (PARTITION BY h ORDER BY id ROWS BETWEEN 1 PRECEDING AND CURRENT ROW) FROM {grp}

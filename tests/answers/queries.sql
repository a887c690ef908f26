-- NULL semantics, subqueries, joins, LATERAL, CTEs, set operations, VALUES
SELECT id FROM {grp} WHERE x NOT IN (1, 2, 3)
SELECT id FROM {grp} WHERE x NOT IN (1, NULL)
SELECT id FROM {grp} WHERE x IN (SELECT h FROM {grp})
SELECT id FROM {grp} WHERE x NOT IN (SELECT x FROM {grp} WHERE id < 5)
SELECT id FROM {grp} WHERE x = ANY(ARRAY[1, 2, NULL])
SELECT id, x = ANY(NULL::int[]) FROM {grp} WHERE id < 4
SELECT id, x = ALL(ARRAY[1, 1]) FROM {grp} WHERE id < 6
SELECT id FROM {grp} WHERE x IS DISTINCT FROM 3
SELECT id FROM {grp} WHERE x IS NOT DISTINCT FROM NULL
SELECT id, NULL = NULL, NULL IS NULL FROM {one}
SELECT id, coalesce(x, h, -1) FROM {grp}
SELECT id, CASE WHEN x > 5 THEN 'big' WHEN x > 2 THEN 'mid' ELSE 'small' END FROM {grp}
SELECT id, CASE g WHEN 'a' THEN 1 WHEN 'b' THEN 2 END FROM {grp}
SELECT id FROM {grp} g1 WHERE EXISTS (SELECT 1 FROM {tree} t WHERE t.id = g1.h)
SELECT id FROM {grp} g1 WHERE NOT EXISTS (SELECT 1 FROM {tree} t WHERE t.id = g1.x)
SELECT id, (SELECT name FROM {tree} t WHERE t.id = g1.h) FROM {grp} g1
SELECT a.id, b.name FROM {grp} a JOIN {tree} b ON a.h = b.id
SELECT a.id, b.name FROM {grp} a LEFT JOIN {tree} b ON a.x = b.id
SELECT a.id, b.name FROM {grp} a RIGHT JOIN {tree} b ON a.x = b.id
SELECT a.id, b.name FROM {grp} a FULL JOIN {tree} b ON a.x = b.id
SELECT a.id, b.id FROM {tree} a CROSS JOIN {tree} b WHERE a.id < 3
SELECT count(*) FROM {grp} a JOIN {grp} b USING (h)
SELECT * FROM {tree} NATURAL JOIN (SELECT 1 AS id) s
SELECT t.id, c.name FROM {tree} t, LATERAL (SELECT name FROM {tree} c WHERE c.parent = t.id ORDER BY c.id LIMIT 1) c
SELECT t.id, c.cnt FROM {tree} t LEFT JOIN LATERAL (SELECT count(*) AS cnt FROM {tree} c WHERE c.parent = t.id) c ON true
WITH big AS (SELECT * FROM {grp} WHERE x > 5) SELECT g, count(*) FROM big GROUP BY g
WITH RECURSIVE r(id, depth) AS (SELECT id, 0 FROM {tree} WHERE parent IS NULL UNION ALL SELECT t.id, r.depth + 1 FROM {tree} t JOIN r ON t.parent = r.id) SELECT * FROM r
WITH RECURSIVE r(id, path) AS (SELECT id, name FROM {tree} WHERE parent IS NULL UNION ALL SELECT t.id, r.path || '/' || t.name FROM {tree} t JOIN r ON t.parent = r.id) SELECT * FROM r ORDER BY path
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10) SELECT sum(i) FROM n, {one}
SELECT id FROM {grp} WHERE id < 5 UNION SELECT id FROM {tree}
SELECT id FROM {grp} WHERE id < 5 UNION ALL SELECT id FROM {tree}
SELECT h FROM {grp} INTERSECT SELECT id FROM {tree}
SELECT h FROM {grp} EXCEPT SELECT id FROM {tree}
SELECT g FROM {grp} EXCEPT ALL SELECT g FROM {grp} WHERE id > 3
SELECT id FROM {grp} ORDER BY id LIMIT 5 OFFSET 3
SELECT id FROM {grp} ORDER BY x NULLS FIRST, id FETCH FIRST 4 ROWS ONLY
SELECT * FROM (VALUES (1, 'a'), (2, NULL)) v(n, s), {one}
SELECT v.n FROM {one}, (VALUES (3), (1), (2)) v(n) ORDER BY v.n DESC
SELECT id, g, x FROM {grp} ORDER BY g DESC NULLS FIRST, x ASC NULLS LAST, id
SELECT id, g FROM {grp} ORDER BY g, id
SELECT id, g FROM {grp} ORDER BY g DESC, id
SELECT g FROM {grp} GROUP BY g ORDER BY g NULLS FIRST
SELECT id, generate_series(1, h) FROM {grp} WHERE id < 5
SELECT s FROM {one}, generate_series(1, 5) s
SELECT s FROM {one}, generate_series(1, 10, 3) AS s
SELECT g FROM {grp} WHERE g IS NULL LIMIT 1
SELECT count(*) FROM {grp} WHERE (g, h) = ('a', 1)
SELECT count(*) FROM {grp} WHERE (x, h) IN (SELECT x, h FROM {grp} WHERE id < 10)
SELECT id, x BETWEEN SYMMETRIC 8 AND 3 FROM {grp}
SELECT greatest(1, NULL, 3), least('b', 'a') FROM {one}
SELECT id, nullif(x, 0) FROM {grp}
SELECT count(*) FROM {nums} n JOIN {grp} g ON n.id = g.id
SELECT * FROM {tree} ORDER BY id
SELECT * FROM {one}
SELECT t.* FROM {tree} t WHERE t.parent = 2
SELECT * FROM {grp} a JOIN {grp} b USING (h) WHERE a.id < 4 AND b.id < 6
SELECT * FROM {strs} a FULL JOIN (SELECT k, id AS other FROM {strs} WHERE id > 6) b USING (k)
SELECT * FROM {tree} a NATURAL JOIN {tree} b
SELECT * FROM {strs} a JOIN {strs} b USING (c) WHERE a.id < 5
SELECT a.id, b.id FROM {grp} a JOIN {grp} b ON b.id = a.id + 1 WHERE a.id < 4 ORDER BY id
SELECT * FROM {tree} a JOIN {tree} b ON b.parent = a.id ORDER BY name
SELECT id, x AS id FROM {grp} WHERE id < 4 ORDER BY id
SELECT id, id FROM {grp} WHERE id < 4 ORDER BY id
SELECT x AS g, g FROM {grp} WHERE id < 6 ORDER BY g, id

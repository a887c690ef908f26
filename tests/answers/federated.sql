-- Federated: {pg:x} is a PostgreSQL table, {lake:x} a lake table (and the other way round in a second run);
-- char(n) values must come back padded whatever expands them (*, t.*, USING, NATURAL, UNION, DISTINCT ...)
SELECT * FROM {pg:strs} s JOIN {lake:grp} g ON g.id = s.id
SELECT s.* FROM {pg:strs} s JOIN {lake:one} o ON true ORDER BY s.id
SELECT s.*, o.* FROM {pg:strs} s, {lake:one} o
SELECT * FROM (SELECT s.* FROM {pg:strs} s JOIN {lake:one} o ON true) x
SELECT x.c FROM (SELECT * FROM {pg:strs}) x JOIN {lake:one} o ON true
WITH w AS (SELECT * FROM {pg:strs}) SELECT w.* FROM w JOIN {lake:one} o ON true
WITH w AS (SELECT c, id FROM {pg:strs}) SELECT * FROM w JOIN {lake:one} o USING (id)
SELECT c FROM {pg:strs} UNION SELECT c FROM {lake:strs}
SELECT s.* FROM {pg:strs} s JOIN {lake:one} o ON true UNION SELECT s.* FROM {pg:strs} s WHERE s.id > 6
SELECT c, count(*) FROM {pg:strs} s JOIN {lake:one} o ON true GROUP BY c
SELECT DISTINCT c FROM {pg:strs} s JOIN {lake:one} o ON true
SELECT DISTINCT ON (c) c, s.id FROM {pg:strs} s JOIN {lake:one} o ON true ORDER BY c, s.id
SELECT * FROM {pg:strs} a JOIN {lake:strs} b USING (c)
SELECT * FROM {pg:strs} a FULL JOIN {lake:strs} b USING (c)
SELECT * FROM {pg:strs} a NATURAL JOIN {lake:strs} b
SELECT a.c, b.c FROM {pg:strs} a LEFT JOIN {lake:strs} b ON b.c = a.c
SELECT array_agg(c ORDER BY s.id) FROM {pg:strs} s JOIN {lake:one} o ON true
SELECT coalesce(c, 'none') FROM {pg:strs} s JOIN {lake:one} o ON true
SELECT CASE WHEN s.id > 5 THEN c ELSE 'x' END FROM {pg:strs} s JOIN {lake:one} o ON true
SELECT min(c), max(c) FROM {pg:strs} s JOIN {lake:one} o ON true
SELECT s.id, c || '|', length(c), octet_length(c), c = 'ab', c LIKE 'ab%' FROM {pg:strs} s JOIN {lake:one} o ON true
SELECT row_number() OVER (ORDER BY c, s.id), c FROM {pg:strs} s JOIN {lake:one} o ON true
SELECT (SELECT c FROM {pg:strs} x WHERE x.id = o.id) FROM {lake:one} o
SELECT c FROM {pg:strs} WHERE c IN (SELECT c FROM {lake:strs})
SELECT s.id, c FROM {pg:strs} s WHERE EXISTS (SELECT 1 FROM {lake:strs} t WHERE t.c = s.c AND t.id <> s.id)
SELECT * FROM {pg:nums} n JOIN {lake:one} o ON true
SELECT n.* FROM {pg:times} n JOIN {lake:one} o ON true
SELECT m.* FROM {pg:misc} m JOIN {lake:one} o ON true
SELECT s.id FROM {pg:strs} s JOIN {lake:one} o ON true WHERE s.c IN ('ab', '', 'é  ') OR s.c = 'fox'
SELECT p.id, p.jb->'a', l.jb->'b', p.jb->'a' = l.jb->'a' FROM {pg:jnums} p JOIN {lake:jnums} l ON l.id = p.id ORDER BY 1

-- Aggregates that list their input without ORDER BY inside them: PostgreSQL documents that order as
-- unspecified (the plan's: heap order, which changes.sql's UPDATEs, DELETEs and VACUUM shuffle for {moves}; a
-- hash or a sort above a join). The harness compares these columns (and only these: unordered_columns in
-- tests/answers_harness.py) as multisets: array elements, the values string_agg joined with a literal
-- separator, the members of json_agg/jsonb_agg/json_object_agg by their exact text. With DISTINCT inside,
-- PostgreSQL sorts the input: those results are compared in order.
SELECT g, string_agg(t, ', ') FROM {moves} GROUP BY g ORDER BY g
SELECT g, array_agg(n) FROM {moves} GROUP BY g
SELECT g, array_agg(id), count(*), sum(n) FROM {moves} GROUP BY g ORDER BY g
SELECT array_agg(id) FROM {moves}
SELECT string_agg(t, '|') FROM {moves} WHERE n > 40
SELECT g, array_agg(y), array_agg(d), array_agg(c) FROM {moves} GROUP BY g ORDER BY g
SELECT g, json_agg(t), jsonb_agg(n) FROM {moves} GROUP BY g ORDER BY g
SELECT json_agg(y), jsonb_agg(y), json_agg(c) FROM {moves} WHERE id % 2 = 0
SELECT json_object_agg(id, n) FROM {moves} WHERE id < 40
SELECT g, json_object_agg(t, y) FROM {moves} GROUP BY g ORDER BY g
SELECT g, array_agg(n) FILTER (WHERE n > 50), string_agg(t, ';') FILTER (WHERE id % 2 = 1) FROM {moves} GROUP BY g
SELECT d > date '2024-06-01' AS late, array_agg(t) FROM {moves} GROUP BY 1 ORDER BY 1
SELECT g, id, array_agg(n) OVER (PARTITION BY g) FROM {moves} ORDER BY id
SELECT m.g, string_agg(s.t, ',') FROM {moves} m JOIN {strs} s ON s.id = m.id % 12 GROUP BY m.g
SELECT g, array_agg(id) FROM {moves} WHERE false GROUP BY g
SELECT string_agg(t, ','), array_agg(n), json_agg(t) FROM {moves} WHERE false
SELECT array_agg(DISTINCT g) FROM {moves}
SELECT g, array_agg(DISTINCT n), string_agg(DISTINCT c, ',') FROM {moves} GROUP BY g ORDER BY g
SELECT string_agg(DISTINCT t, '|') FROM {moves} WHERE id < 30
SELECT h, array_agg(DISTINCT g) FROM {grp} GROUP BY h ORDER BY h
SELECT array_agg(DISTINCT d), array_agg(DISTINCT r) FROM {nums}
SELECT array_agg(DISTINCT c), array_agg(DISTINCT v) FROM {strs}
SELECT array_agg(t), array_agg(c), string_agg(c, '|'), json_agg(c) FROM {strs}
SELECT array_agg(u), array_agg(b), array_agg(iv), array_agg(by) FROM {misc}
SELECT array_agg(d), array_agg(i8), json_agg(n), jsonb_agg(i4) FROM {nums}
SELECT array_agg(tz), array_agg(ts), array_agg(tm) FROM {times} WHERE id NOT IN (5, 6)
SELECT json_agg(jb), jsonb_agg(j), array_agg(j) FROM {misc}
SELECT g, string_agg(id::text, ','), json_agg(x) FROM {grp} GROUP BY g

-- jsonb edited (||, -, #-, jsonb_insert, strip_nulls, object_agg): PostgreSQL's text and errors
SELECT id, jb || jb, jb || '[1]', '1' || jb, jb || NULL, jb || '"x"', jb || '{}', jb || '{"a": [null], "z": 1.50}' FROM {misc}
SELECT id, jb - 'a', jb - 'two', jb - 0, jb - -1, jb - 5, jb - -4 FROM {misc} WHERE jsonb_typeof(jb) = 'array'
SELECT id, jb - ARRAY['a', 'b'], jb - '{a,NULL}'::text[], jb #- '{b,0}', jb #- '{c,d}', jb #- ARRAY['b', '-1'], jb #- '{}', jb #- '{x,NULL}' FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jb - 'a' FROM {misc}
SELECT id, jb - 1 FROM {misc} WHERE id = 1
SELECT id, jb #- '{a}' FROM {misc} WHERE id = 5
SELECT id, jb #- '{b,x}' FROM {misc} WHERE id = 1
SELECT id, jb #- '{a,NULL}' FROM {misc} WHERE id = 1
SELECT id, jsonb_insert(jb, '{b,0}', '"new"'), jsonb_insert(jb, '{b,-1}', to_jsonb(id), true), jsonb_insert(jb, '{z}', jb->'a'), jsonb_insert(jb, '{b,9}', 'null'), jsonb_insert(jb, '{b,-9}', '[]', true), jsonb_insert(jb, '{c,e}', '{}') FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jsonb_insert(jb, '{a}', '1') FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jsonb_insert(jb, '{0}', '1') FROM {misc} WHERE id = 5
SELECT jsonb_set('3', '{}', '1') FROM {one}
SELECT id, json_strip_nulls(j), jsonb_strip_nulls(jb), jsonb_strip_nulls(jb, true), json_strip_nulls(j, true) FROM {misc}
SELECT id, jb || '{"a": 1.50}', jb - 'a', jb #- '{b,0}', jsonb_insert(jb, '{b,0}', '1.0e1'), jb - ARRAY['b', 's'] FROM {jnums} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jb || jb, jb - 0, jb - '0.1', jb #- '{-1}', jsonb_insert(jb, '{1}', '-0', true) FROM {jnums} WHERE jsonb_typeof(jb) = 'array'
SELECT id, jsonb_set(jb, '{a}', '5', NULL), jsonb_insert(jb, '{b,0}', '1', NULL), jsonb_strip_nulls(jb, NULL), jb - NULL::text, jb #- NULL FROM {jnums}
SELECT id, json_strip_nulls(j), jsonb_strip_nulls(jb) FROM {jnums}
SELECT jsonb_object_agg(t, id ORDER BY id) FILTER (WHERE t <> ''), json_object_agg(k, c ORDER BY id) FILTER (WHERE k IS NOT NULL), jsonb_object_agg(k, id) FILTER (WHERE id < 3) FROM {strs}
SELECT k, jsonb_object_agg(id, jb), json_object_agg(id, j ORDER BY id) FROM {jnums} JOIN {strs} USING (id) GROUP BY k ORDER BY k
SELECT jsonb_object_agg(t, id) FROM {strs}
SELECT json_object_agg(t, id ORDER BY id) FROM {strs}
SELECT jsonb_object_agg(id, b), json_object_agg(id, b ORDER BY id) FROM {misc} WHERE false
SELECT g, jsonb_object_agg(h, y ORDER BY id), json_object_agg(id, x ORDER BY id) FILTER (WHERE x > 5), jsonb_object_agg(id, x) FROM {grp} GROUP BY g ORDER BY g
SELECT g, jsonb_object_agg(h, y) FROM {grp} GROUP BY g ORDER BY g
-- jsonb_pretty, jsonb_object (one array or two), array_to_json of integer, text, boolean and float8 arrays
SELECT id, jsonb_pretty(jb), jsonb_pretty(jb -> 'b') FROM {jnums}
SELECT jsonb_object('{b,1,a,2,b,NULL}'), jsonb_object('{a,"b c"}', ARRAY['x', NULL]), jsonb_object('{}'::text[]) FROM {one}
SELECT id, jsonb_object(ta), jsonb_object(ta, ta) FROM {misc} WHERE id <> 4
SELECT jsonb_object('{a,b,c}') FROM {one}
SELECT jsonb_object('{a,NULL}', '{1,2}') FROM {one}
SELECT array_to_json(ARRAY[0.1::float8, '1e308', 'NaN', -2.5]), array_to_json(ARRAY[true, NULL]), array_to_json(ARRAY[]::int[]), array_to_json(NULL::text[]) FROM {one}

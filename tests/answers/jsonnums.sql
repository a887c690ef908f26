-- json numbers a double cannot hold (issue 10: never a different answer): every path that reads a json value
-- on the lake route must give PostgreSQL's digits, or refuse
SELECT id, j, jb FROM {jnums}
SELECT id, jb::text, j::text FROM {jnums}
SELECT id, jb->'a', jb->'b' FROM {jnums}
SELECT id, j->'a', j->'b' FROM {jnums}
SELECT id, jb->>'a', j->>'a' FROM {jnums}
SELECT id, jb->'b'->0, jb->'b'->>0, jb #> '{b,0}', jb #>> '{b,0}' FROM {jnums}
SELECT id, jb->0, jb->>1, jb->2, jb->>3 FROM {jnums}
SELECT id, jb #> '{b,x}', jb #> '{b,0,c}', jb #>> '{b,0,c}' FROM {jnums}
SELECT id, jsonb_extract_path(jb, 'b', '0'), jsonb_extract_path_text(jb, 'a') FROM {jnums}
SELECT id, jsonb_array_elements(jb) FROM {jnums} WHERE jsonb_typeof(jb) = 'array'
SELECT id, jsonb_array_elements(jb->'b') FROM {jnums} WHERE jsonb_typeof(jb->'b') = 'array'
SELECT id, jsonb_array_elements_text(jb->'b') FROM {jnums} WHERE jsonb_typeof(jb->'b') = 'array'
SELECT id, json_array_elements(j->'b') FROM {jnums} WHERE json_typeof(j->'b') = 'array'
SELECT id, jsonb_typeof(jb->'a'), jsonb_typeof(jb), json_typeof(j->'a') FROM {jnums}
SELECT id, jsonb_array_length(jb->'b') FROM {jnums} WHERE jsonb_typeof(jb->'b') = 'array'
SELECT id, jb @> '{"a": 1}', jb @> '{"b": [1]}', jb @> '{"a": 12345678901234567890}' FROM {jnums}
SELECT id FROM {jnums} WHERE jb @> '[9223372036854775807]'
SELECT id, jb->'a' = '1'::jsonb, jb->'a' = '1.0'::jsonb FROM {jnums}
SELECT id, jb->'a' = jb->'b'->0 FROM {jnums}
SELECT id FROM {jnums} ORDER BY jb->'a', id
SELECT count(DISTINCT jb->'a') FROM {jnums}
SELECT jb->'a', count(*) FROM {jnums} GROUP BY 1
SELECT id, (jb->>'a')::numeric FROM {jnums} WHERE jsonb_typeof(jb->'a') = 'number'
SELECT id, jsonb_object_keys(jb) FROM {jnums} WHERE jsonb_typeof(jb) = 'object'
SELECT '{"a": 12345678901234567890.123}'::jsonb -> 'a' FROM {one}
SELECT '{"a": 12345678901234567890.123}'::jsonb, '{"b": 1, "a": 1.50}'::jsonb, '[1e400, -0, 1.5e2]'::jsonb FROM {one}
SELECT '{"a": 12345678901234567890.123}'::json -> 'a', '{"a": 1.50}'::json ->> 'a' FROM {one}
SELECT '[0.1, 1.50, 1e2]'::jsonb ->> 1, '{"a": {"b": 1.50}}'::jsonb -> 'a' FROM {one}
SELECT id, jb FROM {jnums} WHERE jb->>'a' = '1.0'
SELECT id, jb->'b' FROM {jnums} WHERE jb ? 'b'
SELECT id, jb -> (CASE WHEN id % 2 = 0 THEN 'a' ELSE 'b' END), jb -> (id - 12), jb ->> (id - 7) FROM {jnums}
SELECT id, jb #> ARRAY['b', (id % 3)::text], jb #>> '{b,-1}', jb #> '{b, 0 }', jb #> '{b,NULL}' FROM {jnums}
SELECT id, jb->'s', jb->>'s', j->'s', j->>'s', jb->'k', j->'k', jb #>> '{k,z}', j #>> '{k,z}' FROM {jnums} WHERE id = 13
SELECT id, j::jsonb, (jb::text)::jsonb, (j->'b')::jsonb FROM {jnums}
SELECT a.id, b.id FROM {jnums} a JOIN {jnums} b ON a.jb->'a' = b.jb->'a' ORDER BY 1, 2
SELECT id, jb->'a' IS DISTINCT FROM '1.00'::jsonb, jb->'a' <> jb->'b', jb->'b' = '[1, 1, 1.00]' FROM {jnums}
SELECT id, jb->'a' > '1'::jsonb FROM {jnums}
SELECT id, (jb->'a')::numeric FROM {jnums} WHERE jsonb_typeof(jb->'a') = 'number'
SELECT id, jsonb_object_keys(jb->'k'), json_object_keys(j->'k') FROM {jnums} WHERE id = 13
SELECT id, json_object_keys(j) FROM {jnums} WHERE json_typeof(j) = 'object'
SELECT id, jsonb_array_elements_text(jb) FROM {jnums}
SELECT id, jsonb_object_keys(jb) FROM {jnums}
SELECT DISTINCT jb->'a' FROM {jnums}
SELECT id, jsonb_array_elements(jb->'k'->'z'), json_array_elements_text(j->'b') FROM {jnums} WHERE id = 13
SELECT id, (jb->'a')::numeric FROM {jnums} WHERE jsonb_typeof(jb->'a') = 'number' AND id NOT IN (2, 3, 8)
SELECT id, (jb->'s')::numeric FROM {jnums} WHERE id = 13
SELECT id, (jb->'a')::int, (jb->'a')::float8 FROM {jnums} WHERE id = 5
SELECT id, jb->'a' FROM {jnums} ORDER BY 2
SELECT id, array_to_json(ia), array_to_json(ta) FROM {misc}
SELECT array_to_json(ARRAY[1.50, 2.0]), array_to_json(ARRAY[0.1::float8, 1e308]) FROM {one}
SELECT row_to_json(m) FROM {misc} m WHERE id = 1
SELECT json_object('{a,b}', '{1,2}'), jsonb_object('{b,1,a,2}') FROM {one}
SELECT id, (jb->'a')::text, jb->>'a' || 'x', (jb->>'a')::float8 FROM {jnums} WHERE jsonb_typeof(jb->'a') = 'number'
SELECT id, row_to_json(row(id, jb->'a')) FROM {jnums}
SELECT id, json_strip_nulls(j), jsonb_strip_nulls(jb) FROM {jnums}
-- containment read from the texts (jsonb's JsonbDeepContains: numbers by value, any operands)
SELECT id, jb @> '{"a": 1.0}', jb @> '{"b": [1.00]}', '{"a": 1}' <@ jb, jb <@ jb, jb @> (jb -> 'b'), jb @> NULL FROM {jnums}
SELECT a.id, b.id FROM {jnums} a JOIN {jnums} b ON a.jb @> b.jb AND a.id <> b.id ORDER BY 1, 2
SELECT id, jb @> j::jsonb, j::jsonb <@ jb, jb @> '[[1]]', jb @> '1e0', jb @> '{"b": {}}' FROM {jnums}

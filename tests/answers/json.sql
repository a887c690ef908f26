-- json and jsonb
SELECT id, j, jb FROM {misc}
SELECT id, j->'a', jb->'a' FROM {misc}
SELECT id, j->>'a', jb->>'a' FROM {misc}
SELECT id, jb->'b'->0, jb->'b'->>1 FROM {misc}
SELECT id, jb->'c'->>'d' FROM {misc}
SELECT id, jb #> '{c,d}', jb #>> '{c,d}' FROM {misc}
SELECT id, jb #>> '{b,0}' FROM {misc}
SELECT id FROM {misc} WHERE jb @> '{"a": 1}'
SELECT id FROM {misc} WHERE jb ? 'e'
SELECT id FROM {misc} WHERE jb ?| array['e', 'c']
SELECT id FROM {misc} WHERE jb ?& array['a', 'b']
SELECT id, jsonb_typeof(jb), json_typeof(j) FROM {misc}
SELECT id, jsonb_array_length(jb) FROM {misc} WHERE jsonb_typeof(jb) = 'array'
SELECT id, jsonb_array_elements(jb) FROM {misc} WHERE jsonb_typeof(jb) = 'array'
SELECT id, jsonb_array_elements_text(jb->'b') FROM {misc}
SELECT id, jsonb_object_keys(jb) FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, k, v FROM {misc}, jsonb_each(jb) AS e(k, v) WHERE jsonb_typeof(jb) = 'object'
SELECT id, k, v FROM {misc}, jsonb_each_text(jb) AS e(k, v) WHERE jsonb_typeof(jb) = 'object'
SELECT jsonb_build_object('a', 1, 'b', 'x') FROM {one}
SELECT json_build_object('a', 1) FROM {one}
SELECT jsonb_build_array(1, 'two', null) FROM {one}
SELECT to_jsonb(id), to_json('x'::text) FROM {misc}
SELECT jsonb_agg(id ORDER BY id) FROM {misc}
SELECT json_agg(id ORDER BY id) FROM {misc}
SELECT jsonb_object_agg(id, b) FROM {misc} WHERE b IS NOT NULL
SELECT id, jb || '{"z": 0}'::jsonb FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jb - 'a' FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, (jb->>'a')::int FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jb->'a' = '1'::jsonb FROM {misc}
SELECT id, jsonb_pretty(jb) FROM {misc} WHERE id = 4
SELECT id, jsonb_strip_nulls(jb) FROM {misc}
SELECT id, jsonb_set(jb, '{a}', '5') FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT '{"x": [1, 2]}'::jsonb -> 'x' -> 1 FROM {one}
SELECT '{"x": 1}'::json ->> 'x' FROM {one}
SELECT '[1,2,3]'::jsonb @> '[2]' FROM {one}
SELECT id, jsonb_path_query_first(jb, '$.a') FROM {misc} WHERE jsonb_typeof(jb) = 'object'
SELECT id, j::text, jb::text FROM {misc}
SELECT id, jb::json FROM {misc}
SELECT count(*) FROM {misc} WHERE jb->>'a' IS NULL
SELECT id, jsonb_extract_path_text(jb, 'c', 'd') FROM {misc}
SELECT id, jb ? 'a', jb ? 'two', jb ? 'text', jb ?| array['x', NULL, 'e'], jb ?& array['a', 'b'], jb ?& array['e', NULL] FROM {misc}
SELECT id, jb ?& array[]::text[] FROM {misc}
SELECT id, jb #> '{b,1}', jb #> '{"c", "d"}', jb #> ARRAY['b', '0'], jb #> '{}', jb #>> '{a}' FROM {misc} WHERE id IN (1, 4, 6)
SELECT id, jb #> '{b,-1}' FROM {misc}
SELECT id, jb #>> '{c}' FROM {misc} WHERE id = 1
SELECT '{"a": 1.50, "b": "x"}'::jsonb ->> 'a' FROM {one}
SELECT '{"a": 1.50, "b": "x"}'::jsonb ->> 'b', '[10, "y", null, true]'::jsonb ->> 3 FROM {one}
SELECT id, jsonb_array_elements(jb) FROM {misc}
SELECT id, jsonb_object_keys(jb->'c') FROM {misc}
SELECT id, jsonb_array_length(jb->'b'), jsonb_typeof(jb->'c') FROM {misc}
SELECT id, jb @> '{"a": null}', jb @> '{"b": [2]}', jb @> '{"c": {"d": "x"}}', jb @> '"text"', jb @> '[1]', jb @> '{}' FROM {misc}
SELECT id, '{"e": true}' <@ jb, '["two"]' <@ jb, jb @> '[null, 1]', jb @> '{"b": [1, 2], "a": 1}' FROM {misc}
SELECT id, jb @> '{"a": 1.5}' FROM {misc}
SELECT id FROM {misc} WHERE jb <@ '{"a": 1}'
SELECT id, jsonb_extract_path(jb, 'b', '1'), jsonb_extract_path_text(jb, 'a'), jsonb_extract_path_text(jb, 'c', 'd') FROM {misc} WHERE id IN (1, 4, 6)

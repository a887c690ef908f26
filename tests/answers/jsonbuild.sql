-- json values built from SQL values (jsonb_build_*, to_jsonb, jsonb_agg, jsonb_each): PostgreSQL's exact text
SELECT id, jsonb_build_object('id', id, 't', t, 'v', v, 'c', c), json_build_object('id', id, 't', t, 'c', c) FROM {strs}
SELECT id, jsonb_build_object('n', n, 'i8', i8, 'i2', i2, 'i4', i4), json_build_array(n, i8, NULL) FROM {nums}
SELECT id, jsonb_build_object('nu', nu) FROM {nums}
SELECT id, jsonb_build_object('d', d) FROM {nums}
SELECT id, jsonb_build_array(b, jb, j, id), json_build_array(b, jb, j, id), jsonb_build_array(), json_build_object() FROM {misc}
SELECT id, to_jsonb(t), to_json(c), to_jsonb(v), to_json(id), to_jsonb(NULL::text) FROM {strs}
SELECT id, to_jsonb(n), to_json(i8), to_jsonb(jb), to_json(j) FROM {nums} LEFT JOIN {jnums} USING (id)
SELECT jsonb_build_object('a', 1.50, 'b', -0.0, 'c', null, 'd', true, 'e', 'x"y\z'), json_build_object('a', 1.50, 'b', 'é') FROM {one}
SELECT jsonb_build_object('b', 1, 'a', 2, 'b', 3, 'aa', 4), json_build_object('b', 1, 'a', 2, 'b', 3) FROM {one}
SELECT jsonb_build_object(t, id) FROM {strs}
SELECT jsonb_build_object(id, t, true, id) FROM {strs} WHERE id < 3
SELECT g, jsonb_agg(x ORDER BY id), json_agg(h ORDER BY id DESC) FROM {grp} GROUP BY g ORDER BY g
SELECT jsonb_agg(t ORDER BY id) FILTER (WHERE id > 3), json_agg(k ORDER BY id), jsonb_agg(c ORDER BY id) FROM {strs}
SELECT jsonb_agg(id), json_agg(t) FROM {strs} WHERE false
SELECT jsonb_agg(jb ORDER BY id), json_agg(j ORDER BY id) FROM {jnums}
SELECT jsonb_agg(d ORDER BY id) FROM {nums}
SELECT id, jsonb_agg(id) OVER (ORDER BY id) FROM {one}
SELECT id, k, v FROM {jnums}, jsonb_each(jb) AS e(k, v) WHERE jsonb_typeof(jb) = 'object'
SELECT id, key, value FROM {jnums}, json_each_text(j) WHERE json_typeof(j) = 'object'
SELECT id, key, value FROM {jnums}, json_each(j) WHERE json_typeof(j) = 'object'
SELECT id, e.key, e.value FROM {jnums}, jsonb_each_text(jb) e WHERE jsonb_typeof(jb) = 'object'
SELECT e.key, e.value FROM {one}, jsonb_each('{"b": 1.50, "a": [1, 2], "b": null}') e
SELECT id, k FROM {jnums}, jsonb_each(jb) AS e(k, v)
SELECT id, k FROM {jnums}, json_each(j) AS e(k, v) WHERE id <> 12
SELECT count(*), max(length(k)) FROM {misc}, jsonb_each(jb) AS e(k, v) WHERE jsonb_typeof(jb) = 'object'
SELECT id, jsonb_set(jb, '{a}', '5'), jsonb_set(jb, '{b,-1}', '"x"'), jsonb_set(jb, '{b,5}', '1.50'), jsonb_set(jb, '{b,-5}', '3') FROM {jnums} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jsonb_set(jb, '{c}', jb->'b', false), jsonb_set(jb, '{k,z}', '[1, 2]'), jsonb_set(jb, '{}', '2'), jsonb_set(jb, '{a,x,y}', 'null') FROM {jnums} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jsonb_set(jb, ARRAY['b', '0'], to_jsonb(id)), jsonb_set(jb, '{a}', NULL) FROM {jnums} WHERE jsonb_typeof(jb) = 'object'
SELECT id, jsonb_set(jb, '{0}', '1') FROM {jnums}
SELECT id, jsonb_set(jb, '{b,x}', '1') FROM {jnums} WHERE id = 1
SELECT id, jsonb_set(jb, '{NULL}', '1') FROM {jnums} WHERE id = 1
-- floats in built json: PostgreSQL's float8out/float4out text (jsonb: that text as a numeric)
SELECT id, to_json(r), to_jsonb(r), json_build_array(d, r, nu), jsonb_build_array(d, r, nu, 1.50) FROM {nums}
SELECT x, to_jsonb(x::float8), to_json(x::float8), to_jsonb(x::real), json_build_object('r', x::real) FROM {one}, unnest(ARRAY['1e15', '1e-5', '0.1', '-0', '1e308', '5e-324', '123456789012345678', 'NaN', '-Infinity', '3.4e38', '1234567', '1e-4', '999999', '1e6']) x
SELECT json_agg(nu ORDER BY id), jsonb_agg(r ORDER BY id), json_object_agg(id, d ORDER BY id), jsonb_object_agg(id, nu) FROM {nums}
SELECT json_object_agg(id, d) FROM {nums}

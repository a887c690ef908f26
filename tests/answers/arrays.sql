-- arrays
SELECT id, ia, ta FROM {misc}
SELECT id, ia[1], ta[2] FROM {misc}
SELECT id, ia[2:3] FROM {misc}
SELECT id, array_length(ia, 1), cardinality(ia) FROM {misc}
SELECT id, array_upper(ia, 1), array_lower(ia, 1) FROM {misc}
SELECT id, ia || 9 FROM {misc}
SELECT id, 0 || ia FROM {misc}
SELECT id, ia || ARRAY[8, 9] FROM {misc}
SELECT id, array_append(ia, 4), array_prepend(0, ia) FROM {misc}
SELECT id, array_cat(ia, ia) FROM {misc}
SELECT id, array_position(ia, 2) FROM {misc}
SELECT id, array_remove(ia, 2) FROM {misc}
SELECT id, array_to_string(ta, ',') FROM {misc}
SELECT id, array_to_string(ta, ',', '*') FROM {misc}
SELECT id FROM {misc} WHERE 2 = ANY(ia)
SELECT id FROM {misc} WHERE 2 = ALL(ia)
SELECT id FROM {misc} WHERE ia @> ARRAY[2]
SELECT id FROM {misc} WHERE ia && ARRAY[1, 7]
SELECT id FROM {misc} WHERE ia <@ ARRAY[1, 2, 3, 4]
SELECT id, unnest(ia) FROM {misc}
SELECT id, x FROM {misc}, unnest(ia) AS x
SELECT id, x, n FROM {misc}, unnest(ta) WITH ORDINALITY AS u(x, n)
SELECT array_agg(id ORDER BY id) FROM {misc}
SELECT array_agg(b ORDER BY id) FROM {misc}
SELECT id, ARRAY[id, id * 2] FROM {misc}
SELECT id, ia = ARRAY[1, 2, 3] FROM {misc}
SELECT id FROM {misc} ORDER BY ia, id
SELECT ARRAY[1, 2] || ARRAY[3] FROM {one}
SELECT (ARRAY[10, 20, 30])[2] FROM {one}
SELECT (ARRAY[10, 20, 30])[5] FROM {one}
SELECT array_dims(ARRAY[1, 2, 3]) FROM {one}
SELECT '{1,2,3}'::int[] FROM {one}
SELECT string_to_array('a,b,,c', ',') FROM {one}
SELECT array_length(ARRAY[]::int[], 1) FROM {one}
SELECT id, array_reverse(ia) FROM {misc}
SELECT id, ia[0] FROM {misc}
SELECT id, u, b, by FROM {misc}
SELECT id, u::text FROM {misc}
SELECT id FROM {misc} WHERE u = 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'
SELECT id FROM {misc} ORDER BY u NULLS LAST, id
SELECT id, by, length(by), encode(by, 'hex') FROM {misc}
SELECT id, b AND true, b OR false, NOT b FROM {misc}
SELECT id FROM {misc} WHERE b
SELECT id FROM {misc} WHERE b IS NOT TRUE
SELECT bool_and(b), bool_or(b), every(b) FROM {misc}
SELECT 'on'::boolean, 'yes'::boolean, 'f'::boolean FROM {one}
SELECT 'maybe'::boolean FROM {one}
SELECT id, b::text, b::int FROM {misc}
SELECT count(*) FILTER (WHERE b) FROM {misc}
SELECT id, md5(by) FROM {misc}
SELECT '{ 10 , -2,NULL}'::int[], '{a,"b c",NULL,"NULL","x\"y"}'::text[], '{}'::bigint[] FROM {one}
SELECT id FROM {misc} WHERE ia = '{1,2,3}'::int[] OR ta = '{b,a}'::text[] ORDER BY id
SELECT '{1.5}'::int[] FROM {one}

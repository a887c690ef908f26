-- Text order (issue 10.4): the database orders text as bytes, and so does the lake route; explicit byte-order
-- collations are followed, others refused
SELECT id, w FROM {words} ORDER BY w, id
SELECT id, w FROM {words} ORDER BY w DESC NULLS LAST, id
SELECT id, c FROM {words} ORDER BY c, id
SELECT id, u FROM {words} ORDER BY u DESC, id
SELECT id FROM {words} ORDER BY w COLLATE "C", id
SELECT id FROM {words} ORDER BY w COLLATE "POSIX" DESC, id
SELECT id FROM {words} ORDER BY w COLLATE ucs_basic, id
SELECT id FROM {words} ORDER BY w COLLATE pg_c_utf8, id
SELECT id FROM {words} ORDER BY w COLLATE pg_unicode_fast, id
SELECT id, w FROM {words} ORDER BY 2, 1
SELECT id, w AS x FROM {words} ORDER BY x, id
SELECT min(w), max(w), min(c), max(u) FROM {words}
SELECT greatest(w, 'm'), least(w, 'm') FROM {words}
SELECT id FROM {words} WHERE w < 'b'
SELECT id FROM {words} WHERE w BETWEEN 'a' AND 'z'
SELECT id FROM {words} WHERE c >= 'a' COLLATE "C"
SELECT id, rank() OVER (ORDER BY w) FROM {words}
SELECT string_agg(w, '|' ORDER BY w, id) FROM {words}
SELECT array_agg(id ORDER BY lower(w), id) FROM {words}
SELECT id, upper(w) FROM {words} ORDER BY upper(w), id
SELECT w, count(*) FROM {words} GROUP BY w ORDER BY w
SELECT DISTINCT lower(w) FROM {words} ORDER BY 1
SELECT id FROM {words} WHERE w = 'a' OR w = 'A'
SELECT id, w FROM {words} ORDER BY w COLLATE "en-US-x-icu", id
SELECT id, w FROM {words} ORDER BY w COLLATE "unicode", id
SELECT id, upper(w), lower(w), initcap(w) FROM {words}
SELECT id, upper(c), lower(c), initcap(c) FROM {words}
SELECT id, upper(u), lower(u), initcap(u) FROM {words}
SELECT id FROM {words} WHERE c ILIKE 'É%' OR u ILIKE 'ä%' OR c ~* 'Ω'
SELECT id, upper(w COLLATE "C"), lower(w COLLATE pg_unicode_fast) FROM {words}

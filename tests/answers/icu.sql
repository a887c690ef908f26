-- text in ICU collations (tests/test_answers_icu.py, on a PostgreSQL built with ICU): c0 en-x-icu, c1 und-x-icu,
-- c2 sv-x-icu, c3 de-x-icu, c4 tr-x-icu
SELECT id, c0 FROM {words_icu} ORDER BY c0, id
SELECT id, c1 FROM {words_icu} ORDER BY c1 DESC NULLS LAST, id
SELECT c2 FROM {words_icu} ORDER BY 1
SELECT c3 AS x FROM {words_icu} ORDER BY x NULLS FIRST
SELECT c4 FROM {words_icu} ORDER BY c4 DESC
SELECT id, row_number() OVER (ORDER BY c0, id) FROM {words_icu} ORDER BY id
SELECT id, rank() OVER (PARTITION BY length(c2) ORDER BY c2 DESC) FROM {words_icu} ORDER BY id
SELECT string_agg(c1, '|' ORDER BY c1) FROM {words_icu}
SELECT length(c0), string_agg(c3, '|' ORDER BY c3, id) FROM {words_icu} GROUP BY 1 ORDER BY 1
SELECT c0, count(*) FROM {words_icu} GROUP BY c0 ORDER BY c0
SELECT DISTINCT c2 FROM {words_icu} ORDER BY c2
SELECT id FROM {words_icu} ORDER BY c0 || 'x', id
SELECT id FROM {words_icu} ORDER BY c0 COLLATE "C", id
SELECT id, c0 FROM {words_icu} ORDER BY c0 LIMIT 20
SELECT * FROM (SELECT id, c0 FROM {words_icu} ORDER BY c0 LIMIT 50) s ORDER BY id
SELECT c0 FROM {words_icu} WHERE c0 < 'm' ORDER BY c0 COLLATE "C"
SELECT min(c0), max(c1) FROM {words_icu}
SELECT id FROM {words_icu} ORDER BY lower(c0), id
SELECT c0 FROM {words_icu} UNION SELECT c1 FROM {words_icu} ORDER BY 1

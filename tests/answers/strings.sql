-- string functions, casts and comparisons (text, varchar, char(n))
SELECT id, t FROM {strs}
SELECT id, v FROM {strs}
SELECT id, c FROM {strs}
SELECT id, length(t), length(v), length(c) FROM {strs}
SELECT id, char_length(t), octet_length(t) FROM {strs}
SELECT id, upper(t), lower(v) FROM {strs}
SELECT id, t || '!' FROM {strs}
SELECT id, c || '!' FROM {strs}
SELECT id, concat(t, v, c) FROM {strs}
SELECT id, concat_ws('-', t, v) FROM {strs}
SELECT id, substr(t, 2, 3) FROM {strs}
SELECT id, substr(t, 0, 3), substr(t, -1, 3) FROM {strs}
SELECT id, substring(t from 3) FROM {strs}
SELECT id, substring(t, 2) FROM {strs}
SELECT id, left(t, 3), right(t, 2) FROM {strs}
SELECT id, left(t, -2), right(t, -2) FROM {strs}
SELECT id, position('o' in t), strpos(t, 'l') FROM {strs}
SELECT id, replace(t, 'l', 'L') FROM {strs}
SELECT id, trim(t), ltrim(t), rtrim(t) FROM {strs}
SELECT id, btrim(t, 'a'), trim(both 'x' from v) FROM {strs}
SELECT id, lpad(t, 8, '*'), rpad(v, 6, '.') FROM {strs}
SELECT id, lpad(t, 3) FROM {strs}
SELECT id, repeat(v, 2) FROM {strs}
SELECT id, reverse(t) FROM {strs}
SELECT id, initcap(t) FROM {strs}
SELECT id, split_part(t, ',', 2) FROM {strs}
SELECT id, split_part(t, ' ', -1) FROM {strs}
SELECT id, ascii(t), chr(65) FROM {strs}
SELECT id, md5(t) FROM {strs}
SELECT id, starts_with(t, 'he') FROM {strs}
SELECT id, translate(t, 'lo', '01') FROM {strs}
SELECT id, string_to_array(t, ',') FROM {strs}
SELECT id, t = v, t < v FROM {strs}
SELECT id FROM {strs} WHERE c = 'ab'
SELECT id FROM {strs} WHERE c = 'ab  '
SELECT id FROM {strs} WHERE c IN ('ab', 'é', '', 'zzzzzzzz')
SELECT id FROM {strs} WHERE c NOT IN ('ab  ', 'fox')
SELECT id FROM {strs} WHERE c <> 'aaa'
SELECT id FROM {strs} WHERE 'fox' = c
SELECT id FROM {strs} WHERE c IS DISTINCT FROM 'ab'
SELECT id FROM {strs} WHERE c IS NOT DISTINCT FROM ' x  '
SELECT id FROM {strs} WHERE c IN ('zzzzzzzzz', 'ab')
SELECT id FROM {strs} WHERE c = 'zzzzzzzz '
SELECT id, c = 'q''t', c IN ('7', 'aaa') FROM {strs}
SELECT id FROM {strs} WHERE c > 'a'
SELECT id, c = v FROM {strs}
SELECT count(DISTINCT c) FROM {strs}
SELECT c, count(*) FROM {strs} GROUP BY c
SELECT id, t::varchar(3) FROM {strs}
SELECT id, t::char(3) FROM {strs}
SELECT id, v::text FROM {strs}
SELECT id, c::text FROM {strs}
SELECT id, length(c::text) FROM {strs}
SELECT id, 'x'::char(3) = 'x' FROM {one}
SELECT id, coalesce(t, 'none') FROM {strs}
SELECT id, nullif(t, '') FROM {strs}
SELECT id, t IS NULL, t = '' FROM {strs}
SELECT string_agg(t, ',' ORDER BY id) FROM {strs}
SELECT string_agg(DISTINCT k, '|' ORDER BY k) FROM {strs}
SELECT id, quote_literal(t), quote_ident(v) FROM {strs}
SELECT id, format('%s-%s', t, v) FROM {strs}
SELECT id, format('%I', v) FROM {strs}
SELECT id, encode(t::bytea, 'hex') FROM {strs}
SELECT id, to_hex(id * 1000) FROM {strs}
SELECT id, overlay(t placing 'XX' from 2 for 3) FROM {strs}
SELECT id, regexp_replace(t, 'l+', '_') FROM {strs}
SELECT id, regexp_replace(t, '[aeiou]', '', 'g') FROM {strs}
SELECT id, t ~ '^h', t ~* '^h', t !~ 'o' FROM {strs}
SELECT id, regexp_match(t, '(\w+) (\w+)') FROM {strs}
SELECT id, regexp_matches(t, 'o', 'g') FROM {strs}
SELECT id, regexp_split_to_array(t, ',') FROM {strs}
SELECT id, length(t) FROM {strs} ORDER BY t NULLS FIRST, id
SELECT id FROM {strs} ORDER BY v DESC, id
SELECT id FROM {strs} ORDER BY t COLLATE "C", id
SELECT id FROM {strs} ORDER BY lower(t), id
SELECT max(t), min(t) FROM {strs}
SELECT max(c), min(c) FROM {strs}
SELECT id, t, v FROM {strs} WHERE t IN ('hello', 'aaa')
SELECT id, t FROM {strs} WHERE t NOT IN ('hello', 'aaa')
SELECT id, t FROM {strs} WHERE t BETWEEN 'a' AND 'm'
SELECT id, lower(t) = lower(v) FROM {strs}
SELECT id, t || NULL FROM {strs}
SELECT id, 'abc' || 1 || true FROM {one}
SELECT id, E'a\tb', 'it''s' FROM {one}
SELECT id, length('Ünïcödé'), upper('straße') FROM {one}
SELECT id, t ILIKE 'HELLO%' FROM {strs}
SELECT id, format('%s|%s|%%|%L', t, c, v), format('%s', id), format('x%sy', NULL::text) FROM {strs}
SELECT id, format('%L', t) FROM {strs}
SELECT id, format('%1$s', t) FROM {strs}
SELECT id FROM {strs} WHERE c = 'ab   '
SELECT id FROM {strs} WHERE c <> 'ab' OR c = ''
SELECT id, c IN ('ab', ' x', 'zzzzzzzz', 'zzzzzzzzz'), c = 'zzzzzzzzz', c IS NOT DISTINCT FROM 'é' FROM {strs}
SELECT id FROM {strs} WHERE c IN ('q''t  ', 'fox') OR c IS DISTINCT FROM 'aaa'
SELECT id, format('%I.%I', k, 'select'), quote_ident(t), quote_ident(v) FROM {strs} WHERE v IS NOT NULL
SELECT x, quote_ident(x), format('%I', x) FROM {one}, unnest(ARRAY['abs', 'between', 'int', 'a$', '_x1', '1a', '', 'a"b', 'user', 'json_table', 'Ab', 'é', 'value', 'x y']) x
SELECT id, to_char(i4, '999'), to_char(i4, '0000'), to_char(n, 'FM999,999.00'), to_char(n, '9.99'), to_char(i8, 'FM9,999,999,999,999,999,990') FROM {nums}
SELECT id, to_char(n, '99,999,990.000'), to_char(nu, 'FM999,999,999,990.99'), to_char(i2, 'FM0000'), to_char(-n, '9990.0') FROM {nums}
SELECT to_char(x, 'FM9.99'), to_char(x, '9.99'), to_char(x, '999,999'), to_char(x, '0.0') FROM {one}, unnest(ARRAY[0, 0.5, -0.5, 0.004, -0.005, 9.995, 12, 1234.5678, -0.0001, 999999.5]::numeric[]) x
SELECT id, to_char(d, '999.99'), to_char(n, '9.99EEEE'), to_char(n, 'S999.99') FROM {nums}
-- to_char of floats (issue 10.3): C's %.*f of the value, cut to 15 (float4: 6) significant digits, as float8_to_char
SELECT id, d, to_char(d, '999.99'), to_char(d, 'FM9990.0000'), to_char(r, '999.99'), to_char(r, 'FM0.000000') FROM {nums} WHERE d BETWEEN -1e6 AND 1e6 AND r BETWEEN -1e6 AND 1e6
SELECT x, to_char(x, '9'), to_char(x, '0.0'), to_char(x, 'FM9.99'), to_char(x, '999999999999.9999'), to_char(x::real, 'FM99999999999999.99') FROM {one}, unnest(ARRAY[0.5, -0.5, 2.5, 2.675, 0.005, -0.0001, -0, 123456789012.345, 1234567]::float8[]) x
SELECT to_char(1e15::float8, '9999999999999999.99'), to_char(1e15::float8, 'FM0.0') FROM {one}
SELECT to_char(d, '999') FROM {nums} WHERE id = 5

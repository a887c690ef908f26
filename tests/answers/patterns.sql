-- LIKE, ILIKE, SIMILAR TO, regular expressions
SELECT id FROM {strs} WHERE t LIKE 'h%'
SELECT id FROM {strs} WHERE t LIKE '%o%'
SELECT id FROM {strs} WHERE t LIKE '_ello'
SELECT id FROM {strs} WHERE t LIKE 'a\%b%'
SELECT id FROM {strs} WHERE t LIKE '%\_c%'
SELECT id FROM {strs} WHERE t LIKE '%\\d'
SELECT id FROM {strs} WHERE v LIKE 'a_b'
SELECT id FROM {strs} WHERE t NOT LIKE '%e%'
SELECT id FROM {strs} WHERE t ILIKE '%WORLD'
SELECT id FROM {strs} WHERE t NOT ILIKE 'h%'
SELECT id FROM {strs} WHERE t LIKE 'a!%b%' ESCAPE '!'
SELECT id FROM {strs} WHERE c LIKE 'ab%'
SELECT id FROM {strs} WHERE c LIKE 'ab'
SELECT id FROM {strs} WHERE t SIMILAR TO '%(o|e)%'
SELECT id FROM {strs} WHERE t SIMILAR TO 'h%'
SELECT id FROM {strs} WHERE t LIKE ANY (ARRAY['h%', 'a%'])
SELECT id FROM {strs} WHERE t LIKE ALL (ARRAY['%a%', '%b%'])
SELECT id FROM {strs} WHERE t ~ '\d'
SELECT id FROM {strs} WHERE t ~ '^[a-z]+$'
SELECT id FROM {strs} WHERE t ~* 'the'
SELECT id FROM {strs} WHERE t !~* 'H'
SELECT id, t LIKE NULL FROM {strs}
SELECT id, t ~ '(' FROM {strs}
SELECT id FROM {strs} WHERE t LIKE '%'
SELECT id FROM {strs} WHERE t LIKE ''
SELECT id, 'abc' LIKE 'a%', 'ABC' ILIKE 'a%' FROM {one}
SELECT id, regexp_replace('aaa', 'a', 'b') FROM {one}
SELECT id, regexp_replace('aaa', 'a', 'b', 'g') FROM {one}
SELECT id, regexp_count('banana', 'an') FROM {one}
SELECT id, regexp_like('Hello', 'h', 'i') FROM {one}
SELECT id, t SIMILAR TO '%o%', t NOT SIMILAR TO '(h|H)%', t SIMILAR TO '_{5}' FROM {strs}
SELECT id, t SIMILAR TO '%\%%', t SIMILAR TO 'a#%b%' ESCAPE '#', t SIMILAR TO '%.%' FROM {strs}
SELECT id, c SIMILAR TO 'ab', c SIMILAR TO 'ab %', v SIMILAR TO '(x|a)%_{1,2}' FROM {strs}
SELECT id, t SIMILAR TO 'line1%line2', t SIMILAR TO '%^%', t SIMILAR TO '(a|b)+' FROM {strs}
SELECT id, t SIMILAR TO '%[a-c]%' FROM {strs}
SELECT id, t SIMILAR TO '\d%' FROM {strs}
SELECT id, regexp_match(t, 'o(.)'), regexp_match(v, '^([a-z]+)-([a-z]+)', 'i'), regexp_match(t, 'l') FROM {strs}
SELECT id, regexp_match(t, 'line1.line2'), (regexp_match(t, '([0-9]+)'))[1] FROM {strs}
SELECT id, regexp_match(t, '(a)|(b)') FROM {strs}
SELECT id FROM {strs} WHERE t ~ '^\w+ \w+$'
SELECT id FROM {strs} WHERE t ~* 'ü'

-- The differential suite's data: loaded into PostgreSQL, replicated into the lake by the real ingest worker.
-- Every table has a primary key (replication needs one); NULLs appear in every other column.
CREATE TABLE nums (
    id int PRIMARY KEY, i2 smallint, i4 int, i8 bigint, n numeric(12,4), nu numeric, r real, d double precision
);
INSERT INTO nums VALUES
 (1, 1, 7, 9000000000, 1.5000, 1.5, 1.5, 2.5),
 (2, -3, -7, -9000000000, -2.2500, -2.25, -0.5, -2.5),
 (3, 0, 0, 0, 0, 0, 0, 0),
 (4, 32767, 2147483647, 9223372036854775807, 99999999.9999, 123456789.123456789, 3.4e38, 1e308),
 (5, -32768, -2147483648, -9223372036854775807, -99999999.9999, -0.000001, -1.25, 'NaN'),
 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (7, 5, 13, 13, 0.3333, 10, 'Infinity', 'Infinity'),
 (8, 2, 3, 4, 1.0000, 100.10, 'NaN', '-Infinity'),
 (9, 10, 25, 100, 12.3450, 1e-10, 0.1, 0.1),
 (10, -4, -5, -6, -0.0050, -7.5, 2.5, 3.5);

CREATE TABLE strs (id int PRIMARY KEY, t text, v varchar(20), c char(8), k text);
INSERT INTO strs VALUES
 (1, 'hello', 'Hello', 'ab', 'a'),
 (2, 'Hello World', 'hello world', 'ab  ', 'b'),
 (3, '', '', '', 'a'),
 (4, NULL, NULL, NULL, NULL),
 (5, '  padded  ', ' x ', ' x', 'c'),
 (6, 'a%b_c\d', 'a_b', 'a%b', 'b'),
 (7, 'Ünïcödé ß', 'ÄÖÜ', 'é', 'a'),
 (8, 'abc,def,ghi', 'x-y-z', 'zzzzzzzz', 'c'),
 (9, 'The quick brown fox', 'FOX', 'fox', 'b'),
 (10, 'line1
line2', 'tab	x', 'q''t', 'a'),
 (11, '123', '45.6', '7', 'c'),
 (12, 'aaa', 'AAA', 'aaa', 'a');

CREATE TABLE times (id int PRIMARY KEY, d date, tm time, ts timestamp, tz timestamptz);
INSERT INTO times VALUES
 (1, '2024-01-15', '10:30:00', '2024-01-15 10:30:00', '2024-01-15 10:30:00+00'),
 (2, '2023-12-31', '23:59:59.999999', '2023-12-31 23:59:59.123456', '2023-12-31 23:30:00-05'),
 (3, '2000-02-29', '00:00:00', '2000-02-29 00:00:00', '2000-02-29 12:00:00+09:30'),
 (4, NULL, NULL, NULL, NULL),
 (5, 'infinity', '12:00:00', 'infinity', 'infinity'),
 (6, '-infinity', '06:15:30.5', '-infinity', '-infinity'),
 (7, '1999-01-01', '18:45:00', '1999-01-01 08:00:00.5', '1999-01-01 08:00:00.5+01'),
 (8, '2024-03-10', '02:30:00', '2024-03-10 02:30:00', '2024-03-10 07:30:00+00'),
 (9, '1970-01-01', '00:00:01', '1970-01-01 00:00:00', '1970-01-01 00:00:00+00'),
 (10, '2024-07-04', '12:34:56.789', '2024-07-04 12:34:56.789', '2024-07-04 12:34:56.789+02');

CREATE TABLE misc (
    id int PRIMARY KEY, u uuid, b boolean, by bytea, j json, jb jsonb, ia int[], ta text[], iv interval
);
INSERT INTO misc VALUES
 (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', true, '\x00ff10', '{"a": 1, "b": [1, 2]}',
  '{"a": 1, "b": [1, 2], "c": {"d": "x"}}', '{1,2,3}', '{a,b}', '1 day 02:03:04'),
 (2, '00000000-0000-0000-0000-000000000000', false, '\x', '[1, "two", null]', '[1, "two", null]',
  '{}', '{}', '-3 months'),
 (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (4, 'ffffffff-ffff-ffff-ffff-ffffffffffff', true, '\xdeadbeef', '{"a": null}', '{"a": null, "e": true}',
  '{5,NULL,7}', '{x,NULL,"y z"}', '1 year 2 mons 3 days 04:05:06.5'),
 (5, '12345678-1234-5678-1234-567812345678', false, 'abc', '"text"', '"text"', '{10}', '{only}', '00:00:00.000001'),
 (6, NULL, true, NULL, '{"a": 2}', '{"a": 2, "b": [3]}', '{2,2,1}', '{b,a}', '-1 day');

CREATE TABLE grp (id int PRIMARY KEY, g text, h int, x int, y numeric(10,2));
INSERT INTO grp SELECT i, (ARRAY['a','b','c',NULL])[1 + i % 4], i % 3, i * 7 % 11, (i * 13 % 17) + 0.25
FROM generate_series(1, 40) i;
UPDATE grp SET x = NULL WHERE id % 9 = 0;

CREATE TABLE tree (id int PRIMARY KEY, parent int, name text);
INSERT INTO tree VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'), (5, 2, 'a2'), (6, 4, 'a1x');

CREATE TABLE one (id int PRIMARY KEY);
INSERT INTO one VALUES (1);

-- text that linguistic collations order differently from bytes: case, accents, punctuation, spaces, digits,
-- ligatures, decomposed accents, astral characters (the database's collation orders as bytes; c and u name
-- byte-order collations explicitly)
CREATE TABLE words (id int PRIMARY KEY, w text, c text COLLATE "C", u text COLLATE pg_c_utf8);
INSERT INTO words SELECT i, x, x, x FROM unnest(ARRAY[
 'a', 'B', 'b', 'A', 'é', 'e', 'E', 'É', 'a b', 'ab', 'a-b', 'a_b', '_a', ' a', 'a ', '1', '10', '2', 'Z', 'z',
 'ä', 'ß', 'ss', 'SS', 'Ab', 'aB', '', NULL, 'ﬁ', 'fi', 'Å', 'Å', 'å', 'ǅ', '😀', 'ø', 'o', 'œ', 'oe', 'co-op',
 'coop', 'co op', 'Ω', 'ω', '~', '!', 'a''b', 'a.b', 'résumé', 'resume', 'Resume', 'naïve', 'naive'
]) WITH ORDINALITY AS v(x, i);

-- json numbers a double cannot hold: beyond int64 and uint64, more digits than 17, exponents beyond a double,
-- negative zero, trailing zeros (json keeps the text as written, jsonb as PostgreSQL's numeric prints it)
CREATE TABLE jnums (id int PRIMARY KEY, j json, jb jsonb);
INSERT INTO jnums SELECT i, x::json, x::jsonb FROM unnest(ARRAY[
 '{"a": 12345678901234567890.123, "b": [1.50, 2]}', '{"a": 123456789012345678901234567890, "b": []}',
 '{"a": 1e400, "b": [1E-5]}', '{"a": -0, "b": [-0.0]}', '{"a": 1.0, "b": [1, 1.0, 10e-1]}',
 '[9223372036854775808, -9223372036854775809, 0.1, 1.5e2]', '{"a": 18446744073709551616, "b": {"x": 2.50}}',
 '{"a": 3.14159265358979323846264338327950288, "b": [{"c": 0.30000000000000004441}]}', NULL,
 '{"a": 1, "b": [1e0, 100E-2]}', '{"b": 1,   "a": "1.50",  "aa": [1.50]}', '12345678901234567890.5',
 '{"s": "tab\there \"q\" \\ \u00e9 \u001f \/", "k": {"é": 1, "z": [true, false, null], "ab": 3, "z": 4}}'
]) WITH ORDINALITY AS v(x, i);

-- equal numerics written with different display scales (1.5 and 1.50): PostgreSQL prints each as written, and
-- shows whichever its plan meets first where they meet (a group, a tie for min)
CREATE TABLE ties (id int PRIMARY KEY, v numeric);
INSERT INTO ties VALUES (1, 1.5), (2, 1.50), (3, 2.0), (4, 2.00), (5, 0.10), (6, NULL);

-- rows that tests/answers/changes.sql updates, deletes and adds while the ingest runs (after the snapshot), so
-- that PostgreSQL's heap order and the lake's file order both differ from the key's: aggregates without ORDER BY
-- list their input in that order (unordered.sql)
CREATE TABLE moves (id int PRIMARY KEY, g text, n int, y numeric(10,2), d date, t text, c char(6));
INSERT INTO moves SELECT i, (ARRAY['north', 'south', 'east', 'west'])[1 + i % 4], i * 37 % 101, (i * 7 % 23) + 0.5,
 date '2024-01-01' + i * 3, 'item ' || i, 'c' || (i % 9)
FROM generate_series(1, 80) i;

-- edge values of the classes issue 28.4 names (classes.sql): char(n) padding, float specials and exponents,
-- numerics of several scales, arrays with NULL elements and elements that need quotes, bytea, intervals of
-- months and years, BC dates, negative integers
CREATE TABLE edges (
    id int PRIMARY KEY, c char(6), f float8, r real, nu numeric, n numeric(10,3), ia int[], ta text[], b bytea,
    iv interval, d date, i4 int, i8 bigint
);
INSERT INTO edges VALUES
 (1, 'ab', 'NaN', 'NaN', 1.50, 2.500, '{1,NULL,3}', '{"a b",NULL,"q\"t",""}', '\x0102',
  '1 year 2 mons 3 days 04:05:06.5', '0044-03-15 BC', -1, -1),
 (2, '', 'Infinity', '-Infinity', -0.001, -1.250, '{}', '{NULL}', '\x', '-1 mons -2 days', '2024-02-29',
  -2147483648, -9223372036854775808),
 (3, 'é  ü', '-0', '-0', 12345678901234567890.5, 0, '{-5,2}', '{"back\\slash","comma,x","NULL","{}","é"}',
  '\xdeadbeef', '-00:00:00.000001', '0001-01-01 BC', 255, 4294967296),
 (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (5, 'x', 1e300, 3.4e38, 3.14159, 9.999, '{NULL}', '{}', '\x00', '1000 years', '4713-11-24 BC', 0, 0),
 (6, 'ab    ', 1.5e-300, 1e-38, 0.000001, 0.001, '{2,2,NULL,1}', '{a,A,"a"}', '\x0a5c27', '30 days', '0001-01-01',
  2147483647, 9223372036854775807),
 (7, 'Ωmega', 123456789012345678, 1e15, 12.5, 12.500, '{7}', '{" lead","trail ","\\"}', '\xff',
  '1 mon -30 days 12:00:00', '1970-01-01', -255, -4294967296),
 (8, ' x', 1e16, 123456.7, -7, -7.000, '{0,-1}', '{"\""}', '\x0102', '6 mons', '0100-02-28 BC', -16, -16),
 (9, 'zz', 0.1, 0.1, 10, 10.000, '{1,2,3}', '{b,NULL}', '\x01', '-1 year -1 mons', '2000-01-01', 16, 16),
 (10, 'ab', 1e-5, 1e-5, 0.10, 0.100, '{3,1}', '{x,y}', '\x0102', '00:00:00', '1999-12-31', 1, 1),
 (11, 'éé', 1e15, 1e16, 123456789.123, 2.000, '{5,NULL,7}', '{a}', '\x0001', '1 day', '2024-07-04', 42, 42),
 (12, 'x', -1e-310, 2.5, 0.5, 0.500, '{1}', '{"a,b"}', '\x61', '1 mon', '0001-12-31 BC', -42, -42);

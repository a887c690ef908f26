-- The fuzzer's tables (tests/fuzz): edge values of every type the generator uses, NULLs in every column but the
-- key. Loaded into PostgreSQL and replicated into the lake by the real ingest worker. ``k`` groups and joins.
CREATE TABLE fz_num (
    id int PRIMARY KEY, k int, i2 smallint, i4 int, i8 bigint, n numeric(20,6), nu numeric, n38 numeric(38,0),
    f4 real, f8 double precision, b boolean
);
INSERT INTO fz_num VALUES
 (1, 0, 0, 0, 0, 0, 0, 0, 0, 0, false),
 (2, 1, 1, 1, 1, 1.5, 1.5, 1, 1.5, 1.5, true),
 (3, 1, -1, -1, -1, -1.5, -2.25, -1, -0.5, -2.5, false),
 (4, 2, 32767, 2147483647, 9223372036854775807, 99999999999999.999999, 123456789.123456789,
     99999999999999999999999999999999999999, 3.4e38, 1.7976931348623157e308, true),
 (5, 2, -32768, -2147483648, -9223372036854775808, -99999999999999.999999, -0.000001,
     -99999999999999999999999999999999999999, -3.4e38, -1.7976931348623157e308, NULL),
 (6, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (7, 3, 7, 13, 13, 0.333333, 10, 7, 'Infinity', 'Infinity', true),
 (8, 3, 2, 3, 4, 1.000001, 100.10, 12345678901234567890, 'NaN', '-Infinity', false),
 (9, 4, 10, 25, 100, 12.345000, 1e-10, 5, 0.1, 0.1, true),
 (10, 4, -4, -5, -6, -0.005000, -7.5, -3, 1e-30, 'NaN', false),
 (11, 0, 5, 100, 1000000, 2.5, 2.5, 2, '-0', '-0', NULL),
 (12, 1, 3, 7, 70000000000, 0.5, 0.50, 10, 2.5, 3.5, true),
 (13, 2, -7, 2, -2, -2.5, 1e20, 9, 1e-45, 4.9e-324, false),
 (14, NULL, 1, 1, 1, 1, 1, 1, 1, 1, true);

CREATE TABLE fz_txt (id int PRIMARY KEY, k int, t text, v varchar(12), c char(6), by bytea, u uuid);
INSERT INTO fz_txt VALUES
 (1, 0, 'hello', 'Hello', 'ab', '\x00ff10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
 (2, 1, 'Hello World', 'hello world', 'ab  ', '\x', '00000000-0000-0000-0000-000000000000'),
 (3, 1, '', '', '', '\xdeadbeef', 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
 (4, 2, NULL, NULL, NULL, NULL, NULL),
 (5, 2, '  padded  ', ' x ', ' x', 'abc', '12345678-1234-5678-1234-567812345678'),
 (6, 3, 'a%b_c\d', 'a_b', 'a%b', '\x5c', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'),
 (7, 3, 'Ünïcödé ß', 'ÄÖÜ', 'é', '\xc3a9', NULL),
 (8, 4, 'abc,def,ghi', 'x-y-z', 'zzzzzz', '\x2c2c', 'b0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
 (9, 4, 'The quick brown fox', 'FOX', 'fox', '\x0a', 'c0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
 (10, 0, E'line1\nline2', E'tab\tx', 'q''t', '\x27', 'd0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
 (11, NULL, '123', '45.6', '7', '\x313233', 'e0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
 (12, 1, 'aaa', 'AAA', 'aaa', '\x616161', 'f0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
 (13, 2, '日本語テキスト', 'Ωμέγα', 'ǅ', '\xe697a5', '10eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
 (14, 3, 'MiXeD CaSe', 'mixed', 'MiX', '\xff', '20eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');

CREATE TABLE fz_time (id int PRIMARY KEY, k int, d date, ts timestamp, tz timestamptz, tm time, iv interval);
INSERT INTO fz_time VALUES
 (1, 0, '2024-01-15', '2024-01-15 10:30:00', '2024-01-15 10:30:00+00', '10:30:00', '1 day 02:03:04'),
 (2, 1, '2023-12-31', '2023-12-31 23:59:59.999999', '2023-12-31 23:30:00-05', '23:59:59.999999', '-3 months'),
 (3, 1, '2000-02-29', '2000-02-29 00:00:00', '2000-02-29 12:00:00+09:30', '00:00:00', '1 year 2 mons 3 days 04:05:06.5'),
 (4, 2, NULL, NULL, NULL, NULL, NULL),
 (5, 2, '9999-12-31', '9999-12-31 23:59:59', '9999-12-31 23:59:59+00', '12:00:00', '00:00:00.000001'),
 (6, 3, '0001-01-01', '0001-01-01 00:00:00', '0001-01-01 00:00:00+00', '06:15:30.5', '-1 day'),
 (7, 3, '1999-01-01', '1999-01-01 08:00:00.5', '1999-01-01 08:00:00.5+01', '18:45:00', '-1 day +2 hours'),
 (8, 4, '2024-03-10', '2024-03-10 02:30:00', '2024-03-10 07:30:00+00', '02:30:00', '25 hours'),
 (9, 4, '1970-01-01', '1970-01-01 00:00:00', '1970-01-01 00:00:00+00', '00:00:01', '0'),
 (10, 0, '2024-11-03', '2024-11-03 01:30:00', '2024-11-03 05:30:00+00', '01:30:00', '1 mon -1 day'),
 (11, NULL, '2024-07-04', '2024-07-04 12:34:56.789', '2024-07-04 12:34:56.789+02', '12:34:56.789', '36 hours'),
 (12, 1, '1900-02-28', '1900-02-28 23:00:00', '1900-02-28 23:00:00+00', '23:00:00', '100 years'),
 (13, 2, 'infinity', 'infinity', 'infinity', '00:00:00.5', '-00:00:01'),
 (14, 3, '-infinity', '-infinity', '-infinity', '13:13:13', '7 days');

CREATE TABLE fz_arr (id int PRIMARY KEY, k int, ia int[], ta text[], jb jsonb);
INSERT INTO fz_arr VALUES
 (1, 0, '{1,2,3}', '{a,b}', '{"a": 1, "b": [1, 2], "c": {"d": "x"}}'),
 (2, 1, '{}', '{}', '[1, "two", null]'),
 (3, 1, NULL, NULL, NULL),
 (4, 2, '{5,NULL,7}', '{x,NULL,"y z"}', '{"a": null, "e": true}'),
 (5, 2, '{10}', '{only}', '"text"'),
 (6, 3, '{2,2,1}', '{b,a}', '{"a": 2, "b": [3]}'),
 (7, 3, '{-1,0,2147483647}', '{"",É,ß}', '{"n": 12345678901234567890.5, "m": 1e-7}'),
 (8, 4, '{NULL}', '{NULL}', '{"deep": {"deeper": {"deepest": [1, [2, [3]]]}}}'),
 (9, NULL, '{3,1,2}', '{"with,comma","with\"quote"}', '[]'),
 (10, 4, '{1,1,1,1}', '{A,a,B,b}', '{}');

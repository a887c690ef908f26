-- Run one statement a line by tests/test_answers.py after the lake holds data.sql, while the ingest worker
-- streams: updates (new tuple versions land elsewhere in the heap, and in new lake files with position deletes),
-- deletes, a VACUUM whose freed space the next inserts and updates fill.
UPDATE moves SET n = n + 1000 WHERE id % 3 = 0
DELETE FROM moves WHERE id % 10 = 7
VACUUM moves
INSERT INTO moves SELECT i, (ARRAY['north', 'south', 'east', 'west'])[1 + i % 4], i * 37 % 101, (i * 7 % 23) + 0.5, date '2024-01-01' + i * 3, 'item ' || i, 'c' || (i % 9) FROM generate_series(81, 96) i
UPDATE moves SET g = 'north', t = t || ' moved' WHERE id % 5 = 2
UPDATE moves SET n = NULL, c = NULL WHERE id % 11 = 0
UPDATE moves SET y = y + 1 WHERE g = 'east'

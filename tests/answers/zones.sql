-- the session time zone: the suite runs this file in UTC, America/New_York and Asia/Kolkata
SELECT id, tz FROM {times} ORDER BY id
SELECT id, tz::date, tz::time, tz::timestamp FROM {times} ORDER BY id
SELECT id, date_trunc('day', tz), date_trunc('hour', tz), date_trunc('month', tz) FROM {times} ORDER BY id
SELECT id, date_trunc('week', tz), date_trunc('year', tz) FROM {times} ORDER BY id
SELECT id, date_trunc('day', d) FROM {times} ORDER BY id
SELECT id, extract(hour from tz), extract(day from tz), extract(dow from tz), extract(epoch from tz) FROM {times} ORDER BY id
SELECT id, date_part('hour', tz), date_part('minute', tz), date_part('doy', tz) FROM {times} ORDER BY id
SELECT id, extract(year from tz), extract(month from tz) FROM {times} WHERE id NOT IN (5, 6) ORDER BY id
SELECT '2024-01-15 10:30'::timestamptz, timestamptz '2024-07-01', '2024-01-15 10:30+02'::timestamptz FROM {one}
SELECT '2024-03-10 02:30'::timestamptz, '2024-11-03 12:00:00'::timestamptz FROM {one}
SELECT id FROM {times} WHERE tz > '2024-01-01' ORDER BY id
SELECT id FROM {times} WHERE tz >= '2024-01-15 05:30' ORDER BY id
SELECT id FROM {times} WHERE tz BETWEEN '2023-12-31' AND '2024-03-10 03:00' ORDER BY id
SELECT id FROM {times} WHERE tz::date = '2024-01-15' ORDER BY id
SELECT id FROM {times} WHERE tz IN ('2024-01-15 10:30:00+00', '2024-03-10 02:30') ORDER BY id
SELECT id, ts::timestamptz, d::timestamptz FROM {times} ORDER BY id
SELECT id FROM {times} WHERE tz = ts ORDER BY id
SELECT id FROM {times} WHERE tz >= d ORDER BY id
SELECT id, tz + interval '1 day', tz - interval '3 hours', tz + interval '1 month' FROM {times} ORDER BY id
SELECT id, tz + interval '2 days', tz - '1 day'::interval FROM {times} ORDER BY id
SELECT id, tz - timestamptz '2024-01-01 00:00+00' FROM {times} WHERE id NOT IN (5, 6) ORDER BY id
SELECT tz::date AS day, count(*) FROM {times} GROUP BY tz::date ORDER BY day
SELECT date_trunc('day', tz) AS day, count(*) FROM {times} GROUP BY 1 ORDER BY 1
SELECT min(tz), max(tz), min(tz::date) FROM {times} WHERE id NOT IN (5, 6)
SELECT id, coalesce(tz, '2024-01-01 00:00') FROM {times} ORDER BY id
SELECT current_date = localtimestamp::date, localtimestamp = now()::timestamp FROM {one}
SELECT id, tz::text FROM {times} ORDER BY id
SELECT id, age(tz, timestamptz '2024-01-01 00:00+00') FROM {times} WHERE id NOT IN (5, 6) ORDER BY id
SELECT g FROM {one}, generate_series(timestamptz '2024-03-09 00:00+00', timestamptz '2024-03-12 00:00+00', interval '1 day') g ORDER BY g
SELECT id, tz AT TIME ZONE 'Europe/Paris', ts AT TIME ZONE 'Europe/Paris' FROM {times} ORDER BY id
SELECT id, array_agg(tz ORDER BY tz) FROM {times} WHERE id NOT IN (5, 6) GROUP BY id ORDER BY id
SELECT id, date_trunc('day', tz) + interval '12 hours' FROM {times} ORDER BY id
SELECT count(*) FILTER (WHERE tz < now()), count(*) FILTER (WHERE tz::date < current_date) FROM {times}
SELECT id, tz FROM {times} WHERE tz < '2024-03-10 03:00:00' AND tz > '2023-12-31T20:00' ORDER BY id
SELECT id, to_char(tz, 'YYYY-MM-DD HH24:MI:SS') FROM {times} ORDER BY id
-- daylight-saving changes (America/New_York 2026-03-08 and 2026-11-01, Europe/London 2026-10-25): a local time
-- in the gap reads with the offset before it, a repeated one with the offset after it (PostgreSQL's rule)
SELECT '2026-11-01 01:30'::timestamptz, '2026-03-08 02:30'::timestamptz, timestamptz '2026-11-01 01:59:59.999999' FROM {one}
SELECT '2026-11-01 00:59:59'::timestamptz, '2026-11-01 02:00'::timestamptz, '2026-03-08 03:00'::timestamptz FROM {one}
SELECT '2026-11-01 01:30'::timestamp::timestamptz, '2026-03-08 02:30'::timestamp::timestamptz, date '2026-03-08' + time '02:30' = '2026-03-08 03:30'::timestamptz FROM {one}
SELECT timestamp '2026-11-01 01:30' AT TIME ZONE 'America/New_York', timestamp '2026-03-08 02:30' AT TIME ZONE 'America/New_York' FROM {one}
SELECT timestamp '2026-10-25 01:30' AT TIME ZONE 'Europe/London', timestamp '2026-03-29 01:30' AT TIME ZONE 'Europe/London' FROM {one}
SELECT timestamptz '2026-11-01 05:30+00' AT TIME ZONE 'America/New_York', timestamptz '2026-11-01 06:30+00' AT TIME ZONE 'America/New_York' FROM {one}
SELECT g, date_trunc('hour', g), date_trunc('minute', g), date_trunc('day', g), g::timestamp, extract(hour from g) FROM {one}, (VALUES (timestamptz '2026-11-01 05:30:45+00'), (timestamptz '2026-11-01 06:30:45+00'), (timestamptz '2026-03-08 06:59:59+00'), (timestamptz '2026-03-08 07:00:00+00'), (timestamptz 'infinity')) v(g) ORDER BY v.g
SELECT g + interval '1 day', g - interval '1 day', g + interval '1 hour' FROM {one}, (VALUES (timestamptz '2026-10-31 05:30+00'), (timestamptz '2026-11-02 06:30+00'), (timestamptz '2026-03-07 07:30+00'), (timestamptz '2026-03-09 06:30+00')) v(g) ORDER BY v.g
SELECT count(*) FROM {times} WHERE tz > '2026-11-01 01:30' OR tz < '2026-03-08 02:30'
SELECT id, tz::varchar, 'at ' || tz FROM {times} ORDER BY id
SELECT id, CAST(tz AS text) FROM {times} WHERE tz > '2000-01-01' ORDER BY id
SELECT tz::text FROM (VALUES (timestamptz '1800-01-01 00:00:00+00'), (timestamptz '2024-03-10 07:30:00.25+00')) v(tz)
SELECT id, age(tz, timestamptz '2023-11-05 06:30+00'), age(timestamptz '2024-03-10 12:00+00', tz) FROM {times} WHERE isfinite(tz) ORDER BY id
SELECT g FROM {one}, generate_series(timestamptz '2024-03-10 05:00+00', timestamptz '2024-03-10 09:00+00', interval '30 minutes') g ORDER BY g
SELECT id, date_bin('1 day', tz, timestamptz '2024-01-01 00:00+00') FROM {times} WHERE isfinite(tz) ORDER BY id
SELECT g FROM {one}, generate_series(timestamptz '2024-01-31 00:00+00', timestamptz '2024-07-01 00:00+00', interval '1 month') AS g ORDER BY g
SELECT x FROM {one}, generate_series(date '2024-03-01', date '2024-03-31', interval '1 week') AS s(x) ORDER BY x
SELECT * FROM {one}, generate_series(timestamptz '2024-11-03 01:30-04', timestamptz '2024-11-06 00:00+00', '1 day') ORDER BY 2
SELECT g FROM {one}, generate_series(timestamptz '2024-03-09 07:30+00', timestamptz '2024-03-12 00:00+00', '1 day') g ORDER BY g
SELECT generate_series(timestamptz '2024-10-30 12:00+00', timestamptz '2024-11-06 12:00+00', interval '2 days') FROM {one}
-- what drivers ask of the session: the request's zone, the schema a one-part name means (issue 28.8)
SELECT id, current_setting('TimeZone'), pg_catalog.current_setting('timezone', true), current_schema(), current_schema FROM {times} ORDER BY id

-- dates, times, timestamps, intervals
SELECT id, d, tm, ts, tz FROM {times}
SELECT id, d + 1, d - 1 FROM {times}
SELECT id, d - '2000-01-01'::date FROM {times} WHERE d BETWEEN '1900-01-01' AND '2100-01-01'
SELECT id, d + interval '1 month' FROM {times}
SELECT id, ts + interval '1 day 2 hours' FROM {times}
SELECT id, tz - interval '90 minutes' FROM {times}
SELECT id, ts - '2000-01-01 00:00:00'::timestamp FROM {times} WHERE d BETWEEN '1900-01-01' AND '2100-01-01'
SELECT id, age(ts, '2000-01-01') FROM {times} WHERE d BETWEEN '1900-01-01' AND '2100-01-01'
SELECT id, date_trunc('month', ts), date_trunc('day', tz) FROM {times}
SELECT id, date_trunc('year', d) FROM {times}
SELECT id, date_trunc('hour', ts), date_trunc('week', ts) FROM {times}
SELECT id, extract(year from d), extract(month from d), extract(day from d) FROM {times}
SELECT id, extract(hour from ts), extract(minute from ts) FROM {times}
SELECT id, extract(second from ts) FROM {times}
SELECT id, extract(epoch from ts) FROM {times}
SELECT id, extract(epoch from tz) FROM {times}
SELECT id, extract(dow from d), extract(doy from d), extract(quarter from d) FROM {times}
SELECT id, extract(isodow from d), extract(week from d) FROM {times}
SELECT id, date_part('year', ts) FROM {times}
SELECT id, date_part('epoch', ts) FROM {times}
SELECT id, extract(second from tm) FROM {times}
SELECT id, extract(hour from tm) FROM {times}
SELECT id, ts::date, tz::date FROM {times}
SELECT id, ts::time FROM {times}
SELECT id, tz::time FROM {times}
SELECT id, tz::timestamp FROM {times}
SELECT id, ts::timestamptz FROM {times}
SELECT id, d::timestamp FROM {times}
SELECT id, d::text, ts::text FROM {times}
SELECT id, tz::text FROM {times}
SELECT id, tm::text FROM {times}
SELECT id FROM {times} WHERE d > '2020-01-01'
SELECT id FROM {times} WHERE ts < now()
SELECT id FROM {times} WHERE tz >= '2024-01-01 00:00+00'
SELECT id FROM {times} ORDER BY d NULLS FIRST, id
SELECT id FROM {times} ORDER BY tz DESC, id
SELECT min(d), max(d), min(ts), max(tz) FROM {times}
SELECT count(*) FROM {times} WHERE d = 'infinity'
SELECT id, isfinite(d), isfinite(ts) FROM {times}
SELECT id, to_char(ts, 'YYYY-MM-DD HH24:MI:SS') FROM {times}
SELECT id, to_char(d, 'Mon DD, YYYY') FROM {times}
SELECT id, to_char(i4, '999G999') FROM {nums}
SELECT to_date('2024-03-05', 'YYYY-MM-DD') FROM {one}
SELECT to_timestamp('2024-03-05 10:11', 'YYYY-MM-DD HH24:MI') FROM {one}
SELECT to_timestamp(1700000000) FROM {one}
SELECT make_date(2024, 2, 29), make_time(10, 30, 0.5) FROM {one}
SELECT make_timestamp(2024, 1, 2, 3, 4, 5.5) FROM {one}
SELECT '2024-01-01'::date + 30 FROM {one}
SELECT date '2024-03-31' - interval '1 month' FROM {one}
SELECT interval '1 day' * 3, interval '1 hour' / 2 FROM {one}
SELECT interval '1 year 2 months 3 days 04:05:06' FROM {one}
SELECT interval '-1 day +2 hours' FROM {one}
SELECT id, iv FROM {misc}
SELECT id, iv * 2 FROM {misc}
SELECT id, extract(day from iv) FROM {misc}
SELECT id, justify_hours(interval '36 hours') FROM {one}
SELECT timestamp '2024-01-01 10:00' - timestamp '2023-12-25 08:30' FROM {one}
SELECT date '2024-01-01' - date '2023-01-01' FROM {one}
SELECT '2024-02-30'::date FROM {one}
SELECT 'not a date'::date FROM {one}
SELECT '24:00:00'::time FROM {one}
SELECT generate_series('2024-01-01'::timestamp, '2024-01-03', interval '1 day') FROM {one}
SELECT date_bin('15 minutes', ts, '2000-01-01') FROM {times} WHERE isfinite(ts)
SELECT id, ts AT TIME ZONE 'UTC' FROM {times}
SELECT id, tz AT TIME ZONE 'America/New_York' FROM {times}
SELECT id, ts AT TIME ZONE 'Europe/Paris' FROM {times}
SELECT id, (tz AT TIME ZONE 'UTC')::date FROM {times}
SELECT id, date_trunc('day', tz AT TIME ZONE 'Asia/Tokyo') FROM {times}
SELECT current_date - current_date FROM {one}
SELECT id, d BETWEEN '2000-01-01' AND '2024-12-31' FROM {times}
SELECT id, extract(year from tz), extract(hour from tz) FROM {times}
SELECT id, ts + tm FROM {times} WHERE id < 4
SELECT id, d + tm FROM {times}
SELECT id, tm + interval '3 hours' FROM {times}
SELECT id, tm - '01:00:00'::time FROM {times}
SELECT id, age(d::timestamp) IS NOT NULL FROM {times} WHERE id = 1
SELECT id, "overlaps" FROM (SELECT id, (d, d + 5) OVERLAPS ('2024-01-10'::date, '2024-01-20'::date) AS "overlaps" FROM {times}) s
SELECT id, date_part('month', d) FROM {times}
SELECT id, to_char(tz, 'YYYY') FROM {times}
SELECT count(*), count(tz) FROM {times}
SELECT id, to_char(ts, 'FMMonth DD, YYYY HH12:MI:SS AM') FROM {times}
SELECT id, to_char(ts, 'Day, DD Month YYYY') FROM {times}
SELECT id, to_char(ts, 'DY dy MON mon YY DDD') FROM {times}
SELECT id, to_char(ts, 'HH24:MI:SS.MS US') FROM {times}
SELECT id, to_char(d, '"week of" YYYY-MM-DD') FROM {times}
SELECT id, to_char(ts, 'FMDD/FMMM/YYYY pm') FROM {times}
SELECT id, to_char(ts, 'YYYY "Q"Q') FROM {times}
-- justify_*, date_bin, OVERLAPS (issue 10.3): PostgreSQL's fields, rounding, NULL rules and errors
SELECT id, iv, justify_hours(iv), justify_days(iv), justify_interval(iv) FROM {misc}
SELECT m, d, h, justify_hours(x), justify_days(x), justify_interval(x) FROM (SELECT m, d, h, m * interval '1 month' + d * interval '1 day' + h * interval '1 hour' AS x FROM {one}, (VALUES (0, 0, 36), (0, 0, -36), (1, 0, -1), (-1, 0, 1), (0, 35, 0), (0, -35, 0), (1, -31, 0), (0, 29, 48), (0, -1, 25), (0, 0, 0), (-2, 61, -1), (1, 0, -720), (NULL, 1, 1)) v(m, d, h)) s ORDER BY 1, 2, 3
SELECT id, ts, date_bin('15 minutes', ts, '2000-01-01'), date_bin('1 day 1 hour', ts, '2001-01-01 00:00:00.5'), date_bin('7 days', ts, timestamp '1999-12-27') FROM {times}
SELECT id, date_bin('1 hour', tz, timestamptz '2000-01-01 00:30+00'), date_bin('90 seconds', tz, tz) FROM {times}
SELECT id, date_bin(iv, ts, '2000-01-01'), date_bin(iv, ts, NULL) FROM {misc} JOIN {times} USING (id) WHERE id IN (1, 3, 5)
SELECT date_bin('1 month', ts, '2000-01-01') FROM {times} WHERE id = 1
SELECT date_bin('-1 hour', ts, '2000-01-01') FROM {times} WHERE id = 1
SELECT date_bin('1 hour', ts, 'infinity') FROM {times} WHERE id = 1
SELECT id, (d, d + 5) OVERLAPS ('2024-01-10'::date, '2024-01-20'::date), (ts, interval '1 day') OVERLAPS (timestamp '2024-01-15', timestamp '2024-01-16'), (d, NULL::date) OVERLAPS (date '2024-01-01', date '2024-12-31'), (NULL::timestamp, ts) OVERLAPS (ts, NULL::timestamp) FROM {times}
SELECT id, (ts, '2000-01-01'::timestamp) OVERLAPS (ts, ts + interval '1 hour'), (tm, time '12:00') OVERLAPS (time '11:00', time '13:00'), (d, d) OVERLAPS (d, d) FROM {times}
SELECT a.id, b.id FROM {times} a JOIN {times} b ON (a.ts, a.ts + interval '400 days') OVERLAPS (b.ts, b.ts) WHERE a.id < b.id ORDER BY 1, 2
-- make_interval (positional or named), make_timestamp/make_date beyond a month's days
SELECT make_interval(1, 2, 3, 4, 5, 6, 7.5), make_interval(days => 3), make_interval(hours => -1, mins => 30), make_interval(), make_interval(years => 1, months => -13, weeks => 1, days => -8, hours => 25, mins => -61, secs => 59.9999999) FROM {one}
SELECT id, make_interval(days => id, secs => id * 1.5), make_interval(secs => id * 0.0000005), make_interval(months => i2) FROM {nums}
SELECT make_timestamp(2024, 2, 30, 0, 0, 0) FROM {one}
SELECT make_date(2023, 2, 29) FROM {one}
SELECT id, to_char(ts, 'YYYY "Q"Q IYYY-IW ID IDDD D WW W J CC SSSS SSSSS') FROM {times}
SELECT id, to_char(d, 'FMIW FMWW FMCC FMIDDD Q') FROM {times}
SELECT id, to_char(tz, 'IYYY-"W"IW-ID "Q"Q') FROM {times}
SELECT to_char(date '2021-01-03', 'IYYY IW ID IDDD D WW W'), to_char(date '2024-12-30', 'IYYY IW IDDD J CC')
SELECT to_date(t, 'YYYY-MM-DD'), to_timestamp(t || ' 10:11:12', 'YYYY-MM-DD HH24:MI:SS') FROM {one} CROSS JOIN (VALUES ('2024-03-05'), ('1999-12-31'), (NULL)) v(t)
SELECT to_date('05/03/2024', 'DD/MM/YYYY'), to_timestamp('2024-03-10 02:30', 'YYYY-MM-DD HH24:MI'), to_timestamp('20240305 101112.123456', 'YYYYMMDD HH24MISS.US') FROM {one}
SELECT to_date('2024-3-5', 'YYYY-MM-DD') FROM {one}
SELECT g FROM {one}, generate_series('2024-01-01'::date, '2024-01-03'::date, interval '1 day') g ORDER BY g
SELECT generate_series(date '2024-02-28', date '2024-03-02', interval '1 day') FROM {one}
SELECT t.id, g FROM {times} t, generate_series(t.d, t.d + 2, interval '1 day') g WHERE isfinite(t.d) ORDER BY 1, 2

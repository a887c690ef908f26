# Routing fixtures: each block is `-- key: value` lines, then the query, then a blank line.
#   route:    the engine that must run it (postgres | duckdb)
#   sql:      the SQL that engine runs (for duckdb: without the lake views' CTEs), with max_rows = 1000
#   postgres: the same query written for PostgreSQL directly (default: the query with source names removed)
#   order:    ordered = compare rows in order
# The environment (test_gateway_routing.py): PostgreSQL tables public.accounts and public.orders replicated into
# the lake (and changed after the snapshot, so the lake merges a change-log tail), public.regions and
# public."MixedCase" only in PostgreSQL, and the view public.big_accounts.

-- name: point lookup on PostgreSQL runs there whole (its index serves it)
-- route: postgres
-- sql: SELECT * FROM public.accounts WHERE id = 7 LIMIT 1001
SELECT * FROM pg.public.accounts WHERE id = 7

-- name: the same point lookup on the lake
-- route: duckdb
-- sql: SELECT id, name, balance FROM "lake.public.accounts" AS accounts WHERE id = 7 LIMIT 1001
SELECT id, name, balance FROM lake.public.accounts WHERE id = 7

-- name: two-part names search the lake first
-- route: duckdb
-- sql: SELECT COUNT(*) AS "count" FROM "lake.public.orders" AS orders LIMIT 1001
SELECT count(*) FROM public.orders

-- name: one-part names mean public.<name>; a PostgreSQL-only table routes to PostgreSQL
-- route: postgres
-- sql: SELECT code, label FROM public.regions ORDER BY code LIMIT 1001
-- order: ordered
SELECT code, label FROM regions ORDER BY code

-- name: names are case-insensitive unless quoted
-- route: postgres
-- sql: SELECT "Label" FROM public."MixedCase" WHERE ID = 2 LIMIT 1001
SELECT "Label" FROM PG.Public."MixedCase" WHERE ID = 2

-- name: a view of PostgreSQL routes to PostgreSQL
-- route: postgres
-- sql: SELECT count(*) FROM public.big_accounts LIMIT 1001
SELECT count(*) FROM pg.public.big_accounts

-- name: casts, ILIKE, date_trunc and interval on PostgreSQL
-- route: postgres
-- sql: SELECT id, balance::int AS b, date_trunc('month', created_at) AS m FROM public.accounts\nWHERE name ILIKE 'USER 1%' AND created_at < now() + interval '1 day' LIMIT 1001
SELECT id, balance::int AS b, date_trunc('month', created_at) AS m FROM pg.public.accounts
WHERE name ILIKE 'USER 1%' AND created_at < now() + interval '1 day'

-- name: casts, ILIKE, date_trunc and interval on the lake
-- route: duckdb
-- sql: SELECT id, CAST(balance AS INT) AS b, PG_DATE_TRUNC('MONTH', created_at) AS m FROM "lake.public.accounts" AS accounts WHERE name ILIKE 'USER 1%' AND created_at < CURRENT_TIMESTAMP + INTERVAL '1 day' LIMIT 1001
SELECT id, balance::int AS b, date_trunc('month', created_at) AS m FROM lake.public.accounts
WHERE name ILIKE 'USER 1%' AND created_at < now() + interval '1 day'

-- name: DISTINCT ON and ORDER BY on PostgreSQL
-- route: postgres
-- sql: SELECT DISTINCT ON (account_id) account_id, id, amount FROM public.orders ORDER BY account_id, amount DESC, id LIMIT 1001
-- order: ordered
SELECT DISTINCT ON (account_id) account_id, id, amount FROM pg.public.orders ORDER BY account_id, amount DESC, id

-- name: DISTINCT ON on the lake (NULLS FIRST keeps PostgreSQL's order of DESC)
-- route: duckdb
-- sql: SELECT DISTINCT ON (account_id) account_id, id, amount FROM "lake.public.orders" AS orders ORDER BY account_id, amount DESC NULLS FIRST, id LIMIT 1001
-- order: ordered
SELECT DISTINCT ON (account_id) account_id, id, amount FROM lake.public.orders ORDER BY account_id, amount DESC, id

-- name: window functions and a CTE on the lake
-- route: duckdb
-- sql: WITH ranked AS (SELECT account_id, id, ROW_NUMBER() OVER (PARTITION BY account_id ORDER BY amount DESC NULLS FIRST, id) AS rn FROM "lake.public.orders" AS orders) SELECT account_id, id FROM ranked WHERE rn = 1 AND account_id < 20 ORDER BY account_id LIMIT 1001
-- order: ordered
WITH ranked AS (
  SELECT account_id, id, row_number() OVER (PARTITION BY account_id ORDER BY amount DESC, id) AS rn
  FROM lake.public.orders)
SELECT account_id, id FROM ranked WHERE rn = 1 AND account_id < 20 ORDER BY account_id

-- name: window functions and a CTE on PostgreSQL
-- route: postgres
-- sql: WITH ranked AS (\n  SELECT account_id, id, row_number() OVER (PARTITION BY account_id ORDER BY amount DESC, id) AS rn\n  FROM public.orders)\nSELECT account_id, id FROM ranked WHERE rn = 1 AND account_id < 20 ORDER BY account_id LIMIT 1001
-- order: ordered
WITH ranked AS (
  SELECT account_id, id, row_number() OVER (PARTITION BY account_id ORDER BY amount DESC, id) AS rn
  FROM pg.public.orders)
SELECT account_id, id FROM ranked WHERE rn = 1 AND account_id < 20 ORDER BY account_id

-- name: generate_series with a column named after its alias, no table
-- route: duckdb
-- sql: SELECT g, g * 2 AS "?column?" FROM GENERATE_SERIES(1, 5) AS g(g) LIMIT 1001
-- order: ordered
SELECT g, g * 2 FROM generate_series(1, 5) g

-- name: generate_series joined to a PostgreSQL table runs on PostgreSQL
-- route: postgres
-- sql: SELECT g, a.name FROM generate_series(1, 3) g JOIN public.accounts a ON a.id = g ORDER BY g LIMIT 1001
-- order: ordered
SELECT g, a.name FROM generate_series(1, 3) g JOIN pg.public.accounts a ON a.id = g ORDER BY g

-- name: federated join of a lake table and a PostgreSQL-only table
-- route: duckdb
-- sql: SELECT r.label, COUNT(*) AS n, SUM(o.amount) AS total FROM "lake.public.orders" AS o JOIN "lake.public.accounts" AS a ON a.id = o.account_id JOIN pg.public.regions AS r ON r.code = a.region WHERE o.status = 'paid' GROUP BY r.label LIMIT 1001
SELECT r.label, count(*) AS n, sum(o.amount) AS total
FROM lake.public.orders o JOIN lake.public.accounts a ON a.id = o.account_id JOIN pg.public.regions r ON r.code = a.region
WHERE o.status = 'paid' GROUP BY r.label

-- name: lake and live PostgreSQL copies of the same table agree (EXCEPT both ways is empty)
-- route: duckdb
-- postgres: SELECT 0
SELECT count(*) FROM (
  (SELECT id, name, balance, active FROM lake.public.accounts EXCEPT SELECT id, name, balance, active FROM pg.public.accounts)
  UNION ALL
  (SELECT id, name, balance, active FROM pg.public.accounts EXCEPT SELECT id, name, balance, active FROM lake.public.accounts)) d

-- name: a set operation over both sources
-- route: duckdb
-- sql: SELECT id FROM "lake.public.accounts" AS accounts WHERE id < 5 UNION SELECT id FROM pg.public.accounts WHERE id BETWEEN 3 AND 8 ORDER BY id LIMIT 1001
-- order: ordered
SELECT id FROM lake.public.accounts WHERE id < 5 UNION SELECT id FROM pg.public.accounts WHERE id BETWEEN 3 AND 8 ORDER BY id

-- name: a subquery in WHERE across sources
-- route: duckdb
-- sql: SELECT COUNT(*) AS "count" FROM "lake.public.orders" AS orders WHERE account_id IN (SELECT id FROM pg.public.accounts WHERE active) LIMIT 1001
SELECT count(*) FROM lake.public.orders WHERE account_id IN (SELECT id FROM pg.public.accounts WHERE active)

-- name: string_agg and a scalar subquery on the lake
-- route: duckdb
-- sql: SELECT LISTAGG(status, ',' ORDER BY status) AS "string_agg" FROM (SELECT DISTINCT status FROM "lake.public.orders" AS orders) AS s LIMIT 1001
SELECT string_agg(status, ',' ORDER BY status) FROM (SELECT DISTINCT status FROM lake.public.orders) s

-- name: a LIMIT above max_rows is lowered to max_rows + 1 (the result is truncated at max_rows)
-- route: postgres
-- sql: SELECT * FROM (\nSELECT id FROM public.orders ORDER BY id LIMIT 5000\n) AS _lakegate LIMIT 1001
-- order: ordered
SELECT id FROM pg.public.orders ORDER BY id LIMIT 5000

-- name: a LIMIT below max_rows is kept
-- route: duckdb
-- sql: SELECT id FROM "lake.public.orders" AS orders ORDER BY id DESC NULLS FIRST LIMIT 3
-- order: ordered
SELECT id FROM lake.public.orders ORDER BY id DESC LIMIT 3

-- name: VALUES
-- route: duckdb
-- sql: VALUES (1, 'a'), (2, 'b')
VALUES (1, 'a'), (2, 'b')

-- name: the change log of a lake table is a table too
-- route: duckdb
-- sql: SELECT COUNT(*) > 0 AS "?column?" FROM "lake.public.accounts__changelog" AS accounts__changelog WHERE _op = 'u' LIMIT 1001
-- postgres: SELECT true
SELECT count(*) > 0 FROM lake.public.accounts__changelog WHERE _op = 'u'

-- name: exact decimals survive aggregation on both routes
-- route: duckdb
-- sql: SELECT SUM(balance) AS "sum", MIN(balance) AS "min", MAX(balance) AS "max" FROM "lake.public.accounts" AS accounts LIMIT 1001
SELECT sum(balance), min(balance), max(balance) FROM lake.public.accounts

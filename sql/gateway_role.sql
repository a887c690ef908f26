-- The gateway's role (lakegate serve): it reads the tables and nothing else. Run it as the tables' owner in the
-- source database (CONNECT comes from PUBLIC unless you revoked it); for connections over the network give it a
-- password: ALTER ROLE lakegate_gateway PASSWORD '...';
-- The ingest worker keeps its own role (REPLICATION, owner of the tables); 'lakegate serve' refuses a role that
-- is a superuser, owns or may write the tables, or belongs to pg_read_server_files and the like.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'lakegate_gateway') THEN
        CREATE ROLE lakegate_gateway LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
    END IF;
END
$$;
GRANT USAGE ON SCHEMA public TO lakegate_gateway;
GRANT SELECT ON ALL TABLES IN SCHEMA public TO lakegate_gateway;
-- tables the owner creates later are readable too
ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO lakegate_gateway;

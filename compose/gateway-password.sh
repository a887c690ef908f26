#!/bin/sh
# Runs once, when the PostgreSQL volume is initialised, after 03-gateway-role.sql (sql/gateway_role.sql) created
# the gateway's read-only role: give it the password the gateway's DSN uses (LAKEGATE_GATEWAY_PASSWORD).
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v password="${LAKEGATE_GATEWAY_PASSWORD:-lakegate-gateway}" <<'EOSQL'
ALTER ROLE lakegate_gateway PASSWORD :'password';
EOSQL

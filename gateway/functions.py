"""The function allow-list of the guard (layer 2 of the defence in depth, see README "Gateway").

A function call passes when its lower-case name is allowed and not denied:

* allowed: DuckDB's own scalar, aggregate, window and macro functions (read from ``duckdb_functions()`` of the
  sandboxed engine at start), the PostgreSQL functions below, and ``[gateway] allow_functions``;
* denied, whatever the lists say: everything that reads or writes files, URLs, other databases, settings or
  sequences, or talks to the server's internals (prefixes and names below).

Table functions (in FROM) have their own, much shorter list: only row generators.
"""

from __future__ import annotations

#: Table functions a query may call in FROM / LATERAL.
TABLE_FUNCTIONS = frozenset({"generate_series", "range", "unnest", "generate_subscripts", "json_each",
                             "jsonb_each", "json_array_elements", "jsonb_array_elements",
                             "json_array_elements_text", "jsonb_array_elements_text", "regexp_split_to_table",
                             "jsonb_each_text", "json_each_text"})

#: PostgreSQL functions that DuckDB does not have (or has under another name) and that are safe to run.
POSTGRES_FUNCTIONS = frozenset("""
abs acos acosh age array_agg array_append array_cat array_dims array_fill array_length array_lower
array_position array_positions array_prepend array_remove array_replace array_to_json array_to_string array_upper
ascii asin asinh atan atan2 atanh avg bit_and bit_length bit_or bit_xor bool_and bool_or btrim cardinality cbrt
ceil ceiling char_length character_length chr clock_timestamp coalesce concat concat_ws convert_from convert_to
corr cos cosh cot count covar_pop covar_samp cume_dist current_date current_time current_timestamp date_bin
date_part date_trunc decode degrees dense_rank div encode every exp extract factorial first_value floor format
gcd gen_random_uuid generate_series generate_subscripts greatest initcap isfinite json_agg json_array_length
json_build_array json_build_object json_extract_path json_extract_path_text json_object json_object_agg
json_strip_nulls json_typeof jsonb_agg jsonb_array_length jsonb_build_array jsonb_build_object
jsonb_extract_path jsonb_extract_path_text jsonb_object jsonb_object_agg jsonb_path_query_array
jsonb_path_query_first jsonb_path_exists jsonb_pretty jsonb_set jsonb_strip_nulls jsonb_typeof justify_days
justify_hours justify_interval lag last_value lcm lead least left length ln localtime localtimestamp log log10
lower lpad ltrim make_date make_interval make_time make_timestamp make_timestamptz max md5 min min_scale mod
mode now nth_value ntile nullif num_nonnulls num_nulls octet_length overlay percent_rank percentile_cont
percentile_disc pg_sleep pg_typeof pi position power quote_ident quote_literal quote_nullable radians random
rank regexp_count regexp_instr regexp_like regexp_match regexp_matches regexp_replace regexp_split_to_array
regexp_substr regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy
repeat replace reverse right round row_number row_to_json rpad rtrim scale sha224 sha256 sha384 sha512 sign sin
sinh split_part sqrt starts_with statement_timestamp stddev stddev_pop stddev_samp string_agg string_to_array
strpos substr substring sum tan tanh timeofday to_ascii to_char to_date to_hex to_json to_jsonb to_number
to_timestamp transaction_timestamp translate trim trim_scale trunc unistr upper var_pop var_samp variance
width_bucket
""".split())

#: Prefixes that are never allowed: files, URLs, other databases, server internals, catalogs of the engine.
DENIED_PREFIXES = ("read_", "write_", "lo_", "dblink", "postgres_", "pg_", "iceberg_", "parquet_", "duckdb_",
                   "pragma_", "txid_", "sniff_", "json_execute", "enable_", "disable_", "copy_", "http",
                   "current_setting", "set_config", "file")

#: pg_-prefixed functions that stay allowed (harmless, and common in BI tools).
ALLOWED_PG = frozenset({"pg_typeof", "pg_sleep", "pg_size_pretty"})

DENIED_NAMES = frozenset({
    "getenv", "glob", "query", "query_table", "nextval", "setval", "currval", "lastval", "checkpoint",
    "force_checkpoint", "current_query", "json_serialize_plan", "write_log", "which_secret", "from_json_strict",
    "current_catalog", "current_database", "current_schema", "current_schemas", "current_user", "session_user",
    "inet_server_addr", "inet_server_port", "inet_client_addr", "to_file", "load_extension",
    "sql_auto_complete", "test_all_types", "summary", "has_table_privilege", "repeat_row",
})


def denied(name: str) -> bool:
    if name in ALLOWED_PG:
        return False
    return name in DENIED_NAMES or name.startswith(DENIED_PREFIXES)


def allowed(name: str, engine_functions: frozenset[str], extra: frozenset[str] = frozenset()) -> bool:
    """May a query call the function ``name`` (lower case) in an expression?"""
    if denied(name) and name not in extra:
        return False
    return name in engine_functions or name in POSTGRES_FUNCTIONS or name in extra

"""The gateway's section of the settings (``[gateway]``)."""

from __future__ import annotations

from dataclasses import dataclass

from lakegate.connectors.config import SettingsError, setting
from lakegate.gateway import zones


@dataclass
class GatewaySettings:
    host: str = setting("Address to bind; without tokens only loopback is allowed.", "127.0.0.1")
    port: int = setting("HTTP port.", 8080)
    tokens: list[str] = setting("Bearer tokens accepted (also as the Basic-auth password).", list)
    max_rows: int = setting("Row cap per query; results beyond it are truncated and flagged.", 100_000)
    timeout: float = setting("Time limit per query; a request may lower it.", 30.0, kind="duration")
    max_result_bytes: int = setting(
        "Cap on a result's size (Arrow bytes); beyond it the query fails with 413.", 512 * 2**20, kind="size"
    )
    workers: int = setting("Queries that run at once; more wait in a queue.", 8)
    max_queue: int = setting("Queries that may wait for a worker; beyond that the gateway answers 503.", 64)
    search_path: list[str] = setting(
        "Sources searched for two-part names (default: the lake, then every PostgreSQL source in order).",
        list,
    )
    allow_functions: list[str] = setting(
        "Extra SQL functions the guard allows (names, lower case); functions of the database's own schemas "
        "schema-qualified (public.my_func) and called so.",
        list,
    )
    time_zone: str = setting(
        "Session time zone of a query that names none (IANA name): how timestamptz values display and what "
        '::date, date_trunc, extract and timestamp literals mean; a request\'s "time_zone" overrides it.',
        "UTC",
    )
    tableless_route: str = setting(
        "Engine for a statement that names no table (SELECT 1 + 1, SELECT * FROM generate_series(1, 3)): "
        "'postgres' sends it to the first PostgreSQL source of the search path, so that it answers as PostgreSQL "
        "does (DuckDB when no source is configured); 'duckdb' computes it with PostgreSQL's semantics rewritten "
        "in, like a lake query.",
        "postgres",
    )
    duckdb_threads: int = setting("DuckDB worker threads (0 = one per core).", 0)
    duckdb_memory_limit: str = setting(
        "DuckDB memory limit, e.g. '4GB' ('' = DuckDB's default, 80% of RAM).", ""
    )
    read_timeout: float = setting(
        "Time a client has to send a request's line and headers, and then its body; a connection that is "
        "slower is closed (slowloris), a response not read for this long is aborted.",
        10.0,
        kind="duration",
    )
    max_connections: int = setting(
        "Open connections at most. At the cap a new connection closes the oldest one that waits for a request "
        "(one that never sent a valid token first); it is refused only when every open connection is working on "
        "a request. The process's open-file limit (ulimit -n) is raised to fit, or the cap lowered to it.",
        2000,
    )
    max_connections_per_address: int = setting(
        "Connections from one client address that wait for a request without having sent a valid token (silent "
        "ones, or ones that only asked /healthz); beyond it that address's oldest such connection is closed. "
        "Connections that authenticated do not count.",
        256,
    )
    large_statements: int = setting(
        "Requests with a large statement (over 16 KiB of SQL, or with long runs of operator characters) that are "
        "planned at once, until their first rows: planning one takes the server's Python for up to seconds, and "
        "each more at once slows every small query down; the others wait for their turn within their time limit, "
        "so that large statements never take every worker.",
        1,
    )
    parser_processes: int = setting(
        "Processes that run PostgreSQL's parser on statements too large to parse in the server's process (over "
        "4 KiB, or with long runs of operator characters, on which that parser is slow and cannot be "
        "interrupted); a parse still running when its request's time limit passes is killed. Large statements "
        "may use all of them but one.",
        2,
    )
    memory_margin: int = setting(
        "Memory 'lakegate serve' may use beyond duckdb_memory_limit (Python, parsed statements, result batches, "
        "thread stacks); the process's data segment is capped at the sum, so that no query can take the host's "
        "memory (0 = no cap).",
        2**30,
        kind="size",
    )
    cache_bytes: int = setting(
        "Memory for the lake cache: hot lake tables kept in DuckDB memory at their current snapshot, least "
        "recently used evicted first (0 = off; at most half of DuckDB's memory limit). The default holds a "
        "fact table of a few tens of millions of narrow rows and leaves most of DuckDB's memory to the "
        "queries even on a 4 GiB host.",
        2**30,
        kind="size",
    )

    def __post_init__(self) -> None:
        for i, token in enumerate(self.tokens):
            if not isinstance(token, str) or not token.strip() or token != token.strip():
                raise SettingsError(
                    f"gateway.tokens[{i}] is empty or has surrounding whitespace; every token must be a "
                    "non-empty string without leading or trailing blanks (an empty entry would never be a "
                    "secret)"
                )
        zone = zones.canonical(self.time_zone)
        if zone is None:
            raise SettingsError(f"gateway.time_zone: {zones.problem(self.time_zone)}")
        self.time_zone = zone
        if self.tableless_route not in ("postgres", "duckdb"):
            raise SettingsError(
                f"gateway.tableless_route must be 'postgres' or 'duckdb', got {self.tableless_route!r}"
            )
        if self.read_timeout <= 0 or self.max_connections <= 0:
            raise SettingsError("gateway.read_timeout and gateway.max_connections must be positive")
        for name in ("max_connections_per_address", "large_statements", "parser_processes"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"gateway.{name} must be at least 1, got {getattr(self, name)}")

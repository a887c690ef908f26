"""DuckDB as the gateway's engine for the lake and for federated queries, sandboxed.

One in-memory DuckDB database per gateway. Its setup order matters and is verified by the tests:

1. load the iceberg/avro/postgres extensions (from the pinned ``duckdb-extension-*`` wheels; ``INSTALL`` only as
   a fallback where a network exists), because loading is impossible once external access is off;
2. attach every PostgreSQL source ``READ_ONLY`` (its sessions also get ``default_transaction_read_only=on``),
   because attaching a PostgreSQL database is refused once external access is off;
3. ``allowed_directories`` = the warehouse, ``enable_external_access=false``, no extension auto-loading,
   then ``lock_configuration=true`` so that no query can undo any of it.

Every query runs on its own cursor (a DuckDB connection to the shared database), so concurrent queries do not
share state and each can be interrupted alone. Results stream as Arrow record batches.

A source that cannot be attached at start (server down) is recorded as unavailable; :meth:`DuckDBEngine.reopen`
builds a fresh database once it is back (attachments cannot be added after the lock). ``generation`` counts the
databases built, so that whoever keeps state inside one (the gateway's lake cache) knows when it is gone.

PostgreSQL scans (verified with ``pg_debug_show_queries``): a scan sends one ``COPY (SELECT <projected columns>
... WHERE <pushed filters>) TO STDOUT (FORMAT binary)`` per 1000 pages of the table, inside ``BEGIN ... REPEATABLE
READ READ ONLY`` / ``COMMIT``, on connections the extension keeps in its pool (no connection set-up per query).
``pg_staleness_query_enabled`` adds one catalog query per scan (0.6 ms measured against a local server: a point
lookup through DuckDB took 1.9 ms with it, 1.3 ms without), which is what lets tables and columns created in
PostgreSQL after the ATTACH be seen at once; we keep it. Text filters
are pushed with ``COLLATE "C"``, which a B-tree index in another collation (``C.UTF-8``, ``en_US``...) cannot
serve: such a filter costs PostgreSQL a sequential scan of the table.

A cursor's Arrow reader that is not read to its end keeps its DuckDB transaction open even after the cursor is
closed (verified with DuckDB 1.5.5), and an open transaction keeps every table dropped after it started in
memory: :meth:`DuckDBResult.close` therefore closes the reader before the cursor.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
from psycopg import conninfo

from lakegate.connectors.duckdb import (
    pgbounds,
    pgbytea,
    pgdatetime,
    pgerrors,
    pgident,
    pgjson,
    pgjsonedit,
    pgjsonmake,
    pgmacros,
    pgnumformat,
)
from lakegate.connectors.query import (
    INTERNAL,
    INVALID,
    PERMISSION,
    RESOURCES,
    SYNTAX,
    UNAVAILABLE,
    UNDEFINED,
    QueryCancelled,
    QueryError,
)

log = logging.getLogger(__name__)

EXTENSIONS = (("avro", "avro"), ("iceberg", "iceberg"), ("postgres", "postgres_scanner"))


@dataclass(frozen=True)
class DuckDBConfig:
    """What the gateway's DuckDB needs: the warehouse directory and the PostgreSQL sources to attach."""

    warehouse: str  #: a local path or file:// URI: the only directory queries may read
    postgres: Mapping[str, str] = field(default_factory=dict)  #: source name -> libpq DSN
    threads: int = 0  #: 0 = DuckDB's default (one per core)
    memory_limit: str = ""  #: e.g. "4GB"; "" = DuckDB's default (80% of RAM)
    pg_timeout_ms: int = 0  #: statement_timeout of the scan sessions (0 = none)


def warehouse_dir(warehouse: str) -> str:
    """A warehouse path or ``file://`` URI -> an absolute directory path."""
    if warehouse.startswith("file://"):
        return warehouse[len("file://") :]
    if "://" in warehouse:
        raise QueryError(
            f"the gateway reads only local warehouses (file:// or a path), not {warehouse!r}",
            UNAVAILABLE,
            engine="duckdb",
        )
    return str(Path(warehouse).expanduser().resolve())


def sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


#: seconds a connection to a source may take when its DSN does not say (libpq's default is no limit: a source
#: whose host drops packets held the gateway's start and every re-attach for ever)
CONNECT_TIMEOUT = 10


def read_only_dsn(dsn: str, application_name: str = "lakegate-gateway", statement_timeout_ms: int = 0) -> str:
    """The source DSN with sessions that default to read-only transactions (and, given ``statement_timeout_ms``,
    end any statement after that long: a scan waiting on a lock in PostgreSQL is out of reach of DuckDB's
    interrupt, and the extension's ``pg_statement_timeout_millis`` did not reach its sessions)."""
    params = conninfo.conninfo_to_dict(dsn)
    options = params.get("options") or ""
    own = "statement_timeout" in str(options)  # the source's DSN sets its own: the operator's choice stands
    extra = (
        f" -c statement_timeout={int(statement_timeout_ms)}" if statement_timeout_ms > 0 and not own else ""
    )
    params["options"] = f"{options} -c default_transaction_read_only=on{extra}".strip()
    params.setdefault("application_name", application_name)
    params.setdefault("connect_timeout", str(CONNECT_TIMEOUT))  # libpq's default waits for ever
    return conninfo.make_conninfo("", **params)


def load_extensions(con: duckdb.DuckDBPyConnection, wheels: tuple[str, ...] = ()) -> None:
    """Load the extensions (all of :data:`EXTENSIONS`, or those of ``wheels``) into ``con``."""
    for wheel, name in EXTENSIONS:
        if wheels and wheel not in wheels:
            continue
        try:
            import duckdb_extensions

            duckdb_extensions.import_extension(wheel, con=con)
        except Exception as exc:  # no wheel for this platform: try the extension repository
            log.info("extension %s not available from its wheel (%s); trying INSTALL", wheel, exc)
            con.execute(f"INSTALL {name}")
        con.execute(f"LOAD {name}")


def register_macros(con: duckdb.DuckDBPyConnection) -> None:
    """Every macro of PostgreSQL's semantics on DuckDB, in ``con`` (before its configuration is locked)."""
    pgmacros.register(con)
    pgjson.register(con)
    pgjsonmake.register(con)
    pgjsonedit.register(con)
    pgdatetime.register(con)
    pgident.register(con)
    pgbytea.register(con)
    pgnumformat.register(con)
    pgbounds.register(con)  # shadows built-ins by name: the macros above that call them are bounded too


@functools.cache
def macro_fanouts() -> dict[str, int]:
    """How many copies of an argument each macro makes when DuckDB expands a call (the most uses of one of its
    parameters in its body, :func:`_uses`; 1 for a body that binds its arguments once, in a lambda). DuckDB
    expands a macro's argument at each use and its binder never looks at interrupts, so nested calls of a macro
    that uses its argument n times are n**depth copies that no time limit stops (three nested justify_hours:
    127 s to bind)."""
    with duckdb.connect(":memory:") as con:
        register_macros(con)
        rows = con.execute(
            "SELECT function_name, parameters, macro_definition FROM duckdb_functions() "
            "WHERE function_type = 'macro' AND macro_definition IS NOT NULL"
        ).fetchall()
    out: dict[str, int] = {}
    for name, params, body in rows:
        uses = max((_uses(p, body) for p in params), default=1)
        out[name.lower()] = max(out.get(name.lower(), 1), uses, 1)
    return out


def _uses(param: str, body: str) -> int:
    """Copies of ``param`` a macro's body makes: its uses before a lambda that rebinds the name (the bind-once
    idiom, ``list_transform([x], lambda x: ...)[1]``), not counting struct fields (``p.x``) and named arguments
    (``x := ...``)."""
    rebound = re.search(rf"\blambda\s+{re.escape(param)}\s*:", body)
    scope = body[: rebound.start()] if rebound else body
    return len(re.findall(rf"(?<![.\w]){re.escape(param)}\b(?!\s*:=)", scope))


class DuckDBEngine:
    """The sandboxed DuckDB database; :meth:`run` executes one query on a fresh cursor."""

    def __init__(self, config: DuckDBConfig) -> None:
        self.config = config
        self.unavailable: dict[str, str] = {}  #: source name -> why it could not be attached
        self._lock = threading.Lock()
        self._db: duckdb.DuckDBPyConnection | None = None
        self._functions: frozenset[str] | None = None
        self.generation = 0  #: incremented by every database built (state kept in an old one is gone)
        self._pg_seen: tuple[int, Any] = (0, None)  #: (generation, catalog versions) at the last cache clear

    def open(self) -> None:
        with self._lock:
            old, self._db = self._db, self._build()
            self.generation += 1
        if old is not None:
            old.close()

    def reopen(self) -> bool:
        """Rebuild the database if a source was unavailable; True when every source is attached now."""
        if self.unavailable:
            self.open()
        return not self.unavailable

    def _build(self) -> duckdb.DuckDBPyConnection:
        settings: dict[str, Any] = {}
        if self.config.threads:
            settings["threads"] = self.config.threads
        if self.config.memory_limit:
            settings["memory_limit"] = self.config.memory_limit
        try:
            con = duckdb.connect(":memory:", config=settings)
            con.execute("SET TimeZone = 'UTC'")  # as in the PostgreSQL sessions (needs ICU, so after connect)
            load_extensions(con)
            register_macros(con)
            self.unavailable = {}
            for name, dsn in self.config.postgres.items():
                self._attach(con, name, dsn)
            self._sandbox(con)
        except duckdb.Error as exc:
            raise translate(exc) from exc
        return con

    def _attach(self, con: duckdb.DuckDBPyConnection, name: str, dsn: str) -> None:
        try:
            con.execute(
                f"ATTACH {sql_string(read_only_dsn(dsn, statement_timeout_ms=self.config.pg_timeout_ms))} "
                f"AS {quote(name)} (TYPE postgres, READ_ONLY)"
            )
        except duckdb.Error as exc:
            self.unavailable[name] = clean_message(str(exc))
            log.warning("PostgreSQL source %s is unavailable to DuckDB: %s", name, self.unavailable[name])

    def _sandbox(self, con: duckdb.DuckDBPyConnection) -> None:
        timeout = self.config.pg_timeout_ms
        statements = [
            "SET pg_staleness_query_enabled = true",  # tables created in PostgreSQL after ATTACH are seen
            f"SET pg_statement_timeout_millis = {int(timeout)}" if timeout else "",
            f"SET allowed_directories = [{sql_string(warehouse_dir(self.config.warehouse))}]",
            "SET GLOBAL python_enable_replacements = false",  # no table named like a Python variable scans it
            # ORDER BY 'x' inside an aggregate orders by a constant, as in PostgreSQL (which refuses it at the top
            # level itself: the gateway's PostgreSQL check answers that, gateway/pgcheck.py)
            "SET GLOBAL order_by_non_integer_literal = true",
            "SET autoinstall_known_extensions = false",
            "SET autoload_known_extensions = false",
            "SET enable_external_access = false",
            "SET lock_configuration = true",
        ]
        for statement in filter(None, statements):
            con.execute(statement)

    @property
    def db(self) -> duckdb.DuckDBPyConnection:
        if self._db is None:
            self.open()
        assert self._db is not None
        return self._db

    def functions(self) -> frozenset[str]:
        """Names of DuckDB's scalar, aggregate, window and macro functions (for the gateway's allow-list)."""
        if self._functions is None:
            rows = (
                self.db.cursor()
                .execute(
                    "SELECT DISTINCT lower(function_name) FROM duckdb_functions() "
                    "WHERE function_type IN ('scalar', 'aggregate', 'macro', 'window') "
                    # macros that read DuckDB's own catalog (format_type, get_block_size, ...)
                    "AND NOT regexp_matches(coalesce(macro_definition, ''), "
                    "'duckdb_|pragma_|\"system\"|information_schema|pg_catalog')"
                )
                .fetchall()
            )
            self._functions = frozenset(r[0] for r in rows)
        return self._functions

    def prepare(self, sql: str, batch_rows: int = 65536) -> DuckDBResult:
        """A result for ``sql`` on a new cursor that :meth:`DuckDBResult.start` runs (cancellable from now on)."""
        with self._lock:
            cursor = self.db.cursor()
        return DuckDBResult(cursor, sql, batch_rows)

    def run(self, sql: str, batch_rows: int = 65536) -> DuckDBResult:
        """Start ``sql`` on a new cursor; returns once the first batch can be read."""
        result = self.prepare(sql, batch_rows)
        result.start()
        return result

    def value(self, sql: str) -> Any:
        """The single value of a small query (constant expressions, e.g. a time-travel timestamp)."""
        result = self.run(sql)
        try:
            table = pa.Table.from_batches(list(result), schema=result.schema)
        finally:
            result.close()
        return table.column(0)[0].as_py() if table.num_rows else None

    def execute(self, sql: str, interruptible: Callable[[DuckDBResult], None] | None = None) -> None:
        """Run a statement of the gateway's own (DDL of the lake cache) to its end; ``interruptible`` receives
        the running result, whose ``cancel()`` interrupts it from another thread."""
        result = self.prepare(sql)
        if interruptible is not None:
            interruptible(result)
        try:
            result.start()
            for _ in result:
                pass
        finally:
            result.close()

    def see_postgres_catalogs(self, versions: Any) -> None:
        """Make DuckDB read the PostgreSQL sources' schemas and tables afresh when ``versions`` (the gateway's
        token for their table lists) changed since the last call: the postgres extension caches the list of
        schemas at first use, so that a schema created later would stay unknown (``pg_staleness_query_enabled``
        covers tables in known schemas only)."""
        seen = (self.generation, versions)
        if seen == self._pg_seen:
            return
        self.execute("CALL pg_clear_cache()")
        self._pg_seen = seen

    def table_memory(self) -> int:
        """Bytes held by in-memory tables (DuckDB's ``IN_MEMORY_TABLE`` tag, spilled blocks included)."""
        value = self.value(
            "SELECT coalesce(sum(memory_usage_bytes + temporary_storage_bytes), 0)::BIGINT "
            "FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"
        )
        return int(value or 0)

    def memory_limit(self) -> int:
        """DuckDB's memory limit in bytes (its default is 80% of the machine's memory)."""
        return parse_memory(str(self.value("SELECT current_setting('memory_limit')")))

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None


class DuckDBResult:
    """One query on its own cursor, read as Arrow batches; see :class:`lakegate.connectors.query.ResultStream`."""

    def __init__(self, cursor: duckdb.DuckDBPyConnection, sql: str, batch_rows: int) -> None:
        self._cursor = cursor
        self._sql = sql
        self._batch_rows = batch_rows
        self._cancelled = threading.Event()
        self._closed = False
        self._reader: pa.RecordBatchReader | None = None
        self.schema = pa.schema([])

    def start(self) -> None:
        """Run the query up to its first batch (blocking operators such as a sort finish here)."""
        if self._cancelled.is_set():
            raise QueryCancelled(engine="duckdb")
        try:
            self._cursor.execute(self._sql)
            names = [str(d[1]) for d in self._cursor.description or []]
            self._reader = self._cursor.to_arrow_reader(self._batch_rows)
        except duckdb.Error as exc:
            raise translate(exc, cancelled=self._cancelled.is_set()) from exc
        self.schema = _typed(self._reader.schema, names)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        while True:
            if self._cancelled.is_set() or self._reader is None:
                raise QueryCancelled(engine="duckdb")
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                return
            except (duckdb.Error, OSError, pa.ArrowException) as exc:
                raise translate(exc, cancelled=self._cancelled.is_set()) from exc
            yield batch

    def cancel(self) -> None:
        self._cancelled.set()
        if not self._closed:
            with contextlib.suppress(duckdb.Error):
                self._cursor.interrupt()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        reader = self._reader
        try:
            if reader is not None:
                reader.close()  # ends the DuckDB transaction (closing the cursor alone does not)
            self._cursor.close()
        except (duckdb.Error, pa.ArrowException, OSError):
            pass
        self._reader = None


def _typed(schema: pa.Schema, names: list[str]) -> pa.Schema:
    """Each field marked with DuckDB's name of its type (``lakegate.duckdb_type``): Arrow shows UUID and JSON
    as strings, and the gateway reports PostgreSQL's type names."""
    if len(names) != len(schema):
        return schema
    return pa.schema(
        [
            f.with_metadata({**(f.metadata or {}), DUCKDB_TYPE: n.encode()})
            for f, n in zip(schema, names, strict=True)
        ],
        metadata=schema.metadata,
    )


DUCKDB_TYPE = b"lakegate.duckdb_type"
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_UNITS.update({"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40, "bytes": 1})


def parse_memory(text: str) -> int:
    """DuckDB's rendering of a size (``18.8 GiB``, ``512.0 MiB``, ``1000 bytes``) -> bytes (0 if unreadable)."""
    match = re.fullmatch(r"\s*([\d.]+)\s*([A-Za-z]*)\s*", text)
    if not match or match.group(2).lower() not in _UNITS:
        return 0
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_CONTEXT = re.compile(r"\n\s*\nLINE \d+:.*", re.DOTALL)
_KIND = re.compile(r"^([A-Za-z ]+?) Error: ")
_KINDS = {
    "parser": SYNTAX,
    "syntax": SYNTAX,
    "binder": UNDEFINED,
    "catalog": UNDEFINED,
    "conversion": INVALID,
    "invalid input": INVALID,
    "out of range": INVALID,
    "mismatch type": INVALID,
    "type mismatch": INVALID,
    "constraint": INVALID,
    "not implemented": INVALID,
    "invalid type": INVALID,
    "permission": PERMISSION,
    "out of memory": RESOURCES,
    "io": UNAVAILABLE,
    "http": UNAVAILABLE,
    "connection": UNAVAILABLE,
}


_PASSWORD = re.compile(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|[^\s\"]+)", re.IGNORECASE)
#: the connection string the postgres extension quotes whole when it cannot connect (host, user, options)
_CONNINFO = re.compile(r'(Unable to connect to Postgres) at "(?:[^"\\]|\\.)*"')


def clean_message(text: str) -> str:
    """DuckDB's message without the ``LINE n:`` excerpt (it points into generated SQL, not the user's) and
    without the connection string (the postgres extension quotes it whole when it cannot connect), and without
    any password should another message quote one."""
    text = _CONNINFO.sub(r"\1", _CONTEXT.sub("", text))
    return _PASSWORD.sub(r"\1***", text).strip()


def translate(exc: BaseException, *, cancelled: bool = False) -> QueryError:
    """A duckdb (or, mid-stream, Arrow/OSError-wrapped) exception -> QueryError."""
    message = clean_message(str(exc))
    if cancelled or isinstance(exc, duckdb.InterruptException) or message.startswith("INTERRUPT Error"):
        return QueryCancelled(engine="duckdb")
    match = _KIND.match(message)
    kind = _KINDS.get(match.group(1).lower(), INTERNAL) if match else INTERNAL
    if isinstance(exc, duckdb.PermissionException):
        kind = PERMISSION
    elif isinstance(exc, duckdb.OutOfMemoryException):
        kind = RESOURCES
    elif kind == UNDEFINED and "does not exist" not in message and "not found" not in message:
        kind = INVALID  # binder errors that are about types and arguments, not unknown names
    if kind in (INVALID, INTERNAL):
        postgres = pgerrors.postgres_error(message)
        if postgres is not None:  # an error PostgreSQL raises too: its code and its words
            return QueryError(postgres[1], INVALID, engine="duckdb", sqlstate=postgres[0])
    own = pgerrors.own_error(message)
    if own is not None:
        return QueryError(own, INVALID, engine="duckdb", sqlstate=pgerrors.own_sqlstate(own))
    missing = pgerrors.refusal(message)
    if missing is not None:  # a function, cast or operator DuckDB lacks: named, with what to do (a refusal)
        return QueryError(missing, INVALID, engine="duckdb", sqlstate="0A000")
    return QueryError(message, kind, engine="duckdb")

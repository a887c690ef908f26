"""The transport-free facade of the gateway and its composition root: every front end (HTTP, CLI, tests) uses it.

``prepare(sql)`` parses, guards and routes a statement and returns an :class:`Execution` that is not started yet
(the caller registers it for cancellation first); ``start()`` runs the engine up to the first rows, ``batches()``
streams the rest. ``query(sql)`` does all of it and collects the rows, for callers that want a table.

Two caches cut the work of repeated queries: the plan cache (:mod:`lakegate.gateway.plans`: parse, guard and
routing by SQL text) and the lake cache (:mod:`lakegate.gateway.cache`: lake tables in DuckDB memory by snapshot).
The lake views are rendered for every query from the tables' current metadata, so neither can serve a stale
answer; the cache tables a query reads are pinned (leases) until its execution is closed. EXPLAIN, SHOW and
DESCRIBE are answered by :mod:`lakegate.gateway.introspect`.
"""

from __future__ import annotations

import functools
import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from sqlglot import exp

from lakegate.connectors.config import LakeSettings, SourceSettings
from lakegate.connectors.duckdb.engine import DuckDBConfig, DuckDBEngine
from lakegate.connectors.postgres import roles
from lakegate.connectors.postgres.connection import with_settings
from lakegate.connectors.postgres.engine import SCANNER_SETTINGS, PostgresEngine
from lakegate.connectors.query import QueryError
from lakegate.gateway import callguard, functions, pgcheck, pgfootprint, pggrammar, pgnames, zones
from lakegate.gateway import deadline as deadline_mod
from lakegate.gateway import parse as parse_mod
from lakegate.gateway.cache import LakeCache, Lease
from lakegate.gateway.catalog import POSTGRES, Catalog, TableRef
from lakegate.gateway.config import GatewaySettings
from lakegate.gateway.errors import (
    BadRequest,
    Forbidden,
    GatewayError,
    NotFound,
    QueryTimeout,
    SqlSyntaxError,
    Unavailable,
)
from lakegate.gateway.execute import SHUTDOWN, Execution, Limits, Watchdog, engine_error
from lakegate.gateway.guard import Guard
from lakegate.gateway.introspect import Introspection, TableStream
from lakegate.gateway.lake import Lake
from lakegate.gateway.metrics import Metrics
from lakegate.gateway.pgresult import PgTypedStream
from lakegate.gateway.plans import PlanCache
from lakegate.gateway.route import DUCKDB_ROUTE, GATEWAY_ROUTE, POSTGRES_ROUTE, PgRead, Plan, Routed, Router
from lakegate.gateway.schema import schema_listing
from lakegate.gateway.status import lake_status

log = logging.getLogger("lakegate.gateway")
#: Statements longer than this (characters) are interrupted in the middle of parsing and planning when their
#: time limit passes; shorter ones take milliseconds and only check it around their I/O and at the end.
PREEMPT_SQL = 4096


@dataclass
class Result:
    """A whole result, collected (``Gateway.query``)."""

    table: pa.Table
    truncated: bool
    elapsed_ms: float
    route: str
    source_lsn: str | None = None  #: the source position the lake tables were read at


class Gateway:
    """The gateway over the lake ``lake`` and the PostgreSQL ``sources``, configured by ``config``."""

    def __init__(
        self, lake: LakeSettings, sources: Sequence[SourceSettings], config: GatewaySettings
    ) -> None:
        self.config = cfg = config
        self.sources = list(sources)
        self.postgres = {
            s.name: PostgresEngine(s.name, s.dsn, pool_size=cfg.workers + 2) for s in self.sources
        }
        self.duckdb = DuckDBEngine(
            DuckDBConfig(
                warehouse=lake.warehouse,
                # the scanner's sessions search only pg_catalog: a filter it pushes down (v = 'abc') never
                # resolves to an operator someone planted in public (README "Guard" item 2)
                postgres={s.name: with_settings(s.dsn, SCANNER_SETTINGS) for s in self.sources},
                threads=cfg.duckdb_threads,
                memory_limit=cfg.duckdb_memory_limit,
                pg_timeout_ms=int(cfg.timeout * 1000),
            )
        )
        self.lake = Lake(lake)
        self.catalog = Catalog(lake.name, self.lake, self.postgres, cfg.search_path)
        self.watchdog = Watchdog()
        self.introspection = Introspection(
            self.postgres, self.duckdb, self.catalog, self.watchdog, cfg.timeout
        )
        self.router = Router(self.catalog, self.lake, self.introspection.evaluate)
        if cfg.tableless_route == "postgres":  # the first PostgreSQL source two-part names search
            searched = [s for s in self.catalog.search_path if s in self.postgres] or list(self.postgres)
            self.router.tableless_source = searched[0] if searched else None
        self.metrics = Metrics()
        self.cache = LakeCache(self.duckdb, cfg.cache_bytes)
        self.plans = PlanCache()
        self._guard: Guard | None = None
        self._calls: callguard.CallGuard | None = None
        self._executions: set[Execution] = set()
        self._lake_names: frozenset[tuple[str, str]] = frozenset()
        self.warnings: list[str] = []  #: shown in /v1/status (a source role allowed to be privileged)

    # ------------------------------------------------------------------------------------------ lifecycle

    def open(self) -> Gateway:
        try:
            self.duckdb.open()
        except QueryError as exc:
            raise Unavailable(f"DuckDB cannot start: {exc}") from exc
        self._guard = Guard(self.duckdb.functions(), frozenset(self.config.allow_functions))
        self._guard.extension_functions = pgfootprint.ExtensionNames(self.postgres)
        known = self.duckdb.functions() | functions.POSTGRES_FUNCTIONS
        self._calls = callguard.CallGuard(
            self._guard.call_allowed, self._guard.qualified, pgnames.NamesReader(self.postgres), known
        )
        self._fit_cache()
        return self

    def check_roles(self) -> None:
        """``lakegate serve``: every source's role must be a plain reader, unless the source sets
        ``allow_privileged_role`` (then a warning, at every start and in ``/v1/status``); see
        :func:`lakegate.connectors.postgres.roles.check`."""
        self.warnings += roles.check(self.sources, self.postgres)

    def _fit_cache(self) -> None:
        """In-memory tables count against DuckDB's memory limit: the cache takes at most half of it."""
        try:
            limit = self.duckdb.memory_limit()
        except QueryError:
            return
        if limit and self.cache.budget > limit // 2:
            log.warning(
                "[gateway] cache_bytes = %d is more than half of DuckDB's memory limit (%d bytes); "
                "the lake cache uses %d bytes",
                self.cache.budget,
                limit,
                limit // 2,
            )
            self.cache.budget = limit // 2

    def close(self) -> None:
        for execution in list(self._executions):
            execution.cancel(SHUTDOWN)
        self.watchdog.stop()
        self.cache.close()
        self.duckdb.close()
        for engine in self.postgres.values():
            engine.close()

    @property
    def guard(self) -> Guard:
        if self._guard is None:
            self.open()
        assert self._guard is not None
        return self._guard

    # -------------------------------------------------------------------------------------------- queries

    def limits(
        self, max_rows: int | None = None, timeout_ms: float | None = None, time_zone: str | None = None
    ) -> Limits:
        """The request's limits, never above the server's, and its time zone (default ``[gateway] time_zone``)."""
        cfg = self.config
        zone = cfg.time_zone if time_zone is None else zones.canonical(time_zone)
        if zone is None:
            raise BadRequest(zones.problem(str(time_zone)))
        if max_rows is not None and max_rows < 0:
            raise BadRequest(f"max_rows must be 0 or more, got {max_rows}")
        if timeout_ms is not None and not (math.isfinite(timeout_ms) and timeout_ms > 0):
            raise BadRequest(f"timeout_ms must be a positive number of milliseconds, got {timeout_ms}")
        rows = cfg.max_rows if max_rows is None else min(max_rows, cfg.max_rows)
        timeout = cfg.timeout if timeout_ms is None else min(timeout_ms / 1000, cfg.timeout)
        return Limits(max_rows=rows, timeout=timeout, max_bytes=cfg.max_result_bytes, time_zone=zone)

    def plan(
        self,
        sql: str,
        max_rows: int | None = None,
        leases: list[Lease] | None = None,
        deadline: float | None = None,
        zone: str = zones.UTC,
    ) -> tuple[parse_mod.Statement, Plan | None]:
        """Parse, guard and route ``sql`` (no engine runs). The plan is None for SHOW and DESCRIBE. With
        ``leases``, lake tables may be read from the lake cache, and the cache tables used are pinned there.
        Parsing, guarding and routing stop with a 408 once ``deadline`` (monotonic) passes."""
        try:
            return self._plan(sql, max_rows, leases, deadline, zone)
        except deadline_mod.Interrupted:
            raise QueryTimeout(
                "the query's time limit passed while it was parsed and planned (the statement is very large "
                "or deeply nested); it was stopped: make it smaller, or ask for a longer timeout_ms"
            ) from None

    def _plan(
        self, sql: str, max_rows: int | None, leases: list[Lease] | None, deadline: float | None, zone: str
    ) -> tuple[parse_mod.Statement, Plan | None]:
        listing: dict[tuple[str, str], str | None] | None = None

        def fingerprint(routed: Routed) -> Any:
            nonlocal listing
            listing = self._listing()
            return self._fingerprint(routed, listing)

        cached = self.plans.get(sql, max_rows, fingerprint, zone)
        if cached is not None:
            statement, routed = cached.statement, cached.routed
        else:
            preempt = len(sql) > PREEMPT_SQL  # a shorter statement is parsed and planned in milliseconds
            with deadline_mod.interruptible(deadline, self.watchdog, preempt=preempt):
                try:
                    statement = parse_mod.parse(sql)
                except SqlSyntaxError:  # sqlglot cannot read it: a call PostgreSQL would refuse says more
                    listing = self._listing() if listing is None else listing
                    self._check_calls(sql, None, listing)
                    raise
            if statement.kind in (parse_mod.SHOW, parse_mod.DESCRIBE):
                return statement, None
            assert statement.ast is not None
            listing = self._listing() if listing is None else listing
            text = statement.sql if statement.kind == parse_mod.QUERY else None
            try:
                with deadline_mod.interruptible(deadline, self.watchdog, preempt=preempt):
                    self._check_calls(statement.sql, statement.ast, listing)  # calls as PostgreSQL reads them
                    self.guard.check(statement.ast, statement.start)  # and as sqlglot reads it
                    pggrammar.check(statement.sql, statement.ast)  # PostgreSQL's syntax errors, every route
                    routed = self._route(statement, max_rows, listing, text, zone, deadline)
            except RecursionError:  # sqlglot copies and writes SQL recursively
                raise parse_mod.too_deep() from None
            if routed.route == DUCKDB_ROUTE and text is not None and self.postgres:
                self._postgres_check(text, statement.ast, listing, zone, deadline)
            self.plans.put(sql, max_rows, self._fingerprint(routed, listing), statement, routed, zone)
        assert listing is not None
        scan = pg_scan = None
        if leases is not None and self.cache.enabled:
            scan = functools.partial(self.cache.scan, leases=leases)
            if routed.pgs:
                pg_scan = self._pg_lookup(leases)
        return statement, self.router.render(routed, listing, scan, pg_scan)

    def _route(
        self,
        statement: parse_mod.Statement,
        max_rows: int | None,
        listing: dict[tuple[str, str], str | None],
        text: str | None,
        zone: str,
        deadline: float | None,
    ) -> Routed:
        """The guarded statement routed; where the DuckDB route's rewrite refuses or fails it, PostgreSQL's own
        analysis error (if it has one) is the answer, as it would be for the user (a type error before a
        construct the lake route cannot compute)."""
        assert statement.ast is not None
        try:
            return self.router.route(statement.ast, max_rows, listing, text, zone)
        except BadRequest as exc:
            if text is not None and self.postgres and not isinstance(exc, Forbidden):
                self._postgres_check(text, statement.ast, listing, zone, deadline)
            raise

    def _postgres_check(
        self,
        sql: str,
        ast: exp.Expression,
        listing: dict[tuple[str, str], str | None],
        zone: str,
        deadline: float | None,
    ) -> None:
        """PostgreSQL's error for a statement the DuckDB route would answer, where PostgreSQL refuses it at
        analysis or planning (:mod:`.pgcheck`)."""

        def lake_source(ref: TableRef) -> str | None:
            source = self.lake.entry(ref.schema, ref.name, listing).table.properties.get("lakegate.source")
            return str(source) if source in self.postgres else None

        pgcheck.check(
            sql,
            ast,
            zone,
            lambda table: self.catalog.resolve(table, listing),
            lake_source,
            self.postgres,
            deadline,
        )

    def _check_calls(
        self, sql: str, ast: exp.Expression | None, listing: dict[tuple[str, str], str | None]
    ) -> None:
        """Every call site of ``sql`` as PostgreSQL's parser reads it (:mod:`.callguard`); a statement with
        time travel (the gateway's own syntax, lake tables only: DuckDB has no attribute notation) is read by
        sqlglot only."""
        if ast is not None and any(table.args.get("version") for table in ast.find_all(exp.Table)):
            return
        columns = functools.partial(self._columns, listing=listing)
        self.guard  # noqa: B018 (opens the gateway, which makes the call guard)
        assert self._calls is not None
        tree = callguard.tree(sql)
        if tree is not None:  # None: a syntax error, which pggrammar reports after the sqlglot guard
            self._calls.check(tree, sql, columns)

    def _columns(self, parts: tuple[str, ...], listing: dict[tuple[str, str], str | None]) -> set[str] | None:
        """The column names of the table written ``parts`` (as PostgreSQL folded them), or None."""
        table = exp.Table(
            **dict(zip(("catalog", "db", "this")[-len(parts) :], map(_ident, parts), strict=True))
        )
        try:
            ref = self.catalog.resolve(table, listing)
            if ref.kind == POSTGRES:
                types = self.router.pg_columns.types(ref)
                return set(types) if types else None
            return set(self.lake.entry(ref.schema, ref.name, listing).columns)
        except (NotFound, GatewayError):
            return None

    def _pg_lookup(self, leases: list[Lease]) -> Callable[[PgRead], str | None]:
        """Serves a query's PostgreSQL tables from the cache when the server is provably unchanged since they
        were cached: one ``pg_current_snapshot()`` round trip per source and query (and none for tables too
        large or too busy to cache)."""
        tokens: dict[str, str | None] = {}

        def lookup(read: PgRead) -> str | None:
            ref = read.ref
            engine = self.postgres.get(ref.source)
            if engine is None or not self.cache.wants_postgres(ref.source, ref.schema, ref.name):
                return None
            if ref.source not in tokens:
                try:
                    tokens[ref.source] = engine.snapshot_token()
                except QueryError:
                    tokens[ref.source] = None  # the query reads it live and reports what is wrong
            token = tokens[ref.source]
            if not token:
                return None
            probe = functools.partial(_probe, engine, ref.schema, ref.name)
            return self.cache.scan_postgres(
                ref.source, ref.schema, ref.name, token, read.relation, probe, leases
            )

        return lookup

    def _listing(self) -> dict[tuple[str, str], str | None]:
        listing = self.lake.listing()
        names = frozenset(listing)
        if names != self._lake_names:  # tables added or dropped: the cache forgets the dropped ones
            self._lake_names = names
            self.cache.sweep(set(names))
        return listing

    def _fingerprint(self, routed: Routed, listing: dict[tuple[str, str], str | None]) -> Any:
        """What the routing of a statement depends on: the lake's table names and the table lists of the
        PostgreSQL sources its name resolution read."""
        pg = tuple(self.catalog.version(source, refresh=missed) for source, missed in routed.consulted)
        return frozenset(listing), pg

    def prepare(
        self,
        sql: str,
        *,
        max_rows: int | None = None,
        timeout_ms: float | None = None,
        time_zone: str | None = None,
    ) -> Execution:
        """An execution of ``sql`` (in ``time_zone``, default ``[gateway] time_zone``) ready to ``start()``."""
        limits = self.limits(max_rows, timeout_ms, time_zone)
        deadline = time.monotonic() + limits.timeout  # the whole request: planning, EXPLAIN, run, stream
        shown = self._show_setting(sql, limits.time_zone)
        if shown is not None:
            execution = Execution(TableStream(shown), limits, self.watchdog, GATEWAY_ROUTE, deadline)
            execution.plan = None  # type: ignore[attr-defined]
            execution.source_lsn = None
            self._track(execution, [])
            return execution
        leases: list[Lease] = []
        try:
            statement, plan = self.plan(sql, limits.max_rows, leases, deadline, limits.time_zone)
            if plan is not None and statement.kind != parse_mod.EXPLAIN and self._reattach(plan):
                _release(leases)  # DuckDB was rebuilt: the cache tables named by the plan are gone
                statement, plan = self.plan(sql, limits.max_rows, leases, deadline, limits.time_zone)
            if plan is None or statement.kind == parse_mod.EXPLAIN:
                table = self.introspection.answer(statement, plan, deadline)
                execution = Execution(TableStream(table), limits, self.watchdog, GATEWAY_ROUTE, deadline)
            else:
                stream = self._stream(plan, limits, deadline)
                execution = Execution(stream, limits, self.watchdog, plan.route, deadline)
        except BaseException:
            _release(leases)
            raise
        execution.plan = plan  # type: ignore[attr-defined]
        execution.source_lsn = plan.source_lsn if plan is not None else None
        self._track(execution, leases)
        return execution

    def _show_setting(self, sql: str, zone: str) -> pa.Table | None:
        """``SHOW <setting>`` of :data:`functions.SHOWN_SETTINGS` as PostgreSQL answers it (a column named as the
        setting is): ``TimeZone`` is the request's zone, the others the PostgreSQL source's defaults (its pooled
        sessions keep them); None for any other statement. Another setting is refused, by name."""
        match = _SHOW.fullmatch(sql)
        if match is None or match.group(1).lower() in parse_mod.SHOW_WHAT:
            return None
        name = " ".join(match.group(1).lower().split())
        name = "timezone" if name == "time zone" else name.strip('"')
        if name not in functions.SHOWN_SETTINGS:
            raise Forbidden(
                f"SHOW {name} is not allowed: the gateway shows only the settings that drivers and BI tools read "
                f"({', '.join(sorted(functions.SHOWN_SETTINGS))}); others may hold paths or secrets"
            )
        if name == "timezone":
            return pa.table({"TimeZone": pa.array([zone], pa.string())})
        if len(self.postgres) != 1:
            raise BadRequest(
                f"SHOW {name} needs exactly one PostgreSQL source to ask (there are {len(self.postgres)})"
            )
        engine = next(iter(self.postgres.values()))
        try:
            rows = engine.fetch(_SETTING, (name,))
        except QueryError as exc:
            raise engine_error(exc) from exc
        return pa.table({str(rows[0][0]): pa.array([str(rows[0][1])], pa.string())})

    def _reattach(self, plan: Plan) -> bool:
        """Make sure every PostgreSQL source the DuckDB plan reads is attached; True if DuckDB was rebuilt."""
        if plan.route != DUCKDB_ROUTE:
            return False
        needed = {t.split(".")[0] for t in plan.tables} & set(self.postgres)
        missing = needed & set(self.duckdb.unavailable)
        if not missing:
            if needed:  # a schema created in PostgreSQL since DuckDB listed them is found by this query
                self.duckdb.see_postgres_catalogs(
                    tuple(self.catalog.version(s) for s in sorted(self.postgres))
                )
            return False
        for name in sorted(missing):  # attached only once its role is known to be a plain reader
            engine = self.postgres[name]
            if engine.readers_only:
                try:
                    role, problems = engine.role()
                except QueryError as exc:
                    raise engine_error(exc) from exc
                if problems:
                    raise Forbidden(roles.privileged_message(name, role, problems))
        if not self.duckdb.reopen():
            raise Unavailable(  # the cause quotes the connection string: it goes to the operator's log only
                f"PostgreSQL source(s) {sorted(missing)} cannot be reached from DuckDB; retry in a moment, and "
                "ask the operator if it persists (the gateway's log says why)"
            )
        return True

    def _stream(self, plan: Plan, limits: Limits, deadline: float) -> Any:
        if plan.route == POSTGRES_ROUTE:
            assert plan.source is not None
            pgfootprint.check(self.postgres[plan.source], plan.footprint)
            timeout = deadline_mod.remaining(deadline, limits.timeout)
            return self.postgres[plan.source].prepare(
                plan.sql, timeout=timeout, max_bytes=limits.max_bytes, time_zone=limits.time_zone
            )
        # batches small enough that one of 1 KiB rows fits the result cap: a result over the cap fails after
        # about the cap, not after a 65,536-row batch
        rows = max(2048, min(65536, limits.max_bytes // 1024))
        stream = self.duckdb.prepare(plan.sql, batch_rows=rows)
        return stream if plan.pg_types is None else PgTypedStream(stream, plan.pg_types)

    def _track(self, execution: Execution, leases: list[Lease]) -> None:
        self._executions.add(execution)
        close = execution.close

        def tracked_close() -> None:
            self._executions.discard(execution)
            try:
                close()
            finally:
                _release(leases)

        execution.close = tracked_close  # type: ignore[method-assign]

    def query(
        self,
        sql: str,
        *,
        max_rows: int | None = None,
        timeout_ms: float | None = None,
        time_zone: str | None = None,
    ) -> Result:
        """Run ``sql`` and collect the whole (capped) result."""
        execution = self.prepare(sql, max_rows=max_rows, timeout_ms=timeout_ms, time_zone=time_zone)
        execution.start()
        batches = list(execution.batches())
        table = pa.Table.from_batches(batches, schema=execution.schema)
        return Result(table, execution.truncated, execution.elapsed_ms, execution.route, execution.source_lsn)

    # ------------------------------------------------------------------------------- explain, schema, status

    def explain(
        self, sql: str, timeout_ms: float | None = None, time_zone: str | None = None
    ) -> dict[str, Any]:
        leases: list[Lease] = []
        limits = self.limits(None, timeout_ms, time_zone)
        deadline = time.monotonic() + limits.timeout
        try:
            statement, plan = self.plan(sql, self.config.max_rows, leases, deadline, limits.time_zone)
            return self.introspection.explain(statement, plan, deadline)
        finally:
            _release(leases)

    def schema(self) -> dict[str, Any]:
        return schema_listing(self.catalog)

    def status(self) -> dict[str, Any]:
        out = lake_status(self.catalog, {s.name: s.slot for s in self.sources})
        out["cache"] = self.cache_figures()
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def cache_figures(self) -> dict[str, Any]:
        """The lake cache's and the plan cache's figures (``/v1/status`` and ``/metrics``)."""
        figures = self.cache.figures()
        figures["plans"] = self.plans.figures()
        return figures


#: ``SHOW <name>``: one setting's name (``time zone`` in two words), an optional semicolon
_SHOW = re.compile(r"\s*show\s+((?:time\s+zone)|\"?[a-z_]+\"?)\s*;?\s*", re.IGNORECASE)
_SETTING = "SELECT name, current_setting(name) FROM pg_catalog.pg_settings WHERE lower(name) = %s"
_PROBE = """
SELECT pg_current_snapshot()::text, c.relkind::text, pg_table_size(c.oid)
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s AND c.relname = %s
"""


def _probe(engine: PostgresEngine, schema: str, name: str) -> tuple[str, str, int]:
    """(server snapshot token, relkind, bytes) of a PostgreSQL table, for a cache load."""
    rows = engine.fetch(_PROBE, (schema, name))
    if not rows:
        return engine.snapshot_token(), "", 0
    token, kind, size = rows[0]
    return str(token), str(kind), int(size or 0)


def _ident(name: str) -> exp.Identifier:
    return exp.Identifier(this=name, quoted=True)


def _release(leases: list[Lease]) -> None:
    while leases:
        leases.pop().release()


__all__ = ["DUCKDB_ROUTE", "GATEWAY_ROUTE", "POSTGRES", "POSTGRES_ROUTE", "Gateway", "GatewayError", "Result"]

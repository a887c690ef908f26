"""Which source owns which table: names (``source.schema.table``), the search path, and "did you mean".

Names follow PostgreSQL: unquoted identifiers are folded to lower case, quoted ones are kept as written. A
three-part name names its source; a two-part name ``schema.table`` is looked up along the search path (default:
the lake, then every PostgreSQL source in configuration order); a one-part name means ``public.<name>``.

The lake's listing is read for every query (it carries the tables' current metadata locations, see
:mod:`lakegate.gateway.lake`); a PostgreSQL source's table list is cached for a few seconds and re-read when a name is
not found in it, so that new tables appear at once.
"""

from __future__ import annotations

import difflib
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sqlglot import exp

from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.query import QueryError
from lakegate.gateway import deadline
from lakegate.gateway.errors import Forbidden, NotFound, Unavailable
from lakegate.gateway.lake import Lake

LAKE, POSTGRES = "lake", "postgres"
DEFAULT_SCHEMA = "public"

PG_TABLES = """
SELECT n.nspname, c.relname, c.relkind::text
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f')
  AND n.nspname NOT LIKE 'pg\\_toast%' AND n.nspname NOT LIKE 'pg\\_temp%'
"""
SYSTEM_SCHEMAS = ("pg_catalog", "information_schema")

#: PostgreSQL relations that hold secrets or other sessions' data (password hashes, user-mapping options,
#: configuration files, other sessions' query text, sampled column values, large objects, connection strings
#: of subscriptions): never readable through the gateway, on either route and whatever the source role may read.
PROTECTED = {
    "pg_catalog": frozenset(
        {
            "pg_authid",
            "pg_shadow",
            "pg_user_mapping",
            "pg_user_mappings",
            "pg_hba_file_rules",
            "pg_ident_file_mappings",
            "pg_file_settings",
            "pg_settings",
            "pg_db_role_setting",
            "pg_config",
            "pg_largeobject",
            "pg_largeobject_metadata",
            "pg_subscription",
            "pg_replication_slots",
            "pg_replication_origin_status",
            "pg_backend_memory_contexts",
            "pg_shmem_allocations",
            "pg_foreign_server",
        }
    ),
    "information_schema": frozenset(
        {"user_mapping_options", "user_mappings", "foreign_server_options", "foreign_servers"}
    ),
}
#: In pg_catalog, every statistics relation (pg_statistic's sampled values, pg_stat_activity's query text of
#: other sessions, pg_stat_replication, ...); in any schema, the pg_stat_statements extension's views.
PROTECTED_PREFIXES = ("pg_stat", "pg_statio_")
PROTECTED_ANYWHERE = frozenset({"pg_stat_statements", "pg_stat_statements_info"})


@dataclass(frozen=True)
class TableRef:
    """A resolved table: its source, the source's kind, and its exact schema and name."""

    source: str
    kind: str  #: lake | postgres
    schema: str
    name: str

    def __str__(self) -> str:
        return f"{self.source}.{self.schema}.{self.name}"


class Catalog:
    def __init__(
        self,
        lake_name: str,
        lake: Lake,
        postgres: Mapping[str, PostgresEngine],
        search_path: Sequence[str] = (),
        ttl: float = 5.0,
    ) -> None:
        self.lake_name = lake_name
        self.lake = lake
        self.postgres = dict(postgres)
        self.search_path = list(search_path) or [lake_name, *self.postgres]
        unknown = [s for s in self.search_path if s != lake_name and s not in self.postgres]
        if unknown:
            raise ValueError(
                f"[gateway] search_path names unknown source(s) {unknown}; "
                f"sources are {[lake_name, *self.postgres]}"
            )
        self.ttl = ttl
        self._pg_cache: dict[str, tuple[float, dict[tuple[str, str], str]]] = {}
        self._pg_versions: dict[str, int] = {}
        self._lock = threading.Lock()

    @property
    def sources(self) -> list[str]:
        return [self.lake_name, *self.postgres]

    # ------------------------------------------------------------------------------------------- listings

    def tables(
        self,
        source: str,
        *,
        refresh: bool = False,
        lake_listing: Mapping[tuple[str, str], object] | None = None,
        force: bool = False,
    ) -> dict[tuple[str, str], str]:
        """(schema, table) -> kind of every table of ``source`` (lake: state/changelog/plain is not known here,
        the value is ``"iceberg"``; PostgreSQL: relkind). ``refresh`` re-reads a list older than 0.2 s (the
        plan cache asks on every query whose resolution missed a name in a source), ``force`` re-reads it."""
        if source == self.lake_name:
            listing = lake_listing if lake_listing is not None else self.lake.listing()
            return {key: "iceberg" for key in listing}
        with self._lock:
            cached = self._pg_cache.get(source)
        if cached is not None and not refresh and time.monotonic() - cached[0] < self.ttl:
            return cached[1]
        if cached is not None and refresh and not force and time.monotonic() - cached[0] < 0.2:
            return cached[1]
        try:
            with deadline.shielded():  # I/O: never interrupted half-way by a request's time limit
                rows = self.postgres[source].fetch(
                    PG_TABLES, timeout=deadline.remaining(deadline.current(), 10.0)
                )
        except QueryError as exc:
            raise Unavailable(f"cannot list the tables of PostgreSQL source {source!r}: {exc}") from exc
        tables = {(schema, name): kind for schema, name, kind in rows}
        with self._lock:
            if cached is None or cached[1] != tables:
                self._pg_versions[source] = self._pg_versions.get(source, 0) + 1
            self._pg_cache[source] = (time.monotonic(), tables)
        return tables

    def version(self, source: str, *, refresh: bool = False) -> int:
        """A number that changes whenever the table list of PostgreSQL source ``source`` changes, read as name
        resolution reads it (every ``ttl`` seconds; with ``refresh``, as after a name was not found in it);
        the plan cache keys on it."""
        self.tables(source, refresh=refresh)
        return self._pg_versions.get(source, 0)

    # ----------------------------------------------------------------------------------------- resolution

    def resolve(
        self,
        table: exp.Table,
        lake_listing: Mapping[tuple[str, str], object],
        consulted: dict[str, bool] | None = None,
    ) -> TableRef:
        """The table ``table`` names; raises NotFound with suggestions. The PostgreSQL sources whose table lists
        decided the answer are entered in ``consulted`` (True where a name was not found, so that the list was
        read afresh)."""
        parts = [p for p in (table.args.get("catalog"), table.args.get("db"), table.args.get("this")) if p]
        idents = [p if isinstance(p, exp.Identifier) else exp.to_identifier(p.name) for p in parts]
        written = ".".join(p.sql(dialect="postgres") for p in idents)
        if len(idents) > 3:
            raise NotFound(f"{written}: a table name has at most three parts (source.schema.table)")
        sources = [self._source(idents[0], written)] if len(idents) == 3 else self.search_path
        schema = idents[-2] if len(idents) >= 2 else exp.to_identifier(DEFAULT_SCHEMA)
        # a name not found is looked up once more in table lists read now (not the throttled re-read), so that
        # a table or schema created a moment ago is found by the very next query
        for force in (False, True):
            for source in sources:
                found = self._find(source, schema, idents[-1], lake_listing, consulted, force=force)
                if found:
                    return protect(found)
        raise NotFound(f"table {written} does not exist{self._suggest(idents, lake_listing)}")

    def _source(self, ident: exp.Identifier, written: str) -> str:
        for source in self.sources:
            if source == ident.name or (not ident.quoted and source.lower() == ident.name.lower()):
                return source
        close = difflib.get_close_matches(ident.name.lower(), [s.lower() for s in self.sources], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise NotFound(
            f"unknown source {ident.name!r} in {written}{hint} (sources: {', '.join(self.sources)})"
        )

    def _find(
        self,
        source: str,
        schema: exp.Identifier,
        name: exp.Identifier,
        lake_listing: Mapping[tuple[str, str], object],
        consulted: dict[str, bool] | None = None,
        force: bool = False,
    ) -> TableRef | None:
        key = (_fold(schema), _fold(name))
        kind = LAKE if source == self.lake_name else POSTGRES
        if key in self.tables(source, lake_listing=lake_listing):
            if kind == POSTGRES and consulted is not None:
                consulted.setdefault(source, False)
            return TableRef(source, kind, *key)
        if kind == LAKE:
            return None
        if consulted is not None:
            consulted[source] = True
        if key in self.tables(source, refresh=True, force=force):
            return TableRef(source, kind, *key)
        return None

    def _suggest(self, idents: list[exp.Identifier], lake_listing: Mapping[tuple[str, str], object]) -> str:
        wanted = ".".join(i.name.lower() for i in idents)
        names: list[str] = []
        down: list[str] = []
        for source in self.sources:
            try:
                for schema, name in self.tables(source, lake_listing=lake_listing):
                    if schema not in SYSTEM_SCHEMAS:
                        names.append(f"{source}.{schema}.{name}")
            except Unavailable:
                down.append(source)
        tails = {n: ".".join(n.split(".")[-len(idents) :]).lower() for n in names}
        close = [n for n in names if tails[n] == wanted]  # same name, different case or source
        close += [
            n
            for n in names
            if n not in close and difflib.SequenceMatcher(None, tails[n], wanted).ratio() >= 0.75
        ]
        unread = f"; source {', '.join(down)} could not be read (unavailable)" if down else ""
        if not close:
            searched = [s for s in self.search_path if s not in down]
            return f" in any source (searched {', '.join(searched) or 'none'}){unread}"
        return f"; did you mean {', '.join(_pretty(n) for n in close[:3])}?{unread}"


def protect(ref: TableRef) -> TableRef:
    """``ref``, unless it is a PostgreSQL relation that holds secrets (:data:`PROTECTED`): then 403."""
    if ref.kind != POSTGRES:
        return ref
    hidden = (
        ref.name in PROTECTED.get(ref.schema, ())
        or ref.name in PROTECTED_ANYWHERE
        or (ref.schema == "pg_catalog" and ref.name.startswith(PROTECTED_PREFIXES))
    )
    if hidden:
        raise Forbidden(
            f"{ref.schema}.{ref.name} (of source {ref.source!r}) is not readable through the gateway: it holds "
            "secrets or other sessions' data (passwords, connection options, configuration, query texts, "
            "sampled values); SHOW TABLES, DESCRIBE and GET /v1/schema describe what can be queried"
        )
    return ref


def _fold(ident: exp.Identifier) -> str:
    return ident.name if ident.quoted else ident.name.lower()


def _pretty(full: str) -> str:
    return ".".join(
        p if p == p.lower() and p.replace("_", "a").isalnum() else f'"{p}"' for p in full.split(".")
    )

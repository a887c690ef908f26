"""The lake cache: hot lake data kept in the gateway's DuckDB memory, keyed by Iceberg snapshot so it is never stale.

What is cached is a lake table at one snapshot: a plain Iceberg table, or a lakegate state table (exact at every
commit, read as plain Iceberg, :mod:`lakegate.gateway.lake`). A change log is never cached (it changes at every
commit). A version is (table uuid, snapshot id, schema id); a query only ever reads the version its own metadata
lookup named. Data files are immutable, so a commit does not invalidate an entry: a newer snapshot of the same
table and schema is read through it, its rows less those the new position deletes hide plus the new data files
from Parquet (:mod:`lakegate.gateway.cache_delta`); once too much of it comes from Parquet the newer snapshot is
loaded whole and replaces the entry. An older snapshot of the same schema (time travel, the consistent cut)
is read through the entry the same way, never loaded. A schema change or a re-created table retires the entry at
once.

Life of an entry: a query that finds no entry it can read the current version through reads Parquet as before and
asks for a load (single-flight per table); one loader thread runs ``CREATE TABLE lakegate_cache.tN AS SELECT
... FROM iceberg_scan(<metadata file>)`` (each row with its data file and position) and measures the bytes DuckDB's
``IN_MEMORY_TABLE`` memory grew by. Queries that use an entry pin it (a :class:`Lease` per query, released when
the query's execution closes). When a newer version of the table is loaded, older entries are retired and dropped
once no query pins them. The byte budget is kept by
evicting least-recently-used unpinned entries; entries used in the last ``RECENT_SECONDS`` are not evicted to make
room for a new load (the load is skipped and the table read from Parquet), so that a working set larger than the
budget does not turn into a reload per query.

Small PostgreSQL tables of DuckDB-route queries (the dimension of a federated join) are cached too, keyed by
the server's ``pg_current_snapshot()``: a query takes that token in one round trip, and an entry is served only
for the exact token it was loaded at. Equal tokens mean that no transaction that writes began or ended anywhere
on the server in between, so the copy is exactly what a live read would return; a load is kept only if the
token is the same before and after it. A write makes the next query read the table live (and see the write at
once). Tables that keep changing are backed off (30 s, doubling to 10 min), views are never cached (they may
call now() or random()), and tables over 256 MiB or a quarter of the budget are always read live. On a server
that writes all the time the cost is the token round trip.

Why pins, verified with DuckDB 1.5.5: a cursor that is reading a table keeps reading it to the end after another
cursor drops it (DuckDB's catalog is MVCC; the memory is freed when the reader's transaction ends), but a query
that *binds* after the drop fails with "Table ... does not exist". A query's SQL names its cache tables at plan
time, before it binds, so the tables must outlive the plan, not just the scan. All creates and drops run on the
loader thread, which also makes the memory measured around a load that load's own.

Hand-written rather than a caching library: the entries are DuckDB tables whose lifetime depends on the queries
that pin them and on DuckDB's transactions, which no generic cache models.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from lakegate.connectors.duckdb.engine import DuckDBEngine
from lakegate.connectors.query import QueryError
from lakegate.gateway import cache_delta
from lakegate.gateway.cache_delta import Base, Files
from lakegate.gateway.cache_entries import Entry, Load, Version, estimate_bytes
from lakegate.gateway.cache_store import CacheStore, Lease, same_table

log = logging.getLogger("lakegate.gateway.cache")

PG_MAX_BYTES = 256 << 20  #: PostgreSQL tables larger than this (or than a quarter of the budget) are read live
PG_BACKOFF = (30.0, 600.0)  #: a PostgreSQL table that keeps changing is not loaded again for 30 s, doubling
PLANNED = 256  #: snapshots whose files are remembered (planning one reads its manifests)
PG_KINDS = ("r", "p", "m")  #: tables, partitioned tables, materialized views (a view may call now() or random())



class LakeCache(CacheStore):
    """The cache; ``budget`` bytes (0 disables it). Thread-safe; one loader thread does every create and drop
    (entries, pins, the budget and the loader thread are :class:`~lakegate.gateway.cache_store.CacheStore`)."""

    def __init__(
        self, engine: DuckDBEngine, budget: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        super().__init__(engine, budget, clock)
        self._pg_seen: dict[str, tuple[int, str]] = {}  #: newest (xmax, token) seen per PostgreSQL source
        self._pg_skip: dict[tuple[str, str], float] = {}  #: PostgreSQL table -> not loaded before this time
        self._pg_delay: dict[tuple[str, str], float] = {}  #: its current back-off
        self._planned: dict[tuple[str, int], Files] = {}  #: (table uuid, snapshot id) -> its files

    # ----------------------------------------------------------------------------------------- the query side

    def scan(
        self, table: Table, snapshot: Snapshot | None, travelling: bool, leases: list[Lease]
    ) -> str | None:
        """A FROM item returning ``table`` at ``snapshot`` from the cache (the entry it reads is pinned: a lease is
        added to ``leases``), or None: then the caller reads Parquet, and for the current snapshot a load is
        requested. A snapshot other than the current one (time travel, a consistent cut) is served only through
        an entry of the same table and schema, never loaded."""
        if not self.enabled or snapshot is None:
            return None
        meta = table.metadata
        namespace, name = table.name()[-2:]
        version = Version(
            (namespace, name), str(meta.table_uuid), snapshot.snapshot_id, meta.current_schema_id
        )
        now = self._clock()
        with self._lock:
            self._check_generation()
            if not travelling:
                self._observe(version, meta.last_updated_ms)
            served = self._serve(version, now, leases)
            if served is not None:
                return cache_delta.plain_sql(served)
            if travelling and snapshot.schema_id != meta.current_schema_id:
                return None  # a version under another schema: read from Parquet
            base = self._base(version)
        delta = self._delta(base, table, snapshot) if base is not None else None
        if travelling and delta is not None and delta.worth_reloading(base.rows if base is not None else 0):
            delta = None  # a version far from the entry: iceberg_scan reads its many files better
        with self._lock:
            if delta is not None and base is not None and self._entries.get(base.version) is base:
                base.pins += 1
                base.last_used = now
                self.stats.hits += 1
                self.stats.delta_hits += 1
                leases.append(Lease(self, base))
                if travelling or not delta.worth_reloading(base.rows):
                    return delta.sql
            elif travelling:
                return None  # never loaded
            else:
                delta = None
                self.stats.misses += 1
            loading = any(v.ident == version.ident for v in self._pending)
            if not loading and self._refused.get(version, 0.0) <= now:
                load = Load(version, str(table.metadata_location), estimate_bytes(table, snapshot), table=table)
                self._pending[version] = load
                self._put(load)
        return delta.sql if delta is not None else None

    def _base(self, version: Version) -> Entry | None:
        """The entry a newer ``version`` of its table can be read through: same table, same schema (lock held)."""
        found = [
            e
            for v, e in self._entries.items()
            if v.ident == version.ident and e.base is not None and same_table(v, version)
        ]
        return max(found, key=lambda e: e.loaded, default=None)  # the newest load

    def _delta(self, entry: Entry, table: Table, snapshot: Snapshot) -> cache_delta.Delta | None:
        """``snapshot`` read through ``entry`` (plans the snapshot once; outside the lock)."""
        assert entry.base is not None
        try:
            now = self._files(table, snapshot)
        except Exception as exc:  # whatever reading manifests raises: read Parquet as without the cache
            log.warning("lake cache: cannot plan %s snapshot %d: %s", ".".join(table.name()), snapshot.snapshot_id, exc)
            return None
        return cache_delta.delta_sql(entry.name, entry.base, now)

    def _files(self, table: Table, snapshot: Snapshot) -> Files:
        key = (str(table.metadata.table_uuid), snapshot.snapshot_id)
        with self._lock:
            files = self._planned.get(key)
        if files is None:
            files = cache_delta.files_of(table, snapshot)
            with self._lock:
                if len(self._planned) >= PLANNED:
                    self._planned.clear()
                self._planned[key] = files
        return files

    def _observe(self, version: Version, stamp: int) -> None:
        """``version`` is current for its table: retire older versions (newer ones are never retired)."""
        seen = self._current.get(version.ident)
        if seen is not None and (seen[1] == version or seen[0] > stamp):
            return
        self._current[version.ident] = (stamp, version)
        for old in [
            e for v, e in self._entries.items() if v.ident == version.ident and not same_table(v, version)
        ]:
            self._retire(old)  # a newer snapshot of the same table and schema is read through it until loaded

    # ------------------------------------------------------------------------ PostgreSQL tables (query side)

    def wants_postgres(self, source: str, schema: str, name: str) -> bool:
        """Whether a query reading this PostgreSQL table should ask the cache (which costs it one round trip
        for the server's snapshot): not when the table is too large or keeps changing."""
        if not self.enabled:
            return False
        with self._lock:
            return self._pg_skip.get((f"{source}.{schema}", name), 0.0) <= self._clock()

    def scan_postgres(
        self,
        source: str,
        schema: str,
        name: str,
        token: str,
        relation: str,
        probe: Callable[[], tuple[str, str, int]],
        leases: list[Lease],
    ) -> str | None:
        """The cache table holding the PostgreSQL table as of server snapshot ``token`` (pinned), or None.

        ``token`` is ``pg_current_snapshot()`` taken by this query. Two equal tokens mean that no transaction
        that writes began or ended in between, anywhere on the server, so a table read at one token reads
        the same at the other: an entry is served only for its exact token and can never be stale. On a
        server that writes all the time tokens never repeat and the table is simply read live. On a miss a
        load is requested; ``probe`` returns (token, relkind, bytes) for the loader."""
        ident = (f"{source}.{schema}", name)
        version = Version(ident, f"postgres:{source}", _xmax(token), 0, source, token)
        now = self._clock()
        with self._lock:
            self._check_generation()
            self._observe_server(source, version)
            served = self._serve(version, now, leases)
            if served is not None:
                return served
            self.stats.misses += 1
            if version not in self._pending and self._pg_skip.get(ident, 0.0) <= now:
                load = Load(version, "", 0, relation, probe)
                self._pending[version] = load
                self._put(load)
        return None

    def _observe_server(self, source: str, version: Version) -> None:
        """A newer server snapshot retires the source's entries of older ones (lock held). Only memory is at
        stake: an entry is served for its exact token alone."""
        seen = self._pg_seen.get(source)
        if seen is not None and (seen[1] == version.token or seen[0] > version.snapshot_id):
            return
        self._pg_seen[source] = (version.snapshot_id, version.token)
        now = self._clock()
        for old in [e for v, e in self._entries.items() if v.source == source and v.token != version.token]:
            if now - old.loaded < PG_BACKOFF[0]:
                self._pg_backoff(old.version.ident)  # changed right after it was loaded: it churns
            self._retire(old)

    def _pg_backoff(self, ident: tuple[str, str], seconds: float | None = None) -> None:
        """Do not load this PostgreSQL table for a while (lock held): doubling from 30 s up to 10 min."""
        delay = seconds or min(PG_BACKOFF[1], max(PG_BACKOFF[0], 2 * self._pg_delay.get(ident, 0.0)))
        self._pg_delay[ident] = delay
        self._pg_skip[ident] = self._clock() + delay

    def _check_generation(self) -> bool:
        if not super()._check_generation():
            return False
        self._pg_seen.clear()
        return True

    # ---------------------------------------------------------------------------------------- the loader

    def _load(self, load: Load) -> None:
        if load.probe is not None:
            self._load_postgres(load)
            return
        version = load.version
        with self._lock:
            if self._stopped or not same_table(self._current.get(version.ident, (0, version))[1], version):
                return  # the table was re-created or its schema changed while this one waited
            if not self._make_room(load.estimate, recent=True):
                self._refuse(version)
                return
            generation = self._generation
        started = time.monotonic()
        try:
            files = self._planned_files(load)
            numbers = cache_delta.numbering(files)
            name, size, rows = self._create(f"({cache_delta.load_sql(load.location, numbers)})")
            base = self._described(name, files, numbers)
        except (QueryError, LoadMismatch) as exc:
            with self._lock:
                self.stats.load_failures += 1
                self._refuse(version, skipped=False)
            log.warning("lake cache: cannot load %s.%s: %s", *version.ident, exc)
            return
        entry = Entry(version, name, size if size > 0 else load.estimate, rows, self._clock(), generation, base=base)
        entry.loaded = self._clock()
        self._admit(entry, time.monotonic() - started)

    def _planned_files(self, load: Load) -> Files:
        """The data and delete files of the snapshot a load reads; LoadMismatch when its manifests cannot be read."""
        snapshot = load.table.snapshot_by_id(load.version.snapshot_id) if load.table is not None else None
        if load.table is None or snapshot is None:
            raise LoadMismatch(f"snapshot {load.version.snapshot_id} is not in the metadata the load was asked with")
        try:
            return self._files(load.table, snapshot)
        except Exception as exc:  # whatever reading manifests raises (a file expired meanwhile, storage down)
            raise LoadMismatch(f"cannot plan snapshot {load.version.snapshot_id}: {exc}") from exc

    def _described(self, name: str, files: Files, numbers: dict[str, int]) -> Base:
        """The base of a just created cache table; dropped and LoadMismatch raised when a row's data file is not
        one the manifests name (then its rows could not be told apart from a newer snapshot's)."""
        schema, table = name.split(".")
        try:
            strays = self.engine.value(f"SELECT count(*) FROM {name} WHERE {cache_delta.FILE} IS NULL")
            columns = self.engine.value(
                "SELECT list([column_name, data_type] ORDER BY column_index) FROM duckdb_columns() "
                f"WHERE schema_name = '{schema}' AND table_name = '{table}'"
            )
        except QueryError:
            self._try_drop(name)
            raise
        if strays:
            self._try_drop(name)
            raise LoadMismatch(f"{strays} row(s) come from data files the snapshot's manifests do not name")
        kept = tuple((c, t) for c, t in columns or () if c not in (cache_delta.FILE, cache_delta.POS))
        return Base(files, numbers, kept)

    def _load_postgres(self, load: Load) -> None:
        """Copy a PostgreSQL table into DuckDB; kept only if the server's snapshot token is the version's both
        before and after the copy (then the copy is exactly the table at that token)."""
        version = load.version
        assert load.probe is not None
        try:
            token, kind, size = load.probe()
        except QueryError as exc:
            with self._lock:
                self.stats.load_failures += 1
                self._pg_backoff(version.ident)
            log.warning("lake cache: cannot size %s.%s: %s", *version.ident, exc)
            return
        with self._lock:
            if self._stopped:
                return
            if kind not in PG_KINDS or size > min(PG_MAX_BYTES, self.budget // 4):
                self.stats.skipped += 1
                self._pg_backoff(version.ident, PG_BACKOFF[1])  # a view, or too large: read it live
                return
            if token != version.token:
                self._pg_backoff(version.ident)  # the server moved on since the query: it is busy
                return
            if not self._make_room(size * 2, recent=True):
                self._refuse(version)
                return
            generation = self._generation
        started = time.monotonic()
        try:
            name, size, rows = self._create(load.relation)
        except QueryError as exc:
            with self._lock:
                self.stats.load_failures += 1
                self._pg_backoff(version.ident)
            log.warning("lake cache: cannot load %s.%s: %s", *version.ident, exc)
            return
        try:
            after = load.probe()[0]
        except QueryError:
            after = ""
        if after != version.token:  # a writing transaction began or ended during the copy
            with self._lock:
                self._pg_backoff(version.ident)
            self._try_drop(name)
            return
        with self._lock:
            self._pg_delay.pop(version.ident, None)
        entry = Entry(version, name, max(size, 1), rows, self._clock(), generation)
        entry.loaded = self._clock()
        self._admit(entry, time.monotonic() - started)


class LoadMismatch(Exception):
    """A loaded lake table's rows cannot be matched to its snapshot's data files."""


def _xmax(token: str) -> int:
    """The xmax of a ``pg_current_snapshot()`` text (xmin:xmax:xip,...)."""
    try:
        return int(token.split(":")[1])
    except (IndexError, ValueError):
        return 0

"""The lake cache's store: its entries (DuckDB tables in the gateway's database), their pins, the byte budget and
eviction, and the one loader thread that creates and drops every cache table. What an entry holds and when one is
loaded is :mod:`lakegate.gateway.cache` (lake tables and small PostgreSQL tables); its module docstring says why
entries are pinned and why this is hand-written.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import queue
import threading
import time
from collections.abc import Callable
from typing import Any

from lakegate.connectors.duckdb.engine import DuckDBEngine, DuckDBResult
from lakegate.connectors.query import QueryError
from lakegate.gateway.cache_entries import Entry, Load, Stats, Version

log = logging.getLogger("lakegate.gateway.cache")

SCHEMA = "lakegate_cache"
RECENT_SECONDS = 10.0  #: entries used this recently are not evicted to make room for another load
RETRY_SECONDS = 30.0  #: a version that could not be loaded (no room, error) is not tried again for this long


class Lease:
    """One query's pin on one entry; :meth:`release` (idempotent) when the query's execution is closed."""

    def __init__(self, cache: CacheStore, entry: Entry) -> None:
        self._cache = cache
        self._entry: Entry | None = entry

    def release(self) -> None:
        entry, self._entry = self._entry, None
        if entry is not None:
            self._cache._unpin(entry)


class CacheStore:
    """Entries, pins, budget and the loader thread; ``budget`` bytes (0 disables it). Thread-safe. Subclasses
    say what a load does (:meth:`_load`)."""

    def __init__(
        self, engine: DuckDBEngine, budget: int, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.engine = engine
        self.budget = max(0, budget)
        self.stats = Stats()
        self._clock = clock
        self._lock = threading.Condition()
        self._entries: dict[Version, Entry] = {}  #: servable entries
        self._retiring: dict[str, Entry] = {}  #: retired or evicted, dropped once unpinned
        self._current: dict[tuple[str, str], tuple[int, Version]] = {}  #: newest version seen per table
        self._pending: dict[Version, Load] = {}  #: queued or loading (single flight)
        self._refused: dict[Version, float] = {}  #: version -> monotonic time before which it is not retried
        self._tasks: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._names = itertools.count(1)
        self._generation = engine.generation
        self._running: DuckDBResult | None = None
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._busy = 0  #: tasks queued or running
        self.recent_seconds = RECENT_SECONDS

    @property
    def enabled(self) -> bool:
        return self.budget > 0

    def _serve(self, version: Version, now: float, leases: list[Lease]) -> str | None:
        """The entry's table name, pinned for the query (lock held); None when ``version`` is not cached."""
        entry = self._entries.get(version)
        if entry is None:
            return None
        entry.pins += 1
        entry.last_used = now
        self.stats.hits += 1
        leases.append(Lease(self, entry))
        return entry.name

    def _retire(self, entry: Entry) -> None:
        """Called with the lock held: the entry is no longer served; it is dropped once unpinned."""
        if entry.retired:
            return
        entry.retired = True
        self._entries.pop(entry.version, None)
        self._retiring[entry.name] = entry
        if entry.pins == 0:
            self._put(entry)

    def _unpin(self, entry: Entry) -> None:
        with self._lock:
            entry.pins -= 1
            if entry.retired and entry.pins == 0 and entry.name in self._retiring:
                self._put(entry)

    def sweep(self, present: set[tuple[str, str]]) -> None:
        """Retire the entries of tables that are no longer in the lake's catalog (dropped, re-snapshotted)."""
        with self._lock:
            for entry in [e for v, e in self._entries.items() if v.ident not in present and not v.source]:
                self._retire(entry)
            for ident in [i for i, (_, v) in self._current.items() if i not in present and not v.source]:
                del self._current[ident]

    def _check_generation(self) -> bool:
        """DuckDB was rebuilt (a PostgreSQL source came back): every table of the old database is gone."""
        if self.engine.generation == self._generation:
            return False
        self._generation = self.engine.generation
        self._entries.clear()
        self._retiring.clear()
        self._current.clear()
        return True

    # ---------------------------------------------------------------------------------------- the loader

    def _put(self, task: Load | Entry) -> None:
        """Queue a load or a drop for the loader thread (called with the lock held)."""
        self._busy += 1
        self._ensure_thread()
        self._tasks.put(task)

    def _ensure_thread(self) -> None:
        if self._thread is None and not self._stopped:
            self._thread = threading.Thread(target=self._run, name="lakegate-lake-cache", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        created = False
        while True:
            task = self._tasks.get()
            if task is None:
                return
            try:
                if isinstance(task, Entry):
                    self._drop(task)
                    continue
                if not created:
                    self.engine.execute(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}")
                    created = True
                self._load(task)
            except QueryError as exc:  # the engine failed (closing, out of memory): count it, keep serving
                log.warning("lake cache: %s", exc)
            except Exception:
                log.exception("lake cache: unexpected failure")
            finally:
                with self._lock:
                    if isinstance(task, Load):
                        self._pending.pop(task.version, None)
                    self._busy -= 1
                    self._lock.notify_all()

    def _load(self, load: Load) -> None:
        """Run one load on the loader thread (creates the cache table with :meth:`_create`, admits it)."""
        raise NotImplementedError

    def _create(self, source: str) -> tuple[str, int, int]:
        """``CREATE TABLE <new cache table> AS SELECT * FROM <source>``: its name, the DuckDB memory it took and
        its rows. Unpinned retired entries are dropped first; a failed table is dropped and the error raised."""
        for entry in self._drops():
            self._drop(entry)
        name = f"{SCHEMA}.t{next(self._names)}"
        try:
            before = self.engine.table_memory()
            self.engine.execute(f"CREATE TABLE {name} AS SELECT * FROM {source}", self._track)
            size = self.engine.table_memory() - before
            rows = int(self.engine.value(f"SELECT count(*) FROM {name}") or 0)
        except QueryError:
            self._try_drop(name)
            raise
        finally:
            self._running = None
        return name, size, rows

    def _track(self, result: DuckDBResult) -> None:
        self._running = result

    def _admit(self, entry: Entry, seconds: float) -> None:
        version = entry.version
        with self._lock:
            self.stats.loads += 1
            self.stats.load_seconds += seconds
            if self._stopped or entry.generation != self._generation:
                return  # shutting down, or its database is gone
            entry.retired = True  # not served until admitted below
            self._retiring[entry.name] = entry
            current = self._current.get(version.ident, (0, version))[1]
            if current != version and not (entry.base is not None and same_table(current, version)):
                self._put(entry)  # superseded while loading (by another table or schema, or a PostgreSQL write)
                return
            older = [e for v, e in self._entries.items() if v.ident == version.ident and v != version and e.base]
            for old in older:  # the newer load replaces them
                self._retire(old)
            if not self._make_room(0, recent=False):
                self._refuse(version)
                self._put(entry)  # larger than what the budget can hold now
                return
            del self._retiring[entry.name]
            entry.retired = False
            self._entries[version] = entry
        log.info(
            "lake cache: loaded %s.%s snapshot %d (%d rows, %d bytes) in %.2f s",
            *version.ident,
            version.snapshot_id,
            entry.rows,
            entry.bytes,
            seconds,
        )

    def _refuse(self, version: Version, *, skipped: bool = True) -> None:
        """Do not try ``version`` again for RETRY_SECONDS (called with the lock held)."""
        now = self._clock()
        if skipped:
            self.stats.skipped += 1
        if len(self._refused) > 1000:
            self._refused = {v: t for v, t in self._refused.items() if t > now}
        self._refused[version] = now + RETRY_SECONDS

    def _make_room(self, wanted: int, *, recent: bool) -> bool:
        """Evict LRU unpinned entries until ``wanted`` more bytes fit, or evict nothing if they cannot be made
        to fit; with ``recent``, entries used in the last ``recent_seconds`` are spared. Lock held."""
        now = self._clock()
        excess = self._held() + wanted - self.budget
        if excess <= 0:
            return True
        victims = [
            e
            for e in sorted(self._entries.values(), key=lambda e: e.last_used)
            if not e.pins and not (recent and now - e.last_used < self.recent_seconds)
        ]
        if sum(e.bytes for e in victims) < excess:
            return False
        for entry in victims:
            if excess <= 0:
                break
            excess -= entry.bytes
            self.stats.evictions += 1
            self._retire(entry)
        return True

    def _held(self) -> int:
        """Bytes that stay in DuckDB: servable entries, and retired ones still pinned (the unpinned ones are
        dropped before the next load)."""
        pinned = sum(e.bytes for e in self._retiring.values() if e.pins)
        return sum(e.bytes for e in self._entries.values()) + pinned

    def _drops(self) -> list[Entry]:
        with self._lock:
            return [e for e in self._retiring.values() if e.pins == 0]

    def _drop(self, entry: Entry) -> None:
        with self._lock:
            if entry.pins or self._retiring.get(entry.name) is not entry:
                return
            del self._retiring[entry.name]
            if entry.generation != self._generation:
                return  # its database is gone
        self._try_drop(entry.name)

    def _try_drop(self, name: str) -> None:
        try:
            self.engine.execute(f"DROP TABLE IF EXISTS {name}")
        except QueryError as exc:
            log.warning("lake cache: cannot drop %s: %s", name, exc)

    # ------------------------------------------------------------------------------------------ reporting

    def entries(self) -> list[Entry]:
        """The servable entries, least recently used first (a copy)."""
        with self._lock:
            return [dataclasses.replace(e) for e in sorted(self._entries.values(), key=lambda e: e.last_used)]

    @property
    def bytes(self) -> int:
        return sum(e.bytes for e in self._entries.values()) + sum(e.bytes for e in self._retiring.values())

    def figures(self) -> dict[str, Any]:
        """For /v1/status and /metrics."""
        with self._lock:
            self._check_generation()
            s = self.stats
            return {
                "enabled": self.enabled,
                "budget_bytes": self.budget,
                "entries": len(self._entries),
                "bytes": self.bytes,
                "retiring": len(self._retiring),
                "loading": len(self._pending),
                "hits": s.hits,
                "delta_hits": s.delta_hits,
                "misses": s.misses,
                "loads": s.loads,
                "load_failures": s.load_failures,
                "skipped": s.skipped,
                "evictions": s.evictions,
                "load_seconds": round(s.load_seconds, 3),
                "tables": [
                    {
                        "table": ".".join(e.version.ident),
                        "snapshot_id": e.version.snapshot_id,
                        "rows": e.rows,
                        "bytes": e.bytes,
                        "pins": e.pins,
                    }
                    for e in sorted(self._entries.values(), key=lambda e: e.version.ident)
                ],
            }

    def wait_idle(self, timeout: float = 60.0) -> bool:
        """Wait until no load or drop is queued or running (tests, benchmarks); True if so within ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._lock.wait(left)
        return True

    def close(self) -> None:
        with self._lock:
            self._stopped = True
            running = self._running
        if running is not None:
            running.cancel()
        self._tasks.put(None)
        if self._thread is not None:
            self._thread.join(10)


def same_table(a: Version, b: Version) -> bool:
    """Versions of one lake table with one schema: the older's data files are the newer's, less the removed."""
    return not a.source and (a.ident, a.uuid, a.schema_id) == (b.ident, b.uuid, b.schema_id)

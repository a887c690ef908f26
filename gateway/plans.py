"""The plan cache: a statement's parse, guard, name resolution and routing, kept by SQL text.

BI dashboards send the same SQL again and again; parsing, guarding and routing it with sqlglot costs about a
millisecond of Python each time. What is kept is a :class:`lakegate.gateway.route.Routed`: the route and the engine SQL
*without* the lake views. The views are rendered for every query from the tables' current metadata (so a commit,
a compaction, a schema change or a cache load is seen at once), which is why a cached plan can never be stale about
the lake's data or columns.

What a cached routing does depend on is which tables exist: name resolution (search path, "does
``public.orders`` mean the lake table or the PostgreSQL one") and the route follow from it. The key is therefore
the SQL text and the row cap, and an entry is only served while the fingerprint of the lake's table names and of
each PostgreSQL source's table list (the catalog's, refreshed every few seconds as before) is the one it was
routed under. A routing whose time travel evaluates an expression (``now() - interval '1 hour'``) is not kept:
its meaning changes with time. The guard's decision depends only on the statement and the gateway's
configuration, so it is kept with the routing. Errors are not cached.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lakegate.gateway.parse import Statement
from lakegate.gateway.route import Routed

MAX_SQL = 64 * 1024  #: longer statements are not kept (generated SQL is rarely repeated verbatim)


@dataclass(frozen=True)
class Cached:
    statement: Statement
    routed: Routed
    fingerprint: Any


def _weight(sql: str, routed: Routed) -> int:
    """Bytes an entry holds, roughly: its texts (the statement's AST is not kept) and a fixed overhead."""
    texts = (routed.body, routed.head, routed.ctes, routed.main, *routed.pg_split)
    return 1024 + 2 * len(sql) + sum(len(t) for t in texts) + 256 * (len(routed.lakes) + len(routed.pgs))


class PlanCache:
    """An LRU map ``(sql, max_rows, time zone) -> routing``, valid under one fingerprint of the catalog, bounded
    in entries and in bytes (``max_bytes``)."""

    def __init__(self, size: int = 512, max_bytes: int = 32 * 2**20) -> None:
        self.size = size
        self.max_bytes = max_bytes
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self._entries: OrderedDict[tuple[str, int | None, str], Cached] = OrderedDict()
        self._weights: dict[tuple[str, int | None, str], int] = {}
        self._lock = threading.Lock()

    def get(
        self, sql: str, max_rows: int | None, fingerprint: Callable[[Routed], Any], zone: str = "UTC"
    ) -> Cached | None:
        """The routing kept for ``sql`` (in time zone ``zone``), if ``fingerprint(routing)`` (the catalog now) is
        the one it was kept under. ``fingerprint`` is only called when there is an entry."""
        key = (sql, max_rows, zone)
        with self._lock:
            found = self._entries.get(key)
        if found is not None and found.fingerprint != fingerprint(found.routed):
            found = None
        with self._lock:
            if found is None:
                self.misses += 1
                return None
            if key in self._entries:
                self._entries.move_to_end(key)
            self.hits += 1
            return found

    def put(
        self,
        sql: str,
        max_rows: int | None,
        fingerprint: Any,
        statement: Statement,
        routed: Routed,
        zone: str = "UTC",
    ) -> None:
        weight = _weight(sql, routed)
        if self.size <= 0 or len(sql) > MAX_SQL or not routed.literal_travel or weight > self.max_bytes:
            return
        key = (sql, max_rows, zone)
        kept = dataclasses.replace(statement, ast=None)  # the AST (~100 bytes per character of SQL) is done with
        with self._lock:
            self.bytes += weight - self._weights.get(key, 0)
            self._entries[key] = Cached(kept, routed, fingerprint)
            self._weights[key] = weight
            self._entries.move_to_end(key)
            while len(self._entries) > self.size or self.bytes > self.max_bytes:
                old, _ = self._entries.popitem(last=False)
                self.bytes -= self._weights.pop(old)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._weights.clear()
            self.bytes = 0

    def figures(self) -> dict[str, int]:
        with self._lock:
            return {"entries": len(self._entries), "bytes": self.bytes, "hits": self.hits, "misses": self.misses}

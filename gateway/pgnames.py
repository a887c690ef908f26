"""What the PostgreSQL sources could run by name, for the call guard (:mod:`lakegate.gateway.callguard`).

Read from each source's catalogs (``pg_proc``, ``pg_operator``, ``pg_cast``: readable by every role) and kept
``TTL`` seconds: the names of all functions (attribute notation ``t.f`` is a call only when ``f`` is one) and
the types that a cast outside ``pg_catalog`` converts to (``x::t`` runs that cast's function: casts are found by
type, whatever the ``search_path``). A source that cannot be read is asked again
after ``RETRY`` seconds; meanwhile the guard knows only DuckDB's and its own lists of names.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.query import QueryError

TTL = 300.0
RETRY = 60.0

_FUNCTIONS = "SELECT DISTINCT proname::text FROM pg_catalog.pg_proc"
_CASTS = """
SELECT DISTINCT t.typname::text, p.proname::text
FROM pg_catalog.pg_cast c
JOIN pg_catalog.pg_proc p ON p.oid = c.castfunc
JOIN pg_catalog.pg_type t ON t.oid = c.casttarget
WHERE p.pronamespace <> 'pg_catalog'::pg_catalog.regnamespace
"""


@dataclass(frozen=True)
class SourceNames:
    """The names of every source together."""

    functions: frozenset[str] = frozenset()  #: every function name of every schema
    #: type -> the functions outside pg_catalog of the casts that convert to it
    casts: dict[str, frozenset[str]] = field(default_factory=dict)


class NamesReader:
    """Reads and keeps :class:`SourceNames` of the sources ``postgres``; thread-safe."""

    def __init__(self, postgres: dict[str, PostgresEngine]) -> None:
        self.postgres = postgres
        self._lock = threading.Lock()
        self._read: dict[str, tuple[float, SourceNames]] = {}
        self._failed: dict[str, float] = {}

    def __call__(self) -> SourceNames:
        parts = [self._source(name, engine) for name, engine in self.postgres.items()]
        known = [p for p in parts if p is not None]
        casts: dict[str, set[str]] = {}
        for part in known:
            for typ, procs in part.casts.items():
                casts.setdefault(typ, set()).update(procs)
        return SourceNames(
            frozenset().union(*(p.functions for p in known)),
            {typ: frozenset(procs) for typ, procs in casts.items()},
        )

    def _source(self, name: str, engine: PostgresEngine) -> SourceNames | None:
        now = time.monotonic()
        with self._lock:
            read = self._read.get(name)
            if read is not None and now - read[0] < TTL:
                return read[1]
            failed = self._failed.get(name)
            if failed is not None and now - failed < RETRY:
                return read[1] if read is not None else None
        try:
            names = _read(engine)
        except QueryError:
            with self._lock:
                self._failed[name] = now
            return read[1] if read is not None else None
        with self._lock:
            self._read[name] = (now, names)
            self._failed.pop(name, None)
        return names


def _read(engine: PostgresEngine) -> SourceNames:
    casts: dict[str, set[str]] = {}
    for typ, proc in engine.fetch(_CASTS):
        casts.setdefault(str(typ), set()).add(str(proc))
    return SourceNames(
        frozenset(str(row[0]) for row in engine.fetch(_FUNCTIONS)),
        {typ: frozenset(procs) for typ, procs in casts.items()},
    )

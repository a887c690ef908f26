"""The lake cache's records (:mod:`lakegate.gateway.cache`): table versions, entries, counters, and the size estimate a
load is admitted on (the real size is measured after the load)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from lakegate.gateway.cache_delta import Base

OVERHEAD = 1.4  #: DuckDB's in-memory bytes per raw value byte (measured: 10 M rows x 28 B -> 385 MB)
_WIDTHS: dict[type, int] = {
    BooleanType: 1,
    IntegerType: 4,
    DateType: 4,
    FloatType: 4,
    LongType: 8,
    DoubleType: 8,
    TimeType: 8,
    TimestampType: 8,
    TimestamptzType: 8,
    UUIDType: 16,
    StringType: 32,
    BinaryType: 32,
}


@dataclass(frozen=True)
class Version:
    """One immutable state of an Iceberg table, or of a PostgreSQL table: what a cache entry holds.

    For a PostgreSQL table ``source`` names the source, ``ident`` is (source.schema, table) and ``token`` the
    server's ``pg_current_snapshot()`` when it was read (``snapshot_id`` its xmax, for display)."""

    ident: tuple[str, str]
    uuid: str
    snapshot_id: int
    schema_id: int
    source: str = ""
    token: str = ""


@dataclass
class Entry:
    """A version held in DuckDB: the table ``name``; pinned by ``pins`` queries; ``retired`` when no longer
    served (dropped once unpinned); ``generation`` of the DuckDB database it lives in."""

    version: Version
    name: str  #: the DuckDB table, schema-qualified
    bytes: int
    rows: int
    last_used: float
    generation: int
    pins: int = 0
    retired: bool = False
    loaded: float = 0.0  #: when a PostgreSQL table's entry was loaded (clock of the cache)
    base: Base | None = None  #: a lake table's files at its snapshot, to read newer snapshots through it


@dataclass
class Stats:
    """Counters since the start (``/v1/status`` and ``/metrics``)."""

    hits: int = 0
    delta_hits: int = 0  #: hits at a newer snapshot than the entry's (its files and the deletes since)
    misses: int = 0
    loads: int = 0
    load_failures: int = 0
    skipped: int = 0  #: loads not done because the budget was held by recently used or pinned entries
    evictions: int = 0
    load_seconds: float = 0.0


@dataclass
class Load:
    """A requested load: the version, the metadata file that has it as its current snapshot, its estimate.

    A PostgreSQL table's load reads ``relation`` (DuckDB's name of the attached table) instead, and ``probe``
    returns the server's snapshot token, the relation's kind and its size: the load is kept only if the token is the
    version's both before and after the read."""

    version: Version
    location: str
    estimate: int
    relation: str = ""
    probe: Callable[[], tuple[str, str, int]] | None = None
    table: Table | None = None  #: a lake table's metadata, whose current snapshot is the version's


def estimate_bytes(table: Table, snapshot: Snapshot) -> int:
    """DuckDB memory a table's snapshot will take, from its schema and row count (checked after the load)."""
    summary = snapshot.summary.additional_properties if snapshot.summary else {}
    rows = int(summary.get("total-records", 0) or 0)
    width = 12  # the row's data file number and position (lakegate.gateway.cache_delta)
    for f in table.schema().fields:
        typ = f.field_type
        if isinstance(typ, DecimalType):
            width += 8 if typ.precision <= 18 else 16
        else:
            width += _WIDTHS.get(type(typ), 48)  # lists, maps, structs: a guess, measured after the load
    return int(rows * width * OVERHEAD)

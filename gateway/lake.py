"""The lake as the gateway sees it: which Iceberg tables exist, where their metadata is now, and the DuckDB SQL
that reads each one, merge-on-read state tables included, at the current snapshot or a past one.

Freshness: every query looks up the tables' current metadata locations, so it sees every commit made before it
started. With pyiceberg's SQL catalog one query on the catalog's ``iceberg_tables`` table (the JDBC catalog
schema, shared by the Java and Python implementations) lists every table and its location; other catalogs
(REST, Glue) are asked table by table. Parsed metadata is cached by location, so an unchanged table costs nothing.

Every table is read as the plain Iceberg table it is, DuckDB applying position deletes: a state table
(``lakegate.kind=state``) is exact at every commit (the writer follows each change-log commit with a row delta on
it, issue 12), so the gateway reads exactly what any other Iceberg engine reads. A state table can be behind its
change log only while a worker that stopped between its two commits has not started again, or in a lake written by
the first version before its worker's first start (which catches it up); meanwhile it reads as of its stamp,
consistent and older (``/v1/status`` shows ``committed_lsn`` and ``folded_lsn``, the state's stamp).

A table (never a change log, which grows at every commit) can come from somewhere other than Parquet:
:func:`view_sql` takes a ``cached`` lookup (the gateway's lake cache, :mod:`lakegate.gateway.cache`) that may give a
FROM item returning exactly that snapshot from memory (an in-memory table, or one holding an older snapshot of the
table with the newer files and deletes applied).

Time travel: ``FOR VERSION AS OF <snapshot id>`` or ``FOR TIMESTAMP AS OF <time>``, the table's own snapshots; a
state table's snapshot is the source table as of the position stamped on it.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import IcebergTables, SqlCatalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot, ancestors_of
from sqlalchemy import select
from sqlalchemy.sql.expression import ClauseElement

from lakegate.connectors.changes import Position
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg.schema import CHANGELOG, CHANGELOG_SUFFIX, STATE
from lakegate.connectors.iceberg.writer import PROP_LSN, PROP_SEQ
from lakegate.gateway.errors import BadRequest, GatewayError, NotFound, Unavailable

PLAIN = "plain"
#: (table, snapshot, travelling) -> a DuckDB FROM item returning exactly that snapshot, or None to read Parquet
Cached = Callable[[Table, Snapshot | None, bool], str | None]


@dataclass(frozen=True)
class TimeTravel:
    """A past version of a lake table: a change-log snapshot id, or a point in time (ms since the epoch)."""

    snapshot_id: int | None = None
    timestamp_ms: int | None = None

    def label(self) -> str:
        if self.snapshot_id is not None:
            return f"version {self.snapshot_id}"
        stamp = datetime.datetime.fromtimestamp((self.timestamp_ms or 0) / 1000, datetime.UTC)
        return f"timestamp {stamp.isoformat()}"


@dataclass(frozen=True)
class LakeEntry:
    """One user-visible lake table with everything needed to read it now."""

    namespace: str
    name: str
    kind: str  #: state | changelog | plain
    table: Table
    changelog: Table | None  #: the change log of a state table
    key: tuple[str, ...]
    source: str | None

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.table.schema().fields]

    @property
    def history(self) -> Table:
        """The table whose commits say what the lake holds (the change log, for a state table: its stamp is what
        the worker committed, its properties carry the worker's records)."""
        return self.changelog if self.changelog is not None else self.table


class Lake:
    """The lake's catalog, read for the gateway; thread-safe."""

    def __init__(self, lake_settings: Any) -> None:
        self.settings = lake_settings
        self._catalog: Catalog | None = None
        self._tables: dict[tuple[str, str], Table] = {}
        self._lock = threading.Lock()
        self._compiled: dict[str, str] = {}  #: catalog_rows' SQL by name

    @property
    def catalog(self) -> Catalog:
        if self._catalog is None:
            try:
                self._catalog = lake_catalog.from_settings(self.settings)
            except Exception as exc:  # LakeError and whatever the catalog implementation raises
                raise Unavailable(f"the lake catalog cannot be opened: {exc}") from exc
        return self._catalog

    def listing(self) -> dict[tuple[str, str], str | None]:
        """(namespace, table) -> current metadata location (None when the catalog does not say cheaply)."""
        try:
            catalog = self.catalog
            if isinstance(catalog, SqlCatalog):
                return {(ns, name): loc for ns, name, loc in self._sql_listing(catalog) if "." not in ns}
            out: dict[tuple[str, str], str | None] = {}
            for namespace in catalog.list_namespaces():
                for ident in catalog.list_tables(namespace):
                    out[(".".join(ident[:-1]), ident[-1])] = None
            return out
        except GatewayError:
            raise
        except Exception as exc:
            raise Unavailable(f"cannot list the lake's tables: {exc}") from exc

    def _sql_listing(self, catalog: SqlCatalog) -> list[tuple[str, str, str]]:
        return self.catalog_rows(
            "listing",
            lambda: select(
                IcebergTables.table_namespace, IcebergTables.table_name, IcebergTables.metadata_location
            ).where(IcebergTables.catalog_name == catalog.name),
        )

    def catalog_rows(self, name: str, statement: Callable[[], ClauseElement]) -> list[tuple[Any, ...]]:
        """The rows of a query on the SQL catalog's tables that runs for every request (named ``name``; built by
        ``statement()`` and compiled once, its values bound as literals) through a pooled DB-API connection: a
        fifth of the cost of an ORM session or of building and compiling the statement each time."""
        catalog = self.catalog
        assert isinstance(catalog, SqlCatalog)
        sql = self._compiled.get(name)
        if sql is None:
            compiled = statement().compile(dialect=catalog.engine.dialect, compile_kwargs={"literal_binds": True})
            sql = self._compiled[name] = str(compiled)
        conn = catalog.engine.raw_connection()
        try:
            cursor = conn.cursor()
            cursor.execute(sql)
            rows = cursor.fetchall()
            cursor.close()
            return [tuple(row) for row in rows]
        finally:
            conn.close()

    def load(self, namespace: str, name: str, location: str | None) -> Table:
        """The table at ``location`` (cached), or freshly loaded when the location is unknown or changed."""
        key = (namespace, name)
        with self._lock:
            cached = self._tables.get(key)
        if cached is not None and location is not None and cached.metadata_location == location:
            return cached
        try:
            table = self.catalog.load_table((namespace, name))
        except NoSuchTableError as exc:
            raise NotFound(f"lake table {namespace}.{name} no longer exists") from exc
        except Exception as exc:
            raise Unavailable(f"cannot load lake table {namespace}.{name}: {exc}") from exc
        with self._lock:
            self._tables[key] = table
        return table

    def entry(self, namespace: str, name: str, listing: dict[tuple[str, str], str | None]) -> LakeEntry:
        table = self.load(namespace, name, listing.get((namespace, name)))
        props = table.properties
        kind = props.get("lakegate.kind", PLAIN)
        key = tuple(k for k in props.get("lakegate.key", "").split(",") if k)
        changelog = None
        if kind == STATE:
            log_name = name + CHANGELOG_SUFFIX
            if (namespace, log_name) not in listing:
                raise Unavailable(f"lake table {namespace}.{name} has no change log {log_name}")
            changelog = self.load(namespace, log_name, listing.get((namespace, log_name)))
        elif kind not in (CHANGELOG, PLAIN):
            kind = PLAIN
        return LakeEntry(namespace, name, kind, table, changelog, key, props.get("lakegate.source"))


# --------------------------------------------------------------------------------------------- SQL for DuckDB


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def scan(table: Table, snapshot: Snapshot | None) -> str:
    option = f", snapshot_from_id = {snapshot.snapshot_id}" if snapshot is not None else ""
    return f"iceberg_scan({literal(table.metadata_location)}{option})"


def stable_scan(table: Table, snapshot: Snapshot | None, travelling: bool, cached: Cached | None) -> str:
    """The FROM item for ``table`` at ``snapshot``: from the lake cache when ``cached`` has it, else Parquet."""
    name = cached(table, snapshot, travelling) if cached is not None else None
    return name if name is not None else scan(table, snapshot if travelling else None)


def stamp_at(table: Table, snapshot: Snapshot | None) -> Position | None:
    """The newest ``lakegate.lsn`` stamp on ``snapshot``'s lineage (like writer.checkpoint_of, at any snapshot)."""
    for snap in ancestors_of(snapshot, table.metadata) if snapshot is not None else ():
        props = snap.summary.additional_properties if snap.summary else {}
        if PROP_LSN in props:
            return Position(int(props[PROP_LSN]), int(props.get(PROP_SEQ, 2**62)))
    return None


def pick_snapshot(entry: LakeEntry, travel: TimeTravel | None) -> Snapshot | None:
    """The snapshot of ``entry.table`` that ``travel`` names (None = current)."""
    history = entry.table
    if travel is None:
        return history.current_snapshot()
    full = f"lake table {entry.namespace}.{entry.name}"
    if travel.snapshot_id is not None:
        snap = history.snapshot_by_id(travel.snapshot_id)
        if snap is None:
            raise NotFound(
                f"{full} has no snapshot {travel.snapshot_id}; GET /v1/schema lists the recent snapshots of "
                "every lake table"
            )
        return snap
    snap = history.snapshot_as_of_timestamp(int(travel.timestamp_ms or 0))
    if snap is None:
        raise BadRequest(
            f"{full} has no snapshot at or before {travel.label()}; its oldest kept snapshot is from "
            f"{_oldest(history)}"
        )
    return snap


def _oldest(table: Table) -> str:
    snaps = table.snapshots()
    if not snaps:
        return "(none: the table is empty)"
    first = min(s.timestamp_ms for s in snaps)
    return datetime.datetime.fromtimestamp(first / 1000, datetime.UTC).isoformat()


def view_sql(entry: LakeEntry, travel: TimeTravel | None = None, cached: Cached | None = None) -> str:
    """DuckDB SQL of a SELECT that returns ``entry`` now, or at ``travel``; ``cached`` may serve it (never a
    change log, which changes at every commit)."""
    snapshot = pick_snapshot(entry, travel)
    travelling = travel is not None
    if entry.kind == CHANGELOG:
        return f"SELECT * FROM {scan(entry.table, snapshot if travelling else None)}"
    return f"SELECT * FROM {stable_scan(entry.table, snapshot, travelling, cached)}"

"""The SQL catalog, with every table commit of one flush made visible in one catalog transaction.

pyiceberg's ``SqlCatalog.commit_table`` commits one table: it reads the table's metadata again from its file,
checks the commit's requirements, applies its updates a second time, writes the new metadata file and swaps the
table's pointer in a database transaction of its own. A worker that commits a change log and a state table for
each of hundreds of tables at every flush paid that for each of them: on SQLite one ``fsync`` (about 11 ms on
this disk) and 4-11 ms of re-reading per commit. pyiceberg has no multi-table commit for the SQL catalog
(the REST catalog's ``/transactions/commit`` has no SQL counterpart in 0.12), so it is written here, as a
subclass that changes only where the pointer swap happens:

- Inside :meth:`FlushCatalog.flush`, ``commit_table`` checks the commit's requirements against the table as this
  process last committed it (re-read only when the catalog shows another writer moved it since the flush
  began: then it fails as a race, and pyiceberg's own retry plans the commit again on the new metadata), writes
  the new metadata file, and queues the swap. ``load_table`` returns what the flush has staged, so a commit can
  build on an earlier one of the same flush.
- When the flush ends, every swap runs in ONE database transaction, each with the optimistic check
  ``UPDATE ... WHERE metadata_location = <previous>``: one ``fsync`` per flush, and every reader of the catalog
  sees all the tables of a flush move together (a source transaction that touched several tables is never seen
  half-applied through the catalog). A swap whose check fails rolls the whole transaction back: nothing of the
  flush becomes visible, the staged tables are read again, and :class:`CommitConflict` is raised, as a failed
  commit was before (the worker starts again from the position it confirmed; nothing is lost).
- Every other commit of the process (and of the worker's upkeep thread, with its own catalog object) waits while
  a flush is staged, so that upkeep cannot move a table between the flush's check and its swap; a commit of
  another process is caught by the swap's check.

Old metadata files (``write.metadata.delete-after-commit.enabled``) are deleted only once the swap landed.
Other catalogs (REST, Glue, ...) commit table by table as before: :func:`flush` is a no-op for them.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from pyiceberg.catalog import Catalog
from pyiceberg.catalog.sql import IcebergNamespaceProperties, IcebergTables, SqlCatalog
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.io import FileIO
from pyiceberg.serializers import Compressor
from pyiceberg.table import CommitTableResponse, Table
from pyiceberg.table.locations import LocationProvider, load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableRequirement, TableUpdate, _update_table_metadata_log
from pyiceberg.typedef import EMPTY_DICT, Properties
from pyiceberg.utils.config import Config
from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from lakegate.connectors.errors import CommitConflict, LakeError
from lakegate.connectors.iceberg import ids, localfiles, metadatajson, txncache


class _Gate:
    """A re-entrant lock taken in the order asked for: a worker that flushes back to back must not starve its
    upkeep's commits (a plain lock tends to go back to the thread that just released it)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._queue: deque[object] = deque()
        self._owner: int | None = None
        self._depth = 0

    def __enter__(self) -> None:
        me = threading.get_ident()
        with self._cond:
            if self._owner == me:
                self._depth += 1
                return
            ticket = object()
            self._queue.append(ticket)
            while self._owner is not None or self._queue[0] is not ticket:
                self._cond.wait()
            self._queue.popleft()
            self._owner, self._depth = me, 1

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._depth -= 1
            if self._depth == 0:
                self._owner = None
                self._cond.notify_all()


_IOS: OrderedDict[tuple[Any, ...], FileIO] = OrderedDict()
_IO_GUARD = threading.Lock()
_IOS_MAX = 4096  #: a worker's tables (change logs and state tables), a few times over
#: (id of the catalog's properties, id of the table's, scheme) -> (both objects, the FileIO)
_IOS_SEEN: OrderedDict[tuple[int, int, str], tuple[object, object, FileIO]] = OrderedDict()


@functools.lru_cache(maxsize=256)
def _scheme(head: str) -> str:
    """``urlparse(location).scheme`` from the location's part before its first ``/`` (a scheme ends at a ``:``
    before any ``/``, so that part decides it)."""
    return urlparse(head).scheme


_EXCLUDE_NONE: bool | None = None  #: pyiceberg's ``legacy-current-snapshot-id`` setting, negated (read once)
_GATES: dict[str, _Gate] = {}
_SWAP = (
    update(IcebergTables)
    .where(
        IcebergTables.catalog_name == bindparam("c"),
        IcebergTables.table_namespace == bindparam("ns"),
        IcebergTables.table_name == bindparam("n"),
        IcebergTables.metadata_location == bindparam("before"),
    )
    .values(metadata_location=bindparam("after"), previous_metadata_location=bindparam("before"))
)  #: one table's optimistic pointer swap, built once
_PROPERTY_DROP = delete(IcebergNamespaceProperties).where(
    IcebergNamespaceProperties.catalog_name == bindparam("c"),
    IcebergNamespaceProperties.namespace == bindparam("ns"),
    IcebergNamespaceProperties.property_key == bindparam("k"),
)
_PROPERTY_ADD = insert(IcebergNamespaceProperties).values(
    catalog_name=bindparam("c"), namespace=bindparam("ns"), property_key=bindparam("k"), property_value=bindparam("v")
)  #: a namespace property set as pyiceberg's ``update_namespace_properties`` does (no portable upsert)
_GATES_GUARD = threading.Lock()


def _gate(uri: str) -> _Gate:
    """One per catalog database in this process: held while a flush is staged, and by every other commit."""
    with _GATES_GUARD:
        return _GATES.setdefault(uri, _Gate())


class _Moved(Exception):
    """A swap's optimistic check failed (raised inside the swap's transaction to roll it back)."""


@dataclass
class _Staged:
    previous: str  #: the location the catalog holds (checked by the swap)
    location: str  #: the newest staged location
    metadata: TableMetadata
    io: FileIO


@dataclass
class _Flush:
    seen: dict[tuple[str, str], str]  #: the catalog's pointers when the flush began
    swaps: list[tuple[tuple[str, str], str, str]] = field(
        default_factory=list
    )  #: (table, from, to), in order
    staged: dict[tuple[str, str], _Staged] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)  #: the Table objects that hold staged metadata
    old_metadata: list[tuple[FileIO, TableMetadata, TableMetadata]] = field(default_factory=list)
    properties: dict[tuple[str, str], str] = field(default_factory=dict)  #: (namespace, key) -> value, set with it
    lock: threading.Lock = field(default_factory=threading.Lock)


class FlushCatalog(SqlCatalog):
    """A :class:`SqlCatalog` whose commits inside :meth:`flush` become visible together; see the module."""

    def __init__(self, name: str, **properties: Any) -> None:
        super().__init__(name, **properties)
        self._gate = _gate(str(properties.get("uri", "")))
        self._flush: _Flush | None = None
        #: old metadata files of flushes staged here whose swap another process runs (see staging)
        self._landing: list[list[tuple[FileIO, TableMetadata, TableMetadata]]] = []

    def create_tables(self) -> None:
        """pyiceberg creates the catalog's tables when it finds none; two processes opening one fresh catalog
        both find none, and the slower one's CREATE TABLE fails with "already exists" (SQLite has no IF NOT
        EXISTS in SQLAlchemy's check-then-create). The tables the other process made are the same ones: check
        again instead of failing."""
        for attempt in range(8):  # one more per table the other process may be creating meanwhile
            try:
                super().create_tables()  # checkfirst: creates only what is still missing
                return
            except SQLAlchemyError as exc:
                if "already exists" not in str(exc).lower() or attempt == 7:
                    raise

    # ------------------------------------------------------------------------------------------ the flush

    @contextlib.contextmanager
    def flush(self) -> Iterator[None]:
        """Stage every table commit made inside (from any thread), then swap them all in one transaction."""
        if self._flush is not None or not self.engine.dialect.supports_sane_rowcount:
            yield  # nested, or a database that cannot tell whether a conditional update matched
            return
        with self._gate:
            self._flush = staged = _Flush(self._pointers())
            try:
                yield
                self._swap(staged)
            except BaseException:
                self._flush = None
                self._forget(staged)
                raise
            finally:
                self._flush = None
        for io, base, new in staged.old_metadata:
            with contextlib.suppress(Exception):  # old versions left behind are harmless (orphan removal)
                super()._delete_old_metadata(io, base, new)

    @contextlib.contextmanager
    def staging(self) -> Iterator[list[tuple[tuple[str, str], str, str]]]:
        """Stage every table commit made inside like :meth:`flush`, but swap nothing: the swaps, (table, from, to)
        in order, are what it yields, filled when it ends; the process that runs the flush swaps them with its
        own (:meth:`adopt`; table writer processes, :mod:`lakegate.ingest.tableprocs`). The old metadata files
        wait for :meth:`landed`; a swap that did not land leaves this process's tables stale: it must not commit
        to them again (the writer processes are replaced then)."""
        if self._flush is not None:
            raise LakeError("a flush is staged already in this process")
        swaps: list[tuple[tuple[str, str], str, str]] = []
        with self._gate:
            self._flush = staged = _Flush(self._pointers())
            try:
                yield swaps
            finally:
                self._flush = None
        swaps += staged.swaps
        self._landing.append(staged.old_metadata)

    def landed(self) -> None:
        """The swaps of every :meth:`staging` so far are committed: old metadata files may go now."""
        landing, self._landing = self._landing, []
        for old in landing:
            for io, base, new in old:
                with contextlib.suppress(Exception):  # old versions left behind are harmless (orphan removal)
                    super()._delete_old_metadata(io, base, new)

    def adopt(self, swaps: Iterable[tuple[tuple[str, str], str, str]]) -> None:
        """Inside :meth:`flush`: swap these too, staged by another process with :meth:`staging`, in the flush's
        transaction (each with its optimistic check)."""
        staged = self._flush
        if staged is None:
            raise LakeError("swaps staged elsewhere can only be committed inside a flush")
        with staged.lock:
            staged.swaps += [(tuple(key), before, after) for key, before, after in swaps]  # type: ignore[misc]

    def flushing(self) -> bool:
        """Whether a flush is being staged (its commits become visible together when it ends)."""
        return self._flush is not None

    def stage_namespace_properties(self, namespaces: Iterable[str], updates: dict[str, str]) -> bool:
        """Set ``updates`` on each of ``namespaces`` in the flush's own catalog transaction, so that they become
        visible exactly when its tables do (the consistent cut, :func:`.cut.stage`). False outside a flush, or in
        a flush that stages no table (it has no transaction of its own): the caller sets them on its own then.
        The namespaces must exist (they hold the flush's tables)."""
        staged = self._flush
        if staged is None:
            return False
        with staged.lock:
            if not staged.swaps:
                return False
            for namespace in namespaces:
                for key, value in updates.items():
                    staged.properties[(namespace, key)] = value
        return True

    def _pointers(self, key: tuple[str, str] | None = None) -> dict[tuple[str, str], str]:
        """The metadata location of every table of the catalog (or of ``key``)."""
        stmt = select(
            IcebergTables.table_namespace, IcebergTables.table_name, IcebergTables.metadata_location
        ).where(IcebergTables.catalog_name == self.name)
        if key is not None:
            stmt = stmt.where(IcebergTables.table_namespace == key[0], IcebergTables.table_name == key[1])
        try:
            with self.engine.connect() as conn:
                return {(str(ns), str(name)): str(loc) for ns, name, loc in conn.execute(stmt)}
        except SQLAlchemyError as exc:
            raise LakeError(f"cannot read the lake catalog {self.name!r}: {exc}") from exc

    def _swap(self, staged: _Flush) -> None:
        if not staged.swaps:
            return
        rows = [
            {"c": self.name, "ns": namespace, "n": name, "before": before, "after": after}
            for (namespace, name), before, after in staged.swaps
        ]
        properties = [
            {"c": self.name, "ns": namespace, "k": key, "v": value}
            for (namespace, key), value in sorted(staged.properties.items())
        ]
        try:
            with self.engine.begin() as conn:  # one transaction: every table of the flush, or none
                if self.engine.dialect.supports_sane_multi_rowcount:
                    # one statement executed for every row (a few hundred per flush): the ORM's statement
                    # building per table cost more than the swaps themselves
                    swapped = conn.execute(_SWAP, rows).rowcount
                else:
                    swapped = sum(conn.execute(_SWAP, row).rowcount for row in rows)
                if swapped < len(rows):
                    raise _Moved  # rolls the transaction back
                if properties:
                    conn.execute(_PROPERTY_DROP, properties)
                    conn.execute(_PROPERTY_ADD, properties)
        except _Moved:
            raise self._conflict(staged) from None
        except SQLAlchemyError as exc:
            raise LakeError(
                f"cannot commit the flush's {len(staged.swaps)} table version(s) to the lake catalog "
                f"{self.name!r}: {exc}"
            ) from exc

    def _conflict(self, staged: _Flush) -> CommitConflict:
        """The error for a flush whose swap found a table moved (the first such table, read after the rollback)."""
        now = self._pointers()
        chained = {after for _, _, after in staged.swaps}  #: a later swap of a table starts at an earlier's end
        for (namespace, name), before, _ in staged.swaps:
            if now.get((namespace, name)) != before and before not in chained:
                break
        else:
            namespace, name, before = "?", "?", "?"
        return CommitConflict(
            f"lake table {namespace}.{name} was changed by another writer while this flush was "
            f"written (it no longer points at {before}); nothing of the flush was committed"
        )

    def _forget(self, staged: _Flush) -> None:
        """The flush did not land: the Table objects that hold its staged metadata read the catalog again."""
        for table in staged.tables:
            with contextlib.suppress(Exception):  # unreadable now: the next use fails with the cause
                table.refresh()

    # ------------------------------------------------------------------------------------- pyiceberg hooks

    def commit_table(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> CommitTableResponse:
        staged = self._flush
        if staged is None:
            with self._gate:
                return super().commit_table(table, requirements, updates)
        key = (
            Catalog.namespace_to_string(Catalog.namespace_from(table.name())),
            Catalog.table_name_from(table.name()),
        )
        with staged.lock:
            mine = staged.staged.get(key)
        if mine is None and key not in staged.seen:  # created since the flush began
            staged.seen.update(self._pointers(key))
        expected = mine.location if mine is not None else staged.seen.get(key)
        if table.metadata_location != expected:  # moved by another writer (or not read since): plan again
            raise CommitFailedException(
                f"{key[0]}.{key[1]} is at {expected}, not at {table.metadata_location} as this commit assumed"
            )
        metadata, location, io = self._stage(table, requirements, updates)
        self._write_metadata(metadata, io, location)
        with staged.lock:
            previous = mine.previous if mine is not None else table.metadata_location
            staged.staged[key] = _Staged(previous, location, metadata, io)
            staged.swaps.append((key, table.metadata_location, location))
            staged.tables.append(table)
        return CommitTableResponse(metadata=metadata, metadata_location=location)  # type: ignore[call-arg]

    def _stage(
        self, table: Table, requirements: tuple[TableRequirement, ...], updates: tuple[TableUpdate, ...]
    ) -> tuple[TableMetadata, str, FileIO]:
        """``Catalog._update_and_stage_table`` on the metadata the transaction already computed (see txncache)."""
        for requirement in requirements:
            requirement.validate(table.metadata)
        base = table.metadata
        metadata = _update_table_metadata_log(
            txncache.applied(base, updates), table.metadata_location, base.last_updated_ms
        )
        version = self._parse_metadata_version(table.metadata_location) + 1
        provider = load_location_provider(metadata.location, metadata.properties)
        if (
            type(provider).new_table_metadata_file_location
            is LocationProvider.new_table_metadata_file_location
        ):
            location = provider.new_metadata_location(f"{version:05d}-{ids.uuid4()}.metadata.json")
        else:
            location = provider.new_table_metadata_file_location(version)
        return metadata, location, self._load_file_io(properties=metadata.properties, location=location)

    def load_table(self, identifier: str | tuple[str, ...]) -> Table:
        staged = self._flush
        if staged is not None:
            key = (
                Catalog.namespace_to_string(Catalog.namespace_from(identifier)),
                Catalog.table_name_from(identifier),
            )
            with staged.lock:
                mine = staged.staged.get(key)
            if mine is not None:  # what this flush has staged: its next commit builds on it
                return Table(
                    identifier=Catalog.identifier_to_tuple(identifier),
                    metadata=mine.metadata,
                    metadata_location=mine.location,
                    io=mine.io,
                    catalog=self,
                )
        return super().load_table(identifier)

    @staticmethod
    def _write_metadata(metadata: TableMetadata, io: FileIO, metadata_path: str) -> None:
        """``ToOutputFile.table_metadata`` without its ``Config()`` (pyiceberg reads its configuration file and
        environment again for every metadata file it writes, for one flag, read once here), with the snapshots'
        JSON kept from earlier versions (:mod:`.metadatajson`) and local files opened directly (:mod:`.localfiles`)."""
        global _EXCLUDE_NONE
        if _EXCLUDE_NONE is None:
            _EXCLUDE_NONE = not Config().get_bool("legacy-current-snapshot-id")
        data = metadatajson.dumps(metadata, exclude_none=_EXCLUDE_NONE)
        data = Compressor.get_compressor(metadata_path).bytes_compressor()(data)
        localfiles.write(io, metadata_path, data, overwrite=False)

    def _load_file_io(self, properties: Properties = EMPTY_DICT, location: str | None = None) -> FileIO:
        """One FileIO per (properties, location scheme): pyiceberg makes a new one for every table it loads and
        every commit, and each builds its file system again on first use. Each table's properties differ
        (lakegate's records), so there is one per table; a commit carries its table's properties dict over as
        the same object, which finds its FileIO without sorting it again (issue 11.16)."""
        scheme = _scheme((location or "").split("/", 1)[0])
        quick = (id(self.properties), id(properties), scheme)
        with _IO_GUARD:
            seen = _IOS_SEEN.get(quick)
        if seen is not None and seen[0] is self.properties and seen[1] is properties:
            return seen[2]
        merged = {**self.properties, **properties}
        key = (tuple(sorted((k, repr(v)) for k, v in merged.items())), scheme)
        with _IO_GUARD:
            found = _IOS.get(key)
        if found is None:
            found = super()._load_file_io(properties, location)
            with _IO_GUARD:
                _IOS[key] = found
                while len(_IOS) > _IOS_MAX:
                    _IOS.popitem(last=False)
        if type(properties) is dict:  # an immutable mapping of another kind could be a new object each time
            with _IO_GUARD:
                _IOS_SEEN[quick] = (self.properties, properties, found)  # kept alive: ids are not reused
                _IOS_SEEN.move_to_end(quick)
                while len(_IOS_SEEN) > _IOS_MAX:
                    _IOS_SEEN.popitem(last=False)
        return found

    def _delete_old_metadata(self, io: FileIO, base: TableMetadata, metadata: TableMetadata) -> None:  # type: ignore[override]
        staged = self._flush
        if staged is None:
            super()._delete_old_metadata(io, base, metadata)
            return
        with staged.lock:  # not before the swap: a flush that fails leaves the catalog at ``base``
            staged.old_metadata.append((io, base, metadata))


@contextlib.contextmanager
def quiet(catalog: Catalog) -> Iterator[None]:
    """Wait until no flush of this process is staged in ``catalog``'s database, and keep it so inside: everything
    a flush committed is then visible in the catalog (orphan removal decides what is unreferenced under it)."""
    if isinstance(catalog, FlushCatalog):
        with catalog._gate:
            yield
    else:
        yield


@contextlib.contextmanager
def flush(catalog: Catalog) -> Iterator[None]:
    """:meth:`FlushCatalog.flush` for a catalog that has it; otherwise each commit lands on its own."""
    if isinstance(catalog, FlushCatalog):
        with catalog.flush():
            yield
    else:
        yield

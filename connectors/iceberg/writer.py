"""The two lake tables of one source table, and every write to them.

``<schema>.<table>__changelog`` receives every change, one append per flush, its snapshot summary stamped with
the source position it covers (``lakegate.lsn`` / ``lakegate.seq``): that stamp is the table's checkpoint.
``<schema>.<table>`` holds the current state, exact at every commit for every Iceberg reader: each change-log
commit is followed by one row delta on the state table (new rows as data files, the rows they replace as position
deletes, stamped with the same position) and now and then by a compaction, on the writer's thread where the key
index lives (:class:`~lakegate.connectors.iceberg.statesync.Follower`). A state table behind its change log (a
worker stopped between the two commits; a lake written by the first version, which folded the tail into the state
now and then) catches up on start (:meth:`LakeTable.catch_up`). A table without a key (REPLICA IDENTITY FULL) has
only the change log.

Every data file is written by :class:`~lakegate.connectors.iceberg.datafiles.DataFileStream` (pyiceberg's own file
writing, kept open across chunks and with dictionary encoding only where values repeat) and added to a
pyiceberg snapshot producer, so one commit can hold files written chunk by chunk.
"""

from __future__ import annotations

import logging
import threading
from contextlib import AbstractContextManager
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NoSuchTableError
from pyiceberg.expressions import GreaterThanOrEqual
from pyiceberg.manifest import DataFile
from pyiceberg.schema import Schema
from pyiceberg.table import Table, Transaction

from lakegate.connectors.changes import LSN, SEQ, ZERO, Position, TableRef, TableSchema
from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg import (
    datafiles,
    leancommit,
    merge,
    schemachange,
    staging,
    statesync,
    tablecommit,
    tablesetup,
)
from lakegate.connectors.iceberg.commits import (
    PROP_LSN,
    PROP_SEQ,
    append_producer,
    checkpoint_of,
    data_files,
    guard_statistics,
    stamp,
    write_files,
)
from lakegate.connectors.iceberg.compaction import Thresholds
from lakegate.connectors.iceberg.evolution import (
    ATTNUMS,
    KEY,
    PGTYPES,
    STORAGE,
    Backfill,
    attnums_of,
    schema_of,
)
from lakegate.connectors.iceberg.schema import CHANGELOG, CHANGELOG_SUFFIX, STATE, Evolution, plan_evolution
from lakegate.connectors.iceberg.snapshot_sink import SnapshotSink, write_snapshot

__all__ = [
    "PROP_LSN",
    "PROP_SEQ",
    "LakeTable",
    "SnapshotSink",
    "checkpoint_of",
    "guard_statistics",
    "stamp",
    "write_files",
]

log = logging.getLogger(__name__)


#: the table properties :meth:`LakeTable.evolve` reads (its plans, the key and the source types)
_EVOLVE_RECORDS = (ATTNUMS, KEY, PGTYPES)


class _Same:
    """Equal to a wrapper of the very same object only (pyiceberg's models compare field by field)."""

    __slots__ = ("obj",)

    def __init__(self, obj: object) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    __hash__ = None  # type: ignore[assignment]


class ChangelogTail:
    """The data files of a change log's latest appends, each with the rows written to it, while nothing else
    has been committed to the change log in between and its schema has not changed: exactly the rows of those
    files, in position order, so that they can be compacted into one file without reading them back (a writer
    process's upkeep, :mod:`lakegate.ingest.writerupkeep`). Anything else committed to the change log (a
    compaction by someone else, a backfill, a copy, a transaction written in parts) starts the tail afresh."""

    def __init__(self) -> None:
        self.files: list[DataFile] = []
        self.parts: list[pa.Table] = []
        self.head: int | None = None  #: the change-log snapshot of the last append kept
        self.schema_id: int | None = None
        self.appends = 0  #: appends since the last :meth:`restart`, kept or not

    def appended(self, changelog: Table, files: list[DataFile], rows: pa.Table, *, whole: bool) -> None:
        """``files`` holding ``rows`` were just appended to ``changelog`` (``whole``: and nothing else)."""
        snapshot = changelog.current_snapshot()
        schema_id = changelog.metadata.current_schema_id
        self.appends += 1
        if snapshot is None:
            self.restart(changelog)
            return
        on_tail = self.head is not None and snapshot.parent_snapshot_id == self.head and schema_id == self.schema_id
        if not (whole and on_tail):
            self.files, self.parts = [], []
            self.schema_id = schema_id
        if whole:
            self.files += files
            self.parts.append(rows)
        self.head = snapshot.snapshot_id

    def covers(self, changelog: Table) -> bool:
        """Whether the kept files are the latest ones ``changelog`` holds (nothing committed since)."""
        snapshot = changelog.current_snapshot()
        return (
            bool(self.files)
            and snapshot is not None
            and snapshot.snapshot_id == self.head
            and changelog.metadata.current_schema_id == self.schema_id
        )

    def rows(self) -> pa.Table:
        return pa.concat_tables(self.parts)

    def restart(self, changelog: Table) -> None:
        """Keep nothing so far; the next append (on top of the change log as it is now) starts the tail."""
        snapshot = changelog.current_snapshot()
        self.files, self.parts, self.appends = [], [], 0
        self.head = snapshot.snapshot_id if snapshot is not None else None
        self.schema_id = changelog.metadata.current_schema_id


class LakeTable:
    """State and change-log tables of one source table in one Iceberg catalog."""

    def __init__(
        self,
        catalog: Catalog,
        schema: TableSchema,
        *,
        source: str = "",
        compaction: Thresholds | None = None,
    ) -> None:
        self.catalog = catalog
        self.schema = schema
        self.source = source
        self.namespace = schema.table.schema
        self.name = schema.table.name
        self.changelog: Table | None = None
        self.state: Table | None = None
        #: the state table's key index and its compaction (when, and what: the ``compact_*`` settings)
        self._follower = statesync.Follower(compaction)
        #: the change-log files of a transaction written in parts, until its last part (connectors.iceberg.staging)
        self._staged: staging.Staged | None = None
        #: the change log's files appended by this object since its last compaction, with their rows (only when
        #: :meth:`keep_tail` asked for it: a writer process compacts them without reading them back)
        self.recent: ChangelogTail | None = None
        #: the last plan (change-log schema object, its attnum record, source schema, plan)
        self._plan: tuple[Schema, str | None, TableSchema, Evolution] | None = None
        #: what the last :meth:`evolve` that changed nothing was asked with (see there)
        self._settled: tuple[object, ...] | None = None

    @classmethod
    def open(cls, catalog: Catalog, ref: TableRef) -> LakeTable:
        """The lake tables of ``ref`` as they are (the schema is read from the change log); raises LakeError."""
        try:
            changelog = catalog.load_table(f"{ref.schema}.{ref.name}{CHANGELOG_SUFFIX}")
        except NoSuchTableError as exc:
            raise LakeError(
                f"the lake has no table {ref}{CHANGELOG_SUFFIX}; has the worker replicated {ref}?"
            ) from exc
        table = cls(
            catalog, schema_of(changelog, ref), source=changelog.properties.get("lakegate.source", "")
        )
        table.load()
        return table

    # ------------------------------------------------------------------------------------------------ setup

    @property
    def has_state(self) -> bool:
        return bool(self.schema.key)

    def identifiers(self) -> tuple[str, str]:
        return tablesetup.identifiers(self.schema.table)

    def load(self) -> bool:
        """Load existing tables; True when the change log exists."""
        state_id, changelog_id = self.identifiers()
        try:
            self.changelog = self.catalog.load_table(changelog_id)
        except NoSuchTableError:
            return False
        if self.has_state:
            try:
                self.state = self.catalog.load_table(state_id)
            except NoSuchTableError:
                self.state = None
        return True

    def create(self) -> None:
        """Create missing tables (and the namespace)."""
        self.changelog, self.state = tablesetup.create_missing(
            self.catalog, self.schema, self.source, self.changelog, self.state
        )

    def rename_from(self, old: TableRef) -> None:
        """Rename the lake tables of ``old`` to this table's names (see :func:`tablesetup.rename`)."""
        tablesetup.rename(self.catalog, old, self.schema.table)

    def drop(self) -> None:
        tablesetup.drop(self.catalog, self.schema.table)
        self.changelog = self.state = None

    def plan(self, schema: TableSchema) -> Evolution:
        """What writing rows of ``schema`` changes in the change log (see :meth:`evolve`). Asked twice per table
        and flush with the same answer nearly always: kept for the same change-log schema object, attnum record
        and source schema (about 0.1 ms a plan)."""
        assert self.changelog is not None
        current, attnums = self.changelog.schema(), self.changelog.properties.get(ATTNUMS)
        kept = self._plan
        if kept is not None and kept[0] is current and kept[1] == attnums and kept[2] == schema:
            return kept[3]
        plan = plan_evolution(current, schema, CHANGELOG, attnums_of(self.changelog))
        self._plan = (current, attnums, schema, plan)
        return plan

    def warm(self) -> None:
        """Compute now, before the stream starts, what this process's first write to the tables would compute on
        the way: the change log's schema plan, the data files' schema and statistics plans, and each table's
        current manifest list (a table's first write in a writer process cost about 50 ms against 15 later, and
        the first round of 200 tables took seconds; issue 11.16). Reads only: nothing is committed."""
        if self.changelog is None:
            return
        self.plan(self.schema)
        for table in (self.changelog, self.state):
            if table is not None:
                datafiles.warm(table.metadata)
                leancommit.manifests_of(table.io, table.current_snapshot())

    def evolve(self, schema: TableSchema, backfill: Backfill | None = None) -> None:
        """Make both tables able to hold rows of ``schema``: rename (by source identity), add and widen columns;
        with ``backfill``, write the new columns' values into every existing row in the same commits.
        Raises SchemaChangeError when Iceberg cannot follow.

        Asked for every table of every flush, with nothing to do nearly always (planning both tables and
        reading their records cost about 5 % of a 200-table worker's interpreter time, issue 11.16): when the
        same source schema met the same lake schemas and records last time and nothing was committed, the
        answer is the same."""
        assert self.changelog is not None
        if backfill is None and self._settled is not None and self._settled == self._evolve_inputs(schema):
            return
        before = (self.changelog.metadata, self.state.metadata if self.state is not None else None)
        self._settled = None
        self._evolve(schema, backfill)
        after = (self.changelog.metadata, self.state.metadata if self.state is not None else None)
        if backfill is None and before[0] is after[0] and before[1] is after[1]:
            self._settled = self._evolve_inputs(schema)  # nothing committed: the same inputs change nothing

    def _evolve_inputs(self, schema: TableSchema) -> tuple[object, ...]:
        """What :meth:`_evolve` decides on: the source schema, this object's schema, and each lake table's
        schema (the object: a table's schema with an id never changes) and lakegate's records on it."""
        tables = (self.changelog, self.state)
        return (
            schema,
            self.schema,
            *(
                (_Same(t.schema()), *(t.properties.get(p) for p in _EVOLVE_RECORDS))
                if t is not None
                else None
                for t in tables
            ),
        )

    def _evolve(self, schema: TableSchema, backfill: Backfill | None) -> None:
        assert self.changelog is not None
        renames = dict(self.plan(schema).rename)
        if self.has_state:
            schemachange.check_key(self.schema, schema, renames)
        key = tuple(renames.get(k, k) for k in self.schema.key)  # the lake's key order
        with self._state_lock():  # no other state commit of this process between the backfill's two commits
            if backfill is not None and self.state is not None:
                self._catch_up()  # the backfill writes into the state table as of the change log
            schemachange.evolve(self.changelog, CHANGELOG, schema, key, backfill, self.state)
            if self.state is not None:
                schemachange.evolve(self.state, STATE, schema, key, backfill, self.state)
        self.schema = TableSchema(schema.table, schema.columns, key if self.has_state else schema.key)

    def sync_state(self) -> None:
        """Give the state table every column the change log has (renamed by source identity): a catch-up must not
        meet a column its state table lacks (the worker evolves the two tables one after the other)."""
        if self.state is None or self.changelog is None:
            return
        schema = schema_of(self.changelog, self.schema.table)
        schemachange.evolve(self.state, STATE, schema, schema.key, None, self.state)

    # ---------------------------------------------------------------------------------------------- reading

    def checkpoint(self) -> Position | None:
        """Position of the last change the change log holds; None when the initial snapshot is not complete."""
        return checkpoint_of(self.changelog) if self.changelog is not None else None

    def adopt(self, schema: TableSchema, storage: str) -> None:
        """Record what lakes written before these records existed lack: the source identity (attnum) of each
        lake column the source still has under the same name, and the table's storage fingerprint."""
        assert self.changelog is not None
        schemachange.adopt((self.changelog, self.state), schema)
        if self.storage() is None:
            self.set_properties({STORAGE: storage})
        self.schema = schema_of(
            self.changelog, self.schema.table
        )  # the lake's names, as the stream meets them

    def storage(self) -> str | None:
        """The source table's storage fingerprint when the lake last copied it (None: not recorded)."""
        return self.changelog.properties.get(STORAGE) if self.changelog is not None else None

    def set_properties(self, properties: dict[str, str]) -> None:
        """Set change-log table properties (lakegate's records about the source table) in one commit."""
        assert self.changelog is not None
        changelog = self.changelog
        wanted = {k: v for k, v in properties.items() if changelog.properties.get(k) != v}
        if wanted:
            self._commit(changelog, lambda txn: txn.set_properties(wanted))

    def remove_properties(self, names: set[str]) -> None:
        assert self.changelog is not None
        changelog = self.changelog
        present = {n for n in names if n in changelog.properties}
        if present:
            self._commit(changelog, lambda txn: txn.remove_properties(*present))

    def state_checkpoint(self) -> Position:
        if self.state is None:
            return ZERO
        return checkpoint_of(self.state) or ZERO

    def refresh(self) -> None:
        for table in (self.changelog, self.state):
            if table is not None:
                table.refresh()

    def tail(self, after: Position, row_filter: Any = None) -> pa.Table:
        """Change-log rows after ``after``, sorted by position."""
        assert self.changelog is not None
        # pyiceberg's expressions are pydantic models whose positional constructors mypy does not see
        expr = GreaterThanOrEqual(LSN, max(after.lsn, 0))  # type: ignore[call-arg,arg-type]
        if row_filter is not None:
            expr = expr & row_filter
        rows = merge.scan_to_arrow(self.changelog.scan(row_filter=expr))
        later = pc.or_(
            pc.greater(rows[LSN], after.lsn),
            pc.and_(pc.equal(rows[LSN], after.lsn), pc.greater(rows[SEQ], after.seq)),
        )
        return merge.sort_changes(rows.filter(later))

    def current(self) -> pa.Table:
        """The current state: the state table merged with the change-log tail it lacks, if any (tests)."""
        assert self.state is not None
        self.refresh()
        position = self.state_checkpoint()
        state = merge.scan_to_arrow(self.state.scan())
        return merge.apply(state, self.tail(position), self.schema.key)

    def lookup(self, keys: pa.Table) -> pa.Table:
        """Current rows (state columns) for ``keys`` (a table of key columns), found through the key index and
        read from the row groups that hold them; absent keys are left out."""
        assert self.state is not None
        if keys.num_rows == 0:
            return merge.empty_table(self.state.schema().as_arrow())
        if self.state_checkpoint() != self.checkpoint():
            self.catch_up()  # an earlier flush stopped between its two commits
        return self._follower.state(self).lookup(keys)

    # ---------------------------------------------------------------------------------------------- writing

    @property
    def staged_lsn(self) -> int | None:
        """The commit LSN of the transaction whose parts are staged here, if any."""
        return self._staged.lsn if self._staged is not None else None

    def append(
        self,
        data: pa.Table,
        position: Position | None = None,
        *,
        open_lsn: int | None = None,
        compact: bool = True,
    ) -> None:
        """Append changes (change-log columns) and stamp ``position`` (default: the last change's) in the same
        commit, to the change log and then to the state table.

        ``open_lsn``: the commit LSN of a transaction whose end has not arrived yet. Its changes are staged, not
        committed (see connectors.iceberg.staging); the parts staged earlier are committed with the first call
        whose ``open_lsn`` is another one (``data`` may then be empty).

        Without ``compact``, a compaction of the state table that falls due is left for :meth:`compact_due` (the
        worker runs them after its flush is visible, off the path of its changes to readers)."""
        changelog = self.changelog
        assert changelog is not None
        data = merge.conform(data, merge.arrow_schema(changelog.schema()))
        data, part = staging.split(data, open_lsn)
        if open_lsn is not None or position is None:
            position = staging.last_position(data)
        staged = self._staged
        if staged is not None and staged.lsn == open_lsn:
            if data.num_rows:  # pgoutput sends each transaction whole, after the ones before it
                raise LakeError(f"{self.schema.table}: changes before a transaction that is being staged")
        elif position is not None or staged is not None:
            self._commit_changes(data, position or staged.position, staged, compact)  # type: ignore[union-attr]
        if part.num_rows:
            self.stage(part)

    def _commit_changes(
        self, data: pa.Table, position: Position, staged: staging.Staged | None, compact: bool = True
    ) -> None:
        changelog = self.changelog
        assert changelog is not None

        written: list[DataFile] = []

        def action(txn: Transaction) -> None:
            with append_producer(txn, stamp(position)) as producer:
                for data_file in staged.data if staged is not None else ():
                    producer.append_data_file(data_file)
                written[:] = data_files(txn, changelog, data)
                for data_file in written:
                    producer.append_data_file(data_file)

        before = self.checkpoint() or ZERO
        self._commit(changelog, action)
        if self.recent is not None:
            self.recent.appended(changelog, written, data, whole=staged is None)
        if staged is not None:
            files = len(staged.release())
            self._staged = None
            log.info(
                "%s: a transaction written in parts is committed: %d change(s) staged in %d file(s) before its "
                "last part",
                self.schema.table,
                staged.rows,
                files,
            )
        if self.state is not None:
            self._follow(data, before, position, compact)

    def stage(self, part: pa.Table) -> None:
        """Write ``part`` (changes of one transaction whose end has not arrived, change-log columns) to both
        tables without committing it (see connectors.iceberg.staging)."""
        assert self.changelog is not None
        lsn = part[LSN][0].as_py()
        staged = self._staged
        if staged is not None and staged.lsn != lsn:
            raise LakeError(
                f"{self.schema.table}: a part of transaction {lsn} arrived while {staged.lsn} is not committed"
            )
        if self.state is not None:
            with self._state_lock():
                if staged is None and self.state_checkpoint() != self.checkpoint():
                    self._catch_up()  # the staged rows go on top of a state table that holds the change log
                self._follower.state(self).stage(part)
        if staged is None:
            staged = self._staged = staging.Staged(lsn=lsn)
        staged.data += staging.write(self.changelog, part)
        staging.announce(self.changelog, staged)  # other processes' upkeep must leave the files alone
        staged.position = staging.last_position(part) or staged.position
        staged.rows += part.num_rows

    # ------------------------------------------------------------------------------------- the state table

    def _follow(self, data: pa.Table, before: Position, position: Position, compact: bool = True) -> None:
        """Commit the changes just appended to the change log to the state table; compact it now and then."""
        with self._state_lock():
            self._follower.follow(self, data, before, position, compact_now=compact)

    @property
    def compaction_due(self) -> bool:
        """An ``append(compact=False)`` left a compaction of the state table due."""
        return self._follower.due is not None

    def compact_due(self) -> bool:
        """Run the compaction an ``append(compact=False)`` left due; True when one ran. While a transaction is
        staged on the table it waits (a compaction must not meet staged rows): the next commit finds it due again."""
        if self.state is None or self._staged is not None or self._follower.due is None:
            return False
        with self._state_lock():
            return self._follower.compact_due(self)

    def abandon_staged(self) -> None:
        """The worker using this object stops (or starts again): the parts of an unfinished transaction staged here
        are given up. They stay on storage as orphans (a commit tried with them may have landed: orphan removal
        decides, by what the snapshots reference), no longer protected by this process or a marker; the stream
        resumes before the transaction and writes it again."""
        if self._staged is not None:
            self._staged.release()
            self._staged = None
        self._follower.abandon_staged()

    def keep_tail(self) -> None:
        """Keep the rows of this object's change-log appends from now on (see :class:`ChangelogTail`)."""
        if self.recent is None:
            self.recent = ChangelogTail()

    def forget_index(self) -> None:
        """The state table's key index is read from the lake again at its next use (a compaction's commit that
        the catalog refused had moved it already)."""
        self._follower.invalidate()

    def catch_up(self) -> int:
        """Bring the state table up to the change log with position deletes; the number of changes applied."""
        if self.state is None or self.changelog is None:
            return 0
        with self._state_lock():
            return self._catch_up()

    def _catch_up(self) -> int:
        if self.state is None or self.checkpoint() is None:
            return 0
        self.sync_state()
        state = self._follower.state(self)
        state.index  # noqa: B018  (built from the lake now, on start, rather than in the first flush)
        return statesync.catch_up(self, state)

    def _commit(self, table: Table, action: Any) -> None:
        tablecommit.commit(table, action)

    def snapshot(
        self, position: Position, commit_ts: int, properties: dict[str, str] | None = None
    ) -> AbstractContextManager[SnapshotSink]:
        """Write an initial snapshot (replacing whatever the tables held) in one commit per table; the change
        log's commit also sets ``properties``.

        The two tables are finished and committed side by side. Either may commit without the other: without
        the change log's commit the table has no checkpoint and is copied again (replacing the state); without
        the state's, the state table catches up with the change log at its next commit."""
        assert self.changelog is not None
        lock = self._state_lock()
        return write_snapshot(
            self.changelog, self.state, position, commit_ts, properties, lock, str(self.schema.table)
        )

    def _state_lock(self) -> threading.Lock:
        """This process's lock of the state table (see :func:`tablecommit.state_lock`)."""
        return tablecommit.state_lock(self.catalog, f"{self.namespace}.{self.name}")

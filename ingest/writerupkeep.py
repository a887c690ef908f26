"""The upkeep of a writer process's tables, done by the process itself between its flushes (issue 11.16).

A busy table commits to each of its two lake tables about once a second: one small change-log file and two
snapshots a second to compact and expire. The worker's background upkeep (:mod:`.upkeep`) did that every
``maintenance_interval`` for all tables at once, in the worker's own interpreter (beside the replication stream
and the committer): reading back hundreds of small files per table and every manifest list of every snapshot
it expired, 0.3-0.5 of a core for minutes on a 200-table source, and the stream's freshness paid for it.

The writer process that owns a table has all of it at hand: it wrote the change log's latest files (and keeps
their rows, :class:`~lakegate.connectors.iceberg.writer.ChangelogTail`), it knows the manifest lists of the
snapshots it made, and nobody else commits to its tables. So after every ``changelog_compact_every`` or so
appends to a table (spread by the table's UUID, so that tables written together do not all come due at one
flush), once the flush has landed, the process does the table's upkeep, a table at a time, in two pieces (the
compaction, the expiry) and only while the worker has no flush for it (a flush waits for one piece at most):

- the change log's files kept since its last upkeep are replaced by one file written from the kept rows (no
  reads); every ``MERGE_EVERY``-th time, and where the tail does not cover them (something else committed to
  the change log meanwhile), the small files are compacted from the lake as the background upkeep does (so the
  files written from kept rows are merged in turn);
- both tables' snapshots are expired by the same rules (``snapshot_expiry``, ``snapshot_keep``, the consistent
  cut kept), with the manifest lists this process committed kept in memory (:func:`.leancommit.record`);
- each piece in a catalog transaction of the process's own; the files the expired snapshots alone referenced
  are deleted once it has landed.

The compaction's snapshot carries ``lakegate.maintenance = writer``; the background upkeep leaves compaction and
expiry of a table whose change log shows one recently to the writer (it still trims and removes orphans).
Nothing here may fail a flush: a failure is logged, and the table's tail starts afresh.
"""

from __future__ import annotations

import contextlib
import logging
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from lakegate.connectors.errors import CommitConflict, LakeError
from lakegate.connectors.iceberg import flushcatalog, leancommit, maintenance
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.ingest.config import IngestSettings
from lakegate.ingest.maintain import cut_of

log = logging.getLogger("lakegate.maintain")

BATCH = 64  #: appends to a table between two of its upkeeps (``changelog_compact_every``; plus up to half again)
#: every this many upkeeps of a table, its change log's small files are compacted from the lake (the files the
#: upkeeps wrote from kept rows among them), not only the latest appends: one small file per upkeep would pile up
MERGE_EVERY = 8
WRITER = "writer"  #: the ``lakegate.maintenance`` value of the writer's compactions


@dataclass(frozen=True)
class Rules:
    """The upkeep settings the writer processes follow (``[ingest]``)."""

    snapshot_expiry: float
    snapshot_keep: int
    every: int = BATCH  #: ``changelog_compact_every``


def rules(cfg: IngestSettings) -> Rules | None:
    """What the writer processes follow; None when the worker keeps no upkeep (``maintenance_interval = 0``)."""
    if not (cfg.maintenance_interval and cfg.changelog_compact_every):
        return None
    return Rules(cfg.snapshot_expiry, cfg.snapshot_keep, cfg.changelog_compact_every)


class WriterUpkeep:
    """The upkeep of one writer process's tables (see the module)."""

    def __init__(self, catalog: Any, rules: Rules, tables: list[LakeTable]) -> None:
        self.catalog = catalog
        self.rules = rules
        #: the manifest lists of the snapshots kept (path -> manifests): as this process commits (or reads) them
        self._lists: dict[str, Any] = {}
        leancommit.record(self._lists)
        self._rounds: dict[str, int] = {}  #: change log -> upkeeps so far (every MERGE_EVERY-th reads back)
        self._queue: dict[int, LakeTable] = {}  #: the tables whose upkeep is due
        #: the pieces left of the upkeep under way: (table, piece), each one catalog transaction
        self._pieces: list[tuple[LakeTable, Callable[[LakeTable, list[tuple[Any, str]]], str]]] = []
        for table in tables:
            table.keep_tail()
            if table.changelog is not None and table.recent is not None:
                table.recent.restart(table.changelog)
                # tables written together come due together: the first upkeep of each falls anywhere in one
                # period, not all within the spread of the periods (140 of 200 tables in one minute)
                table.recent.appends = self._spread(table) // 7 % self.rules.every

    def batch(self, table: LakeTable) -> int:
        """The appends between two upkeeps of ``table``: ``every`` plus up to half again, by its UUID."""
        assert table.changelog is not None
        every = self.rules.every
        return every + self._spread(table) % (every // 2 + 1)

    @staticmethod
    def _spread(table: LakeTable) -> int:
        assert table.changelog is not None
        return zlib.crc32(str(table.changelog.metadata.table_uuid).encode())

    def landed(self, written: list[LakeTable]) -> None:
        """A flush that wrote these tables has landed: queue those whose upkeep is due."""
        for table in written:
            tail = table.recent
            if tail is not None and table.changelog is not None and tail.appends >= self.batch(table):
                self._queue.setdefault(id(table), table)

    def pending(self) -> bool:
        return bool(self._queue or self._pieces)

    def step(self) -> bool:
        """Run the next piece of upkeep: the change log's compaction, or both tables' expiry, of the queued table
        whose tail is longest (the process runs it while the worker has no flush for it: a flush waits for one
        piece at most); True when it was committed."""
        if not self._pieces:
            if not self._queue:
                return False
            table = max(self._queue.values(), key=lambda t: t.recent.appends if t.recent is not None else 0)
            del self._queue[id(table)]
            self._pieces += [(table, self._compact), (table, self._expire)]
        table, piece = self._pieces.pop(0)
        started = time.monotonic()
        deferred: list[tuple[Any, str]] = []
        try:
            with flushcatalog.flush(self.catalog):
                done = piece(table, deferred)
        except Exception as exc:  # anything: the process must outlive its upkeep (its flushes come first)
            level = logging.WARNING if isinstance(exc, (LakeError, CommitConflict)) else logging.ERROR
            log.log(
                level,
                "the upkeep of %s was not committed (%s: %s); it is tried again later",
                table.schema.table,
                type(exc).__name__,
                exc,
                exc_info=level == logging.ERROR,
            )
            self._pieces = [(t, p) for t, p in self._pieces if t is not table]
            with contextlib.suppress(Exception):  # unreadable now: the next flush meets it, and says so
                table.refresh()
            if table.recent is not None and table.changelog is not None:
                table.recent.restart(table.changelog)
            return False
        deleted = sum(maintenance.delete_unused(io, [path]) for io, path in deferred)
        log.info(
            "writer upkeep: %s: %s, %d file(s) deleted (%.2fs)",
            table.schema.table,
            done,
            deleted,
            time.monotonic() - started,
        )
        return True

    def _compact(self, table: LakeTable, deferred: list[tuple[Any, str]]) -> str:
        changelog, tail = table.changelog, table.recent
        assert changelog is not None and tail is not None
        name = ".".join(changelog.name())
        rounds = self._rounds[name] = self._rounds.get(name, self._spread(table)) + 1
        if tail.covers(changelog) and rounds % MERGE_EVERY:
            result = maintenance.rewrite(changelog, tail.files, tail.rows(), WRITER)
        else:  # now and then the files written so are merged too (read back), as is what the tail does not cover
            result = maintenance.compact(changelog, what=WRITER)
        tail.restart(changelog)
        return str(result)

    def _expire(self, table: LakeTable, deferred: list[tuple[Any, str]]) -> str:
        cut = cut_of(table)
        result = maintenance.Result()
        for lake in (table.changelog, table.state):
            if lake is None:
                continue
            files: list[str] = []
            expired = maintenance.expire(
                lake,
                timedelta(seconds=self.rules.snapshot_expiry),
                keep_at_most=self.rules.snapshot_keep,
                cut=cut,
                lists=self._lists,
                deferred=files,
                refresh=False,
            )
            deferred += [(lake.io, path) for path in files]
            result.snapshots_expired += expired.snapshots_expired
            result.files_deleted += expired.files_deleted
        return str(result)


def kept_by_writer(table: LakeTable, within: float) -> bool:
    """Whether a writer process compacted ``table``'s change log in the last ``within`` seconds (as committed:
    the change log is read again)."""
    changelog = table.changelog
    if changelog is None:
        return False
    changelog.refresh()
    since = (time.time() - within) * 1000
    return any(
        s.timestamp_ms >= since and s.summary is not None and s.summary["lakegate.maintenance"] == WRITER
        for s in changelog.metadata.snapshots
    )

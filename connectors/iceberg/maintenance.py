"""Keeping lake tables healthy under one commit per second: compaction of small files, snapshot expiry with
removal of the files no snapshot references any more.

pyiceberg 0.12 expires snapshots but neither rewrites data files nor deletes what expiry orphans, so both are
written here on top of its public snapshot API (and the row delta of ``rowdelta.py``). Maintenance commits carry the
table's checkpoint stamp forward, so that expiring the snapshot that last stamped it can never lose it; one retried
on top of the writer's newer commit carries that commit's stamp (``rowdelta.transaction(carry_stamp=True)``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa
from pyiceberg.exceptions import CommitFailedException
from pyiceberg.expressions import And, BooleanExpression, LessThan
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table, Transaction

from lakegate.connectors.changes import COMMIT_TS, LSN, SEQ
from lakegate.connectors.errors import CommitConflict
from lakegate.connectors.iceberg import filereads, localfiles, merge
from lakegate.connectors.iceberg.commits import checkpoint_of, data_files, stamp
from lakegate.connectors.iceberg.cut import snapshot_at
from lakegate.connectors.iceberg.references import referenced_paths
from lakegate.connectors.iceberg.rowdelta import RowDelta, transaction

log = logging.getLogger(__name__)

SMALL_FILE = 32 * 2**20
MAX_COMPACT_BYTES = 512 * 2**20


@dataclass
class Result:
    files_before: int = 0
    files_after: int = 0
    snapshots_expired: int = 0
    files_deleted: int = 0

    def __str__(self) -> str:
        parts = []
        if self.files_before:
            parts.append(f"{self.files_before} small file(s) -> {self.files_after}")
        if self.snapshots_expired:
            parts.append(
                f"{self.snapshots_expired} snapshot(s) expired, {self.files_deleted} file(s) deleted"
            )
        return ", ".join(parts) or "nothing to do"


def _carry_stamp(table: Table, what: str = "compact") -> dict[str, str]:
    position = checkpoint_of(table)
    return {**(stamp(position) if position else {}), "lakegate.maintenance": what}


def compact(
    table: Table,
    *,
    min_files: int = 8,
    small: int = SMALL_FILE,
    max_bytes: int = MAX_COMPACT_BYTES,
    what: str = "compact",
) -> Result:
    """Rewrite the table's small data files into few large ones (one commit; the table's rows are unchanged).

    Change-log rows are sorted by position on the way, so each file covers a narrow ``_lsn`` range.
    """
    table.refresh()
    if table.current_snapshot() is None:
        return Result()
    tasks = [t for t in table.scan().plan_files() if t.file.file_size_in_bytes < small and not t.delete_files]
    tasks.sort(key=lambda t: t.file.file_path)
    picked: list[Any] = []
    total = 0
    for task in tasks:
        if total + task.file.file_size_in_bytes > max_bytes and picked:
            break
        picked.append(task)
        total += task.file.file_size_in_bytes
    if len(picked) < min_files:
        return Result()
    rows = _read(table, picked)
    if LSN in rows.column_names and SEQ in rows.column_names:
        rows = merge.sort_changes(rows)
    return rewrite(table, [task.file for task in picked], rows, what)


def rewrite(table: Table, files: list[DataFile], rows: pa.Table, what: str = "compact") -> Result:
    """Replace ``files`` (data files of ``table``'s current snapshot) by ``rows`` written anew, in one commit
    stamped ``lakegate.maintenance = what``: ``rows`` must be exactly the rows of ``files``, in the order wanted.
    Raises CommitConflict when a commit since removed one of the files."""
    written = 0

    def action(txn: Transaction) -> None:
        # a row delta, not pyiceberg's overwrite: that one refuses any file appended since its base (a busy
        # change log gets one a second, and a rewrite of hundreds of files lost that race about every fourth
        # time, issue 11.16); a rewrite conflicts only with a commit that removed one of its files
        nonlocal written
        with RowDelta(txn, table.io, _carry_stamp(table, what), exclusive=False) as delta:
            for data_file in files:
                delta.remove(data_file)
            added = data_files(txn, table, merge.conform(rows, table.schema().as_arrow()))
            for data_file in added:
                delta.add(data_file)
            written = len(added)

    _commit(table, action)
    return Result(files_before=len(files), files_after=written)


def _read(table: Table, tasks: list[Any]) -> pa.Table:
    """The rows of these files, in the table's current Arrow schema: read with pyarrow directly where a file has
    the table's current columns (a busy change log's compaction reads hundreds of files of a few dozen rows each:
    0.8 ms per file so, 2.2 ms through pyiceberg's scan), through pyiceberg's scan where it has not (a file
    written before a schema change: renamed, added and promoted columns)."""
    nothing = np.empty(0, dtype=np.int64)
    return filereads.read_all(table, [(task, nothing) for task in tasks])


def _commit(table: Table, action) -> None:  # type: ignore[no-untyped-def]
    from pyiceberg.exceptions import CommitFailedException, ValidationException

    try:
        with transaction(table, carry_stamp=True) as txn:  # a retry carries the stamp of the head it lands on
            action(txn)
    except (CommitFailedException, ValidationException) as exc:
        raise CommitConflict(
            f"maintenance of {'.'.join(table.name())} lost a race with another commit: {exc}"
        ) from exc


def expire(
    table: Table,
    older_than: timedelta,
    *,
    keep_last: int = 1,
    keep_at_most: int = 0,
    cut: int | None = None,
    lists: dict[str, Any] | None = None,
    deferred: list[str] | None = None,
    refresh: bool = True,
) -> Result:
    """Expire snapshots older than ``older_than`` (always keeping the newest ``keep_last``), and with
    ``keep_at_most`` all but the newest that many, and delete the files that only they referenced.

    The snapshot a reader at the consistent cut ``cut`` reads (:func:`~.cut.snapshot_at`) and every newer one are
    kept whatever the rules say. ``lists``: the manifest lists read so far (path -> manifests), kept by a caller
    that expires the same table again and again (a writer process; the lists of expired snapshots leave it).
    ``deferred``: the files to delete are added to it instead of being deleted (the expiry is committed inside
    a flush, and its files may go only once the flush landed)."""
    if refresh:
        table.refresh()
    snapshots = sorted(table.metadata.snapshots, key=lambda s: s.timestamp_ms)
    cutoff_ms = int((datetime.now(UTC) - older_than).timestamp() * 1000)
    current = table.current_snapshot()
    victims = {
        s.snapshot_id for s in snapshots[: max(0, len(snapshots) - keep_last)] if s.timestamp_ms < cutoff_ms
    }
    if keep_at_most > 0:
        victims |= {s.snapshot_id for s in snapshots[: max(0, len(snapshots) - max(keep_at_most, keep_last))]}
    at_cut = snapshot_at(table, cut) if cut is not None else None
    if at_cut is not None:
        victims -= {s.snapshot_id for s in snapshots if s.timestamp_ms >= at_cut.timestamp_ms}
        victims.discard(at_cut.snapshot_id)
    if current is not None:
        victims.discard(current.snapshot_id)
    if not victims:
        return Result()
    if lists is None:
        lists = {}  # the manifest lists, read once for both looks
    before_commit = {s.snapshot_id: s for s in snapshots}
    victims = _commit_expiry(table, victims)
    if not victims:
        return Result()
    if refresh:
        table.refresh()
    gone = [before_commit[i] for i in victims if i in before_commit]
    before = referenced_paths(table, lists=lists, snapshots=gone)
    remaining = sorted(table.metadata.snapshots, key=lambda s: s.sequence_number or 0)
    # (as they were before the commit: pyiceberg clears the parent of a snapshot whose parent it expired)
    if remaining and _one_line(table, gone, [before_commit.get(s.snapshot_id, s) for s in remaining]):
        # one line of history, the expired ones all older: what they share with any snapshot kept, the oldest
        # one kept has (a file once dropped from a line of snapshots never comes back); reading one snapshot's
        # references instead of a hundred's was most of a busy table's expiry (issue 11.16)
        after = referenced_paths(table, lists=lists, snapshots=remaining[:1])
    else:
        after = referenced_paths(table, lists=lists)
    for snapshot in gone:
        lists.pop(snapshot.manifest_list, None)
    orphans = before - after
    if deferred is not None:
        deferred.extend(orphans)
        return Result(snapshots_expired=len(victims), files_deleted=len(orphans))
    delete_unused(table.io, orphans)
    return Result(snapshots_expired=len(victims), files_deleted=len(orphans))


def delete_unused(io: Any, paths: Iterable[str]) -> int:
    """Delete files no snapshot references any more (an expiry's); returns how many went. A file that cannot be
    deleted is left to orphan removal (it is older than ``orphan_age`` by then), with a warning."""
    deleted = 0
    for path in paths:
        try:
            localfiles.delete(io, path)
            deleted += 1
        except FileNotFoundError:
            continue
        except OSError as exc:
            log.warning("could not delete %s (no snapshot uses it; orphan removal tries again later): %s", path, exc)
    return deleted


def _one_line(table: Table, gone: list[Any], remaining: list[Any]) -> bool:
    """Whether the snapshots expired and those kept (sorted by sequence number) are one line of history, each the
    parent of the next, the expired ones first, with no branch or tag but ``main`` (at the newest)."""
    line = sorted(gone, key=lambda s: s.sequence_number or 0) + remaining
    if any(later.parent_snapshot_id != earlier.snapshot_id for earlier, later in zip(line, line[1:], strict=False)):
        return False
    refs = table.metadata.refs
    return set(refs) <= {"main"} and all(ref.snapshot_id == line[-1].snapshot_id for ref in refs.values())


def _commit_expiry(table: Table, victims: set[int]) -> set[int]:
    """Commit the expiry of ``victims`` (those still there and not current); returns the snapshots expired."""
    for attempt in range(1, 5):  # the worker commits every second: a conflict is likely, and harmless
        try:
            table.maintenance.expire_snapshots().by_ids(sorted(victims)).commit()
            return victims
        except CommitFailedException as exc:
            table.refresh()
            victims = {s.snapshot_id for s in table.metadata.snapshots if s.snapshot_id in victims}
            current = table.current_snapshot()
            if current is not None:
                victims.discard(current.snapshot_id)
            if attempt == 4:
                raise CommitConflict(f"expiring snapshots of {'.'.join(table.name())} conflicted: {exc}") from exc
            if not victims:
                return victims
    return victims


def trim_changelog(changelog: Table, older_than: timedelta, folded_below: int | None) -> int:
    """Delete change-log rows committed longer than ``older_than`` ago; with a state table only rows of
    transactions already folded into it (``_lsn < folded_below``). Returns the number of rows deleted."""
    changelog.refresh()
    if changelog.current_snapshot() is None:
        return 0
    cutoff = (datetime.now(UTC) - older_than).isoformat()
    condition: BooleanExpression = LessThan(COMMIT_TS, cutoff)  # type: ignore[call-arg,arg-type]
    if folded_below is not None:
        condition = And(condition, LessThan(LSN, folded_below))  # type: ignore[call-arg,arg-type]
    before = int(changelog.current_snapshot().summary.get("total-records", "0"))  # type: ignore[union-attr]
    _commit(changelog, lambda txn: txn.delete(condition, snapshot_properties=_carry_stamp(changelog, "trim")))
    changelog.refresh()
    after = int(changelog.current_snapshot().summary.get("total-records", "0"))  # type: ignore[union-attr]
    return before - after


def file_count(table: Table) -> int:
    table.refresh()
    return len(list(table.scan().plan_files())) if table.current_snapshot() else 0


def run(
    tables: list[Table],
    *,
    do_compact: bool,
    do_expire: bool,
    expiry: timedelta,
    keep_at_most: int = 0,
    cut: int | None = None,
) -> dict[str, Result]:
    results = {}
    for table in tables:
        started = time.monotonic()
        result = Result()
        lost: CommitConflict | None = None
        if do_compact:
            try:
                result = compact(table)
            except CommitConflict as exc:  # lost to the writer: on a busy table it may every time, expire anyway
                lost = exc
        if do_expire:
            expired = expire(table, expiry, keep_at_most=keep_at_most, cut=cut)
            result.snapshots_expired, result.files_deleted = expired.snapshots_expired, expired.files_deleted
        if lost is not None:
            raise lost
        name = ".".join(table.name())
        results[name] = result
        log.info("maintenance of %s: %s (%.2fs)", name, result, time.monotonic() - started)
    return results


__all__ = ["compact", "expire", "run", "trim_changelog", "file_count", "Result", "pa"]

"""Upkeep of a state table kept with position deletes (:mod:`lakegate.connectors.iceberg.state`).

Each commit adds a small data file and a small delete file. :func:`compact` keeps both in check, in one snapshot,
and moves the key index along (rows that move get their new locations; nothing else is read again):

- a data file whose deleted fraction reaches ``deleted_fraction`` (default 20 %) is rewritten without its deleted
  rows; one whose rows are all deleted is just removed;
- small data files (under ``small_file``, default 8 MiB) are merged once there are ``min_small_files`` (16) of them,
  by size tiers (in rows) as delete files are (below): the smallest first, a file joining while it is no larger
  than those before it together, so a merged file is merged again only once as many rows of newer files come,
  and a row is rewritten O(log n) times as its file grows to ``small_file``, not at every compaction (issue
  11.16); at most ``min_small_files`` small files remain (a compaction by hand, ``lakegate maintain``, merges them
  all);
- delete files that reference only rewritten data files are removed; when more than ``max_delete_files`` (16)
  remain, the smaller ones are merged, tier by tier (a file is merged with the ones no larger than it together),
  so that a deleted position is rewritten O(log n) times, not at every merge; positions of data files no longer
  in the table are dropped on the way.

The cost is that of the changes: a data file is rewritten only after a fifth of it changed, or while it is small;
delete files hold only changed positions. At most ``max_bytes`` (512 MiB) of data files are rewritten per call;
the writer's own compactions, which run between two flushes and so hold the next one back, take steps of
``step_bytes`` (16 MiB) instead, and go on at the next flush while work is left (a 3.5 s compaction of a growing
TPC-C ``order_line`` held every table's next commit back by as much, the p99 of their staleness).
Written by hand because pyiceberg 0.12 neither rewrites data files nor touches delete files.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.manifest import DataFile, DataFileContent, ManifestContent, ManifestEntry
from pyiceberg.table import FileScanTask

from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg import deletes, filereads, leancommit, manifestcache, merge, rowcache
from lakegate.connectors.iceberg.references import delete_unreferenced
from lakegate.connectors.iceberg.rowdelta import RowDelta, transaction
from lakegate.connectors.iceberg.state import StateTable, stream_rows

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Thresholds:
    """When a state table is compacted and what a compaction rewrites (settings ``compact_*`` of ``[ingest]``)."""

    deleted_fraction: float = 0.2
    small_file: int = 8 * 2**20
    min_small_files: int = 16
    max_delete_files: int = 16
    max_bytes: int = 512 * 2**20
    step_bytes: int = 16 * 2**20  #: the most a compaction by the writer rewrites (the rest at its next flush)
    every: int = 16  #: state commits between two compactions by the writer (0: never; ``lakegate maintain``)


@dataclass
class Result:
    data_files_rewritten: int = 0
    data_files_written: int = 0
    rows_moved: int = 0
    delete_files_removed: int = 0
    delete_files_written: int = 0
    seconds: float = 0.0
    more: bool = False  #: data files were left for the next step (over the call's byte budget)

    def __bool__(self) -> bool:
        return bool(self.data_files_rewritten or self.delete_files_removed)

    def __str__(self) -> str:
        if not self:
            return "nothing to compact"
        return (
            f"{self.data_files_rewritten} data file(s) -> {self.data_files_written} ({self.rows_moved} row(s) "
            f"moved), {self.delete_files_removed} delete file(s) -> {self.delete_files_written}"
        )


@dataclass
class _Layout:
    """The table's data files, its delete files (all of them: one may apply to no live file any more) and how
    many rows of each data file they delete."""

    tasks: list[FileScanTask]
    delete_files: dict[str, DataFile] = field(default_factory=dict)
    positions: dict[str, pa.Table] = field(default_factory=dict)  #: delete file path -> its (file_path, pos)
    deleted: dict[str, int] = field(default_factory=dict)  #: data file path -> rows deleted


def _layout(state: StateTable) -> _Layout:
    """Read from the current snapshot's manifests (kept in memory: :mod:`.manifestcache`) and its delete files.
    A delete file applies to the data files its positions name that were committed with it or before it."""
    table = state.table
    snapshot = table.current_snapshot()
    assert snapshot is not None
    layout = _Layout([])
    data: list[ManifestEntry] = []
    committed: dict[str, int] = {}  #: delete file path -> its sequence number
    for manifest in leancommit.manifests_of(table.io, snapshot):
        for entry in manifestcache.entries(table.io, manifest):
            if manifest.content == ManifestContent.DATA:
                data.append(entry)
                continue
            if entry.data_file.content != DataFileContent.POSITION_DELETES:
                raise LakeError(
                    f"{state.name} holds equality deletes ({entry.data_file.file_path}), which lakegate does not "
                    "compact; compact it with the engine that wrote them"
                )
            path = entry.data_file.file_path
            layout.delete_files[path] = entry.data_file
            layout.positions[path] = deletes.read(table.io, entry.data_file)
            committed[path] = entry.sequence_number or 0
    named: dict[str, list[str]] = {}  #: data file path -> delete files naming it
    for path, rows in layout.positions.items():
        for target in pc.unique(rows[deletes.FILE_PATH]).to_pylist():
            named.setdefault(target, []).append(path)
    for entry in data:
        applying = {
            layout.delete_files[p]
            for p in named.get(entry.data_file.file_path, ())
            if committed[p] >= (entry.sequence_number or 0)
        }
        layout.tasks.append(FileScanTask(entry.data_file, applying))
    if layout.positions:
        every = pa.concat_tables(layout.positions.values())
        counts = every.group_by(deletes.FILE_PATH, use_threads=False).aggregate([(deletes.POS, "count")])
        layout.deleted = dict(
            zip(counts[deletes.FILE_PATH].to_pylist(), counts["pos_count"].to_pylist(), strict=True)
        )
    return layout


def _pick_data_files(
    layout: _Layout, limits: Thresholds, tiers: bool = True, budget: int | None = None
) -> tuple[list[FileScanTask], bool]:
    """Files past the deleted fraction (most deleted first), then small files when there are enough of them: by
    size tiers, or (without ``tiers``) all of them; at most ``budget`` bytes (default ``max_bytes``, at least one
    file). Also whether files were left over."""
    scored = [
        (layout.deleted.get(t.file.file_path, 0) / max(t.file.record_count, 1), t) for t in layout.tasks
    ]
    picked = [t for fraction, t in sorted(scored, key=lambda s: -s[0]) if fraction >= limits.deleted_fraction]
    past = {t.file.file_path for t in picked}
    small = [t for t in layout.tasks if t.file.file_size_in_bytes < limits.small_file]
    if len(small) >= limits.min_small_files:
        # by size tiers, as delete files: a merged file is merged again only once the smaller files add up
        # to it, so a row is rewritten O(log n) times while its file grows, not at every compaction; sized by
        # rows, what a merge moves (a small file's bytes are mostly its footer)
        sizes = [(t.file.record_count, t.file.file_path) for t in small]
        tiered = set(_tier(sizes, limits.min_small_files - 1)) if tiers else {path for _, path in sizes}
        picked += [t for t in small if t.file.file_path in tiered and t not in picked]
    chosen: list[FileScanTask] = []
    total = 0
    most = limits.max_bytes if budget is None else budget
    for task in picked:
        if chosen and total + task.file.file_size_in_bytes > most:
            break
        chosen.append(task)
        total += task.file.file_size_in_bytes
    merging = [t for t in chosen if t.file.file_path not in past]
    if len(merging) == 1 and len(chosen) < len(picked):  # one small file rewritten alone merges nothing
        chosen.remove(merging[0])
        return chosen, False
    return chosen, len(chosen) < len(picked)


def _tier(sizes: list[tuple[int, str]], most: int) -> list[str]:
    """Delete files to merge, smallest first: each joins while it is no larger than those before it together."""
    if len(sizes) <= most:
        return []
    ordered = sorted(sizes)
    chosen, total = [ordered[0][1]], ordered[0][0]
    for rows, path in ordered[1:]:
        if rows > total and len(sizes) - len(chosen) <= most:
            break
        chosen.append(path)
        total += rows
    return chosen


def _plan_deletes(layout: _Layout, kept_paths: set[str], limits: Thresholds) -> tuple[list[str], pa.Table]:
    """(delete files to remove, positions to write anew)."""
    live: dict[str, int] = {}
    useless = []
    for path, rows in layout.positions.items():
        applies = rows.filter(pc.is_in(rows[deletes.FILE_PATH], pa.array(sorted(kept_paths), pa.string())))
        if applies.num_rows == 0:
            useless.append(path)
        else:
            live[path] = applies.num_rows
    merged = _tier([(n, p) for p, n in live.items()], limits.max_delete_files)
    if len(merged) < 2:
        merged = []
    parts = [layout.positions[p] for p in merged]
    rows = pa.concat_tables(parts) if parts else deletes.ARROW_SCHEMA.empty_table()
    rows = rows.filter(pc.is_in(rows[deletes.FILE_PATH], pa.array(sorted(kept_paths), pa.string())))
    return useless + merged, rows


def _read_live(
    state: StateTable, tasks: list[FileScanTask], layout: _Layout
) -> tuple[pa.Table, list[tuple[DataFile, np.ndarray]] | None]:
    """The live rows of ``tasks``' data files, in the table's columns: read with pyarrow when written with the
    table's current columns, their deleted positions known from the layout (:func:`filereads.read_current`),
    through pyiceberg's scan otherwise. Also each data file with its deleted positions in the order the rows
    come (None when some came through pyiceberg's scan, whose order is its own)."""
    table = state.table
    target = merge.arrow_schema(table.schema())
    schema_id = table.metadata.current_schema_id
    parts: list[pa.Table] = [merge.empty_table(target)]
    order: list[tuple[DataFile, np.ndarray]] = []
    rest: list[tuple[FileScanTask, np.ndarray]] = []
    for task in tasks:
        path = task.file.file_path
        gone = [deletes.for_file(layout.positions[d.file_path], path).to_numpy() for d in task.delete_files]
        deleted = np.concatenate(gone) if gone else np.empty(0, np.int64)
        kept = rowcache.recall(path, schema_id)  # written by this process moments ago: not read back
        if kept is not None and kept.num_rows == task.file.record_count:
            rows = filereads.without(pa.Table.from_arrays(kept.columns, schema=target), deleted)
        else:
            rows = filereads.read_current(table, task.file, deleted)
        if rows is None:
            rest.append((task, deleted))
        else:
            parts.append(rows)
            order.append((task.file, deleted))
    if rest:
        parts.append(filereads.read_all(table, rest))
    return pa.concat_tables(parts), None if rest else order


def compact(
    state: StateTable,
    properties: dict[str, str],
    limits: Thresholds | None = None,
    *,
    index: bool = True,
    tiers: bool | None = None,
    step: bool = False,
) -> Result:
    """Compact ``state`` in one snapshot stamped with ``properties``; see the module docstring. With ``index`` the
    key index moves with the rows (the writer's own StateTable, on its thread); without it no index is read
    (``lakegate maintain`` by hand: a running worker reads its index again when it finds the table moved).
    ``tiers`` (default: ``index``) merges small files by size tiers; without it every small file is merged into
    one (what a compaction by hand is asked for). With ``step`` (the writer's own) at most ``limits.step_bytes``
    are rewritten, and ``Result.more`` says whether files were left for the next step."""
    limits = limits or Thresholds()
    started = time.monotonic()
    if index:
        state.index  # noqa: B018  (the index must describe the table before rows move)
    table = state.table
    if table.current_snapshot() is None:
        return Result()
    layout = _layout(state)
    rewrite, more = _pick_data_files(
        layout, limits, index if tiers is None else tiers, limits.step_bytes if step else None
    )
    rewritten = {t.file.file_path for t in rewrite}
    kept = {t.file.file_path for t in layout.tasks} - rewritten
    removed_deletes, positions = _plan_deletes(layout, kept, limits)
    if not rewrite and not removed_deletes:
        return Result()
    rows, order = _read_live(state, rewrite, layout) if rewrite else (None, None)
    result = Result(len(rewrite), 0, rows.num_rows if rows is not None else 0, len(removed_deletes), more=more)
    added: list[DataFile] = []
    written: list[str] = []
    try:
        with transaction(table) as txn, RowDelta(txn, table.io, properties) as delta:
            for task in rewrite:
                delta.remove(task.file)
            for path in removed_deletes:
                delta.remove(layout.delete_files[path])
            if rows is not None and rows.num_rows:
                stream = stream_rows(txn, table, merge.conform(rows, merge.arrow_schema(table.schema())))
                added = stream.files
                written += [f.file_path for f in added]
                for data_file in added:
                    data_file.spec_id = txn.table_metadata.default_spec_id
                    delta.add(data_file)
            if positions.num_rows:
                delete_file = deletes.write(txn.table_metadata, table.io, positions)
                written.append(delete_file.file_path)
                delta.add(delete_file)
                result.delete_files_written = 1
    except (CommitFailedException, ValidationException) as exc:
        delete_unreferenced(table, written)  # never committed
        log.info("%s: compaction lost a race (%s); the next round tries again", state.name, exc)
        state.invalidate()
        return Result()
    rowcache.forget(sorted(rewritten))
    if index:
        state.adopt()
        # the rows keep their keys: move their locations without reading keys (by key when that cannot be done)
        if rows is not None and (order is None or not state.move(order, added)):
            state.locate(state.encode(rows), added)
        state.forget([t.file for t in rewrite])
    result.data_files_written = len(added)
    result.seconds = time.monotonic() - started
    log.info("%s: compacted: %s (%.2fs)", state.name, result, result.seconds)
    return result


__all__ = ["Result", "Thresholds", "compact", "np"]

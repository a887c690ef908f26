"""Which files a table's committed metadata references, and deleting only files it does not.

Every deletion lakegate does (a failed write's files, expired snapshots' files, orphans) goes through
:func:`delete_unreferenced`: a file is removed only after the table's metadata, read again from the catalog, shows
that no snapshot uses it. A commit whose outcome is unclear (it failed, or a concurrent writer raced it) can then
never cost a committed file.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable

from pyiceberg.manifest import ManifestFile
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

from lakegate.connectors.iceberg import manifestcache

log = logging.getLogger(__name__)


def referenced_paths(
    table: Table,
    snapshot_ids: set[int] | None = None,
    lists: dict[str, tuple[ManifestFile, ...]] | None = None,
    snapshots: Iterable[Snapshot] | None = None,
) -> set[str]:
    """Manifest lists, manifests, data and delete files that the given snapshots (default: all of the table's, or
    ``snapshots``) use. Manifests are read once per process (:mod:`.manifestcache`); manifest lists once per
    ``lists`` given (an expiry looks twice, before and after: at a busy table's hundreds of snapshots each look
    cost 0.2 s, issue 11.16)."""
    paths: set[str] = set()
    seen_manifests: set[str] = set()
    for snapshot in table.metadata.snapshots if snapshots is None else snapshots:
        if snapshot_ids is not None and snapshot.snapshot_id not in snapshot_ids:
            continue
        paths.add(snapshot.manifest_list)
        manifests = lists.get(snapshot.manifest_list) if lists is not None else None
        if manifests is None:
            manifests = tuple(snapshot.manifests(table.io))
            if lists is not None:
                lists[snapshot.manifest_list] = manifests
        for manifest in manifests:
            if manifest.manifest_path in seen_manifests:
                continue
            seen_manifests.add(manifest.manifest_path)
            paths.add(manifest.manifest_path)
            for entry in manifestcache.entries(table.io, manifest, discard_deleted=False):
                paths.add(entry.data_file.file_path)
    return paths


def metadata_paths(table: Table) -> set[str]:
    """The current metadata file, the previous ones it lists, and statistics files."""
    paths = {table.metadata_location}
    paths.update(entry.metadata_file for entry in table.metadata.metadata_log)
    paths.update(stats.statistics_path for stats in table.metadata.statistics)
    paths.update(stats.statistics_path for stats in getattr(table.metadata, "partition_statistics", []))
    return paths


def delete_unreferenced(table: Table, paths: Iterable[str]) -> int:
    """Delete those of ``paths`` that no snapshot of ``table`` (as committed now) references; returns how many.

    Never raises: it runs on failure paths, and a file left behind is an orphan that upkeep removes later."""
    wanted = [p for p in paths if p]
    if not wanted:
        return 0
    try:
        table.refresh()
        keep = referenced_paths(table)
    except Exception as exc:  # the catalog is unreachable: deleting blind could cost committed data
        log.warning(
            "could not read %s to check %d unfinished file(s); left for orphan removal: %s",
            ".".join(table.name()),
            len(wanted),
            exc,
        )
        return 0
    deleted = 0
    for path in wanted:
        if path in keep:
            log.warning(
                "%s: a write that seemed to fail was committed after all; keeping %s",
                ".".join(table.name()),
                path,
            )
            continue
        with contextlib.suppress(Exception):
            table.io.delete(path)
            deleted += 1
    return deleted

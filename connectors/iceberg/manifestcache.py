"""The entries of committed manifests, read once per process.

A state table's compaction reads every manifest of the table three times (pyiceberg's scan planning for the
layout, then the row delta's search for the entries it removes and its rewrite of the manifests that held them),
and each read of even a tiny manifest cost about 3 ms of Python (1 ms or so since the Avro reader trees are
built once per schema, :mod:`.avroreaders`): about two thirds of a compaction of a small table (issue 11.16). A
manifest file never changes once written (its name is unique), so its entries can be kept: after the first
compaction only the manifests committed since the last one are read.

Only manifests of committed snapshots are kept (their sequence number is assigned: entries inherit it); a
manifest written by a commit still being made is read from storage each time. The cache holds at most
``MAX_ENTRIES`` entries (least recently used manifests leave first). Callers must not change the entries they get
(pyiceberg's manifest writers copy what they write).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from pyiceberg.io import FileIO
from pyiceberg.manifest import ManifestEntry, ManifestEntryStatus, ManifestFile

MAX_ENTRIES = 50_000  #: about 1-2 KB each (a data file's statistics): tens of MB at most

_KEPT: OrderedDict[tuple[str, int, int | None], tuple[ManifestEntry, ...]] = OrderedDict()
_LOCK = threading.Lock()
_size = 0


def entries(io: FileIO, manifest: ManifestFile, discard_deleted: bool = True) -> list[ManifestEntry]:
    """``manifest.fetch_manifest_entry(io, discard_deleted)``, from memory when this process read it before."""
    global _size
    sequence = manifest.sequence_number
    if sequence is None or sequence < 0:  # not committed yet: its entries inherit a number still to come
        return manifest.fetch_manifest_entry(io, discard_deleted=discard_deleted)
    key = (manifest.manifest_path, sequence, manifest.added_snapshot_id)
    with _LOCK:
        found = _KEPT.get(key)
        if found is not None:
            _KEPT.move_to_end(key)
    if found is None:
        found = tuple(manifest.fetch_manifest_entry(io, discard_deleted=False))
        with _LOCK:
            if key not in _KEPT:
                _KEPT[key] = found
                _size += len(found)
            while _size > MAX_ENTRIES and len(_KEPT) > 1:
                _, dropped = _KEPT.popitem(last=False)
                _size -= len(dropped)
    if not discard_deleted:
        return list(found)
    return [e for e in found if e.status != ManifestEntryStatus.DELETED]


def clear() -> None:
    """Forget every entry (tests)."""
    global _size
    with _LOCK:
        _KEPT.clear()
        _size = 0

"""Snapshot lookups by id through an index instead of a scan of the table's snapshot list (issue 11.16).

pyiceberg 0.12's ``TableMetadata.snapshot_by_id`` walks the snapshot list with a generator, reading each
snapshot's id through pydantic; a commit asks it a dozen times (the current snapshot, the new id's uniqueness, the
snapshot an update adds or points a branch at), and a miss reads the whole list. With a commit per table and flush
and dozens to hundreds of snapshots kept per table, that scan was the largest single item of a 50-table flush's
profile (``bench.commits``: 0.9 of 38 s, about 37 µs a call at 61 snapshots).

The index is a dict per snapshot list, kept while the same list object is current: pyiceberg's metadata models are
frozen and every update builds a new list (``base.snapshots + [snapshot]``; nothing in pyiceberg 0.12 or lakegate
changes one in place), and the index is rebuilt whenever the list it was made from is not the one asked about or
changed length. The answer is the scan's: the first snapshot with that id, or ``None``. :func:`install` puts it
in place once per process, for pyiceberg 0.12 only; lists shorter than :data:`INDEX_FROM` are still scanned.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict

import pyiceberg
from pyiceberg.table.metadata import TableMetadataCommonFields
from pyiceberg.table.snapshots import Snapshot

INDEX_FROM = 8  #: shorter lists: the scan is as cheap
_INDEX: OrderedDict[int, tuple[list[Snapshot], int, dict[int, Snapshot]]] = (
    OrderedDict()
)  #: id(list) -> (the list, its length then, index)
_INDEX_MAX = 1024  #: a few per table being committed at once
_GUARD = threading.Lock()
_INSTALLED = False
_scan = TableMetadataCommonFields.snapshot_by_id
_ID = operator.attrgetter("snapshot_id")


def _snapshot_by_id(self: TableMetadataCommonFields, snapshot_id: int) -> Snapshot | None:
    snapshots = self.snapshots
    if len(snapshots) < INDEX_FROM:
        return _scan(self, snapshot_id)
    with _GUARD:
        kept = _INDEX.get(id(snapshots))
    if kept is None or kept[0] is not snapshots or kept[1] != len(snapshots):
        backwards = snapshots[
            ::-1
        ]  # a later duplicate is overwritten by an earlier one: the first wins, as the scan
        index = dict(zip(map(_ID, backwards), backwards, strict=True))
        kept = (snapshots, len(snapshots), index)
        with _GUARD:
            _INDEX[id(snapshots)] = kept
            _INDEX.move_to_end(id(snapshots))
            while len(_INDEX) > _INDEX_MAX:
                _INDEX.popitem(last=False)
    return kept[2].get(snapshot_id)


def install() -> None:
    global _INSTALLED
    if _INSTALLED or not pyiceberg.__version__.startswith("0.12."):
        return
    TableMetadataCommonFields.snapshot_by_id = _snapshot_by_id  # type: ignore[method-assign]
    _INSTALLED = True

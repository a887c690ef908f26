"""A table's metadata JSON, with each snapshot's JSON kept from the versions written before (issue 11.16).

Every commit writes the table's whole metadata anew, and it lists every snapshot the table keeps (up to
``snapshot_keep``, 100 by default, and more between two upkeep rounds), each with its summary. pyiceberg serializes
the whole model each time; with a commit per table and flush that became the largest part of writing the metadata
file as snapshots accumulated. A snapshot never changes once committed (the models are frozen, and a snapshot id
names one snapshot of a table), so its JSON is kept per (table, snapshot id) and the metadata is serialized
without its snapshots, which are spliced back in at their place. The result is the same text pyiceberg writes
(``tests/test_lean_commit.py`` compares them); format-version 1 metadata, small histories and anything unexpected
go through pyiceberg as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Snapshot

_EMPTY = '"snapshots":[]'
_KEPT: OrderedDict[tuple[str, int, bool], str] = (
    OrderedDict()
)  #: (table uuid, snapshot id, exclude_none) -> JSON
_KEPT_MAX = 200_000  #: a worker's tables times the snapshots each keeps, several times over (~1 KiB each)
_GUARD = threading.Lock()
SPLICE_FROM = 8  #: fewer snapshots than this: pyiceberg's serialization as it is


def dumps(metadata: TableMetadata, *, exclude_none: bool = True) -> bytes:
    """``metadata.model_dump_json(exclude_none=...)``, UTF-8 encoded."""
    snapshots = metadata.snapshots
    if len(snapshots) < SPLICE_FROM or metadata.format_version < 2:
        return metadata.model_dump_json(exclude_none=exclude_none).encode("utf-8")
    head = metadata.model_copy(update={"snapshots": []}).model_dump_json(exclude_none=exclude_none)
    if head.count(_EMPTY) != 1:
        return metadata.model_dump_json(exclude_none=exclude_none).encode("utf-8")
    table = str(metadata.table_uuid)
    parts = [_snapshot_json(table, snapshot, exclude_none) for snapshot in snapshots]
    return head.replace(_EMPTY, '"snapshots":[' + ",".join(parts) + "]").encode("utf-8")


def _snapshot_json(table: str, snapshot: Snapshot, exclude_none: bool) -> str:
    key = (table, snapshot.snapshot_id, exclude_none)
    with _GUARD:
        text = _KEPT.get(key)
    if text is None:
        text = snapshot.model_dump_json(exclude_none=exclude_none)
        with _GUARD:
            _KEPT[key] = text
            while len(_KEPT) > _KEPT_MAX:
                _KEPT.popitem(last=False)
    return text

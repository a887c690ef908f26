"""A table's metadata JSON, assembled from the JSON of its immutable parts kept from the versions written before
(issue 11.16).

Every commit writes the table's whole metadata anew, and it lists every snapshot the table keeps (up to
``snapshot_keep``, 100 by default, and more between two upkeep rounds) with its summary, the snapshot log (one entry
per snapshot) and the metadata log. pyiceberg serializes the whole model each time; with a commit per table and
flush that became the largest part of writing the metadata file as snapshots accumulated. A snapshot never changes
once committed (the models are frozen, and a snapshot id names one snapshot of a table), nor does a log entry, so:

- the metadata is serialized without its schemas, snapshots and two logs, which are spliced back in at their place;
- each snapshot's JSON is kept per (table, snapshot id, parent id), each schema's per (table, schema id), each
  metadata-log entry's per (file, timestamp); a snapshot-log entry (two integers) is formatted directly;
- each list's items and their texts are kept per table: a commit adds one snapshot and one entry to each log (and
  the metadata log, once full, drops its oldest), and pyiceberg's updates carry the other items over as the same
  objects, so the next document serializes only the new items, found by comparing the lists item by item at C
  speed.

The result is the same text pyiceberg writes (``tests/test_commit_files.py`` compares them byte for byte through
appends, expiry and a sliding metadata log); format-version 1 metadata, small histories and anything unexpected go
through pyiceberg as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import Any

from pyiceberg.table.metadata import TableMetadata

_LISTS = (
    ("schemas", "schemas"),
    ("snapshots", "snapshots"),
    ("snapshot_log", "snapshot-log"),
    ("metadata_log", "metadata-log"),
)
_EMPTY = {field: f'"{alias}":[]' for field, alias in _LISTS}
_NONE: dict[str, list[Any]] = {field: [] for field, _ in _LISTS}
_KEPT: OrderedDict[tuple[Hashable, ...], str] = OrderedDict()  #: (table, kind, key..., exclude_none) -> JSON
_KEPT_MAX = 200_000  #: a worker's tables times the snapshots each keeps, several times over (~1 KiB each)
_JOINED: OrderedDict[tuple[str, str, bool], tuple[tuple[Any, ...], list[str]]] = OrderedDict()
_JOINED_MAX = 4 * 4096  #: four lists of a worker's tables (change logs and state tables), a few times over
_SLIDE = (
    4  #: entries a list may lose at its start between two versions and still be extended (the metadata log)
)
_GUARD = threading.Lock()
SPLICE_FROM = 8  #: fewer snapshots than this: pyiceberg's serialization as it is


def dumps(metadata: TableMetadata, *, exclude_none: bool = True) -> bytes:
    """``metadata.model_dump_json(exclude_none=...)``, UTF-8 encoded."""
    if len(metadata.snapshots) < SPLICE_FROM or metadata.format_version < 2:
        return metadata.model_dump_json(exclude_none=exclude_none).encode("utf-8")
    head = metadata.model_copy(update=_NONE).model_dump_json(exclude_none=exclude_none)
    if any(head.count(marker) != 1 for marker in _EMPTY.values()):
        return metadata.model_dump_json(exclude_none=exclude_none).encode("utf-8")
    table = str(metadata.table_uuid)
    texts: dict[str, Callable[[Any], str]] = {
        "schemas": lambda s: _kept((table, "schema", s.schema_id, exclude_none), s, exclude_none),
        "snapshots": lambda s: _kept(
            (table, "s", s.snapshot_id, s.parent_snapshot_id, exclude_none), s, exclude_none
        ),
        "snapshot_log": _snapshot_log_entry,
        "metadata_log": lambda e: _kept(
            ("m", e.metadata_file, e.timestamp_ms, exclude_none), e, exclude_none
        ),
    }
    # spliced in one pass over the head (str.replace would copy the whole document once per list)
    spots = sorted((head.index(_EMPTY[field]) + len(_EMPTY[field]) - 1, field) for field in texts)
    pieces: list[str] = []
    start = 0
    for end, field in spots:  # ``end``: the position of the list's closing bracket
        pieces += (
            head[start:end],
            _joined((table, field, exclude_none), getattr(metadata, field), texts[field]),
        )
        start = end
    pieces.append(head[start:])
    return "".join(pieces).encode("utf-8")


def _joined(slot: tuple[str, str, bool], items: Sequence[Any], text: Callable[[Any], str]) -> str:
    """The items' JSON joined with commas. The items and their texts are kept per table and list: the next
    version's list is compared with them item by item (the same objects, as pyiceberg's updates carry them over,
    compare at C speed; others by pydantic's equality), and when it only lost a few items at its start and
    gained some at its end, only the new ones are serialized."""
    current = tuple(items)
    with _GUARD:
        last = _JOINED.get(slot)
    parts: list[str] | None = None
    if last is not None:
        kept, kept_parts = last
        if current == kept:
            return ",".join(kept_parts)
        for lost in range(min(_SLIDE, len(kept))) if current else ():
            if kept[lost] == current[0]:
                same = len(kept) - lost
                if len(current) >= same and current[:same] == kept[lost:]:
                    parts = kept_parts[lost:] + [text(item) for item in current[same:]]
                break
    if parts is None:
        parts = [text(item) for item in current]
    with _GUARD:
        _JOINED[slot] = (current, parts)
        _JOINED.move_to_end(slot)
        while len(_JOINED) > _JOINED_MAX:
            _JOINED.popitem(last=False)
    return ",".join(parts)


def _snapshot_log_entry(entry: Any) -> str:
    """A snapshot-log entry as pydantic writes it (two required integers, in this order)."""
    snapshot_id, timestamp = entry.snapshot_id, entry.timestamp_ms
    if type(snapshot_id) is not int or type(timestamp) is not int:
        return str(entry.model_dump_json())
    return f'{{"snapshot-id":{snapshot_id},"timestamp-ms":{timestamp}}}'


def _kept(key: tuple[Hashable, ...], model: Any, exclude_none: bool) -> str:
    with _GUARD:
        text = _KEPT.get(key)
    if text is None:
        text = str(model.model_dump_json(exclude_none=exclude_none))
        with _GUARD:
            _KEPT[key] = text
            while len(_KEPT) > _KEPT_MAX:
                _KEPT.popitem(last=False)
    return text

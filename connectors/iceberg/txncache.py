"""pyiceberg 0.12's ``Transaction.table_metadata`` re-applies every staged update and deep-copies the whole table
metadata, snapshot list included, on every read; one append reads it about twenty times (the snapshot producer,
the data-file writer, the statistics guard). Its cost grows with the table's history: with a commit a second and
an hour of snapshots kept, it dominated each commit (46 of 82 ms at a few dozen snapshots, in a profile of 20
tables streamed at once), and a worker with many tables spent its time copying metadata.

The fix pyiceberg's maintainers approved upstream (apache/iceberg-python#3302, carried on as #3784) caches the
result keyed on the identity of its two inputs: the table's metadata object (replaced when the table is
refreshed or a commit lands) and the tuple of staged updates (immutable, rebound by every ``_stage``), so any
change invalidates the cache without bookkeeping. Until a release has it, :func:`install` puts that cache in place
(once per process, for pyiceberg 0.12 only). The one visible difference, as upstream: ``last_updated_ms`` of the
metadata read twice in one state is the same both times; the commit still stamps its own time.

One step further than upstream, for the commit path of many small tables (issue 11.16): :func:`applied` applies the
updates as ``update_table_metadata`` does but without its final deep copy of the whole metadata (3 ms per call at
a dozen snapshots, more with more, three calls per commit). That copy only guards against someone changing the
result in place; the metadata models are frozen pydantic models and every update pyiceberg 0.12 applies builds
new lists and dicts (``model_copy(update=...)``), so sharing the untouched parts with the base is safe. The
flush catalog (:mod:`.flushcatalog`) reuses the transaction's result for the commit instead of applying the
updates a third time.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from datetime import datetime

import pyiceberg
from pyiceberg.table import Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import TableUpdate, _apply_table_update, _TableMetadataUpdateContext
from pyiceberg.utils.datetime import datetime_to_millis

_INSTALLED = False
_RECENT: OrderedDict[int, tuple[TableMetadata, tuple[TableUpdate, ...], TableMetadata]] = OrderedDict()
_RECENT_MAX = 64  #: results kept for the catalog's commit (several tables commit at once)
_GUARD = threading.Lock()


def _apply(base: TableMetadata, updates: tuple[TableUpdate, ...]) -> TableMetadata:
    """``update_table_metadata(base, updates)`` of pyiceberg 0.12 without the final deep copy (see the module)."""
    context = _TableMetadataUpdateContext()
    metadata = base
    for update in updates:
        metadata = _apply_table_update(update, metadata, context)
    if context.has_changes() and base.last_updated_ms == metadata.last_updated_ms:
        metadata = metadata.model_copy(
            update={"last_updated_ms": datetime_to_millis(datetime.now().astimezone())}
        )
    metadata.spec().check_compatible(metadata.schema())
    metadata.sort_order().check_compatible(metadata.schema())
    return metadata


def applied(base: TableMetadata, updates: tuple[TableUpdate, ...]) -> TableMetadata:
    """``base`` with ``updates`` applied; the same object for the same (base, updates) objects while recent."""
    with _GUARD:
        cached = _RECENT.get(id(updates))
    if cached is not None and cached[0] is base and cached[1] is updates:
        return cached[2]
    metadata = _apply(base, updates)
    with _GUARD:
        _RECENT[id(updates)] = (base, updates, metadata)
        _RECENT.move_to_end(id(updates))
        while len(_RECENT) > _RECENT_MAX:
            _RECENT.popitem(last=False)
    return metadata


def remember(base: TableMetadata, updates: tuple[TableUpdate, ...], metadata: TableMetadata) -> None:
    """Make ``metadata`` the answer of :func:`applied` for (``base``, ``updates``): a caller that computed the
    result itself (:mod:`.leancommit`, exactly as the updates would make it) spares the catalog applying them."""
    with _GUARD:
        _RECENT[id(updates)] = (base, updates, metadata)
        _RECENT.move_to_end(id(updates))
        while len(_RECENT) > _RECENT_MAX:
            _RECENT.popitem(last=False)


def _cached_table_metadata(self: Transaction) -> TableMetadata:
    return applied(self._table.metadata, self._updates)


def install() -> None:
    global _INSTALLED
    if _INSTALLED or not pyiceberg.__version__.startswith("0.12."):
        return
    Transaction.table_metadata = property(_cached_table_metadata)  # type: ignore[method-assign,assignment]
    _INSTALLED = True

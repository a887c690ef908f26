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
"""

from __future__ import annotations

import pyiceberg
from pyiceberg.table import Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.update import update_table_metadata

_INSTALLED = False


def _cached_table_metadata(self: Transaction) -> TableMetadata:
    base, updates = self._table.metadata, self._updates
    cached = self.__dict__.get("_lakegate_metadata")
    if cached is not None and cached[0] is base and cached[1] is updates:
        return cached[2]  # type: ignore[no-any-return]
    metadata = update_table_metadata(base, updates)
    self.__dict__["_lakegate_metadata"] = (base, updates, metadata)
    return metadata


def install() -> None:
    global _INSTALLED
    if _INSTALLED or not pyiceberg.__version__.startswith("0.12."):
        return
    Transaction.table_metadata = property(_cached_table_metadata)  # type: ignore[method-assign,assignment]
    _INSTALLED = True

"""The consistent cut: the source position up to which every table of a source is committed to the lake.

Iceberg commits one table at a time, so a worker writes a flush as one commit per table, and a reader that looks
between two of them would see one table after a source transaction and another before it. Once every table of a
flush is committed, the worker records the flush's position (the end of the last complete source transaction) in
the namespace properties of each namespace that holds the source's tables, as ``lakegate.cut.<source>``. Every
commit of a table is stamped with the position of its last change (the commit LSN of that change's transaction,
which is below the end of that transaction); a reader that takes, for each table, the newest snapshot stamped
below the cut reads all of them at one source position (:func:`snapshot_at`).

Namespace properties live in the catalog, so every catalog holds the cut, and a lake without one (written before
it existed, or while no flush has finished yet) is read as it is. With the SQL catalog the worker writes the cut
in the same catalog transaction that makes the flush's tables visible (:func:`stage`): readers see the new cut at
the very moment they can see the tables, not after a second transaction (issue 11.16, freshness).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from pyiceberg.catalog import Catalog
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot, ancestors_of

from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg import flushcatalog
from lakegate.connectors.iceberg.commits import PROP_LSN

log = logging.getLogger(__name__)

PREFIX = "lakegate.cut."


def record(catalog: Catalog, source: str, namespaces: Iterable[str], lsn: int) -> None:
    """Say that every table ``source`` replicates into ``namespaces`` holds all of the source before ``lsn``."""
    value = str(lsn)
    try:
        for namespace in sorted(set(namespaces)):
            catalog.update_namespace_properties(namespace, updates={PREFIX + source: value})
    except Exception as exc:  # whatever the catalog implementation raises
        raise LakeError(f"cannot record the consistent cut of source {source!r} in the lake: {exc}") from exc


def stage(catalog: Catalog, source: str, namespaces: Iterable[str], lsn: int) -> bool:
    """Inside a flush of the SQL catalog (:func:`.flushcatalog.flush`): record the cut in the flush's own
    transaction, visible with its tables, and True; False when the catalog cannot (commits table by table, or
    the flush stages no table): :func:`record` it once the flush is committed."""
    if not isinstance(catalog, flushcatalog.FlushCatalog):
        return False
    return catalog.stage_namespace_properties(sorted(set(namespaces)), {PREFIX + source: str(lsn)})


def parse(properties: dict[str, str]) -> dict[str, int]:
    """source -> cut, from one namespace's properties (a damaged value counts as no cut: it is only an aid)."""
    cuts: dict[str, int] = {}
    for key, value in properties.items():
        if key.startswith(PREFIX):
            try:
                cuts[key[len(PREFIX) :]] = int(value)
            except ValueError:
                log.warning("ignoring the damaged consistent cut %s=%r", key, value)
    return cuts


def lowest(per_namespace: Iterable[dict[str, int]]) -> dict[str, int]:
    """The cut of each source over several namespaces: the lowest (the worker records them one by one)."""
    out: dict[str, int] = {}
    for cuts in per_namespace:
        for source, lsn in cuts.items():
            out[source] = min(lsn, out.get(source, lsn))
    return out


def snapshot_at(table: Table, cut: int) -> Snapshot | None:
    """The newest snapshot of ``table``'s current lineage whose data is all before ``cut``: stamped below it, or
    a maintenance commit (no stamp: the same rows as the stamped snapshot below it) over such a one. The current
    snapshot when the table has no stamped snapshot below the cut (created, or copied afresh, after it: there is
    no older version of it at the cut to read)."""
    current = table.current_snapshot()
    if current is None:
        return None
    unstamped: Snapshot | None = None  #: the newest snapshot since the last stamped one seen
    for snap in ancestors_of(current, table.metadata):
        props = snap.summary.additional_properties if snap.summary else {}
        if PROP_LSN not in props:
            unstamped = unstamped or snap
            continue
        if int(props[PROP_LSN]) < cut:
            return unstamped or snap
        unstamped = None  # maintenance commits over a snapshot past the cut are past it as well
    return current

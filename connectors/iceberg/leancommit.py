"""The commit of lakegate's own small snapshots, without pyiceberg's generic snapshot producer (issue 11.16).

Every flush commits, for each table with changes, one snapshot to its change log (data files appended) and one to
its state table (data files and position-delete files added, nothing removed). pyiceberg 0.12's producers
(``fast_append``, and :class:`.rowdelta.RowDelta` built on them) pay a fixed cost per commit, whatever it holds:
each manifest and manifest-list file rebuilds its Avro writer tree from the schema and serializes the Avro schema
to JSON again, every manifest of the parent is encoded again into the new manifest list (up to
``min-count-to-merge`` of each kind, about 0.1 ms each in pyiceberg's pure-Python encoder), and the producer
machinery (snapshot producer set-up, merge manager, the row delta's manifest filtering) runs for a snapshot that
only adds a file or two. Measured at the lake-writing layer (20 tables, 5 rows per table and flush, thread CPU
around the commit with the data files' own writing excluded, both ways alternating in one process, load 3-6):
**the state table's commit costs 5.0-5.3 ms through pyiceberg, 2.5 ms here; the change log's append 2.6-2.7 ms
through pyiceberg, 2.45 ms here** (pyiceberg's fast append was already lean; what is left in both is mostly the
manifest entry's Avro encoding, the snapshot summary, and the metadata JSON the catalog writes, which grows with
the snapshots a table keeps). ``python -m bench.commits --compare`` prints the whole flush both ways.

What is written by hand is only the plumbing; the files are pyiceberg's:

- manifests and manifest lists are written by pyiceberg's own ``ManifestWriterV2`` / ``ManifestListWriterV2``
  (entry counts, sequence-number inheritance, partition summaries, ``min_sequence_number``), without what they
  redo for every file (:mod:`.manifestfiles`);
- the snapshot summary is pyiceberg's (``SnapshotSummaryCollector``, with lakegate's stamp properties, and the
  totals carried from the parent by ``update_snapshot_summaries``' rule, applied on plain dicts), the snapshot
  id and sequence number come from the table metadata as pyiceberg's producer takes them, and the new metadata
  is what pyiceberg's update functions make of the same two updates a producer emits (``AddSnapshotUpdate``,
  ``SetSnapshotRefUpdate`` on ``main``, required to still point at the parent), built in one copy
  (:func:`with_snapshot`: the fields those updates set, to the same values; anything else goes through them),
  and the metadata log is pyiceberg's own doing;
- the parent's manifest list is not read back: the list this process last wrote for a table is kept in memory
  (keyed by its path, which names one snapshot), and read from the lake only when another writer made the parent.
- snapshot ids and file names are drawn from :mod:`.ids` rather than ``os.urandom``.

It relies on: format version 2, an unpartitioned default spec, nothing but added files (a commit that removes
files, such as a compaction or a truncate, goes through pyiceberg), manifests below the merge threshold (once a
table would merge manifests, pyiceberg's merge-append does it), a transaction with no other staged update (a
statistics guard that sets properties sends the commit through pyiceberg), and the flush catalog
(:mod:`.flushcatalog`) staging the commit inside a flush: its optimistic pointer swap and the ref requirement are
the only concurrency checks, as for ``RowDelta(exclusive=True)``. Anything else returns ``False`` and the caller
commits through pyiceberg. It leans on pyiceberg 0.12 internals (pinned in pyproject.toml).
"""

from __future__ import annotations

import contextlib
import threading
import zlib
from collections import OrderedDict
from collections.abc import Sequence

from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
)
from pyiceberg.table import TableProperties, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRef, SnapshotRefType
from pyiceberg.table.snapshots import (
    ADDED_DATA_FILES,
    ADDED_DELETE_FILES,
    ADDED_EQUALITY_DELETES,
    ADDED_FILE_SIZE,
    ADDED_POSITION_DELETES,
    ADDED_RECORDS,
    DELETED_DATA_FILES,
    DELETED_RECORDS,
    REMOVED_DELETE_FILES,
    REMOVED_EQUALITY_DELETES,
    REMOVED_FILE_SIZE,
    REMOVED_POSITION_DELETES,
    TOTAL_DATA_FILES,
    TOTAL_DELETE_FILES,
    TOTAL_EQUALITY_DELETES,
    TOTAL_FILE_SIZE,
    TOTAL_POSITION_DELETES,
    TOTAL_RECORDS,
    Operation,
    Snapshot,
    SnapshotLogEntry,
    SnapshotSummaryCollector,
    Summary,
)
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
)
from pyiceberg.utils.properties import property_as_bool, property_as_int

from lakegate.connectors.iceberg import flushcatalog, ids, manifestfiles, txncache

_MANIFESTS: OrderedDict[str, tuple[ManifestFile, ...]] = OrderedDict()  #: manifest list path -> its entries
_MANIFESTS_MAX = 4096  #: two per table: a worker's tables, a few times over
_GUARD = threading.Lock()
_RECORD: dict[str, tuple[ManifestFile, ...]] | None = None  #: see :func:`record`
_RECORD_MAX = 100_000  #: a writer process's tables times the snapshots each keeps, a few times over
ENABLED = True  #: False: every commit goes through pyiceberg (``bench.commits --compare`` measures both)


# -------------------------------------------------------------------------------------------- the commit


def applicable(txn: Transaction, files: Sequence[DataFile], removes: bool = False) -> bool:
    """Whether :func:`commit` can commit these files on this transaction (see the module docstring)."""
    table = txn._table
    catalog = table.catalog
    if (
        not ENABLED
        or removes
        or txn._updates
        or not isinstance(catalog, flushcatalog.FlushCatalog)
        or not catalog.flushing()
    ):
        return False
    metadata = table.metadata
    if metadata.format_version != 2 or not metadata.spec().is_unpartitioned():
        return False
    spec_id = metadata.default_spec_id
    return all(
        getattr(f, "_spec_id", spec_id) == spec_id and f.content != DataFileContent.EQUALITY_DELETES
        for f in files
    )


def parent_manifests(txn: Transaction, snapshot: Snapshot | None) -> tuple[ManifestFile, ...]:
    return manifests_of(txn._table.io, snapshot)


def manifests_of(io: FileIO, snapshot: Snapshot | None) -> tuple[ManifestFile, ...]:
    """``snapshot.manifests(io)``, each manifest list read once per process (and not at all when this process
    wrote it): a compaction read its table's list three times."""
    if snapshot is None:
        return ()
    with _GUARD:
        known = _MANIFESTS.get(snapshot.manifest_list)
    if known is None:
        known = tuple(snapshot.manifests(io))
        _remember(snapshot.manifest_list, known)
    return known


def _remember(path: str, manifests: tuple[ManifestFile, ...]) -> None:
    with _GUARD:
        _MANIFESTS[path] = manifests
        _MANIFESTS.move_to_end(path)
        while len(_MANIFESTS) > _MANIFESTS_MAX:
            _MANIFESTS.popitem(last=False)
        if _RECORD is not None:
            _RECORD[path] = manifests
            while len(_RECORD) > _RECORD_MAX:
                del _RECORD[next(iter(_RECORD))]


def record(lists: dict[str, tuple[ManifestFile, ...]] | None) -> None:
    """Put every manifest list this process writes or reads from now on into ``lists`` too (path -> manifests;
    None: stop), for a caller that looks at the same lists again much later, when the bounded memory here has
    let them go: a writer process's snapshot expiry (:mod:`lakegate.ingest.writerupkeep`), which takes out
    what it expired. At most ``_RECORD_MAX`` are kept (the oldest go first)."""
    global _RECORD
    with _GUARD:
        _RECORD = lists


def merge_count(metadata: TableMetadata) -> int:
    """How many manifests of a kind this table's commits merge at: ``commit.manifest.min-count-to-merge`` plus
    up to half of it again, by the table's UUID. Tables written together (a worker's hundreds, one commit per
    flush each) reach the property's count at the same flush, and a flush that merged every table's manifests
    took three times as long as the others: the one spike of the freshness tail (issue 11.16). Spread, about
    1 in ``count / 2`` of them merges at each flush; the count stays a minimum, as the property says."""
    count = (
        property_as_int(
            metadata.properties,
            TableProperties.MANIFEST_MIN_MERGE_COUNT,
            TableProperties.MANIFEST_MIN_MERGE_COUNT_DEFAULT,
        )
        or 0
    )
    if count < 4:
        return count
    return count + zlib.crc32(metadata.table_uuid.bytes) % (count // 2 + 1)


def _below_merge(
    metadata: TableMetadata, manifests: Sequence[ManifestFile], new: set[ManifestContent]
) -> bool:
    """Whether pyiceberg's merge-append would leave these manifests and new ones of the ``new`` kinds as they
    are (it merges a kind once there are ``commit.manifest.min-count-to-merge`` of them)."""
    props = metadata.properties
    if not property_as_bool(
        props, TableProperties.MANIFEST_MERGE_ENABLED, TableProperties.MANIFEST_MERGE_ENABLED_DEFAULT
    ):
        return True
    count = merge_count(metadata)
    size = (
        property_as_int(
            props,
            TableProperties.MANIFEST_TARGET_SIZE_BYTES,
            TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT,
        )
        or 0
    )
    for content in (ManifestContent.DATA, ManifestContent.DELETES):
        same = [m for m in manifests if m.content == content]
        if len(same) + (content in new) >= count or sum(m.manifest_length for m in same) >= size // 2:
            return False  # merged, or packed into more than one bin (a bin without the new manifest merges)
    return True


def commit(
    txn: Transaction, files: Sequence[DataFile], properties: dict[str, str], operation: Operation
) -> bool:
    """Commit one snapshot adding ``files`` (data and position-delete files) stamped with ``properties``, as
    pyiceberg's producer would; ``False`` (nothing written) when this shape does not apply: commit through pyiceberg.
    ``CommitFailedException`` as pyiceberg's commit raises it."""
    if not applicable(txn, files):
        return False
    table = txn._table
    metadata = table.metadata
    parent = metadata.current_snapshot()
    if parent is not None and metadata.refs.get(MAIN_BRANCH) is None:
        return False
    # as pyiceberg's producers: a manifest of the parent that only records deletions is not carried on
    existing = tuple(
        m for m in parent_manifests(txn, parent) if m.has_added_files() or m.has_existing_files()
    )
    data = [f for f in files if f.content == DataFileContent.DATA]
    deletes = [f for f in files if f.content != DataFileContent.DATA]
    kinds = {ManifestContent.DATA} if data else set()
    if not _below_merge(metadata, existing, kinds | ({ManifestContent.DELETES} if deletes else set())):
        return False
    snapshot_id = ids.snapshot_id(metadata)
    sequence_number = metadata.next_sequence_number()
    commit_uuid = ids.uuid4()
    locations = table.location_provider()
    written: list[str] = []
    try:
        manifests: list[ManifestFile] = []
        for number, (content, group) in enumerate(
            ((ManifestContent.DATA, data), (ManifestContent.DELETES, deletes))
        ):
            if not group:
                continue
            path = locations.new_metadata_location(f"{commit_uuid}-m{number}.avro")
            written.append(path)
            with manifestfiles.ManifestWriter(
                content, metadata, manifestfiles.Target(table.io, path), snapshot_id
            ) as writer:
                for data_file in group:
                    writer.add_entry(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED,
                            snapshot_id=snapshot_id,
                            sequence_number=None,
                            file_sequence_number=None,
                            data_file=data_file,
                        )
                    )
            manifests.append(writer.to_manifest_file())
        list_path = locations.new_metadata_location(f"snap-{snapshot_id}-0-{commit_uuid}.avro")
        written.append(list_path)
        compression = metadata.properties.get(
            TableProperties.WRITE_AVRO_COMPRESSION, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT
        )
        parent_id = parent.snapshot_id if parent is not None else None
        with manifestfiles.ManifestListWriter(
            manifestfiles.Target(table.io, list_path),  # type: ignore[arg-type]
            snapshot_id,
            parent_id,
            sequence_number,
            compression,  # type: ignore[arg-type]
        ) as list_writer:
            list_writer.add_manifests([*manifests, *existing])
        snapshot = Snapshot(  # type: ignore[call-arg]
            snapshot_id=snapshot_id,
            parent_snapshot_id=parent_id,
            manifest_list=list_path,
            sequence_number=sequence_number,
            summary=_summary(metadata, files, properties, operation, parent),
            schema_id=metadata.current_schema_id,
        )
        updates = (
            AddSnapshotUpdate(snapshot=snapshot),
            SetSnapshotRefUpdate(  # type: ignore[call-arg]
                snapshot_id=snapshot_id,
                parent_snapshot_id=parent_id,
                ref_name=MAIN_BRANCH,
                type=SnapshotRefType.BRANCH,
            ),
        )
        requirements = (
            AssertTableUUID(uuid=metadata.table_uuid),
            AssertRefSnapshotId(snapshot_id=parent_id, ref=MAIN_BRANCH),  # type: ignore[call-arg]
        )
        applied = with_snapshot(metadata, snapshot)
        if applied is not None:
            txncache.remember(metadata, updates, applied)
        table._do_commit(updates=updates, requirements=requirements)
    except BaseException:
        for path in written:  # never referenced: the commit did not land
            with contextlib.suppress(Exception):
                table.io.delete(path)
        raise
    # what the manifest list holds, as a reader of it gets it back (sequence numbers assigned)
    _remember(list_path, tuple(list_writer.prepared))
    return True


def with_snapshot(base: TableMetadata, snapshot: Snapshot) -> TableMetadata | None:
    """What pyiceberg 0.12's ``update_table_metadata`` (as :mod:`.txncache` applies it) makes of ``base`` with
    ``AddSnapshotUpdate(snapshot)`` then ``SetSnapshotRefUpdate`` of ``main`` to it, in one copy instead of two
    dispatched updates and the spec and sort-order checks against an unchanged schema: the same fields set to
    the same values (``tests/test_lean_commit.py`` compares both). ``None`` where pyiceberg would do more or
    other than this (another format version, a timestamp equal to the base's, anything its checks refuse):
    apply the updates as pyiceberg does."""
    if (
        base.format_version != 2
        or not base.schemas
        or not base.partition_specs
        or not base.sort_orders
        or base.snapshot_by_id(snapshot.snapshot_id) is not None
        or snapshot.sequence_number is None
        or snapshot.sequence_number <= base.last_sequence_number
        or snapshot.timestamp_ms == base.last_updated_ms
    ):
        return None
    ref = SnapshotRef(  # type: ignore[call-arg]
        snapshot_id=snapshot.snapshot_id,
        snapshot_ref_type=SnapshotRefType.BRANCH,
        min_snapshots_to_keep=None,
        max_snapshot_age_ms=None,
        max_ref_age_ms=None,
    )
    existing = base.refs.get(MAIN_BRANCH)
    if existing is not None and existing == ref:
        return None
    return base.model_copy(
        update={  # AddSnapshotUpdate's, then SetSnapshotRefUpdate's (the snapshot was added: its timestamp)
            "last_updated_ms": snapshot.timestamp_ms,
            "last_sequence_number": snapshot.sequence_number,
            "snapshots": base.snapshots + [snapshot],
            "next_row_id": None,
            "current_snapshot_id": snapshot.snapshot_id,
            "snapshot_log": base.snapshot_log
            + [SnapshotLogEntry(snapshot_id=snapshot.snapshot_id, timestamp_ms=snapshot.timestamp_ms)],  # type: ignore[call-arg]
            "refs": {**base.refs, MAIN_BRANCH: ref},
        }
    )


def _summary(
    metadata: TableMetadata,
    files: Sequence[DataFile],
    properties: dict[str, str],
    operation: Operation,
    parent: Snapshot | None,
) -> Summary:
    """pyiceberg's ``_SnapshotProducer._summary`` for a snapshot that only adds files."""
    limit = int(
        metadata.properties.get(
            TableProperties.WRITE_PARTITION_SUMMARY_LIMIT,
            TableProperties.WRITE_PARTITION_SUMMARY_LIMIT_DEFAULT,
        )
    )
    collector = SnapshotSummaryCollector(partition_summary_limit=limit)
    schema, spec = metadata.schema(), metadata.spec()
    for data_file in files:
        collector.add_file(data_file=data_file, partition_spec=spec, schema=schema)
    return Summary(operation=operation, **_totals(collector.build(), properties, parent))


_TOTALS = (  # (total, added, removed), in the order pyiceberg's update_snapshot_summaries sets them
    (TOTAL_DATA_FILES, ADDED_DATA_FILES, DELETED_DATA_FILES),
    (TOTAL_DELETE_FILES, ADDED_DELETE_FILES, REMOVED_DELETE_FILES),
    (TOTAL_RECORDS, ADDED_RECORDS, DELETED_RECORDS),
    (TOTAL_FILE_SIZE, ADDED_FILE_SIZE, REMOVED_FILE_SIZE),
    (TOTAL_POSITION_DELETES, ADDED_POSITION_DELETES, REMOVED_POSITION_DELETES),
    (TOTAL_EQUALITY_DELETES, ADDED_EQUALITY_DELETES, REMOVED_EQUALITY_DELETES),
)


def _totals(added: dict[str, str], properties: dict[str, str], parent: Snapshot | None) -> dict[str, str]:
    """pyiceberg's ``update_snapshot_summaries`` on plain dicts (its ``Summary`` mapping answers each lookup
    through a pydantic model): the summary's properties, then each total carried from the parent's."""
    summary = {**added, **properties}
    previous = parent.summary.additional_properties if parent is not None and parent.summary else None
    if not previous:
        previous = {total: "0" for total, _, _ in _TOTALS}
    for total, plus, minus in _TOTALS:
        if previous_total := previous.get(total):
            try:
                new_total = int(previous_total)
                if new_total >= 0 and (count := summary.get(plus)):
                    new_total += int(count)
                if new_total >= 0 and (count := summary.get(minus)):
                    new_total -= int(count)
            except ValueError as exc:
                raise ValueError(
                    f"Could not parse summary property {total} to an int: {previous_total}"
                ) from exc
            if new_total >= 0:
                summary[total] = str(new_total)
    return summary

"""One Iceberg snapshot that adds data files and position-delete files, and may remove either kind.

pyiceberg 0.12 has snapshot producers for appends, overwrites and deletes of whole data files, but none that adds
delete files (apache/iceberg-python#1078: position deletes are read, not written). This module is the smallest
producer that does, built on pyiceberg's own :class:`_SnapshotProducer`: its manifest list, snapshot id,
sequence-number assignment (new entries inherit the snapshot's sequence number, so a delete file applies to every
data file committed before or with it), summary totals (``SnapshotSummaryCollector`` counts delete files and
position deletes), commit requirements and retry loop are reused as they are. Written here:

- a manifest writer for delete manifests (pyiceberg's writers write ``content = data`` only);
- which manifests the new snapshot keeps: the parent's, minus the entries of removed files; manifests are merged
  as pyiceberg's merge-append does (``commit.manifest-merge.enabled``; the count spread by table,
  :func:`.leancommit.merge_count`), delete manifests among themselves;
- conflict detection between the base snapshot and the catalog's head when a commit lost a race (reusing
  pyiceberg's validations): files this commit removes or whose rows it deletes must still exist, no delete file
  may have been added for a data file it removes, and with ``exclusive=True`` (a state table, whose key index
  knows every row and whose stamp says which changes it holds) nothing may have been committed at all since the
  commit was planned: any new snapshot may have moved a key or the stamp. A failed validation is a
  ``ValidationException``; pyiceberg retries a plain race on the new head.

It leans on pyiceberg internals (``_SnapshotProducer``, ``_ManifestMergeManager``), pinned in pyproject.toml.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyiceberg.exceptions import ValidationException
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestWriter,
    ManifestWriterV2,
)
from pyiceberg.partitioning import PartitionSpec
from pyiceberg.table import Table, TableProperties
from pyiceberg.table import Transaction as PyIcebergTransaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.snapshots import Operation, ancestors_of
from pyiceberg.table.update.snapshot import _ManifestMergeManager, _SnapshotProducer
from pyiceberg.table.update.validate import (
    _validate_data_files_exist,
    _validate_no_new_deletes_for_data_files,
)
from pyiceberg.utils.properties import property_as_bool, property_as_int

from lakegate.connectors.iceberg import leancommit, manifestcache, manifestfiles
from lakegate.connectors.iceberg.commits import PROP_LSN, PROP_SEQ


class Transaction(PyIcebergTransaction):
    """A pyiceberg transaction that computes its pending metadata once per change, not at every read.

    pyiceberg's ``Transaction.table_metadata`` re-applies the staged updates to a deep copy of the whole table
    metadata (every snapshot and log entry) at each access, and a snapshot producer reads it dozens of times per
    commit: 7 ms each on a table with 30 snapshots, most of a small commit's CPU, growing with the history. The
    metadata models are frozen, so the copy made for one (base, updates) pair can be shared until either moves."""

    _memo: tuple[TableMetadata, tuple[Any, ...], TableMetadata] | None = None

    @property
    def table_metadata(self) -> TableMetadata:
        memo = self._memo
        if memo is not None and memo[0] is self._table.metadata and memo[1] is self._updates:
            return memo[2]
        metadata = super().table_metadata
        self._memo = (self._table.metadata, self._updates, metadata)
        return metadata

    #: a maintenance commit's: its snapshots carry the checkpoint stamp of the snapshot they land on
    carry_stamp = False

    def _rebuild_snapshot_updates(self) -> None:
        """pyiceberg's retry after another writer committed: with :attr:`carry_stamp`, the snapshots land on the
        new head, so they carry its lineage's stamp, not the one they were planned with (the checkpoint would go
        back, and a worker started again would write the changes in between twice)."""
        if self.carry_stamp:
            metadata = self._table.metadata
            carried: dict[str, str] = {}
            for snapshot in ancestors_of(metadata.current_snapshot(), metadata):
                found = snapshot.summary.additional_properties if snapshot.summary else {}
                if PROP_LSN in found:
                    carried = {k: found[k] for k in (PROP_LSN, PROP_SEQ) if k in found}
                    break
            for producer in self._snapshot_producers:
                kept = {k: v for k, v in producer.snapshot_properties.items() if k not in (PROP_LSN, PROP_SEQ)}
                producer.snapshot_properties = {**kept, **carried}
        super()._rebuild_snapshot_updates()


def transaction(table: Table, *, carry_stamp: bool = False) -> Transaction:
    """``table.transaction()``, but see :class:`Transaction`."""
    txn = Transaction(table)
    txn.carry_stamp = carry_stamp
    return txn


class DeleteManifestWriter(ManifestWriterV2):
    """A v2 manifest of delete files (``content = deletes``)."""

    def content(self) -> ManifestContent:
        return ManifestContent.DELETES

    @property
    def _meta(self) -> dict[str, str]:
        return {**super()._meta, "content": "deletes"}


class RowDelta(_SnapshotProducer["RowDelta"]):
    """Use as ``with RowDelta(txn, table.io, properties) as delta: delta.add(...)``; see the module docstring."""

    def __init__(
        self, txn: PyIcebergTransaction, io: FileIO, properties: dict[str, str], *, exclusive: bool = True
    ) -> None:
        super().__init__(Operation.OVERWRITE, txn, io, snapshot_properties=properties)
        self.exclusive = exclusive
        self._referenced: set[DataFile] = set()

    # ---------------------------------------------------------------------------------------- what it does

    def add(self, content_file: DataFile) -> RowDelta:
        """Add a data file or a position-delete file."""
        self._added_data_files.append(content_file)
        return self

    def remove(self, content_file: DataFile) -> RowDelta:
        """Remove a data file or a delete file that the parent snapshot holds."""
        self._deleted_data_files.add(content_file)
        return self

    def reference(self, data_files: Iterable[DataFile]) -> RowDelta:
        """Data files whose rows the added delete files point at: they must still exist when this commits."""
        self._referenced.update(data_files)
        return self

    def _files(self, content: DataFileContent, files: Iterable[DataFile]) -> list[DataFile]:
        return [f for f in files if (f.content == DataFileContent.DATA) == (content == DataFileContent.DATA)]

    def commit(self) -> None:
        """Inside a flush, a delta that only adds files is committed by :mod:`.leancommit`."""
        if not self._deleted_data_files and leancommit.commit(
            self._transaction, self._added_data_files, self.snapshot_properties, self._pick_operation()
        ):
            return
        super().commit()

    def _commit(self) -> Any:
        self._operation = self._pick_operation()
        return super()._commit()

    def _pick_operation(self) -> Operation:
        """As Iceberg's Java RowDelta names it."""
        adds_data = bool(self._files(DataFileContent.DATA, self._added_data_files))
        adds_deletes = len(self._added_data_files) > len(
            self._files(DataFileContent.DATA, self._added_data_files)
        )
        if adds_data and not adds_deletes and not self._deleted_data_files:
            return Operation.APPEND
        if not adds_data and (adds_deletes or self._deleted_data_files):
            return Operation.DELETE
        return Operation.OVERWRITE

    # ------------------------------------------------------------------------------------------- manifests

    def new_manifest_writer(self, spec: PartitionSpec) -> ManifestWriter:
        return self._lean_writer(ManifestContent.DATA, spec) or super().new_manifest_writer(spec)

    def new_delete_manifest_writer(self, spec: PartitionSpec) -> ManifestWriter:
        return self._lean_writer(ManifestContent.DELETES, spec) or DeleteManifestWriter(
            spec, self.schema(), self.new_manifest_output(), self._snapshot_id, self._compression
        )

    def _lean_writer(self, content: ManifestContent, spec: PartitionSpec) -> ManifestWriter | None:
        """The lean commits' manifest writer (:mod:`.manifestfiles`: the same entries, encoded and deflated for
        a fraction of pyiceberg's CPU; a compaction writes an entry for each file it removes) for a v2 table's
        unpartitioned default spec, which is what lakegate writes; None otherwise (pyiceberg's writers)."""
        metadata = self._transaction.table_metadata
        if metadata.format_version != 2 or spec.spec_id != metadata.default_spec_id or not spec.is_unpartitioned():
            return None
        target = manifestfiles.Target(self._io, self.new_manifest_output().location)
        return manifestfiles.ManifestWriter(content, metadata, target, self._snapshot_id)

    def _manifests(self) -> list[ManifestFile]:
        spec = self._transaction.table_metadata.spec()
        written: list[ManifestFile] = []
        removed_entries = self._deleted_entries()
        for content, new_writer in (
            (DataFileContent.DATA, self.new_manifest_writer),
            (DataFileContent.POSITION_DELETES, self.new_delete_manifest_writer),
        ):
            added = self._files(content, self._added_data_files)
            removed = [
                e
                for e in removed_entries
                if (e.data_file.content == DataFileContent.DATA) == (content == DataFileContent.DATA)
            ]
            if not added and not removed:
                continue
            with new_writer(spec) as writer:
                for data_file in added:
                    writer.add(
                        ManifestEntry.from_args(
                            status=ManifestEntryStatus.ADDED,
                            snapshot_id=self._snapshot_id,
                            sequence_number=None,
                            file_sequence_number=None,
                            data_file=data_file,
                        )
                    )
                for entry in removed:
                    writer.delete(entry)
            written.append(writer.to_manifest_file())
        return self._merge(written + self._existing_manifests())

    def _parent_manifests(self) -> list[ManifestFile]:
        if self._parent_snapshot_id is None:
            return []
        parent = self._transaction.table_metadata.snapshot_by_id(self._parent_snapshot_id)
        if parent is None:
            raise ValueError(f"snapshot {self._parent_snapshot_id} is not in the table's metadata")
        return list(leancommit.manifests_of(self._io, parent))

    def _deleted_entries(self) -> list[ManifestEntry]:
        if not self._deleted_data_files:
            return []
        found = [
            entry
            for manifest in self._parent_manifests()
            for entry in self.fetch_manifest_entry(manifest, discard_deleted=True)
            if entry.data_file in self._deleted_data_files
        ]
        missing = self._deleted_data_files - {e.data_file for e in found}
        if missing:
            raise ValidationException(
                f"cannot remove files the table no longer holds: {sorted(f.file_path for f in missing)}"
            )
        return found

    def _existing_manifests(self) -> list[ManifestFile]:
        """The parent's live manifests, rewritten without the entries of removed files."""
        kept: list[ManifestFile] = []
        for manifest in self._parent_manifests():
            if not (manifest.has_added_files() or manifest.has_existing_files()):
                continue
            if not self._deleted_data_files:
                kept.append(manifest)
                continue
            entries = self.fetch_manifest_entry(manifest, discard_deleted=True)
            survivors = [e for e in entries if e.data_file not in self._deleted_data_files]
            if len(survivors) == len(entries):
                kept.append(manifest)
            elif survivors:
                new_writer = (
                    self.new_delete_manifest_writer
                    if manifest.content == ManifestContent.DELETES
                    else self.new_manifest_writer
                )
                with new_writer(self.spec(manifest.partition_spec_id)) as writer:
                    for entry in survivors:
                        writer.existing(entry)
                kept.append(writer.to_manifest_file())
        return kept

    def fetch_manifest_entry(
        self, manifest: ManifestFile, discard_deleted: bool = True
    ) -> list[ManifestEntry]:
        """Committed manifests are read once per process (see :mod:`.manifestcache`): a commit that removes files
        reads every parent manifest twice, and the merger reads them again."""
        return manifestcache.entries(self._io, manifest, discard_deleted)

    def _merge(self, manifests: list[ManifestFile]) -> list[ManifestFile]:
        """Merge small manifests as pyiceberg's merge-append does, data and delete manifests apart."""
        props = self._transaction.table_metadata.properties
        enabled = property_as_bool(
            props, TableProperties.MANIFEST_MERGE_ENABLED, TableProperties.MANIFEST_MERGE_ENABLED_DEFAULT
        )
        size = property_as_int(
            props,
            TableProperties.MANIFEST_TARGET_SIZE_BYTES,
            TableProperties.MANIFEST_TARGET_SIZE_BYTES_DEFAULT,
        )
        count = leancommit.merge_count(self._transaction.table_metadata)
        data = [m for m in manifests if m.content == ManifestContent.DATA]
        deletes = [m for m in manifests if m.content == ManifestContent.DELETES]
        merged = []
        for producer, group in ((self, data), (_DeleteManifests(self), deletes)):
            manager = _ManifestMergeManager(size or 0, count or 0, enabled, producer)  # type: ignore[arg-type]
            merged += manager.merge_manifests(group)
        return merged

    # ------------------------------------------------------------------------------------------- conflicts

    def _validate_concurrency(self) -> None:
        window = self._commit_window
        if window is None or window.is_empty() or window.head is None:
            return
        table = self._transaction._table
        head, base = window.head, window.base
        if self.exclusive:
            raise ValidationException(
                f"{'.'.join(table.name())} moved from snapshot {base.snapshot_id if base else None} to "
                f"{head.snapshot_id} while this commit was planned on it"
            )
        must_exist = self._referenced | set(self._deleted_data_files)
        if must_exist:
            _validate_data_files_exist(table, head, must_exist, base)  # type: ignore[arg-type]
        removed_data = set(self._files(DataFileContent.DATA, self._deleted_data_files))
        if removed_data:
            _validate_no_new_deletes_for_data_files(table, head, None, removed_data, base)  # type: ignore[arg-type]


class _DeleteManifests:
    """The producer as the manifest merger sees it, writing delete manifests (the merger writes data ones)."""

    def __init__(self, producer: RowDelta) -> None:
        self._producer = producer
        self.snapshot_id = producer.snapshot_id

    def new_manifest_writer(self, spec: PartitionSpec) -> ManifestWriter:
        return self._producer.new_delete_manifest_writer(spec)

    def spec(self, spec_id: int) -> PartitionSpec:
        return self._producer.spec(spec_id)

    def fetch_manifest_entry(
        self, manifest: ManifestFile, discard_deleted: bool = True
    ) -> list[ManifestEntry]:
        return self._producer.fetch_manifest_entry(manifest, discard_deleted)

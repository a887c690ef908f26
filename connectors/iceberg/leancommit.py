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
  (entry counts, sequence-number inheritance, partition summaries, ``min_sequence_number``) through its own
  ``AvroOutputFile``; only the Avro writer tree and the header's schema JSON are built once per process (they
  depend on the format version and the partition type only; lakegate's tables are unpartitioned) instead of per
  file;
- the snapshot summary is pyiceberg's (``SnapshotSummaryCollector`` + ``update_snapshot_summaries``, with
  lakegate's stamp properties), the snapshot id and sequence number come from the table metadata as pyiceberg's
  producer takes them, and the new metadata is built by pyiceberg's update functions from the same two updates a
  producer emits (``AddSnapshotUpdate``, ``SetSnapshotRefUpdate`` on ``main``, required to still point at the
  parent): snapshot log, ``last-sequence-number``, refs and metadata log are pyiceberg's own doing;
- the parent's manifest list is not read back: the list this process last wrote for a table is kept in memory
  (keyed by its path, which names one snapshot), and read from the lake only when another writer made the parent.
- each Avro file is encoded in memory and written in one piece (:mod:`.localfiles`: no pyiceberg file set-up per
  file), its header encoded directly (:func:`header_bytes`, the bytes pyiceberg's generic writer produces) with
  the table-schema metadata built once per schema, and snapshot ids, file names and sync markers drawn from
  :mod:`.ids` rather than ``os.urandom``.

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
import io
import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from pyiceberg.avro.encoder import BinaryEncoder
from pyiceberg.avro.file import (
    _SCHEMA_KEY,
    AVRO_CODEC_KEY,
    CODEC_MAPPING_ICEBERG_TO_AVRO,
    MAGIC,
    AvroOutputFile,
)
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    ManifestListWriterV2,
    ManifestWriterV2,
)
from pyiceberg.table import TableProperties, Transaction
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.table.refs import MAIN_BRANCH, SnapshotRefType
from pyiceberg.table.snapshots import (
    Operation,
    Snapshot,
    SnapshotSummaryCollector,
    Summary,
    update_snapshot_summaries,
)
from pyiceberg.table.update import (
    AddSnapshotUpdate,
    AssertRefSnapshotId,
    AssertTableUUID,
    SetSnapshotRefUpdate,
)
from pyiceberg.utils.properties import property_as_bool, property_as_int
from pyiceberg.utils.schema_conversion import AvroSchemaConversion

from lakegate.connectors.iceberg import flushcatalog, ids, localfiles

_MANIFESTS: OrderedDict[str, tuple[ManifestFile, ...]] = OrderedDict()  #: manifest list path -> its entries
_MANIFESTS_MAX = 4096  #: two per table: a worker's tables, a few times over
_GUARD = threading.Lock()
ENABLED = True  #: False: every commit goes through pyiceberg (``bench.commits --compare`` measures both)


# ----------------------------------------------------------------------------------------- Avro, cached


class _Template:
    """What pyiceberg's ``AvroOutputFile`` builds per file that depends only on the schemas."""

    def __init__(self, file_schema: Any, record_schema: Any, schema_name: str) -> None:
        probe = AvroOutputFile[Any](
            output_file=None,  # type: ignore[arg-type]
            file_schema=file_schema,
            schema_name=schema_name,
            record_schema=record_schema,
        )
        self.file_schema, self.schema_name, self.writer = file_schema, schema_name, probe.writer
        self.schema_json = json.dumps(
            AvroSchemaConversion().iceberg_to_avro(file_schema, schema_name=schema_name)
        )


_TEMPLATES: dict[str, _Template] = {}


class _Target:
    """What pyiceberg's manifest writers need of an output file: where it goes and, once written, its length
    (pyiceberg asks the file system for it). The bytes are written by :class:`_OutputFile`."""

    def __init__(self, io: FileIO, location: str) -> None:
        self.io, self.location, self.length = io, location, 0

    def __len__(self) -> int:
        return self.length


class _OutputFile(AvroOutputFile[Any]):
    """``AvroOutputFile`` with the writer tree and the header's schema JSON of a :class:`_Template`, encoded in
    memory and written to its :class:`_Target` in one piece when it closes (nothing when the writing failed)."""

    def __init__(self, output_file: _Target, template: _Template, metadata: dict[str, str]) -> None:
        self.output_file = output_file  # type: ignore[assignment]
        self.file_schema = template.file_schema
        self.schema_name = template.schema_name
        self.sync_bytes = ids.random_bytes(16)  # a block separator, not a secret
        self.writer = template.writer
        self.metadata = metadata
        self._template = template

    def __enter__(self) -> _OutputFile:
        self.output_stream = io.BytesIO()  # type: ignore[assignment]
        self.encoder = BinaryEncoder(self.output_stream)
        self._write_header()
        return self

    def __exit__(self, exctype: type[BaseException] | None, *rest: object) -> None:
        if exctype is not None:
            return
        data = self.output_stream.getvalue()  # type: ignore[attr-defined]
        target: _Target = self.output_file  # type: ignore[assignment]
        localfiles.write(target.io, target.location, data, overwrite=True)  # as AvroOutputFile
        target.length = len(data)

    def _write_header(self) -> None:  # as pyiceberg's, minus the schema conversion and the generic writer
        codec = self.metadata.get(AVRO_CODEC_KEY, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT)
        codec = CODEC_MAPPING_ICEBERG_TO_AVRO.get(codec) or codec
        meta = {**self.metadata, _SCHEMA_KEY: self._template.schema_json, AVRO_CODEC_KEY: codec}
        self.encoder.write(header_bytes(meta, self.sync_bytes))


def header_bytes(meta: dict[str, str], sync: bytes) -> bytes:
    """An Avro object container file's header (magic, metadata map, sync marker), as pyiceberg's writer encodes
    it through its generic writer tree (``META_SCHEMA``)."""
    out = bytearray(MAGIC)
    out += _zigzag(len(meta))
    for key, value in meta.items():
        for text in (key, value):
            raw = text.encode("utf-8")
            out += _zigzag(len(raw))
            out += raw
    if meta:
        out += b"\x00"
    out += sync
    return bytes(out)


def _zigzag(value: int) -> bytes:
    """An Avro ``long``: zigzag, then little-endian base-128 groups."""
    n = (value << 1) ^ (value >> 63)
    out = bytearray()
    while n & ~0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _template(key: str, build: Any) -> _Template:
    template = _TEMPLATES.get(key)
    if template is None:
        template = _TEMPLATES[key] = build()
    return template


class _ManifestWriter(ManifestWriterV2):
    def __init__(
        self, content: ManifestContent, metadata: TableMetadata, output: _Target, snapshot_id: int
    ) -> None:
        compression = metadata.properties.get(
            TableProperties.WRITE_AVRO_COMPRESSION, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT
        )
        super().__init__(metadata.spec(), metadata.schema(), output, snapshot_id, compression)  # type: ignore[arg-type]
        self._content = content
        self._meta_key = (
            str(metadata.table_uuid),
            metadata.current_schema_id,
            metadata.default_spec_id,
            compression,
            content,
        )

    def content(self) -> ManifestContent:
        return self._content

    @property
    def _meta(self) -> dict[str, str]:
        """pyiceberg's header metadata (the table schema's JSON among it), built once per table schema."""
        with _GUARD:
            meta = _HEADER_META.get(self._meta_key)
        if meta is None:
            kind = "deletes" if self._content == ManifestContent.DELETES else "data"
            meta = {**super()._meta, "content": kind}
            with _GUARD:
                _HEADER_META[self._meta_key] = meta
                while len(_HEADER_META) > _MANIFESTS_MAX:
                    _HEADER_META.popitem(last=False)
        return meta

    def new_writer(self) -> AvroOutputFile[ManifestEntry]:
        template = _template(
            "manifest-v2-unpartitioned",
            lambda: _Template(
                self._with_partition(self.version),
                self._with_partition(DEFAULT_READ_VERSION),
                "manifest_entry",
            ),
        )
        return _OutputFile(self._output_file, template, self._meta)  # type: ignore[arg-type]


class _ManifestListWriter(ManifestListWriterV2):
    """pyiceberg's v2 manifest-list writer; each manifest's record is encoded once per process (a table's list
    is rewritten at every commit, with up to ``min-count-to-merge`` manifests of each kind that did not change:
    pyiceberg's pure-Python encoder spent about 0.1 ms on each of them)."""

    def __enter__(self) -> _ManifestListWriter:
        template = _template(
            "manifest-list-v2",
            lambda: _Template(
                MANIFEST_LIST_FILE_SCHEMAS[2],
                MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION],
                "manifest_file",
            ),
        )
        self._writer = _OutputFile(self._output_file, template, self._meta)  # type: ignore[arg-type]
        self._writer.__enter__()
        return self

    def add_manifests(self, manifest_files: list[ManifestFile]) -> _ManifestListWriter:
        out = self._writer
        payload = io.BytesIO()
        encoder = BinaryEncoder(payload)
        for manifest in manifest_files:
            prepared = self.prepare_manifest(manifest)
            key = (prepared.manifest_path, prepared.sequence_number, prepared.min_sequence_number)
            with _GUARD:
                encoded = _ENCODED.get(key)
            if encoded is None:
                start = payload.tell()
                out.writer.write(encoder, prepared)
                _remember_encoded(key, payload.getvalue()[start:])
            else:
                payload.write(encoded)
        # AvroOutputFile.write_block with the records already encoded: count, (compressed) size, bytes, sync
        block = payload.getvalue()
        out.encoder.write_int(len(manifest_files))
        codec = out.compression_codec()
        if codec:
            block, _ = codec.compress(block)
        out.encoder.write_int(len(block))
        out.encoder.write(block)
        out.encoder.write(out.sync_bytes)
        return self


_HEADER_META: OrderedDict[tuple[Any, ...], dict[str, str]] = (
    OrderedDict()
)  #: (table, schema, spec, ...) -> meta
_ENCODED: OrderedDict[tuple[str, int, int], bytes] = OrderedDict()  #: a manifest-list record, encoded
_ENCODED_MAX = 65536


def _remember_encoded(key: tuple[str, int, int], encoded: bytes) -> None:
    with _GUARD:
        _ENCODED[key] = encoded
        while len(_ENCODED) > _ENCODED_MAX:
            _ENCODED.popitem(last=False)


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
    if snapshot is None:
        return ()
    with _GUARD:
        known = _MANIFESTS.get(snapshot.manifest_list)
    if known is None:
        known = tuple(snapshot.manifests(txn._table.io))
        _remember(snapshot.manifest_list, known)
    return known


def _remember(path: str, manifests: tuple[ManifestFile, ...]) -> None:
    with _GUARD:
        _MANIFESTS[path] = manifests
        _MANIFESTS.move_to_end(path)
        while len(_MANIFESTS) > _MANIFESTS_MAX:
            _MANIFESTS.popitem(last=False)


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
    count = (
        property_as_int(
            props, TableProperties.MANIFEST_MIN_MERGE_COUNT, TableProperties.MANIFEST_MIN_MERGE_COUNT_DEFAULT
        )
        or 0
    )
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
            with _ManifestWriter(content, metadata, _Target(table.io, path), snapshot_id) as writer:
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
        with _ManifestListWriter(
            _Target(table.io, list_path),  # type: ignore[arg-type]
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
        table._do_commit(updates=updates, requirements=requirements)
    except BaseException:
        for path in written:  # never referenced: the commit did not land
            with contextlib.suppress(Exception):
                table.io.delete(path)
        raise
    # what the manifest list holds, as a reader of it gets it back (sequence numbers assigned)
    _remember(list_path, tuple(list_writer.prepare_manifest(m) for m in (*manifests, *existing)))
    return True


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
    return update_snapshot_summaries(
        summary=Summary(operation=operation, **collector.build(), **properties),
        previous_summary=parent.summary if parent is not None else None,
    )

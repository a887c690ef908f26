"""The manifest and manifest-list files of a lean commit (:mod:`.leancommit`): pyiceberg 0.12's own
``ManifestWriterV2`` / ``ManifestListWriterV2`` (entry counts, sequence-number inheritance, partition summaries,
``min_sequence_number``), minus what they redo for every file (issue 11.16):

- the Avro writer tree and the header's schema JSON are built once per process (they depend on the format version
  and the partition type only; lakegate's tables are unpartitioned), and the header's table-schema metadata once
  per table schema;
- each file is encoded in memory and written in one piece (:mod:`.localfiles`: no pyiceberg file set-up per file),
  its header encoded directly (:func:`header_bytes`: the bytes pyiceberg's generic writer produces), its records
  by functions compiled once from pyiceberg's writer tree (:mod:`.avroencode`, about half the CPU of walking
  the tree), its block deflated with zlib state sized to the block (:class:`_SmallDeflate`), its sync marker
  drawn from :mod:`.ids`;
- a table's manifest list is rewritten at every commit with up to ``min-count-to-merge`` manifests of each kind (and
  half again, :func:`.leancommit.merge_count`) that did not change: each manifest's record is encoded once per
  process (pyiceberg's pure-Python encoder spent about 0.1 ms on each of them) and not copied again when its
  sequence numbers are already assigned.
"""

from __future__ import annotations

import json
import threading
import zlib
from collections import OrderedDict
from typing import Any

from pyiceberg.avro.codecs import Codec
from pyiceberg.avro.codecs.deflate import DeflateCodec
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
    UNASSIGNED_SEQ,
    ManifestContent,
    ManifestEntry,
    ManifestFile,
    ManifestListWriterV2,
    ManifestWriterV2,
)
from pyiceberg.table import TableProperties
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.utils.schema_conversion import AvroSchemaConversion

from lakegate.connectors.iceberg import avroencode, ids, localfiles

_GUARD = threading.Lock()
_CACHE_MAX = 4096  #: header metadata kept: a worker's tables, a few times over


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
        self.encode = avroencode.compile_writer(probe.writer)
        self.schema_json = json.dumps(
            AvroSchemaConversion().iceberg_to_avro(file_schema, schema_name=schema_name)
        )


_TEMPLATES: dict[str, _Template] = {}


class Target:
    """What pyiceberg's manifest writers need of an output file: where it goes and, once written, its length
    (pyiceberg asks the file system for it). The bytes are written by :class:`_OutputFile`."""

    def __init__(self, io: FileIO, location: str) -> None:
        self.io, self.location, self.length = io, location, 0

    def __len__(self) -> int:
        return self.length


class _OutputFile(AvroOutputFile[Any]):
    """``AvroOutputFile`` with the writer tree and the header's schema JSON of a :class:`_Template`, encoded in
    memory and written to its :class:`Target` in one piece when it closes (nothing when the writing failed)."""

    def __init__(self, output_file: Target, template: _Template, metadata: dict[str, str]) -> None:
        self.output_file = output_file  # type: ignore[assignment]
        self.file_schema = template.file_schema
        self.schema_name = template.schema_name
        self.sync_bytes = ids.random_bytes(16)  # a block separator, not a secret
        self.writer = template.writer
        self.metadata = metadata
        self._template = template

    def __enter__(self) -> _OutputFile:
        self.buffer = bytearray()
        self._pending = bytearray()  #: records of :meth:`write_block` not yet in a block
        self._pending_count = 0
        self._write_header()
        return self

    def __exit__(self, exctype: type[BaseException] | None, *rest: object) -> None:
        if exctype is not None:
            return
        self._close_block()
        data = bytes(self.buffer)
        target: Target = self.output_file  # type: ignore[assignment]
        localfiles.write(target.io, target.location, data, overwrite=True)  # as AvroOutputFile
        target.length = len(data)

    def write_block(self, objects: list[Any]) -> None:
        """``AvroOutputFile.write_block`` with the records encoded by the compiled writer (:mod:`.avroencode`).
        pyiceberg's manifest writer calls it once per entry; the records are gathered into one block per file
        (Avro puts any number of records in a block), deflated once instead of once per entry: a compaction
        removing twenty files wrote twenty blocks."""
        for record in objects:
            self._template.encode(self._pending, record)
        self._pending_count += len(objects)

    def _close_block(self) -> None:
        if self._pending_count:
            block, count = self._pending, self._pending_count
            self._pending, self._pending_count = bytearray(), 0
            self._write_block(count, block)

    def write_encoded(self, count: int, block: bytes | bytearray) -> None:
        """A block of ``count`` records already encoded: count, (compressed) size, bytes, sync marker."""
        self._close_block()
        self._write_block(count, block)

    def _write_block(self, count: int, block: bytes | bytearray) -> None:
        codec = self._codec
        if codec:
            block, _ = codec.compress(bytes(block))
        buffer = self.buffer
        avroencode.write_long(buffer, count)
        avroencode.write_long(buffer, len(block))
        buffer += block
        buffer += self.sync_bytes

    def tell(self) -> int:
        self._close_block()
        return len(self.buffer)

    def compression_codec(self) -> type[Codec] | None:
        codec = super().compression_codec()
        return _SmallDeflate if codec is DeflateCodec else codec

    def _write_header(self) -> None:  # as pyiceberg's, minus the schema conversion and the generic writer
        codec = self.metadata.get(AVRO_CODEC_KEY, TableProperties.WRITE_AVRO_COMPRESSION_DEFAULT)
        codec = CODEC_MAPPING_ICEBERG_TO_AVRO.get(codec) or codec
        meta = {**self.metadata, _SCHEMA_KEY: self._template.schema_json, AVRO_CODEC_KEY: codec}
        self.buffer += header_bytes(meta, self.sync_bytes)
        self._codec = self.compression_codec()


class _SmallDeflate(DeflateCodec):
    """Avro's deflate codec (raw deflate) for the small blocks of manifests and manifest lists: pyiceberg's
    ``zlib.compress`` sets up zlib's largest state for every block (about 0.15 ms for a 1 KiB block, two per
    commit); a window and memory level sized to the block compress it in a fraction of that. Any deflate reader
    inflates it (the window only bounds how far back matches reach). The memory level (the size of zlib's hash
    table) must grow with the block: at level 1 a manifest list of a few dozen manifests (5-10 KiB, a busy
    state table's) took 0.12-0.55 ms to deflate, against 0.06-0.13 ms at level 8; blocks of up to 2 KiB are
    fastest at level 4 (11-30 µs)."""

    @staticmethod
    def compress(data: bytes) -> tuple[bytes, int]:
        if len(data) > 1 << 15:
            return DeflateCodec.compress(data)
        bits = max(9, min(15, len(data).bit_length()))
        compressor = zlib.compressobj(6, zlib.DEFLATED, -bits, 4 if len(data) <= 2048 else 8)
        compressed = compressor.compress(data) + compressor.flush()
        return compressed, len(compressed)


def header_bytes(meta: dict[str, str], sync: bytes) -> bytes:
    """An Avro object container file's header (magic, metadata map, sync marker), as pyiceberg's writer encodes
    it through its generic writer tree (``META_SCHEMA``)."""
    out = bytearray(MAGIC)
    avroencode.write_long(out, len(meta))
    for key, value in meta.items():
        for text in (key, value):
            raw = text.encode("utf-8")
            avroencode.write_long(out, len(raw))
            out += raw
    if meta:
        out += b"\x00"
    out += sync
    return bytes(out)


def _template(key: str, build: Any) -> _Template:
    template = _TEMPLATES.get(key)
    if template is None:
        template = _TEMPLATES[key] = build()
    return template


class ManifestWriter(ManifestWriterV2):
    def __init__(
        self, content: ManifestContent, metadata: TableMetadata, output: Target, snapshot_id: int
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
                while len(_HEADER_META) > _CACHE_MAX:
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


class ManifestListWriter(ManifestListWriterV2):
    """pyiceberg's v2 manifest-list writer; each manifest's record is encoded once per process (a table's list
    is rewritten at every commit, with up to ``min-count-to-merge`` (and half again) manifests of each kind that
    did not change: pyiceberg's pure-Python encoder spent about 0.1 ms on each of them)."""

    def __enter__(self) -> ManifestListWriter:
        template = _template(
            "manifest-list-v2",
            lambda: _Template(
                MANIFEST_LIST_FILE_SCHEMAS[2],
                MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION],
                "manifest_file",
            ),
        )
        self._out = _OutputFile(self._output_file, template, self._meta)  # type: ignore[arg-type]
        self._writer = self._out
        self._out.__enter__()
        return self

    def add_manifests(self, manifest_files: list[ManifestFile]) -> ManifestListWriter:
        out = self._out
        block = bytearray()
        self.prepared: list[ManifestFile] = []
        for manifest in manifest_files:
            if manifest.sequence_number == UNASSIGNED_SEQ or manifest.min_sequence_number == UNASSIGNED_SEQ:
                prepared = self.prepare_manifest(manifest)  # a copy with this commit's sequence number
            else:
                prepared = manifest  # as pyiceberg's copy would be: the writer only reads it
            self.prepared.append(prepared)
            key = (prepared.manifest_path, prepared.sequence_number, prepared.min_sequence_number)
            with _GUARD:
                encoded = _ENCODED.get(key)
            if encoded is None:
                start = len(block)
                out._template.encode(block, prepared)
                _remember_encoded(key, bytes(block[start:]))
            else:
                block += encoded
        out.write_encoded(len(manifest_files), block)
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

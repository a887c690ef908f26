"""The entries of committed manifests, read once per process.

A state table's compaction reads every manifest of the table three times (pyiceberg's scan planning for the
layout, then the row delta's search for the entries it removes and its rewrite of the manifests that held them),
and each read of even a tiny manifest costs about 3 ms of Python, mostly converting the Avro header's schema:
about two thirds of a compaction of a small table (issue 11.16). A manifest file never changes once written (its
name is unique), so its entries can be kept: after the first compaction only the manifests committed since the
last one are read.

A manifest not in memory is read with pyiceberg's Avro reader, but with its reader tree built once per file
schema (the schema text in the file's header, the same for every manifest pyiceberg writes) instead of at each
file: that conversion is most of the cost of reading a small manifest. The entries are those of pyiceberg's
``ManifestFile.fetch_manifest_entry`` (same read schema, types, enums and inheritance from the manifest).

Only manifests of committed snapshots are kept (their sequence number is assigned: entries inherit it); a
manifest written by a commit still being made is read from storage each time. The cache holds at most
``MAX_ENTRIES`` entries (least recently used manifests leave first). Callers must not change the entries they get
(pyiceberg's manifest writers copy what they write).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from pyiceberg.avro.decoder import new_decoder
from pyiceberg.avro.file import _SCHEMA_KEY, AvroFile
from pyiceberg.avro.reader import Reader
from pyiceberg.avro.resolver import resolve_reader
from pyiceberg.io import FileIO
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_ENTRY_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    _inherit_from_manifest,
)
from pyiceberg.schema import Schema

MAX_ENTRIES = 50_000  #: about 1-2 KB each (a data file's statistics): tens of MB at most

_KEPT: OrderedDict[tuple[str, int, int | None], tuple[ManifestEntry, ...]] = OrderedDict()
_LOCK = threading.Lock()
_size = 0


def entries(io: FileIO, manifest: ManifestFile, discard_deleted: bool = True) -> list[ManifestEntry]:
    """``manifest.fetch_manifest_entry(io, discard_deleted)``, from memory when this process read it before."""
    global _size
    sequence = manifest.sequence_number
    if sequence is None or sequence < 0:  # not committed yet: its entries inherit a number still to come
        return manifest.fetch_manifest_entry(io, discard_deleted=discard_deleted)
    key = (manifest.manifest_path, sequence, manifest.added_snapshot_id)
    with _LOCK:
        found = _KEPT.get(key)
        if found is not None:
            _KEPT.move_to_end(key)
    if found is None:
        found = _read(io, manifest)
        with _LOCK:
            if key not in _KEPT:
                _KEPT[key] = found
                _size += len(found)
            while _size > MAX_ENTRIES and len(_KEPT) > 1:
                _, dropped = _KEPT.popitem(last=False)
                _size -= len(dropped)
    if not discard_deleted:
        return list(found)
    return [e for e in found if e.status != ManifestEntryStatus.DELETED]


_READERS: dict[str, tuple[Schema, Reader]] = {}  #: file schema text -> (its schema, the reader tree)


class _ManifestReader(AvroFile[ManifestEntry]):
    """pyiceberg's AvroFile, with the reader tree of a file schema built once per process."""

    __slots__ = ()

    def __enter__(self) -> _ManifestReader:
        with self.input_file.open() as f:
            self.decoder = new_decoder(f.read())
        self.header = self._read_header()
        text = self.header.meta.get(_SCHEMA_KEY)
        built = _READERS.get(text) if text is not None else None
        if built is None:
            schema = self.header.get_schema()  # raises for a file without a schema
            assert self.read_schema is not None
            built = (schema, resolve_reader(schema, self.read_schema, self.read_types, self.read_enums))
            if text is not None and len(_READERS) < 64:
                _READERS[text] = built
        self.schema, self.reader = built
        return self


_ENUMS: dict[int, Any] = {0: ManifestEntryStatus, 101: FileFormat, 134: DataFileContent}


def _read(io: FileIO, manifest: ManifestFile) -> tuple[ManifestEntry, ...]:
    """As ``manifest.fetch_manifest_entry(io, discard_deleted=False)``."""
    read_schema = MANIFEST_ENTRY_SCHEMAS[DEFAULT_READ_VERSION]
    types: dict[int, Any] = {-1: ManifestEntry, 2: DataFile}
    with _ManifestReader(io.new_input(manifest.manifest_path), read_schema, types, _ENUMS) as reader:
        return tuple(_inherit_from_manifest(entry, manifest) for entry in reader)


def clear() -> None:
    """Forget every entry (tests)."""
    global _size
    with _LOCK:
        _KEPT.clear()
        _size = 0

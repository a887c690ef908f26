"""pyiceberg 0.12 builds a new Avro reader tree for every Avro file it opens: it parses the schema JSON in the
file's header, converts it to an Iceberg schema and resolves it against the read schema (schema visitors in pure
Python), and builds the header's own reader too. A manifest or manifest list is a few hundred bytes to a few
kilobytes, so that set-up is most of reading one (issue 11.16): a state table's compaction and every row delta
that checks what it deletes read dozens of manifests, and the whole was about a fifth of a worker's CPU with 50
tables (py-spy, ``bench.commits --history 60``).

The tree depends only on the writer's schema (the header's JSON, byte for byte), the read schema and the classes
the reader is asked to build, and pyiceberg's readers keep no state between records (the decoder does), so
:func:`install` makes ``AvroFile.__enter__`` reuse the tree for files with the same schema. Everything else (the
header, sync markers, blocks, codecs) is read as before; a header without a schema goes the original way (which
raises pyiceberg's own error).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import pyiceberg
from pyiceberg.avro.decoder import new_decoder
from pyiceberg.avro.file import _SCHEMA_KEY, META_SCHEMA, AvroFile, AvroFileHeader
from pyiceberg.avro.resolver import construct_reader, resolve_reader

_INSTALLED = False
_ORIGINAL_ENTER = AvroFile.__enter__
_HEADER_READER = construct_reader(META_SCHEMA, {-1: AvroFileHeader})
_TREES: OrderedDict[tuple[Any, ...], tuple[Any, Any, Any]] = (
    OrderedDict()
)  #: key -> (read schema, schema, reader)
_TREES_MAX = 256
_GUARD = threading.Lock()


def _enter(self: AvroFile[Any]) -> AvroFile[Any]:
    with self.input_file.open() as f:
        self.decoder = new_decoder(f.read())
    self.header = _HEADER_READER.read(self.decoder)
    schema_json = self.header.meta.get(_SCHEMA_KEY)
    if schema_json is None:
        return _ORIGINAL_ENTER(self)  # type: ignore[no-any-return]
    key = (schema_json, id(self.read_schema), tuple(self.read_types.items()), tuple(self.read_enums.items()))
    with _GUARD:
        found = _TREES.get(key)
    if found is not None and found[0] is self.read_schema:
        _, self.schema, self.reader = found
        if not self.read_schema:
            self.read_schema = self.schema
        return self
    read_schema = self.read_schema
    self.schema = self.header.get_schema()
    if not self.read_schema:
        self.read_schema = self.schema
    self.reader = resolve_reader(self.schema, self.read_schema, self.read_types, self.read_enums)
    with _GUARD:
        _TREES[key] = (read_schema, self.schema, self.reader)
        while len(_TREES) > _TREES_MAX:
            _TREES.popitem(last=False)
    return self


def install() -> None:
    """Put the cache in place (once per process, for pyiceberg 0.12 only)."""
    global _INSTALLED
    if _INSTALLED or not pyiceberg.__version__.startswith("0.12."):
        return
    AvroFile.__enter__ = _enter  # type: ignore[method-assign]
    _INSTALLED = True

"""Parquet data files written chunk by chunk, each chunk encoded as it arrives.

Written by hand because pyiceberg has no incremental writer: ``Transaction.append`` encodes a table it holds
whole, and its ``RecordBatchReader`` path gathers a whole target-size file in memory before encoding any of
it. An initial snapshot therefore could not overlap reading PostgreSQL with encoding Parquet, and writing
each chunk as its own file would leave many small files. This keeps one Parquet writer open per table and
rolls over to a new file at the table's target file size. Everything else is pyiceberg's own code (schema
projection with field ids, file locations, writer properties, statistics), so the files are the ones
pyiceberg would have written; the module leans on pyiceberg 0.12 internals (pinned in pyproject.toml).
"""

from __future__ import annotations

import contextlib
import io
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io import FileIO, OutputStream
from pyiceberg.io.fileformat import FileFormatFactory
from pyiceberg.io.pyarrow import (
    _get_parquet_writer_kwargs,
    _to_requested_schema,
    compute_statistics_plan,
    parquet_path_to_id_mapping,
    pyarrow_to_schema,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema, sanitize_column_names
from pyiceberg.table import TableProperties, Transaction
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Record
from pyiceberg.utils.properties import property_as_int

from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg import filestats, ids, localfiles

_PARQUET = FileFormatFactory.get(FileFormat.PARQUET)


class DataFileStream:
    """Appends Arrow tables to the current data file of one (unpartitioned) table; see the module docstring.

    ``close()`` returns the finished files' :class:`DataFile` entries for a snapshot producer; ``abort()``
    deletes whatever was written. Not thread-safe: one thread writes a stream (encoding releases the GIL, so
    streams of different tables encode in parallel)."""

    def __init__(self, txn: Transaction, io: FileIO) -> None:
        self._txn = txn
        self._io = io
        metadata = txn.table_metadata
        if not metadata.spec().is_unpartitioned():
            raise LakeError(
                f"lake table at {metadata.location} has a partition spec ({metadata.spec()}), but lakegate "
                "writes unpartitioned tables only: remove the partition spec, or drop and copy the table again "
                "with `lakegate maintain --resnapshot schema.table`"
            )
        self._key = _key(metadata)
        self._file_schema, self._name_mapping = _schema_of(metadata)
        self._locations = load_location_provider(
            table_location=metadata.location, table_properties=metadata.properties
        )
        self._target = (
            property_as_int(
                metadata.properties,
                TableProperties.WRITE_TARGET_FILE_SIZE_BYTES,
                TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT,
            )
            or TableProperties.WRITE_TARGET_FILE_SIZE_BYTES_DEFAULT
        )
        self._row_group = property_as_int(
            metadata.properties,
            TableProperties.PARQUET_ROW_GROUP_LIMIT,
            TableProperties.PARQUET_ROW_GROUP_LIMIT_DEFAULT,
        )
        self._kwargs = _get_parquet_writer_kwargs(metadata.properties)
        self._write_id = ids.uuid4()
        self._task = 0
        self._writer: pq.ParquetWriter | None = None
        self._stream: OutputStream | None = None
        self._path = ""
        self._bytes = 0  #: Arrow bytes in the current file (pyiceberg's measure of the target size, too)
        self._pending: list[pa.Table] = []  #: chunks gathered for the next row group
        self._pending_rows = 0
        self._pending_bytes = 0
        self._source_schema: tuple[pa.Schema, Schema] | None = None
        self.files: list[DataFile] = []
        self._paths: list[str] = []

    def write(self, data: pa.Table) -> None:
        if data.num_rows == 0:
            return
        projected = self._project(data)
        self._pending.append(projected)
        self._pending_rows += data.num_rows
        nbytes = data.nbytes
        self._pending_bytes += nbytes
        self._bytes += nbytes
        if self._bytes >= self._target:
            self._finish()  # writes the gathered chunks first
        elif self._pending_rows >= ROW_GROUP_ROWS or self._pending_bytes >= ROW_GROUP_BYTES:
            self._flush()

    def _project(self, data: pa.Table) -> pa.Table:
        """``data`` in the file schema (field ids, names), as pyiceberg's ``_to_requested_schema`` makes it. When
        that only renames and labels the columns of a flat table (the usual case), the schema it produced for the
        first batch of this source schema is put on the columns as they are: its schema visitor cost more than
        the rest of writing a small file."""
        text = data.schema.to_string(show_schema_metadata=False)  # a key: hashing a pyarrow schema is slow
        file_schema = self._task_schema(data.schema, text)
        known = _cached(("trivial", *self._key, text), lambda: None)
        if (
            known
            and known[0].equals(data.schema)
            and all(
                field.nullable or column.null_count == 0
                for field, column in zip(known[1], data.columns, strict=True)
            )
        ):
            return pa.Table.from_arrays(data.columns, schema=known[1])
        batches = [
            _to_requested_schema(
                requested_schema=self._file_schema,
                file_schema=file_schema,
                batch=batch,
                include_field_ids=True,
                format_model=_PARQUET,
            )
            for batch in data.to_batches()
        ]
        projected = pa.Table.from_batches(batches)
        if known is None and batches:
            _remember_trivial(("trivial", *self._key, text), data, projected)
        return projected

    def _flush(self) -> None:
        """Write the gathered chunks as one row group (small chunks would make small row groups)."""
        if not self._pending:
            return
        table = pa.concat_tables(self._pending)
        self._pending, self._pending_rows, self._pending_bytes = [], 0, 0
        if self._writer is None:
            self._open(table)
        assert self._writer is not None
        self._writer.write_table(table, row_group_size=self._row_group)

    def close(self) -> list[DataFile]:
        self._flush()
        if self._writer is not None:
            self._finish()
        return self.files

    def abandon(self) -> list[str]:
        """Close without finishing; returns the paths of every file this stream wrote. Never raises."""
        for resource in (self._writer, self._stream):
            if resource is not None:
                with contextlib.suppress(Exception):
                    resource.close()
        self._writer = self._stream = None
        return list(self._paths)

    def abort(self) -> None:
        """Close and delete every file this stream wrote: only for a stream no commit has been tried with.
        Never raises: it runs while another error propagates (a file left behind is an orphan upkeep removes)."""
        for path in self.abandon():
            with contextlib.suppress(Exception):
                self._io.delete(path)

    def _task_schema(self, schema: pa.Schema, text: str) -> Schema:
        if self._source_schema is None or not self._source_schema[0].equals(schema):
            version = self._txn.table_metadata.format_version

            def convert() -> tuple[pa.Schema, Schema]:
                return schema, pyarrow_to_schema(
                    schema, name_mapping=self._name_mapping, format_version=version
                )

            converted = _cached(("source", *self._key, version, text), convert)
            self._source_schema = converted if converted[0].equals(schema) else convert()
        return self._source_schema[1]

    def _open(self, first: pa.Table) -> None:
        schema = first.schema
        name = f"00000-{self._task}-{self._write_id}.parquet"
        self._task += 1
        self._path = self._locations.new_data_location(data_file_name=name)
        self._paths.append(self._path)
        self._stream = localfiles.create(self._io, self._path)
        # the schema of the projected batches carries the field ids, as in pyiceberg's writer; a file of a few
        # rows is not worth judging which columns repeat (dictionary pages would only make it larger)
        small = first.num_rows <= SMALL_FILE_ROWS
        dictionary = False if small else dictionary_columns(first)
        kwargs = self._kwargs
        if small and kwargs.get("compression") in SMALL_FILE_CODEC_FOR:
            # a heavy codec's set-up per column cost more than encoding a flush's rows (zstd: ~0.1 ms of 0.5 per
            # file, issue 11.16); every Parquet reader reads any codec per file, and files of more rows (an
            # initial copy's, a compaction's once the table has grown) use the table's own
            kwargs = {**kwargs, "compression": SMALL_FILE_CODEC, "compression_level": None}
        self._writer = pq.ParquetWriter(
            self._stream,
            schema=schema,
            store_decimal_as_integer=True,
            **{"use_dictionary": dictionary, **kwargs},
        )

    def _finish(self) -> None:
        self._flush()
        assert self._writer is not None and self._stream is not None
        with self._stream:
            self._writer.close()
            metadata = self._writer.writer.metadata
            try:
                size: int | None = self._stream.tell()
            except (AttributeError, OSError, ValueError):
                size = None  # not every FileIO stream knows its position: ask the store below
        self._writer = None
        self._stream = None
        self._bytes = 0
        # the table's current properties: a column may have been switched to counts-only since the file opened
        statistics = filestats.statistics(
            metadata, _plan_of(self._key, self._file_schema, self._txn.table_metadata.properties)
        )
        if size is None:
            size = len(self._io.new_input(self._path))
        data_file = DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=self._path,
            file_format=FileFormat.PARQUET,
            partition=Record(),
            file_size_in_bytes=size,
            sort_order_id=None,
            equality_ids=None,
            key_metadata=None,
            **statistics,
        )
        data_file.spec_id = self._txn.table_metadata.default_spec_id  # not a field: from_args would drop it
        self.files.append(data_file)


def _key(metadata: TableMetadata) -> tuple[str, int]:
    return str(metadata.table_uuid), metadata.current_schema_id


def _schema_of(metadata: TableMetadata) -> tuple[Schema, Any]:
    """The data files' schema and name mapping of a table's current schema (see :func:`_cached`)."""
    return _cached(("schema", *_key(metadata)), lambda: _file_schema(metadata.schema()))  # type: ignore[no-any-return]


def _plan_of(key: tuple[str, int], file_schema: Schema, properties: dict[str, str]) -> Any:
    """The statistics plan of the table's data files under its current metrics properties."""
    metrics = tuple(sorted((k, v) for k, v in properties.items() if k.startswith("write.metadata.metrics")))
    return _cached(
        ("plan", *key, metrics),
        lambda: filestats.plan(
            compute_statistics_plan(file_schema, properties), parquet_path_to_id_mapping(file_schema)
        ),
    )


def warm(metadata: TableMetadata) -> None:
    """Derive now what the first data file of this table's current schema would: a writer process warms its
    tables before the stream starts (issue 11.16)."""
    file_schema, _ = _schema_of(metadata)
    _plan_of(_key(metadata), file_schema, metadata.properties)


_DERIVED: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_DERIVED_MAX = 4096
_DERIVED_GUARD = threading.Lock()


def _cached(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """What pyiceberg derives from a table schema (its schema visitors cost about 1 ms each, several per file,
    and a flush writes small files to hundreds of tables): computed once per (table, schema id, ...). A table's
    schema with a given id never changes; a new table has a new UUID."""
    with _DERIVED_GUARD:
        found = _DERIVED.get(key, _MISSING)
    if found is _MISSING:
        found = build()
        with _DERIVED_GUARD:
            _DERIVED[key] = found
            while len(_DERIVED) > _DERIVED_MAX:
                _DERIVED.popitem(last=False)
    return found


_MISSING = object()
SMALL_FILE_ROWS = 1024  #: a file opened with no more rows than this holds only them (see ``_open``)
SMALL_FILE_CODEC = "snappy"  #: written instead of these codecs in such a file
SMALL_FILE_CODEC_FOR = frozenset({"zstd", "gzip", "brotli"})


def _remember_trivial(key: tuple[Any, ...], data: pa.Table, projected: pa.Table) -> None:
    """Record whether projecting tables of ``data``'s schema kept every column as it was (same type, same
    values; names and field metadata aside) for a flat schema: later tables then only get the file schema."""
    flat = not any(pa.types.is_nested(field.type) for field in data.schema)
    same = (
        flat
        and projected.num_columns == data.num_columns
        and all(
            a.type == b.type and a.equals(b) for a, b in zip(data.columns, projected.columns, strict=True)
        )
    )
    with _DERIVED_GUARD:
        _DERIVED[key] = (data.schema, projected.schema) if same else False


def _file_schema(table_schema: Schema) -> tuple[Schema, Any]:
    return sanitize_column_names(table_schema), table_schema.name_mapping


DICTIONARY_SAMPLE = 65536
ROW_GROUP_ROWS = 131072  #: chunks are gathered to at least this many rows per row group
ROW_GROUP_BYTES = 128 * 2**20  #: ... or this much Arrow data (wide rows: memory stays bounded)


def dictionary_columns(data: pa.Table) -> list[str]:
    """The columns worth dictionary encoding, judged on the first rows of a file: those that repeat values.

    Parquet writers dictionary-encode every column by default and fall back to plain encoding once a column
    chunk's dictionary outgrows its page limit. For a column of unique values (keys, sequence numbers, event
    times, free text) that first try costs about three times the CPU of plain encoding and leaves files three
    times larger (measured on the 5-column benchmark table: 346 ms and 17.9 MB against 124 ms and 6.1 MB per
    million rows). The leaves of nested columns keep the default (dictionary first)."""
    chosen = []
    nested = [field.name for field in data.schema if pa.types.is_nested(field.type)]
    if nested:
        probe = io.BytesIO()
        # one row, not none: pyarrow cannot write a zero-row list of an extension type (uuid[])
        pq.write_table(data.slice(0, 1), probe)
        leaves = pq.read_metadata(io.BytesIO(probe.getvalue())).schema
        paths = [leaves.column(i).path for i in range(len(leaves))]
        chosen += [path for path in paths if any(path.startswith(name + ".") for name in nested)]
    for field, column in zip(data.schema, data.columns, strict=True):
        if pa.types.is_nested(field.type):
            continue
        sample = column.slice(0, DICTIONARY_SAMPLE)
        if isinstance(field.type, pa.ExtensionType):  # uuid: judge the stored bytes
            sample = pa.chunked_array(
                [chunk.storage for chunk in sample.chunks], type=field.type.storage_type
            )
        present = len(sample) - sample.null_count
        try:
            repeats = present == 0 or pc.count_distinct(sample).as_py() * 2 <= present
        except pa.ArrowNotImplementedError:
            repeats = True  # a type without a distinct count: keep the writer's default
        if repeats:
            chosen.append(field.name)
    return chosen

"""Iceberg v2 position-delete files: ``(file_path, pos)`` rows that hide rows of data files.

Written by hand because pyiceberg 0.12 reads position deletes but cannot write them (apache/iceberg-python#1078).
The file is what the spec asks for: a Parquet file whose two columns carry the reserved field ids
``2147483546`` (``file_path``, string) and ``2147483545`` (``pos``, long), rows sorted by path then position.
Its manifest entry (:class:`DataFile` with ``content = POSITION_DELETES``) gets the statistics pyiceberg computes
for any Parquet file, with full (untruncated) bounds: readers (pyiceberg's ``DeleteFileIndex``, Spark, DuckDB) use
the ``file_path`` bounds to find the data files a delete file applies to, and equal bounds name that one file.

One delete file per commit holds the positions of every data file that commit touches (as Spark writes an
unpartitioned table); upkeep merges them later (:mod:`lakegate.connectors.iceberg.compaction`).
"""

from __future__ import annotations

import uuid

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import (
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.schema import Schema
from pyiceberg.table.locations import load_location_provider
from pyiceberg.table.metadata import TableMetadata
from pyiceberg.typedef import Record
from pyiceberg.types import LongType, NestedField, StringType

from lakegate.connectors.iceberg import filereads

FILE_PATH, POS = "file_path", "pos"
FILE_PATH_ID, POS_ID = 2147483546, 2147483545

#: the spec's position-delete schema (reserved field ids)
DELETE_SCHEMA = Schema(
    NestedField(FILE_PATH_ID, FILE_PATH, StringType(), required=True),
    NestedField(POS_ID, POS, LongType(), required=True),
)
ARROW_SCHEMA = pa.schema(
    [
        pa.field(FILE_PATH, pa.string(), nullable=False, metadata={b"PARQUET:field_id": str(FILE_PATH_ID)}),
        pa.field(POS, pa.int64(), nullable=False, metadata={b"PARQUET:field_id": str(POS_ID)}),
    ]
)
#: full bounds on both columns: a truncated file_path bound would match data files it does not touch
_METRICS = {"write.metadata.metrics.default": "full"}


def positions(file_path: str, rows: pa.Array | list[int]) -> pa.Table:
    """A delete table for rows ``rows`` of ``file_path``."""
    pos = pa.array(rows, pa.int64())
    return pa.Table.from_arrays(
        [pa.repeat(pa.scalar(file_path), len(pos)).cast(pa.string()), pos], schema=ARROW_SCHEMA
    )


def sort(deletes: pa.Table) -> pa.Table:
    """Sorted by path then position, duplicates removed (the spec asks for sorted files)."""
    deletes = deletes.select([FILE_PATH, POS]).cast(ARROW_SCHEMA)
    if deletes.num_rows == 0:
        return deletes
    unique = deletes.group_by([FILE_PATH, POS], use_threads=False).aggregate([])
    return (
        unique.select([FILE_PATH, POS])
        .sort_by([(FILE_PATH, "ascending"), (POS, "ascending")])
        .cast(ARROW_SCHEMA)
    )


def write(metadata: TableMetadata, io: FileIO, deletes: pa.Table) -> DataFile:
    """Write ``deletes`` (columns ``file_path``, ``pos``) as one position-delete file of the table."""
    rows = sort(deletes)
    if rows.num_rows == 0:
        raise ValueError("refusing to write an empty position-delete file")
    locations = load_location_provider(table_location=metadata.location, table_properties=metadata.properties)
    path = locations.new_data_location(data_file_name=f"{uuid.uuid4()}-deletes.parquet")
    with io.new_output(path).create(overwrite=False) as stream:
        writer = pq.ParquetWriter(stream, schema=ARROW_SCHEMA, compression="zstd")  # type: ignore[arg-type]
        writer.write_table(rows, row_group_size=1 << 20)
        writer.close()
        parquet_metadata = writer.writer.metadata
    statistics = data_file_statistics_from_parquet_metadata(
        parquet_metadata=parquet_metadata,
        stats_columns=compute_statistics_plan(DELETE_SCHEMA, _METRICS),
        parquet_column_mapping=parquet_path_to_id_mapping(DELETE_SCHEMA),
    )
    delete_file = DataFile.from_args(
        content=DataFileContent.POSITION_DELETES,
        file_path=path,
        file_format=FileFormat.PARQUET,
        partition=Record(),
        file_size_in_bytes=len(io.new_input(path)),
        sort_order_id=None,
        spec_id=metadata.default_spec_id,
        equality_ids=None,
        key_metadata=None,
        **statistics.to_serialized_dict(),
    )
    delete_file.spec_id = metadata.default_spec_id  # from_args leaves it unset; validations read it
    return delete_file


def read(io: FileIO, delete_file: DataFile) -> pa.Table:
    """The ``(file_path, pos)`` rows of a position-delete file."""
    with io.new_input(delete_file.file_path).open() as stream:
        table = pq.read_table(
            stream,  # type: ignore[arg-type]
            columns=[FILE_PATH, POS],
            use_threads=filereads.threaded(delete_file),  # small ones on this thread (see filereads)
        )
    return table.cast(ARROW_SCHEMA)


def for_file(deletes: pa.Table, file_path: str) -> pa.Array:
    """Positions of ``file_path`` in a delete table."""
    mask = pc.equal(deletes[FILE_PATH], file_path)
    return deletes.filter(mask)[POS].combine_chunks()

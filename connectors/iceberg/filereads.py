"""Reading a state table's data files with pyarrow directly, columns matched by Iceberg field id.

pyiceberg's scan costs about 2 ms of Python per file (planning, projection, schema visitors); the key index, the
TOAST carry-over and compaction read a few columns or rows of files whose layout they know, so they read the
Parquet files themselves: the key columns of a file (index rebuild), a few rows by position (lookups), and whole
files written with the table's current columns (compaction; a file from before a schema change is left to
pyiceberg's scan, which maps renamed, added and promoted columns).

Small files (below :data:`THREADED_FROM`: a flush's worth of rows, which is what a compaction of a busy table
mostly reads) are read on the calling thread: handing each column to Arrow's thread pool cost more than decoding
it (a 5-row file: 0.29 ms of CPU with the pool, 0.21 ms without), and on a busy machine the hand-over waits for
a core (issue 11.16).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.manifest import DataFile
from pyiceberg.table import FileScanTask, Table

from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg import merge

THREADED_FROM = 1 << 20  #: bytes: larger files are decoded on Arrow's thread pool


def threaded(data_file: DataFile) -> bool:
    """Whether to decode ``data_file`` on Arrow's thread pool (see the module docstring)."""
    return bool(data_file.file_size_in_bytes >= THREADED_FROM)


def file_names(table: Table, parquet: pq.ParquetFile) -> dict[str, str]:
    """Table column -> its name in a data file, matched by field id (a renamed column keeps its id)."""
    ids = {field.field_id: field.name for field in table.schema().fields}
    names = {}
    for field in parquet.schema_arrow:
        field_id = int((field.metadata or {}).get(b"PARQUET:field_id", b"-1"))
        if field_id in ids:
            names[ids[field_id]] = field.name
    return names


def read_keys(table: Table, data_file: DataFile, key: tuple[str, ...]) -> pa.Table:
    """The key columns of a data file, named as the table names them now."""
    with table.io.new_input(data_file.file_path).open() as stream:
        parquet = pq.ParquetFile(stream)  # type: ignore[arg-type]
        names = file_names(table, parquet)
        missing = [k for k in key if k not in names]
        if missing:
            raise LakeError(
                f"data file {data_file.file_path} of {'.'.join(table.name())} lacks key column(s) {missing}"
            )
        rows = parquet.read(columns=[names[k] for k in key], use_threads=threaded(data_file))
    return pa.table(rows.columns, names=list(key))


def read_rows(table: Table, data_file: DataFile, positions: np.ndarray) -> pa.Table:
    """The rows at ``positions`` (sorted) of a data file, reading only the row groups that hold them."""
    with table.io.new_input(data_file.file_path).open() as stream:
        parquet = pq.ParquetFile(stream)  # type: ignore[arg-type]
        sizes = [parquet.metadata.row_group(i).num_rows for i in range(parquet.num_row_groups)]
        starts = np.concatenate([[0], np.cumsum(sizes)])
        groups = np.unique(np.searchsorted(starts, positions, side="right") - 1)
        rows = parquet.read_row_groups(groups.tolist(), use_threads=threaded(data_file))
        names = file_names(table, parquet)
    offsets = np.concatenate([[0], np.cumsum([sizes[g] for g in groups])])
    group_of = np.searchsorted(groups, np.searchsorted(starts, positions, side="right") - 1)
    local = positions - starts[groups[group_of]] + offsets[group_of]
    picked = rows.take(pa.array(local))
    return pa.table([picked[name] for name in names.values()], names=list(names))


def read_current(table: Table, data_file: DataFile, deleted: np.ndarray) -> pa.Table | None:
    """The rows of a data file but those at ``deleted``, in the table's current Arrow schema; None when the file's
    columns are not the table's current ones (by field id and name, of the same types but for the offset width of
    strings and binaries)."""
    schema = table.schema()
    target = merge.arrow_schema(schema)
    with table.io.new_input(data_file.file_path).open() as stream:
        parquet = pq.ParquetFile(stream)  # type: ignore[arg-type]
        fields = list(parquet.schema_arrow)
        ids = [int((f.metadata or {}).get(b"PARQUET:field_id", b"-1")) for f in fields]
        current = [(f.field_id, f.name) for f in schema.fields]
        if list(zip(ids, [f.name for f in fields], strict=True)) != current:
            return None
        if any(not _same_type(f.type, t.type) for f, t in zip(fields, target, strict=True)):
            return None
        data = parquet.read(use_threads=threaded(data_file))
    columns = [c if c.type == t.type else c.cast(t.type) for c, t in zip(data.columns, target, strict=True)]
    return without(pa.Table.from_arrays(columns, schema=target), deleted)


def read_all(table: Table, files: Sequence[tuple[FileScanTask, np.ndarray]]) -> pa.Table:
    """The rows of each task's data file but those at its deleted positions, in the table's current Arrow schema:
    with pyarrow where a file has the table's current columns (:func:`read_current`), the others together through
    pyiceberg's scan, which maps renamed, added and promoted columns and applies the tasks' delete files."""
    target = merge.arrow_schema(table.schema())
    parts: list[pa.Table] = [merge.empty_table(target)]
    others: list[FileScanTask] = []
    for task, deleted in files:
        rows = read_current(table, task.file, deleted)
        if rows is None:
            others.append(task)
        else:
            parts.append(rows)
    if others:
        scanned = ArrowScan(table.metadata, table.io, table.schema(), AlwaysTrue()).to_table(others)
        parts.append(merge.conform(scanned, target))
    return pa.concat_tables(parts)


def without(rows: pa.Table, deleted: np.ndarray) -> pa.Table:
    """``rows`` but those at the positions ``deleted``."""
    if len(deleted):
        rows = rows.filter(pa.array(~np.isin(np.arange(rows.num_rows), deleted)))
    return rows


_WIDTHS = {pa.string(): pa.large_string(), pa.binary(): pa.large_binary()}


def _same_type(found: pa.DataType, wanted: pa.DataType) -> bool:
    return found == wanted or _WIDTHS.get(found) == wanted or _WIDTHS.get(wanted) == found

"""What every lake commit shares: checkpoint stamps, statistics guards and data files added to a snapshot."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyiceberg.manifest import DataFile
from pyiceberg.table import Table, TableProperties, Transaction
from pyiceberg.table.snapshots import Operation, ancestors_of
from pyiceberg.utils.properties import property_as_bool

from lakegate.connectors.changes import INFINITY_PROPERTY, TS_INFINITY, TS_MINUS_INFINITY, Position
from lakegate.connectors.iceberg import leancommit
from lakegate.connectors.iceberg.datafiles import DataFileStream

log = logging.getLogger("lakegate.connectors.iceberg.writer")

PROP_LSN, PROP_SEQ = "lakegate.lsn", "lakegate.seq"
TABLE_PROPERTIES = {
    "write.parquet.compression-codec": "zstd",
    # one commit a second: merge manifests as they pile up, keep few old metadata files
    "commit.manifest-merge.enabled": "true",
    "commit.manifest.min-count-to-merge": "32",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "16",
}


def stamp(position: Position, **extra: str) -> dict[str, str]:
    return {PROP_LSN: str(position.lsn), PROP_SEQ: str(position.seq), **extra}


def checkpoint_of(table: Table) -> Position | None:
    """The newest ``lakegate.lsn`` stamp on the table's current snapshot lineage (maintenance commits carry none)."""
    for snapshot in ancestors_of(table.current_snapshot(), table.metadata):
        props = snapshot.summary.additional_properties if snapshot.summary else {}
        if PROP_LSN in props:
            return Position(int(props[PROP_LSN]), int(props.get(PROP_SEQ, 2**62)))
    return None


# pyiceberg turns Parquet min/max statistics into Python dates, which stop at years 1 and 9999: a column holding
# infinity or a BC date would fail the write. Such a column keeps counts only (no bounds) from then on.
_PY_DAYS = (-719162, 2932896)
_PY_MICROS = (-62135596800000000, 253402300799999999)


def _temporal_leaves(name: str, arr: pa.ChunkedArray | pa.Array) -> Iterator[tuple[str, pa.Array]]:
    typ = arr.type
    if pa.types.is_list(typ) or pa.types.is_large_list(typ):
        chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
        flat = pa.chunked_array([c.flatten() for c in chunks], type=typ.value_type)
        yield from _temporal_leaves(f"{name}.element", flat)
    elif pa.types.is_date32(typ) or pa.types.is_timestamp(typ):
        yield name, arr


def mark_infinities(txn: Transaction, data: pa.Table) -> None:
    """Mark each timestamp column of ``data`` holding an infinity (see :data:`TS_INFINITY`) on the table, in the
    same commit, so that readers that know (the gateway) read those values back as infinities."""
    props = {}
    schema = txn.table_metadata.schema()
    ends = pa.array([TS_INFINITY, TS_MINUS_INFINITY], pa.int64())
    for field in data.schema:
        for path, arr in _temporal_leaves(field.name, data[field.name]):
            if not pa.types.is_timestamp(arr.type) or arr.null_count == len(arr):
                continue
            field_id = schema.find_field(path).field_id
            key = f"{INFINITY_PROPERTY}{field_id}"
            if key not in txn.table_metadata.properties and pc.any(pc.is_in(arr.cast(pa.int64()), ends)).as_py():
                props[key] = "true"
    if props:
        txn.set_properties(props)


def guard_statistics(txn: Transaction, data: pa.Table) -> None:
    """Switch temporal columns whose values Python cannot represent to counts-only metrics."""
    mark_infinities(txn, data)
    props = {}
    for field in data.schema:
        for path, arr in _temporal_leaves(field.name, data[field.name]):
            key = f"write.metadata.metrics.column.{path}"
            if (
                len(arr) == 0
                or arr.null_count == len(arr)
                or txn.table_metadata.properties.get(key) == "counts"
            ):
                continue
            bounds = _PY_DAYS if pa.types.is_date32(arr.type) else _PY_MICROS
            extremes = pc.min_max(arr)  # the scalars' ``value`` is the stored integer: no cast, no datetime
            if extremes["min"].value < bounds[0] or extremes["max"].value > bounds[1]:
                props[key] = "counts"
    if props:
        log.info(
            "%s: keeping counts only (no min/max) for %s, which hold(s) values beyond years 1-9999",
            ".".join(txn.table_metadata.location.rstrip("/").split("/")[-2:]),
            ", ".join(props),
        )
        txn.set_properties(props)


def write_files(txn: Transaction, table: Table, data: pa.Table, producer: Any) -> int:
    """Write ``data`` as data files of ``table`` and add them to ``producer``; returns the number of files."""
    files = data_files(txn, table, data)
    for data_file in files:
        producer.append_data_file(data_file)
    return len(files)


def data_files(txn: Transaction, table: Table, data: pa.Table) -> list[DataFile]:
    """Write ``data`` (in row order) as data files of ``table``, not yet part of any snapshot; a failed write
    removes what it wrote and raises."""
    guard_statistics(txn, data)
    stream = DataFileStream(txn, table.io)
    try:
        stream.write(data)
        return stream.close()
    except BaseException:
        stream.abort()
        raise


class _Append:
    """An append of data files: committed by :mod:`.leancommit` when it applies, else by pyiceberg's producer."""

    def __init__(self, txn: Transaction, properties: dict[str, str]) -> None:
        self.txn, self.properties = txn, properties
        self.files: list[DataFile] = []

    def __enter__(self) -> _Append:
        return self

    def append_data_file(self, data_file: DataFile) -> _Append:
        self.files.append(data_file)
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if exc_type is not None or leancommit.commit(self.txn, self.files, self.properties, Operation.APPEND):
            return
        with _pyiceberg_append(self.txn, self.properties) as producer:
            for data_file in self.files:
                producer.append_data_file(data_file)


def append_producer(txn: Transaction, properties: dict[str, str]) -> Any:
    """An append (``with append_producer(txn, props) as p: p.append_data_file(f)``), committed the lean way
    inside a flush (see connectors.iceberg.leancommit), else as ``Transaction.append`` would."""
    return _Append(txn, properties)


def _pyiceberg_append(txn: Transaction, properties: dict[str, str]) -> Any:
    """An append that merges manifests when the table asks for it (as ``Transaction.append`` chooses)."""
    update = txn.update_snapshot(snapshot_properties=properties)
    merge_manifests = property_as_bool(
        txn.table_metadata.properties,
        TableProperties.MANIFEST_MERGE_ENABLED,
        TableProperties.MANIFEST_MERGE_ENABLED_DEFAULT,
    )
    if not merge_manifests:
        return update.fast_append()
    producer = update.merge_append()
    producer._min_count_to_merge = leancommit.merge_count(txn.table_metadata)  # spread (see there)
    return producer


def repeat(value: object, n: int, typ: pa.DataType) -> pa.Array:
    if pa.types.is_timestamp(typ):
        return pa.repeat(pa.scalar(value, pa.int64()), n).cast(typ)
    return pa.repeat(pa.scalar(value, typ), n)

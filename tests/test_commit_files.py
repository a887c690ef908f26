"""The pieces of a commit written without pyiceberg's generic code (issue 11.16) give what pyiceberg gives:
data-file statistics (connectors/iceberg/filestats.py), Avro file headers (manifestfiles.header_bytes), the table
metadata JSON (metadatajson.py), snapshot lookups by id (snapshotindex.py) and Avro reading with cached reader
trees (avroreaders.py)."""

from __future__ import annotations

import datetime
import decimal
import io
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.avro.encoder import BinaryEncoder
from pyiceberg.avro.file import META_SCHEMA, AvroFileHeader
from pyiceberg.avro.resolver import construct_writer
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.io.pyarrow import (
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.schema import sanitize_column_names
from pyiceberg.table import Table
from pyiceberg.types import StringType

from lakegate.connectors.iceberg import manifestfiles, metadatajson, snapshotindex
from lakegate.connectors.iceberg.datafiles import DataFileStream

ROWS = 1500  #: more than SMALL_FILE_ROWS, in three row groups of 500


def _data(rows: int) -> pa.Table:
    """Every type lakegate writes, with nulls, NaNs, negative values, and strings past the truncation length
    (some ending in the highest code point, which has no successor)."""
    n = range(rows)
    at = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    texts = [
        None if i % 7 == 0 else "k" * 18 + ("é" * (i % 40)) + ("\U0010ffff" * (i % 3)) + f"-{i:05d}"
        for i in n
    ]
    return pa.table(
        {
            "i32": pa.array([None if i % 11 == 0 else i - 700 for i in n], pa.int32()),
            "i64": pa.array([i * 10**12 - 3 for i in n], pa.int64()),
            "f32": pa.array([float("nan") if i % 5 == 0 else i / 3 for i in n], pa.float32()),
            "f64": pa.array([None if i % 4 == 0 else -i / 7 for i in n], pa.float64()),
            "flag": pa.array([i % 3 == 0 for i in n]),
            "day": pa.array([datetime.date(2020, 1, 1) + datetime.timedelta(days=i) for i in n]),
            "clock": pa.array([datetime.time(i % 24, i % 60, 1, i) for i in n], pa.time64("us")),
            "ts": pa.array(
                [at.replace(tzinfo=None) + datetime.timedelta(seconds=i) for i in n], pa.timestamp("us")
            ),
            "tstz": pa.array([at + datetime.timedelta(minutes=i) for i in n], pa.timestamp("us", tz="UTC")),
            "text": pa.array(texts, pa.string()),
            "blob": pa.array([None if i % 9 == 0 else bytes([i % 256]) * (i % 30) for i in n], pa.binary()),
            "d9": pa.array([decimal.Decimal(i - 500) / 100 for i in n], pa.decimal128(9, 2)),
            "d18": pa.array([decimal.Decimal(i * 1000003) / 10000 for i in n], pa.decimal128(18, 4)),
            "d38": pa.array([decimal.Decimal(i * 10**20 + 1) / 10**6 for i in n], pa.decimal128(38, 6)),
            "ints": pa.array([[i, -i] if i % 2 else None for i in n], pa.list_(pa.int64())),
            "empty": pa.array([None] * rows, pa.string()),
        }
    )


@pytest.fixture()
def catalog(tmp_path: Path) -> SqlCatalog:
    catalog = SqlCatalog(
        "files", uri=f"sqlite:///{tmp_path / 'catalog.db'}", warehouse=(tmp_path / "warehouse").as_uri()
    )
    catalog.create_namespace("ns")
    return catalog


def _written(table: Table, data: pa.Table) -> list[Any]:
    txn = table.transaction()
    stream = DataFileStream(txn, table.io)
    stream.write(data)
    return stream.close()


def _expected(table: Table, path: str) -> dict[str, Any]:
    schema = sanitize_column_names(table.schema())
    metadata = pq.read_metadata(path.removeprefix("file://"))
    return data_file_statistics_from_parquet_metadata(
        metadata, compute_statistics_plan(schema, table.properties), parquet_path_to_id_mapping(schema)
    ).to_serialized_dict()


@pytest.mark.parametrize(
    "properties",
    [
        {"write.parquet.row-group-limit": "500"},
        {
            "write.parquet.row-group-limit": "500",
            "write.metadata.metrics.default": "truncate(4)",
            "write.metadata.metrics.column.i64": "none",
            "write.metadata.metrics.column.text": "full",
            "write.metadata.metrics.column.tstz": "counts",
        },
    ],
)
@pytest.mark.parametrize("rows", [5, ROWS])
def test_file_statistics_are_pyiceberg_s(catalog: SqlCatalog, properties: dict[str, str], rows: int) -> None:
    data = _data(rows)
    table = catalog.create_table("ns.t", schema=data.schema, properties=properties)
    (data_file,) = _written(table, data)
    expected = _expected(table, data_file.file_path)
    if rows == ROWS:
        assert len(expected["split_offsets"]) == 3
    assert expected["lower_bounds"] and expected["upper_bounds"]
    for key, value in expected.items():
        assert getattr(data_file, key) == value, key
        if isinstance(value, dict):
            assert list(getattr(data_file, key)) == list(value), f"{key}: same order"


@pytest.mark.parametrize(
    "meta",
    [
        {},
        {"avro.codec": "deflate"},
        {"schema": "x" * 300, "snapshot-id": str(2**62), "é": "\U0010ffff" * 70},
    ],
)
def test_avro_header_is_pyiceberg_s(meta: dict[str, str]) -> None:
    sync = bytes(range(16))
    out = io.BytesIO()
    construct_writer(META_SCHEMA).write(BinaryEncoder(out), AvroFileHeader(b"Obj\x01", meta, sync))
    assert manifestfiles.header_bytes(meta, sync) == out.getvalue()


def test_metadata_json_is_pyiceberg_s(catalog: SqlCatalog) -> None:
    """Byte for byte, as the lists grow at their end, when snapshots are expired from their middle and start,
    when the metadata log slides (it keeps 3 entries here) and when a schema is added."""
    data = _data(5)
    table = catalog.create_table(
        "ns.t",
        schema=data.schema,
        properties={"a": 'quote " "snapshots":[]', "write.metadata.previous-versions-max": "3"},
    )

    def same() -> None:
        for exclude_none in (True, False):
            text = table.metadata.model_dump_json(exclude_none=exclude_none)
            for _ in range(2):  # the second time from the kept texts
                assert metadatajson.dumps(table.metadata, exclude_none=exclude_none).decode("utf-8") == text

    for _ in range(metadatajson.SPLICE_FROM + 3):
        table.append(data)
        same()
    assert len(table.metadata.snapshots) > metadatajson.SPLICE_FROM
    assert len(table.metadata.metadata_log) == 3 and table.metadata.snapshot_log
    ids = [s.snapshot_id for s in table.metadata.snapshots]
    table.maintenance.expire_snapshots().by_ids([ids[0], ids[5]]).commit()
    assert len(table.metadata.snapshots) == len(ids) - 2
    same()
    table.append(data)
    same()
    with table.update_schema() as update:
        update.add_column("added", StringType())
    assert len(table.metadata.schemas) == 2
    same()
    table.append(data.append_column("added", pa.array(["x"] * data.num_rows)))
    same()


def test_snapshot_lookup_is_the_scan_s(catalog: SqlCatalog) -> None:
    """snapshotindex answers as pyiceberg's scan of the list, for every snapshot and for a missing id, on every
    version of the metadata as it grows and after an expiry."""
    data = _data(5)
    table = catalog.create_table("ns.t", schema=data.schema)
    versions = []
    for _ in range(snapshotindex.INDEX_FROM + 3):
        table.append(data)
        versions.append(table.metadata)
    ids = [s.snapshot_id for s in table.metadata.snapshots]
    table.maintenance.expire_snapshots().by_ids(ids[:2]).commit()
    versions.append(table.metadata)
    for metadata in versions:
        for snapshot_id in [*ids, 12345]:
            found = metadata.snapshot_by_id(snapshot_id)
            scanned = next((s for s in metadata.snapshots if s.snapshot_id == snapshot_id), None)
            assert found is scanned, snapshot_id
    assert versions[-1].snapshot_by_id(ids[0]) is None and versions[-2].snapshot_by_id(ids[0]) is not None


def test_manifests_read_with_cached_readers_are_the_same(catalog: SqlCatalog) -> None:
    """Each read builds its reader the first time and reuses it after: the entries are the same both times,
    and files of two tables with different schemas are each read with their own."""
    for name, data in (("ns.a", _data(5)), ("ns.b", pa.table({"k": pa.array([1, 2], pa.int64())}))):
        table = catalog.create_table(name, schema=data.schema)
        table.append(data)
        table.append(data)
        snapshot = table.current_snapshot()
        assert snapshot is not None
        first = [(m, m.fetch_manifest_entry(table.io)) for m in snapshot.manifests(table.io)]
        again = [(m, m.fetch_manifest_entry(table.io)) for m in snapshot.manifests(table.io)]
        assert first == again and len(first) == 2
        rows = table.scan().to_arrow()
        assert rows.num_rows == 2 * data.num_rows and set(rows.column_names) == set(data.column_names)


@pytest.mark.parametrize("rows", [5, ROWS])
def test_small_files_use_a_light_codec_and_read_back_the_same(
    catalog: SqlCatalog, rows: int, tmp_path: Path
) -> None:
    """A file of a flush's few rows is written with snappy instead of the table's zstd (issue 11.16: the codec's
    set-up per column was a fifth of writing it); larger files keep the table's codec. Both read back the same
    through pyiceberg and DuckDB."""
    from lakegate.connectors.iceberg.datafiles import SMALL_FILE_CODEC, SMALL_FILE_ROWS
    from tests.readers import duckdb_alone

    data = _data(rows)
    table = catalog.create_table("ns.t", schema=data.schema, properties={"write.parquet.compression-codec": "zstd"})
    with table.transaction() as txn:
        stream = DataFileStream(txn, table.io)
        stream.write(data)
        files = stream.close()
        append = txn.update_snapshot().fast_append()
        for data_file in files:
            append.append_data_file(data_file)
        append.commit()
    metadata = pq.read_metadata(files[0].file_path.removeprefix("file://"))
    codecs = {metadata.row_group(0).column(i).compression for i in range(metadata.num_columns)}
    assert codecs == ({SMALL_FILE_CODEC.upper()} if rows <= SMALL_FILE_ROWS else {"ZSTD"}), codecs
    table = catalog.load_table("ns.t")
    read = table.scan().to_arrow().cast(data.schema).sort_by("i64")
    assert repr(read.to_pylist()) == repr(data.sort_by("i64").to_pylist())  # repr: NaN equals NaN
    seen = duckdb_alone(table, tmp_path)
    assert seen.num_rows == rows and sorted(seen["i64"].to_pylist()) == sorted(data["i64"].to_pylist())

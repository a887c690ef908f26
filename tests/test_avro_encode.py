"""avroencode's compiled writers write the bytes pyiceberg's writer trees write (issue 11.16): manifest entries
of data and delete files with every kind of statistics, manifest-list records, a tree with every primitive, and
whole manifest and manifest-list files of a lean commit (manifestfiles)."""

from __future__ import annotations

import decimal
import io
import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.avro.encoder import BinaryEncoder
from pyiceberg.avro.file import AvroOutputFile
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import (
    DEFAULT_READ_VERSION,
    MANIFEST_LIST_FILE_SCHEMAS,
    DataFile,
    DataFileContent,
    FileFormat,
    ManifestContent,
    ManifestEntry,
    ManifestEntryStatus,
    ManifestFile,
    PartitionFieldSummary,
    data_file_with_partition,
    manifest_entry_schema_with_data_file,
    read_manifest_list,
    write_manifest,
    write_manifest_list,
)
from pyiceberg.schema import Schema
from pyiceberg.typedef import Record
from pyiceberg.types import (
    BinaryType,
    BooleanType,
    DateType,
    DecimalType,
    DoubleType,
    FixedType,
    FloatType,
    IntegerType,
    ListType,
    LongType,
    MapType,
    NestedField,
    StringType,
    StructType,
    TimestampType,
    TimestamptzType,
    TimeType,
    UUIDType,
)

from lakegate.connectors.iceberg import avroencode, ids, manifestfiles


def _writer(file_schema: Any, record_schema: Any, name: str) -> Any:
    return AvroOutputFile[Any](
        output_file=None,  # type: ignore[arg-type]
        file_schema=file_schema,
        schema_name=name,
        record_schema=record_schema,
    ).writer


def _pyiceberg(file_schema: Any, record_schema: Any, name: str, records: list[Any]) -> list[bytes]:
    writer = _writer(file_schema, record_schema, name)
    out = []
    for record in records:
        stream = io.BytesIO()
        writer.write(BinaryEncoder(stream), record)
        out.append(stream.getvalue())
    return out


def _compiled(file_schema: Any, record_schema: Any, name: str, records: list[Any]) -> list[bytes]:
    encode = avroencode.compile_writer(_writer(file_schema, record_schema, name))
    out = []
    for record in records:
        buf = bytearray()
        encode(buf, record)
        out.append(bytes(buf))
    return out


def _data_file(i: int, content: DataFileContent) -> DataFile:
    ids = range(1, 1 + i % 9)
    return DataFile.from_args(
        content=content,
        file_path=f"file:///w/t/data/{i:05d}-é-{uuid.UUID(int=i)}.parquet",
        file_format=FileFormat.PARQUET,
        partition=Record(),
        record_count=i * 1000003,
        file_size_in_bytes=2**40 + i,
        column_sizes={c: c * 97 + i for c in ids},
        value_counts={c: 2**33 * c for c in ids},
        null_value_counts={c: 0 for c in ids} if i % 2 else None,
        nan_value_counts={} if i % 3 == 0 else {c: 1 for c in ids if c % 2},
        lower_bounds={c: bytes([c, i % 256]) * c for c in ids},
        upper_bounds={c: b"\xff" * c for c in ids} if i % 4 else None,
        key_metadata=b"k" if i == 7 else None,
        split_offsets=[4, 2**31 + i] if i % 5 else None,
        equality_ids=[1, 2] if content == DataFileContent.EQUALITY_DELETES else None,
        sort_order_id=0 if i % 2 else None,
    )


@pytest.mark.parametrize("content", list(DataFileContent))
def test_manifest_entries_are_pyiceberg_s(content: DataFileContent) -> None:
    entries = [
        ManifestEntry.from_args(
            status=list(ManifestEntryStatus)[i % 3],
            snapshot_id=None if i == 3 else 2**62 + i,
            sequence_number=None if i % 2 else i,
            file_sequence_number=None if i % 3 else -i,
            data_file=_data_file(i, content),
        )
        for i in range(12)
    ]
    schemas = [
        manifest_entry_schema_with_data_file(
            version, data_file_with_partition(StructType(), format_version=version)
        )
        for version in (2, DEFAULT_READ_VERSION)
    ]
    expected = _pyiceberg(*schemas, "manifest_entry", entries)
    assert _compiled(*schemas, "manifest_entry", entries) == expected
    assert len(set(expected)) == len(entries)


def test_manifest_list_records_are_pyiceberg_s() -> None:
    manifests = [
        ManifestFile.from_args(
            manifest_path=f"file:///w/t/metadata/{uuid.UUID(int=i)}-m{i}.avro",
            manifest_length=5000 + i,
            partition_spec_id=0,
            content=ManifestContent.DELETES if i % 2 else ManifestContent.DATA,
            sequence_number=i,
            min_sequence_number=i - 1,
            added_snapshot_id=2**62 - i,
            added_files_count=i,
            existing_files_count=0,
            deleted_files_count=i % 2,
            added_rows_count=10**12 * i,
            existing_rows_count=0,
            deleted_rows_count=3,
            partitions=[PartitionFieldSummary(True, False, b"\x00", b"\x01")] if i % 3 == 0 else [],
            key_metadata=b"key" if i == 4 else None,
        )
        for i in range(8)
    ]
    schemas = (MANIFEST_LIST_FILE_SCHEMAS[2], MANIFEST_LIST_FILE_SCHEMAS[DEFAULT_READ_VERSION])
    assert _compiled(*schemas, "manifest_file", manifests) == _pyiceberg(*schemas, "manifest_file", manifests)


def test_every_primitive_is_pyiceberg_s() -> None:
    """Every primitive writer, optional and required, in lists and maps, and a writer compiled as pyiceberg's
    (decimals), with negative, large and boundary values."""
    primitives = [
        BooleanType(),
        IntegerType(),
        LongType(),
        FloatType(),
        DoubleType(),
        DateType(),
        TimeType(),
        TimestampType(),
        TimestamptzType(),
        StringType(),
        UUIDType(),
        FixedType(3),
        BinaryType(),
        DecimalType(9, 2),
    ]
    fields = []
    for n, kind in enumerate(primitives):
        fields.append(NestedField(100 + n, f"r{n}", kind, required=True))
        fields.append(NestedField(200 + n, f"o{n}", kind, required=False))
    fields.append(NestedField(300, "list", ListType(301, StringType()), required=False))
    fields.append(NestedField(302, "map", MapType(303, StringType(), 304, DoubleType()), required=True))
    fields.append(NestedField(305, "ints", MapType(306, IntegerType(), 307, LongType()), required=True))
    schema = Schema(*fields)

    samples = [
        [True, 0, 0, 0.0, 0.0, 0, 0, 0, 0, "", uuid.UUID(int=0), b"abc", b"", decimal.Decimal("0.00")],
        [
            False,
            -(2**31),
            2**63 - 1,
            float("inf"),
            float("nan"),
            -1,
            86399999999,
            -(2**62),
            2**62,
            "é\U0010ffff\x00",
            uuid.UUID(int=2**128 - 1).bytes,
            b"\xff\x00\x7f",
            b"\x00" * 300,
            decimal.Decimal("-9999999.99"),
        ],
        [
            True,
            63,
            64,
            -1.5,
            1e300,
            8191,
            8192,
            -64,
            -65,
            "x" * 200,
            uuid.uuid4(),
            b"zzz",
            b"y",
            decimal.Decimal("1.05"),
        ],
    ]
    records = []
    for i, values in enumerate(samples):
        row: list[Any] = []
        for value in values:
            row += [value, None if i == 0 else value]
        row += [
            None if i == 1 else ["a", "", "c"][: i + 1],
            {"k": 1.0, "é": -0.0} if i else {},
            {i: -i, 2**20: 2**40},
        ]
        records.append(Record(*row))
    expected = _pyiceberg(schema, schema, "r", records)
    assert _compiled(schema, schema, "r", records) == expected


def _blocks(data: bytes) -> tuple[bytes, list[bytes]]:
    """An uncompressed Avro file written with the sync marker ``07 * 16``: (its header, each block's records)."""
    sync = b"\x07" * 16
    end = data.index(sync) + len(sync)
    header, blocks, at = data[:end], [], end

    def varint() -> int:
        nonlocal at
        shift = value = 0
        while True:
            byte = data[at]
            at += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return (value >> 1) ^ -(value & 1)

    while at < len(data):
        varint()  # the block's record count
        size = varint()
        blocks.append(data[at : at + size])
        at += size
        assert data[at : at + 16] == sync
        at += 16
    return header, blocks


@pytest.mark.parametrize("codec", ["null", "gzip"])
def test_manifest_files_are_pyiceberg_s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, codec: str) -> None:
    """Whole manifest and manifest-list files of a lean commit (manifestfiles) against pyiceberg's writers on the
    same entries: the same header and record bytes uncompressed (the sync marker fixed; the lean writer puts all
    records in one block), and read back the same when deflated."""
    catalog = SqlCatalog("t", uri=f"sqlite:///{tmp_path / 'c.db'}", warehouse=(tmp_path / "w").as_uri())
    catalog.create_namespace("ns")
    table = catalog.create_table(
        "ns.t",
        schema=Schema(NestedField(1, "id", LongType(), required=True), NestedField(2, "s", StringType())),
        properties={"write.avro.compression-codec": codec},
    )
    metadata, io_ = table.metadata, table.io
    monkeypatch.setattr(os, "urandom", lambda n: b"\x07" * n)
    monkeypatch.setattr(ids, "random_bytes", lambda n: b"\x07" * n)
    entries = [
        ManifestEntry.from_args(
            status=ManifestEntryStatus.ADDED,
            snapshot_id=77,
            sequence_number=None,
            file_sequence_number=None,
            data_file=_data_file(i, DataFileContent.DATA),
        )
        for i in range(1, 4)
    ]
    ours_target = manifestfiles.Target(io_, f"{tmp_path}/a-m0.avro")
    with manifestfiles.ManifestWriter(ManifestContent.DATA, metadata, ours_target, 77) as ours:
        for entry in entries:
            ours.add_entry(entry)
    theirs_file = io_.new_output(f"{tmp_path}/b-m0.avro")
    with write_manifest(2, metadata.spec(), metadata.schema(), theirs_file, 77, codec) as theirs:  # type: ignore[arg-type]
        for entry in entries:
            theirs.add_entry(entry)
    ours_manifest, theirs_manifest = ours.to_manifest_file(), theirs.to_manifest_file()
    assert ours_manifest._data[2:] == theirs_manifest._data[2:]  # past the path and the length (blocks differ)
    list_target = manifestfiles.Target(io_, f"{tmp_path}/a-list.avro")
    with manifestfiles.ManifestListWriter(list_target, 77, 76, 5, codec) as ours_list:  # type: ignore[arg-type]
        ours_list.add_manifests([ours_manifest])
    with write_manifest_list(  # type: ignore[call-arg]
        2, io_.new_output(f"{tmp_path}/b-list.avro"), 77, 76, 5, codec
    ) as theirs_list:
        theirs_list.add_manifests([ours_manifest])
    ours_bytes = [(tmp_path / f"a-{n}.avro").read_bytes() for n in ("m0", "list")]
    theirs_bytes = [(tmp_path / f"b-{n}.avro").read_bytes() for n in ("m0", "list")]
    if codec == "null":
        # the same header and the same records; pyiceberg writes a block per entry, the lean writer one per file
        assert _blocks(ours_bytes[0])[0] == _blocks(theirs_bytes[0])[0]
        assert _blocks(ours_bytes[0])[1] == [b"".join(_blocks(theirs_bytes[0])[1])]
        assert len(_blocks(theirs_bytes[0])[1]) == len(entries)
        assert ours_bytes[1] == theirs_bytes[1]
    assert [e.data_file for e in ours_manifest.fetch_manifest_entry(io_)] == [
        e.data_file for e in theirs_manifest.fetch_manifest_entry(io_)
    ]
    read_ours = list(read_manifest_list(io_.new_input(f"{tmp_path}/a-list.avro")))
    read_theirs = list(read_manifest_list(io_.new_input(f"{tmp_path}/b-list.avro")))
    assert len(read_ours) == 1 and read_ours[0].manifest_path.endswith("a-m0.avro")
    assert read_ours[0]._data[2:] == read_theirs[0]._data[2:]  # past the path and (deflated) length

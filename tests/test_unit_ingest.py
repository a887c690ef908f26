"""Fast unit tests of the pure parts: pgoutput decoding, text -> Arrow conversion, merging, settings."""

from __future__ import annotations

import struct
from decimal import Decimal

import pyarrow as pa
import pytest

from lakegate import settings as settings_mod
from lakegate.connectors.changes import Column, Position, TableRef, TableSchema, format_lsn, parse_lsn
from lakegate.connectors.iceberg import merge
from lakegate.connectors.postgres import pgoutput
from lakegate.connectors.postgres.types import (
    ConversionError,
    _days_from_civil,
    numeric_typmod,
    parse_array,
    parse_date,
    parse_timestamp,
)


def _tuple(*values: bytes | None | str) -> bytes:
    out = struct.pack("!h", len(values))
    for v in values:
        if v is None:
            out += b"n"
        elif v == "u":
            out += b"u"
        else:
            out += b"t" + struct.pack("!I", len(v)) + v  # type: ignore[operator]
    return out


def test_decode_row_messages() -> None:
    insert = pgoutput.decode(b"I" + struct.pack("!I", 16384) + b"N" + _tuple(b"1", None, b"h\x00i"))
    assert insert == pgoutput.Insert(16384, [b"1", None, b"h\x00i"])
    update = pgoutput.decode(
        b"U" + struct.pack("!I", 7) + b"K" + _tuple(b"1", None) + b"N" + _tuple(b"2", "u")
    )
    assert update == pgoutput.Update(7, "K", [b"1", None], [b"2", pgoutput.UNCHANGED])
    plain = pgoutput.decode(b"U" + struct.pack("!I", 7) + b"N" + _tuple(b"3"))
    assert plain == pgoutput.Update(7, None, None, [b"3"])
    delete = pgoutput.decode(b"D" + struct.pack("!I", 7) + b"O" + _tuple(b"9", b"x"))
    assert delete == pgoutput.Delete(7, "O", [b"9", b"x"])


def test_decode_control_messages() -> None:
    begin = pgoutput.decode(b"B" + struct.pack("!qqI", 0x1_0000_0010, 1_000_000, 42))
    assert begin == pgoutput.Begin(0x1_0000_0010, 1_000_000 + pgoutput.PG_EPOCH_US, 42)
    commit = pgoutput.decode(b"C\x00" + struct.pack("!qqq", 10, 20, 0))
    assert commit == pgoutput.Commit(10, 20, pgoutput.PG_EPOCH_US)
    relation = pgoutput.decode(
        b"R"
        + struct.pack("!I", 5)
        + b"public\x00t\x00d"
        + struct.pack("!h", 2)
        + b"\x01id\x00"
        + struct.pack("!Ii", 23, -1)
        + b"\x00n\x00"
        + struct.pack("!Ii", 1700, 655366)
    )
    assert relation == pgoutput.Relation(
        5,
        "public",
        "t",
        "d",
        (pgoutput.RelationColumn(True, "id", 23, -1), pgoutput.RelationColumn(False, "n", 1700, 655366)),
    )
    truncate = pgoutput.decode(b"T" + struct.pack("!iB", 2, 3) + struct.pack("!II", 5, 6))
    assert truncate == pgoutput.Truncate((5, 6), True, True)
    keepalive = pgoutput.decode_copy_data(b"k" + struct.pack("!qqB", 99, 5, 1))
    assert keepalive == pgoutput.Keepalive(99, 5, True)


def test_decode_errors_say_what_is_wrong() -> None:
    with pytest.raises(pgoutput.DecodeError, match="unknown pgoutput message type 'S'"):
        pgoutput.decode(b"S\x00\x00")
    with pytest.raises(pgoutput.DecodeError, match="truncated or corrupt pgoutput 'I'"):
        pgoutput.decode(b"I\x00\x00\x00\x05N\x00\x02t\x00\x00\x00\x09ab")


def test_lsn_round_trip_and_positions() -> None:
    assert format_lsn(parse_lsn("16/B374D848")) == "16/B374D848"
    with pytest.raises(ValueError, match="is not an LSN"):
        parse_lsn("nope")
    assert Position(5, 3) < Position(5, 4) < Position(6, 0)
    assert TableRef.parse("public.users") == TableRef("public", "users")


def test_temporal_parsing_beyond_python() -> None:
    assert parse_date("1970-01-02") == 1
    assert parse_date("0001-01-01 BC") == _days_from_civil(0, 1, 1)
    assert parse_timestamp("1970-01-01 00:00:01.5+01") == -3_598_500_000
    assert parse_timestamp("infinity") == 2**63 - 1  # DuckDB's; the ingest stores datetime.max (lake_values)
    assert numeric_typmod(((12 << 16) | 2) + 4) == (12, 2)
    assert numeric_typmod(-1) is None


def test_array_literals() -> None:
    assert parse_array('{"a b",NULL,"NULL","\\"",plain}') == ["a b", None, "NULL", '"', "plain"]
    assert parse_array('{{"x,y",z},{NULL,""}}') == [["x,y", "z"], [None, ""]]
    with pytest.raises(ValueError):
        parse_array("{1,2")


def test_merge_semantics() -> None:
    schema = pa.schema(
        [("id", pa.int32()), ("v", pa.string()), ("_lsn", pa.int64()), ("_commit_ts", pa.int64())]
    )
    state = pa.table(
        {"id": [1, 2, 3], "v": ["a", "b", "c"], "_lsn": [1, 1, 1], "_commit_ts": [0, 0, 0]}, schema=schema
    )
    changes = pa.table(
        {
            "id": [2, 4, 2, 3, None, 5],
            "v": ["b2", "d", "b3", None, None, "e"],
            "_op": ["u", "c", "u", "d", "t", "c"],
            "_lsn": [2, 2, 3, 3, 4, 5],
            "_seq": [1, 2, 1, 2, 1, 1],
            "_commit_ts": [0] * 6,
        }
    )
    before_truncate = changes.slice(0, 4)
    assert sorted(merge.apply(state, before_truncate, ["id"]).to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "v": "a", "_lsn": 1, "_commit_ts": 0},
        {"id": 2, "v": "b3", "_lsn": 3, "_commit_ts": 0},
        {"id": 4, "v": "d", "_lsn": 2, "_commit_ts": 0},
    ]
    assert merge.apply(state, changes, ["id"]).to_pylist() == [
        {"id": 5, "v": "e", "_lsn": 5, "_commit_ts": 0}
    ]
    shuffled = changes.take([5, 0, 3, 2, 1, 4])
    assert merge.apply(state, shuffled, ["id"]).to_pylist() == [
        {"id": 5, "v": "e", "_lsn": 5, "_commit_ts": 0}
    ]


def test_settings_from_file_and_environment(tmp_path) -> None:
    path = tmp_path / "l.toml"
    path.write_text(
        '[lake]\nwarehouse = "/w"\n[[sources]]\nname = "pg"\ndsn = "host=x"\nreplicate = ["public.a"]\n'
        '[ingest]\ncommit_interval = "500ms"\nmax_batch_bytes = "1MiB"\n'
    )
    s = settings_mod.load(
        path,
        environ={
            "LAKEGATE_INGEST__COMMIT_INTERVAL": "2s",
            "LAKEGATE_SOURCES__PG__DSN": "host=y",
            "LAKEGATE_GATEWAY__PORT": "9000",
        },
    )
    assert s.ingest.commit_interval == 2.0 and s.ingest.max_batch_bytes == 2**20
    assert s.sources[0].dsn == "host=y" and s.sources[0].slot == "lakegate_pg" and s.gateway.port == 9000
    with pytest.raises(settings_mod.SettingsError, match="replicate entry 'users' must be schema.table"):
        settings_mod.load(
            None, environ={"LAKEGATE_SOURCES__PG__DSN": "x", "LAKEGATE_SOURCES__PG__REPLICATE": "users"}
        )


def test_conversion_error_names_the_value() -> None:
    from lakegate.connectors.postgres.types import _cast, _numeric

    codec = _numeric(((5 << 16) | 2) + 4, "string")
    with pytest.raises(ConversionError, match="'NaN' cannot be stored as decimal\\(5,2\\)"):
        codec.convert(pa.array(["1.00", "NaN"]))
    assert codec.convert(pa.array(["1.5", None])).to_pylist() == [Decimal("1.50"), None]
    assert _cast(pa.int32(), "int")(pa.array(["7"])).to_pylist() == [7]


def test_copy_text_format_unescaping_and_psql_environment() -> None:
    from lakegate.connectors.postgres.snapshot import _psql_env, parse_text

    data = b"1\ta\\tb\\nc\\\\d\t\\N\n2\t\t\\\\x00ff\n"
    table = parse_text(data, ["id", "s", "b"])
    assert table.to_pylist() == [
        {"id": "1", "s": "a\tb\nc\\d", "b": None},
        {"id": "2", "s": "", "b": "\\x00ff"},
    ]
    info, env = _psql_env("host=/tmp dbname=app user=u password=secret", {"TimeZone": "UTC"})
    assert "secret" not in info and env["PGPASSWORD"] == "secret" and "-c TimeZone=UTC" in env["PGOPTIONS"]


def test_data_file_stream_writes_one_file_and_refuses_partitioned_tables(tmp_path) -> None:
    """Chunks go to one file with a row group per ROW_GROUP_ROWS; unique columns skip the dictionary, repeating
    ones keep it; a partitioned table is refused with what to do."""
    import pyarrow.parquet as pq
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.schema import Schema
    from pyiceberg.transforms import IdentityTransform
    from pyiceberg.types import LongType, NestedField, StringType

    from lakegate.connectors.errors import LakeError
    from lakegate.connectors.iceberg import catalog as lake_catalog
    from lakegate.connectors.iceberg import datafiles

    catalog = lake_catalog.open_catalog("t", f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    catalog.create_namespace("n")
    schema = Schema(NestedField(1, "id", LongType(), False), NestedField(2, "kind", StringType(), False))
    table = catalog.create_table("n.plain", schema)
    stream = datafiles.DataFileStream(table.transaction(), table.io)
    for start in range(0, 300_000, 50_000):
        ids = pa.array(range(start, start + 50_000), pa.int64())
        stream.write(pa.table({"id": ids, "kind": pa.array(["a", "b"] * 25_000)}))
    (data_file,) = stream.close()
    assert data_file.record_count == 300_000
    with table.io.new_input(data_file.file_path).open() as f:
        meta = pq.ParquetFile(f).metadata
    assert meta.num_row_groups == 2  # 150k + 150k: chunks gathered to at least ROW_GROUP_ROWS
    encodings = {
        meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).encodings for i in (0, 1)
    }
    assert "RLE_DICTIONARY" not in encodings["id"] and "RLE_DICTIONARY" in encodings["kind"]

    spec = PartitionSpec(PartitionField(2, 1000, IdentityTransform(), "kind"))
    partitioned = catalog.create_table("n.parted", schema, partition_spec=spec)
    with pytest.raises(LakeError, match="--resnapshot"):
        datafiles.DataFileStream(partitioned.transaction(), partitioned.io)


def test_snapshot_commits_both_tables_and_a_failed_change_log_commit_keeps_the_committed_state(
    tmp_path, monkeypatch
) -> None:
    """The state table commits beside the change log. If the change log's commit fails after the state's went
    through, the state's files stay (it is committed) and the change log has no checkpoint, so that the table
    is copied again; nothing else is left behind."""
    from lakegate.connectors.changes import Column, Position, TableRef, TableSchema
    from lakegate.connectors.iceberg import catalog as lake_catalog
    from lakegate.connectors.iceberg import writer

    catalog = lake_catalog.open_catalog("t", f"sqlite:///{tmp_path}/c.db", str(tmp_path / "wh"))
    schema = TableSchema(TableRef("public", "t"), (Column("id", pa.int64(), "bigint", True),), ("id",))
    lake = writer.LakeTable(catalog, schema)
    lake.create()
    rows = pa.table({"id": pa.array(range(1000), pa.int64())})

    with lake.snapshot(Position(100), 1_700_000_000_000_000) as sink:
        sink.write(rows)
    lake.refresh()
    assert lake.checkpoint() == Position(100) and lake.state_checkpoint() == Position(100)
    assert lake.state is not None and lake.state.scan().to_arrow().num_rows == 1000

    def fail() -> None:
        raise OSError("the catalog went away")

    monkeypatch.setattr(writer.SnapshotSink, "finish_changelog", lambda self: fail())
    with (
        pytest.raises(OSError, match="went away"),
        lake.snapshot(Position(200), 1_700_000_000_000_001) as sink,
    ):
        sink.write(pa.table({"id": pa.array(range(5), pa.int64())}))
    lake.refresh()
    assert lake.checkpoint() == Position(100)  # the change log did not move: the table will be copied again
    assert lake.state_checkpoint() == Position(200)
    assert sorted(lake.state.scan().to_arrow()["id"].to_pylist()) == [0, 1, 2, 3, 4]  # files intact
    for table in (lake.state, lake.changelog):
        for task in table.scan().plan_files():
            assert table.io.new_input(task.file.file_path).exists()
    import pyarrow.parquet as pq

    leftovers = [pq.read_table(p) for p in (tmp_path / "wh" / "public" / "t__changelog").rglob("*.parquet")]
    assert not [t for t in leftovers if "r" in t["_op"].to_pylist() and t.num_rows == 5], "aborted file kept"


def test_attnums_of_a_relation_message_follow_the_catalog_and_its_order() -> None:
    from lakegate.connectors.postgres.introspect import Attribute, resolve_attnums

    live = [
        Attribute(1, "id", 0, False, None),
        Attribute(4, "note", 0, False, None),
        Attribute(5, "n", 0, False, None),
    ]
    assert resolve_attnums(["id", "note", "n"], live) == [1, 4, 5]
    # an older message: n was dropped and added again since, so the name n does not mean attnum 5 yet
    assert resolve_attnums(["id", "n", "note"], live) == [1, None, 4]
    # a name the catalog no longer has sits where exactly one unclaimed column is: renamed since
    assert resolve_attnums(["id", "old", "n"], live) == [1, 4, 5]
    assert resolve_attnums(["id", "a", "b", "n"], live) == [1, None, None, 5]


def test_plan_evolution_renames_by_source_identity_and_sees_replaced_columns() -> None:
    from lakegate.connectors.iceberg.schema import CHANGELOG, lake_schema, plan_evolution

    ref = TableRef("public", "t")
    old = TableSchema(
        ref,
        (
            Column("id", pa.int32(), "int", True, False, 1),
            Column("a", pa.string(), "text", source_id=2),
            Column("b", pa.int32(), "int", source_id=3),
        ),
        ("id",),
    )
    current = lake_schema(old, CHANGELOG)
    attnums = {"id": 1, "a": 2, "b": 3}
    renamed = TableSchema(
        ref,
        (
            Column("id", pa.int32(), "int", True, False, 1),
            Column("label", pa.string(), "text", source_id=2),
            Column("b", pa.int32(), "int", source_id=3),
        ),
        ("id",),
    )
    plan = plan_evolution(current, renamed, CHANGELOG, attnums)
    assert plan.rename == (("a", "label"),) and not plan.add and dict(plan.attnums)["label"] == 2
    readded = TableSchema(
        ref,
        (
            Column("id", pa.int32(), "int", True, False, 1),
            Column("a", pa.string(), "text", source_id=2),
            Column("b", pa.int32(), "int", source_id=7),
        ),
        ("id",),
    )
    plan = plan_evolution(current, readded, CHANGELOG, attnums)
    assert plan.replaced == ("b",) and plan.new_columns == ["b"] and dict(plan.attnums)["b"] == 7

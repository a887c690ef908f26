"""Initial copy of a table under an exported snapshot: ``COPY ... TO STDOUT (FORMAT csv)`` -> Arrow chunks.

CSV (not the text format) because pyarrow's multithreaded CSV reader parses it natively; NULL is an unquoted
empty field and an empty string a quoted one, so the two stay apart.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping

import psycopg
import pyarrow as pa
import pyarrow.csv as pacsv
from psycopg import sql

from connectors.postgres.introspect import SourceTable
from connectors.postgres.types import Codec, ConversionError

CHUNK_BYTES = 32 * 2**20


def begin_snapshot(conn: psycopg.Connection, snapshot_name: str) -> None:
    """Start a read-only repeatable-read transaction seeing exactly the exported snapshot."""
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot_name)))


def copy_query(table: SourceTable, columns: list[str]) -> sql.Composed:
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    ident = sql.Identifier(table.ref.schema, table.ref.name)
    if table.relkind == "p":  # COPY TO does not read partitioned tables directly
        return sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT (FORMAT csv)").format(cols, ident)
    return sql.SQL("COPY {} ({}) TO STDOUT (FORMAT csv)").format(ident, cols)


def parse_csv(data: bytes | bytearray | memoryview, columns: list[str]) -> pa.Table:
    """PostgreSQL CSV -> a table of string columns (NULL stays distinct from '')."""
    return pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=columns, block_size=8 * 2**20),
        parse_options=pacsv.ParseOptions(newlines_in_values=True),
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in columns},
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )


def convert(text: pa.Table, codecs: Mapping[str, Codec], table: str) -> pa.Table:
    arrays = []
    for name in text.column_names:
        try:
            arrays.append(codecs[name].convert(text[name].combine_chunks()))
        except ConversionError as exc:
            raise ConversionError(f"table {table}, column {name!r}: {exc}") from exc
    return pa.Table.from_arrays(arrays, names=text.column_names)


def copy_chunks(conn: psycopg.Connection, table: SourceTable, codecs: Mapping[str, Codec],
                chunk_bytes: int | None = None) -> Iterator[pa.Table]:
    """The table's rows as typed Arrow chunks of about ``chunk_bytes`` (default CHUNK_BYTES) of CSV each."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    columns = [c.name for c in table.columns]
    buf = bytearray()
    with conn.cursor() as cur, cur.copy(copy_query(table, columns)) as copy:
        for data in copy:
            buf += data
            if len(buf) >= chunk_bytes:
                yield convert(parse_csv(buf, columns), codecs, str(table.ref))
                buf = bytearray()
    if buf:
        yield convert(parse_csv(buf, columns), codecs, str(table.ref))

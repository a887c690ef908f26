"""The PostgreSQL change source: consistent snapshots plus the pgoutput stream, as Arrow change batches.

Life of a source (driven by ``ingest.worker``)::

    prepare()                    checks, publication, table schemas
    snapshot(tables) ...         copy tables under a slot's exported snapshot (main slot, or a temporary one)
    start(checkpoints)           START_REPLICATION; changes at or before a table's checkpoint are skipped
    poll() / take() / acknowledge(lsn)   read, hand over complete transactions, confirm what the lake holds

Rows are buffered per table as lists of raw text values and converted to Arrow a column at a time in
:meth:`take`. Nothing is confirmed to the server before the caller says it is durable (:meth:`acknowledge`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import psycopg
import pyarrow as pa

from lakegate.connectors.changes import Position, TableRef, TableSchema, format_lsn
from lakegate.connectors.errors import ConnectionLost, SchemaChangeError, SourceConfigError
from lakegate.connectors.postgres import duckcopy, handover, introspect, lease, pgoutput
from lakegate.connectors.postgres import publication as publications
from lakegate.connectors.postgres import shapes as shapes_mod
from lakegate.connectors.postgres.connection import connect, translated
from lakegate.connectors.postgres.introspect import SourceColumn, SourceTable
from lakegate.connectors.postgres.pgoutput import UNCHANGED
from lakegate.connectors.postgres.replication import ReplicationStream, check_slot
from lakegate.connectors.postgres.rowbuffer import (
    OP_DELETE,
    OP_INSERT,
    OP_TRUNCATE,
    OP_UPDATE,
    SYNTHETIC,
    RowBuffer,
    Segment,
)
from lakegate.connectors.postgres.snapshot import begin_snapshot, copy_chunks
from lakegate.connectors.postgres.tablemap import TableMap
from lakegate.connectors.postgres.types import Codec, TypeCatalog

log = logging.getLogger(__name__)

STATUS_INTERVAL = 10.0
#: messages read between two looks at the clock and at ``stop()`` while the stream keeps arriving: at 5,000
#: changes/s (7,000 messages) 512 meant the writer, free again, waited about 35 ms on average for its next
#: flush, 70 at worst (issue 11.16); a look costs a few microseconds
CHECK_EVERY = 64
_RELID = struct.Struct("!I").unpack_from


@dataclass
class _Table:
    """A replicated table as the stream knows it."""

    ref: TableRef
    key_index: tuple[int, ...]
    buffer: RowBuffer
    checkpoint: Position = Position(-1, -1)
    failed_at: int | None = None  #: commit LSN of the transaction the table stopped at
    #: a column list the lake cannot hold: the table stops at its first change the lake does not have yet
    unusable: Exception | None = None

    @property
    def schema(self) -> TableSchema:
        return self.buffer.schema


@dataclass
class Flush:
    """What :meth:`PostgresSource.take` hands over: row segments (in order per table; ``materialise()`` each),
    the position each table reaches, and the LSN to confirm once all of them are durable (None: nothing new).
    ``open_lsn``: the commit LSN of the transaction whose first rows end the flush, when its end has not arrived
    yet (a huge transaction handed over in parts); None when the flush ends at a transaction boundary."""

    segments: list[Segment]
    ack: int | None
    positions: dict[TableRef, Position]
    open_lsn: int | None = None


class PostgresSource:
    def __init__(
        self,
        dsn: str,
        tables: Sequence[TableRef],
        *,
        slot: str,
        publication: str,
        unbounded_numeric: str = "string",
        name: str = "pg",
    ) -> None:
        self.dsn = dsn
        self.refs = list(tables)
        self.slot = slot
        self.publication = publication
        #: tables dropped and created again under their name since the lake recorded them (copied afresh)
        self.recreated: set[TableRef] = set()
        self.unbounded_numeric = unbounded_numeric
        self.name = name
        self.sql = connect(dsn, application_name="lakegate-ingest")
        self.types: TypeCatalog = introspect.type_catalog(self.sql)
        self.tables: dict[TableRef, _Table] = {}
        self.map: TableMap[_Table] = TableMap(self.sql)
        self.publication_info: publications.Publication | None = None
        #: replicated tables that do not exist in the source (-> why), and those dropped while streaming
        self.missing: dict[TableRef, str] = {}
        #: storage fingerprint of each table as of its snapshot (see introspect.storage_of)
        self.snapshot_storage: dict[TableRef, str] = {}
        self._by_relid: dict[int, _Table | None] = {}
        self.stream: ReplicationStream | None = None
        # transaction state
        self._txn_lsn = 0
        self._txn_ts = 0
        self._seq = 0
        self._in_txn = False
        self._pending_rows = 0
        self._pending_bytes = 0
        self._complete_end = 0  #: end LSN of the last complete transaction buffered
        self._acked = 0
        self._received = 0
        self._last_status = 0.0
        self.on_table_failed: Callable[[TableRef, Exception], None] | None = None

    @property
    def on_table_gone(self) -> Callable[[TableRef, str], None] | None:
        return self.map.on_gone

    @on_table_gone.setter
    def on_table_gone(self, callback: Callable[[TableRef, str], None] | None) -> None:
        self.map.on_gone = callback

    # ---------------------------------------------------------------------------------------------- prepare

    def prepare(self, known: dict[TableRef, int] | None = None) -> dict[TableRef, TableSchema]:
        """Check the server and tables, make the publication match them; returns each table's lake schema.

        ``known``: the oids the lake recorded for the tables; a table renamed in the source is found by it (and
        kept under the name in ``replicate``, which is the lake's). Tables that no longer exist are left out and
        listed in :attr:`missing`."""
        with translated("take the worker's lease on the source"):
            lease.acquire(self.sql, self.slot, self.name)
        with translated("read the source's catalog"):
            introspect.check_server(self.sql)
            found = introspect.check_tables(self.sql, self.refs, known)
            self.missing = found.missing
            self.recreated = found.recreated
            mapped = {}
            for ref, table in found.found.items():
                try:
                    mapped[ref] = introspect.lake_schema(
                        ref, table.columns, table.key, self.types, self.unbounded_numeric
                    )
                except introspect.UnsupportedColumn as exc:  # that table stops, the others go on
                    self.missing[ref] = (
                        f"{exc}. Drop or change the column in PostgreSQL (if the lake already holds {ref}, then "
                        f"run 'lakegate maintain --resnapshot {ref}' with the worker stopped), or leave {ref} out "
                        "of 'replicate'"
                    )
            if not mapped:
                raise SourceConfigError("cannot replicate: " + "; ".join(self.missing.values()))
            self.publication_info = publications.sync(
                self.sql,
                self.publication,
                [found.found[ref] for ref in mapped],
                default_name=self.publication == f"lakegate_{self.name}",
            )
            fitted, refused = publications.fit(
                self.sql, self.publication_info, [found.found[r] for r in mapped]
            )
            for ref in list(mapped):
                oid = found.found[ref].oid
                if oid in refused:
                    self.missing[ref] = refused[oid]
                    del mapped[ref]
                elif fitted[oid] is not found.found[ref]:  # generated columns the stream will not carry
                    found.found[ref] = fitted[oid]
                    mapped[ref] = introspect.lake_schema(
                        ref, fitted[oid].columns, fitted[oid].key, self.types, self.unbounded_numeric
                    )
            if not mapped:
                raise SourceConfigError("cannot replicate: " + "; ".join(self.missing.values()))
            for ref, (schema, codecs) in mapped.items():
                self.tables[ref] = _Table(ref, _key_index(schema), RowBuffer(ref, schema, codecs))  # type: ignore[arg-type]
                self.map.add(ref, found.found[ref], self.tables[ref])
        return {ref: schema for ref, (schema, _) in mapped.items()}

    def shapes(self) -> dict[TableRef, tuple[int, shapes_mod.Shape]]:
        """(oid, shape) of each table followed (:mod:`.shapes`); clears the map's note that partitions changed."""
        tables = {ref: s.oid for ref, s in self.map.sources.items() if ref not in self.map.dropped}
        with translated("read the shapes of the replicated tables"):
            found = shapes_mod.current(
                self.sql, self.publication, tables, {ref: self.map.partitions(ref) for ref in tables}
            )
        self.map.changed = False
        return found

    def shape_changes(self, recorded: dict[int, shapes_mod.Shape]) -> dict[TableRef, str]:
        """The tables whose shape differs from the one ``recorded`` (by oid) for them, and what changed."""
        out = {}
        with translated("compare the shapes of the replicated tables with the lake's record"):
            for ref, (oid, shape) in self.shapes().items():
                was = recorded.get(oid)
                what = shapes_mod.changed(self.sql, was, shape) if was is not None else None
                if what:
                    out[ref] = what
        return out

    @property
    def source_tables(self) -> dict[TableRef, SourceTable]:
        """The replicated tables as the source describes them, by the lake's name (``ref`` is the current one)."""
        return self.map.sources

    @property
    def dropped(self) -> set[TableRef]:
        return self.map.dropped

    def column_facts(self, ref: TableRef) -> tuple[list[introspect.Attribute], str]:
        """The table's live columns (attnums, missing values) and its storage fingerprint, as the catalog has
        them now (thread-safe: psycopg serialises the session's queries)."""
        oid = self.source_tables[ref].oid
        with translated(f"read the catalog entry of {ref}"):
            return introspect.attributes(self.sql, oid), introspect.storage_of(self.sql, oid)

    def slot_exists(self) -> bool:
        with translated(f"look up replication slot {self.slot!r}"):
            return check_slot(self.sql, self.slot) is not None

    # --------------------------------------------------------------------------------------------- snapshot

    def snapshot(
        self, refs: Sequence[TableRef], *, create_slot: bool
    ) -> Iterator[tuple[TableRef, Position, int, Iterator[pa.Table]]]:
        """Copy ``refs`` consistently with the stream.

        With ``create_slot`` the main slot is created and its exported snapshot used (first start); otherwise a
        temporary slot provides a snapshot point after the main slot's position, and the stream skips each
        table's changes up to it. Yields (table, checkpoint, snapshot time in µs, chunks) per table.
        """
        duckcopy.database()  # the binary COPY reader's one-time set-up, before any snapshot is taken
        stream = ReplicationStream(self.dsn, application_name="lakegate-snapshot")
        try:
            name = self.slot if create_slot else f"{self.slot}_snap_{int(time.time())}"
            consistent, snapshot_name = stream.create_slot(name, temporary=not create_slot)
            position = Position(consistent - 1)
            conn = connect(self.dsn, application_name="lakegate-snapshot", autocommit=False)
            try:
                with translated("start the snapshot transaction"):
                    begin_snapshot(conn, snapshot_name)
                    (now,) = conn.execute("SELECT (extract(epoch FROM now()) * 1000000)::int8").fetchone()  # type: ignore[misc]
                for ref in refs:
                    table = self.tables[ref]
                    with translated(f"read the storage of {ref}"):  # as of the snapshot
                        self.snapshot_storage[ref] = introspect.storage_of(conn, self.source_tables[ref].oid)
                    yield (
                        ref,
                        position,
                        now,
                        copy_chunks(
                            conn,
                            self.source_tables[ref],
                            table.buffer.open.codecs,
                            dsn=self.dsn,
                            snapshot_name=snapshot_name,
                        ),
                    )
                    table.checkpoint = position
                conn.rollback()
            finally:
                conn.close()
        finally:
            stream.close()  # a temporary slot goes with its connection

    # ------------------------------------------------------------------------------------------- streaming

    def start(self, checkpoints: dict[TableRef, Position]) -> None:
        """Start streaming from the slot's confirmed position, skipping what each table already holds."""
        for ref, position in checkpoints.items():
            self.tables[ref].checkpoint = position
        self._reset_txn()
        self.stream = ReplicationStream(self.dsn)
        self.stream.start(self.slot, self.publication)
        self._last_status = time.monotonic()

    def _reset_txn(self) -> None:
        for table in self.tables.values():
            table.buffer.take()
        self._by_relid = {}
        self._in_txn = False
        self._pending_rows = self._pending_bytes = 0

    def poll(
        self,
        deadline: float,
        max_rows: int,
        max_bytes: int,
        stop: Callable[[], bool] = lambda: False,
        tick: Callable[[], None] = lambda: None,
    ) -> None:
        """Read the stream until ``deadline`` or ``stop()`` (at a transaction boundary) or until the buffers
        are full; ``tick()`` runs now and then (the caller confirms finished work there).

        The inner loop is the hot path: one call into libpq and one dispatch per message."""
        assert self.stream is not None
        pgconn = self.stream.conn.pgconn
        get = pgconn.get_copy_data
        handle = self._handle
        since_check = 0
        due = False  #: the deadline or ``stop()`` came inside a transaction: stop at its end
        while self._pending_rows < max_rows and self._pending_bytes < max_bytes:
            try:
                nbytes, data = get(1)
            except psycopg.OperationalError as exc:
                raise ConnectionLost(f"replication stream broke: {exc}") from exc
            if nbytes > 0:
                if data[0] == 119:  # 'w' XLogData
                    self._pending_bytes += nbytes
                    handle(data)
                else:
                    self._keepalive(bytes(data))
                if due and not self._in_txn:
                    break  # not CHECK_EVERY messages later: most checks land inside a transaction (issue 11.16)
                since_check += 1
                if since_check < CHECK_EVERY:
                    continue
            elif nbytes < 0:
                self.stream.read(0)  # raises ConnectionLost with the server's message
            since_check = 0
            tick()
            now = time.monotonic()
            if now >= deadline or stop():
                if not self._in_txn:
                    break
                due = True
            if now - self._last_status >= STATUS_INTERVAL:
                self._send_status()
                self.check_session()
            if nbytes == 0:  # nothing to read: wait for data, or for :meth:`wake` (the writer became free)
                self.stream.wait_readable(min(max(0.0, deadline - now), 0.25) if not self._in_txn else 0.25)

    def _keepalive(self, data: bytes) -> None:
        keepalive = pgoutput.decode_copy_data(data)
        assert isinstance(keepalive, pgoutput.Keepalive)
        self._received = max(self._received, keepalive.wal_end)
        if keepalive.reply_requested:
            self._send_status()

    def _handle(self, data: memoryview) -> None:
        """One XLogData message (header included)."""
        kind = data[25]
        if kind == 73 or kind == 68:  # I, D: the tuple (new row; old key or row) is at TUPLE_AT
            self._seq += 1
            table = self._by_relid.get(_RELID(data, 26)[0])
            if table is not None and self._keep(table):
                self._append(table, OP_INSERT if kind == 73 else OP_DELETE, bytes(data))
        elif kind == 85:  # U
            self._seq += 1
            table = self._by_relid.get(_RELID(data, 26)[0])
            if table is not None:
                if data[30] == 78:  # 'N': no old tuple, the key did not change
                    if self._keep(table):
                        self._append(table, OP_UPDATE, bytes(data))
                else:
                    self._update_with_old(table, bytes(data[25:]))
        elif kind == 66:  # B
            begin = pgoutput.decode(bytes(data[25:]))
            self._txn_lsn, self._txn_ts, self._seq, self._in_txn = begin.final_lsn, begin.commit_ts, 0, True  # type: ignore[union-attr]
        elif kind == 67:  # C
            commit = pgoutput.decode(bytes(data[25:]))
            self._in_txn = False
            self._complete_end = commit.end_lsn  # type: ignore[union-attr]
            self._received = max(self._received, commit.end_lsn)  # type: ignore[union-attr]
        elif kind == 82:  # R
            self._relation(pgoutput.decode(bytes(data[25:])))  # type: ignore[arg-type]
        elif kind == 84:  # T
            self._truncate(pgoutput.decode(bytes(data[25:])))  # type: ignore[arg-type]
        # Y (type), O (origin), M (message): nothing to keep

    def _keep(self, table: _Table) -> bool:
        """Whether the current change of ``table`` is new to the lake (and the table is not stopped)."""
        cp = table.checkpoint
        lsn = self._txn_lsn
        if table.failed_at is not None:
            return False
        new = lsn > cp.lsn or (lsn == cp.lsn and self._seq > cp.seq)
        if new and table.unusable is not None:
            self._fail(table, table.unusable)
            return False
        return new

    def _append(self, table: _Table, op: int, message: bytes) -> int:
        """Buffer a row; ``op`` is the byte of its _op letter."""
        self._pending_rows += 1
        return table.buffer.append(op, message, self._txn_lsn, self._seq, self._txn_ts)

    def _update_with_old(self, table: _Table, payload: bytes) -> None:
        """An update carrying the old key ('K': the key changed) or the old row ('O': REPLICA IDENTITY FULL).

        A key change becomes a delete of the old key and an update of the new row; under FULL identity the
        old row supplies unchanged TOAST values directly."""
        old_kind = chr(payload[5])
        new_at = pgoutput.tuple_end(payload, 6) + 1
        update = pgoutput.decode(payload)
        assert isinstance(update, pgoutput.Update) and update.old is not None
        old, new = update.old, update.new
        moved = bool(table.key_index) and any(
            old[i] != new[i] and new[i] is not UNCHANGED for i in table.key_index
        )
        delete_row = -1
        if moved or old_kind == "K":
            if self._keep(table):
                delete_row = self._append(table, OP_DELETE, SYNTHETIC + payload[6 : new_at - 1])
            self._seq += 1
        if not self._keep(table):
            return
        if old_kind == "O" and UNCHANGED in new:
            new = [o if v is UNCHANGED else v for v, o in zip(new, old, strict=True)]
            row = self._append(table, OP_UPDATE, SYNTHETIC + pgoutput.encode_tuple(new))
        else:
            row = self._append(table, OP_UPDATE, SYNTHETIC + payload[new_at:])
        if delete_row >= 0:
            table.buffer.open.moved[row] = delete_row

    def _truncate(self, msg: pgoutput.Truncate) -> None:
        new: list[tuple[_Table, int]] = []  # (table, seq) the lake does not hold yet
        for relid in msg.relids:
            table = self._by_relid.get(relid)
            self._seq += 1
            if table is not None and self._keep(table):
                new.append((table, self._seq))
        kept = {table.ref for table, _ in new}
        relids = [r for r in msg.relids if (t := self._by_relid.get(r)) is not None and t.ref in kept]
        emptied = {t.ref for t in self.map.truncated(relids)}
        last = self._seq
        for table, seq in new:
            if table.ref in emptied:  # some partitions only raised Resnapshot above
                emptied.discard(table.ref)  # one truncate per table, also when it lists every partition
                self._seq = seq
                self._append(
                    table, OP_TRUNCATE, SYNTHETIC + pgoutput.encode_tuple([None] * len(table.schema.columns))
                )
        self._seq = last

    def _relation(self, msg: pgoutput.Relation) -> None:
        with translated("read the catalog entry of a new partition"):
            table = self.map.lookup(
                msg.relid
            )  # by oid: a renamed table is the same table; partitions: their root
        self._by_relid[msg.relid] = table
        if table is None:
            return
        ref = table.ref
        try:
            schema, codecs = self._relation_schema(ref, msg)
        except introspect.UnsupportedColumn as exc:
            advice = (
                f"{exc}. The slot holds changes with that column, so dropping it is not enough: drop or change the "
                f"column in PostgreSQL, stop the worker, run 'lakegate maintain --resnapshot {ref}' and start it "
                "again (the table is copied afresh; the other tables are not affected)"
            )
            table.unusable = SchemaChangeError(str(ref), advice)  # changes the lake holds already are fine
            return
        except SourceConfigError as exc:
            self._fail(table, SchemaChangeError(str(ref), str(exc)))
            return
        table.unusable = None
        if schema == table.schema:
            return
        table.buffer.new_schema(schema, codecs)
        table.key_index = _key_index(schema)

    def _relation_schema(self, ref: TableRef, msg: pgoutput.Relation) -> tuple[TableSchema, dict[str, Codec]]:
        root = self.source_tables[ref].oid  # a partition's columns are its table's, in an order of their own
        with translated(f"read the catalog entry of {ref}"):
            live = introspect.attributes(self.sql, root)
            ndims = {a.name: a.ndims for a in live}
            names = [c.name for c in msg.columns]
            if msg.relid == root:
                attnums = introspect.resolve_attnums(names, live)
            else:
                attnums = [next((a.attnum for a in live if a.name == n), None) for n in names]
            if msg.replica_identity == "f":  # every column is flagged: the key is the primary key, if any
                key = introspect.primary_key(self.sql, msg.relid)
            else:
                key = tuple(c.name for c in msg.columns if c.key)
            lake_key = self.tables[ref].schema.key
            if set(key) == set(lake_key):  # the message lists key columns by position, the lake in key order
                key = lake_key
            columns = [
                SourceColumn(
                    c.name, c.type_oid, c.typmod, ndims.get(c.name, 0), c.name in key, c.name in key, attnum
                )
                for c, attnum in zip(msg.columns, attnums, strict=True)
            ]
            key = tuple(k for k in key if any(c.name == k for c in columns))
            schema, codecs = introspect.lake_schema(ref, columns, key, self.types, self.unbounded_numeric)
        # nullability is not in the Relation message: keep what the catalog said for unchanged columns
        known = {c.name: c for c in self.tables[ref].schema.columns}
        cols = tuple(
            dataclasses.replace(c, nullable=known[c.name].nullable)
            if c.name in known and known[c.name].type == c.type and known[c.name].source_id == c.source_id
            else c
            for c in schema.columns
        )
        return TableSchema(ref, cols, schema.key), codecs  # type: ignore[return-value]

    def _fail(self, table: _Table, exc: Exception) -> None:
        table.failed_at = self._txn_lsn
        log.error("table %s stopped at %s: %s", table.ref, format_lsn(self._txn_lsn), exc)
        if self.on_table_failed is not None:
            self.on_table_failed(table.ref, exc)

    # ------------------------------------------------------------------------------------------- handover

    def take(self, most: int | None = None) -> Flush:
        """Hand over everything buffered. Rows of a transaction still open go too (a partial flush of a huge
        transaction); the LSN to confirm covers only complete transactions.

        ``most``: hand over only about this many tables, those whose oldest buffered change is oldest (see
        :mod:`.handover`; not while a transaction is open). The others keep their changes, and the LSN to
        confirm stays before the oldest of them."""
        chosen = None
        if most is not None and not self._in_txn:
            chosen = handover.oldest_first({t.ref: t.buffer for t in self.tables.values()}, most)
        segments: list[Segment] = []
        positions: dict[TableRef, Position] = {}
        end = self._complete_end
        rows = nbytes = 0
        for table in self.tables.values():
            if chosen is not None and table.ref not in chosen:
                if table.buffer:
                    end = min(end, table.buffer.first_lsn)
                    kept_rows, kept_bytes = table.buffer.size()
                    rows, nbytes = rows + kept_rows, nbytes + kept_bytes
                continue
            for segment in table.buffer.take():
                segments.append(segment)
                positions[table.ref] = segment.last
        self._pending_rows, self._pending_bytes = rows, nbytes
        ack = end if end > self._acked else None
        return Flush(segments, ack, positions, self._txn_lsn if self._in_txn else None)

    @property
    def pending(self) -> tuple[int, int]:
        """Rows and bytes buffered (what ``poll``'s limits count)."""
        return self._pending_rows, self._pending_bytes

    def waiting(self) -> int:
        """How many tables have changes buffered."""
        return sum(1 for table in self.tables.values() if table.buffer)

    def fail_table(self, ref: TableRef, lsn: int) -> None:
        """Stop ``ref`` at the transaction with commit LSN ``lsn``: its later changes are dropped and nothing
        from that transaction on is confirmed, so a restart sees the change again."""
        table = self.tables[ref]
        table.failed_at = lsn if table.failed_at is None else min(table.failed_at, lsn)

    def confirmable(self, ack: int | None) -> int | None:
        """``ack`` capped so that no transaction a stopped table did not take is confirmed."""
        failed = [t.failed_at for t in self.tables.values() if t.failed_at is not None]
        if ack is not None and failed:
            ack = min(ack, min(failed))
        return ack if ack is not None and ack > self._acked else None

    def committed(self, positions: dict[TableRef, Position]) -> None:
        """The lake now holds these positions (so a reconnect skips them)."""
        for ref, position in positions.items():
            self.tables[ref].checkpoint = max(self.tables[ref].checkpoint, position)

    def acknowledge(self, lsn: int) -> None:
        """Tell the server it may forget WAL before ``lsn``: everything up to it is durable in the lake."""
        self._acked = max(self._acked, lsn)
        self._send_status()

    def idle_position(self) -> int | None:
        """When nothing is buffered or open, the server's WAL end: safe to confirm so the slot holds no WAL."""
        if self._in_txn or self._pending_rows or any(t.buffer for t in self.tables.values()):
            return None
        if any(t.failed_at is not None for t in self.tables.values()):
            return None
        return self._received if self._received > self._acked else None

    def _status_if_due(self) -> None:
        if time.monotonic() - self._last_status >= STATUS_INTERVAL:
            self._send_status()

    def _send_status(self, reply: bool = False) -> None:
        if self.stream is not None:
            self.stream.send_status(max(self._received, self._acked), self._acked, reply=reply)
            self._last_status = time.monotonic()

    def check_session(self) -> None:
        """The SQL session holds the worker's lease: if it died, stop (the retry takes the lease again). Also
        looks for renamed and dropped tables."""
        try:
            self.map.watch()
        except psycopg.Error as exc:
            raise ConnectionLost(
                f"the worker's SQL session (which holds its lease on the source) was lost: {exc}"
            ) from exc

    @property
    def acked(self) -> int:
        return self._acked

    def wake(self) -> None:
        """From another thread: a :meth:`poll` waiting for stream data looks at its ``stop()`` now."""
        stream = self.stream
        if stream is not None:
            stream.wake()

    def stop_stream(self) -> None:
        """Close the replication connection and wait (briefly) until its server process has gone, so that the
        slot is free when this returns (a drop or a re-snapshot right after a clean stop would find it busy)."""
        if self.stream is None:
            return
        pid = self.stream.conn.info.backend_pid
        self.stream.close()
        self.stream = None
        deadline = time.monotonic() + 10
        with contextlib.suppress(psycopg.Error):
            while time.monotonic() < deadline:
                if (
                    self.sql.execute(
                        "SELECT 1 FROM pg_catalog.pg_stat_activity WHERE pid = %s", (pid,)
                    ).fetchone()
                    is None
                ):
                    return
                time.sleep(0.05)

    def close(self) -> None:
        self.stop_stream()
        with contextlib.suppress(psycopg.Error):
            self.sql.close()


def _key_index(schema: TableSchema) -> tuple[int, ...]:
    names = schema.names
    return tuple(names.index(k) for k in schema.key)

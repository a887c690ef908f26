"""The replication connection: publication and slot management, START_REPLICATION, CopyData, status updates.

psycopg 3 opens the walsender connection (``replication="database"``) and hands us libpq's COPY BOTH stream:
we read CopyData with ``pgconn.get_copy_data`` and answer with standby status updates through
``pgconn.put_copy_data`` + ``flush``. Reading stops while the caller is busy, so TCP pushes back on the server
instead of the worker buffering without bound.
"""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import struct
import time
from dataclasses import dataclass

import psycopg
from psycopg import sql

from lakegate.connectors.changes import format_lsn, parse_lsn
from lakegate.connectors.errors import ConnectionLost, SlotInUse, SourceConfigError
from lakegate.connectors.postgres import pgoutput
from lakegate.connectors.postgres.connection import connect, translate

log = logging.getLogger(__name__)

PG_EPOCH_US = pgoutput.PG_EPOCH_US
_STATUS = struct.Struct("!cqqqqB")


@dataclass(frozen=True)
class SlotInfo:
    name: str
    plugin: str
    database: str
    active_pid: int | None
    confirmed_flush: int | None


def slot_info(conn: psycopg.Connection, slot: str) -> SlotInfo | None:
    row = conn.execute(
        "SELECT slot_name, plugin, database, active_pid, confirmed_flush_lsn::text "
        "FROM pg_catalog.pg_replication_slots WHERE slot_name = %s",
        (slot,),
    ).fetchone()
    if row is None:
        return None
    return SlotInfo(row[0], row[1] or "", row[2] or "", row[3], parse_lsn(row[4]) if row[4] else None)


def check_slot(conn: psycopg.Connection, slot: str) -> SlotInfo | None:
    """The slot if it exists and is ours to use; raises when it belongs to something else or is busy."""
    info = slot_info(conn, slot)
    if info is None:
        return None
    database = conn.info.dbname
    if info.plugin != "pgoutput" or info.database != database:
        raise SourceConfigError(
            f"replication slot {slot!r} exists but is for plugin {info.plugin!r} on database {info.database!r} "
            f"(lakegate needs pgoutput on {database!r}); choose another 'slot' name in the source settings"
        )
    if info.active_pid is not None:
        raise SlotInUse(
            f"replication slot {slot!r} is in use by server process {info.active_pid}; another lakegate worker "
            f"is probably running. Stop it, or end that process with SELECT pg_terminate_backend({info.active_pid})"
        )
    return info


def drop_slot(conn: psycopg.Connection, slot: str) -> None:
    conn.execute(
        "SELECT pg_drop_replication_slot(%s) WHERE EXISTS "
        "(SELECT 1 FROM pg_replication_slots WHERE slot_name = %s)",
        (slot, slot),
    )


class ReplicationStream:
    """One walsender connection: create slots, export a snapshot, stream changes, report progress."""

    def __init__(self, dsn: str, *, application_name: str = "lakegate-ingest") -> None:
        self.conn = connect(dsn, application_name=application_name, replication=True)
        self._streaming = False
        self.server_wal_end = 0
        #: :meth:`wake` ends a :meth:`wait_readable` early: another thread has something for the reading one
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def create_slot(self, name: str, *, temporary: bool = False) -> tuple[int, str]:
        """Create a pgoutput slot exporting a snapshot; returns (consistent point, snapshot name).

        The snapshot stays usable (``SET TRANSACTION SNAPSHOT``) until this connection runs its next command.
        """
        query = sql.SQL("CREATE_REPLICATION_SLOT {} {}LOGICAL pgoutput EXPORT_SNAPSHOT").format(
            sql.Identifier(name), sql.SQL("TEMPORARY " if temporary else "")
        )
        try:
            row = self.conn.execute(query).fetchone()
        except psycopg.errors.DuplicateObject as exc:
            raise SlotInUse(
                f"replication slot {name!r} was created by someone else meanwhile: {exc}"
            ) from exc
        except psycopg.Error as exc:
            raise translate(exc, what=f"create replication slot {name!r}") from exc
        assert row is not None
        log.info("created replication slot %s at %s", name, row[1])
        return parse_lsn(row[1]), row[2]

    def start(self, slot: str, publication: str, start_lsn: int = 0) -> None:
        """START_REPLICATION from ``start_lsn`` (0: the slot's confirmed position)."""
        query = (
            f"START_REPLICATION SLOT {sql.Identifier(slot).as_string(self.conn)} LOGICAL {format_lsn(start_lsn)} "
            f"(proto_version '1', publication_names {sql.Literal(publication).as_string(self.conn)})"
        )
        pgconn = self.conn.pgconn
        pgconn.send_query(query.encode())
        result = pgconn.get_result()
        if result is None or result.status != psycopg.pq.ExecStatus.COPY_BOTH:
            message = pgconn.error_message.decode(errors="replace").strip() if pgconn.error_message else ""
            if "is active for PID" in message:
                raise SlotInUse(f"replication slot {slot!r}: {message}")
            if "does not exist" in message and "publication" in message:
                raise SourceConfigError(
                    f"{message}; the publication must exist before the slot is created. "
                    "Drop the slot so that lakegate re-creates both"
                )
            raise ConnectionLost(f"START_REPLICATION on slot {slot!r} failed: {message or 'no result'}")
        self._streaming = True
        log.info(
            "streaming from slot %s at %s",
            slot,
            format_lsn(start_lsn) if start_lsn else "its confirmed position",
        )

    def read(self, timeout: float) -> bytes | None:
        """The next CopyData payload, or None when nothing arrived within ``timeout`` seconds."""
        pgconn = self.conn.pgconn
        deadline = time.monotonic() + timeout
        while True:
            try:
                nbytes, data = pgconn.get_copy_data(1)
            except psycopg.OperationalError as exc:
                raise ConnectionLost(f"replication stream broke: {exc}") from exc
            if nbytes > 0:
                return bytes(data)
            if nbytes == -1:
                result = pgconn.get_result()
                message = (
                    pgconn.error_message.decode(errors="replace").strip() if pgconn.error_message else ""
                )
                raise ConnectionLost(f"the server ended the replication stream: {message or result}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.wait_readable(remaining)

    def wait_readable(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for stream data, then pull it into libpq's buffer; returns early when
        another thread calls :meth:`wake`."""
        pgconn = self.conn.pgconn
        try:
            socket_, wake = pgconn.socket, self._wake_r.fileno()
            ready, _, _ = select.select([socket_, wake], [], [], timeout)
            if wake in ready:
                with contextlib.suppress(BlockingIOError):
                    while self._wake_r.recv(64):
                        pass
            if socket_ in ready:
                pgconn.consume_input()
        except (psycopg.OperationalError, OSError, ValueError) as exc:
            raise ConnectionLost(f"replication stream broke: {exc}") from exc

    def wake(self) -> None:
        """From any thread: end the reading thread's :meth:`wait_readable` now (the writer became free: a flush
        waits to be handed over; without this the reader noticed only with the next data or after its wait)."""
        with contextlib.suppress(OSError):  # a wake-up is pending already (buffer full), or the stream closed
            self._wake_w.send(b"w")

    def send_status(self, written: int, flushed: int, *, reply: bool = False) -> None:
        """Standby status update: ``flushed`` is what the server may forget (the slot's confirmed position)."""
        now = int(time.time() * 1_000_000) - PG_EPOCH_US
        message = _STATUS.pack(b"r", written, flushed, flushed, now, 1 if reply else 0)
        pgconn = self.conn.pgconn
        try:
            if pgconn.put_copy_data(message) != 1:
                raise ConnectionLost("could not queue a standby status update")
            while pgconn.flush() == 1:
                select.select([], [pgconn.socket], [], 1.0)
        except psycopg.OperationalError as exc:
            raise ConnectionLost(f"replication stream broke while reporting progress: {exc}") from exc

    def close(self) -> None:
        with contextlib.suppress(psycopg.Error):
            self.conn.close()
        self._wake_r.close()
        self._wake_w.close()

"""One worker per source: a session-level advisory lock in the source database, held while the worker runs.

Two workers on the same configuration would both write the same lake tables (and fight over the slot between
snapshot and stream). The worker takes ``pg_try_advisory_lock`` on its SQL session before it touches the
publication, the slot or the lake, and keeps that session for as long as it runs: the lock goes with the session,
so a killed worker releases it at once and no lease can outlive its holder. Advisory locks need no privilege.
A second worker finds the lock taken and waits (:class:`WorkerBusy` is transient) without touching anything.
"""

from __future__ import annotations

import zlib

import psycopg

from lakegate.connectors.errors import TransientError

#: first key of lakegate's advisory locks ('lkg' + 1); the second is a hash of the slot name
LOCK_CLASS = 0x6C6B6701


class WorkerBusy(TransientError):
    """Another lakegate worker holds the source's lease."""


def _keys(slot: str) -> tuple[int, int]:
    """(class, object) keys; the object key as a signed int4 for the function, unsigned as pg_locks shows it."""
    crc = zlib.crc32(f"lakegate-slot:{slot}".encode())
    return LOCK_CLASS, crc - 2**32 if crc >= 2**31 else crc


def try_acquire(conn: psycopg.Connection, slot: str) -> bool:
    """Take the lease of the worker streaming from ``slot`` on this session; False when someone holds it."""
    (got,) = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", _keys(slot)).fetchone()  # type: ignore[misc]
    return bool(got)


def holder(conn: psycopg.Connection, slot: str) -> str:
    """Who holds the lease of ``slot``, as far as this role may see (for messages)."""
    key1, key2 = _keys(slot)
    row = conn.execute(
        "SELECT l.pid, a.application_name, a.client_addr::text, a.backend_start "
        "FROM pg_catalog.pg_locks l LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s AND l.objsubid = 2",
        (key1, key2 % 2**32),
    ).fetchone()
    if row is None:
        return "a process that has just let go of it"
    pid, app, addr, since = row
    parts = [f"server process {pid}"]
    if app:
        parts.append(f"application {app!r}")
    if addr:
        parts.append(f"client {addr}")
    if since is not None:
        parts.append(f"connected since {since:%Y-%m-%d %H:%M:%S %Z}".strip())
    return ", ".join(parts)


def acquire(conn: psycopg.Connection, slot: str, source: str) -> None:
    """Take the lease or raise :class:`WorkerBusy` naming the holder."""
    if try_acquire(conn, slot):
        return
    raise WorkerBusy(
        f"another lakegate worker is replicating source {source!r} (slot {slot!r}): {holder(conn, slot)}. "
        "This worker waits and touches neither the lake nor the slot until that one stops; if it should not "
        "be running, stop it (or end its session with pg_terminate_backend(pid))"
    )

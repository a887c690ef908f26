"""A pure decoder of PostgreSQL's ``pgoutput`` logical replication protocol (version 1, text values).

Hand-written because no maintained Python library decodes pgoutput: psycopg delivers the raw CopyData
payloads and leaves the message format (documented in "Logical Replication Message Formats") to us.

Control messages decode to NamedTuples; the row messages (the hot path) keep column values as raw ``bytes``
(the type's text output), ``None`` for SQL NULL and :data:`UNCHANGED` for an unchanged TOAST value that the
server did not send. Converting text to typed Arrow columns happens later, a whole column at a time.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

#: Microseconds between the Unix epoch and PostgreSQL's epoch (2000-01-01).
PG_EPOCH_US = 946_684_800_000_000


class DecodeError(ValueError):
    """A replication message this decoder does not understand (protocol mismatch or corruption)."""


class _Unchanged:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED = _Unchanged()
Value = bytes | None | _Unchanged

_U8 = struct.Struct("!B")
_I16 = struct.Struct("!h")
_I32 = struct.Struct("!i")
_U32 = struct.Struct("!I")
_I64 = struct.Struct("!q")
_BEGIN = struct.Struct("!qqI")
_COMMIT = struct.Struct("!Bqqq")
_XLOG = struct.Struct("!qqq")
_KEEPALIVE = struct.Struct("!qqB")


class XLogData(NamedTuple):
    start: int
    wal_end: int
    send_time: int
    payload: bytes


class Keepalive(NamedTuple):
    wal_end: int
    send_time: int
    reply_requested: bool


class Begin(NamedTuple):
    final_lsn: int
    commit_ts: int  #: microseconds since the Unix epoch
    xid: int


class Commit(NamedTuple):
    commit_lsn: int
    end_lsn: int
    commit_ts: int  #: microseconds since the Unix epoch


class RelationColumn(NamedTuple):
    key: bool
    name: str
    type_oid: int
    typmod: int


class Relation(NamedTuple):
    relid: int
    namespace: str
    name: str
    replica_identity: str  #: d default, n nothing, f full, i index
    columns: tuple[RelationColumn, ...]


class Type(NamedTuple):
    oid: int
    namespace: str
    name: str


class Insert(NamedTuple):
    relid: int
    new: list[Value]


class Update(NamedTuple):
    relid: int
    old_kind: str | None  #: 'K' old key, 'O' old full row, None when the key did not change
    old: list[Value] | None
    new: list[Value]


class Delete(NamedTuple):
    relid: int
    old_kind: str
    old: list[Value]


class Truncate(NamedTuple):
    relids: tuple[int, ...]
    cascade: bool
    restart_identity: bool


class Origin(NamedTuple):
    lsn: int
    name: str


class LogicalMessage(NamedTuple):
    transactional: bool
    lsn: int
    prefix: str
    content: bytes


Message = Begin | Commit | Relation | Type | Insert | Update | Delete | Truncate | Origin | LogicalMessage


def decode_copy_data(data: bytes) -> XLogData | Keepalive:
    """Split one CopyData payload of the replication stream: ``w`` (XLogData) or ``k`` (keepalive)."""
    kind = data[0]
    if kind == 119:  # 'w'
        start, wal_end, send_time = _XLOG.unpack_from(data, 1)
        return XLogData(start, wal_end, send_time, data[25:])
    if kind == 107:  # 'k'
        wal_end, send_time, reply = _KEEPALIVE.unpack_from(data, 1)
        return Keepalive(wal_end, send_time, bool(reply))
    raise DecodeError(f"unexpected replication CopyData message type {chr(kind)!r} ({len(data)} bytes)")


def _cstring(buf: bytes, pos: int) -> tuple[str, int]:
    end = buf.index(0, pos)
    return buf[pos:end].decode(), end + 1


def _tuple(buf: bytes, pos: int) -> tuple[list[Value], int]:
    (ncols,) = _I16.unpack_from(buf, pos)
    pos += 2
    values: list[Value] = []
    append = values.append
    unpack = _U32.unpack_from
    for _ in range(ncols):
        kind = buf[pos]
        pos += 1
        if kind == 116 or kind == 98:  # 't' text, 'b' binary
            (length,) = unpack(buf, pos)
            pos += 4
            append(buf[pos : pos + length])
            pos += length
        elif kind == 110:  # 'n'
            append(None)
        elif kind == 117:  # 'u'
            append(UNCHANGED)
        else:
            raise DecodeError(f"unknown tuple column kind {chr(kind)!r} at byte {pos - 1}")
    return values, pos


def _insert(buf: bytes) -> Insert:
    (relid,) = _U32.unpack_from(buf, 1)
    if buf[5] != 78:  # 'N'
        raise DecodeError(f"Insert: expected 'N' tuple, got {chr(buf[5])!r}")
    return Insert(relid, _tuple(buf, 6)[0])


def _update(buf: bytes) -> Update:
    (relid,) = _U32.unpack_from(buf, 1)
    marker = buf[5]
    old_kind = None
    old = None
    pos = 6
    if marker in (75, 79):  # 'K', 'O'
        old_kind = chr(marker)
        old, pos = _tuple(buf, 6)
        marker = buf[pos]
        pos += 1
    if marker != 78:
        raise DecodeError(f"Update: expected 'N' tuple, got {chr(marker)!r}")
    return Update(relid, old_kind, old, _tuple(buf, pos)[0])


def _delete(buf: bytes) -> Delete:
    (relid,) = _U32.unpack_from(buf, 1)
    return Delete(relid, chr(buf[5]), _tuple(buf, 6)[0])


def _begin(buf: bytes) -> Begin:
    final_lsn, ts, xid = _BEGIN.unpack_from(buf, 1)
    return Begin(final_lsn, ts + PG_EPOCH_US, xid)


def _commit(buf: bytes) -> Commit:
    _flags, commit_lsn, end_lsn, ts = _COMMIT.unpack_from(buf, 1)
    return Commit(commit_lsn, end_lsn, ts + PG_EPOCH_US)


def _relation(buf: bytes) -> Relation:
    (relid,) = _U32.unpack_from(buf, 1)
    namespace, pos = _cstring(buf, 5)
    name, pos = _cstring(buf, pos)
    replident = chr(buf[pos])
    (ncols,) = _I16.unpack_from(buf, pos + 1)
    pos += 3
    columns = []
    for _ in range(ncols):
        flags = buf[pos]
        colname, pos = _cstring(buf, pos + 1)
        (oid,) = _U32.unpack_from(buf, pos)
        (typmod,) = _I32.unpack_from(buf, pos + 4)
        pos += 8
        columns.append(RelationColumn(bool(flags & 1), colname, oid, typmod))
    return Relation(relid, namespace or "pg_catalog", name, replident, tuple(columns))


def _type(buf: bytes) -> Type:
    (oid,) = _U32.unpack_from(buf, 1)
    namespace, pos = _cstring(buf, 5)
    name, _ = _cstring(buf, pos)
    return Type(oid, namespace, name)


def _truncate(buf: bytes) -> Truncate:
    (count,) = _I32.unpack_from(buf, 1)
    options = buf[5]
    relids = struct.unpack_from(f"!{count}I", buf, 6)
    return Truncate(tuple(relids), bool(options & 1), bool(options & 2))


def _origin(buf: bytes) -> Origin:
    (lsn,) = _I64.unpack_from(buf, 1)
    return Origin(lsn, _cstring(buf, 9)[0])


def _message(buf: bytes) -> LogicalMessage:
    flags = buf[1]
    (lsn,) = _I64.unpack_from(buf, 2)
    prefix, pos = _cstring(buf, 10)
    (length,) = _I32.unpack_from(buf, pos)
    return LogicalMessage(bool(flags & 1), lsn, prefix, buf[pos + 4 : pos + 4 + length])


_DECODERS = {
    ord("I"): _insert,
    ord("U"): _update,
    ord("D"): _delete,
    ord("B"): _begin,
    ord("C"): _commit,
    ord("R"): _relation,
    ord("Y"): _type,
    ord("T"): _truncate,
    ord("O"): _origin,
    ord("M"): _message,
}


def decode(payload: bytes) -> Message:
    """Decode one pgoutput message (the payload of an XLogData)."""
    try:
        decoder = _DECODERS[payload[0]]
    except KeyError:
        raise DecodeError(
            f"unknown pgoutput message type {chr(payload[0])!r}; lakegate speaks protocol version 1"
        ) from None
    except IndexError:
        raise DecodeError("empty pgoutput message") from None
    try:
        return decoder(payload)
    except (struct.error, IndexError, ValueError) as exc:
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(f"truncated or corrupt pgoutput {chr(payload[0])!r} message: {exc}") from exc

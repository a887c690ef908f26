"""A pure decoder of PostgreSQL's ``pgoutput`` logical replication protocol (version 1, text values).

Hand-written because no maintained Python library decodes pgoutput: psycopg delivers the raw CopyData
payloads and leaves the message format (documented in "Logical Replication Message Formats") to us.

Control messages decode to NamedTuples; row messages decode to lists of raw ``bytes`` (the type's text output),
``None`` for SQL NULL and :data:`UNCHANGED` for an unchanged TOAST value that the server did not send.

The hot path does not decode rows one by one: the change source keeps each row's TupleData bytes and
:func:`decode_tuples` splits thousands of them at once with numpy, a column at a time, into Arrow binary arrays.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

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
        return decoder(payload)  # type: ignore[no-any-return,return-value]
    except (struct.error, IndexError, ValueError) as exc:
        if isinstance(exc, DecodeError):
            raise
        raise DecodeError(f"truncated or corrupt pgoutput {chr(payload[0])!r} message: {exc}") from exc


# ------------------------------------------------------------------------------------------ column-wise decoding


def tuple_end(buf: bytes, pos: int) -> int:
    """The offset just past the TupleData starting at ``pos``."""
    return _tuple(buf, pos)[1]


def encode_tuple(values: Sequence[Value]) -> bytes:
    """TupleData bytes for ``values`` (the inverse of the decoder; used to build synthetic rows)."""
    out = [struct.pack("!h", len(values))]
    for value in values:
        if value is None:
            out.append(b"n")
        elif value is UNCHANGED:
            out.append(b"u")
        else:
            out.append(b"t" + struct.pack("!I", len(value)) + bytes(value))  # type: ignore[arg-type]
    return b"".join(out)


def decode_tuples(
    messages: Sequence[bytes | memoryview], offset: int, ncols: int
) -> tuple[list[pa.LargeBinaryArray], list[np.ndarray]]:
    """Split the TupleData found at ``offset`` in each message into columns, vectorised.

    Returns per column a binary array of the raw text values (null for NULL and for unchanged TOAST values)
    and a boolean mask of the unchanged TOAST values.
    """
    n = len(messages)
    lengths = np.fromiter(map(len, messages), dtype=np.int64, count=n)
    starts = np.zeros(n, dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    arr = np.frombuffer(b"".join(messages) + b"\0" * 8, dtype=np.uint8)
    pos = starts + offset
    counts = (arr[pos].astype(np.int64) << 8) | arr[pos + 1]
    if n and not (counts == ncols).all():
        bad = int(np.argmax(counts != ncols))
        raise DecodeError(f"row {bad} has {counts[bad]} columns where the relation has {ncols}")
    pos = pos + 2
    columns, unchanged = [], []
    for _ in range(ncols):
        kind = arr[pos]
        is_text = (kind == 116) | (kind == 98)
        if not (is_text | (kind == 110) | (kind == 117)).all():
            raise DecodeError("unknown tuple column kind in a row message")
        length = (
            (arr[pos + 1].astype(np.int64) << 24)
            | (arr[pos + 2].astype(np.int64) << 16)
            | (arr[pos + 3].astype(np.int64) << 8)
            | arr[pos + 4]
        )
        length = np.where(is_text, length, 0)
        value_start = pos + 5
        pos = np.where(is_text, value_start + length, pos + 1)
        offsets = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(length, out=offsets[1:])
        total = int(offsets[-1])
        data = arr[np.repeat(value_start - offsets[:-1], length) + np.arange(total, dtype=np.int64)]
        validity = np.packbits(is_text, bitorder="little")
        columns.append(
            pa.LargeBinaryArray.from_buffers(
                pa.large_binary(), n, [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
            )
        )
        unchanged.append(kind == 117)
    return columns, unchanged

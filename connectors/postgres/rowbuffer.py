"""Buffered change rows of one table, kept as raw pgoutput messages until they are turned into Arrow.

The stream's hot loop only appends a message and four numbers per row (:meth:`RowBuffer.append`);
:meth:`Segment.materialise` later splits all tuples at once (:func:`pgoutput.decode_tuples`) and converts each
column with its codec. Materialising can run on another thread than the one reading the stream.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from lakegate.connectors.changes import (
    COMMIT_TS,
    COMMIT_TS_TYPE,
    LSN,
    OP,
    SEQ,
    ChangeBatch,
    Position,
    TableRef,
    TableSchema,
)
from lakegate.connectors.postgres import pgoutput
from lakegate.connectors.postgres.types import Codec, ConversionError, lake_values

#: Where a row's TupleData starts inside a buffered CopyData message: 25 bytes of XLogData header, then the
#: pgoutput message's kind byte, relation id and tuple marker (I/U/D all put their tuple at offset 6).
TUPLE_AT = 25 + 6
SYNTHETIC = b"\0" * TUPLE_AT  #: prefix that turns bare TupleData bytes into a bufferable row

OP_INSERT, OP_UPDATE, OP_DELETE, OP_TRUNCATE = b"c"[0], b"u"[0], b"d"[0], b"t"[0]


@dataclass
class Segment:
    """Rows of one table under one schema, not yet converted."""

    ref: TableRef
    schema: TableSchema
    codecs: dict[str, Codec]
    # Messages as bytes: memoryviews would be tracked by the garbage collector, whose passes over hundreds of
    # thousands of them cost more than the copy.
    rows: list[bytes] = field(default_factory=list)
    ops: bytearray = field(default_factory=bytearray)
    lsns: array = field(default_factory=lambda: array("q"))
    seqs: array = field(default_factory=lambda: array("q"))
    stamps: array = field(default_factory=lambda: array("q"))
    moved: dict[int, int] = field(default_factory=dict)  #: row of a key update -> row of the old key's delete

    def __len__(self) -> int:
        return len(self.rows)

    @property
    def last(self) -> Position:
        return Position(self.lsns[-1], self.seqs[-1])

    def materialise(self) -> ChangeBatch:
        n = len(self.rows)
        names = self.schema.names
        raw, unchanged_masks = pgoutput.decode_tuples(self.rows, TUPLE_AT, len(names))
        arrays = []
        unchanged: dict[str, pa.BooleanArray] = {}
        any_unchanged = None
        for name, column, mask in zip(names, raw, unchanged_masks, strict=True):
            try:
                arrays.append(lake_values(self.codecs[name].convert(column.cast(pa.large_string()))))
            except (ConversionError, pa.ArrowInvalid) as exc:
                raise ConversionError(f"table {self.ref}, column {name!r}: {exc}") from exc
            if mask.any():
                unchanged[name] = pa.array(mask)
                any_unchanged = mask if any_unchanged is None else any_unchanged | mask
        ops = pa.StringArray.from_buffers(
            n, pa.py_buffer(np.arange(n + 1, dtype=np.int32)), pa.py_buffer(self.ops)
        )
        arrays += [
            ops,
            pa.array(np.frombuffer(self.lsns, np.int64)),
            pa.array(np.frombuffer(self.seqs, np.int64)),
            pa.array(np.frombuffer(self.stamps, np.int64)).cast(COMMIT_TS_TYPE),
        ]
        data = pa.Table.from_arrays(arrays, names=[*names, OP, LSN, SEQ, COMMIT_TS])
        toast_from = None
        if any_unchanged is not None:
            toast_from = pa.array(
                [self.moved.get(i, i) if any_unchanged[i] else -1 for i in range(n)], pa.int64()
            )
        return ChangeBatch(self.schema, data, unchanged, toast_from)


class RowBuffer:
    """The rows of one table since the last hand-over: the open segment plus segments closed by schema changes."""

    def __init__(self, ref: TableRef, schema: TableSchema, codecs: dict[str, Codec]) -> None:
        self.ref = ref
        self.closed: list[Segment] = []
        self.open = Segment(ref, schema, codecs)

    @property
    def schema(self) -> TableSchema:
        return self.open.schema

    def append(self, op: int, message: bytes, lsn: int, seq: int, stamp: int) -> int:
        seg = self.open
        row = len(seg.rows)
        seg.rows.append(message)
        seg.ops.append(op)
        seg.lsns.append(lsn)
        seg.seqs.append(seq)
        seg.stamps.append(stamp)
        return row

    def new_schema(self, schema: TableSchema, codecs: dict[str, Codec]) -> None:
        """The table's columns changed: rows so far keep the old schema."""
        if self.open.rows:
            self.closed.append(self.open)
        self.open = Segment(self.ref, schema, codecs)

    def take(self) -> list[Segment]:
        segments = [*self.closed, self.open] if self.open.rows else self.closed
        self.closed = []
        self.open = Segment(self.ref, self.open.schema, self.open.codecs)
        return segments

    def __bool__(self) -> bool:
        return bool(self.open.rows or self.closed)

    def _segments(self) -> list[Segment]:
        return [*self.closed, self.open] if self.open.rows else self.closed

    @property
    def first_lsn(self) -> int:
        """The commit LSN of the oldest buffered change (the buffer must hold one)."""
        return self._segments()[0].lsns[0]

    def lsns(self) -> np.ndarray:
        """The commit LSN of every buffered change, in order."""
        parts = [np.frombuffer(segment.lsns, dtype=np.int64) for segment in self._segments()]
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def size(self) -> tuple[int, int]:
        """Rows and message bytes buffered."""
        segments = self._segments()
        return sum(len(s.rows) for s in segments), sum(sum(map(len, s.rows)) for s in segments)

"""The source-neutral change model shared by connectors and the ingest pipeline.

A change batch is an Arrow table holding the source columns of one table plus four metadata columns:

========== ========= =================================================================================
``_op``    string    ``r`` snapshot row, ``c`` insert, ``u`` update, ``d`` delete, ``t`` truncate
``_lsn``   int64     commit position of the source transaction (a snapshot row: consistent point - 1)
``_seq``   int64     order of the change inside its transaction (a snapshot row: its row number)
``_commit_ts`` timestamp[us, UTC]  commit time of the source transaction
========== ========= =================================================================================

``(_lsn, _seq)`` orders all changes of a table and identifies each one: replaying a change log sorted by it
rebuilds the table. A *position* is such a pair; a table's checkpoint is the position of the last change it
holds.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple

import pyarrow as pa

OP, LSN, SEQ, COMMIT_TS = "_op", "_lsn", "_seq", "_commit_ts"
META_COLUMNS = (OP, LSN, SEQ, COMMIT_TS)
COMMIT_TS_TYPE = pa.timestamp("us", tz="UTC")
#: How a change batch (and so the lake) holds PostgreSQL's infinite timestamps, in µs since 1970: as values every
#: reader can hold (pyarrow's ``as_py()``, pandas and polars raise on DuckDB's ±(2**63 - 1)): Python's
#: ``datetime.max`` for ``infinity`` (psycopg's documented recipe, Npgsql's mapping) and ``datetime.min`` plus 1 µs
#: for ``-infinity`` (``0001-01-01 00:00:00`` itself is Go's and .NET's zero time, a common real value). A source
#: value equal to either is refused by name. The writer marks each column that holds one (table property
#: ``lakegate.infinity.field.<field id>``) and the gateway reads those columns' two values back as infinities.
TS_INFINITY = 253402300799999999
TS_MINUS_INFINITY = -62135596800000000 + 1
INFINITY_PROPERTY = "lakegate.infinity.field."
#: The largest sequence number: a checkpoint (lsn, MAX_SEQ) covers the whole transaction at lsn.
MAX_SEQ = 2**62


class Op(enum.StrEnum):
    SNAPSHOT = "r"
    INSERT = "c"
    UPDATE = "u"
    DELETE = "d"
    TRUNCATE = "t"


class Position(NamedTuple):
    """A point in a table's change history: everything at or before it is in the lake."""

    lsn: int
    seq: int = MAX_SEQ

    def __str__(self) -> str:
        return format_lsn(self.lsn) if self.seq == MAX_SEQ else f"{format_lsn(self.lsn)}#{self.seq}"


ZERO = Position(0, -1)


def format_lsn(lsn: int) -> str:
    """64-bit LSN -> PostgreSQL's ``X/Y`` text form."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """PostgreSQL's ``X/Y`` text form -> 64-bit LSN."""
    try:
        high, low = text.split("/")
        return (int(high, 16) << 32) | int(low, 16)
    except ValueError as exc:
        raise ValueError(f"{text!r} is not an LSN (expected hexadecimal 'X/Y', e.g. '0/16B3748')") from exc


@dataclass(frozen=True, order=True)
class TableRef:
    """A table by schema and name, as in the source database."""

    schema: str
    name: str

    def __str__(self) -> str:
        return f"{self.schema}.{self.name}"

    @classmethod
    def parse(cls, text: str) -> TableRef:
        schema, _, name = text.partition(".")
        if not schema or not name:
            raise ValueError(f"{text!r} is not a table name; write schema.table, e.g. public.users")
        return cls(schema, name)


@dataclass(frozen=True)
class Column:
    """A source column as the lake sees it."""

    name: str
    type: pa.DataType
    source_type: str  #: the source's own spelling, e.g. ``numeric(12,2)``, for messages
    key: bool = False
    nullable: bool = True
    #: the column's stable identity in the source (PostgreSQL's attnum), which survives a rename; None: unknown
    source_id: int | None = None


@dataclass(frozen=True)
class TableSchema:
    """A source table's columns and key. ``key`` is empty for a changelog-only table."""

    table: TableRef
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"{self.table} has no column {name!r}")


@dataclass
class ChangeBatch:
    """Changes of one table in (_lsn, _seq) order.

    ``unchanged`` marks cells the source did not send (PostgreSQL's unchanged TOAST values): column name ->
    boolean mask over the rows. ``toast_key_row`` says, for rows that need such a fill, which row's key
    identifies the previous state (itself, or the delete of the old key when an update moved the key);
    -1 elsewhere. Whoever holds the previous state fills those cells before the batch is stored.
    """

    schema: TableSchema
    data: pa.Table
    unchanged: dict[str, pa.BooleanArray] = field(default_factory=dict)
    toast_key_row: pa.Int64Array | None = None

    @property
    def last(self) -> Position:
        n = self.data.num_rows
        if n == 0:
            return ZERO
        return Position(self.data[LSN][n - 1].as_py(), self.data[SEQ][n - 1].as_py())

    def __len__(self) -> int:
        return self.data.num_rows

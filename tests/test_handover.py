"""Which tables a flush takes when not all fit (connectors/postgres/handover.py, issue 11.16): the oldest
buffered changes first, and a transaction never split between two flushes."""

from __future__ import annotations

import pyarrow as pa

from lakegate.connectors.changes import Column, TableRef, TableSchema
from lakegate.connectors.postgres import handover
from lakegate.connectors.postgres.rowbuffer import OP_INSERT, RowBuffer


def _buffers(*changes: tuple[str, int]) -> dict[TableRef, RowBuffer]:
    """``(table, commit lsn)`` in stream order."""
    buffers: dict[TableRef, RowBuffer] = {}
    for seq, (name, lsn) in enumerate(changes):
        ref = TableRef("public", name)
        if ref not in buffers:
            schema = TableSchema(ref, (Column("id", pa.int64(), "bigint", key=True),), ("id",))
            buffers[ref] = RowBuffer(ref, schema, {})
        buffers[ref].append(OP_INSERT, b"", lsn, seq, 0)
    return buffers


def _names(refs: set[TableRef]) -> set[str]:
    return {ref.name for ref in refs}


def test_all_tables_go_when_they_fit() -> None:
    buffers = _buffers(("a", 10), ("b", 20), ("c", 30))
    assert _names(handover.oldest_first(buffers, 3)) == {"a", "b", "c"}
    assert _names(handover.oldest_first(buffers, 5)) == {"a", "b", "c"}


def test_the_oldest_buffered_changes_go_first() -> None:
    buffers = _buffers(("c", 10), ("a", 20), ("c", 30), ("b", 40), ("a", 50), ("d", 60))
    assert _names(handover.oldest_first(buffers, 1)) == {"c"}
    assert _names(handover.oldest_first(buffers, 2)) == {"c", "a"}
    assert _names(handover.oldest_first(buffers, 3)) == {"c", "a", "b"}


def test_empty_buffers_are_not_counted() -> None:
    buffers = _buffers(("a", 10), ("b", 20))
    buffers[TableRef("public", "b")].take()
    assert _names(handover.oldest_first(buffers, 1)) == {"a"}
    buffers[TableRef("public", "a")].take()
    assert handover.oldest_first(buffers, 1) == set()


def test_tables_sharing_a_transaction_go_together() -> None:
    # transaction 20 touches b and e, transaction 50 touches e and f: b, e and f are one group
    buffers = _buffers(("a", 10), ("b", 20), ("e", 20), ("c", 30), ("d", 40), ("e", 50), ("f", 50), ("g", 60))
    groups = handover.transaction_groups(buffers)
    assert _names(groups[TableRef("public", "b")]) == {"b", "e", "f"}
    assert set(groups) == {TableRef("public", n) for n in "bef"}
    assert _names(handover.oldest_first(buffers, 1)) == {"a"}
    assert _names(handover.oldest_first(buffers, 2)) == {"a", "b", "e", "f"}  # a few more than asked
    # f's own oldest change is late, but its group goes with b's
    assert _names(handover.oldest_first(buffers, 4)) == {"a", "b", "e", "f"}
    assert _names(handover.oldest_first(buffers, 5)) == {"a", "b", "e", "f", "c"}


def test_a_table_holding_several_segments_is_judged_by_its_first() -> None:
    buffers = _buffers(("a", 30), ("b", 20))
    a = buffers[TableRef("public", "a")]
    a.new_schema(a.schema, {})  # a schema change closes the segment; later rows go to a new one
    a.append(OP_INSERT, b"", 40, 9, 0)
    assert a.first_lsn == 30 and a.lsns().tolist() == [30, 40] and a.size() == (2, 0)
    assert _names(handover.oldest_first(buffers, 1)) == {"b"}


def test_the_pace_takes_a_share_only_when_all_tables_do_not_fit() -> None:
    from lakegate.ingest.pacing import Pace

    pace = Pace(interval=1.0, shares=4)
    assert pace.most(20) is None  # nothing measured yet: 10 ms a table assumed, they fit
    assert pace.most(200) == 50  # they do not
    pace.wrote(20, 0.06)  # 3 ms a table measured
    assert pace.most(200) is None
    pace = Pace(interval=1.0, shares=4)
    pace.wrote(200, 2.4)  # 12 ms a table: 200 tables take 2.4 s, more than the interval
    assert pace.most(200) == 50
    assert pace.most(201) == 51  # a round of at most four flushes
    assert pace.most(80) is None  # 0.96 s: they fit
    pace.wrote(10, 0.05)  # cheaper now: the estimate follows, weighted
    assert pace.per_table is not None and 0.005 < pace.per_table < 0.012
    assert Pace(interval=1.0, shares=1).most(1000) is None

"""A lake as the first version of lakegate wrote it, for the upgrade tests (issue 12.6): the worker appended to the
change log only and folded the change-log tail into the state table now and then, copying on write every data file
that held a changed key; its state tables carried no ``lakegate.state-format`` mark. :func:`writing` makes this
process's workers write that way; :func:`fold` is the first version's fold, as it was."""

from __future__ import annotations

from typing import Any

import pyarrow.compute as pc
from pyiceberg.expressions import AlwaysTrue
from pyiceberg.io.pyarrow import ArrowScan
from pyiceberg.table import Transaction

from lakegate.connectors.changes import OP
from lakegate.connectors.iceberg import merge, statesync
from lakegate.connectors.iceberg.commits import stamp, write_files
from lakegate.connectors.iceberg.evolution import schema_of
from lakegate.connectors.iceberg.writer import LakeTable


def writing(monkeypatch: Any) -> None:
    """Workers of this process write as the first version did: change log only, no state commits at flushes or
    start, state tables created without the mark."""
    create = LakeTable.create

    def create_unmarked(self: LakeTable) -> None:
        create(self)
        if self.state is not None and statesync.FORMAT_PROPERTY in self.state.properties:
            with self.state.transaction() as txn:
                txn.remove_properties(statesync.FORMAT_PROPERTY)

    monkeypatch.setattr(LakeTable, "_follow", lambda *args: None)
    monkeypatch.setattr(LakeTable, "catch_up", lambda *args: 0)
    monkeypatch.setattr(LakeTable, "create", create_unmarked)


def fold(table: LakeTable) -> int:
    """Merge the change-log tail into the state table by copy-on-write; the number of changes folded."""
    assert table.state is not None and table.changelog is not None
    table.refresh()
    target, folded = table.checkpoint(), table.state_checkpoint()
    if target is None or target <= folded:
        return 0
    tail, truncated = merge.after_last_truncate(table.tail(folded))
    key = schema_of(table.changelog, table.schema.table).key
    latest = merge.latest_per_key(tail, key)
    live = merge.conform(latest.filter(pc.not_equal(latest[OP], "d")), table.state.schema().as_arrow())
    state = table.state

    def rewrite(txn: Transaction) -> None:
        with txn.update_snapshot(snapshot_properties=stamp(target)).overwrite() as producer:
            scan = ArrowScan(state.metadata, state.io, state.schema(), AlwaysTrue())
            for task in list(state.scan().plan_files()):
                if truncated:
                    producer.delete_data_file(task.file)
                    continue
                rows = scan.to_table([task])
                kept = merge.anti_join(rows, latest, key)
                if kept.num_rows != rows.num_rows:
                    producer.delete_data_file(task.file)
                    if kept.num_rows:
                        write_files(txn, state, merge.conform(kept, state.schema().as_arrow()), producer)
            if live.num_rows:
                write_files(txn, state, live, producer)

    with state.transaction() as txn:
        rewrite(txn)
    return tail.num_rows

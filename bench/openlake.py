"""Open lake benchmarks (issue 12), at the lake-writing layer: no PostgreSQL, the changes are generated.

(a) CPU per 1,000 changes for a steady trickle of random-key updates (batches of 500, one per second of the
    worker's default flush) into state tables of --rows-small and --rows rows: the writer as it is (change-log
    append + row-delta commit on the state table + compaction every 16) beside the first version's (change-log
    append, fold every --fold-every batches; tests/first_version.py). Target: the large table's figure within
    1.5x of the small one's.
(c) Key-index bytes per row and rebuild time from the lake at --rows rows, for a bigint key and a composite key.

    python -m bench.openlake [--rows 10000000] [--rows-small 1000000] [--batches 60]

CPU is this process's (user + system) time; the machine may be shared: say so when quoting the figures.
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.common import workdir
from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.state import StateTable
from lakegate.connectors.iceberg.writer import LakeTable
from tests import first_version

BATCH = 500
CHUNK = 1_000_000


def _schema(composite: bool) -> TableSchema:
    if composite:
        columns = (
            Column("a", pa.int32(), "int", key=True),
            Column("b", pa.string(), "text", key=True),
            Column("v", pa.int64(), "bigint"),
        )
    else:
        columns = (Column("id", pa.int64(), "bigint", key=True), Column("v", pa.int64(), "bigint"))
    return TableSchema(
        TableRef("bench", "composite" if composite else "t"), columns, tuple(c.name for c in columns if c.key)
    )


def _rows(start: int, stop: int, composite: bool) -> pa.Table:
    ids = np.arange(start, stop, dtype=np.int64)
    if composite:
        text = pa.array(ids.astype(str)).cast(pa.string())
        return pa.table({"a": pa.array((ids % 1000).astype(np.int32)), "b": text, "v": ids})
    return pa.table({"id": ids, "v": ids})


def _lake(root: Path, rows: int, composite: bool = False, kind: type[LakeTable] = LakeTable) -> LakeTable:
    """A lake table whose initial snapshot holds ``rows`` rows."""
    catalog = open_catalog("bench", f"sqlite:///{root / 'catalog.db'}", str(root / "warehouse"))
    table = kind(catalog, _schema(composite))
    table.create()
    with table.snapshot(Position(1, 0), int(time.time() * 1e6)) as sink:
        for start in range(0, rows, CHUNK):
            sink.write(_rows(start, min(rows, start + CHUNK), composite))
    table.refresh()
    return table


def _updates(rng: np.random.Generator, rows: int, lsn: int) -> pa.Table:
    ids = rng.choice(rows, size=BATCH, replace=False).astype(np.int64)
    now = datetime.datetime.now(datetime.UTC)
    return pa.table(
        {
            "id": ids,
            "v": -ids,
            OP: pa.array(["u"] * BATCH),
            LSN: pa.array(np.full(BATCH, lsn, np.int64)),
            SEQ: pa.array(np.arange(1, BATCH + 1, dtype=np.int64)),
            COMMIT_TS: pa.array([now] * BATCH, pa.timestamp("us", tz="UTC")),
        }
    )


class _FirstVersion(LakeTable):
    """The first version's writer: the change log only at each flush; the state table folded now and then."""

    def _follow(self, data: pa.Table, before: Position, position: Position) -> None:
        pass


def trickle(root: Path, rows: int, batches: int, fold_every: int, positional: bool) -> float:
    """CPU seconds per 1,000 changes."""
    table = _lake(root, rows, kind=LakeTable if positional else _FirstVersion)
    if positional:
        table.catch_up()  # at start, as the worker does: builds the key index (measured by (c))
    rng = np.random.default_rng(1)
    started = time.process_time()
    for n in range(batches):
        position = Position(10 + n, BATCH)
        table.append(_updates(rng, rows, position.lsn), position)  # with positional, the state commit too
        if not positional and n % fold_every == fold_every - 1:
            first_version.fold(table)
    return (time.process_time() - started) / (batches * BATCH / 1000)


def index_figures(root: Path, rows: int, composite: bool) -> tuple[float, float]:
    """(bytes per row, rebuild seconds)."""
    table = _lake(root, rows, composite)
    assert table.state is not None
    state = StateTable(table.state, table.schema.key)
    started = time.perf_counter()
    state.rebuild()
    seconds = time.perf_counter() - started
    return state.index.nbytes / max(len(state.index), 1), seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--rows-small", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=60, help="batches of 500 changes per run")
    parser.add_argument(
        "--fold-every", type=int, default=10, help="batches between folds (10 s at 1 batch/s)"
    )
    parser.add_argument("--skip", default="", help="comma-separated parts to skip: a, c")
    args = parser.parse_args()
    skip = set(args.skip.split(","))
    root = workdir("lakegate-bench-openlake-")
    print(f"# open lake benchmarks, workdir {root}\n")
    if "a" not in skip:
        print("(a) CPU ms per 1,000 random-key updates (batches of 500)")
        print(f"{'path':<28}{args.rows_small:>14,} rows{args.rows:>14,} rows{'ratio':>9}")
        for label, positional in (("position deletes (new)", True), ("fold (first version)", False)):
            small = trickle(
                root / f"a-{label[:4]}-s", args.rows_small, args.batches, args.fold_every, positional
            )
            large = trickle(root / f"a-{label[:4]}-l", args.rows, args.batches, args.fold_every, positional)
            print(f"{label:<28}{small * 1000:>19.2f}{large * 1000:>19.2f}{large / small:>9.2f}")
        print()
    if "c" not in skip:
        print(f"(c) key index at {args.rows:,} rows")
        print(f"{'key':<28}{'bytes/row':>12}{'rebuild s':>12}")
        for composite in (False, True):
            per_row, seconds = index_figures(root / f"c-{composite}", args.rows, composite)
            label = "(int, text)" if composite else "bigint"
            print(f"{label:<28}{per_row:>12.1f}{seconds:>12.2f}")


if __name__ == "__main__":
    main()

"""What one flush costs the lake writer when it touches many tables (issue 11.16), at the lake-writing layer: no
PostgreSQL, each flush appends a small batch (5 inserted rows) to every table's change log and state table, as the
worker's committer does.

    python -m bench.commits [--tables 50] [--flushes 20] [--history 0] [--profile out.prof] [--compare]

Prints, per flush, the wall time and the process's CPU time, and per table commit (change log + state table
count as one table commit) the milliseconds of each, and the CPU of the state-table compactions the flushes left
due (per compaction, and per table and flush; included in the flush figures). ``--history N`` first gives every
table N snapshots (the cost of a commit grows with the snapshots a table keeps). ``--compare`` alternates blocks of five
flushes committed the lean way (connectors.iceberg.leancommit, the default) and through pyiceberg's snapshot
producers, in the same run on the same tables, and prints both. The machine may be shared: quote the load average
with the figures.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import cProfile
import datetime
import os
import shutil
import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.common import workdir
from lakegate.connectors.changes import COMMIT_TS, LSN, OP, SEQ, Column, Position, TableRef, TableSchema
from lakegate.connectors.iceberg import flushcatalog, leancommit
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.ingest.worker import steady_gc

ROWS = 5


def _schema(i: int) -> TableSchema:
    columns = (
        Column("id", pa.int64(), "bigint", key=True),
        Column("name", pa.string(), "text"),
        Column("amount", pa.float64(), "double precision"),
        Column("at", pa.timestamp("us", tz="UTC"), "timestamptz"),
        Column("flag", pa.bool_(), "boolean"),
    )
    return TableSchema(TableRef("public", f"many_{i:03d}"), columns, ("id",))


def _rows(start: int, lsn: int) -> pa.Table:
    ids = np.arange(start, start + ROWS, dtype=np.int64)
    now = datetime.datetime.now(datetime.UTC)
    return pa.table(
        {
            "id": ids,
            "name": pa.array([f"n{i}" for i in ids]),
            "amount": ids.astype(np.float64) / 3,
            "at": pa.array([now] * ROWS, pa.timestamp("us", tz="UTC")),
            "flag": pa.array([True] * ROWS),
            OP: pa.array(["c"] * ROWS),
            LSN: pa.array(np.full(ROWS, lsn, np.int64)),
            SEQ: pa.array(np.arange(1, ROWS + 1, dtype=np.int64)),
            COMMIT_TS: pa.array([now] * ROWS, pa.timestamp("us", tz="UTC")),
        }
    )


def tables(root: Path, n: int) -> list[LakeTable]:
    catalog = open_catalog("bench", f"sqlite:///{root / 'catalog.db'}", str(root / "warehouse"))
    made = []
    for i in range(n):
        table = LakeTable(catalog, _schema(i))
        table.create()
        with table.snapshot(Position(1, 0), int(time.time() * 1e6)):
            pass
        table.refresh()
        table.catch_up()
        made.append(table)
    return made


POOLS: dict[int, concurrent.futures.ThreadPoolExecutor] = {}


def flush(lake: list[LakeTable], lsn: int, threads: int = 4, together: bool = True) -> float:
    """As the worker's committer writes a flush: tables side by side, ``threads`` at a time; ``together``: in one
    catalog transaction, then the compactions it left due in another (the worker's ``_compact_due``). Returns when
    the flush itself was visible (``time.perf_counter()``, before the compactions)."""
    if together:
        with flushcatalog.flush(lake[0].catalog):
            _appends(lake, lsn, threads)
        visible = time.perf_counter()
        due = [t for t in lake if t.compaction_due]
        if due:
            cpu = time.process_time()
            with flushcatalog.flush(lake[0].catalog):
                for t in due:
                    t.compact_due()
            COMPACTIONS.append((len(due), time.process_time() - cpu))
        return visible
    _appends(lake, lsn, threads)
    cpu, due = time.process_time(), sum(t.compaction_due for t in lake)
    for t in lake:
        t.compact_due()
    if due:
        COMPACTIONS.append((due, time.process_time() - cpu))
    return time.perf_counter()


#: (compactions, their CPU seconds) of each flush that left some due (appended by :func:`flush`)
COMPACTIONS: list[tuple[int, float]] = []


def _appends(lake: list[LakeTable], lsn: int, threads: int) -> None:
    if threads == 1:
        for t in lake:
            t.append(_rows(lsn * ROWS, lsn), Position(lsn, ROWS), compact=False)
        return
    if threads not in POOLS:
        POOLS[threads] = concurrent.futures.ThreadPoolExecutor(threads)
    pool = POOLS[threads]
    futures = [pool.submit(t.append, _rows(lsn * ROWS, lsn), Position(lsn, ROWS), compact=False) for t in lake]
    for future in futures:
        future.result()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tables", type=int, default=50)
    parser.add_argument("--flushes", type=int, default=20)
    parser.add_argument(
        "--history", type=int, default=0, help="flushes before measuring (snapshots per table)"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=4,
        help="tables committed at once (the worker: 4); 1: one after another (for --profile)",
    )
    parser.add_argument("--per-table", action="store_true", help="one catalog transaction per table commit")
    parser.add_argument("--profile", help="write a cProfile of the measured flushes here")
    parser.add_argument("--compare", action="store_true", help="alternate lean and pyiceberg commits")
    args = parser.parse_args()
    root = workdir("lakegate-bench-commits-")
    try:
        run(args, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(args: argparse.Namespace, root: Path) -> None:
    lake = tables(root, args.tables)
    steady_gc()  # as the worker does when it starts streaming
    lsn = 10
    for _ in range(args.history):
        flush(lake, lsn, together=not args.per_table)
        lsn += 1
    profiler = cProfile.Profile() if args.profile else None
    COMPACTIONS.clear()
    walls: dict[bool, list[float]] = {True: [], False: []}
    visible: dict[bool, list[float]] = {True: [], False: []}  #: until the flush is visible (no compactions)
    cpus: dict[bool, list[float]] = {True: [], False: []}
    system: dict[bool, list[float]] = {True: [], False: []}  #: of the CPU, the kernel's (creating files)
    for number in range(args.flushes):
        # blocks of five: a lean commit after a pyiceberg one reads its parent's manifest list back once
        lean = leancommit.ENABLED = not (args.compare and number // 5 % 2)
        if profiler:
            profiler.enable()
        wall, cpu, sys_before = time.perf_counter(), time.process_time(), os.times().system
        seen = flush(lake, lsn, args.threads, not args.per_table)
        walls[lean].append(time.perf_counter() - wall)
        visible[lean].append(seen - wall)
        cpus[lean].append(time.process_time() - cpu)
        system[lean].append(os.times().system - sys_before)
        if profiler:
            profiler.disable()
        lsn += 1
    leancommit.ENABLED = True
    if profiler:
        profiler.dump_stats(args.profile)
    snapshots = len(lake[0].changelog.metadata.snapshots) if lake[0].changelog else 0  # type: ignore[union-attr]
    print(f"{args.tables} tables, {snapshots} snapshots each at the end, load {os.getloadavg()[0]:.2f}:")
    for lean in (True, False):
        if not walls[lean]:
            continue
        wall, cpu = statistics.median(walls[lean]), statistics.mean(cpus[lean])
        kernel = statistics.mean(system[lean])
        print(
            f"  {'lean commits' if lean else 'pyiceberg commits'}, {len(walls[lean])} flushes: "
            f"flush median {wall * 1000:.0f} ms wall (longest {max(walls[lean]) * 1000:.0f}; visible after "
            f"{statistics.median(visible[lean]) * 1000:.0f}, the compactions it left due then run), "
            f"mean {cpu * 1000:.0f} ms CPU; per table (two commits) {wall * 1000 / args.tables:.1f} ms wall, "
            f"{cpu * 1000 / args.tables:.1f} ms CPU, of which {kernel * 1000 / args.tables:.1f} ms in the kernel"
        )
    count, seconds = sum(c for c, _ in COMPACTIONS), sum(s for _, s in COMPACTIONS)
    if count:
        print(
            f"  compactions: {count} in {args.flushes} flushes, {seconds * 1000 / count:.1f} ms CPU each, "
            f"{seconds * 1000 / args.flushes:.0f} ms CPU per flush "
            f"({seconds * 1000 / args.flushes / args.tables:.2f} per table and flush)"
        )


if __name__ == "__main__":
    main()

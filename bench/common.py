"""Shared pieces of the benchmarks: an embedded PostgreSQL, timing, a table printer, process memory."""

from __future__ import annotations

import os
import platform
import statistics
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import psutil

from lakegate import embedded


def start_postgres(root: Path) -> embedded.EmbeddedPostgres:
    # durability off: we measure lakegate, not the disk of a shared CI machine. synchronous_commit stays at its
    # default (on; without fsync it costs a write, not a flush to disk): off, a commit reaches the WAL sender only
    # when the WAL writer writes it out, every wal_writer_delay (200 ms), and each change would wait for that
    # before lakegate could see it (the freshness figures of bench.ingest counted it)
    return embedded.start(
        root / "pg",
        {
            "fsync": "off",
            "full_page_writes": "off",
            "max_wal_size": "4GB",
            "checkpoint_timeout": "30min",
        },
    )


def workdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix))


@contextmanager
def stopwatch():  # type: ignore[no-untyped-def]
    result = {"seconds": 0.0}
    start = time.perf_counter()
    try:
        yield result
    finally:
        result["seconds"] = time.perf_counter() - start


class PeakRss(threading.Thread):
    """Polls a process (and its children) for the largest resident set size."""

    def __init__(self, pid: int, every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.proc = psutil.Process(pid)
        self.every = every
        self.peak = 0
        self._done = threading.Event()
        self.start()

    def run(self) -> None:
        while not self._done.wait(self.every):
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in procs))
            except psutil.Error:
                return

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def print_table(title: str, rows: list[tuple[str, str, str, str]]) -> None:
    headers = ("measure", "lakegate", "baseline", "ratio")
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(4)]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def machine() -> str:
    return f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"


__all__ = ["statistics"]

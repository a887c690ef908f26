"""Progress of long copies on a terminal (rows, rows/s), a log line otherwise."""

from __future__ import annotations

import logging
import sys
import time

log = logging.getLogger("lakegate.ingest")


class Progress:
    def __init__(self, label: str, *, every: float = 0.5, stream=None) -> None:
        self.label = label
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.every = every if self.tty else 10.0
        self.started = time.monotonic()
        self.last = self.started  # small tables finish before the first progress line
        self.rows = 0

    def rate(self) -> float:
        return self.rows / max(time.monotonic() - self.started, 1e-9)

    def update(self, rows: int) -> None:
        self.rows += rows
        now = time.monotonic()
        if now - self.last < self.every:
            return
        self.last = now
        text = f"{self.label}: {self.rows:,} rows, {self.rate():,.0f} rows/s"
        if self.tty:
            self.stream.write("\r" + text + "\033[K")
            self.stream.flush()
        else:
            log.info(text)

    def done(self) -> None:
        if self.tty and self.last > self.started:
            self.stream.write("\r\033[K")
            self.stream.flush()
        elapsed = time.monotonic() - self.started
        log.info(
            "%s: done, %s rows in %.2fs (%s rows/s)",
            self.label,
            f"{self.rows:,}",
            elapsed,
            f"{self.rate():,.0f}",
        )

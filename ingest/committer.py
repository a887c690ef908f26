"""Writing flushes to the lake on a thread of its own, so that the stream is read while the lake is written.

At most one flush is being written and one waits: when the lake is slower than the source, handing over
blocks, the reader stops reading and TCP pushes back on PostgreSQL instead of memory growing without bound.
Completed flushes come back in order; only the reading thread talks to PostgreSQL, so it confirms them.
:meth:`Committer.busy` lets the reader go on reading while a flush is written and hand over everything that
arrived meanwhile as the next flush, as soon as the writer is free (see ``Worker._stream``).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from lakegate.connectors.postgres.cdc import Flush


class Committer(threading.Thread):
    def __init__(
        self,
        write: Callable[[Flush], None],
        after: Callable[[], None] | None = None,
        free: Callable[[], None] = lambda: None,
    ) -> None:
        """``write`` writes a flush; ``after`` (optional) runs once it is handed back as completed, before the
        next flush is written: work that must not delay the flush's confirmation (compactions). ``free`` runs
        on the writer thread each time it has finished a flush: it wakes the reading thread, which may have a
        flush waiting for the writer (``Worker._stream``)."""
        super().__init__(name="lakegate-committer", daemon=True)
        self._write = write
        self._after = after
        self._free = free
        self._inbox: queue.Queue[Flush | None] = queue.Queue(maxsize=1)
        self._done: queue.Queue[Flush] = queue.Queue()
        self._error: BaseException | None = None
        self.in_flight = 0
        self._submitted = 0
        self._written = 0  #: flushes the writer has finished (written or failed)

    def run(self) -> None:
        while (flush := self._inbox.get()) is not None:
            try:
                self._write(flush)
                self._done.put(flush)  # confirmed by the reading thread while ``after`` runs
                if self._after is not None:
                    self._after()
            except BaseException as exc:  # handed to the reading thread, which raises it
                self._error = exc
                return
            finally:
                self._written += 1  # only now: the reader keeps gathering the next flush meanwhile
                self._free()

    def submit(self, flush: Flush) -> None:
        """Queue a flush; blocks while the previous one is still waiting (backpressure)."""
        while True:
            self._raise_if_failed()
            try:
                self._inbox.put(flush, timeout=0.2)
                self.in_flight += 1
                self._submitted += 1
                return
            except queue.Full:
                continue

    def busy(self) -> bool:
        """A flush is being written or waits to be (the reading thread's view; the writer only lowers it)."""
        return self._written < self._submitted and self._error is None

    def completed(self) -> list[Flush]:
        """Flushes written since the last call, oldest first; raises what the writer failed with."""
        done: list[Flush] = []
        while True:
            try:
                done.append(self._done.get_nowait())
            except queue.Empty:
                break
        self.in_flight -= len(done)
        if not done:
            self._raise_if_failed()
        return done

    def drain(self) -> list[Flush]:
        """Wait until every queued flush is written; returns them."""
        done: list[Flush] = []
        while self.in_flight > len(done):
            self._raise_if_failed()
            try:
                done.append(self._done.get(timeout=0.2))
            except queue.Empty:
                continue
        self.in_flight -= len(done)
        return done

    def close(self) -> None:
        if self.is_alive():
            try:
                self._inbox.put(None, timeout=60)
            except queue.Full:
                return
            self.join(60)

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            raise self._error
        if not self.is_alive() and self.ident is not None:
            raise RuntimeError("the lake writer thread stopped")

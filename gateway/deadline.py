"""A request's time limit over its pure-Python phases: parsing, guarding and routing with sqlglot stop at the
deadline, like the engine query does.

Those phases are CPU-bound Python (a 100,000-element IN list costs sqlglot seconds to tokenize, parse, copy and
write) and run on a worker thread, which nothing outside the thread can stop politely. :func:`interruptible`
arms the watchdog to raise :class:`Interrupted` *in that thread* when the deadline passes
(``PyThreadState_SetAsyncExc``: the exception is raised at the thread's next bytecode boundary), and the caller
turns it into a 408. The exception may only land in code that holds no lock and does no I/O, so every such call
made from an armed region (the catalog's PostgreSQL listing, time-travel evaluation in DuckDB) runs inside
:func:`shielded`, which disarms for its duration and checks the deadline afterwards.

Written by hand: neither sqlglot nor the standard library offers a way to bound the time of a parse, and a
trace or profile hook (``sys.settrace``) tripled the cost of planning every statement when measured here.

The exception is only injected while the thread runs sqlglot's or the gateway's own code, never a finalizer or
a weakref callback that a garbage collection happens to run in that thread (Python would swallow it there and
report it as "unraisable"); otherwise the watchdog tries again a few milliseconds later. Statements too small to
take long are not preempted at all (their deadline is checked around their I/O and at the end).

Disarming is race-free: the watchdog injects only while holding the region's mutex and seeing it armed; the
thread clears ``armed``, waits for the mutex (an injection in progress completes) and then clears any pending
exception. After :meth:`Region.disarm` returns no exception can arrive; if one fired earlier it surfaces as
:class:`Interrupted` from ``disarm`` itself, before any lock is taken or I/O started.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol


class Interrupted(BaseException):  # noqa: N818 - not an error of the code it interrupts, like KeyboardInterrupt
    """The deadline of the request passed while its thread planned it (a BaseException, so that no
    ``except Exception`` in a library swallows it)."""


class Watchdog(Protocol):
    def watch(self, deadline: float, callback: Callable[[], None]) -> int: ...

    def unwatch(self, handle: int) -> None: ...


_local = threading.local()


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> int:
    return int(
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(thread_id), ctypes.py_object(exc) if exc is not None else ctypes.c_void_p(None)
        )
    )


#: Code the exception may land in: the parser and the gateway's own planning (never a finalizer or a weakref
#: callback that a garbage collection happens to run in the thread, which would swallow it as "unraisable").
_HOT = (f"{os.sep}sqlglot{os.sep}", f"{os.sep}gateway{os.sep}")
_RETRY = 0.002


class Region:
    """One armed stretch of a thread's work (see the module doc)."""

    def __init__(self, deadline: float, watchdog: Watchdog | None) -> None:
        self.deadline = deadline
        self.thread_id = threading.get_ident()
        self.watchdog = watchdog
        self.armed = False
        self.fired = False
        #: the deadline passed in a shielded block that failed: its error went on, the region is over
        self.late = False
        self._mutex = threading.Lock()

    def fire(self) -> None:
        """Watchdog thread: interrupt the region's thread if it is in armed code, in the parser or the planner
        (else try again a moment later)."""
        if not self._mutex.acquire(timeout=1.0):  # never block the watchdog for long
            return
        try:
            if not self.armed or self.fired:
                return
            frame = sys._current_frames().get(self.thread_id)
            code = frame.f_code if frame is not None else None
            if (
                code is None
                or code.co_name in ("__del__", "remove")
                or not any(part in code.co_filename for part in _HOT)
            ):
                if self.watchdog is not None:
                    self.watchdog.watch(time.monotonic() + _RETRY, self.fire)
                return
            self.fired = True
            _set_async_exc(self.thread_id, Interrupted)
        finally:
            self._mutex.release()

    def arm(self) -> None:
        if self.late or time.monotonic() >= self.deadline:
            raise Interrupted()
        self.armed = True

    def disarm(self) -> None:
        self.armed = False
        with self._mutex:  # an injection that saw armed = True has finished
            pass
        if self.fired:
            _set_async_exc(self.thread_id, None)  # clear it if it has not been raised yet
            raise Interrupted()


@contextmanager
def interruptible(deadline: float | None, watchdog: Watchdog, *, preempt: bool = True) -> Iterator[None]:
    """Run the block so that it ends with :class:`Interrupted` once ``deadline`` (monotonic) passes. Without
    ``preempt`` (work known to be short) the deadline is only checked at the block's ends and around the I/O
    inside it (:func:`shielded`, :func:`current`)."""
    if deadline is None or getattr(_local, "region", None) is not None:
        yield
        return
    region = Region(deadline, watchdog if preempt else None)
    handle = watchdog.watch(deadline, region.fire) if preempt else None
    _local.region = region
    try:
        region.arm()
        try:
            yield
        finally:
            region.disarm()
        if region.late:  # a shielded block failed after the deadline and its error was caught
            raise Interrupted()
    finally:
        _local.region = None
        if handle is not None:
            watchdog.unwatch(handle)


def _ignore_interrupted(hook: Callable[[Any], None]) -> Callable[[Any], None]:
    def unraisable(info: Any) -> None:
        if not isinstance(info.exc_value, Interrupted):
            hook(info)

    return unraisable


def quiet_unraisable() -> None:
    """An interruption that a finalizer swallowed anyway (the request still ends with its 408) is not worth
    a traceback on the server's console."""
    sys.unraisablehook = _ignore_interrupted(sys.unraisablehook)


def current() -> float | None:
    """The deadline of the armed region this thread is in, if any."""
    region: Region | None = getattr(_local, "region", None)
    return region.deadline if region is not None else None


def remaining(deadline: float | None, default: float) -> float:
    """Seconds left before ``deadline`` (at least a millisecond), or ``default`` without a deadline."""
    return default if deadline is None else max(0.001, min(default, deadline - time.monotonic()))


@contextmanager
def shielded() -> Iterator[None]:
    """Around I/O and locks inside an armed region: no interruption in the block; a deadline that passed
    meanwhile ends the region right after it. A block that fails keeps its own error (a source that did not
    answer in time says so, rather than a 408 about planning); code that catches it and goes on is interrupted
    at its next shielded block or the region's end."""
    region: Region | None = getattr(_local, "region", None)
    if region is not None and region.late:
        raise Interrupted()
    if region is None or not region.armed:
        yield
        return
    region.disarm()
    try:
        yield
    except Exception:
        if time.monotonic() < region.deadline:
            region.armed = True
        else:
            region.late = True
        raise
    region.arm()

"""PostgreSQL's parser (libpg_query) in processes of its own, killed when a request's deadline passes (issue 27.4).

libpg_query is C that keeps the interpreter lock for the whole call (``pgparse`` does not release it) and cannot be
interrupted; on some texts it is quadratic (a run of operator characters is rescanned at every comment start:
1 MiB of ``/**/`` is about 20 minutes). Run in the server's process, such a call stops every thread: the event
loop, ``/healthz``, every other query. So :mod:`lakegate.gateway.pggrammar` sends any text it cannot prove cheap
to a :class:`Pool` of worker processes; the calling thread waits without the lock (``poll`` on a pipe), and when
the request's deadline passes the worker is killed (SIGKILL: the C code cannot be asked politely) and replaced on
the next call. Workers run at the lowest CPU priority (``nice`` 19), so that a hostile statement being parsed
competes as little as possible with the server itself, and die with the server (``PR_SET_PDEATHSIG``) even when
it is killed while they work.

Why processes and not threads: the lock is held by the C call itself. Why not ``multiprocessing``: it would fork a
process that runs DuckDB's and uvicorn's threads (unsafe) or re-import the server's ``__main__`` (spawn); a worker
here is ``python -m lakegate.gateway.isolate``, which imports nothing but ``pgparse``. Messages are length-prefixed
frames on the worker's stdin and stdout: the request is an operation byte and the UTF-8 text; the answer is a
pickled tuple (the worker is our own code, started by us: its pickles are trusted).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from typing import Any, BinaryIO

CHECK = b"c"  #: the grammar's verdict only (``pgparse.fingerprint``: the raw parser and a cheap walk)
TREE = b"t"  #: the parse tree (``pgparse.parse``)
_HEADER = struct.Struct(">I")
_NICE = 19
_PR_SET_PDEATHSIG = 1


class Timeout(Exception):
    """The deadline passed before the parser answered; the worker was killed."""


class Crashed(Exception):
    """The worker process died while it parsed (a signal: libpg_query overran its stack, or memory ran out)."""

    def __init__(self, status: int) -> None:
        how = f"signal {-status}" if status < 0 else f"exit status {status}"
        super().__init__(how)
        self.how = how


# ------------------------------------------------------------------------------------------ the worker


def _read_exactly(stream: BinaryIO, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = stream.read(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _answer(op: bytes, sql: str) -> tuple[Any, ...]:
    import pgparse

    try:
        if op == TREE:
            return ("ok", pgparse.parse(sql))
        pgparse.fingerprint(sql)
        return ("ok", None)
    except pgparse.PGQueryError as exc:
        return ("error", str(exc.message), int(exc.position or 0))
    except RecursionError:  # decoding a deeply nested tree: the caller reports it as the server's parse would
        return ("recursion",)


def _serve() -> None:
    """The worker's loop: one request frame in, one answer frame out, until stdin closes."""
    with contextlib.suppress(OSError):
        os.nice(_NICE)
    if sys.platform == "linux":  # killed with the server, even mid-parse (the GIL is held: no Python runs)
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, 9)
    requests = sys.stdin.buffer
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # nothing a library prints can corrupt the frames
    import pgparse  # noqa: F401 - loaded before the first request

    while True:
        head = _read_exactly(requests, _HEADER.size)
        if head is None:
            return
        (size,) = _HEADER.unpack(head)
        body = _read_exactly(requests, size)
        if body is None:
            return
        answer = _answer(body[:1], body[1:].decode())
        try:
            data = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except RecursionError:
            data = pickle.dumps(("recursion",))
        answers.write(_HEADER.pack(len(data)) + data)
        answers.flush()


# ------------------------------------------------------------------------------------------ the server's side


class _Worker:
    """One worker process and its pipes."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lakegate.gateway.isolate"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            start_new_session=True,  # a Ctrl-C at the server's terminal is the server's to handle
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin = self.process.stdin
        self.stdout = self.process.stdout

    def alive(self) -> bool:
        return self.process.poll() is None

    def call(self, op: bytes, sql: str, deadline: float) -> tuple[Any, ...]:
        payload = op + sql.encode()
        try:
            self.stdin.write(_HEADER.pack(len(payload)) + payload)  # an idle worker reads it at once
            self.stdin.flush()
        except OSError:  # it died since it was last seen alive
            raise Crashed(self.process.wait()) from None
        return tuple(pickle.loads(self._receive(deadline)))

    def _receive(self, deadline: float) -> bytes:
        fd = self.stdout.fileno()
        poller = select.poll()  # not select(): descriptors beyond 1024 are common with many connections
        poller.register(fd, select.POLLIN)
        data = bytearray()
        size: int | None = None
        while size is None or len(data) < _HEADER.size + size:
            wait = deadline - time.monotonic()
            if wait <= 0:
                raise Timeout()
            if not poller.poll(max(1, int(wait * 1000))):
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise Crashed(self.process.wait())
            data += chunk
            if size is None and len(data) >= _HEADER.size:
                (size,) = _HEADER.unpack_from(data)
        return bytes(data[_HEADER.size :])

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        self._close_pipes()

    def stop(self) -> None:
        """Ask an idle worker to end (its stdin closes), killing it if it does not."""
        self._close_pipes()
        try:
            self.process.wait(timeout=2)
        except subprocess.TimeoutExpired:
            self.kill()

    def _close_pipes(self) -> None:
        for pipe in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                pipe.close()


class Pool:
    """At most ``size`` worker processes parse at once; a caller waits for a free one until its deadline."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self._idle: list[_Worker] = []
        self._workers: set[_Worker] = set()
        self._busy = 0
        self._heavy = 0  #: busy with heavy statements
        self._cond = threading.Condition()

    def busy(self) -> int:
        """Workers parsing right now."""
        with self._cond:
            return self._busy

    def configure(self, size: int) -> None:
        with self._cond:
            self.size = max(1, size)
            self._cond.notify_all()

    def warm(self) -> None:
        """Start a worker ahead of the first statement that needs one (a start costs about 0.1 s)."""
        with self._cond:
            if self._idle or self._busy:
                return
        worker = _Worker()
        with self._cond:
            self._workers.add(worker)
            self._idle.append(worker)

    def run(self, op: bytes, sql: str, deadline: float, heavy: bool = False) -> tuple[Any, ...]:
        """The worker's answer for ``sql``; :class:`Timeout` once ``deadline`` (monotonic) passes, with the
        worker killed; :class:`Crashed` if it died. ``heavy`` statements (they may parse until their deadline)
        get every worker but one: the others never wait behind them."""
        worker = self._take(deadline, heavy)
        try:
            answer = worker.call(op, sql, deadline)
        except BaseException:
            self._discard(worker, heavy)
            raise
        self._give(worker, heavy)
        return answer

    def _take(self, deadline: float, heavy: bool) -> _Worker:
        with self._cond:
            while self._busy >= self.size or (heavy and self._heavy >= max(1, self.size - 1)):
                wait = deadline - time.monotonic()
                if wait <= 0:
                    raise Timeout()
                self._cond.wait(wait)
            self._busy += 1
            self._heavy += heavy
            while self._idle:
                worker = self._idle.pop()
                if worker.alive():
                    return worker
                self._workers.discard(worker)
                worker.kill()  # reaps it
        try:
            worker = _Worker()
        except BaseException:
            self._release(heavy)
            raise
        with self._cond:
            self._workers.add(worker)
        return worker

    def _give(self, worker: _Worker, heavy: bool) -> None:
        with self._cond:
            self._idle.append(worker)
        self._release(heavy)

    def _discard(self, worker: _Worker, heavy: bool) -> None:
        worker.kill()
        with self._cond:
            self._workers.discard(worker)
        self._release(heavy)

    def _release(self, heavy: bool) -> None:
        with self._cond:
            self._busy -= 1
            self._heavy -= heavy
            self._cond.notify_all()  # a light caller may be waiting behind a heavy one

    def close(self) -> None:
        """Stop every worker (busy ones are killed: their callers see :class:`Crashed`)."""
        with self._cond:
            idle, busy = list(self._idle), self._workers - set(self._idle)
            self._idle.clear()
            self._workers -= set(idle)
        for worker in idle:
            worker.stop()
        for worker in busy:
            with contextlib.suppress(OSError):
                worker.process.kill()


#: The process's pool (``[gateway] parser_processes`` sizes it when the HTTP app starts).
POOL = Pool()
atexit.register(POOL.close)


if __name__ == "__main__":
    _serve()

"""The writer, free again, wakes the reading thread (issue 11.16).

The reading thread waits for stream data in ``ReplicationStream.wait_readable`` (up to a quarter second at a
time) and hands a flush over only when it looks again. When the writer finished its flush while the reader was
waiting (the source sends in bursts, or is quiet with tables left behind by a share flush), the next flush waited
for the next data or for the wait to end: 0.1 s on average in ``bench/ingest.py``'s 200-table row, a sixth of
the writer's time. Now the committer calls ``free`` after every flush, and the worker passes the source's
``wake``, which ends the wait at once.
"""

from __future__ import annotations

import threading

import psycopg
import pytest

from lakegate.connectors.postgres.cdc import Flush
from lakegate.connectors.postgres.replication import ReplicationStream
from lakegate.ingest.committer import Committer


def _drain(stream: ReplicationStream) -> int:
    """Read the stream data libpq holds (keepalives: the table is never written); returns how many messages."""
    pgconn = stream.conn.pgconn
    count = 0
    while pgconn.get_copy_data(1)[0] > 0:
        count += 1
    return count


def test_wake_ends_a_wait_for_stream_data(pg: psycopg.Connection, pg_dsn: str) -> None:
    pg.execute("CREATE TABLE quiet (id int PRIMARY KEY)")
    pg.execute("CREATE PUBLICATION wake_pub FOR TABLE quiet")
    stream = ReplicationStream(pg_dsn)
    try:
        stream.create_slot("wake_slot", temporary=True)
        stream.start("wake_slot", "wake_pub")
        stream.wait_readable(0.5)
        _drain(stream)
        ended = threading.Event()

        def wait() -> None:
            """Wait until a wait ends with nothing to read: the wake-up (a keepalive the server sends meanwhile
            ends a wait too, with data; that one does not count)."""
            while True:
                stream.wait_readable(120.0)
                if _drain(stream) == 0:
                    break
            ended.set()

        waiter = threading.Thread(target=wait, daemon=True)
        waiter.start()
        assert not ended.wait(0.3), "the wait ended with nothing to read and no wake-up"
        stream.wake()
        assert ended.wait(20), "wake() did not end the reader's wait"
        stream.wake()  # a wake-up with nobody waiting is kept: the next wait returns at once, then waits again
        stream.wake()
        stream.wait_readable(120.0)
        _drain(stream)
        again = threading.Thread(target=wait, daemon=True)
        ended.clear()
        again.start()
        assert not ended.wait(0.3), "a wake-up was left over after the wait that took it"
        stream.wake()
        assert ended.wait(20)
    finally:
        stream.close()
    stream.wake()  # after close: ignored, not raised (the writer may finish while the stream stops)


@pytest.mark.parametrize("fails", [False, True])
def test_the_committer_says_it_is_free_after_every_flush(fails: bool) -> None:
    written: list[Flush] = []
    free: list[int] = []

    def write(flush: Flush) -> None:
        if fails:
            raise RuntimeError("the lake refused")
        written.append(flush)

    committer = Committer(write, free=lambda: free.append(len(written)))
    committer.start()
    try:
        flushes = [Flush(segments=[], positions={}, ack=lsn) for lsn in (1, 2, 3)]
        committer.submit(flushes[0])
        if fails:
            committer.join(20)
            assert free == [0], "a failed flush frees the writer too (the reader then raises its error)"
            with pytest.raises(RuntimeError, match="the lake refused"):
                committer.completed()
            return
        for flush in flushes[1:]:
            committer.submit(flush)
        assert [f.ack for f in committer.drain()] == [1, 2, 3]
        assert free == [1, 2, 3], "free is called once per flush, after the flush is written"
    finally:
        committer.close()

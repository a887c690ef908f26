"""The PostgreSQL route's COPY reader (connectors/postgres/copyout.py) against the real PostgreSQL: every row as
psycopg reads it, in blocks of any size; an error PostgreSQL raises after rows were sent, the result cap and an
early close each leave the pooled session fit for the next query."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pyarrow as pa
import pytest

from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.query import TOO_LARGE, QueryError

ROWS = """
SELECT g AS id, CASE WHEN g % 7 = 0 THEN NULL WHEN g % 11 = 0 THEN '' ELSE 'row "' || g || E'",\\n' END AS t,
       (g % 100000) / 100.0 AS n, timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' AS ts
FROM generate_series(1, 30000) g
"""


@pytest.fixture
def engine(pg_dsn: str) -> Iterator[PostgresEngine]:
    engine = PostgresEngine("pg", pg_dsn, pool_size=1)  # one session: each test's next query reuses it
    yield engine
    engine.close()


def _read(engine: PostgresEngine, sql: str, chunk_bytes: int, max_bytes: int | None = None) -> pa.Table:
    result = engine.prepare(sql, timeout=60, chunk_bytes=chunk_bytes, max_bytes=max_bytes)
    try:
        result.start()
        return pa.Table.from_batches(list(result), schema=result.schema)
    finally:
        result.close()


@pytest.mark.parametrize("chunk_bytes", [4096, 4 * 2**20])
def test_every_row_arrives_once_in_order(engine: PostgresEngine, pg: psycopg.Connection, chunk_bytes: int) -> None:
    want = pg.execute(ROWS + " ORDER BY g").fetchall()
    got = _read(engine, ROWS + " ORDER BY g", chunk_bytes)
    assert got.num_rows == len(want)
    for (i, t, n, ts), (gi, gt, gn, gts) in zip(want, zip(*got.to_pydict().values(), strict=True), strict=True):
        assert (gi, gt, str(gn), gts) == (i, t, str(n), ts)


def test_an_error_after_rows_were_sent_is_raised_and_the_session_is_reused(engine: PostgresEngine) -> None:
    failing = "SELECT g, 1 / (g - 20000) AS x FROM generate_series(1, 30000) g"
    for chunk_bytes in (4096, 4 * 2**20):
        with pytest.raises(QueryError) as caught:
            _read(engine, failing, chunk_bytes)
        assert caught.value.sqlstate == "22012", caught.value
        assert _read(engine, "SELECT 41 + 1 AS x", chunk_bytes).column(0).to_pylist() == [42]


def test_the_cap_and_an_early_close_leave_the_session_fit(engine: PostgresEngine) -> None:
    with pytest.raises(QueryError) as caught:
        _read(engine, ROWS, 4096, max_bytes=100_000)
    assert caught.value.kind == TOO_LARGE and "cap of 100000 bytes" in str(caught.value)
    assert _read(engine, "SELECT 1 AS x", 4096).num_rows == 1
    result = engine.prepare(ROWS, timeout=60, chunk_bytes=4096)
    result.start()
    first = next(iter(result))
    assert first.num_rows > 0
    result.close()  # the COPY is still running: it is cancelled and drained
    assert _read(engine, "SELECT count(*) AS n FROM generate_series(1, 5)", 4096).column(0).to_pylist() == [5]

"""Issue 27 item 3: nothing of one request carries over to the next through a pooled PostgreSQL session
(connectors/postgres/sessionreset.py). The guard is bypassed: each test makes one kind of state directly on the
session the engine hands out (pool of one), releases it, and shows that the next request, on the very same backend
(same ``pg_backend_pid()``, so the reset is what is proven, not a new connection), cannot see it; or, for state
the reset cannot undo, that the session was closed instead of reused."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.postgres.sessionreset import LOADED_MODULES_SINCE, seed

Make = Callable[[psycopg.Connection], Any]


@pytest.fixture
def engine(pg_dsn: str) -> Iterator[PostgresEngine]:
    engine = PostgresEngine("pg", pg_dsn, pool_size=1)  # one session: the next request gets it back
    yield engine
    engine.close()


def _pid(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def _sql(*statements: str) -> Make:
    """Run each statement on the session (simple protocol: a text may hold several, e.g. a transaction)."""

    def make(conn: psycopg.Connection) -> None:
        for statement in statements:
            conn.execute(statement)

    return make


def _memory(word: str) -> str:
    """Memory contexts of the backend naming ``<word>-marker`` (the probe's own text does not hold it whole)."""
    return f"SELECT count(*) FROM pg_backend_memory_contexts WHERE ident LIKE '%' || '{word}' || '-marker%'"


def _leave(engine: PostgresEngine, make: Make) -> int:
    """Make state on a pooled session and give it back; the session's backend pid."""
    conn = engine.connection()
    try:
        pid = _pid(conn)
        make(conn)
        return pid
    finally:
        engine.release(conn)


@dataclass(frozen=True)
class Kind:
    id: str
    make: Make
    probe: str  #: what the next request sees
    want: list[tuple[Any, ...]]  #: ... which is what a fresh session sees


ADVISORY = "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
TEMP_RELATIONS = "SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()"
KINDS = [
    Kind("set", _sql("SET default_transaction_read_only = off"), "SHOW default_transaction_read_only", [("on",)]),
    Kind(
        "session characteristics",
        _sql("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE, ISOLATION LEVEL SERIALIZABLE"),
        "SELECT current_setting('default_transaction_read_only'), current_setting('default_transaction_isolation')",
        [("on", "read committed")],
    ),
    Kind(
        "set_config false",
        _sql("SELECT set_config('search_path', 'public', false), set_config('statement_timeout', '1234', false)"),
        "SELECT current_setting('search_path'), current_setting('statement_timeout')",
        [("pg_catalog,pg_temp", "0")],
    ),
    Kind("set role", _sql("SET ROLE pg_read_all_data"), "SELECT current_user::text", [("postgres",)]),
    Kind(
        "session authorization",
        _sql("SET SESSION AUTHORIZATION pg_read_all_data"),
        "SELECT session_user::text, current_user::text",
        [("postgres", "postgres")],
    ),
    Kind("advisory lock", _sql("SELECT pg_advisory_lock(4201)"), ADVISORY, [(0,)]),
    Kind(
        "try advisory lock",
        _sql("SELECT pg_try_advisory_lock(4202), pg_try_advisory_lock(42, 3)"),
        ADVISORY,
        [(0,)],
    ),
    Kind("shared advisory lock", _sql("SELECT pg_advisory_lock_shared(4203)"), ADVISORY, [(0,)]),
    Kind(
        "prepared statement",
        _sql("PREPARE leak AS SELECT 'secret'"),
        "SELECT count(*) FROM pg_prepared_statements",
        [(0,)],
    ),
    Kind(
        "protocol prepared statement",
        # a Parse message naming the statement (the engine's psycopg never prepares: prepare_threshold=None)
        lambda conn: conn.pgconn.prepare(b"leak", b"SELECT 'secret'"),
        "SELECT count(*) FROM pg_prepared_statements",
        [(0,)],
    ),
    Kind(
        "plan cache",
        _sql("PREPARE leak(int) AS SELECT 'plan-marker' WHERE $1 > 0", *["EXECUTE leak(1)"] * 6),
        _memory("plan"),
        [(0,)],
    ),
    Kind(
        "temp table",
        _sql(
            "BEGIN READ WRITE; CREATE TEMP TABLE leak AS SELECT 'secret' AS s; "
            "CREATE TEMP VIEW leak_v AS SELECT 1; CREATE TEMP SEQUENCE leak_s; COMMIT"
        ),
        TEMP_RELATIONS,
        [(0,)],
    ),
    Kind(
        "temp function",
        _sql(
            "BEGIN READ WRITE; CREATE FUNCTION pg_temp.leak() RETURNS text LANGUAGE sql AS $$SELECT 'secret'$$; "
            "COMMIT"
        ),
        "SELECT count(*) FROM pg_proc WHERE pronamespace = pg_my_temp_schema()",
        [(0,)],
    ),
    Kind(
        "cursor with hold",
        _sql("DECLARE leak CURSOR WITH HOLD FOR SELECT 'secret' FROM generate_series(1, 3)"),
        "SELECT count(*) FROM pg_cursors",
        [(0,)],
    ),
    Kind("listen", _sql("LISTEN leak"), "SELECT count(*) FROM pg_listening_channels()", [(0,)]),
]


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.id)
def test_the_next_request_on_the_same_session_does_not_see_it(engine: PostgresEngine, kind: Kind) -> None:
    fresh = engine.connection()
    try:
        assert fresh.execute(kind.probe).fetchall() == kind.want, "a fresh session differs: the probe is wrong"
    finally:
        engine.release(fresh)
    pid = _leave(engine, kind.make)
    conn = engine.connection()
    try:
        assert _pid(conn) == pid, "the pool opened a new session: the test would not prove the reset"
        seen = conn.execute(kind.probe).fetchall()
        assert seen == kind.want, f"{kind.id}: the next request sees {seen}, a fresh session {kind.want}"
    finally:
        engine.release(conn)


def test_a_custom_setting_loses_its_value(engine: PostgresEngine) -> None:
    """RESET ALL empties it; its name stays known to the session ('' where a fresh session has no such setting),
    which no SQL can undo or even list (pg_settings omits such placeholders): the one trace left, documented."""
    pid = _leave(engine, _sql("SELECT set_config('lakegate.leak', 'secret', false)"))
    conn = engine.connection()
    try:
        assert _pid(conn) == pid
        assert conn.execute("SELECT current_setting('lakegate.leak', true)").fetchall() == [("",)]
    finally:
        engine.release(conn)


def test_sequence_state_is_forgotten(engine: PostgresEngine, pg: psycopg.Connection) -> None:
    pg.execute("CREATE SEQUENCE public.leak_seq")
    pid = _leave(engine, _sql("BEGIN READ WRITE; SELECT nextval('public.leak_seq'); COMMIT"))
    conn = engine.connection()
    try:
        assert _pid(conn) == pid
        for probe in ("SELECT currval('public.leak_seq')", "SELECT lastval()"):
            with pytest.raises(psycopg.errors.ObjectNotInPrerequisiteState) as caught:
                conn.execute(probe)
            assert caught.value.sqlstate == "55000" and "not yet defined in this session" in str(caught.value)
    finally:
        engine.release(conn)


def test_the_previous_query_text_is_not_shown_to_other_sessions(
    engine: PostgresEngine, pg: psycopg.Connection
) -> None:
    """pg_stat_activity shows an idle session's last query to sessions of the same role: it is the reset's, and
    the seed it drew is a parameter, not in that text (a number there would let them predict random())."""
    pid = _leave(engine, lambda conn: conn.execute("SELECT 'secret-text', %s::int", (1,)))
    held = engine.connection()  # the pool's worker has reset the session by then; held, it runs nothing else
    try:
        row = pg.execute("SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    finally:
        engine.release(held)
    assert row is not None
    assert "secret-text" not in row[0], f"the previous request's text is shown to other sessions: {row[0]}"
    assert re.search(r"\d\.\d|\(\s*-?\d", row[0]) is None, f"the reset's seed is shown: {row[0]}"


#: generator functions (and the PostgreSQL that has them); each must differ from what the seed a request chose
#: makes it return
GENERATORS = {
    "random()": 0,
    "random_normal()": 160000,
    "random(1, 1000000000)": 170000,
    "random(0.000000000000, 1.000000000000)": 170000,
}
SEEDINGS = ["SELECT setseed(0.5)", "SET seed = 0.5", "SELECT set_config('seed', '0.5', false)"]


def _seeded(pg: psycopg.Connection, seeding: str, then: str) -> Any:
    """What ``then`` returns on a session that ran ``seeding`` (the test's own session: a generator per backend)."""
    pg.execute(seeding)
    row = pg.execute(f"SELECT {then}").fetchone()
    assert row is not None
    return row[0]


def _next_request(engine: PostgresEngine, expr: str) -> tuple[int, Any]:
    """(backend pid, value of ``expr``) of the next request, on the gateway's query path."""
    result = engine.run(f"SELECT pg_backend_pid() AS pid, {expr} AS v", timeout=30)
    try:
        row = next(b for b in result if b.num_rows).to_pylist()[0]
    finally:
        result.close()
    return int(row["pid"]), row["v"]


@pytest.mark.parametrize(
    ("seeding", "generator"),
    [(s, "random()") for s in SEEDINGS] + [(SEEDINGS[0], g) for g in list(GENERATORS)[1:]],
)
def test_a_seed_is_not_carried_over(
    engine: PostgresEngine, pg: psycopg.Connection, seeding: str, generator: str
) -> None:
    if pg.info.server_version < GENERATORS[generator]:
        pytest.skip(f"PostgreSQL {pg.info.server_version} has no {generator}")
    predicted = _seeded(pg, seeding, generator)
    pid = _leave(engine, _sql(seeding))
    got_pid, value = _next_request(engine, generator)
    assert got_pid == pid, "the pool opened a new session: the test would not prove the reset"
    assert str(value) != str(predicted), f"{generator} after '{seeding}' in the previous request was predictable"


def test_a_generator_state_read_by_one_request_does_not_predict_the_next(
    engine: PostgresEngine, pg: psycopg.Connection
) -> None:
    """A request that learnt the generator's state (here by seeding it; reading enough of random() would do)
    cannot predict the next request's values; and the reset draws a new seed each time (a constant one would be
    as predictable)."""
    predicted = _seeded(pg, "SELECT setseed(0.25), random(), random(), random()", "random()")
    seen = []
    for _ in range(3):
        pid = _leave(engine, _sql("SELECT setseed(0.25), random(), random(), random()"))
        got_pid, value = _next_request(engine, "random()")
        assert got_pid == pid
        seen.append(value)
    assert predicted not in seen, f"the continuation {predicted} of the previous request's generator was predictable"
    assert len(set(seen)) == 3, f"the reset's seeds repeat: the next request's random() was {seen}"


def test_seeds_cover_setseeds_range() -> None:
    draws = [seed() for _ in range(2000)]
    assert all(-1.0 <= d < 1.0 for d in draws), [d for d in draws if not -1.0 <= d < 1.0]
    assert min(draws) < -0.9 and max(draws) > 0.9 and len(set(draws)) == len(draws)


def test_a_session_holding_library_state_is_closed_not_reused(
    engine: PostgresEngine, pg: psycopg.Connection, pg_dsn: str
) -> None:
    """dblink's open connections survive DISCARD ALL (PostgreSQL 18+ says which libraries a session loaded)."""
    if pg.info.server_version < LOADED_MODULES_SINCE:
        pytest.skip(f"PostgreSQL {pg.info.server_version} does not say which libraries a session loaded")
    pg.execute("CREATE EXTENSION dblink")
    conn = engine.connection()
    pid = _pid(conn)
    conn.execute("SELECT public.dblink_connect('leak', %s)", (pg_dsn,))
    engine.release(conn)
    nxt = engine.connection()  # the pool's worker has reset (or closed) the session by then
    try:
        assert conn.closed, "a session holding dblink connections went back to the pool"
        assert _pid(nxt) != pid
        assert nxt.execute("SELECT public.dblink_get_connections()").fetchall() == [(None,)]
    finally:
        engine.release(nxt)


def test_a_session_whose_reset_fails_is_discarded(engine: PostgresEngine, pg: psycopg.Connection) -> None:
    """The backend ends while the request holds the session: DISCARD ALL fails on release, and the pool hands
    out a new, working session instead of the broken one."""
    conn = engine.connection()
    pid = _pid(conn)
    row = pg.execute("SELECT pg_terminate_backend(%s, 30000)", (pid,)).fetchone()
    assert row == (True,), f"backend {pid} did not end within 30 s"
    engine.release(conn)
    nxt = engine.connection()
    try:
        assert conn.closed, "a session whose reset failed went back to the pool"
        assert _pid(nxt) != pid
        assert nxt.execute("SELECT 41 + 1").fetchall() == [(42,)]
    finally:
        engine.release(nxt)


def test_sessions_the_server_ended_while_pooled_are_replaced_without_failing_a_request(pg_dsn: str) -> None:
    """A source restart (or ``pg_terminate_backend``) ends every idle pooled session with FATAL 57P01; the next
    requests must each get a working session, not a 503 for every dead one still in the pool."""
    engine = PostgresEngine("pg", pg_dsn, pool_size=3)
    try:
        held = [engine.connection() for _ in range(3)]  # three sessions in the pool
        pids = {_pid(conn) for conn in held}
        for conn in held:
            engine.release(conn)
        with psycopg.connect(pg_dsn, autocommit=True) as admin:
            ended = admin.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE pid = ANY(%s)",
                (sorted(pids),),
            ).fetchone()
            assert ended == (3,)
            for _ in range(200):  # the backends are gone, their FATAL message sent
                left = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (sorted(pids),))
                if left.fetchone() == (0,):
                    break
                time.sleep(0.05)
        for _ in range(4):  # more requests than dead sessions, each served
            result = engine.run("SELECT pg_backend_pid() AS pid", timeout=10.0)
            try:
                (pid,) = [v for batch in result for v in batch.column(0).to_pylist()]
            finally:
                result.close()
            assert pid not in pids
    finally:
        engine.close()

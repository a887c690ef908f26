"""No request stalls the others (issue 27.4), over real HTTP against the real uvicorn protocol the gateway serves
with: while a hostile request is in flight, ``/healthz`` and ``SELECT 1`` from another token answer.

The checks are causal, never timed: the good requests must have finished while the hostile one was still in
flight (its worker thread is still running it, in PostgreSQL's parser process) or after it was refused; the time
bounds on the good requests are only there so that a stall fails the test instead of hanging it.
"""

from __future__ import annotations

import contextlib
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from lakegate.gateway import isolate, pggrammar
from tests.gateway_fixtures.harness import LiveServer, database, gateway_settings, live_server

HOSTILE = "hostile-token"
GOOD = "good-token"
PATIENCE = 60.0  #: generous bound on a good request (a stall fails it instead of hanging the test)
#: the largest SQL text a request body of 1 MiB carries ({"sql": "...", "timeout_ms": ...} around it)
BODY_SQL = (1 << 20) - 64


@pytest.fixture(scope="module")
def live(pg_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    lake_dir = tmp_path_factory.mktemp("stalls")
    with database(pg_server) as dsn:
        settings = gateway_settings(dsn, lake_dir, tokens=[HOSTILE, GOOD], timeout="120s")
        with live_server(settings) as server:
            yield server


@dataclass
class Flight:
    """A request running in a background thread."""

    thread: threading.Thread
    response: list[httpx.Response] = field(default_factory=list)
    error: list[BaseException] = field(default_factory=list)

    def running(self) -> bool:
        return self.thread.is_alive()

    def result(self) -> httpx.Response:
        self.thread.join(PATIENCE * 4)
        assert not self.thread.is_alive(), "the hostile request never ended"
        if self.error:
            raise self.error[0]
        return self.response[0]


def _launch(live: LiveServer, body: dict[str, Any]) -> Flight:
    flight = Flight(threading.Thread(target=lambda: None))

    def run() -> None:
        try:
            with live.client(HOSTILE, timeout=PATIENCE * 4) as client:
                flight.response.append(client.post("/v1/query", json=body))
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            flight.error.append(exc)

    flight.thread = threading.Thread(target=run, name="hostile", daemon=True)
    flight.thread.start()
    return flight


def _wait_for(condition: Any, what: str, within: float = PATIENCE) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _good_requests(live: LiveServer) -> None:
    """``/healthz`` without a token and ``SELECT 1`` with the good token, each on a fresh connection."""
    with live.client(timeout=PATIENCE) as client:
        health = client.get("/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    with live.client(GOOD, timeout=PATIENCE) as client:
        answer = client.post("/v1/query", json={"sql": "SELECT 1 AS x"})
    assert (answer.status_code, answer.json()["rows"]) == (200, [{"x": 1}]), answer.text[:500]


def _in_parser() -> bool:
    return isolate.POOL.busy() > 0


def _answers_while_parsing(live: LiveServer, sql: str, timeout_ms: int) -> httpx.Response:
    """Send ``sql`` as the hostile token; once PostgreSQL's parser process is reading it, the good requests
    must answer while it is still in flight. Returns the hostile request's response."""
    flight = _launch(live, {"sql": sql, "timeout_ms": timeout_ms})
    _wait_for(lambda: _in_parser() or not flight.running(), "the hostile statement to reach the parser")
    assert flight.running(), f"the hostile request ended early: {flight.result().text[:300]}"
    _good_requests(live)
    assert flight.running() and _in_parser(), "the good requests only answered after the hostile one ended"
    return flight.result()


def _assert_timeout(response: httpx.Response) -> None:
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["sqlstate"]) == (408, "timeout", "57014"), error
    assert "time limit passed while it was parsed and planned" in error["message"], error


# ------------------------------------------------------------------------------- PostgreSQL's parser

GRAMMAR = [
    "SELECT 1 AS select, 2 AS from, 3 AS overlaps",
    "SELECT 'é', id\n  FROM lake.public.one AS user",
    "SELECT overlaps FROM t",
    "SELECT id FROM t LIMIT 1, 2",
    "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM t",
    "/* Redash */ SELECT 1;",
    "SELECT 1 +/**/ 2 -- end",
    "SELECT $q$it's$q$ || E'\\n' || U&'\\0041'",
    "SELECT " + "(" * 6000 + "1" + ")" * 6000,
]


@pytest.mark.parametrize("sql", GRAMMAR)
def test_the_parser_process_answers_as_the_inline_parser(sql: str) -> None:
    """Same parser, same verdict, same position, wherever it runs (statements over 4 KiB go to the process)."""
    deadline = time.monotonic() + PATIENCE
    assert isolate.POOL.run(isolate.CHECK, sql, deadline) == pggrammar._inline(sql, isolate.CHECK)
    assert isolate.POOL.run(isolate.TREE, sql, deadline) == pggrammar._inline(sql, isolate.TREE)


@pytest.mark.parametrize("pad", [0, 5000])
def test_a_tree_too_deep_to_decode_is_a_recursion_error_wherever_it_is_read(pad: int) -> None:
    """As ``pgparse.parse`` in the server's process: the caller reports it as a statement too deeply nested."""
    with pytest.raises(RecursionError):
        pggrammar.tree("SELECT 1" + "+1" * 1900 + " " * pad)


def test_what_is_read_where() -> None:
    """Only statements that are provably cheap are read in the server's process; hostile ones are heavy."""
    assert pggrammar.cheap("SELECT a->>'k', b::int, c || d FROM t WHERE e >= 1 -- " + "=" * 200)
    assert not pggrammar.cheap("SELECT 1" + " " * 5000)  # long: a worker process
    assert not pggrammar.cheap("SELECT 1 " + "+" * 300 + " 1")  # short, but a long operator run
    assert not pggrammar.heavy("SELECT 1" + " " * 5000)
    assert pggrammar.heavy("SELECT 1" + " " * 20_000)
    assert pggrammar.heavy("SELECT 1" + "/**/" * 1_100)  # 4,400 operator characters in a row
    assert not pggrammar.heavy("SELECT 1" + "/**/ " * 3_000)




def test_adjacent_comments_do_not_stall_the_gateway(live: LiveServer) -> None:
    """40,000 ``/**/``: libpg_query rescans the run of operator characters at every comment start (quadratic,
    without releasing the interpreter lock); it froze every endpoint for 27 s."""
    response = _answers_while_parsing(live, "SELECT 1 AS x" + "/**/" * 40_000, timeout_ms=4_000)
    if response.status_code == 200:  # a machine fast enough to parse it within the time limit
        assert response.json()["rows"] == [{"x": 1}]
    else:
        _assert_timeout(response)


def test_nested_comments_do_not_stall_the_gateway(live: LiveServer) -> None:
    response = _answers_while_parsing(live, "SELECT 1 AS x " + "/*" * 40_000 + "*/" * 40_000, timeout_ms=4_000)
    if response.status_code == 200:
        assert response.json()["rows"] == [{"x": 1}]
    else:
        _assert_timeout(response)


def test_a_whole_body_of_comments_is_stopped_at_its_deadline(live: LiveServer) -> None:
    """1 MiB of ``/**/`` (about 20 minutes of libpg_query): the parser process is killed at the deadline, and
    the next large statement is read by a new one, with PostgreSQL's own error at its position."""
    sql = "SELECT 1 AS x" + "/**/" * ((BODY_SQL - 13) // 4)
    _assert_timeout(_answers_while_parsing(live, sql, timeout_ms=3_000))
    _wait_for(lambda: not _in_parser(), "the parser process to be free again", within=10)
    _good_requests(live)
    large = "SELECT 1 AS x\n" + "-- padding\n" * 500 + "FROM (SELECT 1) AS user"  # over INLINE_CHARS
    with live.client(GOOD, timeout=PATIENCE) as client:
        response = client.post("/v1/query", json={"sql": large})
    error = response.json()["error"]
    assert (response.status_code, error["code"], error["sqlstate"], error["line"], error["column"]) == (
        400,
        "syntax_error",
        "42601",
        502,
        len("FROM (SELECT 1) AS ") + 1,
    ), error
    assert error["message"] == 'syntax error at or near "user"', error


def test_ten_hostile_clients_do_not_take_every_worker(live: LiveServer) -> None:
    """Ten large hostile statements at once (8 workers): ``large_statements`` (1) of them is planned at a time,
    the others wait for their turn outside the worker slots, so SELECT 1 still gets a worker."""
    flights = [_launch(live, {"sql": "SELECT 1 AS x" + "/**/" * 40_000, "timeout_ms": 5_000}) for _ in range(10)]
    _wait_for(lambda: _in_parser() or not all(f.running() for f in flights), "a hostile statement in the parser")
    assert all(f.running() for f in flights)
    _good_requests(live)
    assert sum(f.running() for f in flights) >= 8, "the good requests waited for the hostile ones"
    for flight in flights:
        response = flight.result()
        assert response.status_code in (200, 408, 503), response.text[:300]
        if response.status_code == 503:
            assert "are being planned and none finished within 5 s" in response.json()["error"]["message"]


# ------------------------------------------------------------------------------------------ connections


def _nofile() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


@contextlib.contextmanager
def _idle(port: int, count: int, sources: int) -> Iterator[list[socket.socket]]:
    """``count`` TCP connections that never send a byte, from ``sources`` loopback addresses (127.0.0.2...)."""
    sockets: list[socket.socket] = []
    try:
        for i in range(count):
            sock = socket.socket()
            sockets.append(sock)
            sock.bind((f"127.0.0.{2 + i % sources}", 0))
            sock.connect(("127.0.0.1", port))
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


def _still_open(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server has not closed (polled without blocking)."""
    count = 0
    for sock in sockets:
        sock.setblocking(False)
        try:
            count += sock.recv(1) != b""
        except BlockingIOError:
            count += 1
        except OSError:
            pass
    return count


@pytest.mark.parametrize("sources", [1, 40])
def test_idle_connections_without_a_token_do_not_lock_clients_out(live: LiveServer, sources: int) -> None:
    """2,000 connections that never send a request (max_connections is 2,000): from one address (its cap on
    connections without a token closes its oldest), and from 40 addresses (the global cap is full: a new
    connection closes the oldest one without a token instead of being refused)."""
    count = min(2000, (_nofile() - 200) // 2)  # both ends of each connection live in this process
    assert count >= 500, f"the test process may open only {_nofile()} files (ulimit -n)"
    port = int(live.url.rsplit(":", 1)[1])
    with _idle(port, count, sources) as sockets:
        _good_requests(live)
        _good_requests(live)
        if sources == 1:  # the address's cap (max_connections_per_address) closed its oldest
            _wait_for(lambda: _still_open(sockets) <= 256, "the address's oldest connections to be closed")
        else:  # the good requests' connections took the place of as many idle ones, no more
            assert _still_open(sockets) >= count - 10


def test_the_open_file_limit_is_raised_to_fit_the_connections_or_the_cap_lowered() -> None:
    """With ``ulimit -n`` 1024 (a common default) 2,000 connections could not be accepted: asyncio stops accepting
    for a second at every EMFILE, whoever connects. The soft limit is raised to fit; a hard limit too low lowers
    the cap instead, with a warning."""
    code = (
        "import resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, int(sys.argv[1])))\n"
        "from lakegate.gateway.http import fit_open_files\n"
        "print(fit_open_files(2000), resource.getrlimit(resource.RLIMIT_NOFILE)[0])\n"
    )
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 2512:
        pytest.skip(f"the hard open-file limit ({hard}) is below 2,512")
    raised = subprocess.run([sys.executable, "-c", code, "2512"], capture_output=True, text=True, check=True)
    assert raised.stdout.split() == ["2000", "2512"]
    capped = subprocess.run([sys.executable, "-c", code, "1024"], capture_output=True, text=True, check=True)
    assert capped.stdout.split() == ["512", "1024"]
    assert "max_connections lowered from 2000 to 512" in capped.stderr


def _half_open(port: int, count: int, head: bytes) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(head)
        sockets.append(sock)
    return sockets


def _wait_closed(sockets: list[socket.socket], within: float) -> int:
    """How many of ``sockets`` are still open after ``within`` seconds (polled)."""
    deadline = time.monotonic() + within
    left = _still_open(sockets)
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = _still_open(sockets)
    return left


@pytest.fixture
def capped(pg_dsn: str, lake_dir: Path) -> Iterator[LiveServer]:
    settings = gateway_settings(pg_dsn, lake_dir, tokens=[GOOD], max_connections=20, read_timeout="30s")
    with live_server(settings) as server:
        yield server


def test_at_the_cap_a_new_connection_closes_the_oldest_waiting_one(capped: LiveServer) -> None:
    """20 connections (the cap) that sent half a request head: five more close the five oldest of them, and a
    client with a token still gets in. Before, the new ones were refused: the lockout."""
    port = int(capped.url.rsplit(":", 1)[1])
    held = _half_open(port, 20, b"GET /healthz HTTP/1.1\r\n")
    extra: list[socket.socket] = []
    try:
        _wait_for(lambda: len(capped.server.server_state.connections) == 20, "the 20 connections to be open")
        extra = _half_open(port, 5, b"")
        assert _wait_closed(held[:5], within=10) == 0  # read_timeout (30 s) would close them later
        assert _still_open(held[5:]) == 15 and _still_open(extra) == 5
        _good_requests(capped)
    finally:
        for sock in held + extra:
            sock.close()


def test_at_the_cap_with_every_connection_working_a_new_one_is_refused(capped: LiveServer) -> None:
    """20 connections each in a request (an authenticated head, its body never sent): nothing may be closed to
    make room, so a new connection is refused at once, as before; they end at read_timeout (408)."""
    port = int(capped.url.rsplit(":", 1)[1])
    head = (
        "POST /v1/query HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {GOOD}\r\nContent-Length: 100\r\n\r\n"
    ).encode()
    working = _half_open(port, 20, head)
    extra: list[socket.socket] = []
    try:
        _wait_for(lambda: len(capped.server.server_state.connections) == 20, "the 20 connections to be open")
        extra = _half_open(port, 3, b"")
        assert _wait_closed(extra, within=PATIENCE) == 0
        assert _still_open(working) == 20
    finally:
        for sock in working + extra:
            sock.close()

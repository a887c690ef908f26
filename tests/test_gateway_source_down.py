"""A PostgreSQL source that is down answers a 503 naming it, never a 408 about planning (issue 27.5), over real
HTTP to a real gateway: one source refuses connections (nothing listens on its port), one accepts TCP and never
answers (a host that hangs). Queries on the lake alone still answer; a missing lake table is a 404 that says the
source could not be searched; no answer and no log line shows the source's connection string.

Nothing here is timed: a request whose time limit is shorter than the source's connect timeout must end with the
source's 503 rather than the limit's 408, which it can only do if the wait for a session is bounded by the limit.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

from lakegate.connectors.iceberg import catalog as lake_catalog
from tests.gateway_fixtures.harness import LiveServer, gateway_settings, live_server

TOKEN = "source-down-token"
SECRET = "Pw-never-shown-7f3a"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says a word (a hung server, a firewall that drops replies)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield int(server.getsockname()[1])
    server.close()
    for conn in held:
        conn.close()


def _live(dsn: str, lake_dir: Path) -> Iterator[LiveServer]:
    settings = gateway_settings(dsn, lake_dir, tokens=[TOKEN], timeout="1500ms")
    catalog = lake_catalog.from_settings(settings.lake)
    catalog.create_namespace("public")
    facts = catalog.create_table("public.facts", pa.schema([("id", pa.int64())]))
    facts.append(pa.table({"id": [1, 2, 3]}))
    with live_server(settings) as live:
        yield live


@pytest.fixture(scope="module", params=["refused", "silent"])
def live(
    request: pytest.FixtureRequest, silent_port: int, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LiveServer]:
    port = _free_port() if request.param == "refused" else silent_port
    dsn = f"host=127.0.0.1 port={port} dbname=app user=reader password={SECRET} connect_timeout=4"
    yield from _live(dsn, tmp_path_factory.mktemp(f"down-{request.param}"))


def _post(live: LiveServer, sql: str) -> tuple[int, dict[str, object]]:
    with live.client(TOKEN) as client:
        response = client.post("/v1/query", json={"sql": sql})
    return response.status_code, response.json()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM pg.public.t",
        "SELECT count(*) FROM public.t",
        "SELECT 1",
        "SELECT f.id FROM lake.public.facts f JOIN pg.public.t USING (id)",
    ],
)
def test_a_query_on_a_source_that_is_down_is_a_503_naming_it(live: LiveServer, sql: str) -> None:
    status, body = _post(live, sql)
    error = body["error"]
    assert isinstance(error, dict)
    assert (status, error["code"]) == (503, "unavailable"), body
    message = str(error["message"])
    assert "PostgreSQL source 'pg'" in message and (
        "cannot be reached" in message or "no session within" in message
    )
    assert SECRET not in message and "host=" not in message


def test_lake_queries_answer_while_a_source_is_down(live: LiveServer) -> None:
    status, body = _post(live, "SELECT sum(id) AS s FROM lake.public.facts")
    assert status == 200 and body["rows"] == [{"s": 6}], body


def test_a_missing_lake_table_says_the_source_could_not_be_searched(live: LiveServer) -> None:
    status, body = _post(live, "SELECT * FROM lake.public.nope")
    error = body["error"]
    assert isinstance(error, dict) and status == 404 and error["sqlstate"] == "42P01", body
    assert error["message"] == (
        "table lake.public.nope does not exist in any source (searched lake); source pg could not be read (unavailable)"
    )


def test_no_log_line_shows_the_connection_string(
    silent_port: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    dsn = f"host=127.0.0.1 port={_free_port()} dbname=app user=reader password={SECRET} connect_timeout=4"
    with caplog.at_level(logging.INFO):
        for live in _live(dsn, tmp_path):
            assert _post(live, "SELECT * FROM pg.public.t")[0] == 503
    text = "\n".join(record.getMessage() for record in caplog.records)
    assert "is unavailable to DuckDB" in text  # the operator is told
    assert SECRET not in text and "user=reader" not in text and "host=127.0.0.1 " not in text

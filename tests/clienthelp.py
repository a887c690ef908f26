"""The environment of the client tests: a real PostgreSQL database with the demo schema (``sql/schema.sql``)
and seed rows, the real ingest worker run in two phases (so that the lake has an earlier snapshot to travel
to), and ``lakegate serve`` as a subprocess on a free port with a token.

Built once per test session (the first test module that asks builds it; the others reuse it) because the
client, CLI and Redash tests only read. Teardown at the end of the session."""

from __future__ import annotations

import datetime
import os
import socket
import subprocess
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.gateway_fixtures.harness import database, gateway_settings
from tests.lakehelp import running_worker, wait_caught_up, wait_for
from tests.procs import Proc, write_config

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "client-test-token"
SLOT = "lakegate_client_tests"
TABLES = ["public.users", "public.transactions", "public.transaction_metadata", "public.vals"]

SEED = """
INSERT INTO users (id, email, full_name, country, profile, registered_at) VALUES
  (1, 'ada@example.com', 'Ada Lovelace', 'GB', '{"plan": "pro"}', now() - interval '40 days'),
  (2, 'grace@example.com', 'Grace Hopper', 'US', '{"plan": "free"}', now() - interval '3 days'),
  (3, 'linus@example.com', 'Linus Torvalds', 'FI', '{}', now() - interval '20 minutes'),
  (4, 'margaret@example.com', 'Margaret Hamilton', 'US', '{}', now() - interval '5 minutes'),
  (5, 'edsger@example.com', 'Edsger Dijkstra', 'NL', '{}', now() - interval '2 hours');
SELECT setval('users_id_seq', 5);
INSERT INTO transactions (id, user_id, amount, currency, status, created_at) VALUES
  (1, 1, 12.50, 'EUR', 'completed', now() - interval '2 days'),
  (2, 1, 2500.00, 'EUR', 'completed', now() - interval '1 day'),
  (3, 2, 99.99, 'USD', 'pending', now() - interval '3 hours'),
  (4, 3, 15000.00, 'USD', 'pending', now() - interval '10 minutes'),
  (5, 4, 0.01, 'USD', 'failed', now() - interval '4 minutes'),
  (6, 2, 42.00, 'USD', 'completed', now() - interval '2 minutes');
SELECT setval('transactions_id_seq', 6);
INSERT INTO transaction_metadata (transaction_id, channel, ip, device, flagged, reason) VALUES
  (1, 'web', '192.0.2.1', 'firefox', false, NULL),
  (2, 'ios', '198.51.100.7', 'iphone', true, 'suspicious activity'),
  (3, 'api', NULL, NULL, false, NULL),
  (4, 'web', '203.0.113.9', 'chrome', true, 'amount far above the user''s usual');
CREATE TABLE vals (id int PRIMARY KEY, amount numeric(30,8), ratio float8, label text, at timestamptz,
                   day date, raw bytea, flag bool, u uuid);
INSERT INTO vals VALUES
  (1, 12345678901234567890.12345678, 0.1, 'plain', '2024-05-01 12:00:00.123456+02', '2024-05-01', '\\x00ff10',
   true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'),
  (2, -0.00000001, 'NaN', 'quote '' " backslash \\ newline
 tab	end', '1999-12-31 23:59:59+00', '1999-12-31', '', false, NULL),
  (3, NULL, 'Infinity', NULL, NULL, NULL, NULL, NULL, NULL);
"""
# Phase two, after the "earlier snapshot": a status change, an amount correction, a delete (its metadata goes
# by
# cascade), a newly flagged transaction.
CHANGES = """
UPDATE transactions SET status = 'completed', updated_at = now() WHERE id = 3;
UPDATE transactions SET amount = 14999.99, updated_at = now() WHERE id = 4;
DELETE FROM transactions WHERE id = 1;
UPDATE transaction_metadata SET flagged = true, reason = 'suspicious activity' WHERE transaction_id = 3;
"""


@dataclass
class Env:
    url: str
    dsn: str
    token: str
    before_changes: datetime.datetime  #: a time between the two ingest phases (UTC)
    gateway: Proc
    workdir: Path

    def pg(self) -> psycopg.Connection:
        return psycopg.connect(self.dsn, autocommit=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


_ENV: dict[str, Env] = {}


def client_env(
    request: pytest.FixtureRequest, pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Env:
    """The session's environment (see the module docstring); built on first use."""
    if "env" in _ENV:
        return _ENV["env"]
    stack = ExitStack()
    request.addfinalizer(stack.close)  # a session fixture's finalizer: runs before pg_server's teardown
    workdir = tmp_path_factory.mktemp("client")
    dsn = stack.enter_context(database(pg_server))
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((ROOT / "sql" / "schema.sql").read_text())
        conn.execute(SEED)
        port = free_port()
        settings = gateway_settings(dsn, workdir / "lake", TABLES, tokens=[TOKEN], port=port, timeout="20s")
        # Slots are cluster-wide and this database lives for the whole session: a name of its own, and the
        # slot dropped once the lake is written (the gateway does not need it), so that other tests can use
        # the default slot name.
        settings.sources[0].slot = SLOT
        with running_worker(settings):
            wait_caught_up(conn, SLOT)
            time.sleep(1.2)  # snapshot timestamps are in ms; leave a clear gap around the "before" instant
            before = datetime.datetime.now(datetime.UTC)
            time.sleep(1.2)
            conn.execute(CHANGES)
            wait_caught_up(conn, SLOT)
        # the walsender of the stopped worker may take a moment to exit and release the slot
        inactive = "SELECT NOT active FROM pg_replication_slots WHERE slot_name = %s"
        wait_for(lambda: conn.execute(inactive, (SLOT,)).fetchone() == (True,), 30, "the slot to be released")
        conn.execute("SELECT pg_drop_replication_slot(%s)", (SLOT,))
    config = write_config(settings, workdir / "lakegate.toml")
    gateway = Proc(["serve", "--config", str(config)], workdir / "gateway.log")
    stack.callback(_stop, gateway)
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: _healthy(url) or gateway.popen.poll() is not None, 60, "lakegate serve to answer")
    assert _healthy(url), gateway.output()[-3000:]
    _ENV["env"] = Env(url, dsn, TOKEN, before, gateway, workdir)
    stack.callback(_ENV.clear)
    return _ENV["env"]


def _stop(proc: Proc) -> None:
    proc.signal(15)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def run_sql(
    env: Env,
    *args: str,
    stdin: str | None = None,
    extra_env: dict[str, str] | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """``lakegate sql`` as a subprocess against the environment's gateway (URL and token from the
    environment)."""
    environ = {**os.environ, "LAKEGATE_URL": env.url, "LAKEGATE_TOKEN": env.token, **(extra_env or {})}
    environ.pop("PAGER", None)
    return subprocess.run(
        [sys.executable, "-m", "lakegate", "sql", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=environ,
        timeout=timeout,
        cwd=env.workdir,
    )

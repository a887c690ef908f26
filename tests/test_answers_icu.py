"""Issue 10.4: text in an ICU collation orders on the lake route as its source orders it. A PostgreSQL built with
ICU (the test session's embedded one is built without: this one is Debian's, found on the machine, skipped with
the reason when there is none) holds text in ICU collations; the real ingest replicates it; ``icu.sql`` runs on
PostgreSQL and on both routes, compared row by row in order. The data are words that linguistic collations order
differently from bytes, and random strings of letters, marks, digits, punctuation and scripts."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.answers_harness import Tally, read_corpus, run_corpus
from tests.gateway_fixtures.harness import database, gateway_settings, live_server
from tests.lakehelp import running_worker, wait_caught_up

TABLES = {"words_icu"}
COLLATIONS = ("en-x-icu", "und-x-icu", "sv-x-icu", "de-x-icu", "tr-x-icu")
_ALPHABET = list("aAbBcCeEéÉèiIıİoOøØœuUüÜßsStTzZ0129 -_.,'!~") + [
    "\u0301", "\u0308", "\u030a", "ﬁ", "ǅ", "Å", "Ω", "ω", "ж", "Ж", "中", "文", "😀", "ð", "þ", "æ", "Æ", "å",
    "ä", "ö", "ñ", "ç", "ł", "ş", "\u00a0", "ア", "あ", "가", "½",
]  # fmt: skip


def _icu_postgres() -> Path | None:
    """The bin directory of a PostgreSQL built with ICU on this machine (Debian's packages)."""
    for bindir in sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True):
        config = bindir / "pg_config"
        if (bindir / "postgres").exists() and config.exists():
            flags = subprocess.run([str(config), "--configure"], capture_output=True, text=True).stdout
            if "--with-icu" in flags:
                return bindir
    return None


class IcuPostgres:
    """A throw-away server of that PostgreSQL in a temporary directory, listening on a socket there only."""

    def __init__(self, bindir: Path) -> None:
        self.bindir, self.root = bindir, Path(tempfile.mkdtemp(prefix="lakegate-icu-"))
        self.user = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        if self.user:
            shutil.chown(self.root, "postgres")
        data = self.root / "data"
        self._run(
            "initdb", "-D", str(data), "-E", "UTF8", "--locale=C.UTF-8", "-A", "trust", "-U", "postgres"
        )
        (data / "postgresql.auto.conf").write_text(
            "wal_level = logical\nfsync = off\nlisten_addresses = ''\n"
            f"unix_socket_directories = '{self.root}'\nport = 5432\n"
        )
        self._run("pg_ctl", "-D", str(data), "-l", str(self.root / "log"), "-w", "start")

    def _run(self, program: str, *args: str) -> None:
        subprocess.run([*self.user, str(self.bindir / program), *args], check=True, capture_output=True)

    def dsn(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"host={self.root} dbname={dbname} user={user}"

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


def _words() -> list[str]:
    rng = random.Random(10)
    fixed = ["a", "B", "b", "A", "é", "e", "É", "a b", "ab", "a-b", "_a", " a", "1", "10", "2", "ä", "ß", "ss",
             "SS", "", "ﬁ", "fi", "Å", "Å", "å", "ǅ", "😀", "ø", "œ", "oe", "co-op", "coop", "ı", "I", "İ", "i",
             "résumé", "resume", "Resume", "naïve", "naive", "Ω", "ω"]  # fmt: skip
    rand = {"".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 5))) for _ in range(400)}
    return fixed + sorted(rand - set(fixed))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[psycopg.Connection, httpx.Client]]:
    bindir = _icu_postgres()
    if bindir is None:
        pytest.skip("no PostgreSQL built with ICU on this machine (Debian's postgresql package has one)")
    server: Any = IcuPostgres(bindir)
    try:
        with database(server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
            columns = ", ".join(f'c{i} text COLLATE "{name}"' for i, name in enumerate(COLLATIONS))
            conn.execute(f"CREATE TABLE words_icu (id int PRIMARY KEY, {columns})")
            with conn.cursor() as cur:
                rows = [(i, *[w] * len(COLLATIONS)) for i, w in enumerate(_words())] + [(-1, *[None] * 5)]
                cur.executemany(f"INSERT INTO words_icu VALUES ({', '.join(['%s'] * 6)})", rows)
            settings = gateway_settings(dsn, tmp_path_factory.mktemp("icu"), ["public.words_icu"])
            with running_worker(settings):
                wait_caught_up(conn)
            with live_server(settings) as live, live.client() as client:
                yield conn, client
    finally:
        server.stop()


def test_icu_collations_order_as_postgresql(setup: tuple[psycopg.Connection, httpx.Client]) -> None:
    conn, client = setup
    row = conn.execute("SELECT collversion FROM pg_collation WHERE collname = 'en-x-icu'").fetchone()
    version = row[0] if row else "unknown"
    queries = read_corpus(["icu.sql"])
    tally = Tally()
    run_corpus(queries, conn, client, TABLES, tally)
    print("\n" + tally.report(f"ICU collations (version {version}), {len(queries)} queries"))
    assert not tally.differing, f"{len(tally.differing)} silent differences:\n  " + "\n  ".join(
        tally.differing
    )
    assert tally.outcomes["lake"]["identical"] >= len(queries) * 2 // 3

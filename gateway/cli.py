"""``lakegate sql``: a psql-style client of the gateway, built on :mod:`lakegate.gateway.client` (HTTP + Arrow only).

Interactive with a terminal (readline history in ``~/.lakegate_history`` with multi-line statements as one
entry, Tab completion of keywords and the gateway's names, results taller than the terminal through a pager;
statements end at ``;`` and may span lines), or running ``-c SQL`` / ``-f FILE`` / standard input. The input
loop and the display are in :mod:`~lakegate.gateway.cli_session`, the backslash commands (psql's ``\\x \\g \\e
\\i \\watch \\d \\dt \\pset``, ...) in :mod:`~lakegate.gateway.cli_commands`. Output: psql's aligned tables, or
``--format csv|json``.

Ctrl-C while a query runs closes its HTTP response; the gateway sees the client go and cancels the engine
query. At the prompt it only clears the input; in a script it stops the script (as psql does).

Exit status, as psql's: 0 finished normally; 1 a fatal error of its own (file not found, bad option) or, with
``-c``, a failed statement; 2 the gateway could not be reached or refused the token, and the session was not
interactive; 3 a script stopped on an error (``--on-error-stop``) or on Ctrl-C."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from lakegate.gateway import cli_format as fmt
from lakegate.gateway import cli_readline, client
from lakegate.gateway.cli_commands import COMMANDS
from lakegate.gateway.cli_session import (
    END,
    EXIT_BADCONN,
    EXIT_FAIL,
    EXIT_OK,
    EXIT_USER,
    Session,
    Stop,
    connection_failed,
)
from lakegate.gateway.client_sql import only_comments, split_statements


class _Script(argparse.Action):
    """-c and -f in the order given, in one list."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        items = getattr(namespace, self.dest, None) or []
        items.append(("c" if option_string == "-c" or option_string == "--command" else "f", values))
        setattr(namespace, self.dest, items)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--url", help="gateway URL (default $LAKEGATE_URL, else http://127.0.0.1:8080)")
    parser.add_argument("--token", help="gateway token (default $LAKEGATE_TOKEN)")
    parser.add_argument(
        "-c",
        "--command",
        dest="script",
        action=_Script,
        metavar="SQL",
        help="run SQL (or one backslash command) and exit; may be repeated",
    )
    parser.add_argument(
        "-f",
        "--file",
        dest="script",
        action=_Script,
        metavar="FILE",
        help="run the statements in FILE ('-' = standard input) and exit; may be repeated",
    )
    parser.add_argument("--format", choices=fmt.FORMATS, default=fmt.ALIGNED, help="output format")
    parser.add_argument("-x", "--expanded", action="store_true", help="expanded display (like \\x)")
    parser.add_argument("-o", "--output", metavar="FILE", help="write results to FILE (like \\o)")
    parser.add_argument("--max-rows", type=int, help="row cap per query (at most the server's)")
    parser.add_argument(
        "--timeout", type=float, metavar="SECONDS", help="time limit per query (at most the server's)"
    )
    parser.add_argument(
        "--time-zone", metavar="ZONE", help="session time zone, e.g. Europe/Paris (like SET TIME ZONE)"
    )
    parser.add_argument(
        "--on-error-stop",
        action="store_true",
        help="stop a script at the first failing statement (exit status 3)",
    )
    parser.error = _usage_error(parser)  # type: ignore[method-assign,assignment]


def _usage_error(parser: argparse.ArgumentParser) -> Callable[[str], NoReturn]:
    def error(message: str) -> NoReturn:  # psql exits 1 on a bad option; 2 means "connection went bad"
        parser.print_usage(sys.stderr)
        print(f"lakegate sql: error: {message}", file=sys.stderr)
        sys.exit(EXIT_FAIL)

    return error


def repl(session: Session) -> int:
    readline = cli_readline.setup(session.conn.schema, COMMANDS)
    pending: list[str] = []
    try:
        while not session.quit:
            try:
                line = input(session.prompt())
            except EOFError:
                print("\\q")
                break
            except KeyboardInterrupt:
                print()
                session.buffer, pending = "", []
                continue
            pending.append(line)
            session.line(line)
            if not session.buffer and readline is not None and "".join(pending).strip():
                readline.add_history("\n".join(pending))  # a statement typed over several lines: one entry
                pending = []
            elif not session.buffer:
                pending = []
    finally:
        if readline is not None:
            cli_readline.save_history(readline)
    return EXIT_OK


def _banner(session: Session) -> int | None:
    """Check the gateway answers (and takes the token) before the first prompt, as psql connects first."""
    try:
        with session.conn.cursor() as cursor:
            sources = [row[0] for row in cursor.execute("SHOW SOURCES").fetchall()]
    except client.Error as exc:
        for line in fmt.error_lines(exc.message, exc.code, None, None, None):
            print(line, file=sys.stderr)
        return EXIT_BADCONN if connection_failed(exc) else EXIT_FAIL
    print(f"lakegate sql: {session.conn.url} (sources: {', '.join(sources)})")
    print('Type "\\?" for help, "\\q" to quit.')
    return None


def _run_scripts(session: Session, scripts: list[tuple[str, str]]) -> int:
    """-c and -f in order. Exit status 1 when a -c statement failed (psql's rule); a file's errors count
    only with --on-error-stop."""
    only_commands = all(kind == "c" for kind, _ in scripts)
    try:
        for kind, value in scripts:
            if kind == "c":
                _run_command(session, value)
                continue
            try:
                text = sys.stdin.read() if value == "-" else Path(value).read_text(encoding="utf-8")
            except OSError as exc:
                print(f"lakegate sql: error: {value}: {exc.strerror}", file=sys.stderr)
                return EXIT_FAIL
            session.feed(text)
    except Stop as stop:
        if stop.status != END:
            return stop.status
    return EXIT_FAIL if session.failed and only_commands else EXIT_OK


def _run_command(session: Session, text: str) -> None:
    if text.lstrip().startswith("\\"):
        session.command(text.strip())
        return
    statements, rest = split_statements(text)
    if rest.strip() and not only_comments(rest):
        statements.append(rest.strip())
    for statement in statements:
        session.statement(statement)


def run(args: argparse.Namespace) -> int:
    """``lakegate sql``; returns the exit status."""
    try:
        conn = client.connect(
            args.url, args.token, timeout=args.timeout, max_rows=args.max_rows, time_zone=args.time_zone
        )
    except client.Error as exc:
        print(f"lakegate sql: error: {exc.message}", file=sys.stderr)
        return EXIT_FAIL
    scripts: list[tuple[str, str]] = args.script or []
    interactive = not scripts and sys.stdin.isatty()
    if interactive:
        # Ctrl-C cancels the running query, as in psql, even when started from a shell that ignores SIGINT for
        # its background jobs (Python then leaves SIGINT ignored)
        signal.signal(signal.SIGINT, signal.default_int_handler)
    session = Session(conn, args, interactive, COMMANDS)
    try:
        if scripts:
            return _run_scripts(session, scripts)
        if interactive:
            return _banner(session) or repl(session)
        session.feed(sys.stdin.read())
        return EXIT_OK
    except Stop as stop:
        return EXIT_OK if stop.status == END else stop.status
    except KeyboardInterrupt:
        return EXIT_USER
    except BrokenPipeError:  # e.g. piped into head: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    finally:
        session.close()
        conn.close()

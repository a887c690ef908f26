"""``lakegate sql``: a psql-style client of the gateway, built on :mod:`lakegate.gateway.client` (HTTP + Arrow only).

Interactive with a terminal (readline history in ``~/.lakegate_history``, statements end at ``;`` and may span
lines), or running ``-c SQL`` / ``-f FILE`` / standard input. Backslash commands: ``\\x \\timing \\dt \\d \\dn
\\l \\o \\? \\q``. Output: psql's aligned tables, or ``--format csv|json``.

Ctrl-C while a query runs closes its HTTP response; the gateway sees the client go and cancels the engine
query. At the prompt it only clears the input; in a script it stops the script (as psql does).

Exit status, as psql's: 0 finished normally; 1 a fatal error of its own (file not found, bad option) or, with
``-c``, a failed statement; 2 the gateway could not be reached or refused the token, and the session was not
interactive; 3 a script stopped on an error (``--on-error-stop``) or on Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import os
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TextIO

from lakegate.gateway import cli_format as fmt
from lakegate.gateway import client
from lakegate.gateway.client_sql import is_open, only_comments, split_statements

EXIT_OK, EXIT_FAIL, EXIT_BADCONN, EXIT_USER = 0, 1, 2, 3
END = -1  #: Stop(END): \\q in a script, a normal end
HISTORY = Path("~/.lakegate_history")
HISTORY_LENGTH = 2000
PROMPT, CONTINUE, QUOTE = "lakegate=> ", "lakegate-> ", "lakegate'> "
HELP = """General
  \\q                     quit lakegate sql
  \\?                     this help
Informational
  \\l                     list sources (the lake and each PostgreSQL source)
  \\dn                    list schemas
  \\dt [PATTERN]          list tables, e.g. \\dt lake.public.*  or  \\dt *user*
  \\d [NAME]              describe a table (columns, types, key), or list tables
Formatting and output
  \\x [on|off]            expanded display (one record per block)
  \\timing [on|off]       show how long each statement took
  \\o [FILE]              send results to FILE, or back to standard output
SQL: one statement at a time, ended by ';' (PostgreSQL dialect). Tables are source.schema.table:
  SELECT * FROM lake.public.transactions;     the lake (Iceberg, merged current state)
  SELECT * FROM pg.public.users;              live PostgreSQL
  SELECT * FROM lake.public.users FOR TIMESTAMP AS OF now() - INTERVAL '1 hour';   time travel
"""


class Stop(Exception):
    """Stop processing input and exit with ``status`` (``END``: the status of a normal end)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


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


def _connection_failed(exc: client.Error) -> bool:
    if isinstance(exc, client.InterfaceError):
        return exc.status is not None  # an HTTP answer that was not the gateway's
    return isinstance(exc, client.OperationalError) and (exc.code is None or exc.code == "unauthorized")


class Session:
    """Input lines in, results and errors out. Tracks the statement buffer, \\x, \\timing and \\o."""

    def __init__(self, conn: client.Connection, args: argparse.Namespace, interactive: bool) -> None:
        self.conn = conn
        self.format = args.format
        self.expanded = bool(args.expanded)
        self.timing = False
        self.interactive = interactive
        self.on_error_stop = bool(args.on_error_stop)
        self.out: TextIO = sys.stdout
        self.buffer = ""
        self.failed = False
        self.quit = False
        if args.output:
            self._set_output(args.output)

    # ---------------------------------------------------------------------------------------------- input

    def feed(self, text: str) -> None:
        for line in text.split("\n"):
            if self.quit:
                return
            self.line(line)
        self.finish()

    def line(self, line: str) -> None:
        """One input line: a backslash command (at the start of a statement) or more SQL."""
        if not self.buffer.strip() and line.lstrip().startswith("\\"):
            self.command(line.strip())
            return
        self.buffer += line + "\n"
        statements, rest = split_statements(self.buffer)
        self.buffer = "" if not is_open(rest) and only_comments(rest) else rest
        for statement in statements:
            self.statement(statement)

    def finish(self) -> None:
        """End of input: a last statement without ``;`` still runs (as in psql)."""
        rest, self.buffer = self.buffer, ""
        if rest.strip() and not only_comments(rest):
            self.statement(rest.strip())

    def prompt(self) -> str:
        if not self.buffer:
            return PROMPT
        return QUOTE if is_open(self.buffer) else CONTINUE

    # ------------------------------------------------------------------------------------------ statements

    def statement(self, sql: str, title: str = "") -> bool:
        started = time.monotonic()
        cursor = self.conn.cursor()
        try:
            with warnings.catch_warnings():  # a cut result is said once, by the NOTICE of _show
                warnings.simplefilter("ignore", client.Warning)
                cursor.execute(sql)
                self._show(cursor, title)
            return True
        except KeyboardInterrupt:
            cursor.cancel()
            self._fail(client.OperationalError("canceling statement due to user request", code="cancelled"))
            if not self.interactive:
                raise Stop(EXIT_USER) from None
            return False
        except client.Error as exc:
            self._fail(exc, sql)
            return False
        finally:
            cursor.close()
            if self.timing:
                self.err(f"Time: {(time.monotonic() - started) * 1000:.3f} ms")

    def _show(self, cursor: client.Cursor, title: str = "") -> None:
        assert cursor.description is not None
        names = [d[0] for d in cursor.description]
        if self.format == fmt.CSV:
            fmt.csv_rows(self.out, names, iter(lambda: cursor.fetchmany(1000), []))
        elif self.format == fmt.JSON:
            fmt.json_rows(self.out, names, iter(lambda: cursor.fetchmany(1000), []))
        elif self.expanded:
            fmt.expanded(self.out, names, cursor.fetchall())
        else:
            rows = cursor.fetchall()
            fmt.aligned(self.out, names, fmt.numeric_columns(cursor.description), rows, title)
        self.out.flush()
        if cursor.truncated:
            self.err(
                f"NOTICE:  the result was cut at the gateway's row cap ({cursor.rowcount} rows); "
                "add a LIMIT, or raise the cap with --max-rows (up to the server's max_rows)"
            )

    def _fail(self, exc: client.Error, sql: str | None = None) -> None:
        self.failed = True
        for line in fmt.error_lines(exc.message, exc.code, exc.line, exc.column, sql):
            self.err(line)
        if not self.interactive and _connection_failed(exc):
            raise Stop(EXIT_BADCONN)
        if not self.interactive and self.on_error_stop:
            raise Stop(EXIT_USER)

    def err(self, text: str) -> None:
        sys.stdout.flush()
        print(text, file=sys.stderr, flush=True)

    # ---------------------------------------------------------------------------------- backslash commands

    def command(self, line: str) -> None:
        name, _, arg = line[1:].partition(" ")
        arg = arg.strip()
        handler = COMMANDS.get(name.rstrip("+"))
        if handler is None:
            self.failed = True
            self.err(f"invalid command \\{name}\nTry \\? for help.")
            if not self.interactive and self.on_error_stop:
                raise Stop(EXIT_USER)
            return
        handler(self, arg)

    def _toggle(self, current: bool, arg: str, what: str) -> bool:
        value = {"on": True, "off": False, "": not current}.get(arg.lower())
        if value is None:
            self.err(f'unrecognized value "{arg}" for \\{what}: on or off expected')
            return current
        return value

    def _expanded(self, arg: str) -> None:
        self.expanded = self._toggle(self.expanded, arg, "x")
        self.err(f"Expanded display is {'on' if self.expanded else 'off'}.")

    def _timing(self, arg: str) -> None:
        self.timing = self._toggle(self.timing, arg, "timing")
        self.err(f"Timing is {'on' if self.timing else 'off'}.")

    def _quit(self, arg: str) -> None:
        self.quit = True
        if not self.interactive:
            raise Stop(END)

    def _help(self, arg: str) -> None:
        self.out.write(HELP)
        self.out.flush()

    def _output(self, arg: str) -> None:
        self._set_output(arg or None)

    def _set_output(self, path: str | None) -> None:
        if self.out is not sys.stdout:
            self.out.close()
        self.out = sys.stdout
        if path:
            try:
                self.out = open(path, "w", encoding="utf-8")  # noqa: SIM115 - kept open until \o or exit
            except OSError as exc:
                self.failed = True
                self.err(f"lakegate sql: could not open {path}: {exc.strerror}")

    def _sources(self, arg: str) -> None:
        self.statement("SHOW SOURCES", "List of sources")

    def _schemas(self, arg: str) -> None:
        self.statement("SHOW SCHEMAS", "List of schemas")

    def _tables(self, arg: str) -> None:
        try:
            listing = self.conn.schema()
        except client.Error as exc:
            self._fail(exc)
            return
        rows = [row for row in table_rows(listing, self.err) if matches(row, arg)]
        if not rows and arg:
            self.failed = True
            self.err(f'Did not find any tables named "{arg}".')
            return
        names = ["Source", "Schema", "Name", "Type"]
        if self.format == fmt.ALIGNED:
            fmt.aligned(self.out, names, [False] * 4, rows, "List of tables")
        else:
            (fmt.csv_rows if self.format == fmt.CSV else fmt.json_rows)(self.out, names, [rows])
        self.out.flush()

    def _describe(self, arg: str) -> None:
        if not arg:
            self._tables("")
            return
        self.statement(f"DESCRIBE {arg}", f'Table "{arg}"')

    def close(self) -> None:
        self._set_output(None)


COMMANDS: dict[str, Callable[[Session, str], None]] = {
    "q": Session._quit,
    "quit": Session._quit,
    "?": Session._help,
    "x": Session._expanded,
    "timing": Session._timing,
    "o": Session._output,
    "l": Session._sources,
    "dn": Session._schemas,
    "dt": Session._tables,
    "d": Session._describe,
}


def table_rows(listing: dict[str, Any], warn: Callable[[str], None]) -> list[tuple[str, str, str, str]]:
    """(source, schema, name, kind) of every table in a ``GET /v1/schema`` answer."""
    rows = []
    for source in listing.get("sources", []):
        if source.get("error"):
            warn(f"WARNING:  source {source['name']}: {source['error']}")
        for table in source.get("tables", []):
            rows.append((source["name"], table["schema"], table["name"], str(table.get("kind", "table"))))
    return sorted(rows)


def matches(row: tuple[str, str, str, str], pattern: str) -> bool:
    """psql-style pattern: ``*`` and ``?`` wildcards, ``schema.table`` or ``source.schema.table``."""
    if not pattern:
        return True
    parts = [p.strip('"') if p.startswith('"') else p.lower() for p in pattern.split(".")]
    names = list(row[:3])[-len(parts) :] if len(parts) <= 3 else []
    return len(names) == len(parts) and all(
        fnmatch.fnmatchcase(name.lower() if not p.startswith('"') else name, p)
        for name, p in zip(names, parts, strict=True)
    )


# ------------------------------------------------------------------------------------------------- driving


def _readline(interactive: bool) -> Any:
    if not interactive:
        return None
    try:
        import readline
    except ImportError:  # e.g. Windows without pyreadline
        return None
    path = HISTORY.expanduser()
    readline.set_history_length(HISTORY_LENGTH)
    readline.set_auto_history(False)
    with contextlib.suppress(OSError):  # no history yet
        readline.read_history_file(path)
    return readline


def repl(session: Session) -> int:
    readline = _readline(True)
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
                readline.add_history("\n".join(pending))
                pending = []
            elif not session.buffer:
                pending = []
    finally:
        if readline is not None:
            with contextlib.suppress(OSError):  # e.g. a read-only home
                readline.write_history_file(HISTORY.expanduser())
    return EXIT_OK


def _banner(session: Session) -> int | None:
    """Check the gateway answers (and takes the token) before the first prompt, as psql connects first."""
    try:
        with session.conn.cursor() as cursor:
            sources = [row[0] for row in cursor.execute("SHOW SOURCES").fetchall()]
    except client.Error as exc:
        for line in fmt.error_lines(exc.message, exc.code, None, None, None):
            print(line, file=sys.stderr)
        return EXIT_BADCONN if _connection_failed(exc) else EXIT_FAIL
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
        conn = client.connect(args.url, args.token, timeout=args.timeout, max_rows=args.max_rows)
    except client.Error as exc:
        print(f"lakegate sql: error: {exc.message}", file=sys.stderr)
        return EXIT_FAIL
    scripts: list[tuple[str, str]] = args.script or []
    interactive = not scripts and sys.stdin.isatty()
    session = Session(conn, args, interactive)
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

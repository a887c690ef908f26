"""The session of ``lakegate sql``: input lines in, results and errors out. It keeps the query buffer, splits
statements at ``;``, finds backslash commands anywhere in a line (outside literals and comments, as psql
does), and shows results: psql's aligned or expanded tables (``\\x auto`` picks per result), through a pager
when they are taller than the terminal, or CSV/JSON.

The backslash commands themselves are in :mod:`lakegate.gateway.cli_commands`; the session gets their table
when it is made, so that this module does not import that one."""

from __future__ import annotations

import argparse
import io
import os
import shutil
import subprocess
import sys
import time
import warnings
from collections.abc import Callable
from typing import TextIO

from lakegate.gateway import cli_format as fmt
from lakegate.gateway import cli_settings, client
from lakegate.gateway.client_sql import CODE, is_open, only_comments, segments, split_statements

EXIT_OK, EXIT_FAIL, EXIT_BADCONN, EXIT_USER = 0, 1, 2, 3
END = -1  #: Stop(END): \\q in a script, a normal end
PROMPT, CONTINUE, QUOTE = "lakegate=> ", "lakegate-> ", "lakegate'> "
AUTO = "auto"
Command = Callable[["Session", str], None]


class Stop(Exception):
    """Stop processing input and exit with ``status`` (``END``: the status of a normal end)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


def connection_failed(exc: client.Error) -> bool:
    if isinstance(exc, client.InterfaceError):
        return exc.status is not None  # an HTTP answer that was not the gateway's
    return isinstance(exc, client.OperationalError) and (exc.code is None or exc.code == "unauthorized")


def command_start(buffer: str, line: str) -> int:
    """Where a backslash command starts in ``line`` (which continues ``buffer``), or -1: the first backslash
    that is SQL code, not inside a literal, a quoted name or a comment."""
    offset = 0
    for kind, text in segments(buffer + line):
        end = offset + len(text)
        if kind == CODE and end > len(buffer):
            at = text.find("\\", max(0, len(buffer) - offset))
            if at >= 0:
                return offset + at - len(buffer)
        offset = end
    return -1


class Session:
    """Tracks the query buffer, the previous statement, \\x, \\timing, \\o and the pager."""

    def __init__(
        self,
        conn: client.Connection,
        args: argparse.Namespace,
        interactive: bool,
        commands: dict[str, Command],
    ) -> None:
        self.conn = conn
        self.commands = commands
        self.format = args.format
        self.expanded: bool | str = bool(args.expanded)
        self.timing = False
        self.pager = "on"  #: \\pset pager: on (when taller than the terminal), off, always
        self.interactive = interactive
        self.on_error_stop = bool(args.on_error_stop)
        self.out: TextIO = sys.stdout
        self.buffer = ""
        self.previous = ""  #: the last statement sent (\\g and \\watch with an empty buffer run it again)
        self.failed = False
        self.quit = False
        self.depth = 0  #: \\i nesting
        if args.output:
            self.set_output(args.output)

    # ---------------------------------------------------------------------------------------------- input

    def feed(self, text: str) -> None:
        for line in text.split("\n"):
            if self.quit:
                return
            self.line(line)
        self.finish()

    def line(self, line: str) -> None:
        """One input line: SQL, and a backslash command from the first backslash outside literals on."""
        at = command_start(self.buffer, line)
        sql, command = (line, "") if at < 0 else (line[:at], line[at:].strip())
        if sql.strip() or (self.buffer and not command):  # a command's own line is not part of the query
            self.buffer += sql + "\n"
        statements, rest = split_statements(self.buffer)
        self.buffer = "" if not is_open(rest) and only_comments(rest) else rest
        for statement in statements:
            self.statement(statement)
        if command:
            self.command(command)

    def finish(self) -> None:
        """End of input: a last statement without ``;`` still runs (as in psql)."""
        rest, self.buffer = self.buffer, ""
        if rest.strip() and not only_comments(rest):
            self.statement(rest.strip())

    def prompt(self) -> str:
        if not self.buffer:
            return PROMPT
        return QUOTE if is_open(self.buffer) else CONTINUE

    def take_buffer(self) -> str:
        """The query buffer as a statement (emptied), or else the previous statement (psql's \\g rule)."""
        sql, self.buffer = self.buffer.strip().rstrip(";").strip(), ""
        if sql and not only_comments(sql):
            return sql
        return self.previous

    # ------------------------------------------------------------------------------------------ statements

    def statement(self, sql: str, title: str = "", out: TextIO | None = None) -> bool:
        setting = cli_settings.parse(sql)
        if setting is not None:
            return self.setting(*setting, out=out or self.out)
        self.previous = sql
        started = time.monotonic()
        cursor = self.conn.cursor()
        try:
            with warnings.catch_warnings():  # a cut result is said once, by the NOTICE of show()
                warnings.simplefilter("ignore", client.Warning)
                cursor.execute(sql)
                self.show(cursor, title, out or self.out)
            return True
        except KeyboardInterrupt:
            cursor.cancel()
            self.fail(client.OperationalError("canceling statement due to user request", code="cancelled"))
            if not self.interactive:
                raise Stop(EXIT_USER) from None
            return False
        except client.Error as exc:
            self.fail(exc, sql)
            return False
        finally:
            cursor.close()
            if self.timing:
                self.err(f"Time: {(time.monotonic() - started) * 1000:.3f} ms")

    def setting(self, action: str, zone: str | None, out: TextIO) -> bool:
        """SET TIME ZONE / SHOW timezone / \\timezone: the zone is checked by the gateway (a query in it) and
        then sent with every query."""
        if action == "show":
            rows: list[tuple[object, ...]] = [(self.conn.time_zone or "(the gateway's [gateway] time_zone)",)]
            if self.format == fmt.CSV:
                fmt.csv_rows(out, ["TimeZone"], iter([rows]))
            elif self.format == fmt.JSON:
                fmt.json_rows(out, ["TimeZone"], iter([rows]))
            else:
                out.write(self.render(["TimeZone"], [False], rows, ""))
            out.flush()
            return True
        before, self.conn.time_zone = self.conn.time_zone, zone
        cursor = self.conn.cursor()
        try:
            cursor.execute("SELECT 1")
        except client.Error as exc:
            self.conn.time_zone = before
            self.fail(exc)
            return False
        finally:
            cursor.close()
        out.write("SET\n")
        out.flush()
        return True

    def show(self, cursor: client.Cursor, title: str, out: TextIO) -> None:
        assert cursor.description is not None
        names = [d[0] for d in cursor.description]
        if self.format == fmt.CSV:
            fmt.csv_rows(out, names, iter(lambda: cursor.fetchmany(1000), []))
        elif self.format == fmt.JSON:
            fmt.json_rows(out, names, iter(lambda: cursor.fetchmany(1000), []))
        else:
            rows = cursor.fetchall()
            self.page(self.render(names, fmt.numeric_columns(cursor.description), rows, title), out)
        out.flush()
        if cursor.truncated:
            self.err(
                f"NOTICE:  the result was cut at the gateway's row cap ({cursor.rowcount} rows); "
                "add a LIMIT, or raise the cap with --max-rows (up to the server's max_rows)"
            )

    def render(
        self, names: list[str], numeric: list[bool], rows: list[tuple[object, ...]], title: str
    ) -> str:
        """An aligned table, or expanded records with \\x on (or with \\x auto when the table is wider than
        the terminal)."""
        text = io.StringIO()
        if self.expanded is True:
            fmt.expanded(text, names, rows)
            return text.getvalue()
        fmt.aligned(text, names, numeric, rows, title)
        table = text.getvalue()
        if self.expanded == AUTO and rows and max(map(len, table.splitlines())) > self.terminal().columns:
            text = io.StringIO()
            fmt.expanded(text, names, rows)
            return text.getvalue()
        return table

    def terminal(self) -> os.terminal_size:
        return shutil.get_terminal_size((80, 24))

    def page(self, text: str, out: TextIO) -> None:
        """Write ``text``, through the pager when it is taller (or wider) than the terminal, as psql does."""
        if self.pager == "off" or out is not sys.stdout or not (self.interactive and sys.stdout.isatty()):
            out.write(text)
            return
        size, lines = self.terminal(), text.splitlines()
        if (
            self.pager != "always"
            and len(lines) < size.lines
            and max(map(len, lines), default=0) <= size.columns
        ):
            out.write(text)
            return
        pager = os.environ.get("LAKEGATE_PAGER") or os.environ.get("PAGER") or "less"
        out.flush()
        try:
            done = subprocess.run(pager, shell=True, input=text, text=True, check=False)  # noqa: S602 - the user's
        except KeyboardInterrupt:  # Ctrl-C in the pager: the prompt comes back
            return
        except OSError as exc:
            done = subprocess.CompletedProcess(pager, 127, stderr=str(exc))
        if done.returncode in (126, 127):  # the shell found no such program: the result is not lost
            self.err(f"lakegate sql: the pager {pager!r} could not run; set PAGER, or \\pset pager off")
            self.pager = "off"
            out.write(text)

    def fail(self, exc: client.Error, sql: str | None = None) -> None:
        self.failed = True
        for line in fmt.error_lines(exc.message, exc.code, exc.line, exc.column, sql):
            self.err(line)
        if not self.interactive and connection_failed(exc):
            raise Stop(EXIT_BADCONN)
        if not self.interactive and self.on_error_stop:
            raise Stop(EXIT_USER)

    def error(self, text: str) -> None:
        """A failed backslash command: said, and stopping a script with --on-error-stop."""
        self.failed = True
        self.err(text)
        if not self.interactive and self.on_error_stop:
            raise Stop(EXIT_USER)

    def err(self, text: str) -> None:
        sys.stdout.flush()
        print(text, file=sys.stderr, flush=True)

    # ---------------------------------------------------------------------------------- backslash commands

    def command(self, line: str) -> None:
        name, _, arg = line[1:].partition(" ")
        handler = self.commands.get(name.rstrip("+"))
        if handler is None:
            self.error(f"invalid command \\{name}\nTry \\? for help.")
            return
        handler(self, arg.strip())

    def set_output(self, path: str | None) -> None:
        if self.out is not sys.stdout:
            self.out.close()
        self.out = sys.stdout
        if path:
            try:
                self.out = open(path, "w", encoding="utf-8")  # noqa: SIM115 - kept open until \o or exit
            except OSError as exc:
                self.error(f"lakegate sql: could not open {path}: {exc.strerror}")

    def close(self) -> None:
        self.set_output(None)

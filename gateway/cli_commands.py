"""The backslash commands of ``lakegate sql``, as psql's: each takes the session and the rest of its line."""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lakegate.gateway import cli_format as fmt
from lakegate.gateway import client
from lakegate.gateway.cli_session import AUTO, END, Session, Stop

MAX_INCLUDE_DEPTH = 16
HELP = """General
  \\q                     quit lakegate sql
  \\?                     this help
Query buffer
  \\g [FILE]              send the query buffer (or the previous query) [and write its result to FILE]
  \\e [FILE]              edit the query buffer (or the previous query, or FILE) with $VISUAL or $EDITOR
  \\i FILE                run the commands of FILE
  \\watch [SEC] [c=N]     run the query buffer (or the previous query) every SEC seconds (default 2) [N times]
Informational
  \\l                     list sources (the lake and each PostgreSQL source)
  \\dn                    list schemas
  \\dt [PATTERN]          list tables, e.g. \\dt lake.public.*  or  \\dt *user*
  \\d [NAME]              describe a table (columns, types, nullability, primary key), or list tables
Formatting and output
  \\x [on|off|auto]       expanded display (one record per block; auto: when a table is wider than the terminal)
  \\pset pager [on|off|always]   page results taller than the terminal ($LAKEGATE_PAGER, $PAGER, else less)
  \\timing [on|off]       show how long each statement took
  \\o [FILE]              send results to FILE, or back to standard output
Session
  \\timezone [ZONE]       show or set the session time zone (also SET TIME ZONE 'ZONE'; SHOW timezone)
SQL: statements end with ';' (PostgreSQL dialect); Tab completes keywords and names. Tables are source.schema.table:
  SELECT * FROM lake.public.transactions;     the lake (Iceberg, merged current state)
  SELECT * FROM pg.public.users;              live PostgreSQL
  SELECT * FROM lake.public.users FOR TIMESTAMP AS OF now() - INTERVAL '1 hour';   time travel
"""


def _toggle(session: Session, current: bool, arg: str, what: str) -> bool:
    value = {"on": True, "off": False, "": not current}.get(arg.lower())
    if value is None:
        session.error(f'unrecognized value "{arg}" for \\{what}: on or off expected')
        return current
    return value


def expanded(session: Session, arg: str) -> None:
    if arg.lower() == AUTO:
        session.expanded = AUTO
        session.err("Expanded display is used automatically.")
        return
    session.expanded = _toggle(session, session.expanded is True, arg, "x")
    session.err(f"Expanded display is {'on' if session.expanded else 'off'}.")


def timing(session: Session, arg: str) -> None:
    session.timing = _toggle(session, session.timing, arg, "timing")
    session.err(f"Timing is {'on' if session.timing else 'off'}.")


def pset(session: Session, arg: str) -> None:
    option, _, value = arg.partition(" ")
    if option != "pager":
        session.error(f'\\pset: unknown option "{option}" (lakegate sql knows: pager)')
        return
    value = value.strip().lower() or ("off" if session.pager != "off" else "on")
    value = {"true": "on", "false": "off", "1": "on", "0": "off"}.get(value, value)
    if value not in ("on", "off", "always"):
        session.error(f'\\pset: unrecognized value "{value}" for "pager": on, off or always expected')
        return
    session.pager = value
    session.err({"on": "Pager is used for long output.", "off": "Pager usage is off.",
                 "always": "Pager is always used."}[value])  # fmt: skip


def timezone(session: Session, arg: str) -> None:
    """\\timezone [ZONE]: the session time zone, or set it (DEFAULT: the gateway's)."""
    if not arg:
        session.setting("show", None, session.out)
        return
    zone = arg.strip("'\"")
    session.setting("set", None if zone.upper() in ("DEFAULT", "LOCAL") else zone, session.out)


def quit_(session: Session, arg: str) -> None:
    session.quit = True
    if not session.interactive:
        raise Stop(END)


def help_(session: Session, arg: str) -> None:
    session.page(HELP, session.out)
    session.out.flush()


def output(session: Session, arg: str) -> None:
    session.set_output(arg or None)


# ------------------------------------------------------------------------------------------- query buffer


def go(session: Session, arg: str) -> None:
    """\\g [FILE]: send the query buffer, or the previous query when the buffer is empty."""
    sql = session.take_buffer()
    if not sql:
        session.error("\\g: there is no query to send (the query buffer is empty)")
        return
    if not arg:
        session.statement(sql)
        return
    try:
        with open(os.path.expanduser(arg), "w", encoding="utf-8") as out:
            session.statement(sql, out=out)
    except OSError as exc:
        session.error(f"lakegate sql: could not open {arg}: {exc.strerror}")


def include(session: Session, arg: str) -> None:
    """\\i FILE: the file's lines as if typed (an unfinished last statement runs at its end)."""
    if not arg:
        session.error("\\i: missing required argument (a file name)")
        return
    if session.depth >= MAX_INCLUDE_DEPTH:
        session.error(f"\\i {arg}: files include each other more than {MAX_INCLUDE_DEPTH} deep; stopped")
        return
    try:
        text = Path(os.path.expanduser(arg)).read_text(encoding="utf-8")
    except OSError as exc:
        session.error(f"lakegate sql: {arg}: {exc.strerror}")
        return
    outer, session.buffer = session.buffer, ""
    session.depth += 1
    try:
        session.feed(text)
    finally:
        session.depth -= 1
        session.buffer = outer


def edit(session: Session, arg: str) -> None:
    """\\e [FILE]: edit the query buffer (or the previous query, or FILE) in $VISUAL or $EDITOR; what comes
    back is the query buffer, and statements it ends with ``;`` run at once, as in psql."""
    editor = os.environ.get("LAKEGATE_EDITOR") or os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    text = session.buffer or (session.previous + "\n" if session.previous else "")
    with tempfile.TemporaryDirectory(prefix="lakegate-") as folder:
        path = Path(os.path.expanduser(arg)) if arg else Path(folder) / "query.sql"
        if not arg:
            path.write_text(text, encoding="utf-8")
        try:
            status = subprocess.call([*shlex.split(editor), str(path)])
            edited = path.read_text(encoding="utf-8")
        except OSError as exc:
            session.error(f"\\e: could not run the editor {editor!r} on {path}: {exc.strerror or exc}")
            return
    if status != 0:
        session.error(
            f"\\e: the editor {editor!r} exited with status {status}; the query buffer is unchanged"
        )
        return
    session.buffer = ""
    for line in edited.rstrip("\n").split("\n"):
        session.line(line)


WATCH = re.compile(r"^(?:(?:i(?:nterval)?=)?(?P<interval>\d+(?:\.\d+)?))?\s*(?:c(?:ount)?=(?P<count>\d+))?$")


def watch(session: Session, arg: str) -> None:
    """\\watch [SEC] [c=N]: run the query again and again, each result under a title with the time, until
    Ctrl-C, a failure or N runs."""
    match = WATCH.match(" ".join(arg.split()))
    if match is None:
        session.error(f'\\watch: invalid arguments "{arg}": \\watch [SECONDS] [c=COUNT]')
        return
    interval = float(match.group("interval") or 2)
    count = int(match.group("count")) if match.group("count") else None
    sql = session.take_buffer()
    if not sql:
        session.error("\\watch cannot be used with an empty query")
        return
    runs = 0
    try:
        while count is None or runs < count:
            if runs:
                time.sleep(interval)
            title = f"{time.strftime('%a %b %d %H:%M:%S %Y')} (every {interval:g}s)"
            runs += 1
            if not session.statement(sql, title=title):
                return
    except KeyboardInterrupt:  # Ctrl-C between two runs ends the watch, as in psql
        if not session.interactive:
            raise Stop(3) from None


# ------------------------------------------------------------------------------------------ informational


def sources(session: Session, arg: str) -> None:
    session.statement("SHOW SOURCES", "List of sources")


def schemas(session: Session, arg: str) -> None:
    session.statement("SHOW SCHEMAS", "List of schemas")


def tables(session: Session, arg: str) -> None:
    try:
        listing = session.conn.schema()
    except client.Error as exc:
        session.fail(exc)
        return
    rows = [row for row in table_rows(listing, session.err) if matches(row, arg)]
    if not rows and arg:
        session.error(f'Did not find any tables named "{arg}".')
        return
    _table(session, ["Source", "Schema", "Name", "Type"], [False] * 4, rows, "List of tables")


def describe(session: Session, arg: str) -> None:
    """\\d NAME: columns, types and nullability, and the primary key under them, as psql shows a table."""
    if not arg:
        tables(session, "")
        return
    try:
        cursor = session.conn.cursor().execute(f"DESCRIBE {arg}")
        columns = cursor.fetchall()
    except client.Error as exc:
        session.fail(exc, f"DESCRIBE {arg}")
        return
    if not columns:
        session.error(f'Did not find any relation named "{arg}".')
        return
    rows = [(name, kind, "" if nullable else "not null") for name, kind, nullable, _ in columns]
    footer = [name for name, _, _, key in columns if key]
    _table(session, ["Column", "Type", "Nullable"], [False] * 3, rows, f'Table "{arg}"',
           ["Indexes:", f"    PRIMARY KEY ({', '.join(footer)})"] if footer else [])  # fmt: skip


def _table(
    session: Session,
    names: list[str],
    numeric: list[bool],
    rows: list[Any],
    title: str,
    footer: list[str] | None = None,
) -> None:
    if session.format == fmt.ALIGNED:
        text = session.render(names, numeric, rows, title)
        if footer:  # psql puts a table's indexes under its columns, before the empty line
            text = text.rstrip("\n").rsplit("\n", 1)[0] + "\n" + "\n".join(footer) + "\n\n"
        session.page(text, session.out)
    else:
        (fmt.csv_rows if session.format == fmt.CSV else fmt.json_rows)(session.out, names, [rows])
    session.out.flush()


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


COMMANDS: dict[str, Callable[[Session, str], None]] = {
    "q": quit_,
    "quit": quit_,
    "?": help_,
    "x": expanded,
    "timing": timing,
    "pset": pset,
    "o": output,
    "g": go,
    "i": include,
    "include": include,
    "e": edit,
    "edit": edit,
    "watch": watch,
    "timezone": timezone,
    "l": sources,
    "dn": schemas,
    "dt": tables,
    "d": describe,
}

"""The terminal side of ``lakegate sql``: readline history kept across sessions with multi-line statements as one
entry, and Tab completion of SQL keywords, backslash commands and the gateway's names (sources, schemas, tables
and columns from ``GET /v1/schema``, read at the first Tab).

Hand-written over the standard library's readline: psql's completion is a C state machine over its grammar;
this one completes words from what the gateway lists, which is what a user reaches for most."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

HISTORY = Path("~/.lakegate_history")
HISTORY_LENGTH = 2000
#: How a newline inside one history entry is written to the file (psql's choice with GNU readline): the file
#: has one entry a line, and a statement typed over several lines comes back as one entry.
NEWLINE_IN_HISTORY = "\x01"
WORD_BREAKS = " \t\n(),;=<>+-*/|'"  # not '.', so that source.schema.table completes as one word

KEYWORDS = tuple(
    """SELECT FROM WHERE GROUP BY ORDER HAVING LIMIT OFFSET JOIN LEFT RIGHT FULL INNER OUTER CROSS ON USING
AS AND OR NOT IN IS NULL LIKE ILIKE BETWEEN CASE WHEN THEN ELSE END DISTINCT UNION INTERSECT EXCEPT ALL WITH
VALUES EXPLAIN SHOW DESCRIBE ASC DESC NULLS FIRST LAST CAST INTERVAL TRUE FALSE COUNT SUM AVG MIN MAX COALESCE
EXISTS OVER PARTITION FILTER FOR TIMESTAMP VERSION OF SOURCES SCHEMAS TABLES LATERAL""".split()  # noqa: SIM905
)


def load_history(readline: Any) -> None:
    readline.set_history_length(HISTORY_LENGTH)
    readline.set_auto_history(False)
    with contextlib.suppress(OSError):  # no history yet
        readline.read_history_file(HISTORY.expanduser())
    for i in range(1, readline.get_current_history_length() + 1):
        item = readline.get_history_item(i)
        if item and NEWLINE_IN_HISTORY in item:
            readline.replace_history_item(i - 1, item.replace(NEWLINE_IN_HISTORY, "\n"))


def save_history(readline: Any) -> None:
    """Write the history with each entry on one line (and leave the entries in memory as they were)."""
    items = [readline.get_history_item(i) for i in range(1, readline.get_current_history_length() + 1)]
    for i, item in enumerate(items):
        if item and "\n" in item:
            readline.replace_history_item(i, item.replace("\n", NEWLINE_IN_HISTORY))
    try:
        with contextlib.suppress(OSError):  # e.g. a read-only home
            readline.write_history_file(HISTORY.expanduser())
    finally:
        for i, item in enumerate(items):
            if item and "\n" in item:
                readline.replace_history_item(i, item)


def schema_words(listing: dict[str, Any]) -> list[str]:
    """Names a query may use, from a ``GET /v1/schema`` answer: sources, ``source.schema``, tables with one,
    two and three parts, and column names."""
    words: set[str] = set()
    for source in listing.get("sources", []):
        words.add(source["name"])
        for table in source.get("tables", []):
            schema = f"{table['schema']}"
            words |= {f"{source['name']}.{schema}", f"{source['name']}.{schema}.{table['name']}"}
            words |= {f"{schema}.{table['name']}", table["name"]}
            words |= {column["name"] for column in table.get("columns", [])}
    return sorted(words)


def candidates(text: str, words: Iterable[str], keywords: Iterable[str] = KEYWORDS) -> list[str]:
    """Completions of ``text``: names as they are, keywords in the case the user is typing (lower case when the
    prefix is lower case, as psql's default)."""
    lower = text.lower()
    found = sorted(
        {w for w in words if w.startswith(text)} | {w for w in words if w.lower().startswith(lower)}
    )
    upper = not text or text != text.lower()
    found += [k if upper else k.lower() for k in keywords if k.lower().startswith(lower)]
    return found


class Completer:
    """readline's completer: the names are read from the gateway at the first Tab (a failure leaves the
    keywords and commands)."""

    def __init__(self, listing: Callable[[], dict[str, Any]], commands: Iterable[str]) -> None:
        self._listing = listing
        self._commands = sorted("\\" + c for c in commands)
        self._words: list[str] | None = None
        self._matches: list[str] = []

    def words(self) -> list[str]:
        if self._words is None:
            try:
                self._words = schema_words(self._listing())
            except Exception:  # noqa: BLE001 - completion must never break the prompt
                self._words = []
        return self._words

    def complete(self, text: str, state: int) -> str | None:
        if state == 0:
            if text.startswith("\\"):
                self._matches = [c for c in self._commands if c.startswith(text)]
            else:
                self._matches = candidates(text, self.words())
        return self._matches[state] if state < len(self._matches) else None


def setup(listing: Callable[[], dict[str, Any]], commands: Iterable[str]) -> Any:
    """readline with history and completion, or None where there is no readline."""
    try:
        import readline
    except ImportError:  # e.g. Windows without pyreadline
        return None
    load_history(readline)
    readline.set_completer(Completer(listing, commands).complete)
    readline.set_completer_delims(WORD_BREAKS)
    readline.parse_and_bind("tab: complete")
    return readline

"""The refusals the differential corpus accepts: a pinned list, ``tests/answers/refusals.txt``.

A refusal (a 400 with SQLSTATE 0A000 in the gateway's own words: :func:`tests.answers_harness.refusal`) is an
accepted outcome only where someone decided it: one line per refused query and route, ``<file>:<line>
<route>[@<time zone>] <the message's stable prefix>``. So a new refusal fails the suite until it is pinned
deliberately, a refusal with other words than its pin fails, and a pinned query now answered identically fails
too: the list only shrinks as the gateway improves. Routes: ``pg`` and ``lake`` (``tests/answers/*.sql``),
``federated`` and ``swapped`` (``federated.sql`` with ``{pg:x}`` on PostgreSQL, and the sides swapped). A pin
without ``@zone`` holds in every time zone the corpus runs in; one with it only in that zone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).parent / "answers"
PINNED = CORPUS / "refusals.txt"
#: Known differences (issue 28: to be fixed, never added to silence a new one): same format, the reason after
#: the route. A pinned difference answered identically (or refused) fails the suite too: delete its line.
KNOWN = CORPUS / "differences.txt"
ROUTES = ("pg", "lake", "federated", "swapped")
_LINE = re.compile(r"(?P<file>[\w.]+\.sql):(?P<line>\d+) (?P<route>\w+)(?:@(?P<zone>\S+))? +(?P<prefix>\S.*)")


@dataclass(frozen=True)
class Pin:
    where: str  #: ``file:line`` of the query in the corpus
    route: str
    zone: str | None  #: None: every time zone
    prefix: str  #: the start of the refusal's message (whitespace runs read as one space)
    line: int  #: its line in refusals.txt

    @property
    def key(self) -> tuple[str, str, str | None]:
        return self.where, self.route, self.zone


def words(message: str) -> str:
    """A message with its whitespace runs as single spaces (what a pin's prefix is compared with)."""
    return re.sub(r"\s+", " ", message).strip()


def read_pins(path: Path = PINNED) -> dict[tuple[str, str, str | None], Pin]:
    """The pinned refusals by (``file:line``, route, zone); a malformed or repeated line is an error."""
    pins: dict[tuple[str, str, str | None], Pin] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.strip()
        if not text or text.startswith("#"):
            continue
        match = _LINE.fullmatch(text)
        if match is None or match["route"] not in ROUTES:
            raise ValueError(
                f"{path.name} line {number}: {text!r} is not '<file>.sql:<line> <route>[@<zone>] <message "
                f"prefix>' with a route among {', '.join(ROUTES)}"
            )
        where = f"{match['file']}:{match['line']}"
        pin = Pin(where, match["route"], match["zone"], words(match["prefix"]), number)
        if pin.key in pins:
            raise ValueError(f"{path.name} line {number} pins {pin.key} again (line {pins[pin.key].line})")
        pins[pin.key] = pin
    return pins


def suggestion(where: str, route: str, zone: str, message: str) -> str:
    """The line that would pin this refusal (its message cut at 100 characters: the stable part, usually)."""
    at = "" if zone == "UTC" else f"@{zone}"
    return f"{where} {route}{at} {words(message)[:100]}"

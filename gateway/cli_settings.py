"""The session settings ``lakegate sql`` keeps itself, as psql's server would: the time zone.

``SET TIME ZONE 'Europe/Paris'``, ``SET timezone TO 'UTC'``, ``SET TIME ZONE DEFAULT`` / ``RESET timezone`` and
``SHOW timezone`` are statements of the session, not queries: the gateway runs no ``SET`` (each request is
independent), so the client keeps the zone and sends it with every query (``"time_zone"``). The gateway checks the
name; ``\\timezone`` does the same as ``SET TIME ZONE``. Pure: parses, never sends.
"""

from __future__ import annotations

import re

#: what a recognised statement asks: ("set", zone or None for the server's default) or ("show", None)
Setting = tuple[str, str | None]

_ZONE = r"(?:'(?P<quoted>(?:[^']|'')*)'|(?P<word>[A-Za-z_][\w/+-]*))"
_SET = re.compile(
    rf"\s*SET\s+(?:SESSION\s+|LOCAL\s+)?(?:TIME\s+ZONE\s+|TIMEZONE\s*(?:TO|=)\s*){_ZONE}\s*;?\s*",
    re.IGNORECASE,
)
_RESET = re.compile(r"\s*RESET\s+(?:TIME\s+ZONE|TIMEZONE)\s*;?\s*", re.IGNORECASE)
_SHOW = re.compile(r"\s*SHOW\s+(?:TIME\s+ZONE|TIMEZONE)\s*;?\s*", re.IGNORECASE)


def parse(sql: str) -> Setting | None:
    """The session setting ``sql`` is, or None when it is a query for the gateway."""
    if _SHOW.fullmatch(sql):
        return "show", None
    if _RESET.fullmatch(sql):
        return "set", None
    match = _SET.fullmatch(sql)
    if match is None:
        return None
    if match.group("quoted") is not None:
        return "set", match.group("quoted").replace("''", "'")
    word = match.group("word")
    return "set", None if word.upper() in ("DEFAULT", "LOCAL") else word

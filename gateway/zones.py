"""The session time zone of a query: a name of the IANA time zone database (``Europe/Paris``, ``UTC``), checked
against Python's copy of it (``zoneinfo``/``tzdata``) before it reaches an engine, so that what both engines
are told is a plain known name (it is interpolated into ``SET LOCAL TimeZone`` and into DuckDB SQL).

PostgreSQL also takes POSIX zone strings and bare offsets (``'+05:30'``, whose sign is the inverse of ISO's);
the gateway takes names only, which mean the same to PostgreSQL, DuckDB's ICU and Python.
"""

from __future__ import annotations

import functools
import zoneinfo

UTC = "UTC"


@functools.cache
def _known() -> dict[str, str]:
    names = zoneinfo.available_timezones() | {UTC}
    return {name.lower(): name for name in names}


def canonical(name: str) -> str | None:
    """The zone's name as the database spells it (PostgreSQL reads names case-insensitively), or None."""
    if not isinstance(name, str) or len(name) > 64:
        return None
    return _known().get(name.strip().lower())


def problem(name: str) -> str:
    """Why ``name`` is not a time zone, and what to write instead."""
    return (
        f"unknown time zone {name!r}: use a name of the IANA time zone database, e.g. 'UTC', "
        "'Europe/Berlin', 'America/New_York', 'Asia/Kolkata' (offsets such as '+02:00' are not accepted)"
    )

"""Order keys of types the lake holds as PostgreSQL's text of each value, computed as PostgreSQL orders them, and
the text of a ``money`` sum — vectorised (Arrow) DuckDB functions the gateway's rewrites call
(:mod:`lakegate.gateway.dialect_keys`).

* ``pg_inet_key(text)``: ``network_cmp``'s order of ``inet``/``cidr`` — the family (IPv4 before IPv6), the
  address masked to its length, the length, the whole address — as fixed-width text whose byte order is that
  order (an IPv6 key needs 128 bits twice, more than DuckDB's widest integer);
* ``pg_timetz_key(text)``: ``timetz_cmp``'s order — the instant in UTC (not wrapped to a day), then the offset
  (west of UTC after east, as PostgreSQL's zone field counts seconds west);
* ``pg_money_cents(text)`` / ``pg_money_text(cents)``: ``money`` as PostgreSQL writes it with ``lc_monetary``
  ``C`` (or a locale that writes it the same way: ``$1,234.56``, ``-$1,234.56``). Text in another form is an error
  that names it: the lake route does not guess a locale.

Written by hand with :mod:`ipaddress` (PostgreSQL's formats are small and fixed; no library reads timetz or
money text).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

_TIMETZ = re.compile(
    r"\s*(\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,6}))?)?\s*([+-])(\d{1,2})(?::?(\d{2}))?(?::?(\d{2}))?\s*"
)
_MONEY = re.compile(r"(-?)\$(\d{1,3}(?:,\d{3})*)\.(\d{2})")
_MONEY_LIMIT = 2**63


class UnreadableValue(ValueError):
    """A value the lake route cannot read exactly as its type."""


def inet_key(text: str) -> str:
    """``network_cmp``'s order of an ``inet``/``cidr`` text as a byte-ordered key."""
    try:
        iface = ipaddress.ip_interface(text.strip())
    except ValueError:
        raise UnreadableValue(f"{text!r} is not an inet or cidr value as PostgreSQL writes one") from None
    width = iface.max_prefixlen
    bits = iface.network.prefixlen
    address = int(iface.ip)
    masked = address >> (width - bits) << (width - bits)
    digits = width // 4
    return f"{iface.version}{masked:0{digits}x}{bits:03d}{address:0{digits}x}"


def timetz_parts(text: str) -> tuple[int, int] | None:
    """(local time in microseconds, offset east of UTC in seconds) of a timetz text; None if not one."""
    match = _TIMETZ.fullmatch(text)
    if match is None:
        return None
    hour, minute, second, fraction, sign, zh, zm, zs = match.groups()
    micros = ((int(hour) * 60 + int(minute)) * 60 + int(second or 0)) * 10**6 + int((fraction or "").ljust(6, "0"))
    offset = (int(zh) * 60 + int(zm or 0)) * 60 + int(zs or 0)
    if micros > 24 * 3600 * 10**6 or int(minute) > 59 or int(second or 0) > 59 or offset > 15 * 3600 + 59 * 60:
        return None
    return micros, -offset if sign == "-" else offset


def timetz_key(text: str) -> int:
    """``timetz_cmp``'s order: the UTC instant, then the zone (seconds west of UTC, ascending)."""
    parts = timetz_parts(text)
    if parts is None:
        raise UnreadableValue(f"{text!r} is not a timetz value as PostgreSQL writes one")
    micros, east = parts
    utc = micros - east * 10**6  # PostgreSQL: time + zone (seconds west)
    return (utc + 10**12) * 200_000 + (-east + 100_000)


def timetz_text(micros: int, east: int) -> str:
    """PostgreSQL's output of a timetz: ``HH:MM:SS[.ffffff]`` and the offset ``+HH[:MM[:SS]]``."""
    seconds, fraction = divmod(micros, 10**6)
    text = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    text += f".{fraction:06d}".rstrip("0") if fraction else ""
    sign, east = ("-", -east) if east < 0 else ("+", east)
    zone = f"{sign}{east // 3600:02d}"
    if east % 3600:
        zone += f":{east // 60 % 60:02d}" + (f":{east % 60:02d}" if east % 60 else "")
    return text + zone


def money_cents(text: str) -> int:
    """The cents of a ``money`` text as PostgreSQL writes it with ``lc_monetary`` C."""
    match = _MONEY.fullmatch(text)
    if match is None:
        raise UnreadableValue(
            f"the money value {text!r} is not written as the lake route reads money ($1,234.56: lc_monetary C); "
            "run the query on a PostgreSQL source"
        )
    sign, whole, cents = match.groups()
    value = int(whole.replace(",", "")) * 100 + int(cents)
    return -value if sign else value


def money_text(cents: int) -> str:
    """PostgreSQL's ``money`` output (``lc_monetary`` C) of ``cents``; its range error beyond int8."""
    if not -_MONEY_LIMIT <= cents < _MONEY_LIMIT:
        raise UnreadableValue("money out of range")
    whole, part = divmod(abs(cents), 100)
    return f"{'-' if cents < 0 else ''}${whole:,}.{part:02d}"


def _vectorised(fn: Callable[[Any], Any], out: pa.DataType) -> Callable[[pa.Array], pa.Array]:
    def each(values: pa.Array) -> pa.Array:
        return pa.array([None if v is None else fn(v) for v in values.to_pylist()], type=out)

    return each


#: (name, function, parameter types, result type) of each DuckDB function
FUNCTIONS: tuple[tuple[str, Callable[[pa.Array], pa.Array], list[str], str], ...] = (
    ("pg_inet_key", _vectorised(inet_key, pa.string()), ["VARCHAR"], "VARCHAR"),
    ("pg_timetz_key", _vectorised(timetz_key, pa.int64()), ["VARCHAR"], "BIGINT"),
    ("pg_money_cents", _vectorised(money_cents, pa.int64()), ["VARCHAR"], "BIGINT"),
    ("pg_money_text", _vectorised(lambda v: money_text(int(v)), pa.string()), ["HUGEINT"], "VARCHAR"),
)

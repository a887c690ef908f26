"""PostgreSQL's bytea input (``byteain``) as a function of the gateway's DuckDB: ``text::bytea`` and
``decode(text, 'escape')`` of values that are not literals (the gateway reads literals itself:
:func:`lakegate.gateway.dialect_gaps.bytea_input`).

PostgreSQL reads ``\\x`` followed by hex digits (whitespace between pairs allowed) as the hex format, anything
else as the escape format: ``\\\\`` is a backslash, ``\\ooo`` an octal byte, other characters their UTF-8 bytes,
any other backslash an error. DuckDB's ``VARCHAR -> BLOB`` cast reads ``\\xHH`` anywhere as one byte and refuses
other non-ASCII characters (found by the differential fuzzer). Written by hand: the rules are a few lines, and
the errors must be PostgreSQL's.
"""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa

_OCTAL = re.compile(r"[0-3][0-7][0-7]")


class ByteaError(ValueError):
    """PostgreSQL's error for a text that is not bytea (raised through DuckDB as the lake route's own error)."""


def bytea_in(text: str, escape_only: bool = False) -> bytes:
    """The bytes PostgreSQL reads ``text`` as (``escape_only``: ``decode(text, 'escape')``, which has no hex
    format)."""
    if text.startswith("\\x") and not escape_only:
        digits = "".join(c for c in text[2:] if c not in " \t\n\r")
        bad = next((c for c in digits if c not in "0123456789abcdefABCDEF"), None)
        if bad is not None:
            raise ByteaError(f'invalid hexadecimal digit: "{bad}"')
        if len(digits) % 2:
            raise ByteaError("invalid hexadecimal data: odd number of digits")
        return bytes.fromhex(digits)
    out, i = bytearray(), 0
    while i < len(text):
        if text[i] != "\\":
            out += text[i].encode()
            i += 1
        elif text[i + 1 : i + 2] == "\\":
            out.append(92)
            i += 2
        elif _OCTAL.fullmatch(text[i + 1 : i + 4]):
            out.append(int(text[i + 1 : i + 4], 8))
            i += 4
        else:
            raise ByteaError("invalid input syntax for type bytea")
    return bytes(out)


def sqlstate(message: str) -> str:
    """PostgreSQL's SQLSTATE for a :class:`ByteaError`'s message."""
    return "22P02" if message.startswith("invalid input syntax") else "22023"


def _bytea_in(texts: pa.Array) -> pa.Array:
    return pa.array([None if t is None else bytea_in(t) for t in texts.to_pylist()], type=pa.binary())


def _decode_escape(texts: pa.Array) -> pa.Array:
    return pa.array([None if t is None else bytea_in(t, True) for t in texts.to_pylist()], type=pa.binary())


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``pg_bytea_in(text)`` and ``pg_decode_escape(text)`` in ``con``."""
    for name, fn in (("pg_bytea_in", _bytea_in), ("pg_decode_escape", _decode_escape)):
        con.create_function(name, fn, ["VARCHAR"], "BLOB", type="arrow", null_handling="special")  # type: ignore[call-overload]

"""DuckDB's run-time errors as PostgreSQL reports the same failure: its SQLSTATE and its message form.

The lake route computes what PostgreSQL would (see :mod:`lakegate.gateway.dialect`), so where PostgreSQL raises
an error (division by zero, a cast it rejects, integer overflow, an invalid regular expression...) DuckDB raises
one too, but in its own words. A client that handles PostgreSQL's errors by SQLSTATE (``22012``, ``22P02``,
``22003``...) must see the same code on both routes. This table is written by hand: no library maps DuckDB's
messages (they are not coded) to PostgreSQL's error codes. A message it does not know keeps no SQLSTATE.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from lakegate.connectors.duckdb import pgbounds

#: DuckDB's type names -> PostgreSQL's, for the messages
_TYPES = {
    "INT16": "smallint",
    "SMALLINT": "smallint",
    "INT32": "integer",
    "INTEGER": "integer",
    "INT64": "bigint",
    "BIGINT": "bigint",
    "DOUBLE": "double precision",
    "FLOAT": "real",
    "BOOL": "boolean",
    "BOOLEAN": "boolean",
    "INT128": "uuid",  # DuckDB parses a uuid as a 128-bit integer and names that in its message
    "UUID": "uuid",
    "INTERVAL": "interval",
    "DATE": "date",
    "TIME": "time",
    "TIMESTAMP": "timestamp",
}
_MIN_INTS = {"-32768": "smallint", "-2147483648": "integer", "-9223372036854775808": "bigint"}
_DATETIME = ("date", "time", "timestamp", "interval", "timestamp with time zone", "time with time zone")
#: RE2's complaints about a pattern (re2.h's error codes, as DuckDB passes them on)
_REGEX = (
    "missing )",
    "missing ]",
    "unexpected )",
    "bad escape",
    "bad repetition",
    "bad character class",
    "invalid character class",
    "trailing \\",
    "no argument for repetition",
    "invalid named capture",
    "invalid perl operator",
    "invalid repetition size",
    "invalid UTF-8",
    "bad named capture",
)


def _pg_type(name: str) -> str:
    base = re.sub(r"\(.*", "", name.strip().upper())
    return "numeric" if base == "DECIMAL" else _TYPES.get(base, name.lower())


def _invalid_input(kind: str, value: str) -> tuple[str, str]:
    if kind == "interval" and value.strip().lower().lstrip("+-") == "infinity":  # PostgreSQL 17's
        return "0A000", (
            f"the interval '{value}' (an infinite interval, PostgreSQL 17) cannot be computed exactly as "
            "PostgreSQL does on the lake route (DuckDB has no infinite intervals); run it on a PostgreSQL source"
        )
    if kind not in _DATETIME:
        return "22P02", f'invalid input syntax for type {kind}: "{value}"'
    # DuckDB reads fewer forms than PostgreSQL does ('1 day +2 hours', 'Jan 5 2024', ...): say which it reads
    return "22007", (
        f'invalid input syntax for type {kind}: "{value}" (the lake route reads ISO 8601 forms: '
        "2024-01-31, 2024-01-31 13:45:00.5+02:00, '1 day 02:00:00' or '1 year 2 months 3 days'; "
        "rewrite the value so, or query a PostgreSQL source)"
    )


Rule = tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[str, str] | None]]

#: what PostgreSQL's numeric holds (up to 1000 digits, infinities) and DuckDB's DECIMAL(38) does not
_PAST_38 = (
    "a numeric computation past DuckDB's 38 digits (PostgreSQL's numeric has up to 1000) cannot be computed "
    "exactly as PostgreSQL does on the lake route (DuckDB); run it on a PostgreSQL source, or cast to double "
    "precision"
)


def _numeric_input(value: str) -> tuple[str, str]:
    """DuckDB refused a numeric PostgreSQL reads (``1e+300``, ``-Infinity``): the lake route's limit, named."""
    return "0A000", f"the numeric {value} (PostgreSQL's numeric holds it, DuckDB's decimal(38) does not) " + (
        "cannot be computed exactly as PostgreSQL does on the lake route (DuckDB); run it on a PostgreSQL source"
    )


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


_RULES: list[Rule] = [
    (re.compile(r"division by zero"), lambda m: ("22012", "division by zero")),
    (
        re.compile(
            r"Overflow in HUGEINT (?:addition|subtraction|multiplication)|Needed (?:width|scale) \d+ to accurately "
            r"represent|Overflow in (?:addition|subtraction|multiplication) of DECIMAL\(38|Could not cast value "
            r"-?\d+ to DECIMAL\(38"
        ),
        lambda m: ("0A000", _PAST_38),
    ),
    (
        re.compile(r'invalid input syntax for type numeric: "(.*)"$', re.DOTALL),
        lambda m: _numeric_input(m.group(1)) if _is_float(m.group(1)) else None,
    ),
    (re.compile(r"value out of range: (overflow|underflow)"), lambda m: ("22003", m.group(0))),
    (
        re.compile(r'invalid input syntax for type ([\w ]+): "(.*)"', re.DOTALL),
        lambda m: _invalid_input(m.group(1), m.group(2)),
    ),
    (re.compile(r"negative substring length not allowed"), lambda m: ("22011", m.group(0))),
    (re.compile(r"Epoch seconds out of range for TIMESTAMP"), lambda m: ("22008", "timestamp out of range")),
    (
        re.compile(r"Overflow in (?:addition|subtraction|multiplication) of (INT16|INT32|INT64) "),
        lambda m: ("22003", f"{_pg_type(m.group(1))} out of range"),
    ),
    (re.compile(r"Overflow in negation of numeric value"), lambda m: ("22003", "integer out of range")),
    (
        re.compile(r"Overflow on abs\((-\d+)\)"),
        lambda m: ("22003", f"{_MIN_INTS.get(m.group(1), 'integer')} out of range"),
    ),
    (
        re.compile(
            r"Type \w+ with value .* can't be cast because the value is out of range for the "
            r"destination type (INT16|INT32|INT64)"
        ),
        lambda m: ("22003", f"{_pg_type(m.group(1))} out of range"),
    ),
    (
        re.compile(r'Casting value ".*" to type DECIMAL\(\d+,\s*\d+\) failed: value is out of range'),
        lambda m: ("22003", "numeric field overflow"),
    ),
    (
        re.compile(
            r"Could not convert string ['\"](.*)['\"] to ([A-Z0-9_]+(?:\(\d+,\s*\d+\))?)"
            r"(?: when casting from source column \S+)?$",
            re.DOTALL,
        ),
        lambda m: _invalid_input(_pg_type(m.group(2)), m.group(1)),
    ),
    (
        re.compile(r'(?:date|timestamp) field value out of range: "(.*?)"'),
        lambda m: ("22008", f'date/time field value out of range: "{m.group(1)}"'),
    ),
    (
        re.compile(r'invalid (date|timestamp) field format: "(.*?)"'),
        lambda m: _invalid_input(m.group(1), m.group(2)),
    ),
    (re.compile(r"field position must not be zero"), lambda m: ("22023", m.group(0))),
    (re.compile(r"cannot extract elements from (?:an object|a scalar)"), lambda m: ("22023", m.group(0))),
    (re.compile(r"cannot cast jsonb \w+ to type \w+"), lambda m: ("22023", m.group(0))),
    (re.compile(r'".*" is out of range for type (?:double precision|real)'), lambda m: ("22003", m.group(0))),
    (re.compile(r"cannot call json(?:b)?_each(?:_text)? on a non-object"), lambda m: ("22023", m.group(0))),
    (re.compile(r"cannot deconstruct (?:an array as an object|a scalar)"), lambda m: ("22023", m.group(0))),
    (re.compile(r"argument \d+: key must not be null"), lambda m: ("22023", m.group(0))),
    (re.compile(r"cannot set path in scalar"), lambda m: ("22023", m.group(0))),
    (
        re.compile(
            r"cannot delete (?:from scalar|from object using integer index|path in scalar)|cannot replace "
            r"existing key|field name must not be null"
        ),
        lambda m: ("22023", m.group(0)),
    ),
    (re.compile(r"null value not allowed for object key"), lambda m: ("22004", m.group(0))),
    (
        re.compile(
            r"array must have even number of elements|mismatched array dimensions|wrong number of array subscripts"
        ),
        lambda m: ("2202E", m.group(0)),
    ),
    (
        re.compile(r"timestamps cannot be binned into intervals containing months or years"),
        lambda m: ("0A000", m.group(0)),
    ),
    (re.compile(r"stride must be greater than zero|origin out of range"), lambda m: ("22008", m.group(0))),
    (  # make_date / make_timestamp with a day or a month beyond its range
        re.compile(r"Date out of range: (-?\d+)-(\d+)-(\d+)$"),
        lambda m: (
            "22008",
            f"date field value out of range: {int(m.group(1)):04d}-{int(m.group(2)):02d}-{int(m.group(3)):02d}",
        ),
    ),
    (re.compile(r"path element at position \d+ is null"), lambda m: ("22004", m.group(0))),
    (re.compile(r'path element at position \d+ is not an integer: ".*?"'), lambda m: ("22P02", m.group(0))),
    (re.compile(r"null values cannot be formatted as an SQL identifier"), lambda m: ("22004", m.group(0))),
    (
        re.compile(r"cannot call json(?:b)?_object_keys on (?:an array|a scalar)"),
        lambda m: ("22023", m.group(0)),
    ),
    (
        re.compile(r"invalid input syntax for type json: .*", re.DOTALL),
        lambda m: ("22P02", m.group(0).split("\n")[0]),
    ),
    (re.compile(r"cannot take logarithm of (zero|a negative number)"), lambda m: ("2201E", m.group(0))),
    (re.compile(r"cannot get array length of a (?:scalar|non-array)"), lambda m: ("22023", m.group(0))),
    (re.compile(r"cannot subtract infinite dates"), lambda m: ("22008", m.group(0))),
    (
        re.compile(r"input value -?(?:inf|nan) is out of range for numeric function"),
        lambda m: ("22003", "input is out of range"),
    ),
    (
        re.compile(
            r"Type DOUBLE with value \S+ can't be cast because the value is out of range for the destination type FLOAT"
        ),
        lambda m: ("22003", "value out of range: overflow"),
    ),
    (
        re.compile(r"Cannot left-shift (?:by negative number|negative number)"),
        lambda m: (
            "0A000",
            "a left shift of a negative number or by a negative count (PostgreSQL shifts as C does) cannot be "
            "computed exactly as PostgreSQL does on the lake route (DuckDB); run it on a PostgreSQL source",
        ),
    ),
    (
        re.compile(
            r"operand, lower bound, and upper bound cannot be NaN|lower bound cannot equal upper bound|"
            r"count must be greater than zero|lower and upper bounds must be finite"
        ),
        lambda m: ("2201G", m.group(0)),
    ),
    (re.compile(r"thresholds array must not contain NULLs"), lambda m: ("22004", m.group(0))),
    (re.compile(r"cannot take square root of a negative number"), lambda m: ("2201F", m.group(0))),
    # the bounds on calls DuckDB cannot interrupt (pgbounds): levenshtein's is PostgreSQL's own
    *((pattern, lambda m, code=code: (code, m.group(0))) for pattern, code in pgbounds.ERRORS),
    # infinite timestamps and intervals: PostgreSQL 17 subtracts them into infinite intervals (or raises interval
    # out of range), which neither DuckDB nor Arrow's interval type holds
    (
        re.compile(r"Cannot subtract infinite timestamps|Type \w+ with value -?infinity can't be cast"),
        lambda m: (
            "0A000",
            "an infinite date, timestamp or interval in arithmetic or a cast cannot be computed as PostgreSQL "
            "does on the lake route (DuckDB); filter with isfinite(), or run the query on a PostgreSQL source",
        ),
    ),
    # last: what the lake route cannot compute exactly, in its own words (pgmacros, pgdatetime): refusals
    (
        re.compile(r".*(?:lake route|cannot be computed exactly).*", re.DOTALL),
        lambda m: ("0A000", m.group(0).split("\n")[0]),
    ),
]


_UDF = re.compile(
    r"Python exception occurred while executing the UDF: (?:NumericError|JsonError|ByteaError): (.*?)(?:\n\nAt:.*)?$",
    re.DOTALL,
)


def own_error(message: str) -> str | None:
    """The message of an error the lake route's own functions raise (exact numeric arithmetic), without
    DuckDB's wrapping of a Python exception."""
    found = _UDF.search(message)
    return found.group(1).strip() if found else None


#: the SQLSTATEs of the lake route's own functions' errors: PostgreSQL's for the errors it raises in the same
#: words (jsonfuncs.c), 0A000 for what DuckDB's types cannot hold (a refusal: PostgreSQL would answer)
_OWN_STATES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"lake route|DuckDB's decimal|has no exact decimal value"), "0A000"),
    (
        re.compile(
            r"^invalid input syntax for type (?:json|bytea)|^path element at position \d+ is not an int"
        ),
        "22P02",
    ),
    (re.compile(r"^path element at position \d+ is null|^null value not allowed for object key"), "22004"),
    (
        re.compile(r"^array must have even number|^wrong number of array subscripts|^mismatched array dim"),
        "2202E",
    ),
    (re.compile(r"^cannot |^argument \d+: key must not be null|^invalid hexadecimal"), "22023"),
)


def own_sqlstate(message: str) -> str:
    """The SQLSTATE of an :func:`own_error` message ('' where none is known)."""
    for pattern, state in _OWN_STATES:
        if pattern.search(message):
            return state
    return ""


def postgres_error(message: str) -> tuple[str, str] | None:
    """(SQLSTATE, message as PostgreSQL words it) for DuckDB's error ``message``, or None when it is not one
    PostgreSQL raises for the same query."""
    text = re.sub(r"^[\w ]*Error: ", "", message, count=1).strip()
    for pattern, make in _RULES:
        match = pattern.search(text)
        found = make(match) if match else None
        if found is not None:  # a rule may pass a message on to the next (None)
            return found
    if text.startswith(_REGEX):
        return "2201B", f"invalid regular expression: {text}"
    return None


_ADVICE = "; run it on a PostgreSQL source (pg.*), or rewrite the query without it"
_MISSING = re.compile(r"(?:Scalar|Table|Aggregate|Pragma) Function with name (\w+) does not exist")
_NO_MATCH = re.compile(r"No function matches the given name and argument types '(\S+?)\((.*?)\)'")
_NO_CAST = re.compile(r"Unimplemented type for cast \((.+?) -> (.+?)\)")
_NO_SYNTAX = re.compile(r'syntax error at or near "(.+?)"')


def refusal(message: str) -> str | None:
    """What the lake route cannot compute, named, for DuckDB's error ``message`` about a function, a cast or an
    operator it lacks (PostgreSQL has them: the gateway's guard admitted the query); None for other errors."""
    text = re.sub(r"^[\w ]*Error: ", "", message, count=1).strip()
    found = _MISSING.search(text)
    if found:
        return f"{found.group(1)}() is not available on the lake route (DuckDB has no such function){_ADVICE}"
    found = _NO_MATCH.search(text)
    if found:
        name, arguments = found.groups()
        what = f"the operator {name}" if not name[:1].isalpha() else f"{name}()"
        return f"{what} of ({arguments.lower()}) is not available on the lake route (DuckDB){_ADVICE}"
    found = _NO_CAST.search(text)
    if found:
        return (
            f"a cast from {found.group(1).lower()} to {found.group(2).lower()} is not available on the lake "
            f"route (DuckDB){_ADVICE}"
        )
    found = _NO_SYNTAX.search(text)
    if found and found.group(1) in ("?", "?|", "?&", "@?", "@@"):
        return f"the jsonb operator {found.group(1)} is not available on the lake route (DuckDB){_ADVICE}"
    return None

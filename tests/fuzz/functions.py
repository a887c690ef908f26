"""Every allowed function and operator with edge values of every argument type it accepts (issue 28.3).

The signatures come from the source's own catalog: each ``pg_catalog`` function the gateway's allow-list names
(``lakegate.gateway.functions.POSTGRES_FUNCTIONS``) and each operator, whose argument types are all types the
lake holds (volatile functions, such as random(), have no one answer to compare). Each signature is called with a
typical value of every argument, then once with each edge value of each argument in turn (the others typical),
every value cast to the argument's type; the calls run on one row of a lake table, so that PostgreSQL, ``pg.*``,
``lake.*`` and federated answer them (:func:`tests.fuzz.run.check`).
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg

from lakegate.gateway import functions

#: PostgreSQL type (regtype text) -> edge values, the first being the typical one
EDGES: dict[str, tuple[str, ...]] = {
    "integer": ("7", "0", "-1", "2147483647", "-2147483648", "NULL"),
    "bigint": ("7", "0", "-9223372036854775808", "9223372036854775807", "NULL"),
    "smallint": ("7", "0", "-32768", "32767", "NULL"),
    "numeric": ("2.50", "0", "-1.5", "123456789012345678.123456789", "'NaN'", "NULL"),
    "double precision": ("2.5", "-0", "'NaN'", "'Infinity'", "'-Infinity'", "1e308", "4.9e-324", "NULL"),
    "real": ("2.5", "-0", "'NaN'", "'Infinity'", "3.4e38", "NULL"),
    "text": ("'abc'", "''", "'ÄöÜ ß'", "' padded  '", "'a,b\\c'", "NULL"),
    "character varying": ("'abc'", "''", "'É'", "NULL"),
    "character": ("'ab'", "''", "'x  '", "NULL"),
    "boolean": ("true", "false", "NULL"),
    "date": (
        "'2024-02-29'",
        "'0001-01-01'",
        "'9999-12-31'",
        "'infinity'",
        "'-infinity'",
        "'0044-03-15 BC'",
        "NULL",
    ),
    "timestamp without time zone": (
        "'2024-03-10 02:30:00.5'",
        "'0001-01-01 00:00:00'",
        "'infinity'",
        "'2024-11-03 01:30:00'",
        "NULL",
    ),
    "timestamp with time zone": (
        "'2024-03-10 07:30:00+00'",
        "'1999-12-31 23:59:59.999999+05:30'",
        "'-infinity'",
        "NULL",
    ),
    "time without time zone": ("'12:34:56.789'", "'00:00:00'", "'24:00:00'", "NULL"),
    "interval": ("'1 year 2 mons 3 days 04:05:06.5'", "'0'", "'-1 day +2 hours'", "'1.5 days'", "NULL"),
    "bytea": ("'\\x00ff10'", "'\\x'", "'abc'", "NULL"),
    "uuid": ("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", "NULL"),
    "jsonb": ('\'{"a": [1, 2.50, null], "b": {"c": "x"}}\'', "'[]'", "'null'", "'1e400'", "NULL"),
    "json": ('\'{"a": [1, 2.50], "a": 3}\'', "'\"s\"'", "NULL"),
    "integer[]": ("'{1,2,3}'", "'{}'", "'{NULL,5}'", "'{{1,2},{3,4}}'", "NULL"),
    "text[]": ("'{a,\"b c\"}'", "'{}'", "'{NULL,\"\"}'", "NULL"),
}

_FUNCTIONS = """
SELECT p.proname, p.proargtypes::regtype[]::text[]
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
WHERE n.nspname = 'pg_catalog' AND p.prokind IN ('f', 'a') AND NOT p.proretset AND p.proname = ANY(%s)
  AND p.prorettype <> 'void'::regtype AND p.provariadic = 0 AND p.prokind = 'f' AND p.provolatile <> 'v'
ORDER BY 1, 2
"""
_OPERATORS = """
SELECT o.oprname, o.oprleft::regtype::text, o.oprright::regtype::text
FROM pg_operator o JOIN pg_namespace n ON n.oid = o.oprnamespace
WHERE n.nspname = 'pg_catalog' AND o.oprleft <> 0 AND o.oprright <> 0 AND o.oprcode::text <> '-'
ORDER BY 1, 2, 3
"""


def signatures(conn: psycopg.Connection) -> Iterator[tuple[str, tuple[str, ...], bool]]:
    """(name, argument types, is an operator) of every allowed function and every operator of supported types."""
    allowed = sorted(functions.POSTGRES_FUNCTIONS)
    for name, types in conn.execute(_FUNCTIONS, (allowed,)).fetchall():
        if types and all(t in EDGES for t in types):
            yield name, tuple(types), False
    for name, left, right in conn.execute(_OPERATORS).fetchall():
        if left in EDGES and right in EDGES:
            yield name, (left, right), True


def calls(
    name: str, types: tuple[str, ...], operator: bool, edges_per_argument: int | None = None
) -> list[str]:
    """The calls of one signature: the typical one, then each edge of each argument in turn."""

    def call(values: list[str]) -> str:
        args = [f"({v})::{t}" for v, t in zip(values, types, strict=True)]
        return f"({args[0]} {name} {args[1]})" if operator else f"{name}({', '.join(args)})"

    typical = [EDGES[t][0] for t in types]
    out = [call(typical)]
    for position, typ in enumerate(types):
        for value in EDGES[typ][1 : None if edges_per_argument is None else 1 + edges_per_argument]:
            values = list(typical)
            values[position] = value
            out.append(call(values))
    return out


def templates(conn: psycopg.Connection, edges_per_argument: int | None = None) -> list[str]:
    """Every call as a statement over one row of a lake table."""
    out = []
    for name, types, operator in signatures(conn):
        for expression in calls(name, types, operator, edges_per_argument):
            out.append(f"SELECT {expression} AS v FROM {{fz_num}} a WHERE a.id = 2")
    return out

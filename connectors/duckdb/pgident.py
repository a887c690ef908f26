"""``quote_ident()`` and ``format('%I')`` as PostgreSQL computes them (functions of the gateway's DuckDB).

PostgreSQL's ``quote_identifier`` leaves an identifier unquoted when it is lower-case letters, digits and ``_``
(not starting with a digit) and not a keyword of another category than "unreserved"; otherwise it doubles the
double quotes and wraps it in them. The keyword list is PostgreSQL 18's (``SELECT word FROM pg_get_keywords()
WHERE catcode <> 'U'``): older servers have a few fewer keywords (``system_user`` came in 16, the ``json_*`` ones in
16 and 17), so for those words the lake route quotes where an older server would not. Written by hand: no
library carries PostgreSQL's keyword categories.
"""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa

KEYWORDS = frozenset(
    """
    all analyse analyze and any array as asc asymmetric authorization between bigint binary bit boolean both
    case cast char character check coalesce collate collation column concurrently constraint create cross
    current_catalog current_date current_role current_schema current_time current_timestamp current_user dec
    decimal default deferrable desc distinct do else end except exists extract false fetch float for foreign
    freeze from full grant greatest group grouping having ilike in initially inner inout int integer intersect
    interval into is isnull join json json_array json_arrayagg json_exists json_object json_objectagg json_query
    json_scalar json_serialize json_table json_value lateral leading least left like limit localtime
    localtimestamp merge_action national natural nchar none normalize not notnull null nullif numeric offset on
    only or order out outer overlaps overlay placing position precision primary real references returning right
    row select session_user setof similar smallint some substring symmetric system_user table tablesample then
    time timestamp to trailing treat trim true union unique user using values varchar variadic verbose when
    where window with xmlattributes xmlconcat xmlelement xmlexists xmlforest xmlnamespaces xmlparse xmlpi
    xmlroot xmlserialize xmltable
    """.split()  # noqa: SIM905 (a list of words, as pg_get_keywords() prints them)
)
_SAFE = re.compile(r"[a-z_][a-z0-9_]*")


def quote_ident(name: str) -> str:
    if _SAFE.fullmatch(name) and name not in KEYWORDS:
        return name
    return '"' + name.replace('"', '""') + '"'


def _quote_ident(names: pa.Array) -> pa.Array:
    return pa.array([None if n is None else quote_ident(n) for n in names.to_pylist()], type=pa.string())


def _format_ident(names: pa.Array) -> pa.Array:
    values = names.to_pylist()
    if any(n is None for n in values):
        raise ValueError("null values cannot be formatted as an SQL identifier")
    return pa.array([quote_ident(n) for n in values], type=pa.string())


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create ``quote_ident`` and ``pg_format_ident`` (format's ``%I``: NULL is an error) in ``con``."""
    for name, fn in (("quote_ident", _quote_ident), ("pg_format_ident", _format_ident)):
        con.create_function(name, fn, ["VARCHAR"], "VARCHAR", type="arrow", null_handling="special")  # type: ignore[call-overload]

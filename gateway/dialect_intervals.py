"""Interval literals on the lake route as PostgreSQL reads them.

sqlglot splits PostgreSQL's ``interval '1 mon'`` into a number and a unit word (``INTERVAL '1' MON``) and writes
it back that way for DuckDB, whose grammar knows only the SQL standard's unit keywords there: ``mon``, ``mons``,
``mins``, ``secs``, ``hrs``... (PostgreSQL's abbreviations) were a DuckDB syntax error (found by the differential
fuzzer). Such a literal goes back to one string, ``INTERVAL '1 mon'``, which DuckDB's interval parser reads as
PostgreSQL does. Only a plain number with a unit word is joined: a literal with a field restriction
(``interval '1 year 2 months' year``) keeps sqlglot's reading.
"""

from __future__ import annotations

import re

from sqlglot import exp

from lakegate.gateway.dialect import Rule
from lakegate.gateway.pgtyping import Typer

_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _joined(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Interval):
        return None
    unit, value = node.args.get("unit"), node.this
    if not isinstance(unit, exp.Var) or not isinstance(value, exp.Literal) or not value.is_string:
        return None
    if not _NUMBER.fullmatch(value.name.strip()):
        return None
    return exp.Interval(this=exp.Literal.string(f"{value.name.strip()} {unit.name.lower()}"))


RULES: list[Rule] = [_joined]

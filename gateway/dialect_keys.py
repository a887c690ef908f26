"""Types held as text whose order the lake route computes from a key (used by
:mod:`lakegate.gateway.dialect_opaque`): an enum orders by its labels' declared order (the label's position
among the labels the gateway read from the source with the column's type), ``inet`` and ``cidr`` by PostgreSQL's
``network_cmp`` — the address masked to its length, then the length, then the whole address (the macro
``pg_inet_key``; IPv4 only, an IPv6 value is an error saying so).

A literal compared with such a value is read as PostgreSQL reads it: an enum's label must be one of its labels
(else PostgreSQL's ``22P02``); an IPv4 literal compared with an ``inet`` or a ``cidr`` is an ``inet`` (PostgreSQL
compares a ``cidr`` as an ``inet``), written in its canonical text (``'10.1.0.2/32'`` is ``10.1.0.2``), and a
``cidr`` compared with it for equality is written as that inet. A literal the lake route cannot read exactly (IPv6)
is refused. ``min``/``max`` (of an enum or an ``inet``) take the value with the least/greatest key.
"""

from __future__ import annotations

import ipaddress

from sqlglot import exp

from lakegate.gateway.dialect import refusal
from lakegate.gateway.errors import QueryFailed
from lakegate.gateway.pgcolumns import INET_OUTPUT
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

EQUALITY = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ)
ORDERING = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)
_EXTREMES: dict[type[exp.Expr], str] = {exp.Min: "arg_min", exp.Max: "arg_max"}


def keyed(typ: PgType) -> bool:
    """Whether values of ``typ`` are ordered and compared with literals by a key."""
    return not typ.dims and (typ.labels is not None or typ.name in ("inet", "cidr"))


def rewrite(
    node: exp.Column, use: exp.Expr, parent: exp.Expr | None, typ: PgType, types: Typer, item: exp.Expr | None
) -> exp.Expr | None:
    """``node`` (of a keyed type) ordered, compared or taken the least/greatest of: the rewritten node, or None
    when another rule decides. ``item``: the select item an ``ORDER BY`` of an output name stands for."""
    if isinstance(parent, exp.Ordered) and use is parent.this:
        if item is not None and item is not node and isinstance(item, exp.Column) and same(item, typ, types):
            parent.set("this", key(item.copy(), typ))
            return parent.this
        return key(node, typ)
    if parent is not None and type(parent) in _EXTREMES and use is parent.this and not typ.is_("cidr"):
        pick = exp.Anonymous(this=_EXTREMES[type(parent)], expressions=[node.copy(), key(node.copy(), typ)])
        types.note(pick, types.of(parent))
        parent.replace(pick)
        return node
    if not isinstance(parent, (*EQUALITY, exp.In, *ORDERING)):
        return None
    operands = [parent.this, parent.args.get("expression"), parent.args.get("low"), parent.args.get("high")]
    operands = [o for o in [*operands, *parent.expressions] if isinstance(o, exp.Expr) and o is not use]
    if not all(_literal(o) is not None or same(o, typ, types) for o in operands):
        return None
    literals = False
    for other in operands:
        text = _literal(other)
        if text is not None:
            literals = True
            canonical = exp.Literal.string(_canonical(text, typ, other))
            other.replace(key(canonical, typ) if isinstance(parent, ORDERING) else canonical)
    if isinstance(parent, ORDERING):
        return key(node, typ)
    if typ.is_("cidr") and literals:  # PostgreSQL reads the literal as an inet: compare the inet's text
        return exp.maybe_parse(INET_OUTPUT.format(node.sql(dialect="duckdb")), dialect="duckdb")
    return node


def key(node: exp.Expr, typ: PgType) -> exp.Expr:
    """The expression that orders values ``node`` of ``typ`` as PostgreSQL orders them."""
    value = node.sql(dialect="duckdb")
    if typ.labels is None:  # a single HUGEINT, so that BETWEEN works too
        return exp.maybe_parse(f"pg_inet_key(CAST({value} AS VARCHAR))", dialect="duckdb")
    labels = exp.Array(expressions=[exp.Literal.string(label) for label in typ.labels]).sql("duckdb")
    unknown = (
        f"a value of {node.sql(dialect='postgres')} is not a label of the enum {typ.name} as the gateway read it "
        "a few seconds ago (a label was added since): run the query again"
    )
    sql = (
        f"CASE WHEN {value} IS NULL THEN NULL ELSE coalesce(array_position({labels}, CAST({value} AS VARCHAR)), "
        f"error({exp.Literal.string(unknown).sql('duckdb')})) END"
    )
    return exp.maybe_parse(sql, dialect="duckdb")


def same(node: exp.Expr, typ: PgType, types: Typer) -> bool:
    other = types.of(node)
    return other is not None and other.name == typ.name and other.labels == typ.labels and not other.dims


def _literal(node: exp.Expr) -> str | None:
    return node.this if isinstance(node, exp.Literal) and node.is_string else None


def _canonical(text: str, typ: PgType, node: exp.Expr) -> str:
    """``text`` read as a value of ``typ``, written as the lake holds it (PostgreSQL's output)."""
    if typ.labels is not None:
        if text not in typ.labels:
            raise QueryFailed(f'invalid input value for enum {typ.name}: "{text}"', sqlstate="22P02")
        return text
    try:
        value = ipaddress.ip_interface(text.strip())
    except ValueError:
        value = None
    if value is None or value.version != 4:
        raise refusal(node, f"the {typ.name} literal {text!r} (the lake route reads IPv4 addresses written in full)")
    return str(value.ip) if value.network.prefixlen == 32 else str(value)  # an inet, as PostgreSQL reads it

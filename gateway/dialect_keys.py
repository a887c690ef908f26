"""Types held as text whose order the lake route computes from a key (used by
:mod:`lakegate.gateway.dialect_opaque`): an enum orders by its labels' declared order (the label's position
among the labels the gateway read from the source with the column's type), ``inet`` and ``cidr`` by PostgreSQL's
``network_cmp`` — the family, the address masked to its length, then the length, then the whole address, IPv4
and IPv6 — ``timetz`` by its UTC instant, then its offset, ``money`` by its amount (the functions of
:mod:`lakegate.connectors.duckdb.pgkeys`).

A literal compared with such a value is read as PostgreSQL reads it: an enum's label must be one of its labels
(else PostgreSQL's ``22P02``); a literal compared with an ``inet`` or a ``cidr`` is an ``inet`` (PostgreSQL
compares a ``cidr`` as an ``inet``), written in its canonical text (``'10.1.0.2/32'`` is ``10.1.0.2``), and a
``cidr`` compared with it for equality is written as that inet; a ``timetz`` literal needs its offset
(``'12:00+01'``), a ``money`` literal is a plain amount (``'12.5'``, ``'$1,234.56'``), both compared by key. A literal
the lake route cannot read exactly is refused. ``min``/``max`` (of an enum, an ``inet``, a ``timetz`` or
``money``) take the value with the least/greatest key (``min``/``max`` of a ``cidr`` is an ``inet``, as in
PostgreSQL, shown as one); ``sum(money)`` adds the amounts (with a FILTER, and over a window too).
"""

from __future__ import annotations

import ipaddress
import re

from sqlglot import exp

from lakegate.connectors.duckdb import pgkeys
from lakegate.gateway.dialect import refusal
from lakegate.gateway.errors import QueryFailed
from lakegate.gateway.pgcolumns import INET_OUTPUT
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

EQUALITY = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ)
ORDERING = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between)
_EXTREMES: dict[type[exp.Expr], str] = {exp.Min: "arg_min", exp.Max: "arg_max"}
#: the key function of each type (lakegate.connectors.duckdb.pgkeys)
_KEYS = {"inet": "pg_inet_key", "cidr": "pg_inet_key", "timetz": "pg_timetz_key", "money": "pg_money_cents"}
#: types compared with a literal by key (their text may not be written as the literal's canonical text)
_BY_KEY = ("timetz", "money")


def keyed(typ: PgType) -> bool:
    """Whether values of ``typ`` are ordered and compared with literals by a key."""
    return not typ.dims and (typ.labels is not None or typ.name in _KEYS)


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
    if _money_sum(parent, use, typ):
        assert parent is not None
        outer = parent  # the sum with its FILTER and OVER, whose total is written as money
        while isinstance(outer.parent, exp.Filter | exp.Window) and outer.parent.this is outer:
            outer = outer.parent
        parent.set("this", key(node.copy(), typ))
        total = exp.Anonymous(this="pg_money_text", expressions=[])
        outer.replace(total)
        total.set("expressions", [outer])
        types.note(total, typ)
        return node
    if parent is not None and type(parent) in _EXTREMES and use is parent.this:
        shown = node.copy()
        if typ.is_("cidr"):  # min/max(cidr) are inet's: the value shown as an inet
            shown = exp.maybe_parse(INET_OUTPUT.format(node.sql(dialect="duckdb")), dialect="duckdb")
        pick = exp.Anonymous(this=_EXTREMES[type(parent)], expressions=[shown, key(node.copy(), typ)])
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
    by_key = isinstance(parent, ORDERING) or typ.is_(*_BY_KEY)
    for other in operands:
        text = _literal(other)
        if text is not None:
            literals = True
            canonical = exp.Literal.string(_canonical(text, typ, other))
            other.replace(key(canonical, typ) if by_key else canonical)
    if by_key:
        return key(node, typ)
    if typ.is_("cidr") and literals:  # PostgreSQL reads the literal as an inet: compare the inet's text
        return exp.maybe_parse(INET_OUTPUT.format(node.sql(dialect="duckdb")), dialect="duckdb")
    return node


def _money_sum(parent: exp.Expr | None, use: exp.Expr, typ: PgType) -> bool:
    """``sum(money)``, as an aggregate, with a FILTER or over a window."""
    return isinstance(parent, exp.Sum) and typ.is_("money") and use is parent.this and parent.parent is not None


def key(node: exp.Expr, typ: PgType) -> exp.Expr:
    """The expression that orders values ``node`` of ``typ`` as PostgreSQL orders them."""
    value = node.sql(dialect="duckdb")
    if typ.labels is None:  # a single value, so that BETWEEN works too
        return exp.maybe_parse(f"{_KEYS[typ.name]}(CAST({value} AS VARCHAR))", dialect="duckdb")
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
    if typ.is_("timetz"):
        parts = pgkeys.timetz_parts(text)
        if parts is None:
            raise refusal(node, f"the timetz literal {text!r} (the lake route reads HH:MM:SS with an offset)")
        return pgkeys.timetz_text(*parts)
    if typ.is_("money"):
        return _money(text, node)
    try:
        value = ipaddress.ip_interface(text.strip())
    except ValueError:
        value = None
    if value is None or value.version == 6 and _embeds_ipv4(int(value.ip)):
        raise refusal(node, f"the {typ.name} literal {text!r} (the lake route reads addresses written in full)")
    return str(value.ip) if value.network.prefixlen == value.max_prefixlen else str(value)  # an inet


def _embeds_ipv4(address: int) -> bool:
    """Whether PostgreSQL writes this IPv6 address with an IPv4 part (``::ffff:1.2.3.4``, ``::0.1.0.0``)."""
    return address >> 32 == 0xFFFF or (address >> 32 == 0 and (address >> 16) & 0xFFFF != 0)


def _money(text: str, node: exp.Expr) -> str:
    match = re.fullmatch(r"\s*(-?)\s*\$?\s*(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d{1,2}))?\s*", text)
    if match is None:
        raise refusal(node, f"the money literal {text!r} (the lake route reads amounts such as 1234.56)")
    sign, whole, cents = match.groups()
    value = int(whole.replace(",", "")) * 100 + int((cents or "").ljust(2, "0"))
    try:
        return pgkeys.money_text(-value if sign else value)
    except pgkeys.UnreadableValue:
        raise QueryFailed(f'value "{text}" is out of range for type money', sqlstate="22003") from None

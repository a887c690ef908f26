"""Text ordering on the DuckDB route follows the source's collation, or is refused (rules of
:mod:`lakegate.gateway.dialect`).

DuckDB orders text as bytes; a source column (or database default) with a linguistic collation orders it
otherwise (:mod:`lakegate.gateway.collations`). What depends on the order of text — ``ORDER BY`` (of a query, a
window, an ordered aggregate), ``<``/``>``/``BETWEEN``, ``min``/``max``, ``greatest``/``least`` — is refused for
such text with a 400 that names the collation, except ``ORDER BY`` of text in an ICU collation DuckDB follows
(:func:`lakegate.gateway.collations.icu_collation`): ``x COLLATE <locale>, x``; equality, ``GROUP BY`` and
``DISTINCT`` do not depend on a deterministic collation. ``COLLATE "C"`` (and the other byte-order collations)
in the query makes the order DuckDB's and is dropped; another ``COLLATE`` is refused.

Case mapping (``upper``, ``lower``, ``initcap``, ``ILIKE``, ``~*``) depends on the collation too: the lake
route maps case as libc does in a UTF-8 locale; text whose collation maps it otherwise (the ASCII-only ``"C"``
locale, ``pg_unicode_fast``'s full mappings, ICU, Turkish) is refused there.

An expression's collation is PostgreSQL's derivation, simplified: an explicit ``COLLATE``, else the collation of
the text columns in it, else the database's default.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.collations import BYTEWISE_NAMES, CASING_OF_NAME, icu_collation
from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.pgtyping import Typer

_ORDERING = (exp.GT, exp.GTE, exp.LT, exp.LTE)
_EXTREMES = (exp.Min, exp.Max, exp.Greatest, exp.Least)
_CASE_MAPPING = (exp.Upper, exp.Lower, exp.Initcap, exp.ILike, exp.RegexpILike)


def _collate(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``x COLLATE "C"`` is DuckDB's own order: just ``x``; any other collation is refused."""
    if not isinstance(node, exp.Collate):
        return None
    name = node.expression.name
    if name.lower() in BYTEWISE_NAMES or name.lower() == "default" and types.collation is None:
        types.bytewise.add(id(node.this))
        types.casings[id(node.this)] = CASING_OF_NAME.get(name.lower(), types.casing)
        return node.this
    raise refusal(node, f'COLLATE "{name}" (DuckDB orders text as bytes, as the "C" collation)')


def _ordering(node: exp.Expr, types: Typer) -> exp.Expr | None:
    operands: list[exp.Expr | None]
    if isinstance(node, exp.Ordered):
        operands = [resolve_order_by(node)]
    elif isinstance(node, _ORDERING):
        operands = [node.this, node.expression]
    elif isinstance(node, exp.Between):
        operands = [node.this, node.args.get("low"), node.args.get("high")]
    elif isinstance(node, _EXTREMES):
        operands = [node.this, *node.expressions]
    else:
        return None
    collation = _linguistic([o for o in operands if o is not None], types)
    if collation is not None:
        duckdb, why = icu_collation(collation)
        followed = _follow(node, duckdb) if duckdb and isinstance(node, exp.Ordered) else None
        if followed is not None:
            return followed
        what = node.sql(dialect="postgres")
        what = f"ORDER BY {what}" if isinstance(node, exp.Ordered) else what
        raise refusal(
            node,
            f"{what} on text in the collation {collation} ({why or 'DuckDB follows it only in ORDER BY'}; "
            'add COLLATE "C" for byte order)',
        )
    return None


def _follow(node: exp.Ordered, collation: str) -> exp.Expr | None:
    """``ORDER BY x`` as ``ORDER BY x COLLATE <DuckDB's ICU collation>, x``: PostgreSQL breaks the ties of a
    deterministic ICU collation by the bytes. The first item replaces ``node``, the second follows it (None:
    the item cannot be rewritten so)."""
    value = node.this
    order = node.parent
    if isinstance(value, exp.Literal) or isinstance(value, exp.Column) and not value.table:
        resolved = resolve_order_by(node)
        if resolved is value and isinstance(value, exp.Literal):
            return None
        select = order.parent if order is not None else None
        if resolved is not value and not (isinstance(select, exp.Select) and not select.args.get("distinct")):
            return None
        value = resolved
    if order is None or node.arg_key != "expressions":
        return None
    first = exp.Ordered(
        this=exp.Collate(this=value.copy(), expression=exp.Var(this=collation)),
        desc=node.args.get("desc"),
        nulls_first=node.args.get("nulls_first"),
    )
    tie = exp.Ordered(this=value.copy(), desc=node.args.get("desc"), nulls_first=node.args.get("nulls_first"))
    items = order.args["expressions"]
    items.insert(node.index + 1, tie)  # type: ignore[operator]
    for at, item in enumerate(items):
        item.index = at
    tie.parent, tie.arg_key = order, "expressions"
    return first


def resolve_order_by(node: exp.Ordered) -> exp.Expr:
    """What an ORDER BY item orders by: a select item named by its position or output name stands for it."""
    value = node.this
    order = node.parent
    if order is None or order.arg_key != "order" or node.arg_key != "expressions":
        return value
    select = order.parent
    while isinstance(select, exp.SetOperation):
        select = select.this
    if not isinstance(select, exp.Select):
        return value
    items = select.expressions
    if isinstance(value, exp.Literal) and value.is_int and 0 < int(value.this) <= len(items):
        item = items[int(value.this) - 1]
        return item.this if isinstance(item, exp.Alias) else item
    if isinstance(value, exp.Column) and not value.table:
        for item in items:
            if isinstance(item, exp.Alias) and item.alias == value.name:
                return item.this
    return value


def _linguistic(operands: list[exp.Expr], types: Typer) -> str | None:
    """The linguistic collation text ``operands`` are compared or ordered by (None: bytes, DuckDB's order, or
    not text): an explicit COLLATE on one of them, else their text columns' collation, else the default."""
    texts = [o for o in operands if (typ := types.of(o)) is not None and (typ.string or typ.elem.string)]
    if not texts or any(isinstance(o, exp.Collate) or id(o) in types.bytewise for o in texts):
        return None  # an explicit collation: checked by _collate
    columns = [c for o in texts for c in _own_columns(o) if (ct := types.of(c)) is not None and ct.string]
    for column in columns:
        collation = types.of(column).collation  # type: ignore[union-attr]
        if collation:
            return collation
    if columns and all(types.of(c).collation == "" for c in columns):  # type: ignore[union-attr]
        return None
    return types.collation


def _own_columns(node: exp.Expr) -> list[exp.Column]:
    """The columns of ``node`` outside the subqueries in it."""
    out = [node] if isinstance(node, exp.Column) else []
    for child in node.iter_expressions():
        if not isinstance(child, exp.Query | exp.Subquery):
            out += _own_columns(child)
    return out


def _case_mapping(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """upper/lower/initcap, ILIKE and ~* map case as the text's collation does: refused where that is not as
    the lake route maps it (libc's in a UTF-8 locale)."""
    if not isinstance(node, _CASE_MAPPING):
        return None
    operands = [o for o in (node.this, node.args.get("expression")) if isinstance(o, exp.Expr)]
    casing = _casing(operands, types)
    if casing:
        raise refusal(node, f"{node.sql(dialect='postgres')} on text whose collation has {casing}")
    return None


def _casing(operands: list[exp.Expr], types: Typer) -> str:
    """The case mapping of ``operands`` where it is not the lake route's ("" when it is)."""
    explicit = [types.casings[id(o)] for o in operands if id(o) in types.casings]
    if explicit:
        return explicit[0]
    columns = [c for o in operands for c in _own_columns(o) if (ct := types.of(c)) is not None and ct.string]
    for column in columns:
        casing = types.of(column).casing  # type: ignore[union-attr]
        if casing:
            return casing
    if columns and all(types.of(c).casing == "" for c in columns):  # type: ignore[union-attr]
        return ""
    return types.casing


RULES: list[Rule] = [_collate, _ordering, _case_mapping]

"""Values the lake route holds as PostgreSQL's text of them — ``inet``, ``cidr``, ``macaddr``, ``money``,
``timetz``, ``bit``, ``pg_lsn``, ``tsvector``, enums, ``citext``, ``xml`` and any type the rules do not know
(rules of :mod:`lakegate.gateway.dialect`).

The text is exactly what PostgreSQL shows, so a value selected as it is answers as PostgreSQL; but DuckDB
compares, orders and computes on it as text, which is not the type's semantics (``inet`` orders by address,
``'10.0.0.1/32' = ip`` is true, ``ip::text`` adds the netmask, an enum orders by its declaration, ``citext``
compares without case). So such a value may only be selected, tested for NULL, counted, and — where the text
keeps it (:data:`lakegate.gateway.pgtype.EQUAL`, ``ORDERED``) — compared for equality with another value of its
type (``=``, ``IN``, ``GROUP BY``, ``DISTINCT``, joins, ``PARTITION BY``) or ordered; everything else is refused
with a 400 that names the value, its type and the use. ``inet::text`` (and ``varchar``) is computed as
PostgreSQL's (the netmask added to a host address); the other types' text is the value itself.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway import dialect_keys
from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.dialect_collation import resolve_order_by
from lakegate.gateway.pgtype import EQUAL, ORDERED, PgType
from lakegate.gateway.pgtyping import Typer

_EQUALITY = dialect_keys.EQUALITY
_ORDERING = dialect_keys.ORDERING  # min/max of macaddr or bit: PostgreSQL has none
_TEXT_TYPES = (exp.DType.TEXT, exp.DType.VARCHAR)
#: inet's ``text()``: the netmask of a host address is shown too
_INET_TEXT = (
    "CASE WHEN contains({0}, '/') THEN {0} WHEN contains({0}, ':') THEN {0} || '/128' ELSE {0} || '/32' END"
)


def _typed(node: exp.Expr, types: Typer) -> PgType | None:
    typ = types.of(node)
    return typ if typ is not None and typ.as_text is not None else None


def _as_text(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A column (or a subquery's column) of a type held as text: allowed where the text answers exactly."""
    if not isinstance(node, exp.Column):
        return None
    typ = _typed(node, types)
    if typ is None:
        return None
    use, parent = _use(node)
    if dialect_keys.keyed(typ):
        item = resolve_order_by(parent) if isinstance(parent, exp.Ordered) else None
        rewritten = dialect_keys.rewrite(node, use, parent, typ, types, item)
        if rewritten is not None:
            return rewritten
    if isinstance(parent, exp.Cast) and _to_text(parent):
        if typ.is_("inet"):
            return exp.maybe_parse(_INET_TEXT.format(node.sql(dialect="duckdb")), dialect="duckdb")
        return None  # the text of the others is the value as PostgreSQL writes it
    if _allowed(use, parent, typ, types):
        return None
    raise refusal(node, f"{_describe(node, parent)} ({node.sql(dialect='postgres')} is {_held(typ)})")


def _use(node: exp.Expr) -> tuple[exp.Expr, exp.Expr | None]:
    """The expression ``node`` stands for in its parent (parentheses looked through), and that parent."""
    use, parent = node, node.parent
    while isinstance(parent, exp.Paren):
        use, parent = parent, parent.parent
    return use, parent


def _allowed(use: exp.Expr, parent: exp.Expr | None, typ: PgType, types: Typer) -> bool:
    if parent is None or isinstance(parent, exp.Is):
        return True
    if isinstance(parent, exp.Alias):
        use, parent = parent, parent.parent
    if isinstance(parent, exp.Select) and use.arg_key == "expressions":
        return typ.as_text in (EQUAL, ORDERED) or not _deduplicates(parent)
    if isinstance(parent, exp.Count):
        return True
    equal = typ.as_text in (EQUAL, ORDERED)
    if isinstance(parent, exp.Distinct):  # count(DISTINCT x), DISTINCT ON (x)
        return equal
    if isinstance(parent, exp.Group) or isinstance(parent, exp.Window) and use.arg_key == "partition_by":
        return equal
    if isinstance(parent, _EQUALITY):
        return equal and _same_type([parent.this, parent.expression], typ, types)
    if isinstance(parent, exp.In) and use is parent.this:
        query = parent.args.get("query")
        if query is not None:
            outputs = types.projections(query.this if isinstance(query, exp.Subquery) else query) or []
            return equal and len(outputs) == 1 and outputs[0][1] == typ
        return equal and _same_type(parent.expressions, typ, types)
    if isinstance(parent, exp.Ordered):
        return typ.as_text == ORDERED
    if isinstance(parent, _ORDERING):
        operands = [parent.this, *parent.expressions, parent.args.get("low"), parent.args.get("high")]
        operands += [parent.expression] if isinstance(parent.args.get("expression"), exp.Expr) else []
        return typ.as_text == ORDERED and _same_type([o for o in operands if o is not None], typ, types)
    return False


def _deduplicates(select: exp.Select) -> bool:
    """Whether ``select``'s rows are compared with each other (DISTINCT, or UNION/INTERSECT/EXCEPT)."""
    if select.args.get("distinct"):
        return True
    parent = select.parent
    while isinstance(parent, exp.Subquery):
        parent = parent.parent
    return isinstance(parent, exp.SetOperation) and bool(parent.args.get("distinct", True))


def _same_type(operands: list[exp.Expr], typ: PgType, types: Typer) -> bool:
    return all(types.of(o) == typ for o in operands)


def _to_text(cast: exp.Cast) -> bool:
    to = cast.args.get("to")
    return isinstance(to, exp.DataType) and to.this in _TEXT_TYPES and not to.expressions


def _describe(node: exp.Expr, parent: exp.Expr | None) -> str:
    if parent is None:
        return "this use"
    if isinstance(parent, exp.Ordered):
        return f"ORDER BY {_ordered_text(parent)}"
    return parent.sql(dialect="postgres")[:120]


def _ordered_text(ordered: exp.Ordered) -> str:
    return resolve_order_by(ordered).sql(dialect="postgres")


def _held(typ: PgType) -> str:
    name = typ.name + "[]" * typ.dims
    article = "an" if name[0].lower() in "aeiou" else "a"
    if typ.as_text == ORDERED:
        kept = "it can be selected, compared and ordered, not computed with"
    elif typ.as_text == EQUAL:
        kept = (
            f"it can be selected, grouped and compared for equality with another {name}, not ordered, "
            "compared with a literal or computed with"
        )
    else:
        kept = "it can only be selected, counted or tested for NULL"
    return f"{article} {name}, which the lake route holds as its text: {kept}"


def _ordered_by_position(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``ORDER BY 2`` / ``ORDER BY alias`` of a select item of a type held as text: as ordering by the item."""
    if not isinstance(node, exp.Ordered) or isinstance(node.this, exp.Column) and node.this.table:
        return None
    value = resolve_order_by(node)
    if value is node.this:
        return None
    typ = _typed(value, types)
    if typ is not None and dialect_keys.keyed(typ) and isinstance(value, exp.Column):
        node.set("this", dialect_keys.key(value.copy(), typ))
        return None
    if typ is not None and typ.as_text != ORDERED:
        raise refusal(
            node,
            f"ORDER BY {node.this.sql(dialect='postgres')} ({value.sql(dialect='postgres')} is {_held(typ)})",
        )
    return None


RULES: list[Rule] = [_as_text, _ordered_by_position]

"""Whole-row references (``t``, ``t.*`` inside an expression) on the DuckDB route (a rule of
:mod:`lakegate.gateway.dialect`).

PostgreSQL reads a name that is no column of any FROM item in scope, but is a FROM item's name, as that item's
row: a composite value, NULL when an outer join NULL-extended the row. DuckDB reads it as a STRUCT of every
column the engine sees (a lake table's ``_lsn`` and ``_commit_ts`` too), never NULL for a NULL-extended row,
printed, compared and counted otherwise. So ``count(t)`` and ``count(t.*)`` (the form BI tools send to count the
matched rows of a LEFT JOIN) count a column that is never NULL in a present row — a lake table's ``_lsn`` — or,
where the row cannot be NULL-extended, every row (through one of its columns, so the aggregate stays at the
query level it belongs to); ``(t).col`` is the column. Every other use — ``SELECT t``, ``t::text``,
``count(DISTINCT t)``, ``t IS NULL``, ``to_jsonb(t)``, ``GROUP BY t`` — is refused with a 0A000 that names it.
Written by hand: it is PostgreSQL's name resolution (columns first, at every level, then FROM item names).
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.pgtyping import Typer, enclosing_selects, from_items
from lakegate.gateway.scope import fold

#: a lake table's column that is never NULL in a row of it (the source position of its last change)
PRESENT = "_lsn"


def whole_rows(node: exp.Expr, typer: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Column):
        return None
    found = _whole_row(node, typer)
    if found is None:
        return None
    select, alias, item = found
    parent = node.parent
    if isinstance(parent, exp.Paren) and isinstance(parent.parent, exp.Dot) and parent.arg_key == "this":
        return None  # (t).col: the column
    if isinstance(parent, exp.Count) and node.arg_key == "this":
        counted = _present_column(select, alias, item, typer)
        if counted is not None:
            return counted
        raise refusal(
            node,
            f"count({alias}) over a row an outer join may NULL-extend, of a FROM item with no column the gateway "
            "knows is never NULL in its rows (count one of its NOT NULL columns instead)",
        )
    raise refusal(
        node,
        f"{_shown(node)}, a whole-row reference to {alias} (DuckDB's row value is not PostgreSQL's composite: it "
        "prints, compares and counts otherwise; name its columns instead)",
    )


def _shown(node: exp.Column) -> str:
    return node.sql(dialect="postgres")


def _whole_row(node: exp.Column, typer: Typer) -> tuple[exp.Select, str, exp.Expr] | None:
    """The SELECT, alias and FROM item ``node`` reads whole, or None when it is a column (or unknown)."""
    table = node.args.get("table")
    if isinstance(node.this, exp.Star):
        if table is None or node.args.get("db") is not None or isinstance(node.parent, exp.Select):
            return None  # t.* in a select list: its columns
        return _item_named(node, fold(table), typer)
    if table is not None or not isinstance(node.this, exp.Identifier):
        return None
    name = fold(node.this)
    selects = list(enclosing_selects(node))
    if not selects or _output_alias(node, selects[0], name):
        return None
    for select in selects:  # a column of that name at any level wins
        for _, item in from_items(select):
            columns = typer.source_columns(item)
            if columns is None or name in columns:
                return None
    return _item_named(node, name, typer)


def _item_named(node: exp.Column, name: str, typer: Typer) -> tuple[exp.Select, str, exp.Expr] | None:
    for select in enclosing_selects(node):
        for alias, item in from_items(select):
            if alias == name:
                return select, alias, item
    return None


def _output_alias(node: exp.Column, select: exp.Select, name: str) -> bool:
    """``node`` names an output column in ORDER BY / GROUP BY (PostgreSQL's rule for those clauses)."""
    current: exp.Expr | None = node
    while current is not None and current.parent is not select:
        current = current.parent
    if current is None or current.arg_key not in ("order", "group"):
        return False
    return any(p.alias_or_name == name for p in select.expressions if isinstance(p, exp.Alias))


def _present_column(select: exp.Select, alias: str, item: exp.Expr, typer: Typer) -> exp.Expr | None:
    """An expression that is non-NULL exactly in the rows where ``item`` is present (not NULL-extended)."""
    qualifier = exp.to_identifier(alias, quoted=True)
    if id(item) in typer.lake_tables:
        return exp.column(exp.to_identifier(PRESENT, quoted=True), qualifier)
    if alias in _nullable(select):
        return None
    columns = typer.source_columns(item)
    if not columns:
        return None
    column = exp.column(exp.to_identifier(columns[0], quoted=True), qualifier)
    return exp.Paren(this=exp.Is(this=column, expression=exp.Null()))  # true or false: never NULL


def _nullable(select: exp.Select) -> set[str]:
    """Aliases of the FROM items of ``select`` an outer join may NULL-extend."""
    items = list(from_items(select))
    joins = select.args.get("joins") or []
    out: set[str] = set()
    for k, join in enumerate(joins, start=1):
        side = (join.side or "").upper()
        if side == "LEFT":
            out.add(items[k][0])
        elif side == "RIGHT":
            out.update(alias for alias, _ in items[:k])
        elif side == "FULL":
            out.update(alias for alias, _ in items[: k + 1])
    out.update(alias for alias, _ in items[len(joins) + 1 :])  # LATERAL items: conservative
    return out


RULES: list[Rule] = [whole_rows]

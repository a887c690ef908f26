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
The FROM items of a parenthesised join (``a LEFT JOIN (b JOIN c ON ...) ON ...``) keep their names unless the
join has an alias, and are NULL-extended with it. A ``t.*`` the rule cannot place, or a name that is a FROM
item's while some item's columns are unknown (a column, or the row?), is refused too.
Written by hand: it is PostgreSQL's name resolution (columns first, at every level, then FROM item names).
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.pgsignatures import generator_name
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
    alias, item, nullable = found
    parent = node.parent
    if isinstance(parent, exp.Paren) and isinstance(parent.parent, exp.Dot) and parent.arg_key == "this":
        return None  # (t).col: the column
    if isinstance(parent, exp.Count) and node.arg_key == "this":
        counted = _present_column(alias, item, nullable, typer)
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


Item = tuple[str, exp.Expr, bool]  #: a FROM item's name, the item, whether an outer join may NULL-extend it


def _whole_row(node: exp.Column, typer: Typer) -> Item | None:
    """The FROM item ``node`` reads whole (its name, the item, whether it may be NULL-extended), or None when
    ``node`` is a column; refused where the gateway cannot tell which."""
    table = node.args.get("table")
    if isinstance(node.this, exp.Star):
        if table is None or isinstance(node.parent, exp.Select):
            return None  # * or t.* in a select list: columns
        found = None if node.args.get("db") is not None else _item_named(node, fold(table))
        if found is None:
            raise refusal(
                node, f"{_shown(node)}, a whole-row reference to a FROM item the gateway cannot place"
            )
        return found
    if table is not None or not isinstance(node.this, exp.Identifier):
        return None
    name = fold(node.this)
    selects = list(enclosing_selects(node))
    if not selects or _output_alias(node, selects[0], name):
        return None
    scopes = [_scope(select) for select in selects]
    if not any(alias == name for scope in scopes for alias, _, _ in scope):
        return None  # no FROM item's name: a column (or PostgreSQL's error)
    unknown = False
    for scope in scopes:  # a column of that name at any level wins
        for alias, item, _ in scope:
            columns = typer.source_columns(item)
            if columns is None and alias == name and _function(item):
                return (
                    None  # a function's alias, as before: its scalar column (route.py names it so for DuckDB)
                )
            unknown = unknown or columns is None
            if columns is not None and name in columns:
                return None
    if unknown:
        raise refusal(
            node,
            f"{_shown(node)}, a column or a whole-row reference to the FROM item {name} (the gateway does not "
            "know every FROM item's columns; qualify the column, or name the item's columns)",
        )
    return _item_named(node, name)


def _item_named(node: exp.Column, name: str) -> Item | None:
    for select in enclosing_selects(node):
        for item in _scope(select):
            if item[0] == name:
                return item
    return None


def _scope(select: exp.Select) -> list[Item]:
    """The FROM items ``select`` names, with the members of its parenthesised joins ``(a JOIN b ON ...)``
    (whose names an unaliased group keeps visible)."""
    return _members(list(from_items(select)), select.args.get("joins") or [], False)


def _members(items: list[tuple[str, exp.Expr]], joins: list[exp.Join], extended: bool) -> list[Item]:
    nullable = _nullable(len(items), joins)
    out: list[Item] = []
    for k, (alias, item) in enumerate(items):
        group = item.this if isinstance(item, exp.Subquery) and not alias else None
        if not isinstance(group, exp.Expr) or isinstance(group, exp.Select | exp.SetOperation):
            out.append((alias, item, extended or k in nullable))
            continue
        inner = group.args.get("joins") or []
        named = [(_name(member), member) for member in (group, *(j.this for j in inner))]
        out += _members(named, inner, extended or k in nullable)
    return out


def _function(item: exp.Expr) -> bool:
    """A function in FROM (``unnest(...)``, ``generate_series(...) AS g``, ``LATERAL f(...)``)."""
    return isinstance(item.this if isinstance(item, exp.Table | exp.Lateral) else item, exp.Func)


def _name(item: exp.Expr) -> str:
    """The name a member of a parenthesised join goes by (as :func:`pgtyping.from_items` names FROM items)."""
    alias = item.args.get("alias")
    if isinstance(alias, exp.TableAlias) and alias.this is not None:
        return fold(alias.this)
    if isinstance(item, exp.Table) and not isinstance(item.this, exp.Func):
        return fold(item.this)
    return generator_name(item) if isinstance(item, exp.Table | exp.Unnest) else ""


def _output_alias(node: exp.Column, select: exp.Select, name: str) -> bool:
    """``node`` names an output column in ORDER BY / GROUP BY (PostgreSQL's rule for those clauses)."""
    current: exp.Expr | None = node
    while current is not None and current.parent is not select:
        current = current.parent
    if current is None or current.arg_key not in ("order", "group"):
        return False
    return any(p.alias_or_name == name for p in select.expressions if isinstance(p, exp.Alias))


def _present_column(alias: str, item: exp.Expr, nullable: bool, typer: Typer) -> exp.Expr | None:
    """An expression that is non-NULL exactly in the rows where ``item`` is present (not NULL-extended)."""
    qualifier = exp.to_identifier(alias, quoted=True)
    if id(item) in typer.lake_tables:
        return exp.column(exp.to_identifier(PRESENT, quoted=True), qualifier)
    if nullable:
        return None
    columns = typer.source_columns(item)
    if not columns:
        return None
    column = exp.column(exp.to_identifier(columns[0], quoted=True), qualifier)
    return exp.Paren(this=exp.Is(this=column, expression=exp.Null()))  # true or false: never NULL


def _nullable(count: int, joins: list[exp.Join]) -> set[int]:
    """Positions of the ``count`` FROM items (the first, then one per join) an outer join may NULL-extend."""
    out: set[int] = set()
    for k, join in enumerate(joins, start=1):
        side = (join.side or "").upper()
        if side == "LEFT":
            out.add(k)
        elif side == "RIGHT":
            out.update(range(k))
        elif side == "FULL":
            out.update(range(k + 1))
    out.update(range(len(joins) + 1, count))  # LATERAL items: conservative
    return out


RULES: list[Rule] = [whole_rows]

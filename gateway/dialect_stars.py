"""``*`` over joins that merge columns (``USING``, ``NATURAL``) on the DuckDB route, in PostgreSQL's order.

PostgreSQL shows the merged columns first, then each FROM item's other columns; DuckDB keeps a merged column
where the left FROM item has it. Such a ``*`` is expanded into its columns (the merged ones unqualified: DuckDB
binds them to the merged value, a COALESCE for FULL joins), before the statement is typed. A merge on a
``char(n)`` column is refused unless both sides are ``char(n)`` values of one length (DuckDB compares the
values as they are, padded; PostgreSQL ignores trailing spaces). ``ORDER BY name`` where two different result
columns have that name is PostgreSQL's error (DuckDB picks one). Written by hand: sqlglot's star expansion needs
a schema and follows DuckDB's order.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import refusal
from lakegate.gateway.errors import BadRequest
from lakegate.gateway.parse import position
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer, shared_columns
from lakegate.gateway.scope import fold


def expand_merged_stars(ast: exp.Expr, typer: Typer) -> bool:
    """Expand in place every unqualified ``*`` of a SELECT whose joins merge columns; True if one was."""
    changed = False
    for select in list(ast.find_all(exp.Select)):
        if not shared_columns(select):
            continue
        merges: list[tuple[str, PgType | None, PgType | None]] = []
        typer.star_columns(select, exp.Star(), merges)
        for name, left, right in merges:
            _check_merge(select, name, left, right)
        if not any(isinstance(item, exp.Star) for item in select.expressions):
            continue
        items: list[exp.Expr] = []
        for item in select.expressions:
            items += _columns(select, item, typer) if isinstance(item, exp.Star) else [item]
        select.set("expressions", items)
        changed = True
    return changed


def _columns(select: exp.Select, star: exp.Star, typer: Typer) -> list[exp.Expr]:
    columns = typer.star_columns(select, star)
    if columns is None or any(alias == "" for alias, _, _ in columns):
        raise refusal(star, "* over a USING or NATURAL join whose columns the gateway cannot list")
    return [
        exp.column(
            exp.to_identifier(name, quoted=True), exp.to_identifier(alias, quoted=True) if alias else None
        )
        for alias, name, _ in columns
    ]


def _check_merge(select: exp.Select, name: str, left: PgType | None, right: PgType | None) -> None:
    chars = [t for t in (left, right) if t is not None and t.name == "bpchar"]
    if not chars:
        return
    same = (
        left is not None and right is not None and left == right and left.padded and left.length is not None
    )
    if not same:
        raise refusal(
            select, f"a USING or NATURAL join on {name} (char(n) merged with another type or length)"
        )


def refuse_ambiguous_order(ast: exp.Expr, typer: Typer) -> None:
    """``ORDER BY name`` where two different result columns have that name is PostgreSQL's error 42702 (DuckDB
    would pick one of them, or the input column)."""
    for select in list(ast.find_all(exp.Select)):
        order = select.args.get("order")
        if order is None:
            continue
        names = _result_columns(select, typer)
        if names is None:
            continue
        for item in order.expressions:
            value = item.this if isinstance(item, exp.Ordered) else item
            if not isinstance(value, exp.Column) or value.table:
                continue
            name = fold(value.this)
            if len({key for out, key in names if out == name}) > 1:
                line, column = position(value)  # type: ignore[arg-type]
                raise BadRequest(f'ORDER BY "{name}" is ambiguous', line=line, column=column, sqlstate="42702")


def _result_columns(select: exp.Select, typer: Typer) -> list[tuple[str, str]] | None:
    """(output name, what it is) of each result column of ``select``."""
    columns = typer.result_columns(select)
    if columns is None:
        return None
    return [
        (c.name, f"{c.source}.{c.name}" if c.starred else c.value.sql(dialect="postgres")) for c in columns
    ]

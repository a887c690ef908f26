"""Which table references of a statement name a CTE, and which must resolve through the catalog: SQL scoping.

A CTE name is visible only inside its WITH's scope: the query the WITH belongs to and the CTEs that follow it in
that WITH. Under ``WITH RECURSIVE`` a CTE may also name itself, but only where both PostgreSQL and DuckDB bind the
name to the CTE: directly in FROM/JOIN of the recursive term (the right operand of a top-level UNION). Elsewhere
the two engines disagree (DuckDB binds a self-reference in the non-recursive term, in a subquery or in a body
that is not a UNION to the *catalog*, e.g. its ``duckdb_databases`` view), so such references, and references
to a later CTE of a RECURSIVE WITH (PostgreSQL allows them, DuckDB looks them up in its catalog), are refused.
Every other reference is returned as one the router must resolve through the gateway's catalog (and rewrite to
a name the gateway generated) or refuse; :func:`verify` checks the rewritten statement once more. Time-travel
arguments must be constants: they are evaluated on their own, outside the statement's WITH.

Written by hand: sqlglot's ``optimizer.scope`` treats FROM items of a LATERAL's left side and every name of a
WITH as sources wherever they appear, which is not the binding either engine performs (and the guard must know
exactly what the engine will bind). The walk is iterative, so deeply nested statements cannot overflow the
interpreter's stack here.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from sqlglot import exp

from lakegate.gateway.errors import Forbidden, UnsupportedQuery
from lakegate.gateway.parse import position

CTE, LATER, SELF = "cte", "later", "self"
_NAME_PARTS = ("this", "db", "catalog", "alias")


@dataclass
class Bound:
    """The statement's table references: bound to a CTE in scope, or to be resolved through the catalog."""

    ctes: list[exp.Table] = field(default_factory=list)
    tables: list[exp.Table] = field(default_factory=list)


def fold(ident: exp.Expression) -> str:
    """PostgreSQL's rule: unquoted names are folded to lower case, quoted ones are kept as written."""
    return ident.name if isinstance(ident, exp.Identifier) and ident.quoted else ident.name.lower()


def bind(ast: exp.Expression) -> Bound:
    """Classify every table reference of ``ast`` (table functions are the guard's business, not names)."""
    bound = Bound()
    for table, status in _walk(ast):
        (bound.ctes if status == CTE else bound.tables).append(table)
    return bound


def verify(ast: exp.Expression, generated: Collection[tuple[str, ...]]) -> None:
    """After routing: every table reference is a CTE in scope or a name the router generated (``generated``,
    exact parts), so that the engine cannot bind anything else (its catalog views, files, attached databases)."""
    for table, status in _walk(ast):
        if status == CTE:
            continue
        parts = tuple(p.name for p in (table.args.get(k) for k in ("catalog", "db", "this")) if p is not None)
        if parts not in generated:
            raise _forbidden(
                table,
                f"the table name {table.sql(dialect='postgres')} could not be bound to a table of the "
                "gateway's sources; name tables as source.schema.table",
            )


def _walk(ast: exp.Expression) -> Iterator[tuple[exp.Table, str]]:
    """(table, CTE or "") for every table reference, depth first, with the CTE names in scope at each."""
    self_ok: set[int] = set()
    stack: list[tuple[exp.Expression, dict[str, str]]] = [(ast, {})]
    while stack:
        node, scope = stack.pop()
        with_ = node.args.get("with_")
        if isinstance(with_, exp.With):
            scope = _enter_with(with_, scope, stack, self_ok)
        if isinstance(node, exp.Table) and not isinstance(node.this, exp.Func):
            status = _classify(node, scope, self_ok)
            if status is not None:
                yield node, status
            _check_travel(node)
            children = [v for k, v in node.args.items() if k not in _NAME_PARTS]
        else:
            children = [v for k, v in node.args.items() if k != "with_"]
        for child in reversed(children):
            if isinstance(child, exp.Expression):
                stack.append((child, scope))
            elif isinstance(child, list):
                stack.extend((c, scope) for c in reversed(child) if isinstance(c, exp.Expression))


def _enter_with(
    with_: exp.With, outer: dict[str, str], stack: list[tuple[exp.Expression, dict[str, str]]], self_ok: set[int]
) -> dict[str, str]:
    """Push the CTE bodies with their scopes; return the scope of the query the WITH belongs to."""
    recursive = bool(with_.args.get("recursive"))
    ctes = [cte for cte in with_.expressions if isinstance(cte, exp.CTE)]
    names = [fold(cte.args["alias"].this) if cte.args.get("alias") else "" for cte in ctes]
    for i, cte in enumerate(ctes):
        scope = dict(outer)
        if recursive:
            scope.update({later: LATER for later in names[i + 1 :]})
            scope[names[i]] = SELF
            self_ok.update(_recursive_term_tables(cte.this))
        scope.update({earlier: CTE for earlier in names[:i]})
        stack.append((cte.this, scope))
    return {**outer, **{name: CTE for name in names}}


def _recursive_term_tables(body: exp.Expression) -> Iterator[int]:
    """Ids of the tables directly in FROM/JOIN of the recursive term (where a self-reference is bound alike)."""
    if not isinstance(body, exp.Union):
        return
    term = body.expression
    while isinstance(term, exp.Subquery) and not term.args.get("alias"):
        term = term.this
    if not isinstance(term, exp.Select):
        return
    from_ = term.args.get("from_")
    items = [from_.this] if isinstance(from_, exp.From) else []
    items += [join.this for join in term.args.get("joins") or []]
    yield from (id(item) for item in items if isinstance(item, exp.Table))


def _classify(table: exp.Table, scope: dict[str, str], self_ok: set[int]) -> str | None:
    name = table.this
    if name is None:
        if table.args.get("rows_from"):
            raise _unsupported(table, "ROWS FROM (...) is not supported; call the row generator in FROM directly")
        raise _unsupported(table, "this table reference has no name")
    if table.args.get("db") is not None or table.args.get("catalog") is not None:
        return ""
    written = fold(name)
    status = scope.get(written)
    if status == LATER:
        raise _unsupported(
            table,
            f"{written} refers to a CTE defined later in the same WITH RECURSIVE; define it before the "
            "CTE that uses it",
        )
    if status == SELF:
        if id(table) not in self_ok:
            raise _unsupported(
                table,
                f"the recursive CTE {written} may refer to itself only in FROM/JOIN of its recursive term "
                f"(non-recursive term UNION [ALL] recursive term), not in a subquery or the first term",
            )
        return CTE
    return CTE if status == CTE else ""


def _check_travel(table: exp.Table) -> None:
    """``FOR ... AS OF <expr>`` is evaluated alone, outside the statement: a constant expression only."""
    version = table.args.get("version")
    expression = version.args.get("expression") if isinstance(version, exp.Expression) else None
    if expression is None:
        return
    inner = expression.find(exp.Query, exp.Table, exp.Column)
    if inner is not None:
        raise _unsupported(
            inner if isinstance(inner, exp.Expression) else table,
            "time travel takes a constant (a snapshot id, a time, or an expression such as "
            "now() - interval '1 hour'), not a subquery or a column",
        )


def _unsupported(node: exp.Expression, message: str) -> UnsupportedQuery:
    line, col = position(node)
    return UnsupportedQuery(message, line=line, column=col)


def _forbidden(node: exp.Expression, message: str) -> Forbidden:
    line, col = position(node)
    return Forbidden(message, line=line, column=col)

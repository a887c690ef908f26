"""PostgreSQL semantics on the DuckDB route: rewrites of the statement (a sqlglot AST in the PostgreSQL dialect)
so that DuckDB computes what PostgreSQL would, or a refusal that names the construct it cannot match exactly.

sqlglot translates syntax; it does not promise PostgreSQL's semantics, which differ from DuckDB's in many
everyday places. Written by hand (no library does this). The statement is typed first
(:mod:`lakegate.gateway.pgtyping`: PostgreSQL's type of every expression, where known), then every node is
offered to the rules, children before parents; a rule returns the node's replacement (which computes the same
PostgreSQL type) or raises :class:`UnsupportedQuery`. A replacement that wraps the node (a cast of its result)
leaves the node to the rules after it; any other ends its turn. The rules live by subject:

* :mod:`~lakegate.gateway.dialect_numbers`: division and modulo (integer, exact numeric, float with PostgreSQL's
  overflow errors), ``avg``/``variance``/``stddev`` of exact types, ``sum``, rounding, casts to numbers;
* :mod:`~lakegate.gateway.dialect_text`: ``char(n)``, ``LIKE``/``ILIKE`` (escapes, ``ANY``/``ALL``), casts to
  text types and booleans, functions whose DuckDB result type differs;
* :mod:`~lakegate.gateway.dialect_values`: arrays, ``= ANY``/``= ALL`` with NULLs, ``extract``/``date_part``/
  ``date_trunc``, json;
* :mod:`~lakegate.gateway.dialect_gaps`: ``bytea`` length/hex, ``timestamp + time``, ``time - time``, numeric
  products in 38 digits;
* :mod:`~lakegate.gateway.dialect_counts`: ``num_nulls``/``num_nonnulls``, ``array_positions`` and ``scale``,
  which DuckDB lacks;
* :mod:`~lakegate.gateway.dialect_formats`: ``to_char`` of dates and timestamps;
* :mod:`~lakegate.gateway.dialect_rows`: whole-row references (``count(t.*)``; first: DuckDB reads them as
  structs);
* :mod:`~lakegate.gateway.dialect_literals`: ``0x1F`` / ``x'1F'``, interval casts with field restrictions;
* :mod:`~lakegate.gateway.dialect_lazy`: arguments evaluated only where PostgreSQL evaluates them (an
  aggregate's under its FILTER, ``first_value``/``lag``/... at the picked row; last);
* :mod:`~lakegate.gateway.dialect_session`: ``current_setting('TimeZone')``, ``current_schema()``;
* :mod:`~lakegate.gateway.dialect_zones`: the session time zone (first: it rewrites casts other rules leave);
* :mod:`~lakegate.gateway.dialect_scale`: unconstrained numerics held as their text are read as decimals where
  their value is used (before every other rule but the next), and result numerics print with PostgreSQL's display
  scale;
* :mod:`~lakegate.gateway.dialect_bounds`: numeric literals PostgreSQL's numeric cannot hold (first), and, over
  the rewritten statement, ``LIKE`` in a form DuckDB matches in bounded time and no volatile argument to a call
  whose bound DuckDB would check on another evaluation of it (:func:`dialect_bounds.bound`).

DuckDB macros and functions the rules call are created by :mod:`lakegate.connectors.duckdb.pgmacros`. Each rule
is covered by the differential corpus (``tests/answers``), which runs every query on PostgreSQL and both routes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sqlglot import exp

from lakegate.gateway.errors import QueryFailed, UnsupportedQuery
from lakegate.gateway.parse import position
from lakegate.gateway.pgtyping import Typer

Rule = Callable[[exp.Expr, Typer], "exp.Expr | None"]

#: function names (sqlglot's expression key, or the name of a function sqlglot does not know) refused on the
#: DuckDB route, with the reason
REFUSED: dict[str, str] = {
    "timetostr": "to_char() with PostgreSQL's patterns",
    "strtodate": "to_date() with PostgreSQL's patterns",
    "strtotime": "to_timestamp(text, pattern) with PostgreSQL's patterns",
    "timestrtotime": "to_timestamp() with PostgreSQL's patterns",
    "tonumber": "to_number() with PostgreSQL's patterns",
    "to_number": "to_number() with PostgreSQL's patterns",
    "row_to_json": "row_to_json() (DuckDB writes numbers, bytes and field names otherwise than PostgreSQL)",
    # sqlglot reads json_object(keys, values) as SQL/JSON's JSON_OBJECT(key : value): DuckDB made one member of them
    "jsonobject": "json_object() (the lake route computes jsonb_object())",
    "json_object": "json_object() (the lake route computes jsonb_object())",
    # DuckDB's pg_catalog compatibility macro answers otherwise (format_type(23, -1) was 'float8')
    "format_type": "format_type() (the lake route has no PostgreSQL catalog of types)",
}


def refusal(node: exp.Expr, what: str) -> UnsupportedQuery:
    line, column = position(node)  # type: ignore[arg-type]
    return UnsupportedQuery(
        f"{what} cannot be computed exactly as PostgreSQL does on the lake route (DuckDB); run it on a "
        "PostgreSQL source, or rewrite it without this construct",
        line=line,
        column=column,
    )


def call(name: str, *args: exp.Expr) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def cast(node: exp.Expr, to: str) -> exp.Cast:
    return exp.Cast(this=node, to=exp.DataType.build(to, dialect="duckdb"))


def rules() -> list[Rule]:
    from lakegate.gateway import (
        dialect_aggregates,
        dialect_bounds,
        dialect_classes,
        dialect_collation,
        dialect_counts,
        dialect_datetime,
        dialect_floats,
        dialect_formats,
        dialect_gaps,
        dialect_intervals,
        dialect_json,
        dialect_jsonbuild,
        dialect_jsonedit,
        dialect_jsontext,
        dialect_lazy,
        dialect_literals,
        dialect_numbers,
        dialect_opaque,
        dialect_patterns,
        dialect_rows,
        dialect_scale,
        dialect_session,
        dialect_text,
        dialect_values,
        dialect_widths,
        dialect_zones,
    )

    return [
        *dialect_rows.RULES,
        *dialect_literals.RULES,
        *dialect_widths.RULES,
        *dialect_intervals.RULES,
        *dialect_floats.RULES,
        *dialect_bounds.RULES,
        *dialect_scale.RULES,
        *dialect_opaque.RULES,
        *dialect_jsontext.FIRST,
        *dialect_collation.RULES,
        *dialect_session.RULES,
        *dialect_zones.RULES,
        *dialect_formats.RULES,
        *dialect_numbers.RULES,
        *dialect_gaps.RULES,
        *dialect_counts.RULES,
        *dialect_datetime.RULES,
        *dialect_classes.RULES,
        *dialect_text.RULES,
        *dialect_values.RULES,
        *dialect_aggregates.RULES,
        *dialect_json.RULES,
        *dialect_jsonbuild.RULES,
        *dialect_jsonedit.RULES,
        *dialect_patterns.RULES,
        *dialect_lazy.RULES,
    ]


def postgres_semantics(ast: exp.Expr, typer: Typer) -> None:
    """Rewrite ``ast`` in place (``typer`` types it; types are taken before anything changes)."""
    typer.all()
    nodes = list(ast.walk(bfs=False))  # kept alive: the typer's memo is by id
    for node in nodes:
        _refuse(node)
        if isinstance(node, exp.Column):
            typ = typer.of(node)
            if typ is not None and typ.lossy:
                raise refusal(node, f"{node.sql(dialect='postgres')} ({typ.lossy})")
        if isinstance(node, exp.Select) and node.is_star:
            _refuse_lossy_star(node, typer)
    active = rules()
    replaced: set[int] = set()
    for node in reversed(nodes):  # children before their parents
        if id(node) in replaced or (node is not ast and node.parent is None):
            continue
        for rule in active:
            parent, key, index = node.parent, node.arg_key, node.index
            replacement = rule(node, typer)
            if replacement is None or replacement is node:
                continue
            if parent is None:
                raise refusal(node, "this statement")
            typ = typer.of(node)
            if typ is not None and typ.held_text:  # the column's text is read as its value
                typ = dataclasses.replace(typ, held_text=False)
            typer.note(replacement, typ)
            _put(parent, key, index, replacement)
            if not _wraps(replacement, node):
                replaced.add(id(node))
                break
            # the rule wrapped the node (a cast of its result, say): the later rules still see the node itself
    from lakegate.gateway import dialect_bounds

    dialect_bounds.bound(ast)


def _wraps(replacement: exp.Expr, node: exp.Expr) -> bool:
    """Whether ``node`` is inside ``replacement`` (which took its place)."""
    current: exp.Expr | None = node.parent
    while current is not None:
        if current is replacement:
            return True
        current = current.parent
    return False


def rewrap(node: exp.Expr, make: Callable[[exp.Expr], exp.Expr], types: Typer) -> exp.Expr:
    """Put ``make(node)`` (which may contain ``node``) where ``node`` is; the new node computes ``node``'s
    type, except that a char(n) value it trims is no longer padded."""
    parent, key, index = node.parent, node.arg_key, node.index
    typ = types.of(node)
    new = make(node)
    if new is node or parent is None:
        return node
    if typ is not None and typ.bpchar and isinstance(new, exp.Anonymous) and new.name == "rtrim":
        typ = dataclasses.replace(typ, padded=False)
    types.note(new, typ)
    _put(parent, key, index, new)
    return new


def _put(parent: exp.Expr, key: str | None, index: int | None, new: exp.Expr) -> None:
    assert key is not None
    if index is None:
        parent.set(key, new)
    else:
        parent.args[key][index] = new
        new.parent, new.arg_key, new.index = parent, key, index


def _refuse_lossy_star(select: exp.Select, typer: Typer) -> None:
    """A ``*`` that stands for a column DuckDB cannot read exactly is refused as that column would be."""
    for name, typ in typer.projections(select) or []:
        if typ is not None and typ.lossy:
            raise refusal(select, f"{name} ({typ.lossy})")


def _refuse(node: exp.Expr) -> None:
    key = node.name.lower() if isinstance(node, exp.Anonymous) else node.key
    reason = REFUSED.get(key)
    if reason is not None:
        raise refusal(node, reason)
    if isinstance(node, exp.Window):
        _window_aggregate(node)


def _window_aggregate(window: exp.Window) -> None:
    """PostgreSQL's errors for the aggregate forms it does not run as window functions, which DuckDB computes
    (``count(DISTINCT x) OVER (ROWS 100000 PRECEDING)`` also ran seconds past its time limit there)."""
    agg = window.this.this if isinstance(window.this, exp.Filter) else window.this
    line, column = position(window)  # type: ignore[arg-type]
    if isinstance(agg, exp.WithinGroup):
        name = agg.this.sql(dialect="postgres").split("(")[0].lower()
        raise QueryFailed(
            f"OVER is not supported for ordered-set aggregate {name}",
            line=line,
            column=column,
            sqlstate="0A000",
        )
    if not isinstance(agg, exp.Func):
        return
    for arg in agg.iter_expressions():
        if isinstance(arg, exp.Distinct):
            message = "DISTINCT is not implemented for window functions"
        elif isinstance(arg, exp.Order):
            message = "aggregate ORDER BY is not implemented for window functions"
        else:
            continue
        raise QueryFailed(message, line=line, column=column, sqlstate="0A000")

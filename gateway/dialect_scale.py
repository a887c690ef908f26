"""Numeric display scales on the DuckDB route: every ``numeric`` of a result prints as PostgreSQL prints it.

PostgreSQL's ``numeric`` carries a display scale per value: an unconstrained column shows each value as it was
written (``1.5``, ``100.10``), a quotient or an average the scale ``select_div_scale`` picks for those values,
``a + b`` the larger of the operands' scales, ``a * b`` their sum, ``sum()`` the largest of its inputs', and
``round(x)`` none. DuckDB's ``DECIMAL(p, s)`` has one scale per column. So:

* an unconstrained ``numeric`` column of a lake table stays PostgreSQL's exact text of each value (the lake
  stores that text); a bare column of a select list that neither groups nor removes duplicates passes the text
  on (so it reaches the result, or a derived table's column, exactly as PostgreSQL prints it), and everywhere
  else :func:`_valueize` reads it as a checked ``DECIMAL(38, 18)`` (``pg_numeric_text``);
* after the other rewrites, :func:`show_numerics` turns each result column whose scale DuckDB's type cannot tell
  into PostgreSQL's text of it: ``pg_numeric_show(value, scale)``, where the scale is computed alongside the
  value by PostgreSQL's rules (a quotient's own text already has its scale). A scale that cannot be known
  (a value computed in a derived table, ``DISTINCT`` over such values, functions outside the rules) is refused
  with a 400 that names it, never shown otherwise than PostgreSQL would.

Where several equal values of different scales meet (``1.5`` and ``1.50`` in one group, or tied for ``min``),
PostgreSQL shows the one its plan meets first: the lake route then answers an error that says so. Written by hand
(no library models PostgreSQL's display scales).
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer, output_name, passes_text, shows_text, star_of

TEXT_SCALE = 18  #: fractional digits of an unconstrained numeric read as a decimal
_QUOTIENTS = ("pg_numeric_div", "pg_numeric_var")


def held(typ: PgType | None) -> bool:
    return typ is not None and typ.held_text and not typ.dims


def value_of(column: exp.Expr) -> exp.Expr:
    """The checked decimal of a numeric held as text."""
    return cast(call("pg_numeric_text", column, exp.Literal.number(TEXT_SCALE)), f"DECIMAL(38, {TEXT_SCALE})")


def text_of(node: exp.Expr) -> exp.Expr | None:
    """The exact text behind ``node`` when it is a numeric read from its text (or a quotient), else None."""
    if isinstance(node, exp.Paren):
        return text_of(node.this)
    inner = node.this if isinstance(node, exp.Cast) else None
    if isinstance(inner, exp.Anonymous) and inner.name == "pg_numeric_text":
        return inner.expressions[0]
    return inner if isinstance(inner, exp.Anonymous) and inner.name in _QUOTIENTS else None


def _valueize(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A column held as text is read as its decimal wherever its value is used (its text where it is turned
    into text: PostgreSQL's text of a numeric is the text the lake holds); an ORDER BY position that names such
    a column orders by its value."""
    if isinstance(node, exp.Column) and held(types.of(node)):
        item = node.parent if isinstance(node.parent, exp.Alias) else node
        if passes_text(item) or _to_text(node):
            return None
        return value_of(node)
    if isinstance(node, exp.Ordered) and isinstance(node.this, exp.Literal) and node.this.is_int:
        order = node.parent
        select = order.parent if order is not None and order.arg_key == "order" else None
        if isinstance(select, exp.Select):
            column = _output_column(select, int(node.this.this) - 1, types)
            if column is not None:
                node.set("this", value_of(column))
    return None


def _to_text(column: exp.Column) -> bool:
    parent = column.parent
    if isinstance(parent, exp.Cast) and parent.to.is_type(*exp.DataType.TEXT_TYPES):
        return True
    return isinstance(parent, exp.DPipe | exp.Concat | exp.ConcatWs)


def _output_column(select: exp.Select, index: int, types: Typer) -> exp.Expr | None:
    """The column held as text that is result column ``index`` of ``select`` (None: another value)."""
    columns = types.result_columns(select) or []
    if not 0 <= index < len(columns):
        return None
    column = columns[index]
    value = column.value
    return value.copy() if isinstance(value, exp.Column) and held(column.typ) else None


RULES: list[Rule] = [_valueize]


# ------------------------------------------------------------------------------------------ the results


def show_numerics(ast: exp.Expr, types: Typer, projections: list[tuple[str, PgType | None]] | None) -> None:
    """Turn the select-list items whose display scale DuckDB's type cannot tell into PostgreSQL's text of them,
    in the statement's own SELECT and in every derived table and CTE (whose columns the typing then holds as
    text); ``projections`` are the result columns' PostgreSQL types (a set operation's or a ``*``'s column that
    is still a decimal there is refused)."""
    _texts(ast, types)
    for select in list(ast.find_all(exp.Select)):
        _refuse_text_compared(select, types)
        _show_items(select, types)
    for union in list(ast.find_all(exp.SetOperation)):
        _refuse_text_ordered(union, types)
    for name, typ in projections or []:
        if typ is not None and typ.dims and typ.name == "numeric" and typ.loose_scale and not typ.held_text:
            raise refusal(ast, f"the numeric array {name} (its elements' display scales vary per value)")
        if typ is not None and typ.numeric and typ.loose_scale and not typ.held_text:
            distinct = ast.args.get("distinct")  # a set operation's is a flag (UNION vs UNION ALL)
            where = distinct if isinstance(distinct, exp.Expr) else ast
            raise refusal(
                where,
                f"the numeric {name} (its display scale varies per value) of a set operation, a DISTINCT or a "
                "column of a derived table computed otherwise",
            )


def _refuse_text_compared(select: exp.Select, types: Typer) -> None:
    """A ``*`` passes numerics held as text on: where the rows are compared (DISTINCT, UNION, INTERSECT,
    EXCEPT) their text would be (``1.5`` and ``1.50`` are one value in PostgreSQL)."""
    if not any(star_of(item) is not None for item in select.expressions):
        return
    distinct = select.args.get("distinct")
    parent = select.parent
    while isinstance(parent, exp.Subquery):
        parent = parent.parent
    compared = (distinct is not None and not distinct.args.get("on")) or (
        isinstance(parent, exp.SetOperation) and bool(parent.args.get("distinct", True))
    )
    if not compared:
        return
    for column in types.result_columns(select) or []:
        if column.starred and held(column.typ):
            raise refusal(
                select, f"rows compared with their unconstrained numeric {column.name} (1.5 equals 1.50)"
            )


def _refuse_text_ordered(union: exp.SetOperation, types: Typer) -> None:
    """ORDER BY of a set operation's column that is a numeric held as text would order its text."""
    order = union.args.get("order")
    columns = types.projections(union) if order is not None else None
    for ordered in order.expressions if order is not None and columns else []:
        key = ordered.this
        names = [n for n, typ in columns or [] if held(typ)]
        by_position = isinstance(key, exp.Literal) and key.is_int and 0 < int(key.this) <= len(columns or [])
        if (
            by_position
            and held((columns or [])[int(key.this) - 1][1])
            or (isinstance(key, exp.Column) and key.name in names)
        ):
            raise refusal(ordered, "ORDER BY an unconstrained numeric over a set operation")


def _show_items(select: exp.Select, types: Typer) -> None:
    items = list(select.expressions)
    shown: dict[int, exp.Expr] = {}
    for index, item in enumerate(items):
        typ = types.of(item)
        if typ is None or not typ.numeric or not typ.loose_scale or held(typ) or not shows_text(item):
            continue
        value = item.this if isinstance(item, exp.Alias) else item
        shown[index] = value.copy()
        text = _shown(value, types, select)
        if _grouped(select) and value.find(exp.AggFunc, exp.Window) is None:  # a row-level value: a key
            _refuse_ungrouped(text, value, select)
        items[index] = exp.alias_(text, output_name(item), quoted=True)
    if shown:
        _order_by_values(select, items, shown)
        select.set("expressions", items)


def _texts(ast: exp.Expr, types: Typer) -> None:
    """A numeric whose display scale varies per value, turned into text (a cast, ``||``, ``concat``), is its
    shown text."""
    for node in list(ast.find_all(exp.Cast, exp.DPipe, exp.Concat, exp.ConcatWs)):
        if isinstance(node, exp.Cast) and not node.to.is_type(*exp.DataType.TEXT_TYPES):
            continue
        select = node.find_ancestor(exp.Select)
        values = [node.this] if isinstance(node, exp.Cast) else [node.this, node.expression]
        if isinstance(node, exp.Concat | exp.ConcatWs):
            values = list(node.expressions)
        for value in values:
            typ = types.of(value) if isinstance(value, exp.Expr) else None
            if typ is None or not typ.numeric or not typ.loose_scale or held(typ):
                continue
            if select is None:
                raise refusal(value, "this numeric as text")
            value.replace(_shown(value, types, select))


def _order_by_values(select: exp.Select, items: list[exp.Expr], shown: dict[int, exp.Expr]) -> None:
    """ORDER BY a shown column (by its name or position) orders by its value, not by its text; GROUP BY its
    position groups by its value."""
    group = select.args.get("group")
    for key in group.expressions if group is not None else []:
        if isinstance(key, exp.Literal) and key.is_int and int(key.this) - 1 in shown:
            key.replace(shown[int(key.this) - 1].copy())
    order = select.args.get("order")
    names = {items[i].alias: i for i in shown}
    for ordered in order.expressions if order is not None else []:
        key = ordered.this
        if isinstance(key, exp.Literal) and key.is_int and int(key.this) - 1 in shown:
            ordered.set("this", shown[int(key.this) - 1].copy())
        elif isinstance(key, exp.Column) and not key.table and key.name in names:
            original = select.expressions[names[key.name]]
            if isinstance(original, exp.Alias) or not isinstance(original, exp.Column):
                ordered.set("this", shown[names[key.name]].copy())


def _shown(value: exp.Expr, types: Typer, select: exp.Select) -> exp.Expr:
    if isinstance(value, exp.Paren):
        return _shown(value.this, types, select)
    quotient = text_of(value)
    if quotient is not None and isinstance(quotient, exp.Anonymous) and quotient.name in _QUOTIENTS:
        return quotient.copy()  # the quotient's text has PostgreSQL's scale
    if isinstance(value, exp.Anonymous) and value.name == "pg_zero_check":
        check, inner = value.expressions
        return call("pg_zero_check", check.copy(), _shown(inner, types, select))
    picks = isinstance(value, exp.Greatest | exp.Least | exp.Coalesce | exp.Case)
    per_row = picks and _grouped(select) and value.find(exp.AggFunc, exp.Window) is None
    # a grouped value whose scale is per row (greatest, coalesce, case of columns) is taken per row (its columns'
    # own scales, not their groups'), then made the group's one scale
    scale = _scale(value, types, _grouped(select), per_row)
    if per_row and scale.find(exp.Column):
        # as for a grouped column: equal values of different scales in one group are refused
        scale = call("pg_same_scale", exp.Min(this=scale.copy()), exp.Max(this=scale))
    return call("pg_numeric_show", cast(value.copy(), "VARCHAR"), cast(scale, "INTEGER"))


_GROUPINGS = (exp.Group, exp.Cube, exp.Rollup, exp.GroupingSets, exp.Tuple, exp.Paren)


def _refuse_ungrouped(text: exp.Expr, value: exp.Expr, select: exp.Select) -> None:
    """The text shown for a grouped numeric is computed from other expressions than its GROUP BY key (a
    quotient's text, a cast's digits): where they read a column outside every GROUP BY key, DuckDB cannot
    compute it per group — refused by name (was DuckDB's binder error)."""
    group = select.args.get("group")
    keys: set[str] = set()
    for key in group.walk() if group is not None else []:
        if (
            not isinstance(key, exp.Expr)
            or not isinstance(key.parent, _GROUPINGS)
            or isinstance(key, _GROUPINGS)
        ):
            continue
        if isinstance(key, exp.Literal) and key.is_int and 0 < int(key.this) <= len(select.expressions):
            key = select.expressions[int(key.this) - 1].unalias()
        keys.add(_bare(key))
    for column in text.find_all(exp.Column):
        if column.find_ancestor(exp.AggFunc, exp.Window) is not None:
            continue
        node: exp.Expr | None = column
        while node is not None and _bare(node) not in keys:
            node = node.parent
        if node is None:
            raise refusal(
                value,
                "a numeric computed from columns as a GROUP BY key (its display scale varies per value)",
            )


def _bare(node: exp.Expr) -> str:
    """``node``'s SQL with its columns unqualified (``t.nu`` and ``nu`` name one GROUP BY key)."""
    return node.transform(lambda n: exp.column(n.name) if isinstance(n, exp.Column) else n).sql()


def _grouped(select: exp.Select) -> bool:
    return bool(select.args.get("group"))


_AGGREGATES = (exp.Sum, exp.Min, exp.Max)


def _scale(node: exp.Expr, types: Typer, grouped: bool, in_aggregate: bool) -> exp.Expr:
    """SQL of PostgreSQL's display scale of ``node``'s value (per row)."""

    def of(child: exp.Expr, inside: bool = in_aggregate) -> exp.Expr:
        return _scale(child, types, grouped, inside)

    if isinstance(node, exp.Paren | exp.Neg | exp.Abs):
        return of(node.this)
    text = text_of(node)
    if text is not None:
        scale = call("pg_numeric_scale", text.copy())
        if grouped and not in_aggregate and isinstance(text, exp.Column):
            return call("pg_same_scale", exp.Min(this=scale.copy()), exp.Max(this=scale))
        return scale
    if isinstance(node, exp.Anonymous) and node.name == "pg_zero_check":
        return of(node.expressions[1])
    if isinstance(node, exp.Anonymous) and node.name == "pg_mod":
        return exp.Greatest(this=of(node.expressions[0]), expressions=[of(node.expressions[1])])
    if isinstance(node, exp.Add | exp.Sub | exp.Mod):
        return exp.Greatest(this=of(node.this), expressions=[of(node.expression)])
    if isinstance(node, exp.Mul):
        return exp.Add(this=of(node.this), expression=of(node.expression))
    if isinstance(node, exp.Case):
        ifs = [exp.If(this=i.this.copy(), true=of(i.args["true"])) for i in node.args.get("ifs") or []]
        default = node.args.get("default")
        return exp.Case(ifs=ifs, default=of(default) if default is not None else None)
    if isinstance(node, exp.Coalesce):
        values = [node.this, *node.expressions]
        ifs = [
            exp.If(this=exp.Not(this=exp.Is(this=v.copy(), expression=exp.Null())), true=of(v))
            for v in values
        ]
        return exp.Case(ifs=ifs)
    if isinstance(
        node, exp.Greatest | exp.Least
    ):  # the picked value's: the first argument equal to the result
        values = [v for v in (node.this, *node.expressions) if not isinstance(v, exp.Null)]
        return exp.Case(
            ifs=[exp.If(this=exp.EQ(this=v.copy(), expression=node.copy()), true=of(v)) for v in values]
        )
    if isinstance(node, exp.Window) and isinstance(node.this, _PICKS):
        return _picked_scale(node, of)
    if isinstance(node, exp.Round | exp.Ceil | exp.Floor) or node.key == "trunc":
        digits = node.args.get("decimals")
        if digits is None:
            return exp.Literal.number(0)
        if isinstance(digits, exp.Literal) and digits.is_int:
            return exp.Literal.number(max(0, int(digits.this)))
        return exp.Greatest(this=digits.copy(), expressions=[exp.Literal.number(0)])
    aggregate = _aggregate(node)
    if aggregate is not None:
        value = aggregate.this.expressions[0] if isinstance(aggregate.this, exp.Distinct) else aggregate.this
        return _aggregate_scale(node, aggregate, of(value, True))
    typ = types.of(node)
    if typ is not None and typ.number and not typ.loose_scale:
        return call("pg_type_scale", node.copy())  # DuckDB's decimal scale is PostgreSQL's here
    raise refusal(node, f"the display scale of {node.sql(dialect='duckdb')} (PostgreSQL's varies per value)")


#: window functions that return one of their argument's values (the scale is that value's)
_PICKS = (exp.FirstValue, exp.LastValue, exp.Lag, exp.Lead, exp.NthValue)


def _picked_scale(window: exp.Window, of: Callable[[exp.Expr], exp.Expr]) -> exp.Expr:
    """first_value/last_value/nth_value/lag/lead: the same function over the same window, of the scales (the
    same row is picked: one window, one order); lag/lead's default with its own scale."""
    picker = window.this.copy()
    picker.set("this", of(window.this.this))
    default = window.this.args.get("default")
    if default is not None:
        picker.set("default", of(default))
    copy = window.copy()
    copy.set("this", picker)
    return copy


def _aggregate(node: exp.Expr) -> exp.Expr | None:
    inner = node.this if isinstance(node, exp.Window) else node
    inner = inner.this if isinstance(inner, exp.Filter) else inner
    if not isinstance(inner, _AGGREGATES):
        return None
    distinct = inner.this if isinstance(inner.this, exp.Distinct) else None
    if distinct is not None and (isinstance(node, exp.Window) or len(distinct.expressions) != 1):
        return None
    return inner


def _aggregate_scale(outer: exp.Expr, aggregate: exp.Expr, scale: exp.Expr) -> exp.Expr:
    """sum(): the largest scale of its values; min()/max(): the scale of the value it picks (an error when
    equal values of different scales tie). sum(DISTINCT x) keeps one of equal values, which one its plan's sort
    decides: the largest scale when every distinct value comes with one scale, else the error."""
    if isinstance(aggregate, exp.Sum) and isinstance(aggregate.this, exp.Distinct):
        value = aggregate.this.expressions[0]
        pairs = exp.Case(
            ifs=[
                exp.If(
                    this=exp.Not(this=exp.Is(this=value.copy(), expression=exp.Null())),
                    true=call("row", value.copy(), scale.copy()),
                )
            ]
        )
        counts = [
            rewrapped(outer, aggregate, exp.Count(this=exp.Distinct(expressions=[v])))
            for v in (value.copy(), pairs)
        ]
        return exp.Case(
            ifs=[
                exp.If(
                    this=exp.EQ(this=counts[0], expression=counts[1]),
                    true=rewrapped(outer, aggregate, exp.Max(this=scale)),
                )
            ]
        )
    if isinstance(aggregate, exp.Sum):
        return rewrapped(outer, aggregate, exp.Max(this=scale))
    pick = "arg_min" if isinstance(aggregate, exp.Min) else "arg_max"
    value = aggregate.this.expressions[0] if isinstance(aggregate.this, exp.Distinct) else aggregate.this
    low = call(pick, scale.copy(), call("row", value.copy(), scale.copy()))
    high = call(pick, scale.copy(), call("row", value.copy(), exp.Neg(this=scale.copy())))
    return call("pg_same_scale", rewrapped(outer, aggregate, low), rewrapped(outer, aggregate, high))


def rewrapped(outer: exp.Expr, aggregate: exp.Expr, new: exp.Expr) -> exp.Expr:
    """A copy of ``outer`` (the aggregate with its FILTER/OVER) with the aggregate replaced by ``new``."""
    if outer is aggregate:
        return new
    copy = outer.copy()
    target = copy.this if isinstance(copy, exp.Window) else copy
    if isinstance(target, exp.Filter):
        target.set("this", new)
    else:
        copy.set("this", new)
    return copy

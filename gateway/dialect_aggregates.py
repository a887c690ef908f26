"""Aggregates whose result depends on the order of their input: ``array_agg``, ``string_agg``, ``json_agg``,
``jsonb_agg`` and ``json_object_agg`` on the lake route.

Without ``ORDER BY`` inside the aggregate PostgreSQL documents their input order as unspecified: it is the order
the plan reads the rows (heap order, which UPDATEs and VACUUM change; per worker in a parallel plan; a hash or a
sort's order above a join). No engine can reproduce it, and PostgreSQL users do not expect a particular order
from it: dashboards write ``string_agg(name, ', ')`` and read a list. So the lake route answers such an aggregate
with the same elements in the order DuckDB reads them (the multiset PostgreSQL gives, never other elements), and
the differential suite compares those results with their element order ignored (``tests/answers_harness.py``,
:func:`unordered_columns`). Two cases are not left to the plan:

* ``DISTINCT`` inside the aggregate: PostgreSQL sorts the input to remove duplicates, so the result comes in the
  argument's order (``array_agg(DISTINCT tag)`` is sorted, NULL last), which users rely on. The lake route adds
  that ``ORDER BY`` (:func:`sort_distinct`, before typing, so the ORDER BY gets the collation and ``char(n)``
  rules of any other), and the suite compares those results in order.
* ``array_agg`` of an array: PostgreSQL builds a multi-dimensional array (and raises errors for NULL or ragged
  inputs) that neither route's results hold: refused.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.pgtyping import Typer

#: aggregates whose result lists their input in order (sqlglot's nodes; json(b)_agg may also be Anonymous)
_LISTING = (exp.ArrayAgg, exp.GroupConcat, exp.JSONArrayAgg)
_JSON_AGGREGATES = ("json_agg", "jsonb_agg")


def _argument_slot(agg: exp.Expr) -> tuple[exp.Expr, str, int | None] | None:
    """(holder, arg key, index) of the aggregate's first argument, where ``DISTINCT``/``ORDER BY`` sit."""
    if isinstance(agg, _LISTING):
        return agg, "this", None
    if isinstance(agg, exp.Anonymous) and agg.name.lower() in _JSON_AGGREGATES and len(agg.expressions) == 1:
        return agg, "expressions", 0
    return None


def sort_distinct(ast: exp.Expr) -> None:
    """``agg(DISTINCT x)`` -> ``agg(DISTINCT x ORDER BY x)``: PostgreSQL's sort for DISTINCT orders the result."""
    for agg in list(ast.find_all(exp.ArrayAgg, exp.GroupConcat, exp.JSONArrayAgg, exp.Anonymous)):
        slot = _argument_slot(agg)
        if slot is None:
            continue
        holder, key, index = slot
        argument = holder.args[key] if index is None else holder.args[key][index]
        if not isinstance(argument, exp.Distinct) or len(argument.expressions) != 1:
            continue
        value = argument.expressions[0]
        order = exp.Order(this=argument, expressions=[exp.Ordered(this=value.copy(), nulls_first=False)])
        if index is None:
            holder.set(key, order)
        else:
            holder.args[key][index] = order
            order.parent, order.arg_key, order.index = holder, key, index


def _array_of_arrays(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.ArrayAgg):
        return None
    value = node.this.this if isinstance(node.this, exp.Order) else node.this
    if isinstance(value, exp.Distinct) and value.expressions:
        value = value.expressions[0]
    typ = types.of(value)
    if typ is not None and typ.dims:
        raise refusal(node, "array_agg() of arrays (PostgreSQL builds a multi-dimensional array)")
    return None


def _distinct_json(node: exp.Expr, types: Typer) -> exp.Expr | None:
    slot = _argument_slot(node)
    if slot is None or isinstance(node, exp.ArrayAgg | exp.GroupConcat):
        return None
    holder, key, index = slot
    argument = holder.args[key] if index is None else holder.args[key][index]
    inner = argument.this if isinstance(argument, exp.Order) else argument
    if isinstance(inner, exp.Distinct):
        name = node.name.lower() if isinstance(node, exp.Anonymous) else "json_agg"
        raise refusal(
            node, f"{name}(DISTINCT ...) (DuckDB cannot order a DISTINCT list by the values' own order)"
        )
    return None


def _every(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """``every(b)`` is ``bool_and(b)``: DuckDB's ``every`` is a macro, which takes no FILTER, DISTINCT or ORDER
    BY (found by the differential fuzzer)."""
    if isinstance(node, exp.Anonymous) and node.name.lower() == "every" and len(node.expressions) == 1:
        return exp.Anonymous(this="bool_and", expressions=list(node.expressions))
    return None


RULES: list[Rule] = [_array_of_arrays, _distinct_json, _every]

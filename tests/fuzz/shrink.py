"""Minimise a query that answers differently: smaller statements are tried as long as the difference stays.

Reductions, each tried in turn until none keeps the difference (or the budget is spent): drop ORDER BY, LIMIT,
OFFSET, WHERE, HAVING, DISTINCT, a FILTER, one select-list item, one side of a set operation; replace any
expression by one of its operands. A candidate counts only if PostgreSQL still answers it as it answered the
original (rows, or an error): a reduction that made the statement invalid is not the same difference.

Written by hand over sqlglot's tree (as C-Reduce and SQLancer's reducers do over theirs); no library reduces
SQL for a differential oracle.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import sqlglot
from sqlglot import exp

_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_SCHEMA = "fzt"


def _parse(template: str) -> exp.Expr | None:
    try:
        return sqlglot.parse_one(_PLACEHOLDER.sub(rf"{_SCHEMA}.\1", template), read="postgres")
    except sqlglot.errors.SqlglotError:
        return None


def _write(tree: exp.Expr) -> str:
    return re.sub(rf"\b{_SCHEMA}\.(\w+)", r"{\1}", tree.sql(dialect="postgres"))


def candidates(template: str) -> Iterator[str]:
    """Smaller variants of ``template``, roughly largest reductions first."""
    tree = _parse(template)
    if tree is None:
        return
    seen = {template}

    def emit(new: exp.Expr) -> Iterator[str]:
        try:
            text = _write(new)
        except (ValueError, sqlglot.errors.SqlglotError):  # a reduction sqlglot cannot write: not a candidate
            return
        if text not in seen:
            seen.add(text)
            yield text

    if isinstance(tree, exp.SetOperation):
        for side in ("this", "expression"):
            yield from emit(tree.args[side].copy())
    for key in ("order", "limit", "offset", "where", "having", "distinct"):
        for node in list(tree.find_all(exp.Query)):
            if node.args.get(key) is not None:
                copy = tree.copy()
                target = _same(copy, tree, node)
                target.set(key, None)
                yield from emit(copy)
    for node in list(tree.find_all(exp.Select)):
        if len(node.expressions) > 1:
            for i in range(len(node.expressions)):
                copy = tree.copy()
                target = _same(copy, tree, node)
                items = list(target.expressions)
                del items[i]
                target.set("expressions", items)
                target.set("order", None)
                yield from emit(copy)
    for node in list(tree.find_all(exp.Filter)):
        copy = tree.copy()
        _same(copy, tree, node).replace(_same(copy, tree, node.this))
        yield from emit(copy)
    nodes = [n for n in tree.walk() if _reducible(n)]
    for node in nodes:
        for child in node.iter_expressions():
            if not isinstance(child, exp.Expr) or isinstance(child, exp.Identifier | exp.DataType):
                continue
            copy = tree.copy()
            target, replacement = _same(copy, tree, node), _same(copy, tree, child)
            target.replace(replacement.copy())
            yield from emit(copy)


def _reducible(node: exp.Expr) -> bool:
    return isinstance(
        node, exp.Func | exp.Binary | exp.Unary | exp.Cast | exp.Case | exp.Paren
    ) and not isinstance(node, exp.AggFunc | exp.Window)


def _same(copy: exp.Expr, original: exp.Expr, node: exp.Expr) -> exp.Expr:
    """The node of ``copy`` at ``node``'s place in ``original``."""
    path = []
    current = node
    while current is not original:
        parent = current.parent
        assert parent is not None
        path.append((current.arg_key, current.index))
        current = parent
    target = copy
    for key, index in reversed(path):
        value = target.args[key]
        target = value[index] if index is not None else value
    return target


def shrink(template: str, still: Callable[[str], bool], budget: int = 150) -> str:
    """The smallest variant of ``template`` for which ``still`` holds, greedily."""
    current = template
    progress = True
    while progress and budget > 0:
        progress = False
        for candidate in candidates(current):
            budget -= 1
            if still(candidate):
                current, progress = candidate, True
                break
            if budget <= 0:
                break
    return current

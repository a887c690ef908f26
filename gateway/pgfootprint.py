"""What of a PostgreSQL-route statement could meet an extension's operator or function: its
:class:`~lakegate.connectors.postgres.extensions.Footprint`, read from the syntax tree and the SQL sent.

The PostgreSQL route searches the schemas of extensions that no untrusted role can write
(:mod:`lakegate.connectors.postgres.extensions`); a statement that would use an extension whose schema is not
searched is refused rather than answered with a built-in operator. Whether it would is decided from the
footprint, conservatively: a column *name* stands for every column of that name, and a column is "used" unless
it is only passed through — a select-list item (also under an alias, which then carries its type on), an
``ORDER BY``/``GROUP BY``/``DISTINCT ON``/``PARTITION BY`` key (PostgreSQL finds their operators through the
type's default operator class, not the search path), ``count()``, ``IS NULL`` or a cast. Function names and
operator symbols come from the tokens of the SQL text sent, so every unqualified ``name(`` counts.
"""

from __future__ import annotations

import time

import sqlglot
from sqlglot import exp
from sqlglot.tokens import TokenType

from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.postgres.extensions import Footprint, refusal
from lakegate.connectors.query import QueryError
from lakegate.gateway import functions
from lakegate.gateway.errors import Forbidden, QueryFailed
from lakegate.gateway.execute import engine_error
from lakegate.gateway.guard import function_name

_PUNCTUATION = {"(", ")", "[", "]", ",", ";", ".", "::", ":", "*"}
#: what a use of a column is called in a refusal
_WHAT: dict[type[exp.Expr], str] = {
    exp.EQ: "=",
    exp.NEQ: "<>",
    exp.GT: ">",
    exp.GTE: ">=",
    exp.LT: "<",
    exp.LTE: "<=",
    exp.In: "IN",
    exp.Between: "BETWEEN",
    exp.Like: "LIKE",
    exp.ILike: "ILIKE",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM",
    exp.NullSafeNEQ: "IS DISTINCT FROM",
    exp.JSONExtract: "->",
    exp.JSONExtractScalar: "->>",
}
_THROUGH = (exp.Paren, exp.Alias)
#: operators written as keywords
_KEYWORD_OPERATORS = {TokenType.LIKE: ("~~", "!~~"), TokenType.ILIKE: ("~~*", "!~~*")}


def footprint(ast: exp.Expression, relations: tuple[tuple[str, str], ...], sql: str) -> Footprint:
    """The footprint of ``ast`` (sent as ``sql``), which reads ``relations`` (schema, name)."""
    uses: dict[str, str] = {}
    aliases: set[tuple[str, str]] = set()
    opaque = False
    for node in ast.walk():
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            name = _name(node.this)
            how = _use(node, aliases)
            if how is not None:
                uses.setdefault(name, how)
        elif isinstance(node, exp.Join):
            opaque = opaque or node.args.get("method") == "NATURAL"
            for ident in node.args.get("using") or ():
                uses.setdefault(_name(ident), "operator = (USING)")
        elif isinstance(node, exp.TableAlias) and node.args.get("columns"):
            opaque = True  # renamed by position
        elif isinstance(node, exp.Star) and _in_expression(node):
            opaque = True
    functions, operators = _tokens(sql)
    casts = frozenset(_type_name(c.to) for c in ast.find_all(exp.Cast) if c.to is not None)
    return Footprint(
        relations=relations,
        uses=tuple(sorted(uses.items())),
        aliases=tuple(sorted(aliases)),
        opaque=opaque,
        functions=functions,
        operators=operators,
        casts=casts,
    )


def _use(column: exp.Column, aliases: set[tuple[str, str]]) -> str | None:
    """How ``column`` is used (None: only passed through; an alias it is passed on as goes to ``aliases``)."""
    child: exp.Expression = column
    parent = column.parent
    while isinstance(parent, _THROUGH):
        if isinstance(parent, exp.Alias):
            aliases.add((_name(column.this), _name(parent.args["alias"])))
        child, parent = parent, parent.parent
    if isinstance(parent, exp.Select) and child in parent.expressions:
        return "a subquery's value" if _in_expression(parent) else None
    if isinstance(parent, (exp.Ordered, exp.Group, exp.Cast, exp.TryCast, exp.Count, exp.Distinct)):
        return None
    if isinstance(parent, exp.Is):
        return None
    if isinstance(parent, exp.Tuple) and isinstance(parent.parent, exp.Distinct):
        return None
    if isinstance(parent, exp.Window) and child in (parent.args.get("partition_by") or ()):
        return None
    if parent is None:
        return "an expression"
    if type(parent) in _WHAT:
        return f"operator {_WHAT[type(parent)]}"
    if isinstance(parent, exp.Func):
        return f"function {function_name(parent)}()"
    return parent.key.upper()


def _in_expression(node: exp.Expression) -> bool:
    """Inside a query that is used as a value (scalar, IN, EXISTS, ANY, ARRAY), not a table or CTE."""
    query = node if isinstance(node, exp.Select) else node.find_ancestor(exp.Select)
    if query is None:
        return False
    parent = query.parent
    while isinstance(parent, exp.Subquery) and not parent.args.get("alias"):
        parent = parent.parent
    return parent is not None and not isinstance(
        parent, (exp.From, exp.Join, exp.Lateral, exp.CTE, exp.With, exp.SetOperation, exp.Subquery)
    )


def _tokens(sql: str) -> tuple[frozenset[str], frozenset[str]]:
    """Unqualified function names (a word followed by ``(`` and not preceded by ``.``) and operator symbols."""
    tokens = sqlglot.tokenize(sql, read="postgres")
    functions, operators = set(), set()
    for i, token in enumerate(tokens):
        text = token.text
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        prev = tokens[i - 1] if i else None
        if nxt is not None and nxt.token_type == TokenType.L_PAREN and (prev is None or prev.text != "."):
            if token.token_type == TokenType.IDENTIFIER:
                functions.add(text)
            elif text[:1].isalpha() or text[:1] == "_":
                functions.add(text.lower())
        if text and not any(ch.isalnum() or ch in "_'\"$" for ch in text) and text not in _PUNCTUATION:
            operators.add(text)
        operators.update(_KEYWORD_OPERATORS.get(token.token_type, ()))
    return frozenset(functions), frozenset(operators)


def _name(node: exp.Expression) -> str:
    if isinstance(node, exp.Identifier):
        return node.name if node.quoted else node.name.lower()
    return node.name.lower()


def _type_name(to: exp.DataType) -> str:
    """``citext`` of ``::public.citext[]`` (the type's own name, without schema, modifiers or array marks)."""
    text = to.sql(dialect="postgres")
    base = text.split("(")[0].split("[")[0].strip()
    last = base.rsplit(".", 1)[-1].strip()
    return last[1:-1] if last.startswith('"') else last.lower()


def check(engine: PostgresEngine, fp: Footprint | None) -> None:
    """Refuse a PostgreSQL-route statement that would reach the database's own functions or an extension whose
    schema the sessions do not search (:func:`lakegate.connectors.postgres.extensions.refusal`)."""
    if fp is None:
        return
    try:
        problem = refusal(engine.extensions(), fp, engine.carriers)
    except QueryError as exc:
        raise engine_error(exc) from exc
    if problem is not None:
        message, forbidden = problem
        raise Forbidden(message) if forbidden else QueryFailed(message)


class ExtensionNames:
    """The guard's view of the sources' extension functions: the names of those of the extensions in
    :data:`lakegate.gateway.functions.EXTENSIONS`, read from each source (a source that cannot be read is asked
    again after ``RETRY`` seconds; meanwhile its names are not known)."""

    RETRY = 60.0

    def __init__(self, postgres: dict[str, PostgresEngine]) -> None:
        self.postgres = postgres
        self._failed: dict[str, float] = {}

    def __call__(self) -> frozenset[str]:
        names: set[str] = set()
        for source, engine in self.postgres.items():
            failed = self._failed.get(source)
            if failed is not None and time.monotonic() - failed < self.RETRY:
                continue
            try:
                names |= engine.extensions().functions(functions.EXTENSIONS)
                self._failed.pop(source, None)
            except QueryError:
                self._failed[source] = time.monotonic()
        return frozenset(names)

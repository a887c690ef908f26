"""The read-only guard, layers 1 and 2 of the defence in depth: decided on the sqlglot AST, never on text.

1. Statement shape: the statement is a query (SELECT, WITH, a set operation, VALUES) and no node anywhere in it
   writes, changes the session or runs a command: no DML/DDL (also not inside a WITH), no SELECT INTO, no FOR
   UPDATE/SHARE, no COPY/ATTACH/INSTALL/LOAD/SET/PRAGMA/CALL (sqlglot parses what it does not know as an opaque
   command, which is refused as such).
2. Functions: every call must be on the allow-list (:mod:`lakegate.gateway.functions`); table functions in
   FROM are limited to row generators. Bind parameters are not supported.

The engines are sandboxed as well (layer 3, :mod:`lakegate.connectors.duckdb.engine` and
:mod:`lakegate.connectors.postgres.engine`), so a hole here is not a hole through.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from lakegate.gateway import functions
from lakegate.gateway.errors import Forbidden, UnsupportedQuery
from lakegate.gateway.parse import position

_QUERY_TYPES = (exp.Select, exp.SetOperation, exp.Values, exp.Subquery)
_FORBIDDEN_NAMES = (
    "Insert",
    "Update",
    "Delete",
    "Merge",
    "Create",
    "Drop",
    "Alter",
    "AlterColumn",
    "Copy",
    "Command",
    "Set",
    "SetItem",
    "Pragma",
    "Into",
    "Lock",
    "Transaction",
    "Commit",
    "Rollback",
    "Use",
    "Attach",
    "Detach",
    "Install",
    "Grant",
    "Revoke",
    "Analyze",
    "Refresh",
    "TruncateTable",
    "Cache",
    "Uncache",
    "LoadData",
    "Kill",
    "Export",
    "Comment",
    "Execute",
    "Declare",
    "Heredoc",
    "Summarize",
    "Show",
    "Describe",
)
_FORBIDDEN = tuple(getattr(exp, name) for name in _FORBIDDEN_NAMES if hasattr(exp, name))
_WHAT = {
    "Into": "SELECT ... INTO (it creates a table)",
    "Lock": "FOR UPDATE / FOR SHARE (row locks)",
    "Command": "this command",
    "SetItem": "SET",
    "Set": "SET",
}
#: sqlglot classes for table functions it knows by type.
_TYPED_TABLE_FUNCTIONS = {
    exp.Unnest: "unnest",
    exp.ExplodingGenerateSeries: "generate_series",
    exp.GenerateSeries: "generate_series",
}
_DENIED_TYPED = {
    "ReadCSV",
    "ReadParquet",
    "ToFile",
    "NextValueFor",
    "CurrentUser",
    "CurrentCatalog",
    "CurrentRole",
}


def _typed_functions() -> dict[str, str]:
    """Upper-case function name -> the sqlglot class it parses to, for the functions sqlglot knows by type."""
    from sqlglot.dialects.postgres import Postgres

    typed = {}
    for name, builder in Postgres.Parser.FUNCTIONS.items():
        kind = getattr(builder, "__self__", None) or getattr(builder, "__qualname__", "")
        typed[name] = kind.__name__ if isinstance(kind, type) else str(kind).split(".")[0]
    return {name: kind for name, kind in typed.items() if kind and kind != "Anonymous"}


_TYPED_FUNCTIONS = _typed_functions()


class Guard:
    """Checks statements against the allow-lists; ``engine_functions`` comes from the DuckDB engine."""

    def __init__(self, engine_functions: frozenset[str], extra: frozenset[str] = frozenset()) -> None:
        self.engine_functions = engine_functions
        names = {name.lower() for name in extra}
        self.extra = frozenset(n for n in names if "." not in n)
        self.qualified = frozenset(n for n in names if "." in n)  #: schema.function of the source's own
        #: names of the functions of the PostgreSQL sources' extensions (asked only for a name not allowed
        #: otherwise; the PostgreSQL route refuses those it must not run, :mod:`.pgfootprint`)
        self.extension_functions: Callable[[], frozenset[str]] = frozenset

    def check(self, ast: exp.Expression, start: tuple[int | None, int | None] = (None, None)) -> None:
        """Raise :class:`Forbidden` (or :class:`UnsupportedQuery`) unless ``ast`` is a read-only query
        (``start``: where the statement's first word is in the user's text)."""
        check_shape(ast, start)
        check_subqueries(ast)
        for node in ast.walk():
            if (
                isinstance(node, exp.Table)
                and isinstance(node.this, exp.Func)
                or isinstance(node, (exp.Lateral, exp.Unnest))
                and isinstance(node.this, exp.Func)
            ):
                self._check_table_function(node.this)
            if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
                self._check_qualified(node, node.expression, _qualifier(node.this))
                continue
            if isinstance(node, exp.Table) and isinstance(node.this, exp.Func) and node.args.get("db"):
                self._check_qualified(node, node.this, _qualifier(node))
            if isinstance(node, exp.Operator) and "." in str(node.args.get("operator") or ""):
                _check_operator(node)
            if isinstance(node, exp.Func) and not self._checked(node):
                self._check_function(node)
            elif isinstance(node, (exp.Parameter, exp.Placeholder)):
                raise _unsupported(
                    node, "bind parameters ($1, ?, :name) are not supported; put the values into the SQL text"
                )

    def _check_qualified(self, node: exp.Expression, func: exp.Func, schema: str) -> None:
        """``schema.function(...)``: pg_catalog's functions pass the allow-list as usual; any other schema's
        function (a user's, perhaps SECURITY DEFINER) only when listed, qualified, in allow_functions."""
        name = function_name(func)
        if schema == "pg_catalog" or f"{schema}.{name}" in self.qualified:
            func.meta["lakegate_checked"] = schema != "pg_catalog"
            return
        raise _forbidden(
            node,
            f"function {schema}.{name}() is not allowed: functions of other schemas than pg_catalog run only "
            f"when listed schema-qualified in [gateway] allow_functions (e.g. \"{schema}.{name}\")",
        )

    @staticmethod
    def _checked(node: exp.Func) -> bool:
        return bool(node.meta.get("lakegate_checked"))

    def call_allowed(self, name: str) -> bool:
        """May a query call the function ``name`` (as PostgreSQL folds it), unqualified or from pg_catalog?
        The same rule as for sqlglot's reading below: the allow-list, the sources' extension functions, and
        the functions sqlglot knows by type (standard SQL) unless denied."""
        if name in functions.NEVER:
            return False
        if self._anonymous_ok(name):
            return True
        typed = _TYPED_FUNCTIONS.get(name.upper())
        return typed is not None and self._typed_ok(name, typed)

    def _anonymous_ok(self, name: str) -> bool:
        return functions.allowed(name, self.engine_functions, self.extra) or (
            not functions.denied(name) and name in self.extension_functions()
        )

    def _typed_ok(self, name: str, kind: str) -> bool:
        return kind not in _DENIED_TYPED and (not functions.denied(name) or name in self.extra)

    def _check_function(self, node: exp.Func) -> None:
        name = function_name(node)
        if name == "current_setting" and _readable_setting(node):
            return
        if name in functions.NEVER:
            ok = False
        elif isinstance(node, exp.Anonymous):
            ok = self._anonymous_ok(name)
        else:  # a function sqlglot knows by type: standard SQL, unless denied
            ok = self._typed_ok(name, type(node).__name__)
        if not ok:
            raise _forbidden(
                node,
                f"function {name}() is not allowed: the gateway runs only functions on its "
                "allow-list, and never ones that reach files, URLs, other databases, settings "
                "or sequences",
            )

    def _check_table_function(self, node: exp.Func) -> None:
        name = _TYPED_TABLE_FUNCTIONS.get(type(node)) or function_name(node)
        if name not in functions.TABLE_FUNCTIONS:
            raise _forbidden(
                node,
                f"table function {name}() is not allowed in FROM: only row generators "
                f"({', '.join(sorted(functions.TABLE_FUNCTIONS))}) are; read tables by "
                "their names (source.schema.table)",
            )


def _check_operator(node: exp.Operator) -> None:
    """``OPERATOR(schema.op)``: another schema's operator runs a function of that schema; pg_catalog's is the
    built-in operator, which the lake route does not read in this form."""
    written = str(node.args.get("operator"))
    schema, _, symbol = written.rpartition(".")
    if schema.strip().strip('"').lower() == "pg_catalog":
        raise _unsupported(
            node, f"OPERATOR({written}) is not supported: write the built-in operator {symbol} without OPERATOR()"
        )
    raise _forbidden(node, f"OPERATOR({written}) is not allowed: only the built-in operators are")


def check_shape(ast: exp.Expression, start: tuple[int | None, int | None] = (None, None)) -> None:
    if not isinstance(ast, _QUERY_TYPES):
        line, column = start if start[0] is not None else position(ast)
        raise Forbidden(
            f"{statement_name(ast)} is not allowed: the gateway runs only queries "
            "(SELECT, WITH, UNION/INTERSECT/EXCEPT, VALUES, EXPLAIN, SHOW, DESCRIBE)",
            line=line,
            column=column,
        )
    for node in ast.walk():
        if isinstance(node, _FORBIDDEN):
            what = _WHAT.get(type(node).__name__, statement_name(node))
            raise _forbidden(node, f"{what} is not allowed: the gateway is read-only")


#: Subqueries inside expressions (scalar, IN, EXISTS, ANY, ARRAY) weigh 2**depth each; DuckDB's filter pushdown
#: takes time exponential in their nesting (measured: 20 nested scalar subqueries 1.1 s, 22 4 s, 30 > 60 s; depth
#: 12 with two per level 16 s), in its optimizer, where an interrupt is not seen. 2**15 is tens of milliseconds.
SUBQUERY_BUDGET = 2**15
_NOT_EXPRESSION = (exp.From, exp.Join, exp.Lateral, exp.CTE, exp.With, exp.SetOperation, exp.Table)


def check_subqueries(ast: exp.Expression) -> None:
    """Refuse statements whose subqueries in expressions nest beyond what the engines plan in bounded time."""
    weight = 0
    stack: list[tuple[exp.Expression, int]] = [(ast, 0)]
    while stack:
        node, depth = stack.pop()
        if node is not ast and isinstance(node, (exp.Select, exp.SetOperation)) and _in_expression(node):
            depth += 1
            weight += 2**depth
            if weight > SUBQUERY_BUDGET:
                line, column = position(node)
                raise UnsupportedQuery(
                    f"the statement nests subqueries inside expressions too deeply ({depth} levels here, or too "
                    "many at deep levels): their planning time grows exponentially and cannot be interrupted. "
                    "Rewrite the inner ones as CTEs or joins",
                    line=line,
                    column=column,
                )
        stack.extend((child, depth) for child in node.iter_expressions())


def _in_expression(query: exp.Expression) -> bool:
    """A query used as a value (scalar, IN, EXISTS, ANY, ARRAY), not as a table, CTE or set operand."""
    parent = query.parent
    while isinstance(parent, exp.Subquery) and not parent.args.get("alias"):
        parent = parent.parent
    return parent is not None and not isinstance(parent, _NOT_EXPRESSION) and not (
        isinstance(parent, exp.Subquery) and parent.args.get("alias")
    )


def statement_name(node: exp.Expression) -> str:
    """The statement's first keyword (INSTALL httpfs parses as an alias, CHECKPOINT as a column); comments,
    such as the one Redash puts first, are not part of it."""
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    words = node.sql(dialect="postgres", comments=False).split()
    return words[0].upper() if words else "this statement"


def _qualifier(node: exp.Expression) -> str:
    """``a.b`` of ``a.b.f()`` (a Dot chain) or of a table function's db/catalog, folded like names."""
    if isinstance(node, exp.Table):
        parts = [p for p in (node.args.get("catalog"), node.args.get("db")) if p is not None]
    else:
        parts = list(node.flatten()) if isinstance(node, exp.Dot) else [node]
    return ".".join(p.name if isinstance(p, exp.Identifier) and p.quoted else p.name.lower() for p in parts)


def function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


def _forbidden(node: exp.Expression | exp.Func, message: str) -> Forbidden:
    line, col = position(node)
    return Forbidden(message, line=line, column=col)


def _unsupported(node: exp.Expression, message: str) -> UnsupportedQuery:
    line, col = position(node)
    return UnsupportedQuery(message, line=line, column=col)


def _readable_setting(node: exp.Func) -> bool:
    """``current_setting('<a setting drivers read>'[, missing_ok])``, the name a string constant."""
    args = list(node.expressions)
    if not args or len(args) > 2 or not isinstance(args[0], exp.Literal) or not args[0].is_string:
        return False
    if len(args) == 2 and not isinstance(args[1], exp.Boolean):
        return False
    return functions.readable_setting(args[0].this)

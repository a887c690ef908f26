"""PostgreSQL semantics on the DuckDB route: rewrites of the statement (a sqlglot AST in the PostgreSQL dialect)
so that DuckDB computes what PostgreSQL would, or a refusal that names the construct it cannot match exactly.

sqlglot translates syntax; it does not promise PostgreSQL's semantics, which differ from DuckDB's in many
everyday places. Written by hand (no library does this); each rule is one small function, and each is covered
by the differential corpus (``tests/answers``), which runs every query on PostgreSQL and on both routes:

* ``/`` and ``%`` go through the macros ``pg_div`` / ``pg_mod`` (see
  :mod:`lakegate.connectors.duckdb.pgmacros`): division by zero is an error as in PostgreSQL; integer operands
  divide as integers (DuckDB runs with ``integer_division``); a decimal operand is refused at run time (PostgreSQL's
  numeric division picks its result scale from the values, which DuckDB's decimal cannot follow).
* ``LIKE`` / ``ILIKE`` get PostgreSQL's default escape character, the backslash.
* ``avg`` of integers or decimals (a ``numeric`` in PostgreSQL) is refused at run time; ``sum`` of ``int2``/``int4``
  columns is ``int8`` as in PostgreSQL.
* ``round(float8)`` rounds half to even (PostgreSQL uses the C library's ``rint``).
* a cast to unconstrained ``numeric`` becomes ``DECIMAL(38, 18)`` (DuckDB's default would be ``DECIMAL(18, 3)``, which
  rounds); a string cast to an integer type is checked (DuckDB rounds ``'1.5'``, PostgreSQL refuses it).
* ``substr``/``substring`` with a start below 1 and ``extract`` follow PostgreSQL (``extract`` is ``numeric``).
* refused with a reason: ``to_char``/``to_date``/``to_timestamp``/``to_number`` patterns, ``SIMILAR TO``,
  ``format()``, and the other constructs of :data:`REFUSED`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlglot import exp

from lakegate.gateway.errors import UnsupportedQuery
from lakegate.gateway.parse import position

#: function names (as sqlglot names them, lower case) refused on the DuckDB route, with the reason
REFUSED: dict[str, str] = {
    "tochar": "to_char() with PostgreSQL's patterns",
    "to_char": "to_char() with PostgreSQL's patterns",
    "strtodate": "to_date() with PostgreSQL's patterns",
    "strtotime": "to_timestamp()/to_date() with PostgreSQL's patterns",
    "timestrtotime": "to_timestamp() with PostgreSQL's patterns",
    "to_number": "to_number() with PostgreSQL's patterns",
    "timetostr": "to_char() with PostgreSQL's patterns",
    "format": "format() (PostgreSQL's %I/%L/%s conversions)",
    "similarto": "SIMILAR TO (PostgreSQL's SQL regular expressions)",
}

INTEGERS = {exp.DataType.Type.INT, exp.DataType.Type.SMALLINT, exp.DataType.Type.TINYINT}
Types = Mapping[str, exp.DataType]


def lake_type(t: object) -> exp.DataType | None:
    """A pyiceberg type -> the sqlglot type of its DuckDB column (None where the rules need no type)."""
    name = type(t).__name__
    simple = {
        "IntegerType": "INT",
        "LongType": "BIGINT",
        "FloatType": "FLOAT",
        "DoubleType": "DOUBLE",
        "StringType": "TEXT",
        "BooleanType": "BOOLEAN",
    }
    if name in simple:
        return exp.DataType.build(simple[name])
    if name == "DecimalType":
        return exp.DataType.build(f"DECIMAL({t.precision}, {t.scale})")  # type: ignore[attr-defined]
    return None


def refusal(node: exp.Expression, what: str) -> UnsupportedQuery:
    line, column = position(node)
    return UnsupportedQuery(
        f"{what} cannot be computed exactly as PostgreSQL does on the lake route (DuckDB); run it on a "
        "PostgreSQL source, or rewrite it without this construct",
        line=line,
        column=column,
    )


def postgres_semantics(ast: exp.Expression, columns: Types) -> None:
    """Rewrite ``ast`` in place; ``columns`` maps column names (``name`` and ``table.name``) to their types
    where they are known."""
    for node in list(ast.walk()):
        _refuse(node)  # type: ignore[arg-type]
    rules: list[Callable[[exp.Expression, Types], exp.Expression | None]] = [
        _division,
        _like,
        _aggregates,
        _round,
        _cast,
        _substring,
        _extract,
        _hex,
    ]
    for node in list(ast.walk()):
        for rule in rules:
            # rules wrap the node itself (never a copy: the router still renames the tables inside it)
            parent, key, index = node.parent, node.arg_key, node.index
            replacement = rule(node, columns)  # type: ignore[arg-type]
            if replacement is not None:
                if parent is None:
                    raise refusal(node, "this statement")  # type: ignore[arg-type]
                _put(parent, key, index, replacement)
                break


def _put(parent: exp.Expr, key: str | None, index: int | None, new: exp.Expression) -> None:
    assert key is not None
    if index is None:
        parent.set(key, new)
    else:
        parent.args[key][index] = new
        new.parent, new.arg_key, new.index = parent, key, index


def _refuse(node: exp.Expression) -> None:
    key = node.key.lower()
    if isinstance(node, exp.Anonymous):
        key = node.name.lower()
    reason = REFUSED.get(key)
    if reason is not None:
        raise refusal(node, reason)


def _division(node: exp.Expression, columns: Types) -> exp.Expression | None:
    if isinstance(node, exp.Div | exp.Mod) and not node.args.get("_pg"):
        name = "pg_div" if isinstance(node, exp.Div) else "pg_mod"
        return exp.Anonymous(this=name, expressions=[node.this, node.expression])
    if isinstance(node, exp.IntDiv):  # DuckDB's //, written by the user as div(a, b)
        return exp.Anonymous(this="pg_idiv", expressions=[node.this, node.expression])
    return None


def _like(node: exp.Expression, columns: Types) -> exp.Expression | None:
    if isinstance(node, exp.Like | exp.ILike) and not isinstance(node.parent, exp.Escape):
        return exp.Escape(this=node, expression=exp.Literal.string("\\"))
    return None


def type_of(node: exp.Expression, columns: Types) -> exp.DataType | None:
    """The type of a column reference, literal or cast, where it is known."""
    if isinstance(node, exp.Paren | exp.Neg):
        return type_of(node.this, columns)
    if isinstance(node, exp.Cast):
        return node.to
    if isinstance(node, exp.Literal):
        if node.is_string:
            return exp.DataType.build("text")
        return exp.DataType.build("int" if node.is_int else "decimal")
    if isinstance(node, exp.Column):
        return columns.get(f"{node.table}.{node.name}" if node.table else node.name)
    return None


def _is(t: exp.DataType | None, kinds: set[Any]) -> bool:
    return t is not None and t.this in kinds


def _aggregates(node: exp.Expression, columns: Types) -> exp.Expression | None:
    if isinstance(node, exp.Avg) and not node.args.get("_pg"):
        node.set("this", exp.Anonymous(this="pg_avg_arg", expressions=[node.this]))
        node.set("_pg", True)
        return None
    if isinstance(node, exp.Sum) and _is(type_of(node.this, columns), INTEGERS) and not node.args.get("_pg"):
        node.set("_pg", True)
        return exp.Cast(this=node, to=exp.DataType.build("BIGINT"))
    return None


def _round(node: exp.Expression, columns: Types) -> exp.Expression | None:
    if isinstance(node, exp.Round) and node.args.get("decimals") is None:
        t = type_of(node.this, columns)
        if _is(t, {exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT}):
            return exp.Anonymous(this="round_even", expressions=[node.this, exp.Literal.number(0)])
    return None


def _cast(node: exp.Expression, columns: Types) -> exp.Expression | None:
    if not isinstance(node, exp.Cast) or node.args.get("_pg"):
        return None
    to = node.to
    if to.this == exp.DataType.Type.DECIMAL and not to.expressions:
        node.set("to", exp.DataType.build("DECIMAL(38, 18)"))
        node.set("_pg", True)
        return None
    source = type_of(node.this, columns)
    if to.this in INTEGERS | {exp.DataType.Type.BIGINT} and _is(source, {exp.DataType.Type.TEXT}):
        node.set("this", exp.Anonymous(this="pg_int_text", expressions=[node.this]))
        node.set("_pg", True)
    return None


def _substring(node: exp.Expression, columns: Types) -> exp.Expression | None:
    if not isinstance(node, exp.Substring):
        return None
    start, length = node.args.get("start"), node.args.get("length")
    if start is None:
        return None
    args = [node.this, start] + ([length] if length is not None else [])
    return exp.Anonymous(this="pg_substr", expressions=args)


_EXTRACT_EXACT = {"SECOND": "pg_extract_second", "EPOCH": "pg_extract_epoch"}


def _extract(node: exp.Expression, columns: Types) -> exp.Expression | None:
    if not isinstance(node, exp.Extract) or node.args.get("_pg"):
        return None
    unit = node.this.name.upper()
    if unit in _EXTRACT_EXACT:
        return exp.Anonymous(this=_EXTRACT_EXACT[unit], expressions=[node.expression])
    if unit in ("MILLISECONDS", "MICROSECONDS", "JULIAN", "TIMEZONE", "TIMEZONE_HOUR", "TIMEZONE_MINUTE"):
        raise refusal(node, f"extract({unit.lower()} ...)")
    node.set("_pg", True)
    return exp.Cast(this=node, to=exp.DataType.build("DECIMAL(38, 0)"))


def _hex(node: exp.Expression, columns: Types) -> exp.Expression | None:
    """to_hex() is lower case in PostgreSQL."""
    if isinstance(node, exp.Hex) and not isinstance(node.parent, exp.Lower):
        return exp.Lower(this=node)
    return None

"""What drivers and BI tools ask of the session, answered on the DuckDB route as PostgreSQL's route answers it
(a rule of :mod:`lakegate.gateway.dialect`).

``current_setting('TimeZone')`` is the request's time zone (the one the statement computes in);
``current_schema()`` is ``public``, the schema a one-part table name means (:mod:`lakegate.gateway.catalog`);
DuckDB would answer its own (``main``, its ``TimeZone``). The other settings the guard lets a query read
(:data:`lakegate.gateway.functions.SHOWN_SETTINGS`) are the PostgreSQL source's: refused here with a 0A000
that says to ask ``SHOW`` or to put the call in a statement of its own (which PostgreSQL answers).
``pg_typeof(x)`` is the name PostgreSQL gives ``x``'s type (DuckDB's ``typeof`` named its own: ``decimal(20,6)``,
``varchar``), computed as ``CASE WHEN (x) IS NULL THEN 'name' ELSE 'name' END``: ``x`` is still evaluated, as
PostgreSQL evaluates it (an aggregate in it keeps the query grouped, its errors are raised); refused where the
gateway cannot tell that type. The result is text where PostgreSQL's is a ``regtype``, which prints the same but
compares by type OID and reads a literal beside it as a type OID (``pg_typeof(x) = '23'`` is true): a comparison,
ordering or ``COALESCE`` of a regtype with anything but another ``pg_typeof`` value is refused
(``pg_typeof(x)::text = 'integer'`` compares text, and is answered).
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.gateway.catalog import DEFAULT_SCHEMA
from lakegate.gateway.dialect import Rule, refusal
from lakegate.gateway.guard import function_name
from lakegate.gateway.pgtyping import Typer


def _session(node: exp.Expr, types: Typer) -> exp.Expr | None:
    value = _value(node, types)
    if value is None:
        return None
    parent = node.parent
    if isinstance(parent, exp.Dot) and parent.expression is node:  # pg_catalog.current_setting(...)
        parent.replace(value)
        return None
    return value


#: ``regtype``'s output (``format_type`` without a typmod) where it is not ``pg_type.typname``
_REGTYPE = {
    "int2": "smallint",
    "int4": "integer",
    "int8": "bigint",
    "float4": "real",
    "float8": "double precision",
    "varchar": "character varying",
    "bpchar": "character",
    "bool": "boolean",
    "timestamp": "timestamp without time zone",
    "timestamptz": "timestamp with time zone",
    "time": "time without time zone",
    "timetz": "time with time zone",
    "varbit": "bit varying",
}


def _value(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if _is_typeof(node):
        value = node.expressions[0]
        typ = types.of(value)
        if typ is None:
            raise refusal(node, f"{node.sql(dialect='postgres')} (the gateway cannot tell this value's type)")
        shown = exp.Literal.string(_REGTYPE.get(typ.name, typ.name) + "[]" * min(typ.dims, 1))
        evaluated = exp.Is(this=exp.Paren(this=value), expression=exp.Null())
        return exp.Case(ifs=[exp.If(this=evaluated, true=shown)], default=shown.copy())
    if isinstance(node, exp.CurrentSchema):
        return exp.Literal.string(DEFAULT_SCHEMA)
    if not isinstance(node, exp.Func) or function_name(node) != "current_setting":
        return None
    name = node.expressions[0] if node.expressions else None
    if isinstance(name, exp.Literal) and name.is_string and name.this.lower() == "timezone":
        return exp.Literal.string(types.zone)
    raise refusal(
        node,
        f"{node.sql(dialect='postgres')} (the PostgreSQL source's setting; ask SHOW, or call it in a statement "
        "that reads no lake table)",
    )


def _is_typeof(node: exp.Expr) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() == "pg_typeof" and len(node.expressions) == 1


#: nodes that compare (or order) their operands, or resolve them to one type, reading a literal as the others'
_COMPARING = (exp.EQ, exp.NEQ, exp.NullSafeEQ, exp.NullSafeNEQ, exp.In, exp.Case, exp.Coalesce, exp.Nullif)
_ORDERING = (exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Between, exp.Greatest, exp.Least, exp.Max, exp.Min)


def _regtype_compared(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """Refuses a comparison of a regtype (a ``pg_typeof`` value, already text here) other than the equality of
    two of them: PostgreSQL compares type OIDs, orders by them and reads a literal beside one as a type."""
    if not isinstance(node, _COMPARING + _ORDERING):
        return None
    if isinstance(node, exp.Case):
        operands = [node.this] if node.this is not None else []
    elif isinstance(node, exp.In):
        operands = [node.this, *node.expressions, *([node.args["query"]] if node.args.get("query") else [])]
    else:
        operands = [v for v in (node.this, node.expression, *node.expressions) if isinstance(v, exp.Expr)]
        operands += [v for k in ("low", "high") if isinstance(v := node.args.get(k), exp.Expr)]
    regtypes = [o for o in operands if _regtype(o, types)]
    if not regtypes:
        return None
    if isinstance(node, exp.Case):
        operands += [i.this for i in node.args.get("ifs") or []]
    if not isinstance(node, _ORDERING) and all(_regtype(o, types) and _typeof_value(o) for o in operands):
        return None
    raise refusal(
        regtypes[0],
        "a comparison of pg_typeof(...) (a regtype: PostgreSQL compares type OIDs and reads the other side as a "
        "type; compare pg_typeof(...)::text with text instead)",
    )


def _regtype(node: exp.Expr, types: Typer) -> bool:
    typ = types.of(node)
    return typ is not None and typ.is_("regtype")


def _typeof_value(node: exp.Expr) -> bool:
    """A pg_typeof value (or a column of one), not a literal or a cast read as a type."""
    return not isinstance(node.unnest(), exp.Cast | exp.Literal)


RULES: list[Rule] = [_session, _regtype_compared]

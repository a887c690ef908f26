"""Every function a statement can call, as PostgreSQL's own parser reads it (issue 27.1).

The guard's allow-list (:mod:`lakegate.gateway.guard`) first judged sqlglot's reading of a statement, and
PostgreSQL's grammar is larger than that reading: ``(x).f`` and ``t.f`` are *attribute notation*, which
PostgreSQL resolves as the call ``f(x)`` / ``f(t)`` when ``f`` is not a field or column (PostgreSQL docs §8.16.5,
§10.3; ``transformColumnRef``/``transformIndirection`` call ``ParseFuncOrColumn``), and sqlglot reads both as
field accesses. So the call sites are read here from libpg_query's tree — PostgreSQL's grammar itself — and
every syntax in which PostgreSQL may run a function by name is reported:

==============  ===========================================================================================
``call``        ``f(x)``, ``s.f(x)``, also with ``VARIADIC``, named and defaulted arguments, ``FILTER``,
                ``OVER``, ``WITHIN GROUP`` (one ``FuncCall`` node whatever the argument syntax)
``sql``         SQL-syntax calls PostgreSQL turns into ``pg_catalog`` functions (``EXTRACT``, ``POSITION``,
                ``AT TIME ZONE``, ``COLLATION FOR``...) and the SQL value functions (``CURRENT_USER``...)
``attribute``   a name after a dot: ``(x).f``, ``x.f``, ``t.f``, ``t.c.f`` (maybe a column or a field,
                maybe a call: the guard decides with the columns it knows)
``table``       a function in ``FROM``, ``LATERAL`` and ``ROWS FROM (...)``
``operator``    an operator symbol (user-defined operators are backed by functions), ``OPERATOR(s.op)``
``cast``        a type a value is cast to (``::t``, ``CAST``, a typed literal): ``reg*`` types look names up
                in catalogs, a user-defined cast runs its function
``tablesample`` ``TABLESAMPLE method(...)``: the method is a function
``construct``   syntax that runs something the allow-list cannot name: ``XMLTABLE``, ``JSON_TABLE``, the
                XML constructors, bind parameters
==============  ===========================================================================================

Pure: the tree in, call sites out; the tree comes from :func:`lakegate.gateway.pggrammar.tree`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

CALL, SQL, ATTRIBUTE, TABLE, OPERATOR, CAST, TABLESAMPLE, CONSTRUCT = (
    "call",
    "sql",
    "attribute",
    "table",
    "operator",
    "cast",
    "tablesample",
    "construct",
)

#: SQL value functions by their libpg_query op, as PostgreSQL names the function they stand for
VALUE_FUNCTIONS = {
    "SVFOP_CURRENT_DATE": "current_date",
    "SVFOP_CURRENT_TIME": "current_time",
    "SVFOP_CURRENT_TIME_N": "current_time",
    "SVFOP_CURRENT_TIMESTAMP": "current_timestamp",
    "SVFOP_CURRENT_TIMESTAMP_N": "current_timestamp",
    "SVFOP_LOCALTIME": "localtime",
    "SVFOP_LOCALTIME_N": "localtime",
    "SVFOP_LOCALTIMESTAMP": "localtimestamp",
    "SVFOP_LOCALTIMESTAMP_N": "localtimestamp",
    "SVFOP_CURRENT_ROLE": "current_role",
    "SVFOP_CURRENT_USER": "current_user",
    "SVFOP_USER": "user",
    "SVFOP_SESSION_USER": "session_user",
    "SVFOP_CURRENT_CATALOG": "current_catalog",
    "SVFOP_CURRENT_SCHEMA": "current_schema",
}
#: syntax no function name stands for, and what to call it in a refusal
_CONSTRUCTS = {
    "RangeTableFunc": "XMLTABLE",
    "JsonTable": "JSON_TABLE",
    "XmlExpr": "the XML functions (XMLELEMENT, XMLFOREST, XMLPI, XMLROOT, XMLCONCAT, XMLPARSE, IS DOCUMENT)",
    "XmlSerialize": "XMLSERIALIZE",
    "ParamRef": "bind parameters ($1)",
}


@dataclass(frozen=True)
class Call:
    """One place where PostgreSQL may run a function (or look a name up in a catalog)."""

    syntax: str
    name: str  #: the function's (operator's, type's) name as PostgreSQL folds it (quoted names keep case)
    schema: str = ""  #: the schema written before it ("" when unqualified)
    location: int = -1  #: 0-based character offset in the statement's text, -1 when unknown
    #: attribute notation on a ColumnRef: the names before this one (``t`` of ``t.f``); () after an expression
    qualifier: tuple[str, ...] = ()
    written: str = field(default="", compare=False)  #: how the refusal shows it
    #: ``current_setting``'s first argument when it is a string constant (and the call has at most a boolean
    #: constant besides): the setting it reads
    setting: str | None = None

    @property
    def display(self) -> str:
        return self.written or (f"{self.schema}.{self.name}" if self.schema else self.name)


def _strings(items: list[Any] | None) -> list[str]:
    """The names of a libpg_query name list (``[{"String": {"sval": ...}}, ...]``); ``*`` for A_Star."""
    out = []
    for item in items or ():
        if "String" in item:
            out.append(str(item["String"].get("sval", "")))
        else:
            out.append("*")
    return out


def _name(parts: list[str]) -> tuple[str, str]:
    """(schema, name) of a possibly qualified name (a catalog in front is dropped: it is the database)."""
    return (parts[-2] if len(parts) >= 2 else ""), (parts[-1] if parts else "")


def nodes(tree: Any) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every node of a libpg_query tree as (its type, its fields), parents before children, iteratively (a
    deeply nested statement does not recurse). A type name stands unwrapped under its field (``TypeCast``,
    ``ColumnDef``: ``{"typeName": {...}}``): it comes out as ``TypeName``."""
    stack: list[Any] = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, dict):
            continue
        for kind, body in node.items():
            if isinstance(body, dict):
                yield ("TypeName" if kind == "typeName" else kind), body
            if isinstance(body, (dict, list)):
                stack.append(body)


def calls(tree: Any) -> Iterator[Call]:
    """Every call site of a libpg_query parse tree (the list ``pgparse.parse`` returns)."""
    table_calls: set[int] = set()  #: id() of the FuncCall nodes that stand in FROM
    for kind, body in nodes(tree):
        yield from _visit(kind, body, table_calls)


def _visit(kind: str, body: dict[str, Any], table_calls: set[int]) -> Iterator[Call]:
    location = int(body.get("location", -1))
    if kind == "FuncCall":
        schema, name = _name(_strings(body.get("funcname")))
        sql_syntax = body.get("funcformat") == "COERCE_SQL_SYNTAX"
        syntax = TABLE if id(body) in table_calls else SQL if sql_syntax else CALL
        yield Call(syntax, name, schema, location, setting=_setting(body) if name == "current_setting" else None)
    elif kind == "RangeFunction":
        for item in body.get("functions") or ():  # ROWS FROM (f(), g()) and plain FROM f(): [call, coldefs]
            for part in item.get("List", {}).get("items", []) if isinstance(item, dict) else ():
                if isinstance(part, dict) and "FuncCall" in part:
                    table_calls.add(id(part["FuncCall"]))
    elif kind == "SQLValueFunction":
        yield Call(SQL, VALUE_FUNCTIONS.get(str(body.get("op")), str(body.get("op")).lower()), "", location)
    elif kind == "ColumnRef":
        fields = _strings(body.get("fields"))
        for index in range(1, len(fields)):
            if fields[index] != "*":
                yield Call(ATTRIBUTE, fields[index], "", location, tuple(fields[:index]), ".".join(fields))
    elif kind == "A_Indirection":
        for item in body.get("indirection") or ():
            if isinstance(item, dict) and "String" in item:
                name = str(item["String"].get("sval", ""))
                yield Call(ATTRIBUTE, name, "", _location(body.get("arg")), (), f"(...).{name}")
    elif kind == "A_Expr":
        schema, name = _name(_strings(body.get("name")))
        if name:
            yield Call(OPERATOR, name, schema, location)
    elif kind == "TypeName":
        schema, name = _name(_strings(body.get("names")))
        yield Call(CAST, name, schema, location)
    elif kind == "RangeTableSample":
        schema, name = _name(_strings(body.get("method")))
        yield Call(TABLESAMPLE, name, schema, location)
    elif kind in _CONSTRUCTS:
        yield Call(CONSTRUCT, kind, "", location, written=_CONSTRUCTS[kind])


def _setting(body: dict[str, Any]) -> str | None:
    """The string constant ``current_setting(...)`` names, where its arguments are constants only."""
    args = body.get("args") or []
    if not args or len(args) > 2 or body.get("agg_star") or body.get("func_variadic"):
        return None
    const = [a.get("A_Const") if isinstance(a, dict) else None for a in args]
    if any(c is None for c in const):
        return None
    name = (const[0] or {}).get("sval", {}).get("sval")
    if len(args) == 2 and "boolval" not in (const[1] or {}):
        return None
    return name if isinstance(name, str) else None


def name_of(funcname: list[Any] | None) -> tuple[str, str]:
    """(schema, name) of a libpg_query name list (a ``FuncCall``'s ``funcname``)."""
    return _name(_strings(funcname))


def _location(node: Any) -> int:
    """The location of the first node below ``node`` that has one."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key == "location" and isinstance(value, int):
                    return value
                stack.append(value)
        elif isinstance(item, list):
            stack.extend(reversed(item))
    return -1


@dataclass(frozen=True)
class Relation:
    """What one relation name of a statement may stand for: a table (its written name parts, which may also
    name a CTE) or a derived table (subquery, CTE, function) with the column names it may have; ``star``: the
    name parts of the relations its ``*`` expands (their columns are its columns too)."""

    parts: tuple[str, ...] = ()
    names: frozenset[str] = frozenset()
    star: tuple[tuple[str, ...], ...] = ()


@dataclass
class Ranges:
    """The relation names of a statement, to tell ``t.c`` (a column) from ``t.f`` (a call): each name with
    every relation it is given to anywhere in the statement (scopes are not followed: a name counts as a
    column only if it is one of every relation of that name), and each CTE's columns. Output names
    over-approximate: every label and column name inside the subquery."""

    relations: dict[str, list[Relation]] = field(default_factory=dict)
    ctes: dict[str, Relation] = field(default_factory=dict)

    def add(self, alias: str, relation: Relation) -> None:
        self.relations.setdefault(alias, []).append(relation)


def ranges(tree: Any) -> Ranges:
    """The relation names of a parse tree (see :class:`Ranges`)."""
    found = Ranges()
    for kind, body in nodes(tree):
        if kind == "RangeVar":
            alias = _alias(body) or str(body.get("relname", ""))
            found.add(alias, Relation(parts=_parts(body)))
        elif kind in ("RangeSubselect", "RangeFunction", "RangeTableFunc", "JsonTable"):
            alias = _alias(body)
            if alias:
                names, star = _outputs(body.get("subquery"))
                names |= set(_alias_columns(body)) | _function_names(body)
                found.add(alias, Relation(names=frozenset(names), star=star))
        elif kind == "CommonTableExpr":
            names, star = _outputs(body.get("ctequery"))
            names |= set(_strings(body.get("aliascolnames")))
            found.ctes[str(body.get("ctename", ""))] = Relation(names=frozenset(names), star=star)
    return found


def _parts(body: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(body[key]) for key in ("catalogname", "schemaname", "relname") if body.get(key))


def _alias(body: dict[str, Any]) -> str:
    return str((body.get("alias") or {}).get("aliasname", ""))


def _alias_columns(body: dict[str, Any]) -> list[str]:
    return _strings((body.get("alias") or {}).get("colnames"))


def _function_names(body: dict[str, Any]) -> set[str]:
    """A function in FROM without column aliases names its single column after itself."""
    names: set[str] = set()
    for item in body.get("functions") or ():
        for part in item.get("List", {}).get("items", []) if isinstance(item, dict) else ():
            if isinstance(part, dict) and "FuncCall" in part:
                names.add(_name(_strings(part["FuncCall"].get("funcname")))[1])
    return names


def _outputs(query: Any) -> tuple[set[str], tuple[tuple[str, ...], ...]]:
    """The column names a subquery can output: every select-list label and column name anywhere in it (an
    over-approximation, for the reason :class:`Ranges` gives), and, where it selects a ``*``, the relations
    read anywhere in it."""
    names: set[str] = set()
    tables: list[tuple[str, ...]] = []
    star = False
    for kind, body in nodes(query):
        if kind == "ResTarget" and body.get("name"):
            names.add(str(body["name"]))
        elif kind == "ColumnRef":
            fields = _strings(body.get("fields"))
            star = star or "*" in fields
            names.update(f for f in fields[-1:] if f != "*")
        elif kind == "FuncCall":
            names.add(_name(_strings(body.get("funcname")))[1])
        elif kind == "RangeVar":
            tables.append(_parts(body))
    return names, tuple(tables) if star else ()

"""Result column names as PostgreSQL gives them, for the lake route (issue 28.0).

PostgreSQL names an output column that has no ``AS`` by ``FigureColname``
(``src/backend/parser/parse_target.c``) over the statement's *raw* parse tree: a column reference by its last
name, a function call by its name as written (``variance``, though sqlglot writes it ``VAR_SAMP``), a cast
whose argument has no better name by the type's name as the grammar reads it (``::int`` is ``int4``,
``::double precision`` ``float8``), ``CASE`` by its ``ELSE`` if that has a name, else ``case``; ``COALESCE``,
``GREATEST``, ``LEAST``, ``NULLIF``, ``ARRAY[...]``, ``ROW(...)``, ``EXISTS`` and the SQL value functions
(``current_date`` ...) as if they were functions; a scalar subquery by the name of its column; anything else
``?column?``. DuckDB names columns otherwise (``count_star()``, ``CAST(x AS INTEGER)``), and keeps an alias's
case (``AS Total`` is ``Total``; PostgreSQL folds it to ``total``).

So the lake route reads the user's statement with PostgreSQL's own parser (libpg_query, as
:mod:`lakegate.gateway.pggrammar` does), ports ``FigureColname`` over that tree, and writes each name as an
explicit quoted alias into the sqlglot tree the route rewrites (:func:`name_columns`) — in every SELECT list
of the statement, not only the outer one, since a derived table's or a CTE's columns are referenced by these
names (``SELECT s.count FROM (SELECT count(*) FROM t) s``). A SELECT of the sqlglot tree is paired with
PostgreSQL's by the source positions the two parsers record for the same tokens (names, function names,
literals); the outer list is paired by its place if need be, and named by :func:`fallback_name` (sqlglot's
tree alone) where PostgreSQL's parser does not read the statement (time travel). After the rewrites,
:func:`keep_names` names again what they replaced. Repeated names stay repeated, as in PostgreSQL
(:func:`lakegate.gateway.execute.pg_names`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from sqlglot import exp

from lakegate.gateway.pgcalls import VALUE_FUNCTIONS

UNNAMED = "?column?"
_SIMPLE = re.compile(r"[a-z_][a-z0-9_]*")  #: a name DuckDB keeps as written unquoted (``AS total``)
_XML = {
    "IS_XMLCONCAT": "xmlconcat",
    "IS_XMLELEMENT": "xmlelement",
    "IS_XMLFOREST": "xmlforest",
    "IS_XMLPARSE": "xmlparse",
    "IS_XMLPI": "xmlpi",
    "IS_XMLROOT": "xmlroot",
    "IS_XMLSERIALIZE": "xmlserialize",
}
_JSON_FUNC = {"JSON_EXISTS_OP": "json_exists", "JSON_QUERY_OP": "json_query", "JSON_VALUE_OP": "json_value"}
#: nodes PostgreSQL names as if they were functions, whatever their arguments
_AS_FUNCTION = {
    "GroupingFunc": "grouping",
    "MergeSupportFunc": "merge_action",
    "A_ArrayExpr": "array",
    "RowExpr": "row",
    "CoalesceExpr": "coalesce",
    "XmlSerialize": "xmlserialize",
    "JsonParseExpr": "json",
    "JsonScalarExpr": "json_scalar",
    "JsonSerializeExpr": "json_serialize",
    "JsonObjectConstructor": "json_object",
    "JsonArrayConstructor": "json_array",
    "JsonArrayQueryConstructor": "json_array",
    "JsonObjectAgg": "json_objectagg",
    "JsonArrayAgg": "json_arrayagg",
}


def _kind(node: Any) -> tuple[str, dict[str, Any]]:
    """(node type, its fields) of a libpg_query node (``{"FuncCall": {...}}``)."""
    if isinstance(node, dict) and len(node) == 1:
        kind, body = next(iter(node.items()))
        if isinstance(body, dict):
            return kind, body
    return "", {}


def _strings(items: list[Any]) -> list[str]:
    return [_kind(i)[1].get("sval", "") for i in items if _kind(i)[0] == "String"]


def figure(node: Any) -> tuple[str | None, int]:
    """FigureColnameInternal: (the name or None, its strength: 0 none, 1 second best, 2 good)."""
    kind, body = _kind(node)
    if kind == "ColumnRef":
        names = _strings(body.get("fields", []))
        return (names[-1], 2) if names else (None, 0)
    if kind == "A_Indirection":
        names = _strings(body.get("indirection", []))
        return (names[-1], 2) if names else figure(body.get("arg"))
    if kind == "FuncCall":
        return _strings(body.get("funcname", []))[-1], 2
    if kind == "A_Expr":
        return ("nullif", 2) if body.get("kind") == "AEXPR_NULLIF" else (None, 0)
    if kind == "TypeCast":
        name, strength = figure(body.get("arg"))
        typename = _strings((body.get("typeName") or {}).get("names", []))
        return (typename[-1], 1) if strength <= 1 and typename else (name, strength)
    if kind == "CollateClause":
        return figure(body.get("arg"))
    if kind in _AS_FUNCTION:
        return _AS_FUNCTION[kind], 2
    if kind == "SubLink":
        return _sublink(body)
    if kind == "CaseExpr":
        name, strength = figure(body.get("defresult"))
        return ("case", 1) if strength <= 1 else (name, strength)
    if kind == "MinMaxExpr":
        return {"IS_GREATEST": "greatest", "IS_LEAST": "least"}.get(body.get("op", "")), 2
    if kind == "SQLValueFunction":
        return VALUE_FUNCTIONS.get(body.get("op", "")), 2
    if kind == "XmlExpr":
        name = _XML.get(body.get("op", ""))
        return (name, 2) if name else (None, 0)
    if kind == "JsonFuncExpr":
        name = _JSON_FUNC.get(body.get("op", ""))
        return (name, 2) if name else (None, 0)
    return None, 0


def _sublink(body: dict[str, Any]) -> tuple[str | None, int]:
    link = body.get("subLinkType")
    if link == "EXISTS_SUBLINK":
        return "exists", 2
    if link == "ARRAY_SUBLINK":
        return "array", 2
    if link == "EXPR_SUBLINK":  # the name of the subquery's (first) column
        names = select_names(body.get("subselect"))
        return (names[0], 2) if names and names[0] is not None else (None, 0)
    return None, 0


def _select(node: Any) -> dict[str, Any]:
    """A SelectStmt's fields, whether wrapped (``{"SelectStmt": ...}``) or not (a set operation's arms)."""
    kind, body = _kind(node)
    return body if kind == "SelectStmt" else node if isinstance(node, dict) else {}


def _is_star(value: Any) -> bool:
    kind, body = _kind(value)
    if kind == "ColumnRef":
        fields = body.get("fields", [])
        return bool(fields) and _kind(fields[-1])[0] == "A_Star"
    if kind == "A_Indirection":
        items = body.get("indirection", [])
        return bool(items) and _kind(items[-1])[0] == "A_Star"
    return False


def target_names(select: dict[str, Any]) -> list[str | None]:
    """The names of one (non set-operation) SELECT's columns: None for a ``*`` (the columns it expands to)."""
    if select.get("valuesLists"):
        first = _kind(select["valuesLists"][0])[1].get("items", [])
        return [f"column{i}" for i in range(1, len(first) + 1)]
    out: list[str | None] = []
    for item in select.get("targetList", []):
        target = _kind(item)[1]
        if target.get("name"):
            out.append(target["name"])
        elif _is_star(target.get("val")):
            out.append(None)
        else:
            out.append(figure(target.get("val"))[0] or UNNAMED)
    return out


def select_names(node: Any) -> list[str | None]:
    """The output column names of a SELECT statement (a set operation's are its leftmost arm's)."""
    select = _select(node)
    while select.get("op", "SETOP_NONE") != "SETOP_NONE":
        select = _select(select.get("larg"))
    return target_names(select)


# ------------------------------------------------------------------------------ pairing with sqlglot's tree


def _raw_selects(tree: Any) -> Iterator[dict[str, Any]]:
    """Every plain SELECT (with a target list) anywhere in a libpg_query tree (walked without recursion: a
    deeply nested expression is a deep tree)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("targetList") is not None and "op" in node:
                yield node
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


def _raw_positions(target: Any) -> set[int]:
    """The source positions (byte offsets) in a target, not inside a subquery."""
    out: set[int] = set()
    stack = [target]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "location" and isinstance(value, int) and value >= 0:
                    out.add(value)
                elif key != "subselect":
                    stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return out


def _glot_positions(item: exp.Expr) -> set[int]:
    """The source positions (character offsets) sqlglot recorded in a select item, not inside a subquery."""
    out: set[int] = set()
    stack: list[exp.Expr] = [item]
    while stack:
        node = stack.pop()
        if node is not item and isinstance(node, exp.Query):
            continue
        start = (node.meta or {}).get("start") if node.meta else None
        if isinstance(start, int):
            out.add(start)
        stack.extend(node.iter_expressions())
    return out


def _chars(text: str) -> dict[int, int]:
    """Byte offset -> character offset in ``text`` (libpg_query counts bytes of UTF-8, sqlglot characters)."""
    out, offset = {}, 0
    for index, char in enumerate(text):
        out[offset] = index
        offset += len(char.encode())
    return out


def pair(ast: exp.Expr, tree: list[Any], text: str) -> dict[int, list[str | None]]:
    """id() of each SELECT of ``ast`` that pairs with one of PostgreSQL's tree -> its column names."""
    statements = [_kind(s.get("stmt"))[1] for s in tree] if tree else []
    if len(statements) != 1:
        return {}
    ascii_only = text.isascii()
    chars = {} if ascii_only else _chars(text)
    owner: dict[int, int] = {}  # a source position -> the index of the raw SELECT whose own target holds it
    raws = list(_raw_selects(statements[0]))
    for index, raw in enumerate(raws):
        for target in raw.get("targetList", []):
            for position in _raw_positions(target):
                owner[position if ascii_only else chars.get(position, -1)] = index
    out: dict[int, list[str | None]] = {}
    for select in ast.find_all(exp.Select):
        found = {owner[p] for item in select.expressions for p in _glot_positions(item) if p in owner}
        if len(found) == 1:
            raw = raws[found.pop()]
            names = target_names(raw)
            if len(names) == len(select.expressions):
                out[id(select)] = names
    top = _leftmost(ast)
    if top is not None and id(top) not in out:  # the outer list: by its place when no position pairs it
        names = select_names(statements[0])
        if len(names) == len(top.expressions):
            out[id(top)] = names
    return out


def _leftmost(ast: exp.Expr) -> exp.Select | None:
    node: exp.Expr | None = ast
    while isinstance(node, exp.SetOperation | exp.Subquery):
        node = node.this
    return node if isinstance(node, exp.Select) else None


# ----------------------------------------------------------------------------------------- writing names


Named = list[tuple[exp.Select, list[str | None]]]


def name_columns(ast: exp.Expr, tree: list[Any] | None, text: str | None) -> Named:
    """Give every SELECT list of ``ast`` PostgreSQL's column names as explicit aliases (see the module doc);
    ``tree`` is libpg_query's tree of ``text``, or None (the outer list named by :func:`fallback_name`). A
    bare column keeps no alias (the rewrites treat a column and an alias of it alike, but not their types);
    the lists and names are returned for :func:`keep_names`, after the rewrites."""
    paired = pair(ast, tree, text) if tree is not None and text is not None else {}
    top = _leftmost(ast)
    named: Named = []
    for select in list(ast.find_all(exp.Select)):
        names = paired.get(id(select))
        if names is None and select is not top:
            continue
        items = list(select.expressions)
        if names is None:
            names = [None if _star(node) else fallback_name(node) for node in items]
        for i, node in enumerate(items):
            name = names[i]
            if name is not None and not _star(node):
                items[i] = _named(node, name)
        select.set("expressions", items)
        named.append((select, names))
    return named


def keep_names(named: Named) -> None:
    """After the rewrites: a bare column they turned into an expression (a numeric read from its text, ...)
    keeps its name as an alias, as DuckDB would name the expression otherwise, and an item they aliased anew
    keeps PostgreSQL's name. A list whose one ``*`` was expanded is aligned on both sides of it."""
    for select, names in named:
        items = list(select.expressions)
        if len(items) != len(names):
            stars = [i for i, n in enumerate(names) if n is None]
            if len(stars) != 1 or len(items) < len(names):
                continue
            after = len(names) - stars[0] - 1
            names = names[: stars[0]] + [None] * (len(items) - stars[0] - after) + names[len(names) - after :]
        for i, node in enumerate(items):
            name = names[i]
            if name is not None and not _star(node):
                items[i] = _named(node, name)
        select.set("expressions", items)
        _called(select)


#: SQL value functions DuckDB reads as a column first (then as the function): one that meets an alias of its
#: name in its select list (``current_date AS "current_date"``, PostgreSQL's name for it) binds to the alias
#: there, an error; written as DuckDB's function call instead, it cannot
_KEYWORDS: dict[type[exp.Expr], tuple[str, str]] = {
    exp.CurrentDate: ("current_date", "current_date"),
    exp.CurrentTimestamp: ("current_timestamp", "get_current_timestamp"),
    exp.Localtimestamp: ("localtimestamp", "current_localtimestamp"),
    exp.CurrentTime: ("current_time", "get_current_time"),
    exp.Localtime: ("localtime", "current_localtime"),
}


def _called(select: exp.Select) -> None:
    aliases = {item.alias.lower() for item in select.expressions if isinstance(item, exp.Alias)}
    for item in select.expressions:
        for node in list(item.find_all(*_KEYWORDS)):
            keyword, function = _KEYWORDS[type(node)]
            if keyword in aliases and not node.args:
                node.replace(exp.Anonymous(this=function, expressions=[]))


def _star(node: exp.Expr) -> bool:
    return isinstance(node, exp.Star) or (isinstance(node, exp.Column) and isinstance(node.this, exp.Star))


def _named(node: exp.Expr, name: str) -> exp.Expr:
    if isinstance(node, exp.Alias):
        if node.alias != name or (not node.args["alias"].quoted and not _SIMPLE.fullmatch(name)):
            node.set("alias", exp.to_identifier(name, quoted=True))
        return node
    if isinstance(node, exp.Column) and node.name == name:
        return node
    # the node itself, not a copy: the router renames the tables inside it afterwards
    return exp.alias_(node, name, quoted=True, copy=False)


def fallback_name(node: exp.Expr) -> str:
    """PostgreSQL's name guessed from sqlglot's tree alone (a statement PostgreSQL's parser does not read:
    time travel)."""
    if isinstance(node, exp.Alias):
        return _folded(node.args["alias"])
    if isinstance(node, exp.Cast):
        inner = fallback_name(node.this)
        return inner if inner != UNNAMED else node.to.sql(dialect="postgres").lower().split("(")[0]
    if isinstance(node, exp.Column):
        return _folded(node.this) if isinstance(node.this, exp.Identifier) else node.name
    if isinstance(node, exp.Func):
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)(\(|$)", node.sql(dialect="postgres"))
        if match:
            return match.group(1).lower()
    return UNNAMED


def _folded(name: exp.Identifier) -> str:
    """An identifier as PostgreSQL reads it: unquoted, its ASCII letters in lower case."""
    return name.this if name.quoted else name.this.translate(_LOWER)


_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")

"""The allow-list over PostgreSQL's own reading of a statement: every call site of :mod:`.pgcalls` is judged
(issue 27.1), on every route, after the sqlglot guard (:mod:`.guard`) has judged sqlglot's reading.

What each syntax must satisfy:

* a call (``f(x)``, ``s.f(x)``, a SQL-syntax call, a function in FROM): the same allow-list as the sqlglot guard;
* attribute notation (``(x).f``, ``t.f``, ``t.c.f``): ``f`` is a call unless it is a column, so it passes when it
  names no function of the sources (``pg_proc``) or of the gateway's lists, when it is an allowed function, or
  when the name before it is a relation of the statement (one alias, or a table's full written name) that has a
  column ``f``; after an expression (``(x).f``) only the first two hold;
* an operator: ``OPERATOR(schema.op)`` only for ``pg_catalog``; an unqualified operator resolves only among
  the built-in ones and those of trusted extension schemas (the PostgreSQL route's ``search_path``,
  :mod:`lakegate.connectors.postgres.extensions`; a planted ``public.=`` is never found), so it passes;
* a cast: not to the ``reg*`` types that look catalog objects up by name (``regproc``, ``regclass``...;
  ``regtype`` and ``regconfig`` pass), and not to a type that a cast outside ``pg_catalog`` converts to with a
  function the allow-list refuses (it runs that function; an allowed extension's casts pass);
* ``TABLESAMPLE``: the built-in methods ``system`` and ``bernoulli`` only;
* ``XMLTABLE``, ``JSON_TABLE`` and the XML constructors are refused (no allow-list names what they run).

Refusals are 403s that name the function and the syntax; the statement's text positions come from libpg_query
(byte offsets, turned into line and column).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lakegate.gateway import functions, pgcalls
from lakegate.gateway.errors import Forbidden, UnsupportedQuery
from lakegate.gateway.pgcalls import Call
from lakegate.gateway.pgnames import SourceNames

#: SQL syntax PostgreSQL turns into these pg_catalog functions; all only compute on their arguments
SQL_SYNTAX = frozenset(
    {
        "extract",
        "overlay",
        "position",
        "substring",
        "btrim",
        "ltrim",
        "rtrim",
        "timezone",
        "normalize",
        "is_normalized",
        "similar_to_escape",
        "overlaps",
        "pg_collation_for",
    }
)
#: the reg* types whose input looks an object up by name in a catalog
REG_TYPES = frozenset(
    {
        "regproc",
        "regprocedure",
        "regoper",
        "regoperator",
        "regclass",
        "regrole",
        "regnamespace",
        "regdictionary",
        "regcollation",
    }
)
TABLESAMPLE_METHODS = frozenset({"system", "bernoulli"})
_ORDER = {
    pgcalls.CALL: 0,
    pgcalls.SQL: 0,
    pgcalls.TABLE: 0,
    pgcalls.ATTRIBUTE: 1,
    pgcalls.OPERATOR: 2,
    pgcalls.CAST: 3,
    pgcalls.TABLESAMPLE: 4,
    pgcalls.CONSTRUCT: 5,
}
Columns = Callable[[tuple[str, ...]], "set[str] | None"]


class CallGuard:
    """``allowed(name)``: may an unqualified function be called; ``qualified``: ``schema.function`` names that
    ``[gateway] allow_functions`` lists; ``names()``: the sources' names (:class:`.pgnames.NamesReader`);
    ``known``: function names the gateway knows without a source (DuckDB's and its own lists)."""

    def __init__(
        self,
        allowed: Callable[[str], bool],
        qualified: frozenset[str],
        names: Callable[[], SourceNames],
        known: frozenset[str],
    ) -> None:
        self.allowed = allowed
        self.qualified = qualified
        self.names = names
        self.known = known

    def check(self, tree: Any, sql: str, columns: Columns) -> None:
        """Raise :class:`Forbidden` at the first call site of ``tree`` (the parse of ``sql``) that may run
        something the allow-list refuses; ``columns(name parts)`` gives a table's column names (None: unknown)."""
        sites = sorted(pgcalls.calls(tree), key=lambda c: (_ORDER[c.syntax], c.location))
        if not sites:
            return
        source = self.names()
        ranges: pgcalls.Ranges | None = None
        for call in sites:
            if call.syntax == pgcalls.ATTRIBUTE:
                if ranges is None:
                    ranges = pgcalls.ranges(tree)
                self._attribute(call, source, ranges, columns, sql)
            else:
                self._site(call, source, sql)

    # ----------------------------------------------------------------------------------------- call sites

    def _site(self, call: Call, source: SourceNames, sql: str) -> None:
        if call.syntax in (pgcalls.CALL, pgcalls.SQL):
            if call.schema == "pg_catalog" and call.name in SQL_SYNTAX:  # also SIMILAR TO's explicit call
                return
            if not self._callable(call):
                raise _refused(call, sql, f"function {call.display}() is not allowed{_REASON}")
        elif call.syntax == pgcalls.TABLE:
            if call.schema not in ("", "pg_catalog") or call.name not in functions.TABLE_FUNCTIONS:
                raise _refused(
                    call,
                    sql,
                    f"table function {call.display}() is not allowed in FROM: only row generators "
                    f"({', '.join(sorted(functions.TABLE_FUNCTIONS))}) are; read tables by their names "
                    "(source.schema.table)",
                )
        elif call.syntax == pgcalls.OPERATOR:
            self._operator(call, sql)
        elif call.syntax == pgcalls.CAST:
            self._cast(call, source, sql)
        elif call.syntax == pgcalls.TABLESAMPLE:
            if call.schema not in ("", "pg_catalog") or call.name.lower() not in TABLESAMPLE_METHODS:
                raise _refused(
                    call,
                    sql,
                    f"TABLESAMPLE {call.display} is not allowed: a sampling method is a function; only "
                    "SYSTEM and BERNOULLI are allowed",
                )
        elif call.syntax == pgcalls.CONSTRUCT:
            line, column = _line_column(sql, call.location)
            if call.name == "ParamRef":
                raise UnsupportedQuery(
                    "bind parameters ($1, ?, :name) are not supported; put the values into the SQL text",
                    line=line,
                    column=column,
                )
            raise UnsupportedQuery(
                f"{call.written} is not supported by the gateway", line=line, column=column
            )

    def _callable(self, call: Call) -> bool:
        if call.name in functions.NEVER:
            return False
        if call.name == "current_setting" and call.schema in ("", "pg_catalog"):
            return functions.readable_setting(call.setting)
        if not call.schema or call.schema == "pg_catalog":
            return self.allowed(call.name)
        return f"{call.schema}.{call.name}" in self.qualified

    def _attribute(
        self, call: Call, source: SourceNames, ranges: pgcalls.Ranges, columns: Columns, sql: str
    ) -> None:
        name = call.name
        if name not in functions.NEVER:
            if not self._is_function(name, source) or self.allowed(name):
                return
            if call.qualifier and _is_column(call.qualifier, name, ranges, columns):
                return
        raise _refused(
            call,
            sql,
            f"function {name}() is not allowed: PostgreSQL reads {call.display!r} as the call "
            f"{name}(...) when {name!r} is not a column of what precedes it (attribute notation){_REASON}",
        )

    def _is_function(self, name: str, source: SourceNames) -> bool:
        return name in source.functions or name in self.known or functions.denied(name)

    def _operator(self, call: Call, sql: str) -> None:
        if call.schema and call.schema != "pg_catalog":
            raise _refused(
                call,
                sql,
                f"OPERATOR({call.schema}.{call.name}) is not allowed: only the built-in operators are",
            )

    def _cast(self, call: Call, source: SourceNames, sql: str) -> None:
        name = call.name
        if name in REG_TYPES and call.schema in ("", "pg_catalog"):
            raise _refused(
                call,
                sql,
                f"a cast to {name} is not allowed: it looks catalog objects up by name (use the object's "
                "name as text; regtype is allowed)",
            )
        refused = sorted(p for p in source.casts.get(name, ()) if not self.allowed(p))
        if refused and call.schema != "pg_catalog":
            raise _refused(
                call,
                sql,
                f"a cast to {call.display} is not allowed: a source converts to it with the function "
                f"{refused[0]}() of its own (outside pg_catalog), which the gateway does not run",
            )


_REASON = (
    ": the gateway runs only functions on its allow-list, in every syntax PostgreSQL accepts, and never ones "
    "that reach files, URLs, other databases, settings, sessions or sequences or run SQL text"
)


def _is_column(qualifier: tuple[str, ...], name: str, ranges: pgcalls.Ranges, columns: Columns) -> bool:
    """Is ``qualifier.name`` surely a column reference: ``qualifier`` a relation name of the statement every
    relation of which has a column ``name``, or a table's full written name (``schema.table``) with it?"""
    if len(qualifier) == 1:
        relations = ranges.relations.get(qualifier[0])
        return bool(relations) and all(_has(r, name, ranges, columns, 0) for r in relations or ())
    return any(
        len(r.parts) >= len(qualifier) and r.parts[-len(qualifier) :] == qualifier and _has(r, name, ranges, columns, 0)
        for relations in ranges.relations.values()
        for r in relations
    )


def _has(relation: pgcalls.Relation, name: str, ranges: pgcalls.Ranges, columns: Columns, depth: int) -> bool:
    if depth > 8:  # a * over a * over ...: say no rather than follow a cycle of CTEs
        return False
    parts = relation.parts
    if parts:
        if len(parts) == 1 and parts[0] in ranges.ctes:  # a CTE shadows a table of the same name
            return _has(ranges.ctes[parts[0]], name, ranges, columns, depth + 1)
        return name in (columns(parts) or ())
    return name in relation.names or any(
        _has(pgcalls.Relation(parts=inner), name, ranges, columns, depth + 1) for inner in relation.star
    )


def _refused(call: Call, sql: str, message: str) -> Forbidden:
    line, column = _line_column(sql, call.location)
    return Forbidden(message, line=line, column=column)


def _line_column(sql: str, location: int) -> tuple[int | None, int | None]:
    """Line and column (1-based, in characters) of libpg_query's byte offset ``location``."""
    if location < 0:
        return None, None
    before = sql.encode()[:location].decode(errors="ignore")
    return before.count("\n") + 1, location_column(before)


def location_column(before: str) -> int:
    return len(before) - (before.rfind("\n") + 1) + 1


def tree(sql: str) -> Any:
    """libpg_query's parse tree of ``sql``, or None where PostgreSQL's grammar rejects it (:mod:`.pggrammar`
    reports that error)."""
    from lakegate.gateway import pggrammar
    from lakegate.gateway.parse import too_deep

    try:  # in a worker process, killed at the deadline, unless the text is cheap to parse (issue 27.4)
        return pggrammar.tree(sql)
    except RecursionError:
        raise too_deep() from None

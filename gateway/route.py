"""Pick the engine for a query and write the SQL it runs.

* Only tables of one PostgreSQL source: PostgreSQL runs the whole query (its indexes and planner do the work),
  as the user wrote it, with table names rewritten in place (:mod:`lakegate.gateway.pgtext`). No table at all:
  the same, on the first PostgreSQL source (``[gateway] tableless_route``; DuckDB when there is none).
* Anything else (lake tables, several sources): DuckDB. Every lake table becomes a CTE
  ``"lake.schema.table" AS NOT MATERIALIZED (...)`` over ``iceberg_scan`` (see :mod:`lakegate.gateway.lake`; not
  materialized, so that DuckDB pushes filters into the scans), PostgreSQL tables are read through the attached
  source (``source.schema.table``), whose scanner pushes projections and filters down to PostgreSQL. The SQL is
  transpiled by sqlglot from PostgreSQL to DuckDB.

Both routes cap the rows: the outermost LIMIT becomes at most ``max_rows + 1`` (the extra row tells that the
result was truncated). Time travel (``FOR VERSION AS OF`` / ``FOR TIMESTAMP AS OF``) is only for lake tables.

Two steps: :meth:`Router.route` does the sqlglot work once per statement (a :class:`Routed`, which the plan cache
keeps); :meth:`Router.render` writes the lake views from the tables' current metadata for every query and puts
them in front of the statement's own CTEs as text (the statement's SQL is generated once, without its WITH
clause, so no AST is copied or regenerated per query).
"""

from __future__ import annotations

import dataclasses
import datetime
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from sqlglot import exp
from sqlglot.errors import ErrorLevel, UnsupportedError

from lakegate.connectors.iceberg.schema import CHANGELOG_SUFFIX
from lakegate.connectors.postgres.extensions import Footprint
from lakegate.gateway import lakecolumns, lakecut, pggrammar, scope
from lakegate.gateway.catalog import LAKE, Catalog, TableRef
from lakegate.gateway.collations import Collation
from lakegate.gateway.dialect import postgres_semantics
from lakegate.gateway.dialect_aggregates import sort_distinct
from lakegate.gateway.dialect_scale import show_numerics
from lakegate.gateway.dialect_stars import expand_merged_stars, refuse_ambiguous_order
from lakegate.gateway.errors import BadRequest, UnsupportedQuery
from lakegate.gateway.lake import Cached, Lake, TimeTravel, quote, view_sql
from lakegate.gateway.parse import DIALECT, position
from lakegate.gateway.pgcolnames import keep_names, name_columns
from lakegate.gateway.pgcolumns import PgColumns, view_columns, with_source_collations
from lakegate.gateway.pgfootprint import footprint
from lakegate.gateway.pgtext import capped, user_text
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

POSTGRES_ROUTE, DUCKDB_ROUTE, GATEWAY_ROUTE = "postgres", "duckdb", "gateway"
ROW_GENERATORS = ("generate_series", "range", "unnest", "generate_subscripts")
_SIMPLE = re.compile(r"[a-z_][a-z0-9_$]*")


@dataclass
class Plan:
    """What runs where: the route, the engine's SQL, and (for explain) the lake views it reads."""

    route: str
    sql: str
    source: str | None = None  #: the PostgreSQL source of the postgres route
    body: str = ""  #: the statement without the lake views' CTEs (readable; what routing fixtures check)
    views: dict[str, str] = field(default_factory=dict)
    tables: list[str] = field(default_factory=list)
    pg_types: tuple[PgType | None, ...] | None = None  #: PostgreSQL's result column types (duckdb route)
    source_lsn: str | None = None  #: the source position the lake tables are read at (gateway.lakecut)
    footprint: Footprint | None = None  #: the postgres route's (extension operators, :mod:`.pgfootprint`)

    def explain(self) -> dict[str, Any]:
        engine = {"engine": self.route, "source": self.source, "sql": self.sql}
        return {
            "route": self.route,
            "source": self.source,
            "tables": self.tables,
            "engines": [engine],
            "views": self.views,
        }


@dataclass(frozen=True)
class LakeRead:
    """A lake table the statement reads, as the view (CTE) ``view``."""

    view: str
    ref: TableRef
    travel: TimeTravel | None


@dataclass(frozen=True)
class PgRead:
    """A PostgreSQL table a DuckDB-route statement reads; as the view ``view`` when the cache serves it."""

    view: str
    ref: TableRef
    columns: str | None = None  #: the view's select list when it pads char(n) values back (pgcolumns)

    @property
    def relation(self) -> str:
        """DuckDB's name of the attached table."""
        return ".".join(quote(part) for part in (self.ref.source, self.ref.schema, self.ref.name))


PgLookup = Callable[[PgRead], "str | None"]


@dataclass(frozen=True)
class Routed:
    """A statement parsed, guarded, resolved and routed: everything but the lake views, whose SQL depends on
    the tables' current snapshots (and on the lake cache) and is rendered for every query by
    :meth:`Router.render`. Immutable, so the plan cache can keep and share it."""

    route: str
    body: str  #: the engine SQL without lake views (the whole SQL when there are none)
    source: str | None
    tables: tuple[str, ...]
    lakes: tuple[LakeRead, ...] = ()
    head: str = ""  #: "WITH " or "WITH RECURSIVE " (duckdb route with lake views)
    ctes: str = ""  #: the statement's own CTEs, after which the views are placed
    main: str = ""  #: the statement without its WITH clause
    literal_travel: bool = True  #: every time-travel argument was a literal (the routing can be reused)
    consulted: tuple[tuple[str, bool], ...] = ()  #: PostgreSQL sources resolution read (True: a name missed)
    pgs: tuple[PgRead, ...] = ()  #: PostgreSQL tables of a duckdb-route statement
    pg_split: tuple[str, str, str] = ("", "", "")  #: head, ctes, main with those tables read as views
    #: PostgreSQL's type of each result column (duckdb route; None where the gateway cannot tell)
    pg_types: tuple[PgType | None, ...] | None = None
    footprint: Footprint | None = None  #: postgres route: what could meet an extension's operators


class Router:
    """``evaluate(duckdb_sql)`` returns the value of a constant expression (time-travel arguments)."""

    #: the PostgreSQL source that answers statements naming no table (``[gateway] tableless_route``); None: DuckDB
    tableless_source: str | None = None

    def __init__(self, catalog: Catalog, lake: Lake, evaluate: Callable[[str], Any]) -> None:
        self.catalog = catalog
        self.lake = lake
        self.evaluate = evaluate
        self.pg_columns = PgColumns(catalog)

    def plan(self, ast: exp.Expression, max_rows: int | None, cached: Cached | None = None) -> Plan:
        listing = self.lake.listing()
        return self.render(self.route(ast, max_rows, listing), listing, cached)

    def route(
        self,
        ast: exp.Expression,
        max_rows: int | None,
        listing: dict[tuple[str, str], str | None],
        text: str | None = None,
        zone: str = "UTC",
    ) -> Routed:
        """``text``: the statement's own SQL, which the PostgreSQL route sends where it can; ``zone``: the
        session time zone (the PostgreSQL route sets it on its transaction, the DuckDB route computes with it)."""
        ast = ast.copy()
        if isinstance(ast, exp.Subquery) and not ast.args.get("alias"):
            ast = cast(exp.Expression, ast.unnest())
        resolved: list[tuple[exp.Table, TableRef]] = []
        consulted: dict[str, bool] = {}
        for table in scope.bind(ast).tables:  # names of CTEs in scope are not looked up (SQL scoping)
            resolved.append((table, self.catalog.resolve(table, listing, consulted)))
        names = tuple(dict.fromkeys(str(ref) for _, ref in resolved))
        sources = {ref.source for _, ref in resolved}
        if resolved and len(sources) == 1 and resolved[0][1].kind != LAKE:
            routed = self._postgres(ast, resolved, names, max_rows, text, resolved[0][1].source)
        elif not resolved and self.tableless_source is not None:  # no table: PostgreSQL answers as itself
            routed = self._postgres(ast, resolved, names, max_rows, text, self.tableless_source)
        else:
            # PostgreSQL's column names, before the rewrites below, which change what names derive from
            named = name_columns(ast, pggrammar.tree(text) if text else None, text)
            sort_distinct(ast)  # typed with the ORDER BY it adds
            columns, collation = self._table_columns(resolved, listing)
            typer = Typer(ast, columns, zone)
            if expand_merged_stars(ast, typer):  # typed again: the expanded columns are new nodes
                typer = Typer(ast, columns, zone)
            typer.collation, typer.casing = collation.order, collation.casing
            typer.lake_tables = {id(table) for table, ref in resolved if ref.kind == LAKE}
            refuse_ambiguous_order(ast, typer)
            typer.all()
            projections = typer.projections(ast)
            postgres_semantics(ast, typer)
            show_numerics(ast, typer, projections)
            keep_names(named)
            routed = self._duckdb(ast, resolved, names, max_rows)
            pg_types = tuple(t for _, t in projections) if projections is not None else None
            routed = dataclasses.replace(routed, pg_types=pg_types)
        return dataclasses.replace(routed, consulted=tuple(sorted(consulted.items())))

    def render(
        self,
        routed: Routed,
        listing: dict[tuple[str, str], str | None],
        cached: Cached | None = None,
        pg_cached: PgLookup | None = None,
    ) -> Plan:
        """The plan of ``routed`` against the lake's current metadata (``listing``). ``cached`` may serve lake
        tables from the lake cache, ``pg_cached`` PostgreSQL tables (only when the server is provably
        unchanged since they were cached)."""
        pg_hits: dict[str, str] = {}
        if pg_cached is not None:
            for pg in routed.pgs:
                name = pg_cached(pg)
                if name is not None:
                    pg_hits[pg.view] = name
        pg_views = bool(pg_hits) or any(pg.columns for pg in routed.pgs)
        if not routed.lakes and not pg_views:
            return Plan(
                routed.route,
                routed.body,
                routed.source,
                routed.body,
                {},
                list(routed.tables),
                routed.pg_types,
                footprint=routed.footprint,
            )
        views: dict[str, str] = {}
        entries = [self.lake.entry(read.ref.schema, read.ref.name, listing) for read in routed.lakes]
        present = [entry for read, entry in zip(routed.lakes, entries, strict=True) if read.travel is None]
        at_cut, source_lsn = lakecut.travels(present, lakecut.cuts(self.lake)) if present else ([], None)
        at = iter(at_cut)
        for read, entry in zip(routed.lakes, entries, strict=True):
            travel = read.travel if read.travel is not None else next(at)
            types = lakecolumns.column_types(entry.table)
            infinite = lakecolumns.infinite_columns(entry.table)
            views[read.view] = lakecolumns.converted(view_sql(entry, travel, cached), types, infinite)
        head, ctes, main = routed.head, routed.ctes, routed.main
        if pg_views:
            for pg in routed.pgs:
                views[pg.view] = f"SELECT {pg.columns or '*'} FROM {pg_hits.get(pg.view, pg.relation)}"
            head, ctes, main = routed.pg_split
        with_views = ", ".join(f"{quote(name)} AS NOT MATERIALIZED ({sql})" for name, sql in views.items())
        sql = f"{head}{with_views}{', ' + ctes if ctes else ''} {main}"
        return Plan(
            routed.route,
            sql,
            routed.source,
            routed.body,
            views,
            list(routed.tables),
            routed.pg_types,
            source_lsn,
        )

    # ------------------------------------------------------------------------------------------ postgres

    def _postgres(
        self,
        ast: exp.Expression,
        resolved: list[tuple[exp.Table, TableRef]],
        names: tuple[str, ...],
        max_rows: int | None,
        text: str | None,
        source: str,
    ) -> Routed:
        """PostgreSQL ``source`` runs the statement: the user's own ``text`` with the names rewritten
        (:mod:`lakegate.gateway.pgtext`); regenerated from ``ast`` only where PostgreSQL's parse tree of the
        text is not known or reads other tables than sqlglot's (see there)."""
        for table, ref in resolved:
            if table.args.get("version"):
                raise _bad(table, f"time travel is only for lake tables; {ref} is a live PostgreSQL table")
        pg_names = [
            (t, f"{_ident(r.schema).sql('postgres')}.{_ident(r.name).sql('postgres')}") for t, r in resolved
        ]
        relations = tuple(dict.fromkeys((ref.schema, ref.name) for _, ref in resolved))
        try:
            tree = pggrammar.tree(text) if text else None
        except RecursionError:  # a tree too deep to decode: the AST below
            tree = None
        own = user_text(text, tree, ast, pg_names, source) if text and tree else None
        if own is not None and tree is not None:
            sql = capped(own, tree, max_rows)
            return Routed(POSTGRES_ROUTE, sql, source, names, footprint=footprint(ast, relations, sql))
        for table, ref in resolved:
            table.set("catalog", None)
            table.set("db", _ident(ref.schema))
            table.set("this", _ident(ref.name))
        _strip_column_parts(ast, keep_db=True)
        cap_rows(ast, max_rows)
        sql = ast.sql(dialect="postgres")
        return Routed(POSTGRES_ROUTE, sql, source, names, footprint=footprint(ast, relations, sql))

    # -------------------------------------------------------------------------------------------- duckdb

    def _duckdb(
        self,
        ast: exp.Expression,
        resolved: list[tuple[exp.Table, TableRef]],
        names: tuple[str, ...],
        max_rows: int | None,
    ) -> Routed:
        lakes: dict[str, LakeRead] = {}
        pg_tables: list[tuple[exp.Table, TableRef]] = []
        literal = True
        for table, ref in resolved:
            if ref.kind == LAKE:
                version = table.args.get("version")
                literal = literal and (
                    version is None or isinstance(version.args.get("expression"), exp.Literal)
                )
                travel = self._travel(table)
                view = _view_name(ref, travel)
                lakes.setdefault(view, LakeRead(view, ref, travel))
                alias = table.args.get("alias")
                table.set("version", None)
                table.set("catalog", None)
                table.set("db", None)
                table.set("this", exp.to_identifier(view, quoted=True))
                if alias is None:
                    table.set("alias", exp.TableAlias(this=_ident(ref.name)))
            else:
                if table.args.get("version"):
                    raise _bad(
                        table, f"time travel is only for lake tables; {ref} is a live PostgreSQL table"
                    )
                table.set("catalog", _ident(ref.source))
                table.set("db", _ident(ref.schema))
                table.set("this", _ident(ref.name))
                pg_tables.append((table, ref))
        scope.verify(ast, {(view,) for view in lakes} | {(r.source, r.schema, r.name) for _, r in pg_tables})
        _strip_column_parts(ast, keep_db=False)
        _name_generator_columns(ast)
        cap_rows(ast, max_rows)
        body = duckdb_sql(ast)
        head, ctes, main = _split_with(ast) if lakes else ("", "", "")
        pgs: dict[str, PgRead] = {}
        for table, ref in pg_tables:  # the same statement reading each PostgreSQL table as a view
            view = str(ref)
            pgs.setdefault(view, PgRead(view, ref, view_columns(self.pg_columns.types(ref))))
            table.set("catalog", None)
            table.set("db", None)
            table.set("this", exp.to_identifier(view, quoted=True))
            if table.args.get("alias") is None:
                table.set("alias", exp.TableAlias(this=_ident(ref.name)))
        pg_split = _split_with(ast) if pgs else ("", "", "")
        return Routed(
            DUCKDB_ROUTE,
            body,
            None,
            names,
            tuple(lakes.values()),
            head,
            ctes,
            main,
            literal,
            pgs=tuple(pgs.values()),
            pg_split=pg_split,
        )

    def _table_columns(
        self, resolved: list[tuple[exp.Table, TableRef]], listing: dict[tuple[str, str], str | None]
    ) -> tuple[Callable[[exp.Table], dict[str, PgType | None] | None], Collation]:
        """The typing's view of the statement's tables (PostgreSQL's type of each column, where known, with the
        collation it has in its source database), and the default collation of the source databases the statement
        reads (a linguistic order or another case mapping if one of them has it)."""
        by_node: dict[int, dict[str, PgType | None] | None] = {}
        sources: set[str] = set()
        for table, ref in resolved:
            if ref.kind == LAKE:
                try:
                    lake_table = self.lake.entry(ref.schema, ref.name, listing).table
                    types = lakecolumns.column_types(lake_table)
                except Exception:  # noqa: BLE001 - types are a refinement: an unreadable table is reported later
                    by_node[id(table)] = None
                    continue
                source = str(lake_table.properties.get("lakegate.source") or "")
                if (
                    source in self.catalog.postgres
                ):  # the source table's collations, where the gateway reads it
                    name = ref.name.removesuffix(CHANGELOG_SUFFIX)
                    types = with_source_collations(
                        types, self.pg_columns.collations(source, ref.schema, name)
                    )
                    sources.add(source)
                by_node[id(table)] = types
            else:
                by_node[id(table)] = self.pg_columns.types(ref)
                sources.add(ref.source)
        defaults = [d for d in (self.pg_columns.default_collation(s) for s in sorted(sources)) if d]
        order = next((d.order for d in defaults if d.order), None)
        casing = next((d.casing for d in defaults if d.casing), "" if defaults else None)
        return (lambda table: by_node.get(id(table))), Collation(order, casing or "")

    def _travel(self, table: exp.Table) -> TimeTravel | None:
        version = table.args.get("version")
        if version is None:
            return None
        kind = str(version.args.get("kind") or "").upper()
        what = str(version.this).upper()
        if kind != "AS OF" or version.args.get("expression") is None:
            raise _unsupported(
                table, "time travel takes FOR VERSION AS OF <snapshot id> or FOR TIMESTAMP AS OF <time>"
            )
        expr = version.args["expression"].sql(dialect="duckdb")
        if what == "VERSION":
            value = self.evaluate(f"SELECT CAST({expr} AS BIGINT)")
            if value is None:
                raise _bad(table, "FOR VERSION AS OF needs a snapshot id (a number)")
            return TimeTravel(snapshot_id=int(value))
        value = self.evaluate(f"SELECT CAST({expr} AS TIMESTAMPTZ)")
        if not isinstance(value, datetime.datetime):
            raise _bad(table, "FOR TIMESTAMP AS OF needs a time, e.g. '2024-05-01 12:00:00+00'")
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return TimeTravel(timestamp_ms=int(value.timestamp() * 1000))


def _split_with(ast: exp.Expression) -> tuple[str, str, str]:
    """("WITH " or "WITH RECURSIVE ", the statement's own CTEs, the statement without WITH), so that lake views
    can be placed first in the WITH clause as text (a VALUES statement is wrapped into a SELECT first)."""
    if isinstance(ast, exp.Values):
        ast = exp.select("*").from_(
            exp.Subquery(this=ast, alias=exp.TableAlias(this=exp.to_identifier("_values")))
        )
    existing = ast.args.get("with_")
    if existing is None:
        return "WITH ", "", duckdb_sql(ast)
    ast = ast.copy()
    ast.set("with_", None)
    text = duckdb_sql(existing)
    head = "WITH RECURSIVE " if text.upper().startswith("WITH RECURSIVE ") else "WITH "
    return head, text[len(head) :], duckdb_sql(ast)


def cap_rows(ast: exp.Expression, max_rows: int | None) -> None:
    """Make the outermost LIMIT at most ``max_rows + 1`` (leave smaller literal limits and FETCH alone)."""
    if max_rows is None or not isinstance(ast, (exp.Select, exp.SetOperation)) or ast.args.get("fetch"):
        return
    cap = max_rows + 1
    limit = ast.args.get("limit")
    if limit is not None:
        value = limit.expression
        if not (isinstance(value, exp.Literal) and value.is_int) or int(value.this) <= cap:
            return
    ast.set("limit", exp.Limit(expression=exp.Literal.number(cap)))


def _strip_column_parts(ast: exp.Expression, *, keep_db: bool) -> None:
    """Column references keep at most ``table.column`` (``schema.table.column`` on PostgreSQL)."""
    for column in ast.find_all(exp.Column):
        column.set("catalog", None)
        if not keep_db:
            column.set("db", None)


def _name_generator_columns(ast: exp.Expression) -> None:
    """``generate_series(1, 3) AS g`` names its column ``g`` in PostgreSQL; say so explicitly for DuckDB."""
    for table in ast.find_all(exp.Table):
        func, alias = table.this, table.args.get("alias")
        if not isinstance(func, exp.Func) or alias is None or alias.columns:
            continue
        name = func.name.lower() if isinstance(func, exp.Anonymous) else func.sql_name().lower()
        if name in ROW_GENERATORS or isinstance(func, (exp.GenerateSeries, exp.ExplodingGenerateSeries)):
            alias.set("columns", [alias.this.copy()])
    for unnest in ast.find_all(exp.Unnest):
        alias = unnest.args.get("alias")
        if alias is not None and alias.this is not None and not alias.columns:
            alias.set("columns", [alias.this.copy()])


def _name_like_postgres(ast: exp.Expression) -> None:
    """PostgreSQL's column names from sqlglot's tree alone (see :func:`name_columns`)."""
    name_columns(ast, None, None)


def _view_name(ref: TableRef, travel: TimeTravel | None) -> str:
    name = str(ref)
    if travel is None:
        return name
    return (
        f"{name}@{travel.snapshot_id}"
        if travel.snapshot_id is not None
        else f"{name}@{travel.timestamp_ms}ms"
    )


def _ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=not _SIMPLE.fullmatch(name))


def _bad(node: exp.Expression, message: str) -> BadRequest:
    line, col = position(node)
    return BadRequest(message, line=line, column=col)


def _unsupported(node: exp.Expression, message: str) -> UnsupportedQuery:
    line, col = position(node)
    return UnsupportedQuery(message, line=line, column=col)


__all__ = ["DIALECT", "Plan", "Router", "cap_rows"]


def duckdb_sql(node: exp.Expr) -> str:
    """DuckDB's text of the rewritten statement. What sqlglot cannot write for DuckDB is refused by name rather
    than written otherwise (it wrote ``sha384(x)`` as ``sha256(x)``, with only a logged warning)."""
    try:
        return node.sql(dialect="duckdb", unsupported_level=ErrorLevel.RAISE)
    except UnsupportedError as exc:
        raise UnsupportedQuery(
            f"this statement cannot be computed exactly as PostgreSQL does on the lake route (DuckDB): {exc}; run "
            "it on a PostgreSQL source"
        ) from None

"""The PostgreSQL type of each expression of a statement (sqlglot AST, PostgreSQL dialect), where the gateway can
tell: the rewrites of :mod:`lakegate.gateway.dialect` depend on it (numeric or integer division, ``char(n)``
semantics, result types), and the lake route reports it as each result column's type.

Columns resolve through the statement's own scopes: a qualified column to the FROM item of that name in the
innermost SELECT that has one (then the enclosing ones: correlated subqueries), an unqualified column to the
FROM item that has a column of that name; FROM items are tables (their types come from the router), derived
tables, CTEs, VALUES lists and row generators (``unnest``, ``generate_series``). Written by hand: sqlglot's
``annotate_types`` follows Spark's coercion rules, not PostgreSQL's, and needs a qualified statement.

Inference is a refinement: ``None`` means "not known", and every rule that depends on a type must be safe (or
check at run time) when it is not known. Function result types are in :mod:`lakegate.gateway.pgsignatures`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from sqlglot import exp

from lakegate.gateway import pgsignatures
from lakegate.gateway.pgtype import (
    BOOL,
    INT4,
    INT8,
    INTERVAL,
    LOOSE_NUMERIC,
    NUMERIC,
    TEXT,
    UNKNOWN,
    PgType,
    arithmetic,
    common,
    from_sqlglot,
    t,
)
from lakegate.gateway.scope import fold

TableColumns = Callable[[exp.Table], "dict[str, PgType | None] | None"]
_COMPARISONS = (
    exp.EQ,
    exp.NEQ,
    exp.GT,
    exp.GTE,
    exp.LT,
    exp.LTE,
    exp.NullSafeEQ,
    exp.NullSafeNEQ,
    exp.Is,
    exp.In,
    exp.Between,
    exp.Like,
    exp.ILike,
    exp.SimilarTo,
    exp.RegexpLike,
    exp.RegexpILike,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Exists,
    exp.Any,
    exp.All,
    exp.ArrayContainsAll,
    exp.ArrayContainedBy,
    exp.ArrayOverlaps,
    exp.JSONBContains,
    exp.Escape,
)
_SAME_AS_ARG = (exp.Paren, exp.Neg, exp.Abs, exp.Ordered, exp.Order, exp.BitwiseNot, exp.Collate)


@dataclasses.dataclass(frozen=True)
class ResultColumn:
    """A result column of a SELECT: its output name, its type, the select item it comes from; for a column a
    ``*`` stands for (``starred``), the alias of its FROM item (``source``; None for a column a USING or NATURAL
    join merges)."""

    name: str
    typ: PgType | None
    item: exp.Expr
    starred: bool = False
    source: str | None = None

    @property
    def value(self) -> exp.Expr:
        """The expression the column shows (for a ``*``'s column, a column reference to it)."""
        if not self.starred:
            return self.item.this if isinstance(self.item, exp.Alias) else self.item
        table = exp.to_identifier(self.source, quoted=True) if self.source else None
        return exp.column(exp.to_identifier(self.name, quoted=True), table)


class Typer:
    """Types of the expressions of one statement; ``of(node)`` is memoised."""

    def __init__(self, ast: exp.Expr, table_columns: TableColumns, zone: str = "UTC") -> None:
        self.ast = ast
        self.table_columns = table_columns
        self.zone = zone  #: the session time zone, which the rewrites of timestamptz computations follow
        #: the linguistic default collation of a source database the statement reads (None: bytes or unknown)
        self.collation: str | None = None
        self.casing = ""  #: the default collation's case mapping where not the lake route's
        self.bytewise: set[int] = set()  #: ids of expressions a COLLATE "C" (or alike) put in byte order
        self.casings: dict[
            int, str
        ] = {}  #: ids of expressions a COLLATE gave a case mapping -> it ("": ours)
        self._memo: dict[int, PgType | None] = {}
        self._busy: set[int] = set()
        self._ctes: dict[int, dict[str, exp.CTE]] = {}
        self.lake_tables: set[int] = set()  #: ids of the statement's FROM items that are lake tables

    def of(self, node: exp.Expr | None) -> PgType | None:
        if node is None:
            return None
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if key in self._busy:  # a recursive CTE reaching itself
            return None
        self._busy.add(key)
        try:
            result = self._infer(node)
        finally:
            self._busy.discard(key)
        if result is not None and result.held_text and not isinstance(node, exp.Column | exp.Alias):
            result = dataclasses.replace(result, held_text=False)  # computed from the column's value
        self._memo[key] = result
        return result

    def note(self, node: exp.Expr, typ: PgType | None) -> None:
        """Record the type of a node a rewrite made (it computes what the node it replaced did)."""
        self._memo[id(node)] = typ

    def all(self) -> None:
        """Type every node now, before any rewrite changes the tree (children first: the recursion of
        :meth:`of` stays shallow however deep the statement is)."""
        for node in reversed(list(self.ast.walk(bfs=False))):
            self.of(node)

    # ----------------------------------------------------------------------------------------- dispatch

    def _infer(self, node: exp.Expr) -> PgType | None:
        if isinstance(node, exp.Column):
            return self.column(node)
        if isinstance(node, exp.Literal):
            return _literal(node)
        if isinstance(node, exp.Neg) and isinstance(node.unnest_operands()[0].unnest(), exp.Literal):
            literal = node.this.unnest()  # PostgreSQL's grammar negates the constant: -2147483648 is an int4
            if literal.is_int:
                return _integer(-int(literal.this))
        if isinstance(node, exp.Null):
            return UNKNOWN
        if isinstance(node, (exp.Boolean, exp.Predicate, *_COMPARISONS)):
            return BOOL
        if isinstance(node, exp.Cast | exp.TryCast):
            to = from_sqlglot(node.to)  # a cast to char(n) pads (see dialect_text)
            if to is not None and to.numeric and to.precision is None:
                return self._to_numeric(node.this, to)
            return dataclasses.replace(to, padded=True) if to is not None and to.bpchar and to.length else to
        if isinstance(node, exp.Alias):
            return self.of(node.this)
        if isinstance(node, _SAME_AS_ARG):
            return self.of(node.this)
        if isinstance(node, exp.Distinct):
            return self.of(node.expressions[0]) if len(node.expressions) == 1 else None
        if isinstance(node, exp.Interval):
            return INTERVAL
        if isinstance(node, exp.HexString | exp.BitString):  # x'1F' / b'101' (0x1F is a number: parse.numbers)
            return None
        if isinstance(node, exp.ByteString | exp.RawString | exp.National):
            return UNKNOWN
        if isinstance(node, exp.Subquery):
            return self._subquery(node)
        if pgsignatures.known(node):
            return pgsignatures.result(node, self.of)
        if isinstance(node, exp.Binary):
            return self._binary(node)
        if isinstance(node, exp.Case | exp.If):
            return self._case(node)
        if isinstance(node, exp.Array):
            elem = common([self.of(e) for e in node.expressions]) if node.expressions else None
            return (
                elem.array()
                if elem is not None and not elem.is_("unknown")
                else (TEXT.array() if elem else None)
            )
        if isinstance(node, exp.Bracket):
            return self._bracket(node)
        if isinstance(node, exp.Window):
            return self.of(node.this)
        if isinstance(node, exp.Filter | exp.WithinGroup | exp.IgnoreNulls | exp.RespectNulls):
            return self.of(node.this)
        return None

    def _to_numeric(self, value: exp.Expr, to: PgType) -> PgType:
        """``::numeric`` keeps an integer's, a literal's or a numeric's scale; of text, json or a float, the
        display scale is the value's own (per value)."""
        source = self.of(value)
        if isinstance(value, exp.Literal) or source is not None and (source.integer or source.numeric):
            return dataclasses.replace(to, loose_scale=source is not None and source.loose_scale)
        return dataclasses.replace(to, loose_scale=True)

    def _binary(self, node: exp.Binary) -> PgType | None:
        left, right = self.of(node.this), self.of(node.expression)
        if isinstance(node, exp.DPipe):
            return _concat(left, right)
        if isinstance(node, exp.Add | exp.Sub | exp.Mul | exp.Div | exp.Mod):
            if isinstance(node, exp.Sub) and left is not None and left.is_("jsonb"):
                return left  # jsonb - key
            result = _datetime_arith(node, left, right) or arithmetic(left, right)
            if isinstance(node, exp.Div) and result is not None and result.numeric:
                return LOOSE_NUMERIC  # PostgreSQL picks the quotient's scale per value
            return result
        if isinstance(node, exp.BitwiseAnd | exp.BitwiseOr | exp.BitwiseXor):
            return arithmetic(left, right)
        if isinstance(node, exp.BitwiseLeftShift | exp.BitwiseRightShift):
            return left
        if isinstance(node, exp.IntDiv):
            return NUMERIC  # div(a, b)
        if isinstance(node, exp.JSONExtract | exp.JSONBExtract):
            return left if left is not None and left.is_("json", "jsonb") else None
        if isinstance(node, exp.JSONExtractScalar | exp.JSONBExtractScalar):
            return TEXT
        return None

    def _case(self, node: exp.Expr) -> PgType | None:
        if isinstance(node, exp.If):
            return common([self.of(node.args.get("true")), self.of(node.args.get("false"))])
        branches = [self.of(i.args.get("true")) for i in node.args.get("ifs") or []]
        default = node.args.get("default")
        branches.append(self.of(default) if default is not None else UNKNOWN)
        return common(branches)

    def _bracket(self, node: exp.Bracket) -> PgType | None:
        if any(isinstance(e, exp.Slice) for e in node.expressions):
            base = self.of(node.this)
            return base if base is not None and base.dims else None
        inner: exp.Expr = node.this  # a[i][j] is one subscript of a: its element type (NULL if too few)
        while isinstance(inner, exp.Bracket) and not any(isinstance(e, exp.Slice) for e in inner.expressions):
            inner = inner.this
        base = self.of(inner)
        if base is None or not base.dims:
            return None
        return dataclasses.replace(base, dims=0)

    def _subquery(self, node: exp.Subquery) -> PgType | None:
        query = node.this
        types = self.projections(query) if isinstance(query, exp.Query) else None
        return types[0][1] if types and len(types) == 1 else None

    # ------------------------------------------------------------------------------------------ columns

    def column(self, node: exp.Column) -> PgType | None:
        if isinstance(node.this, exp.Star):
            return None
        name = fold(node.this)
        qualifier = fold(node.args["table"]) if node.args.get("table") else None
        for select in enclosing_selects(node):
            found = self._in_select(select, name, qualifier, node)
            if found is not _MISSING:
                return found  # type: ignore[return-value]
        return None

    def _in_select(
        self, select: exp.Select, name: str, qualifier: str | None, node: exp.Column
    ) -> PgType | None | object:
        sources = list(from_items(select))
        if qualifier is not None:
            for alias, item in sources:
                if alias == qualifier:
                    return self._source_column(item, name)
            return _MISSING
        hits = [self._source_column(item, name) for _, item in sources if self._has_column(item, name)]
        if hits:
            return hits[0] if all(h == hits[0] for h in hits) else None
        if any(self.source_columns(item) is None for _, item in sources):
            return None  # it may be a column of the FROM item whose columns are not known
        if _in_clause_of(node, select, ("order", "group", "having")):  # an output column's alias
            for projection in select.expressions:
                if projection.alias_or_name == name and projection is not node:
                    return self.of(projection)
        return _MISSING

    def _has_column(self, item: exp.Expr, name: str) -> bool:
        names = self.source_columns(item)
        return names is not None and name in names

    def source_columns(self, item: exp.Expr) -> list[str] | None:
        """Column names of a FROM item (None when unknown)."""
        types = self._source_types(item)
        return None if types is None else [n for n, _ in types]

    def _source_column(self, item: exp.Expr, name: str) -> PgType | None:
        for column, typ in self._source_types(item) or []:
            if column == name:
                return typ
        return None

    def _source_types(self, item: exp.Expr) -> list[tuple[str, PgType | None]] | None:
        alias = item.args.get("alias")
        renamed = [fold(c) for c in alias.columns] if isinstance(alias, exp.TableAlias) else []
        types = self._raw_source_types(item)
        if types is None:
            return None
        if renamed:
            types = [(renamed[i] if i < len(renamed) else n, ty) for i, (n, ty) in enumerate(types)]
        return types

    def _raw_source_types(self, item: exp.Expr) -> list[tuple[str, PgType | None]] | None:
        if isinstance(item, exp.Table) and isinstance(item.this, exp.Func):
            return self._generator(item.this, item)
        if isinstance(item, exp.Table):
            cte = self._cte(item)
            if cte is not None:
                return self._cte_types(cte)
            columns = self.table_columns(item)
            return None if columns is None else list(columns.items())
        if isinstance(item, exp.Subquery | exp.Lateral):
            inner = item.this
            if isinstance(inner, exp.Subquery):
                inner = inner.this
            if isinstance(inner, exp.Func):
                return self._generator(inner, item)
            return self.projections(inner) if isinstance(inner, exp.Query) else None
        if isinstance(item, exp.Values):
            return self._values(item)
        if isinstance(item, exp.Unnest):
            return self._generator(item, item)
        return None

    def _generator(self, func: exp.Expr, item: exp.Expr) -> list[tuple[str, PgType | None]] | None:
        alias = item.args.get("alias")
        # unaliased: named after the function (``generate_series``, ``unnest``), as from_items names the item
        name = (
            fold(alias.this)
            if isinstance(alias, exp.TableAlias) and alias.this
            else pgsignatures.generator_name(func) or "?column?"
        )
        columns = pgsignatures.generator_columns(func, self.of)
        if columns is None:
            return None
        if len(columns) == 1:  # a scalar row generator's column is named after the alias or the function
            columns = [(name, columns[0][1])]
        if isinstance(item, exp.Unnest) and item.args.get("offset"):
            columns.append((fold(item.args["offset"]), INT8))
        return columns

    def _values(self, values: exp.Values) -> list[tuple[str, PgType | None]]:
        rows = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in values.expressions]
        width = max((len(r) for r in rows), default=0)
        return [
            (f"column{i + 1}", common([self.of(r[i]) if i < len(r) else None for r in rows]))
            for i in range(width)
        ]

    def _cte(self, table: exp.Table) -> exp.CTE | None:
        if table.args.get("db") is not None:
            return None
        name = fold(table.this)
        node: exp.Expr | None = table
        while node is not None:
            with_ = node.args.get("with_") if isinstance(node, exp.Query) else None
            if isinstance(with_, exp.With):
                for cte in with_.expressions:
                    if isinstance(cte, exp.CTE) and cte.alias and fold(cte.args["alias"].this) == name:
                        return cte
            node = node.parent
        return None

    def _cte_types(self, cte: exp.CTE) -> list[tuple[str, PgType | None]] | None:
        types = self.projections(cte.this) if isinstance(cte.this, exp.Query) else None
        alias = cte.args.get("alias")
        if types is not None and isinstance(alias, exp.TableAlias) and alias.columns:
            names = [fold(c) for c in alias.columns]
            types = [(names[i] if i < len(names) else n, ty) for i, (n, ty) in enumerate(types)]
        return types

    def projections(self, query: exp.Expr) -> list[tuple[str, PgType | None]] | None:
        """(output name, type) of each column of a query (None when a ``*`` cannot be expanded)."""
        if isinstance(query, exp.Subquery):
            return self.projections(query.this)
        if isinstance(query, exp.SetOperation):
            left = self.projections(query.this)
            right = self.projections(query.expression)
            if left is None:
                return None
            if right is None or len(right) != len(left) or query.parent is not None and _is_recursive(query):
                return left
            return [(n, common([a, b])) for (n, a), (_, b) in zip(left, right, strict=True)]
        if isinstance(query, exp.Values):
            return self._values(query)
        if not isinstance(query, exp.Select):
            return None
        columns = self.result_columns(query)
        if columns is None:
            return None
        out: list[tuple[str, PgType | None]] = []
        for column in columns:
            typ = column.typ
            if typ is not None and typ.numeric and typ.loose_scale and not column.starred:
                # sent on as text (dialect_scale), or read as a decimal by the rewrites
                typ = dataclasses.replace(typ, held_text=shows_text(column.item))
            out.append((column.name, typ))
        return out

    def result_columns(self, select: exp.Select) -> list[ResultColumn] | None:
        """The result columns of ``select``, each ``*`` expanded (None when one cannot be)."""
        out: list[ResultColumn] = []
        for item in select.expressions:
            star = star_of(item)
            if star is None:
                out.append(ResultColumn(output_name(item), self.of(item), item))
                continue
            columns = self.star_columns(select, star)
            if columns is None:
                return None
            out += [ResultColumn(name, typ, item, True, alias) for alias, name, typ in columns]
        return out

    def star_columns(
        self,
        select: exp.Select,
        star: exp.Expr,
        merges: list[tuple[str, PgType | None, PgType | None]] | None = None,
    ) -> list[tuple[str | None, str, PgType | None]] | None:
        """The columns ``*`` (or ``alias.*``) stands for, as (FROM item's alias, name, type); NATURAL and USING
        joins show their common columns once, first (PostgreSQL's order), with no alias (the merged column).
        ``merges`` receives each merged column's (name, left type, right type)."""
        qualifier = (
            fold(star.args["table"]) if isinstance(star, exp.Column) and star.args.get("table") else None
        )
        out: list[tuple[str | None, str, PgType | None]] = []
        joins = {id(j.this): j for j in select.args.get("joins") or []}
        for alias, item in from_items(select):
            if qualifier is not None and alias != qualifier:
                continue
            types = self._source_types(item)
            if types is None:
                return None
            join = joins.get(id(item))
            left = [(name, typ) for _, name, typ in out]
            shared = _shared_columns(join, left, types) if join is not None and qualifier is None else []
            mine = [(alias, name, typ) for name, typ in types]
            if shared:
                if merges is not None:
                    right = dict(types)
                    merges += [(n, typ, right.get(n)) for _, n, typ in out if n in shared]
                first = [(None, n, typ) for _, n, typ in out if n in shared]
                out = first + [c for c in out if c[1] not in shared] + [c for c in mine if c[1] not in shared]
            else:
                out += mine
        return out


def shared_columns(select: exp.Select) -> bool:
    """Whether a join of ``select`` merges columns (USING or NATURAL)."""
    return any(
        j.args.get("using") or str(j.args.get("method") or "").upper() == "NATURAL"
        for j in select.args.get("joins") or []
    )


_MISSING = object()


def _shared_columns(
    join: exp.Join, left: list[tuple[str, PgType | None]], right: list[tuple[str, PgType | None]]
) -> list[str]:
    using = join.args.get("using")
    if using:
        return [fold(u.this if isinstance(u, exp.Column) else u) for u in using]
    if str(join.args.get("method") or "").upper() == "NATURAL":
        names = {n for n, _ in right}
        return [n for n, _ in left if n in names]
    return []


def passes_text(item: exp.Expr) -> bool:
    """Whether a select-list item that is a column held as text (an unconstrained numeric of a lake table)
    passes that text on unchanged: a bare column (or its alias) in the select list of the statement's own
    SELECT, of a derived table or of a CTE, which neither groups nor removes duplicates (both compare values,
    and ``1.5`` equals ``1.50``). Anywhere else the rewrites read the text as a decimal."""
    column = item.this if isinstance(item, exp.Alias) else item
    select = item.parent
    if not isinstance(column, exp.Column) or not isinstance(select, exp.Select):
        return False
    return shows_text(item) and not select.args.get("group")


def shows_text(item: exp.Expr) -> bool:
    """Whether a select-list item sends a numeric whose display scale varies per value on as PostgreSQL's text
    of it (:mod:`lakegate.gateway.dialect_scale`): an item of the statement's own SELECT, of a derived table or
    of a CTE, which does not remove duplicates."""
    select = item.parent
    if not isinstance(select, exp.Select) or item.arg_key != "expressions":
        return False
    distinct = select.args.get("distinct")
    if distinct is not None and not distinct.args.get("on"):
        return False
    node: exp.Expr = select
    holder = select.parent
    while isinstance(holder, exp.Subquery):
        node, holder = holder, holder.parent
    if holder is None or isinstance(holder, exp.CTE):
        return True
    return isinstance(holder, exp.From | exp.Join | exp.Lateral) and node.arg_key == "this"


def output_name(projection: exp.Expr) -> str:
    if isinstance(projection, exp.Alias):
        return fold(projection.args["alias"]) if projection.args.get("alias") else projection.alias
    if isinstance(projection, exp.Column):
        return fold(projection.this)
    return projection.alias_or_name or "?column?"


def _literal(node: exp.Literal) -> PgType:
    if node.is_string:
        return UNKNOWN
    text = node.this
    if node.is_int:
        return _integer(int(text))
    return NUMERIC


def _integer(value: int) -> PgType:
    """PostgreSQL's type of an integer constant: the smallest of int4, int8 and numeric that holds it."""
    return INT4 if -(2**31) <= value < 2**31 else INT8 if -(2**63) <= value < 2**63 else NUMERIC


_INTEGER_WIDTH = ("int2", "int4", "int8")


def _concat(left: PgType | None, right: PgType | None) -> PgType | None:
    if left is not None and right is not None and (left.dims == 1 or right.dims == 1):
        # array || element and array || array take anycompatible: integers widen (int4[] || int8 is int8[])
        names = [(x.elem if x.dims else x).name for x in (left, right)]
        if all(n in _INTEGER_WIDTH for n in names) and len(set(names)) > 1:
            return t(max(names, key=_INTEGER_WIDTH.index)).array()
    if left is not None and left.dims:
        return left
    if right is not None and right.dims:
        return right
    if left is not None and left.is_("jsonb") or right is not None and right.is_("jsonb"):
        return t("jsonb")
    if left is not None and left.is_("bytea") and right is not None and right.is_("bytea"):
        return left
    return TEXT


def _datetime_arith(node: exp.Binary, left: PgType | None, right: PgType | None) -> PgType | None:
    if left is None or right is None:
        return None
    names = (left.typname, right.typname)
    add, sub = isinstance(node, exp.Add), isinstance(node, exp.Sub)
    table: dict[tuple[str, str], PgType] = {}
    if add or sub:
        table = {
            ("date", "int4"): t("date"),
            ("date", "interval"): t("timestamp"),
            ("timestamp", "interval"): t("timestamp"),
            ("timestamptz", "interval"): t("timestamptz"),
            ("time", "interval"): t("time"),
            ("interval", "interval"): INTERVAL,
        }
        if add:
            table.update(
                {
                    ("int4", "date"): t("date"),
                    ("interval", "date"): t("timestamp"),
                    ("interval", "timestamp"): t("timestamp"),
                    ("interval", "timestamptz"): t("timestamptz"),
                    ("date", "time"): t("timestamp"),
                    ("time", "date"): t("timestamp"),
                    ("timestamp", "time"): t("timestamp"),
                    ("timestamptz", "time"): t("timestamptz"),
                }
            )
        else:
            table.update(
                {
                    ("date", "date"): INT4,
                    ("timestamp", "timestamp"): INTERVAL,
                    ("timestamptz", "timestamptz"): INTERVAL,
                    ("time", "time"): INTERVAL,
                }
            )
    elif isinstance(node, exp.Mul | exp.Div) and (
        left.is_("interval") and right.number or right.is_("interval") and left.number
    ):
        return INTERVAL
    return table.get(names)


def _is_recursive(query: exp.Expr) -> bool:
    cte = query.parent
    while isinstance(cte, exp.Subquery):
        cte = cte.parent
    with_ = cte.parent if isinstance(cte, exp.CTE) else None
    return isinstance(with_, exp.With) and bool(with_.args.get("recursive"))


def enclosing_selects(node: exp.Expr) -> Iterator[exp.Select]:
    """The SELECTs whose FROM items a column may refer to, innermost first (a column in a FROM item's own
    expression, e.g. a LATERAL or a join's ON, belongs to the SELECT that owns that FROM)."""
    current = node.parent
    while current is not None:
        if isinstance(current, exp.Select):
            yield current
        current = current.parent


def from_items(select: exp.Select) -> Iterator[tuple[str, exp.Expr]]:
    items: list[exp.Expr] = []
    from_ = select.args.get("from_")
    if isinstance(from_, exp.From):
        items.append(from_.this)
    items += [j.this for j in select.args.get("joins") or []]
    items += list(select.args.get("laterals") or [])
    for item in items:
        alias = item.args.get("alias")
        if isinstance(alias, exp.TableAlias) and alias.this is not None:
            yield fold(alias.this), item
        elif isinstance(item, exp.Table) and not isinstance(item.this, exp.Func):
            yield fold(item.this), item
        elif isinstance(item, exp.Table | exp.Unnest):
            yield pgsignatures.generator_name(item), item
        else:
            yield "", item


def _in_clause_of(node: exp.Expr, select: exp.Select, keys: tuple[str, ...]) -> bool:
    current: exp.Expr | None = node
    while current is not None and current.parent is not select:
        current = current.parent
    return current is not None and current.arg_key in keys


def star_of(projection: exp.Expr) -> exp.Expr | None:
    """``projection`` when it is ``*`` or ``t.*``, else None."""
    if isinstance(projection, exp.Star):
        return projection
    if isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
        return projection
    return None

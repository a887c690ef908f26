"""The typed random query generator: SELECT statements in the shapes BI tools and analysts send, over the
fuzzer's tables, every expression well typed by construction (the families and signatures of
:mod:`tests.fuzz.types`).

Queries come back as templates whose tables are ``{name}`` placeholders (``tests.answers_harness.Query``
replaces them with ``public.name``, ``pg.public.name`` or ``lake.public.name``). Every ordered query orders by all
its output columns (after its own keys), so PostgreSQL and the gateway have one right order to agree on; window
functions order by the key ``id`` last for the same reason. Left out on purpose, because their answer is not
one value in PostgreSQL itself: sums and averages of floats (the result depends on the order rows are added,
which is the plan's), volatile functions, and the current time.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from tests.fuzz.types import AGGREGATES, EQUAL, FIELDS, FUNCTIONS, LITERALS, ORDERED, PATTERNS, TRUNC_UNITS


@dataclass(frozen=True)
class Column:
    ref: str  #: how the query names it (``a.i4``)
    family: str


Tables = dict[str, list[tuple[str, str]]]  #: table -> [(column, family)], from the source's catalog

#: whole-row forms of count over a join's two sides (a NULL-extended row is a NULL row: not counted)
WHOLE_ROWS = ("count(b.*)", "count(b)", "count(a.*)", "count(a)")


class Generator:
    def __init__(self, rng: random.Random, tables: Tables) -> None:
        self.rng = rng
        self.tables = tables
        self.shapes: list[tuple[int, Callable[[], str]]] = [
            (6, self.simple),
            (4, self.aggregate),
            (3, self.join),
            (3, self.window),
            (2, self.set_operation),
            (2, self.subquery),
            (2, self.cte),
            (1, self.grouping_sets),
            (1, self.unnest),
            (2, self.tableless),
            (1, self.whole_row),
        ]

    # ------------------------------------------------------------------------------------------ statements

    def query(self) -> str:
        weights = [w for w, _ in self.shapes]
        shape = self.rng.choices([s for _, s in self.shapes], weights)[0]
        return shape()

    def simple(self) -> str:
        table, scope = self._from("a")
        items = self._items(scope, self.rng.randint(1, 4))
        distinct = "DISTINCT " if self.rng.random() < 0.1 else ""
        sql = f"SELECT {distinct}{', '.join(items)} FROM {table}{self._where(scope)}"
        return sql + self._order(len(items), limit=True)

    def aggregate(self) -> str:
        table, scope = self._from("a")
        keys = [
            self.expr(self._family(EQUAL, scope), scope, self.rng.randint(0, 1))
            for _ in range(self.rng.randint(0, 2))
        ]
        aggs = [
            self.aggregate_call(self._family(tuple(AGGREGATES), scope), scope)
            for _ in range(self.rng.randint(1, 3))
        ]
        items = keys + aggs
        sql = f"SELECT {', '.join(items)} FROM {table}{self._where(scope)}"
        if keys:
            sql += " GROUP BY " + ", ".join(str(i + 1) for i in range(len(keys)))
        if self.rng.random() < 0.3:
            sql += f" HAVING count(*) > {self.rng.randint(0, 3)}"
        return sql + self._order(len(items), limit=False)

    def join(self) -> str:
        left, lscope = self._from("a")
        right, rscope = self._from("b")
        kind = self.rng.choice(["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN", "JOIN", "LEFT JOIN"])
        on = self.rng.choice(["a.k = b.k", "a.id = b.id", "a.k = b.id", "a.id = b.k + 1"])
        scope = lscope + rscope
        items = self._items(scope, self.rng.randint(1, 4))
        if self.rng.random() < 0.3:  # an aggregate over the join
            key = self.rng.choice(["a.k", "b.k", "a.id"])
            aggs = [self.aggregate_call(self._family(tuple(AGGREGATES), scope), scope) for _ in range(2)]
            if self.rng.random() < 0.3:  # whole-row references: count(b.*) counts the rows the join matched
                aggs[0] = self.rng.choice(WHOLE_ROWS)
            sql = f"SELECT {key}, {', '.join(aggs)} FROM {left} {kind} {right} ON {on} GROUP BY 1"
            return sql + self._order(3, limit=False)
        sql = f"SELECT {', '.join(items)} FROM {left} {kind} {right} ON {on}{self._where(scope)}"
        return sql + self._order(len(items), limit=True)

    def whole_row(self) -> str:
        """A whole-row reference outside count(): refused on the lake route, answered on pg.*."""
        table, _ = self._from("a")
        item = self.rng.choice(["a", "a::text", "a IS NULL", "to_jsonb(a)", "count(DISTINCT a)", "(a).id"])
        return f"SELECT {item} FROM {table} ORDER BY 1 LIMIT 3"

    def window(self) -> str:
        table, scope = self._from("a")
        items = ["a.id"] + [self.window_call(scope) for _ in range(self.rng.randint(1, 3))]
        sql = f"SELECT {', '.join(items)} FROM {table}{self._where(scope)}"
        return sql + self._order(len(items), limit=False)

    def set_operation(self) -> str:
        families = [self._family(EQUAL) for _ in range(self.rng.randint(1, 3))]
        sides = []
        for alias in ("a", "b"):
            table, scope = self._from(alias)
            items = [self.expr(f, scope, self.rng.randint(0, 2)) for f in families]
            sides.append(f"SELECT {', '.join(items)} FROM {table}{self._where(scope)}")
        op = self.rng.choice(["UNION", "UNION ALL", "INTERSECT", "EXCEPT", "INTERSECT ALL", "EXCEPT ALL"])
        return f"{sides[0]} {op} {sides[1]}" + self._order(len(families), limit=False)

    def subquery(self) -> str:
        table, scope = self._from("a")
        inner_table, inner = self._from("b")
        kind = self.rng.randint(0, 2)
        if kind == 0:
            family = self._family(EQUAL, scope)
            where = (
                f" WHERE {self.expr(family, scope, 1)} IN (SELECT {self.expr(family, inner, 1)} FROM {inner_table}"
                f"{self._where(inner)})"
            )
            items = self._items(scope, self.rng.randint(1, 3))
        elif kind == 1:
            neg = self.rng.choice(["", "NOT "])
            where = f" WHERE {neg}EXISTS (SELECT 1 FROM {inner_table} WHERE b.k = a.k{self._and(inner)})"
            items = self._items(scope, self.rng.randint(1, 3))
        else:
            agg = self.aggregate_call(self._family(tuple(AGGREGATES), inner), inner)
            items = ["a.id", f"(SELECT {agg} FROM {inner_table} WHERE b.k = a.k)"]
            where = self._where(scope)
        sql = f"SELECT {', '.join(items)} FROM {table}{where}"
        return sql + self._order(len(items), limit=False)

    def cte(self) -> str:
        table, scope = self._from("a")
        families = [self._family(EQUAL, scope) for _ in range(self.rng.randint(1, 3))]
        inner = [f"{self.expr(f, scope, self.rng.randint(0, 2))} AS c{i}" for i, f in enumerate(families)]
        cte = f"WITH c AS (SELECT a.id, a.k, {', '.join(inner)} FROM {table}{self._where(scope)}) "
        outer = [Column("c.id", "int"), Column("c.k", "int")] + [
            Column(f"c.c{i}", f) for i, f in enumerate(families)
        ]
        items = self._items(outer, self.rng.randint(1, 3))
        return (
            cte
            + f"SELECT {', '.join(items)} FROM c{self._where(outer)}"
            + self._order(len(items), limit=True)
        )

    def grouping_sets(self) -> str:
        table, scope = self._from("a")
        keys = self.rng.sample([c for c in scope if c.family in EQUAL and c.ref != "a.id"], 2)
        agg = self.aggregate_call(self._family(tuple(AGGREGATES), scope), scope)
        how = self.rng.choice(
            [
                f"ROLLUP ({keys[0].ref}, {keys[1].ref})",
                f"CUBE ({keys[0].ref}, {keys[1].ref})",
                f"GROUPING SETS (({keys[0].ref}), ({keys[1].ref}), ())",
            ]
        )
        items = [keys[0].ref, keys[1].ref, f"grouping({keys[0].ref}, {keys[1].ref})", "count(*)", agg]
        return f"SELECT {', '.join(items)} FROM {table} GROUP BY {how}" + self._order(len(items), limit=False)

    def unnest(self) -> str:
        array = self.rng.choice(["a.ia", "a.ta"])
        items = ["a.id", "u.x", "u.n"]
        if self.rng.random() < 0.5:
            items.append(
                self.expr(
                    "int" if array == "a.ia" else "text",
                    [Column("u.x", "int" if array == "a.ia" else "text")],
                    1,
                )
            )
        lateral = f"CROSS JOIN LATERAL unnest({array}) WITH ORDINALITY AS u(x, n)"
        sql = f"SELECT {', '.join(items)} FROM {{fz_arr}} a {lateral}"
        return sql + self._order(len(items), limit=False)

    def tableless(self) -> str:
        items = self._items([], self.rng.randint(1, 3))
        return f"SELECT {', '.join(items)}"

    # ----------------------------------------------------------------------------------------- expressions

    def expr(self, family: str, scope: list[Column], depth: int) -> str:
        columns = [c.ref for c in scope if c.family == family]
        roll = self.rng.random()
        if depth <= 0 or roll < 0.25:
            if columns and (roll < 0.18 or depth <= 0 and self.rng.random() < 0.75):
                return self.rng.choice(columns)
            return self.rng.choice(LITERALS[family])
        template, args = self.rng.choice(FUNCTIONS[family])
        return self._fill(template, args, scope, depth - 1)

    def aggregate_call(self, family: str, scope: list[Column]) -> str:
        template, args = self.rng.choice(AGGREGATES[family])
        call = self._fill(template, args, scope, self.rng.randint(0, 1))
        if self.rng.random() < 0.15:
            call += f" FILTER (WHERE {self.expr('bool', scope, 1)})"
        return call

    def window_call(self, scope: list[Column]) -> str:
        part = self.rng.choice(
            ["", "PARTITION BY a.k ", f"PARTITION BY {self.expr(self._family(EQUAL, scope), scope, 1)} "]
        )
        order_key = self.expr(self._family(ORDERED, scope), scope, 1)
        ordered = f"OVER ({part}ORDER BY {order_key}, a.id)"
        choice = self.rng.randint(0, 8)
        if choice == 0:
            return f"row_number() {ordered}"
        if choice == 1:
            rank = self.rng.choice(["rank", "dense_rank", "percent_rank", "cume_dist"])
            return f"{rank}() OVER ({part}ORDER BY {order_key})"
        if choice == 2:
            frame = self.rng.choice(
                [
                    "ROWS BETWEEN 1 PRECEDING AND CURRENT ROW",
                    "ROWS UNBOUNDED PRECEDING",
                    "ROWS BETWEEN CURRENT ROW AND 2 FOLLOWING",
                ]
            )
            agg = self.rng.choice(["sum", "min", "max", "count"])
            return f"{agg}(a.{self._int_column(scope)}) OVER ({part}ORDER BY a.id {frame})"
        if choice == 3:
            family = self._family(EQUAL, scope)
            return f"lag({self.expr(family, scope, 1)}) {ordered}"
        if choice == 4:
            family = self._family(EQUAL, scope)
            return f"lead({self.expr(family, scope, 1)}, 2, {self.rng.choice(LITERALS[family])}) {ordered}"
        if choice == 5:
            return f"first_value({self.expr(self._family(EQUAL, scope), scope, 1)}) {ordered}"
        if choice == 6:
            return f"count(*) OVER ({part.strip()})"
        if choice == 7:
            return f"ntile(3) {ordered}"
        return f"avg(a.{self._int_column(scope)}) OVER ({part.strip()})"

    # -------------------------------------------------------------------------------------------- helpers

    def _fill(self, template: str, args: tuple[str, ...], scope: list[Column], depth: int) -> str:
        eq = self._family(EQUAL, scope)
        order = self._family(ORDERED, scope)
        values = []
        for arg in args:
            if arg == "small":
                n = self.rng.randint(-2, 12)
                values.append(f"({n})" if n < 0 else str(n))
            else:
                family = eq if arg == "$eq" else order if arg == "$ord" else arg
                values.append(self.expr(family, scope, depth))
        out = template
        if "$f" in out:
            out = out.replace("$f", self.rng.choice(FIELDS[args[0]]))
        if "$u" in out:
            out = out.replace("$u", self.rng.choice(TRUNC_UNITS))
        if "$p" in out:
            out = out.replace("$p", self.rng.choice(PATTERNS))
        for i in reversed(range(len(values))):
            out = out.replace(f"${i}", values[i])
        return out

    def _from(self, alias: str) -> tuple[str, list[Column]]:
        name = self.rng.choice(sorted(self.tables))
        return f"{{{name}}} {alias}", [Column(f"{alias}.{c}", f) for c, f in self.tables[name]]

    def _items(self, scope: list[Column], n: int) -> list[str]:
        items = []
        for i in range(n):
            item = self.expr(self._family(EQUAL, scope), scope, self.rng.randint(0, 3))
            if self.rng.random() < 0.4:
                item += f" AS r{i}"
            items.append(item)
        return items

    def _where(self, scope: list[Column]) -> str:
        return f" WHERE {self.expr('bool', scope, self.rng.randint(1, 3))}" if self.rng.random() < 0.5 else ""

    def _and(self, scope: list[Column]) -> str:
        return f" AND {self.expr('bool', scope, 2)}" if self.rng.random() < 0.5 else ""

    def _order(self, n: int, limit: bool) -> str:
        if self.rng.random() < 0.5:
            return ""
        keys = [
            f"{i + 1}{self.rng.choice(['', ' DESC', ' NULLS FIRST', ' DESC NULLS LAST'])}" for i in range(n)
        ]
        sql = " ORDER BY " + ", ".join(keys)
        if limit and self.rng.random() < 0.5:
            sql += f" LIMIT {self.rng.randint(0, 5)}"
            if self.rng.random() < 0.3:
                sql += f" OFFSET {self.rng.randint(1, 3)}"
        return sql

    def _family(self, among: tuple[str, ...], scope: list[Column] | None = None) -> str:
        """A family of ``among``; mostly one that ``scope`` has columns of."""
        present = sorted({c.family for c in scope or () if c.family in among})
        if present and self.rng.random() < 0.75:
            return self.rng.choice(present)
        return self.rng.choice(among)

    def _int_column(self, scope: list[Column]) -> str:
        names = [c.ref.split(".", 1)[1] for c in scope if c.family == "int"]
        return self.rng.choice(names)

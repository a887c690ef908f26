"""What the gateway answers about queries rather than running them: the engines' own EXPLAIN, the gateway's
in-memory answers (EXPLAIN, SHOW, DESCRIBE), and the small DuckDB queries of its own (a time-travel argument's
value), each within the request's time limit.

An EXPLAIN shows the user's tables by the names the user wrote, never what the gateway reads them from: the
engine SQL is the statement without the views the gateway puts in front of it (whose text holds the Iceberg
metadata file of each lake table, or the lake cache's table), each view is described in words (which table, at
which version, read from where), and the lake cache's tables in DuckDB's plan are replaced by the names of the
tables they hold (``memory.lakegate_cache.t2`` -> ``lake.public.facts``, re-centred in DuckDB's box drawing).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from lakegate.connectors.duckdb.engine import DuckDBEngine
from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.query import QueryCancelled, QueryError
from lakegate.gateway import deadline as deadline_mod
from lakegate.gateway import parse as parse_mod
from lakegate.gateway.cache_store import SCHEMA as CACHE_SCHEMA
from lakegate.gateway.catalog import Catalog
from lakegate.gateway.errors import BadRequest, QueryTimeout
from lakegate.gateway.execute import Watchdog, engine_error
from lakegate.gateway.route import GATEWAY_ROUTE, POSTGRES_ROUTE, Plan
from lakegate.gateway.schema import describe_table, show


class TableStream:
    """An in-memory result (answers the gateway computes itself: SHOW, DESCRIBE, EXPLAIN)."""

    def __init__(self, table: pa.Table) -> None:
        self.table = table
        self.schema = table.schema

    def start(self) -> None:
        pass

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        return iter(self.table.to_batches())

    def cancel(self) -> None:
        pass

    def close(self) -> None:
        pass


class Introspection:
    """EXPLAIN, SHOW, DESCRIBE and the gateway's own DuckDB queries over the gateway's engines."""

    def __init__(
        self,
        postgres: Mapping[str, PostgresEngine],
        duckdb: DuckDBEngine,
        catalog: Catalog,
        watchdog: Watchdog,
        timeout: float,
    ) -> None:
        self.postgres = postgres
        self.duckdb = duckdb
        self.catalog = catalog
        self.watchdog = watchdog
        self.timeout = timeout  #: the server's time limit (seconds), for a deadline-less remainder

    def explain(self, statement: parse_mod.Statement, plan: Plan | None, deadline: float) -> dict[str, Any]:
        """``/v1/explain``: the route, tables and views of ``plan`` and the engine's own plan."""
        if plan is None:
            return {
                "route": GATEWAY_ROUTE,
                "source": None,
                "tables": [],
                "engines": [],
                "views": {},
                "plan": f"answered by the gateway ({statement.kind.upper()})",
            }
        out = plan.explain()
        out["engines"] = [{**engine, "sql": plan.body} for engine in out["engines"]]
        out["views"] = {name: describe_view(name, sql) for name, sql in plan.views.items()}
        out["plan"] = self.engine_plan(plan, deadline)
        return out

    def answer(self, statement: parse_mod.Statement, plan: Plan | None, deadline: float) -> pa.Table:
        """The result of an EXPLAIN, SHOW or DESCRIBE statement."""
        if statement.kind == parse_mod.EXPLAIN:
            assert plan is not None
            info = plan.explain()
            return pa.table(
                {
                    "route": [plan.route],
                    "source": [plan.source],
                    "sql": [plan.body],
                    "tables": [", ".join(info["tables"])],
                    "plan": [self.engine_plan(plan, deadline)],
                }
            )
        if statement.kind == parse_mod.SHOW:
            return show(self.catalog, statement.show, statement.show_in)
        assert statement.ast is not None
        return describe_table(self.catalog, statement.ast)

    def engine_plan(self, plan: Plan, deadline: float) -> str:
        """The engine's own EXPLAIN, within the request's time limit."""
        try:
            if plan.route == POSTGRES_ROUTE:
                assert plan.source is not None
                timeout = deadline_mod.remaining(deadline, self.timeout)
                lines = self.postgres[plan.source].fetch(f"EXPLAIN {plan.sql}", timeout=timeout)
                return "\n".join(r[0] for r in lines)
            rows = self.duckdb_rows(f"EXPLAIN {plan.sql}", deadline)
            return public_plan("\n".join(str(r.get("explain_value", "")) for r in rows), plan.views)
        except QueryCancelled as exc:
            raise QueryTimeout("the time limit passed while the engine explained the query") from exc
        except QueryError as exc:
            if exc.sqlstate == "57014":
                raise QueryTimeout("the time limit passed while PostgreSQL explained the query") from exc
            raise engine_error(exc) from exc

    def duckdb_rows(self, sql: str, deadline: float | None) -> list[dict[str, Any]]:
        """A small DuckDB query of the gateway's own, interrupted at ``deadline``."""
        result = self.duckdb.prepare(sql)
        handle = self.watchdog.watch(deadline, result.cancel) if deadline is not None else None
        try:
            with deadline_mod.shielded():
                result.start()
                return pa.Table.from_batches(list(result), schema=result.schema).to_pylist()
        finally:
            if handle is not None:
                self.watchdog.unwatch(handle)
            result.close()

    def evaluate(self, sql: str) -> Any:
        """A time-travel argument's value (routing calls it), within the request's time limit."""
        try:
            rows = self.duckdb_rows(sql, deadline_mod.current())
            return next(iter(rows[0].values())) if rows else None
        except QueryCancelled as exc:
            raise QueryTimeout("the time limit passed while the time-travel argument was evaluated") from exc
        except QueryError as exc:
            raise BadRequest(f"cannot evaluate the time-travel argument: {exc}") from exc
        except (OverflowError, ValueError) as exc:  # 'infinity' as a time: no Python datetime holds it
            raise BadRequest(
                f"the time-travel argument is not a finite time or snapshot id ({exc}); give a time such as "
                "'2024-05-01 12:00:00+00' or a snapshot id"
            ) from exc


# ------------------------------------------------------------------------------------ EXPLAIN in user terms

_CACHE_TABLE = re.compile(rf"(?:memory\.)?{CACHE_SCHEMA}\.t\d+")
_CACHE_LEFTOVER = re.compile(rf"(?:memory\.)?{CACHE_SCHEMA}\S*")  #: a name DuckDB wrapped across two lines
_CELL_BORDERS = "│├┤"


def describe_view(name: str, sql: str) -> str:
    """A lake or PostgreSQL view of a DuckDB-route plan in words: the table, its version, where it is read from
    (``sql``, which names files and cache tables, is not shown)."""
    table, _, at = name.partition("@")
    version = ""
    if at.endswith("ms") and at[:-2].lstrip("-").isdigit():
        stamp = datetime.datetime.fromtimestamp(int(at[:-2]) / 1000, datetime.UTC)
        version = f" as of {stamp.isoformat()}"
    elif at:
        version = f" at version {at}"
    if CACHE_SCHEMA + "." in sql:
        where = "the lake cache (in memory)"
        if "read_parquet(" in sql:
            where += " and the data files committed since it was loaded"
    elif "iceberg_scan(" in sql:
        where = "its Iceberg data files"
    else:
        where = "PostgreSQL, live"
    return f"{table}{version}: read from {where}"


def public_plan(text: str, views: Mapping[str, str]) -> str:
    """DuckDB's box-drawn plan with each lake cache table named by the table it holds."""
    names: dict[str, str] = {}
    for view, sql in views.items():
        for internal in _CACHE_TABLE.findall(sql):
            names[internal.removeprefix("memory.")] = view.partition("@")[0]
    lines = text.split("\n")
    for internal, table in names.items():
        pattern = re.compile(rf"(?:memory\.)?{re.escape(internal)}(?!\d)")
        lines = [out for line in lines for out in _renamed(line, pattern, table)]
    # a name wrapped by DuckDB over two lines (over 27 characters) is blanked to its length: never shown
    return "\n".join(_CACHE_LEFTOVER.sub(lambda m: "?".center(len(m.group(0))), line) for line in lines)


def _renamed(line: str, old: re.Pattern[str], new: str) -> list[str]:
    """``line`` with ``old`` replaced by ``new`` centred in its box cell; a ``new`` wider than the cell wraps
    onto added lines, on which the other cells and the tree's connectors continue blank."""
    cells: list[tuple[int, int, list[str]]] = []
    for match in old.finditer(line):
        left = max(line.rfind(border, 0, match.start()) for border in _CELL_BORDERS) + 1
        ends = [line.find(border, match.end()) for border in _CELL_BORDERS]
        right = min((end for end in ends if end >= 0), default=len(line))
        if cells and cells[-1][0] == left:
            continue  # the same cell twice: replaced at once
        width = right - left
        content = old.sub(new, line[left:right]).strip()
        cells.append((left, right, [content[i : i + width] for i in range(0, len(content), width)] or [""]))
    if not cells:
        return [line]
    blank = "".join(c if c == "│" else "│" if c in "├┤┐" else " " for c in line)
    out = []
    for row in range(max(len(pieces) for _, _, pieces in cells)):
        text = line if row == 0 else blank
        for left, right, pieces in reversed(cells):  # from the right: the left offsets stay valid
            piece = pieces[row] if row < len(pieces) else ""
            text = text[:left] + piece.center(right - left) + text[right:]
        out.append(text)
    return out

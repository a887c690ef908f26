"""What the gateway answers about queries rather than running them: the engines' own EXPLAIN, the gateway's
in-memory answers (EXPLAIN, SHOW, DESCRIBE), and the small DuckDB queries of its own (a time-travel argument's
value), each within the request's time limit."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from lakegate.connectors.duckdb.engine import DuckDBEngine
from lakegate.connectors.postgres.engine import PostgresEngine
from lakegate.connectors.query import QueryCancelled, QueryError
from lakegate.gateway import deadline as deadline_mod
from lakegate.gateway import parse as parse_mod
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
                    "sql": [plan.sql],
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
            return "\n".join(str(r.get("explain_value", "")) for r in rows)
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

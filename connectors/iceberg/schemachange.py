"""Committing a schema change, and lakegate's records about the source table, to a lake table.

What changes is planned in :mod:`~lakegate.connectors.iceberg.schema` (``plan_evolution``) and the rows a new
column's value goes into in :mod:`~lakegate.connectors.iceberg.evolution`; here each lake table receives its plan
in one commit (schema, properties and backfilled rows together).
"""

from __future__ import annotations

import json
import logging

from pyiceberg.table import Table, Transaction

from lakegate.connectors.changes import TableSchema
from lakegate.connectors.errors import SchemaChangeError
from lakegate.connectors.iceberg import evolution, tablecommit
from lakegate.connectors.iceberg.evolution import (
    ATTNUMS,
    PGTYPES,
    Backfill,
    attnums_of,
    pgtypes_property,
    properties_for,
)
from lakegate.connectors.iceberg.schema import CHANGELOG, plan_evolution

log = logging.getLogger("lakegate.connectors.iceberg.writer")


def check_key(old: TableSchema, new: TableSchema, renames: dict[str, str]) -> None:
    """Raise SchemaChangeError when ``new``'s key is not ``old``'s (renamed columns followed)."""
    if {renames.get(k, k) for k in old.key} == set(new.key):
        return
    raise SchemaChangeError(
        str(new.table),
        (
            f"the columns that identify a row of {new.table} in the stream changed from ({', '.join(old.key)}) to "
            f"({', '.join(new.key)}): its primary key changed, or its REPLICA IDENTITY now names another index "
            f"(ALTER TABLE ... REPLICA IDENTITY USING INDEX; the primary key may be unchanged). The lake state is "
            f"keyed by the old columns: put the replica identity back (ALTER TABLE {new.table} REPLICA IDENTITY "
            f"DEFAULT), or stop the worker, run 'lakegate maintain --resnapshot {new.table}' and start it again"
        ),
    )


def evolve(
    table: Table,
    kind: str,
    schema: TableSchema,
    key: tuple[str, ...],
    backfill: Backfill | None,
    state: Table | None,
) -> None:
    """Make ``table`` (a ``kind`` lake table) able to hold rows of ``schema`` in one commit; with ``backfill``,
    write the new columns' values into its existing rows (the change log's come from ``state``)."""
    plan = plan_evolution(table.schema(), schema, kind, attnums_of(table))
    props = {**properties_for(table, plan, key), **pgtypes_property(table.properties, schema)}
    if not plan and not props and backfill is None:
        return

    def action(txn: Transaction) -> None:
        evolution.update_schema(txn, plan)
        if props:
            txn.set_properties(props)
        if backfill is not None and kind == CHANGELOG:
            assert state is not None
            evolution.backfill_changelog(txn, table, state, backfill)
        elif backfill is not None:
            evolution.backfill_state(txn, table, backfill, dict(plan.rename))

    tablecommit.commit(table, action)
    if plan:
        log.info(
            "%s: evolved %s table: renamed %s, added %s, widened %s%s",
            schema.table,
            kind,
            [f"{a}->{b}" for a, b in plan.rename] or "-",
            [n for n, _ in plan.add] or "-",
            [n for n, _ in plan.widen] or "-",
            f", existing rows given {sorted(backfill.values)}" if backfill else "",
        )


def adopt(tables: tuple[Table | None, ...], schema: TableSchema) -> None:
    """Record on each table what lakes written before these records existed lack: the source identity (attnum)
    of each lake column the source still has under the same name, and the source types (since issue 10)."""
    for table in tables:
        if table is None or ATTNUMS in table.properties:
            continue
        lake = {f.name for f in table.schema().fields}
        known = {c.name: c.source_id for c in schema.columns if c.name in lake and c.source_id is not None}
        _set_properties(table, {ATTNUMS: json.dumps(known, sort_keys=True)})
    for table in tables:
        types = pgtypes_property(table.properties, schema) if table is not None else {}
        if table is not None and PGTYPES not in table.properties and types:
            _set_properties(table, types)


def _set_properties(table: Table, properties: dict[str, str]) -> None:
    def action(txn: Transaction) -> None:
        txn.set_properties(properties)

    tablecommit.commit(table, action)

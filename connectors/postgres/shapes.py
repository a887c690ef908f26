"""What of a replicated table can change without a trace in the stream while the worker is not running.

The stream carries rows and, with them, each relation's columns; it does not carry partitions attached (with the
rows they hold), detached or dropped, nor a table taken out of the publication and put back (its changes of that
time were never published). While the worker runs, the catalog watch (:mod:`.tablemap`) sees those; across a stop
nothing in PostgreSQL remembers them, so the worker records each table's *shape* in the lake when it stops
following one and compares it with the source's at every start (issue 29.1):

- ``parts``: the oids of the partitions at every level (a partitioned table): one gone, or one attached that holds
  rows, is a change (one created as a partition had its rows published);
- ``pub``: the oid of the table's ``pg_publication_rel`` row, which ``ALTER PUBLICATION ... DROP TABLE`` then
  ``ADD TABLE`` replaces (None under ``FOR ALL TABLES`` or ``FOR TABLES IN SCHEMA``, which have no such row).

A difference means rows came or went, or changes were not published: the table is copied again before it streams,
and the log says which change was seen. Shapes are keyed by the table's oid (a renamed table keeps its shape; a
re-created one is another table).
"""

from __future__ import annotations

from typing import Any

import psycopg

from lakegate.connectors.changes import TableRef
from lakegate.connectors.postgres import introspect

Shape = dict[str, Any]

PUBLICATION_ROWS = (
    "SELECT r.prrelid::int8, r.oid::int8 FROM pg_catalog.pg_publication_rel r "
    "JOIN pg_catalog.pg_publication p ON p.oid = r.prpubid WHERE p.pubname = %s"
)


def current(
    conn: psycopg.Connection, publication: str, tables: dict[TableRef, int], parts: dict[TableRef, list[int]]
) -> dict[TableRef, tuple[int, Shape]]:
    """(oid, shape) of each table (``tables``: lake name -> oid; ``parts``: the partitions followed)."""
    rows = {int(rel): int(row) for rel, row in conn.execute(PUBLICATION_ROWS, (publication,)).fetchall()}
    return {ref: (oid, {"parts": parts.get(ref, []), "pub": rows.get(oid)}) for ref, oid in tables.items()}


def changed(conn: psycopg.Connection, was: Shape, now: Shape) -> str | None:
    """What changed between two shapes of one table that the stream did not carry, in words (None: nothing). A
    partition created as one since (``CREATE TABLE ... PARTITION OF``) had all its rows published: it is not a
    change; one attached that holds rows is."""
    before, after = set(was.get("parts") or ()), set(now.get("parts") or ())
    said = []
    attached = [oid for oid in sorted(after - before) if introspect.attached_with_rows(conn, oid)]
    if attached:
        said.append(
            f"{len(attached)} partition(s) holding rows attached (oid {', '.join(map(str, attached))})"
        )
    if before - after:
        said.append(f"{len(before - after)} partition(s) detached or dropped")
    if was.get("pub") is not None and now.get("pub") != was.get("pub"):
        said.append(
            "it was taken out of the publication and put back (its changes of that time were not published)"
        )
    return "; ".join(said) or None

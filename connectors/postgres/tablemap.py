"""Which replicated table a relation of the stream belongs to, and what the catalog says changed about the tables.

Relations are matched by oid, never by name: a renamed table is the same table (the lake keeps following it and
says so), a table dropped and created again under the same name is another one. Partitions map to their
partitioned table, whatever the publication's ``publish_via_partition_root``: rows moving between partitions
(a delete from one, an insert into the other, in one transaction) stay one row in the lake.

What the stream does not carry is watched in the catalog (every status interval) or checked when a relation is
first seen: a table dropped (reported; the lake keeps it), a partition created (followed), attached with rows or
detached or dropped (the partitioned table is copied again: rows came or went without changes), a TRUNCATE of
some of the partitions (copied again: the lake cannot tell one partition's rows from another's). Inheritance
children are not partitions: the lake holds the parent's own rows (``SELECT ... FROM ONLY parent``), which is
what the stream maintains.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

import psycopg

from lakegate.connectors.changes import TableRef
from lakegate.connectors.errors import Resnapshot
from lakegate.connectors.postgres import introspect
from lakegate.connectors.postgres.introspect import SourceTable

log = logging.getLogger("lakegate.connectors.postgres.cdc")

T = TypeVar("T")


class TableMap(Generic[T]):
    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        self.sources: dict[TableRef, SourceTable] = {}  #: by the lake's name (as in 'replicate')
        self.entries: dict[TableRef, T] = {}
        self._by_oid: dict[int, TableRef] = {}
        self._leaves: dict[TableRef, set[int]] = {}
        self._partitions: dict[TableRef, set[int]] = {}
        self.dropped: set[TableRef] = set()
        self._told: dict[TableRef, TableRef] = {}
        self.on_gone: Callable[[TableRef, str], None] | None = None
        #: the partitions followed changed since the worker last recorded the tables' shapes
        self.changed = False

    def add(self, ref: TableRef, source: SourceTable, entry: T) -> None:
        self.sources[ref], self.entries[ref] = source, entry
        self._by_oid[source.oid] = ref
        if source.ref != ref:
            self._renamed(ref, source.ref)
        if source.relkind == "p":
            tree = introspect.partition_tree(self.conn, source.oid)
            self._partitions[ref] = set(tree)
            self._leaves[ref] = {oid for oid, leaf in tree.items() if leaf}
            for oid in tree:
                self._by_oid[oid] = ref

    def lookup(self, relid: int) -> T | None:
        """The entry a relation of the stream belongs to (None: not replicated). A partition not seen before
        is adopted, or its table is copied again when it came with rows (:class:`Resnapshot`)."""
        ref = self._by_oid.get(relid)
        if ref is None:
            ref = self._new_partition(relid)
        return self.entries[ref] if ref is not None else None

    def _new_partition(self, relid: int) -> TableRef | None:
        root = introspect.partition_root(self.conn, relid)
        ref = self._by_oid.get(root) if root is not None else None
        if ref is None or self.sources[ref].oid != root:
            return None
        self._adopt(ref)
        return ref

    def _adopt(self, ref: TableRef) -> None:
        """Take in the partitions of ``ref`` the map lacks; those attached with rows mean a copy."""
        tree = introspect.partition_tree(self.conn, self.sources[ref].oid)
        new = [oid for oid in tree if oid not in self._partitions[ref]]
        for oid in new:
            if introspect.attached_with_rows(self.conn, oid):
                raise Resnapshot(ref, f"a table holding rows was attached as a partition (oid {oid})")
        for oid in new:
            self._by_oid[oid] = ref
            self._partitions[ref].add(oid)
            if tree[oid]:
                self._leaves[ref].add(oid)
        if new:
            self.changed = True
            log.info("%s: following %d new partition(s)", ref, len(new))

    def partitions(self, ref: TableRef) -> list[int]:
        """The oids of the partitions (at every level) the lake follows for ``ref`` (empty: not partitioned)."""
        return sorted(self._partitions.get(ref, ()))

    def truncated(self, relids: Iterable[int]) -> list[T]:
        """The entries a TRUNCATE empties. Truncating some partitions of a table means a copy."""
        hit: dict[TableRef, set[int]] = {}
        for relid in relids:
            ref = self._by_oid.get(relid)
            if ref is not None:
                hit.setdefault(ref, set()).add(relid)
        out = []
        for ref, oids in hit.items():
            whole = self.sources[ref].oid in oids or (ref in self._leaves and self._leaves[ref] <= oids)
            if not whole:
                raise Resnapshot(
                    ref, "some of its partitions were truncated (the lake cannot tell their rows apart)"
                )
            out.append(self.entries[ref])
        return out

    # ------------------------------------------------------------------------------------------ the catalog

    def watch(self) -> None:
        """Renames, drops and partition changes the stream does not carry (one query, plus one per partitioned
        table)."""
        oids = {s.oid: ref for ref, s in self.sources.items() if ref not in self.dropped}
        if not oids:
            return
        rows = self.conn.execute(
            "SELECT c.oid::int8, n.nspname, c.relname FROM pg_catalog.pg_class c "
            "JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = ANY(%s::oid[])",
            (list(oids),),
        ).fetchall()
        present = {int(oid): TableRef(schema, name) for oid, schema, name in rows}
        for oid, ref in oids.items():
            if oid not in present:
                again = introspect.describe(self.conn, self.sources[ref].ref)
                if again is not None and again.oid != oid:
                    raise Resnapshot(ref, f"it was dropped and created again (oid {oid}, now {again.oid})")
                self.dropped.add(ref)
                log.error(
                    "table %s was dropped in PostgreSQL: the lake keeps it as it was (its last change is in); "
                    "the other tables go on. Take it out of 'replicate'",
                    ref,
                )
                if self.on_gone is not None:
                    self.on_gone(ref, f"table {ref} was dropped in PostgreSQL")
                continue
            if present[oid] != self.sources[ref].ref:
                self._renamed(ref, present[oid])
            if ref in self._partitions:
                self._watch_partitions(ref)

    def _watch_partitions(self, ref: TableRef) -> None:
        tree = introspect.partition_tree(self.conn, self.sources[ref].oid)
        gone = self._partitions[ref] - set(tree)
        if gone:
            raise Resnapshot(
                ref, f"{len(gone)} partition(s) were detached or dropped (their rows left the table)"
            )
        if set(tree) - self._partitions[ref]:
            self._adopt(ref)

    def _renamed(self, ref: TableRef, now: TableRef) -> None:
        """Tell (once) that the table ``ref`` of the lake is called ``now`` in the source."""
        if self._told.get(ref) != now:
            self._told[ref] = now
            log.warning(
                "table %s is called %s in PostgreSQL now (renamed: same table). The lake keeps following it as "
                "%s; put %s in 'replicate' in place of %s and on the next start the lake tables are renamed too, "
                "history kept, without a copy",
                ref,
                now,
                ref,
                now,
                ref,
            )
        self.sources[ref] = dataclasses.replace(self.sources[ref], ref=now)

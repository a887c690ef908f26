"""Which tables a flush takes when the lake writer cannot take them all in time (issue 11.16).

A flush costs the lake writer a fixed amount of work per table with changes (two Iceberg commits), so with
hundreds of busy tables a flush of all of them lasts seconds. A change becomes visible to readers at the
consistent cut, once every table holds it: with every flush taking every table, a change that arrives just
after a flush began waits for that flush and the whole next one, about twice a flush. Taking a share of the
tables per flush instead, those whose oldest buffered change is oldest, the cut moves on after each short
flush: a change waits about one round of all tables plus one short flush, at the same work per table.

The tables left behind keep their buffered changes; the position confirmed to the server (and recorded as the
cut) stays before the oldest of them, so nothing they hold can be lost and the cut never claims what is not in
the lake. A source transaction is never split between flushes: tables that share a buffered transaction are
taken together, so that readers of the lake's current versions see a transaction whole, as before.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from lakegate.connectors.changes import TableRef
from lakegate.connectors.postgres.rowbuffer import RowBuffer


def oldest_first(buffers: Mapping[TableRef, RowBuffer], most: int) -> set[TableRef]:
    """The tables with buffered changes to hand over when about ``most`` may go: by their oldest buffered
    change, oldest first, each with the tables that share a buffered transaction with it (so a few more than
    ``most`` may go); every table with buffered changes when there are no more than ``most`` of them."""
    refs = [ref for ref, buffer in buffers.items() if buffer]
    if len(refs) <= most:
        return set(refs)
    groups = transaction_groups({ref: buffers[ref] for ref in refs})
    chosen: set[TableRef] = set()
    for ref in sorted(refs, key=lambda r: buffers[r].first_lsn):
        if len(chosen) >= most:
            break
        chosen |= groups.get(ref, {ref})
    return chosen


def transaction_groups(buffers: Mapping[TableRef, RowBuffer]) -> dict[TableRef, set[TableRef]]:
    """For each table that shares a buffered transaction (a commit LSN) with another: every table connected
    to it that way (itself included). Tables whose transactions are their own are left out."""
    refs = list(buffers)
    per_table = [np.unique(buffers[ref].lsns()) for ref in refs]
    if not per_table:
        return {}
    lsns = np.concatenate(per_table)
    owners = np.repeat(np.arange(len(refs)), [len(u) for u in per_table])
    order = np.argsort(lsns, kind="stable")
    lsns, owners = lsns[order], owners[order]
    shared = np.flatnonzero(lsns[1:] == lsns[:-1])  #: i: transaction lsns[i] is also owners[i + 1]'s
    if not len(shared):
        return {}
    parent = list(range(len(refs)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in shared.tolist():
        a, b = root(int(owners[i])), root(int(owners[i + 1]))
        if a != b:
            parent[b] = a
    members: dict[int, set[TableRef]] = {}
    for i, ref in enumerate(refs):
        members.setdefault(root(i), set()).add(ref)
    return {ref: group for group in members.values() if len(group) > 1 for ref in group}

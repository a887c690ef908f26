"""The rows of the small state-table data files this process wrote, kept so that compaction need not read them back.

A busy state table gains a small data file at every commit, and the writer compacts it every ``compact_every``
commits (:mod:`.compaction`): with hundreds of tables, reading those files back with pyarrow was about a third of
each compaction's CPU (1 ms or so per file, mostly fixed costs of opening and decoding a Parquet file), and the
compactions a third of the lake writer's time (issue 11.16). The writer held every one of those rows a moment
before it wrote them: :func:`remember` keeps them, and :func:`recall` gives them back in place of the file.

Exactness: a file's rows are kept only when they were written to that one file alone, in the table's Arrow schema
(``merge.arrow_schema`` of the schema they were written under, which is also what
:func:`.filereads.read_current` casts a file to) and are returned only for that schema id; files are named
uniquely and never change, so an entry can go stale only by its file leaving the table, and then nothing asks for
it. Memory is bounded (:data:`BUDGET` bytes of Arrow buffers over all tables, least recently used first out;
files above :data:`LARGEST` are not kept); anything not kept is read from the file as before.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

BUDGET = 64 * 2**20  #: Arrow bytes kept over all tables
LARGEST = 2**20  #: Arrow bytes of the largest file whose rows are kept

_ROWS: OrderedDict[str, tuple[int, pa.Table, int]] = OrderedDict()  #: path -> (schema id, rows, bytes)
_GUARD = threading.Lock()  #: tables commit on several threads
_held = 0


def remember(path: str, schema_id: int, rows: pa.Table) -> None:
    """``rows`` are exactly the rows of the data file at ``path``, in order, in the Arrow schema of the table's
    schema ``schema_id``."""
    global _held
    size = rows.get_total_buffer_size()
    if size > LARGEST:
        return
    with _GUARD:
        old = _ROWS.pop(path, None)
        if old is not None:
            _held -= old[2]
        _ROWS[path] = (schema_id, rows, size)
        _held += size
        while _held > BUDGET and _ROWS:
            _, (_, _, freed) = _ROWS.popitem(last=False)
            _held -= freed


def recall(path: str, schema_id: int) -> pa.Table | None:
    """The rows :func:`remember` kept for ``path`` under ``schema_id``, or None."""
    with _GUARD:
        found = _ROWS.get(path)
        if found is None or found[0] != schema_id:
            return None
        _ROWS.move_to_end(path)
        return found[1]


def forget(paths: list[str]) -> None:
    """The files left the table (compacted away): their rows are not needed again."""
    global _held
    with _GUARD:
        for path in paths:
            old = _ROWS.pop(path, None)
            if old is not None:
                _held -= old[2]


def clear() -> None:
    global _held
    with _GUARD:
        _ROWS.clear()
        _held = 0

"""A cached lake table at a newer snapshot without reloading it: data files are immutable, so a commit changes a
cached table only by the data files it adds or removes and the rows its position deletes hide (issue 12.5).

A cache entry holds a table's rows at one snapshot together with where each row lives: ``__lg_file`` (the number
of its data file, :class:`Base`) and ``__lg_pos`` (its position in that file, DuckDB's ``file_row_number``). For
another snapshot of the same table and schema (newer, or older for time travel), :func:`delta_sql` reads

- from the entry, the rows of every data file the new snapshot still holds whose delete files then were all still
  applied to it now, less the positions the delete files it gained since hide;
- from Parquet, every other data file of the new snapshot (those added since, and those whose deletes were
  rewritten, e.g. merged by compaction), less the positions all their delete files hide.

Which delete files apply to which data file is pyiceberg's own planning (``plan_files``), done once per snapshot
(:func:`files_of`); a delete file that does not name a row of the file joins nothing, so the answer is exact
whichever snapshot is older. Tables with other deletes (equality deletes, deletion vectors) are never served this
way: they are loaded whole as before. Hand-written: DuckDB's ``iceberg_scan`` reads a snapshot whole, and no
library keeps an in-memory copy of an Iceberg table in step with its deletes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyiceberg.manifest import DataFileContent, FileFormat
from pyiceberg.table import Table
from pyiceberg.table.snapshots import Snapshot

FILE = "__lg_file"  #: column of a cache table: the number of the row's data file (Base.numbers)
POS = "__lg_pos"  #: column of a cache table: the row's position in its data file
RELOAD_FRACTION = 0.25  #: load the newer snapshot whole once this share of its rows is read from Parquet ...
RELOAD_FILES = 64  #: ... or this many data and delete files are


@dataclass(frozen=True)
class Files:
    """What a snapshot holds: its data files (path -> rows) and the delete files pyiceberg applies to each."""

    data: dict[str, int]
    deletes: dict[str, frozenset[str]]
    positional: bool  #: only Parquet position deletes: a delta can be read


@dataclass(frozen=True)
class Base:
    """What a cache entry was loaded from: its snapshot's files, the numbers its rows carry in ``__lg_file``, and
    its columns with their DuckDB types."""

    files: Files
    numbers: dict[str, int]
    columns: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class Delta:
    """The SQL of a newer snapshot read through an entry, and how much of it comes from Parquet."""

    sql: str
    parquet_rows: int
    parquet_files: int

    def worth_reloading(self, entry_rows: int) -> bool:
        return self.parquet_files > RELOAD_FILES or self.parquet_rows > RELOAD_FRACTION * max(entry_rows, 1)


def files_of(table: Table, snapshot: Snapshot) -> Files:
    """Plan ``snapshot`` (reads its manifests)."""
    data: dict[str, int] = {}
    deletes: dict[str, frozenset[str]] = {}
    positional = True
    for task in table.scan(snapshot_id=snapshot.snapshot_id).plan_files():
        data[task.file.file_path] = task.file.record_count
        deletes[task.file.file_path] = frozenset(d.file_path for d in task.delete_files)
        for d in task.delete_files:
            if d.content != DataFileContent.POSITION_DELETES or d.file_format != FileFormat.PARQUET:
                positional = False
    return Files(data, deletes, positional)


def numbering(files: Files) -> dict[str, int]:
    return {path: n for n, path in enumerate(sorted(files.data))}


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def load_sql(location: str, numbers: dict[str, int]) -> str:
    """The SELECT a cache table is created from: the snapshot's rows (deletes applied by ``iceberg_scan``), each
    with its data file's number and position. A row whose file is not in ``numbers`` gets a null number: the
    loader checks there is none (a path spelt otherwise than in the manifests)."""
    scan = f"SELECT *, filename AS __lg_path, file_row_number AS {POS} FROM iceberg_scan({literal(location)})"
    if not numbers:
        return f"SELECT * EXCLUDE (__lg_path), CAST(NULL AS INTEGER) AS {FILE} FROM ({scan})"
    return (
        f"SELECT s.* EXCLUDE (__lg_path), m.n AS {FILE} FROM ({scan}) AS s "
        f"LEFT JOIN ({_values(numbers.items())}) AS m(__lg_path, n) ON s.__lg_path = m.__lg_path"
    )


def plain_sql(name: str) -> str:
    """An entry read at its own snapshot."""
    return f"(SELECT * EXCLUDE ({FILE}, {POS}) FROM {name})"


def delta_sql(name: str, base: Base, now: Files) -> Delta | None:
    """The newer snapshot ``now`` through the entry ``name`` loaded from ``base`` (see the module docstring);
    None when it cannot be read so (other kinds of deletes)."""
    if not (now.positional and base.files.positional):
        return None
    cached: list[str] = []
    parquet: list[str] = []
    hiding: set[str] = set()
    for path, applied in now.deletes.items():
        then = base.files.deletes.get(path)
        if path in base.numbers and then is not None and then <= applied:
            cached.append(path)
            hiding |= applied - then
        else:
            parquet.append(path)
            hiding |= applied
    numbers = {path: base.numbers[path] for path in cached}
    extra = max(base.numbers.values(), default=-1) + 1
    numbers.update({path: extra + i for i, path in enumerate(parquet)})
    columns = ", ".join(quote(c) for c, _ in base.columns)
    parts = [f"SELECT {columns}, {FILE}, {POS} FROM {name}"]
    if len(cached) != len(base.numbers):
        kept = ", ".join(str(base.numbers[p]) for p in cached) or "NULL"
        parts[0] += f" WHERE {FILE} IN ({kept})"
    casts = ", ".join(f"CAST({quote(c)} AS {t}) AS {quote(c)}" for c, t in base.columns)
    if parquet:  # one multi-file read (a read per file costs ~2 ms each); file_index is the place in the list
        parts.append(
            f"SELECT {casts}, {extra} + file_index AS {FILE}, file_row_number AS {POS} "
            f"FROM read_parquet([{', '.join(literal(p) for p in parquet)}], file_row_number = true, "
            "union_by_name = true)"
        )
    rows = " UNION ALL ".join(parts)
    if hiding and numbers:
        hidden = (
            f"SELECT m.n, d.pos FROM read_parquet([{', '.join(literal(p) for p in sorted(hiding))}]) AS d "
            f"JOIN ({_values(numbers.items())}) AS m(path, n) ON d.file_path = m.path"
        )
        rows = f"SELECT r.* FROM ({rows}) AS r ANTI JOIN ({hidden}) AS h ON r.{FILE} = h.n AND r.{POS} = h.pos"
    sql = f"(SELECT {columns} FROM ({rows}))"
    return Delta(sql, sum(now.data[p] for p in parquet), len(parquet) + len(hiding))


def _values(pairs: Iterable[tuple[str, int]]) -> str:
    return "VALUES " + ", ".join(f"({literal(path)}, {n})" for path, n in pairs)

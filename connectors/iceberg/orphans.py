"""Removing the files a crash leaves behind: data, delete, manifest and metadata files under a table's location
that no snapshot (and no metadata file the table keeps) references.

A worker killed between writing a commit's files and committing it leaves them in the warehouse, referenced by
nothing; no reader ever sees them, but they take space for ever. :func:`remove_orphans` deletes them once they
are older than a safety age (``orphan_age``, default three days as Iceberg's own ``remove_orphan_files``): a file
younger than that may belong to a commit still being written (an initial copy or a huge transaction writes its
files long before it commits), and deleting it would lose that commit's data. Files this process has staged for
a transaction written in parts (:mod:`lakegate.connectors.iceberg.staging`) are spared whatever their age, and so
are the files another process stages, as long as its marker (rewritten at each part) is younger than the safety
age; older markers are a crash's leftovers and are removed with the files they list.

Written by hand: pyiceberg 0.12 has no orphan-file removal (apache/iceberg-python#1200 is still open). The
listing goes through the same pyarrow file system pyiceberg reads the table with (local paths, S3, GCS, ...).

A table whose location holds another table's metadata (a lake table renamed, and a new one created under the
old name, share a directory) is left alone, with a warning: its files cannot be told apart from the other
table's without reading every table of the catalog.
"""

from __future__ import annotations

import contextlib
import logging
import re
import time
from datetime import timedelta

from pyarrow.fs import FileInfo, FileSelector, FileSystem, FileType
from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import Table

from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg import flushcatalog
from lakegate.connectors.iceberg.references import metadata_paths, referenced_paths
from lakegate.connectors.iceberg.staging import announced, live_paths

log = logging.getLogger(__name__)

#: what Iceberg writes under a table's location; anything else there is not ours to delete
ICEBERG_FILES = (".parquet", ".avro", ".metadata.json", ".puffin", ".stats")
_LAST_PASS: dict[str, float] = {}  #: table uuid -> when this process last looked for its orphans (monotonic)
_UUID = re.compile(rb'"table-uuid"\s*:\s*"([0-9a-fA-F-]+)"')


def remove_orphans(table: Table, older_than: timedelta, *, every: float = 0.0) -> list[str]:
    """Delete the files under ``table``'s location that it does not reference and that are older than
    ``older_than``; returns their paths. Raises LakeError when the location cannot be listed.

    With ``every``, a table this process looked at less than ``every`` seconds ago is skipped: reading which
    files a table references opens every manifest of every snapshot it keeps, too much to repeat at each
    maintenance round for files that must wait days anyway."""
    last = _LAST_PASS.get(str(table.metadata.table_uuid))
    if every and last is not None and time.monotonic() - last < every:
        return []
    _LAST_PASS[str(table.metadata.table_uuid)] = time.monotonic()
    io = table.io
    if not isinstance(io, PyArrowFileIO):  # fsspec: no listing we can rely on
        log.info("%s: orphan files are not removed with %s", _name(table), type(io).__name__)
        return []
    table.refresh()
    scheme, netloc, root = io.parse_location(table.location().rstrip("/"), io.properties)
    fs = io.fs_by_scheme(scheme, netloc)
    try:
        listed = fs.get_file_info(FileSelector(root + "/", recursive=True, allow_not_found=True))
    except OSError as exc:
        raise LakeError(
            f"cannot list the files of lake table {_name(table)} at {table.location()}: {exc}"
        ) from exc
    cutoff = time.time() - older_than.total_seconds()
    if not any(_iceberg_file(f) and f.mtime is not None and f.mtime.timestamp() < cutoff for f in listed):
        _drop_stale_markers(fs, table, older_than)  # nothing is old enough to go: what the table uses is not read
        return []
    unreferenced = _unreferenced(table, listed, older_than)
    other = _other_table(fs, table, [f for f in unreferenced if f.path.endswith(".metadata.json")])
    if other:
        log.warning(
            "%s: its location %s also holds lake table %s's metadata (a table renamed, and another created "
            "under the old name?): orphan files there are not removed",
            _name(table),
            table.location(),
            other,
        )
        return []
    old = [f for f in unreferenced if f.mtime is not None and f.mtime.timestamp() < cutoff]
    _drop_stale_markers(fs, table, older_than)
    if not old:
        return []
    # read the metadata again: a commit since the listing may have come to reference an old file (a write that
    # took longer than the safety age: a transaction written in parts); nothing is deleted that the table, as
    # committed now, uses. No flush of this process is half-committed meanwhile: the SQL catalog shows a flush's
    # commits only at its end, after the files it staged stopped counting as staged
    removed = []
    with flushcatalog.quiet(table.catalog):
        still = {f.path for f in _unreferenced(table, old, older_than)}
        for info in old:
            if info.path not in still:
                continue
            try:
                fs.delete_file(info.path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                log.warning("%s: could not delete orphan file %s: %s", _name(table), info.path, exc)
                continue
            removed.append(info.path)
    if removed:
        log.info(
            "%s: removed %d orphan file(s) older than %s (written by commits that never happened)",
            _name(table),
            len(removed),
            older_than,
        )
    return removed


def _iceberg_file(info: FileInfo) -> bool:
    return info.type == FileType.File and info.path.endswith(ICEBERG_FILES)


def _drop_stale_markers(fs: FileSystem, table: Table, older_than: timedelta) -> None:
    """Delete the markers of transactions staged by a process that stopped long ago: they protect nothing."""
    _, stale = announced(table, older_than)
    for path in stale:
        with contextlib.suppress(OSError):
            fs.delete_file(path)


def _unreferenced(table: Table, listed: list[FileInfo], older_than: timedelta) -> list[FileInfo]:
    """Those of ``listed`` (Iceberg's kinds of files only) that ``table``, read again, does not reference, and
    that no process stages (this one, or another whose marker is younger than ``older_than``)."""
    table.refresh()
    io = table.io
    assert isinstance(io, PyArrowFileIO)
    staged, _ = announced(table, older_than)
    used = referenced_paths(table) | metadata_paths(table) | live_paths() | staged
    keep = {io.parse_location(p, io.properties)[2] for p in used}
    return [f for f in listed if _iceberg_file(f) and f.path not in keep]


def _other_table(fs: FileSystem, table: Table, metadata_files: list[FileInfo]) -> str | None:
    """The uuid of another table whose metadata lives among ``metadata_files``, if any (an unreadable metadata
    file counts as another table's: when in doubt, delete nothing)."""
    own = str(table.metadata.table_uuid)
    for info in metadata_files:
        try:
            with fs.open_input_stream(info.path) as stream:
                head = stream.read(4096)
        except FileNotFoundError:
            continue
        except OSError:
            return f"(unreadable {info.path})"
        if not head:  # a metadata file cut off by the crash before its first byte
            continue
        found = _UUID.search(head)
        if found is None or found.group(1).decode() != own:
            return found.group(1).decode() if found else f"(unknown, {info.path})"
    return None


def _name(table: Table) -> str:
    return ".".join(table.name())


__all__ = ["remove_orphans", "ICEBERG_FILES"]

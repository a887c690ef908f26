"""Files of a lake on the local file system, written without pyiceberg's per-file set-up (issue 11.16).

Every commit of a flush writes small files: a Parquet data file per table, a manifest, a manifest list and a
metadata JSON. For each, pyiceberg's ``PyArrowFileIO.new_output(path).create()`` parses the location as a URI,
looks up (on a new FileIO: builds) the file system, checks the file does not exist, creates the parent directories
and opens a buffered pyarrow stream: about a tenth of a small commit's CPU in a profile of 50 tables per flush.
For a warehouse on the local file system (a plain path or a ``file:`` URI, read through pyiceberg's
``PyArrowFileIO``), these helpers open the file directly: exclusively when it must not exist (``O_EXCL``, which also
closes the window pyiceberg's check-then-open leaves), with the parent directories made only when missing.
Any other location (object stores, other FileIO implementations) goes through pyiceberg as before.
"""

from __future__ import annotations

import os
from typing import IO, Any

import pyarrow as pa
from pyiceberg.io import FileIO
from pyiceberg.io.pyarrow import PyArrowFileIO


def local_path(io: FileIO, location: str) -> str | None:
    """The local path of ``location`` when ``io`` writes it to the local file system, else None."""
    if type(io) is not PyArrowFileIO:
        return None
    if location.startswith("file://"):
        path = location[len("file://") :]
    elif location.startswith("/") and "://" not in location:
        path = location
    else:
        return None
    return path if path.startswith("/") and "?" not in path and "#" not in path else None


def _open(path: str, mode: str) -> IO[bytes]:
    try:
        return open(path, mode)  # noqa: SIM115  (returned to the caller, who closes it)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return open(path, mode)  # noqa: SIM115


def write(io: FileIO, location: str, data: bytes, *, overwrite: bool) -> None:
    """Write ``data`` as the file at ``location``; without ``overwrite``, FileExistsError when it exists (as
    pyiceberg's ``create(overwrite=False)``)."""
    path = local_path(io, location)
    if path is None:
        with io.new_output(location).create(overwrite=overwrite) as out:
            out.write(data)
        return
    with _open(path, "wb" if overwrite else "xb") as out:
        out.write(data)


def create(io: FileIO, location: str) -> Any:
    """A writable binary stream for a new file at ``location`` (replaced if present), with ``write``, ``tell``
    and ``close``; a pyarrow ``OSFile`` for a local path (the Parquet writer writes to it without the GIL)."""
    path = local_path(io, location)
    if path is None:
        return io.new_output(location).create(overwrite=True)
    try:
        return pa.OSFile(path, "wb")
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        return pa.OSFile(path, "wb")


def delete(io: FileIO, location: str) -> None:
    """Delete the file at ``location`` (``io.delete``; a local path is unlinked directly: an expiry deletes
    hundreds of files, and pyiceberg's location parsing and file-system lookup cost ten times the unlink)."""
    path = local_path(io, location)
    if path is None:
        io.delete(location)
    else:
        os.unlink(path)

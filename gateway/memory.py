"""The gateway process's memory, capped: DuckDB's own limit plus a margin, enforced by the kernel.

DuckDB's ``memory_limit`` governs its buffer manager, but not everything DuckDB allocates: a constant folded at
plan time (``len(range(300000000))``, ``repeat('x', 2000000000)``) or one huge value goes straight to the
allocator. Measured here with a 1 GB limit, ``SELECT len(range(300000000))`` took the process to 18.7 GB and
three minutes before an interrupt landed. ``lakegate serve`` therefore caps its data segment (``RLIMIT_DATA``:
heap and private writable mappings, thread stacks included) at its size after start-up +
``duckdb_memory_limit`` + ``memory_margin``; an allocation past it fails inside DuckDB (or libpq) as an
out-of-memory error (413) at once, measured in milliseconds, and the process goes on. The margin is for Python,
the parsed statements, Arrow batches in flight and what the allocators keep.

Written by hand: no library sets a process limit from DuckDB's; ``resource`` is the standard library's seam.
"""

from __future__ import annotations

import logging
import os
import resource
import sys

log = logging.getLogger("lakegate.gateway")


#: DuckDB's jemalloc keeps the address space of memory it freed (``retain``), which counts against the cap for
#: good: after one large query the data segment stayed at 3.4 GB with 61 MB resident, and every other allocation
#: of the process (libpq, Python, Arrow) failed. Without ``retain`` it went back to 51 MB.
JEMALLOC = ("DUCKDB_JE_MALLOC_CONF", "retain:false")


def release_freed_memory() -> None:
    """Before DuckDB is imported (its allocator reads this once): hand freed address space back to the system,
    unless the environment says otherwise."""
    if "duckdb" in sys.modules:
        log.warning("DuckDB is already loaded: its allocator keeps freed memory, which counts against the cap")
        return
    os.environ.setdefault(*JEMALLOC)


def data_size() -> int:
    """The process's data segment now (VmData, bytes), 0 where /proc is not there."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def cap(duckdb_limit: int, margin: int) -> int | None:
    """Cap the data segment at its size now + ``duckdb_limit`` + ``margin`` bytes (``margin`` 0: no cap);
    returns the cap set. The size now is mostly address space the allocators reserved at start-up (measured:
    1.4 GB of VmData for 270 MB resident), which the cap must not count against the queries."""
    if margin <= 0 or duckdb_limit <= 0:
        return None
    base = data_size()
    limit = base + duckdb_limit + margin
    _, hard = resource.getrlimit(resource.RLIMIT_DATA)
    if hard != resource.RLIM_INFINITY and hard < limit:
        limit = hard
    resource.setrlimit(resource.RLIMIT_DATA, (limit, hard))
    log.info(
        "memory capped: data segment at most %.1f GiB (%.1f GiB at start-up + duckdb_memory_limit %.1f GiB + "
        "memory_margin %.1f GiB)",
        limit / 2**30,
        base / 2**30,
        duckdb_limit / 2**30,
        margin / 2**30,
    )
    return limit

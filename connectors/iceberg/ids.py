"""Identifiers for the files and snapshots of a commit, drawn from a pseudo-random generator seeded from the
operating system once per process (and again in a forked child).

pyiceberg draws each from ``os.urandom`` (``uuid.uuid4()``, Avro sync markers): a system call that releases the
interpreter lock, and with the commit threads of a flush waiting for it, each call cost a lock hand-over (about
5 % of a small commit's CPU in a profile of 50 tables per flush, issue 11.16). None of these needs to be
unpredictable, only unique: a snapshot id is checked against the table's own, and file names carry a random
UUID as pyiceberg's do.
"""

from __future__ import annotations

import os
import random
import uuid as _uuid

from pyiceberg.table.metadata import TableMetadata

_RANDOM = random.Random(os.urandom(32))


def _reseed() -> None:
    _RANDOM.seed(os.urandom(32))


os.register_at_fork(after_in_child=_reseed)


def random_bytes(n: int) -> bytes:
    return _RANDOM.randbytes(n)


def uuid4() -> _uuid.UUID:
    """A version-4 UUID (random bits, as ``uuid.uuid4()``)."""
    return _uuid.UUID(int=_RANDOM.getrandbits(128), version=4)


def snapshot_id(metadata: TableMetadata) -> int:
    """A positive 63-bit snapshot id not in use in ``metadata`` (as ``TableMetadata.new_snapshot_id``)."""
    while True:
        candidate = _RANDOM.getrandbits(63)
        if candidate and metadata.snapshot_by_id(candidate) is None:
            return candidate

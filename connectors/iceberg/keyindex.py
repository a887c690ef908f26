"""Where each key's current row lives: primary key -> (data file, row position), for one state table.

The index finds the rows a commit replaces, so that it can write position deletes for them without reading the
table. It is derived state: :func:`rebuild` reads it from the lake (key columns of every live data file, less
the rows its delete files hide), the table's owner updates it after each commit it makes, and rebuilds it when
the table moved in a way it did not make. It is never trusted over the lake.

Memory, in bytes per live row (written by hand: no library keeps a sorted, updatable map this compact):

- a key of one integer column is stored exactly as int64: **16 bytes per row** (8 key + 8 location);
- any other key (composite, text, uuid, numeric, ...) is stored as the first 128 bits of the SHA-256 digest of
  an unambiguous encoding of its values (JSON of the key columns, computed by DuckDB): **24 bytes per row**
  whatever the key's width. Two keys share a digest with probability about n^2 / 2^129 (1e-25 at 10 M rows), and
  SHA-256 (unlike MD5) gives whoever writes the source no way to make two keys collide on purpose.

A location packs a file number (24 bits) and a row position (40 bits) in a uint64. Rows live in a sorted base
array and a sorted run of recent inserts (at most 1/16 of the base, 64 Ki entries at least); deletes are
tombstones. The run and the tombstones are merged into the base when they grow past those bounds: the merge
briefly holds the base twice (32 bytes per row for an integer key, during a few hundred milliseconds at 10 M
rows). Lookups and updates are vectorised (binary search over numpy arrays): a batch of b changes costs
O(b log n) plus the run's O(run) re-sort, not O(n).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

import duckdb
import numpy as np
import pyarrow as pa

ABSENT = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  #: the location of a key the index does not hold (and tombstones)
POS_BITS = 40
MAX_FILES = 1 << (64 - POS_BITS)
RUN_MIN = 65536


def pack(file_id: int, positions: np.ndarray) -> np.ndarray:
    return (np.uint64(file_id) << np.uint64(POS_BITS)) | positions.astype(np.uint64)


def unpack(locations: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """-> (file numbers, row positions)."""
    return (
        (locations >> np.uint64(POS_BITS)).astype(np.int64),
        (locations & np.uint64((1 << POS_BITS) - 1)).astype(np.int64),
    )


# --------------------------------------------------------------------------------------------- key encoding

_INTEGERS = (pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32())
_DUCK = threading.local()


def exact(types: Sequence[pa.DataType]) -> bool:
    """Keys of these column types are stored exactly (one integer column), not as digests."""
    return len(types) == 1 and types[0] in _INTEGERS


def encode(keys: pa.Table) -> np.ndarray:
    """Key columns -> int64 values (one integer column) or 16-byte digests (``S16``); one per row."""
    if exact([f.type for f in keys.schema]):
        return np.asarray(keys.column(0).cast(pa.int64()).combine_chunks().to_numpy(zero_copy_only=False))
    return _digest(keys)


def _storage(column: pa.ChunkedArray) -> pa.ChunkedArray:
    if isinstance(column.type, pa.BaseExtensionType):
        return pa.chunked_array([c.storage for c in column.chunks], type=column.type.storage_type)
    return column


def _digest(keys: pa.Table) -> np.ndarray:
    con = getattr(_DUCK, "con", None)
    if con is None:
        con = _DUCK.con = duckdb.connect(config={"threads": 1})
    names = [f"k{i}" for i in range(keys.num_columns)]
    plain = pa.table([_storage(c) for c in keys.columns], names=names)  # noqa: F841  (read by DuckDB below)
    fields = ", ".join(f"{n} := {n}" for n in names)
    # to_json escapes every value: the encoding of a tuple of keys is unambiguous, and the same for every call
    digests = (
        con.execute(
            f"SELECT unhex(substr(sha256(to_json(struct_pack({fields}))::VARCHAR), 1, 32)) FROM plain"
        )
        .to_arrow_table()
        .column(0)
        .combine_chunks()
    )
    offsets = np.frombuffer(digests.buffers()[1], np.int32, len(digests) + 1, digests.offset * 4)
    if offsets[-1] - offsets[0] != 16 * len(digests):
        raise ValueError("a key digest is not 16 bytes long")
    return np.frombuffer(digests.buffers()[2], "S16", len(digests), int(offsets[0])).copy()


# -------------------------------------------------------------------------------------------------- index


class DuplicateKeys(ValueError):
    """The lake holds more than one live row for some key."""


class KeyIndex:
    """A sorted map from encoded keys (see :func:`encode`) to packed locations; see the module docstring."""

    def __init__(self, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)
        self._keys = np.empty(0, self.dtype)
        self._locs = np.empty(0, np.uint64)
        self._run_keys = np.empty(0, self.dtype)
        self._run_locs = np.empty(0, np.uint64)
        self._tombs = 0

    @classmethod
    def build(cls, keys: np.ndarray, locations: np.ndarray) -> KeyIndex:
        """An index of these (unique) keys; raises DuplicateKeys naming how many repeat."""
        index = cls(keys.dtype)
        order = np.argsort(keys, kind="stable")
        index._keys, index._locs = keys[order], locations[order].astype(np.uint64)
        if len(index._keys) > 1:
            repeats = np.flatnonzero(index._keys[1:] == index._keys[:-1])
            if len(repeats):
                example = index._keys[repeats[0]]
                raise DuplicateKeys(f"{len(repeats)} key(s) have more than one live row, e.g. {example!r}")
        return index

    def __len__(self) -> int:
        return len(self._keys) + len(self._run_keys) - self._tombs

    @property
    def nbytes(self) -> int:
        return self._keys.nbytes + self._locs.nbytes + self._run_keys.nbytes + self._run_locs.nbytes

    @staticmethod
    def _find(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """-> (index into sorted_keys, whether the key is there)."""
        at = np.searchsorted(sorted_keys, keys)
        inside = at < len(sorted_keys)
        hit = np.zeros(len(keys), bool)
        hit[inside] = sorted_keys[at[inside]] == keys[inside]
        return at, hit

    def get(self, keys: np.ndarray) -> np.ndarray:
        """Locations of ``keys`` (``ABSENT`` where the index holds none)."""
        out = np.full(len(keys), ABSENT, np.uint64)
        for sorted_keys, locs in ((self._keys, self._locs), (self._run_keys, self._run_locs)):
            at, hit = self._find(sorted_keys, keys)
            found = locs[at[hit]]
            live = found != ABSENT
            idx = np.flatnonzero(hit)[live]
            out[idx] = found[live]
        return out

    def set(self, keys: np.ndarray, locations: np.ndarray) -> None:
        """Point ``keys`` (unique) at ``locations``."""
        rest = self._update(keys, locations.astype(np.uint64))
        if len(rest[0]):
            run_keys = np.concatenate([self._run_keys, rest[0]])
            run_locs = np.concatenate([self._run_locs, rest[1]])
            order = np.argsort(run_keys, kind="stable")
            self._run_keys, self._run_locs = run_keys[order], run_locs[order]
        self._maybe_merge()

    def delete(self, keys: np.ndarray) -> None:
        self._update(keys, np.full(len(keys), ABSENT, np.uint64))
        self._maybe_merge()

    def _update(self, keys: np.ndarray, locs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Overwrite the locations of keys already held; returns the keys (and locations) held nowhere."""
        pending = np.ones(len(keys), bool)
        for sorted_keys, held in ((self._keys, self._locs), (self._run_keys, self._run_locs)):
            at, hit = self._find(sorted_keys, keys)
            hit &= pending
            before = held[at[hit]]
            self._tombs += int(np.count_nonzero(locs[hit] == ABSENT)) - int(
                np.count_nonzero(before == ABSENT)
            )
            held[at[hit]] = locs[hit]
            pending &= ~hit
        new = pending & (locs != ABSENT)
        return keys[new], locs[new]

    def remap(self, old: np.ndarray, new: np.ndarray) -> int:
        """Point the entries located at ``old`` (packed locations) at ``new`` (the same length), by location alone:
        a compaction moves rows without reading their keys. Returns how many entries moved."""
        order = np.argsort(old)
        old_sorted, new_sorted = old[order], new[order]
        files = np.unique(old_sorted >> np.uint64(POS_BITS))
        moved = 0
        for held in (self._locs, self._run_locs):
            candidates = np.flatnonzero(np.isin(held >> np.uint64(POS_BITS), files) & (held != ABSENT))
            at = np.searchsorted(old_sorted, held[candidates])
            inside = at < len(old_sorted)
            hit = np.zeros(len(candidates), bool)
            hit[inside] = old_sorted[at[inside]] == held[candidates[inside]]
            held[candidates[hit]] = new_sorted[at[hit]]
            moved += int(np.count_nonzero(hit))
        return moved

    def _maybe_merge(self) -> None:
        bound = max(RUN_MIN, len(self._keys) // 16)
        if len(self._run_keys) > bound or self._tombs > bound:
            self.merge()

    def merge(self) -> None:
        """Fold the run into the base and drop tombstones."""
        keys = np.concatenate([self._keys, self._run_keys])
        locs = np.concatenate([self._locs, self._run_locs])
        live = locs != ABSENT
        keys, locs = keys[live], locs[live]
        order = np.argsort(keys, kind="stable")
        self._keys, self._locs = keys[order], locs[order]
        self._run_keys = np.empty(0, self.dtype)
        self._run_locs = np.empty(0, np.uint64)
        self._tombs = 0

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """All live (key, location) pairs, sorted by key (tests, checks)."""
        self.merge()
        return self._keys.copy(), self._locs.copy()

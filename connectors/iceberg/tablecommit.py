"""One commit to one lake table, retried when it loses a race, and the lock that keeps this process's own state
commits of a table one at a time.

Another process's writes (``lakegate maintain``) are caught by each commit's own checks, not by the lock: a commit
that finds the table moved raises pyiceberg's conflict, and the action is planned again on fresh metadata.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import CommitFailedException, ValidationException
from pyiceberg.table import Table, Transaction

from lakegate.connectors.errors import CommitConflict, LakeError

log = logging.getLogger("lakegate.connectors.iceberg.writer")

COMMIT_ATTEMPTS = 4
_STATE_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


def commit(table: Table, action: Callable[[Transaction], None]) -> None:
    """Run ``action`` in a transaction; a commit that loses a race (maintenance) is retried on fresh metadata."""
    name = ".".join(table.name())
    for attempt in range(1, COMMIT_ATTEMPTS + 1):
        try:
            with table.transaction() as txn:
                action(txn)
            return
        except (CommitFailedException, ValidationException) as exc:  # the commit did not land
            table.refresh()
            if attempt == COMMIT_ATTEMPTS:
                raise CommitConflict(f"commit to {name} conflicted {attempt} times: {exc}") from exc
            log.debug("commit to %s conflicted, retrying: %s", name, exc)
        except (OSError, ValueError) as exc:
            raise LakeError(f"cannot commit to lake table {name}: {exc}") from exc


def state_lock(catalog: Catalog, identifier: str) -> threading.Lock:
    """The lock this process holds while it rewrites the state table ``identifier`` (the worker's writer and its
    upkeep thread each have their own LakeTable, so the lock is kept per catalog and table, not per object)."""
    where = catalog.properties.get("uri", "")
    key = f"{catalog.name}|{where}|{identifier}"
    with _LOCKS_GUARD:
        return _STATE_LOCKS.setdefault(key, threading.Lock())

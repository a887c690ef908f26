"""Errors raised by connectors. Foreign exceptions (psycopg, pyiceberg, duckdb) are translated here.

::

    ConnectorError
    ├── SourceConfigError      the source cannot be replicated as configured; a person must act (fatal)
    ├── TransientError         worth retrying with backoff
    │   ├── ConnectionLost     the connection dropped or the server restarted
    │   ├── SlotInUse          another process streams from the slot
    │   ├── CommitConflict     a concurrent commit changed an Iceberg table first
    │   └── Resnapshot         a table must be copied again under a fresh snapshot (the stream restarts)
    ├── SchemaChangeError      a source schema change the lake cannot represent (stops that table)
    └── LakeError              the Iceberg catalog or storage failed
"""

from __future__ import annotations


class ConnectorError(Exception):
    """Base of all connector errors."""


class SourceConfigError(ConnectorError):
    """The source cannot be replicated as configured; the message says what to change."""


class TransientError(ConnectorError):
    """A fault that may pass: retry with backoff."""


class ConnectionLost(TransientError):
    """The connection to the source dropped (network, server restart, termination)."""


class SlotInUse(TransientError):
    """The replication slot is held by another process."""


class CommitConflict(TransientError):
    """An Iceberg commit lost a race with another writer."""


class Resnapshot(TransientError):
    """The lake cannot follow a table from the stream alone (rows changed without changes, as by a rewrite or a
    partition attached or detached): it is copied again under a fresh snapshot, and the stream restarts."""

    def __init__(self, table: object, reason: str) -> None:
        super().__init__(
            f"{table}: {reason}; copying {table} again under a fresh snapshot (its changes up to that snapshot "
            "are skipped, the other tables carry on where they were)"
        )
        self.table = table


class SchemaChangeError(ConnectorError):
    """A schema change that the lake table cannot follow."""

    def __init__(self, table: str, message: str) -> None:
        super().__init__(message)
        self.table = table


class LakeError(ConnectorError):
    """The Iceberg catalog or its storage failed."""

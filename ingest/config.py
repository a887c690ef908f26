"""The ingest worker's section of the settings (``[ingest]``)."""

from __future__ import annotations

from dataclasses import dataclass

from lakegate.connectors.config import setting


@dataclass
class IngestSettings:
    commit_interval: float = setting(
        "Longest time a change waits before it is committed to Iceberg.", 1.0, kind="duration"
    )
    max_batch_rows: int = setting("Flush earlier when this many changes are buffered.", 100_000)
    max_batch_bytes: int = setting(
        "Flush earlier when this many bytes of changes are buffered.", 64 * 2**20, kind="size"
    )
    fold_interval: float = setting(
        "No longer used: state tables are kept exact at every commit (accepted so that older files still load).",
        60.0,
        kind="duration",
    )
    fold_rows: int = setting("No longer used (see fold_interval).", 1_000_000)
    unbounded_numeric: str = setting(
        "Lake type of numeric columns without precision: 'string' (exact text) or "
        "'decimal(P,S)' (values that do not fit stop ingest with an error).",
        "string",
    )
    snapshot_expiry: float = setting(
        "Expire Iceberg snapshots older than this (time travel reaches this far back).",
        3600.0,
        kind="duration",
    )
    snapshot_keep: int = setting(
        "Keep at most this many Iceberg snapshots per table besides snapshot_expiry's age rule (the newest ones, "
        "and always the one the consistent cut reads): a commit costs more the more snapshots its table keeps, "
        "and a busy table commits every second. Time travel reaches back this many commits at most (0 = no limit).",
        100,
    )
    changelog_retention: float = setting(
        "Change-log rows older than this are removed once the state table holds them (0 = keep every change).",
        0.0,
        kind="duration",
    )
    maintenance_interval: float = setting(
        "How often the worker compacts small files and expires snapshots "
        "(0 = never; run 'lakegate maintain' instead).",
        300.0,
        kind="duration",
    )
    orphan_age: float = setting(
        "Upkeep removes files that no snapshot references (left by a crash between writing a commit's files and "
        "committing it) once they are older than this; it must exceed the longest commit (an initial copy, a "
        "huge transaction) or that commit would lose its files (0 = never remove them).",
        3 * 86400.0,
        kind="duration",
    )
    upkeep_failure_limit: float = setting(
        "The worker exits (non-zero) when its background upkeep (compaction, expiry) has kept failing for "
        "this long; failures are retried with backoff and shown in /v1/status meanwhile (0 = never exit).",
        3600.0,
        kind="duration",
    )

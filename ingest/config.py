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
    processes: int = setting(
        "Writer processes that share the per-table work of each flush (several cores for hundreds of busy tables; "
        "1 = write in the worker's own process; 0 = one per core, up to 4, for a source of 16 tables or "
        "more, else 1). Needs the SQL catalog.",
        0,
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
    compact_every: int = setting(
        "The writer compacts a state table every this many commits to it (0 = never; 'lakegate maintain "
        "--compact' then does it).",
        16,
    )
    changelog_compact_every: int = setting(
        "With writer processes (see processes), each compacts a change log it writes every this many commits to it "
        "(up to half again, spread by table), from the rows it wrote, and expires both lake tables' snapshots "
        "then (0 = leave both to the maintenance_interval upkeep).",
        64,
    )
    compact_deleted_fraction: float = setting(
        "Compaction rewrites a state table's data file without its deleted rows once this fraction of them is "
        "deleted (a file whose rows are all deleted is dropped).",
        0.2,
    )
    compact_small_file: int = setting(
        "State-table data files smaller than this count as small ...", 8 * 2**20, kind="size"
    )
    compact_min_small_files: int = setting("... and are merged into one once there are this many.", 16)
    compact_max_delete_files: int = setting(
        "Compaction merges a state table's position-delete files (the smaller ones, by size tiers) when it holds "
        "more than this many.",
        16,
    )
    compact_max_bytes: int = setting(
        "At most this many bytes of data files are rewritten by one compaction (the rest waits for the next).",
        512 * 2**20,
        kind="size",
    )
    compact_step_bytes: int = setting(
        "The writer's own compactions run between two commits and hold the next back: each rewrites at most this "
        "many bytes of data files and the rest goes on at the table's next commit.",
        16 * 2**20,
        kind="size",
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

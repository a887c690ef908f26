"""Lake maintenance: compaction, snapshot expiry, change-log retention, state tables caught up with their change
logs, re-snapshots.

The worker runs it in a background thread (:mod:`lakegate.ingest.upkeep`); ``lakegate maintain`` runs it on
demand. State tables are the writer's: it keeps them exact and compacts them at its commits, where its key index
lives (:mod:`lakegate.connectors.iceberg.statesync`); the background upkeep only expires their snapshots.
``lakegate maintain --compact`` compacts them too (a running worker then reads its key index again).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from lakegate.connectors.changes import TableRef
from lakegate.connectors.config import LakeSettings, SourceSettings
from lakegate.connectors.errors import LakeError, SourceConfigError
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg import compaction, cut, maintenance, orphans, staging, statesync
from lakegate.connectors.iceberg.commits import stamp
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.ingest.config import IngestSettings

log = logging.getLogger("lakegate.maintain")


def compaction_thresholds(cfg: IngestSettings) -> compaction.Thresholds:
    """The ``compact_*`` settings, as the state table's compaction takes them."""
    return compaction.Thresholds(
        deleted_fraction=cfg.compact_deleted_fraction,
        small_file=cfg.compact_small_file,
        min_small_files=cfg.compact_min_small_files,
        max_delete_files=cfg.compact_max_delete_files,
        max_bytes=cfg.compact_max_bytes,
        step_bytes=cfg.compact_step_bytes,
        every=cfg.compact_every,
    )


def replicated(sources: Sequence[SourceSettings]) -> list[TableRef]:
    return [TableRef.parse(t) for src in sources for t in src.replicate]


def maintain_table(
    table: LakeTable,
    cfg: IngestSettings,
    *,
    catch_up: bool,
    compact: bool,
    expire: bool,
    compact_state: bool = False,
    tidy: bool | None = None,
    thorough: bool = False,
) -> None:
    """``catch_up``: bring the state table up to its change log; ``compact``: the change log's small files, and
    with ``compact_state`` the state table's (files past their deleted fraction, delete files); ``expire``: the
    snapshots past the rules; ``tidy`` (default: as ``expire``): the change log's retention and orphan files.
    ``thorough`` (``lakegate maintain``, asked for by hand): the state table's small data files are merged
    however few there are, and its delete files whenever there are two (the writer's own compactions wait for
    ``compact_min_small_files`` and ``compact_max_delete_files``, so that each costs little)."""
    if tidy is None:
        tidy = expire
    if catch_up:
        caught = table.catch_up()
        if caught:
            log.info("%s: the state table caught up with %d change(s)", table.schema.table, caught)
    if compact_state and table.state is not None and _staged_on(table, cfg):
        log.info(
            "%s: state table not compacted: a worker is writing a transaction to it in parts (compacting now would "
            "make it read the whole transaction back from the change log); it is compacted at a later run",
            table.schema.table,
        )
    elif compact_state and table.state is not None:
        position = table.state_checkpoint()
        thresholds = compaction_thresholds(cfg)
        if thorough:
            thresholds = dataclasses.replace(thresholds, min_small_files=2, max_delete_files=1)
        result = compaction.compact(
            statesync.state_of(table),
            stamp(position, **{"lakegate.maintenance": "compact"}),
            thresholds,
            index=False,
        )
        log.info("%s: state table: %s", table.schema.table, result)
    retention = cfg.changelog_retention
    if tidy and retention and table.changelog is not None:
        folded = table.state_checkpoint().lsn if table.state is not None else None
        trimmed = maintenance.trim_changelog(table.changelog, timedelta(seconds=retention), folded)
        if trimmed:
            log.info("%s: removed %d change-log row(s) older than the retention", table.schema.table, trimmed)
    rules: dict[str, Any] = {
        "expiry": timedelta(seconds=cfg.snapshot_expiry),
        "keep_at_most": cfg.snapshot_keep,
        "cut": cut_of(table) if expire else None,
    }
    try:
        if table.changelog is not None:
            maintenance.run([table.changelog], do_compact=compact, do_expire=expire, **rules)
    finally:  # a change-log compaction that lost a race holds back no expiry
        if table.state is not None:  # compacted with its deletes above, never as a plain table
            maintenance.run([table.state], do_compact=False, do_expire=expire, **rules)
    if tidy and cfg.orphan_age:
        for lake in (table.changelog, table.state):
            if lake is not None:
                # files wait orphan_age anyway: look at most hourly (sooner only when the age is shorter)
                orphans.remove_orphans(
                    lake, timedelta(seconds=cfg.orphan_age), every=min(3600.0, cfg.orphan_age)
                )


def _staged_on(table: LakeTable, cfg: IngestSettings) -> bool:
    """Whether some process (a worker) stages a transaction's files for the state table now (its marker is
    younger than ``orphan_age``, three days when that is 0)."""
    assert table.state is not None
    staged, _ = staging.announced(table.state, timedelta(seconds=cfg.orphan_age or 3 * 86400))
    return bool(staged)


def cut_of(table: LakeTable) -> int | None:
    """The consistent cut recorded for the table's source (readers read the table as of it: its snapshot there
    must not be expired); None without one."""
    try:
        properties = table.catalog.load_namespace_properties(table.namespace)
    except Exception as exc:  # whatever the catalog raises: expire by age only this time
        log.warning(
            "%s: cannot read the consistent cut (%s); expiring snapshots by age only", table.schema.table, exc
        )
        return None
    return cut.parse(properties).get(table.source)


def _resnapshot(lake: LakeSettings, sources: Sequence[SourceSettings], refs: list[TableRef]) -> None:
    from lakegate.connectors.postgres import lease
    from lakegate.connectors.postgres.connection import connect
    from lakegate.connectors.postgres.replication import slot_info

    catalog = lake_catalog.from_settings(lake)
    for ref in refs:
        source = next((s for s in sources if str(ref) in s.replicate), None)
        if source is None:
            raise SourceConfigError(f"{ref} is not in any source's 'replicate' list")
        with connect(source.dsn, application_name="lakegate-maintain") as conn:
            info = slot_info(conn, source.slot)
            if info is not None and info.active_pid is not None:
                raise SourceConfigError(
                    f"the ingest worker is running (slot {source.slot!r} is active in process "
                    f"{info.active_pid}); stop it before re-snapshotting {ref}"
                )
            if not lease.try_acquire(conn, source.slot):  # held until this connection closes
                raise SourceConfigError(
                    f"the ingest worker of source {source.name!r} is running ({lease.holder(conn, source.slot)}); "
                    f"stop it before re-snapshotting {ref}"
                )
            LakeTable.open(catalog, ref).drop()
        print(f"dropped the lake tables of {ref}; the next 'lakegate ingest' copies it again")


def run(
    lake: LakeSettings, sources: Sequence[SourceSettings], cfg: IngestSettings, args: argparse.Namespace
) -> int:
    """``lakegate maintain``."""
    if args.resnapshot:
        _resnapshot(lake, sources, [TableRef.parse(t) for t in args.resnapshot])
        return 0
    everything = not (args.catch_up or args.compact or args.expire_snapshots)
    catalog = lake_catalog.from_settings(lake)
    for ref in replicated(sources):
        try:
            table = LakeTable.open(catalog, ref)
        except LakeError as exc:
            print(f"skipping {ref}: {exc}")
            continue
        maintain_table(
            table,
            cfg,
            catch_up=everything or args.catch_up,
            compact=everything or args.compact,
            compact_state=everything or args.compact,
            expire=everything or args.expire_snapshots,
            thorough=True,
        )
        print(f"{ref}: maintained")
    return 0

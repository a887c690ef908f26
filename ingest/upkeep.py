"""The worker's background upkeep: compacts and expires snapshots (state tables are kept exact and compacted by the
writer itself, at its commits: :mod:`lakegate.connectors.iceberg.statesync`).

Nothing here may stop the upkeep for good: any failure of one table's maintenance (a commit conflict, an
unreadable file, a catalog that is down) is logged and that step is retried with a backoff (5 s doubling to
5 min), while the other tables go on. A table whose upkeep fails is marked in the lake (change-log table
property ``lakegate.upkeep``: since when, what, the error), which ``/v1/status`` and ``/metrics`` show, and the
mark is removed when it recovers. Upkeep that has failed for longer than ``upkeep_failure_limit`` makes the worker
exit non-zero (:class:`UpkeepFailed`): a worker that looks healthy must not let its lake rot.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from lakegate.connectors.changes import TableRef
from lakegate.connectors.config import LakeSettings
from lakegate.connectors.errors import ConnectorError, LakeError
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg.writer import LakeTable
from lakegate.ingest.config import IngestSettings
from lakegate.ingest.maintain import maintain_table
from lakegate.ingest.writerupkeep import kept_by_writer

log = logging.getLogger("lakegate.maintain")

UPKEEP = "lakegate.upkeep"  #: change-log table property: the failing upkeep of the table (JSON), if any
FIRST_RETRY, LAST_RETRY = 5.0, 300.0


class UpkeepFailed(ConnectorError):
    """Upkeep has failed for longer than the limit: the worker stops, non-zero."""


@dataclass
class Failure:
    since: float  #: wall clock
    error: str
    attempts: int = 1
    next_try: float = 0.0  #: monotonic


class MaintenanceThread(threading.Thread):
    """Compacts and expires every ``maintenance_interval``; see the module docstring for failures."""

    def __init__(
        self,
        lake: LakeSettings,
        cfg: IngestSettings,
        refs: list[TableRef],
        stop: threading.Event,
        active: Callable[[], bool] = lambda: True,
    ) -> None:
        super().__init__(name="lakegate-maintenance", daemon=True)
        self.cfg = cfg
        self.refs = refs
        self.stop_event = stop
        self.active = active  #: whether the worker holds the source's lease (no upkeep beside another worker)
        self.lake = lake
        self.catalog = lake_catalog.from_settings(lake)
        self.tables: dict[TableRef, LakeTable] = {}
        self.failures: dict[tuple[TableRef, str], Failure] = {}

    # -------------------------------------------------------------------------------------------- the loop

    def run(self) -> None:
        cfg = self.cfg
        last_maintenance = time.monotonic()
        maintain = self._maintain
        while not self.stop_event.wait(0.5):
            if not self.active():
                continue
            now = time.monotonic()
            if cfg.maintenance_interval and now - last_maintenance >= cfg.maintenance_interval:
                # a pass is spread over up to half the interval: it runs in the worker's own interpreter, beside
                # the stream, and 200 tables back to back (their metadata read, their files listed) took 0.65
                # of a core for 15 s and doubled the freshness meanwhile (issue 11.16)
                pause = min(1.0, cfg.maintenance_interval / 2 / max(1, len(self.refs)))
                for ref in self.refs:
                    self._step(ref, "maintenance", maintain)
                    if self.stop_event.wait(pause):
                        return
                last_maintenance = time.monotonic()
            else:  # a failed maintenance is retried on its own schedule
                for ref, what in list(self.failures):
                    if what == "maintenance":
                        self._step(ref, what, maintain)

    def _maintain(self, table: LakeTable) -> None:
        """One table's upkeep; compaction and expiry are left to the writer process that does them (it did lately,
        :mod:`.writerupkeep`)."""
        interval = self.cfg.maintenance_interval
        mine = not (interval and kept_by_writer(table, 2 * interval))
        maintain_table(table, self.cfg, catch_up=False, compact=mine, expire=mine, tidy=True)

    def _table(self, ref: TableRef) -> LakeTable | None:
        if ref not in self.tables:
            try:
                self.tables[ref] = LakeTable.open(self.catalog, ref)
            except LakeError:
                return None  # not created yet
        return self.tables[ref]

    def _step(self, ref: TableRef, what: str, action: Callable[[LakeTable], object]) -> bool:
        """Run one upkeep step of one table unless it is backing off; True when it ran."""
        failure = self.failures.get((ref, what))
        if failure is not None and time.monotonic() < failure.next_try:
            return False
        try:
            table = self._table(ref)
            if table is None:
                return False
            action(table)
        except Exception as exc:  # anything: the upkeep must outlive it (see the module docstring)
            self._failed(ref, what, exc)
            self.tables.pop(ref, None)  # read the table afresh next time
            return False
        if failure is not None:
            del self.failures[(ref, what)]
            log.info("%s of %s works again (after %d failed attempt(s))", what, ref, failure.attempts)
            self._mark(ref)
        return True

    def _failed(self, ref: TableRef, what: str, exc: Exception) -> None:
        message = f"{type(exc).__name__}: {exc}" if not isinstance(exc, ConnectorError) else str(exc)
        failure = self.failures.get((ref, what))
        if failure is None:
            failure = self.failures[(ref, what)] = Failure(time.time(), message)
        else:
            failure.attempts += 1
            failure.error = message
        wait = min(LAST_RETRY, FIRST_RETRY * 2 ** (failure.attempts - 1))
        failure.next_try = time.monotonic() + wait
        level = logging.ERROR if failure.attempts == 1 else logging.WARNING
        log.log(
            level, "%s of %s failed (attempt %d): %s; retrying in %.0fs", what, ref, failure.attempts, message, wait
        )
        if failure.attempts == 1:
            self._mark(ref)

    def _mark(self, ref: TableRef) -> None:
        """Record the table's failing upkeep in the lake (or remove the record); best effort."""
        failing = {what: f for (r, what), f in self.failures.items() if r == ref}
        value = (
            json.dumps(
                {
                    what: {
                        "since": datetime.datetime.fromtimestamp(f.since, datetime.UTC).isoformat(),
                        "error": f.error[:500],
                    }
                    for what, f in failing.items()
                },
                sort_keys=True,
            )
            if failing
            else None
        )
        with contextlib.suppress(Exception):
            table = LakeTable.open(self.catalog, ref)
            assert table.changelog is not None
            if value is None and UPKEEP in table.changelog.properties:
                table.remove_properties({UPKEEP})
            elif value is not None:
                table.set_properties({UPKEEP: value})

    def failing_for(self) -> tuple[float, str] | None:
        """How long the oldest failing upkeep step has failed, and a description; None when all is well."""
        if not self.failures:
            return None
        (ref, what), failure = min(self.failures.items(), key=lambda item: item[1].since)
        return time.time() - failure.since, f"{what} of {ref}: {failure.error}"

    def check(self) -> None:
        """Raise :class:`UpkeepFailed` when upkeep has failed for longer than the limit."""
        limit = self.cfg.upkeep_failure_limit
        failing = self.failing_for()
        if limit and failing is not None and failing[0] > limit:
            raise UpkeepFailed(
                f"the lake's upkeep has failed for {failing[0]:.0f}s (longer than upkeep_failure_limit = "
                f"{limit:.0f}s): {failing[1]}. Fix the cause (the log has each attempt) and start the worker "
                "again; 'lakegate maintain' runs the same steps by hand"
            )

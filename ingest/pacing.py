"""How many tables the next flush takes (issue 11.16; see :mod:`lakegate.connectors.postgres.handover`).

A flush should last about ``FLUSH_BUDGET`` of ``commit_interval``: the writer's recent seconds per table say how
many tables fit. When all tables with changes fit, a flush takes them all, as before; when they do not (hundreds
of busy tables), each flush takes the share whose changes have waited longest, and the consistent cut moves on
after every such flush instead of after one long flush of every table.

Why a half: a change waits about one round of all tables plus one flush (it may arrive just after its table's
flush began), and each flush has a fixed cost of its own (the catalog swap, the cut, the confirmation: tens of
milliseconds), so shorter flushes make the wait for the flush shorter and the round longer. Measured with
``bench/ingest.py --only-tables`` (README, Many tables).
"""

from __future__ import annotations

FLUSH_BUDGET = 0.5  #: of ``commit_interval``: how long a flush should last when not every table fits
_WEIGHT = 0.3  #: of the latest flush in the running estimate of seconds per table


class Pace:
    def __init__(self, interval: float, budget: float | None = None) -> None:
        self.budget = (FLUSH_BUDGET if budget is None else budget) * interval
        self.per_table: float | None = None  #: seconds of a flush per table written, recent flushes weighted

    def wrote(self, tables: int, seconds: float) -> None:
        """A flush wrote ``tables`` tables in ``seconds``."""
        if tables <= 0:
            return
        latest = seconds / tables
        known = self.per_table
        self.per_table = latest if known is None else (1 - _WEIGHT) * known + _WEIGHT * latest

    def most(self) -> int | None:
        """How many tables the next flush may take (None: as many as have changes; nothing measured yet)."""
        if self.per_table is None or self.per_table <= 0:
            return None
        return max(1, int(self.budget / self.per_table))

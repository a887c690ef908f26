"""How many tables the next flush takes (issue 11.16; see :mod:`lakegate.connectors.postgres.handover`).

When the writer's recent seconds per table say that every table with changes fits in ``commit_interval``, a flush
takes them all, as before. When they do not (hundreds of busy tables), each flush takes ``1 / SHARES`` of them,
those whose changes have waited longest, and the consistent cut moves on after every such flush instead of after
one long flush of every table: a change waits about one round of all tables plus one share, instead of up to two
whole flushes.

Why a fixed fraction and not a time budget per flush: a table's commit costs more the more changes it carries,
and those grow with the round; flushes sized by time took fewer and fewer tables, and each flush has a cost of
its own (handing over, the catalog swap, the cut: tens of milliseconds, more on a busy machine) that then
lengthened the round (measured: 200 tables, a budget of half a second, 61 tables per flush falling to 18 in
ten seconds). With ``SHARES`` flushes per round the round grows by ``SHARES`` such costs and the wait for the
flush is a quarter of a whole one. Measured with ``bench/ingest.py --only-tables`` (README, Many tables).
"""

from __future__ import annotations

import math

SHARES = 4  #: flushes per round of all tables with changes, when one flush of all of them does not fit
#: seconds per table assumed before the first flush is measured (about this machine's cost of a small commit of
#: both tables): the first flush of hundreds of busy tables is a share too, not seconds of all of them
PRIOR = 0.01
_WEIGHT = 0.3  #: of the latest flush in the running estimate of seconds per table


class Pace:
    def __init__(self, interval: float, shares: int | None = None) -> None:
        self.interval = interval
        self.shares = SHARES if shares is None else shares
        self.per_table: float | None = None  #: seconds of a flush per table written, recent flushes weighted

    def wrote(self, tables: int, seconds: float) -> None:
        """A flush wrote ``tables`` tables in ``seconds``."""
        if tables <= 0:
            return
        latest = seconds / tables
        known = self.per_table
        self.per_table = latest if known is None else (1 - _WEIGHT) * known + _WEIGHT * latest

    def most(self, waiting: int) -> int | None:
        """How many of the ``waiting`` tables with changes the next flush takes (None: all of them)."""
        per_table = PRIOR if self.per_table is None else self.per_table
        if self.shares <= 1 or waiting * per_table <= self.interval:
            return None
        return max(1, math.ceil(waiting / self.shares))

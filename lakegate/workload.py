"""The demo's workload: a steady stream of realistic changes to users, transactions and their metadata.

New users register, transactions are created (some of high value, which get flagged), their status and amounts
are updated, some are deleted, and now and then a transaction is flagged as suspicious. ``rate`` is the number of
changed rows per second, spread over small transactions.
"""

from __future__ import annotations

import logging
import random
import threading
import time

import psycopg

log = logging.getLogger("lakegate.workload")

CURRENCIES = ("EUR", "USD", "PLN", "GBP")
CHANNELS = ("web", "ios", "android", "api", "pos")


class Workload(threading.Thread):
    def __init__(self, dsn: str, rate: float, *, seed: int | None = None) -> None:
        super().__init__(name="lakegate-workload", daemon=True)
        self.dsn = dsn
        self.rate = rate
        self.rng = random.Random(seed)
        self.stopping = threading.Event()
        self.changes = 0
        self.error: BaseException | None = None

    def stop(self) -> None:
        self.stopping.set()
        self.join(10)

    def run(self) -> None:
        if self.rate <= 0:
            return
        try:
            with psycopg.connect(
                self.dsn, autocommit=True, application_name="lakegate-demo-workload"
            ) as conn:
                next_at = time.monotonic()
                while not self.stopping.is_set():
                    with conn.transaction():
                        self.changes += self.step(conn)
                    next_at += 1.0 / max(self.rate / 3.0, 0.1)  # a step changes about three rows
                    self.stopping.wait(max(0.0, next_at - time.monotonic()))
        except psycopg.OperationalError as exc:
            if not self.stopping.is_set():
                self.error = exc
                log.error("the demo workload stopped: %s", exc)

    def step(self, conn: psycopg.Connection) -> int:
        """One small transaction; returns the number of rows it changed."""
        r = self.rng.random()
        if r < 0.05:
            return self._op_new_user(conn)
        if r < 0.55:
            return self._op_new_transaction(conn, high_value=self.rng.random() < 0.05)
        if r < 0.80:
            return self._op_settle(conn)
        if r < 0.90:
            return self._op_adjust_amount(conn)
        if r < 0.95:
            return self._op_flag(conn)
        return self._op_delete(conn)

    def _op_new_user(self, conn: psycopg.Connection) -> int:
        n = self.rng.randrange(10**9)
        conn.execute(
            "INSERT INTO users (email, full_name, country, profile) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT (email) DO NOTHING",
            (
                f"new{n}@example.com",
                f"New User {n}",
                self.rng.choice(["DE", "FR", "PL", "US", "BR"]),
                '{"plan": "free"}',
            ),
        )
        return 1

    def _op_new_transaction(self, conn: psycopg.Connection, high_value: bool) -> int:
        amount = round(self.rng.uniform(5000, 25000) if high_value else self.rng.uniform(1, 400), 2)
        row = conn.execute(
            "INSERT INTO transactions (user_id, amount, currency, status) "
            "SELECT id, %s, %s, 'pending' FROM users ORDER BY random() LIMIT 1 RETURNING id",
            (amount, self.rng.choice(CURRENCIES)),
        ).fetchone()
        if row is None:
            return 0
        conn.execute(
            "INSERT INTO transaction_metadata (transaction_id, channel, ip, device, flagged, reason) "
            "VALUES (%s, %s, %s, %s, %s, %s)",
            (
                row[0],
                self.rng.choice(CHANNELS),
                f"10.{self.rng.randrange(256)}.{self.rng.randrange(256)}.7",
                "Chrome on macOS",
                high_value,
                "high value" if high_value else None,
            ),
        )
        return 2

    def _op_settle(self, conn: psycopg.Connection) -> int:
        status = self.rng.choice(["completed", "completed", "failed", "refunded"])
        cur = conn.execute(
            "UPDATE transactions SET status = %s, updated_at = now() WHERE id = "
            "(SELECT id FROM transactions WHERE status = 'pending' ORDER BY random() LIMIT 1)",
            (status,),
        )
        return cur.rowcount

    def _op_adjust_amount(self, conn: psycopg.Connection) -> int:
        cur = conn.execute(
            "UPDATE transactions SET amount = round(amount * %s::numeric, 2), updated_at = now() WHERE id = "
            "(SELECT id FROM transactions ORDER BY random() LIMIT 1)",
            (round(self.rng.uniform(0.5, 1.5), 2),),
        )
        return cur.rowcount

    def _op_flag(self, conn: psycopg.Connection) -> int:
        cur = conn.execute(
            "UPDATE transaction_metadata SET flagged = true, reason = 'suspicious activity' "
            "WHERE transaction_id = (SELECT transaction_id FROM transaction_metadata "
            "WHERE NOT flagged ORDER BY random() LIMIT 1)"
        )
        return cur.rowcount

    def _op_delete(self, conn: psycopg.Connection) -> int:
        cur = conn.execute(
            "DELETE FROM transactions WHERE id = "
            "(SELECT id FROM transactions WHERE status = 'failed' ORDER BY random() LIMIT 1)"
        )
        return cur.rowcount * 2  # its metadata goes with it (ON DELETE CASCADE)

"""Per-table staleness under an OLTP load: the ``--oltp`` row of bench/ingest.py.

    python bench/ingest.py --oltp [--oltp-seconds 90] [--oltp-rate TPS] [--oltp-clients 4] [--oltp-warehouses 2]
                                  [--oltp-probe 30] [--oltp-ingest 'compact_every = 0'] [--keep]

The source holds the 9 TPC-C tables (history keyed by a bigserial) at a small scale (``--oltp-warehouses``, 10
districts each, 300 customers a district, 10 000 items); one worker replicates all of them with the default
settings (commit interval 1 s). pgbench drives TPC-C's mix of five simplified transactions: New-Order 45 (district
next_o_id, orders, new_order, 5-15 order_line rows, their stock rows), Payment 43 (warehouse, district, customer,
a history row), Delivery 4 (the oldest new order of each of the 10 districts: new_order, orders, order_line,
customer; a PL/pgSQL function), and the read-only Order-Status 4 and Stock-Level 4; deadlocks are retried
(--max-tries). Autovacuum is off on these tables, as in bench.ingest's many-tables row.

Rate: "the highest the machine sustains", found by a ladder unless --oltp-rate is given: a probe without a rate
limit (``--oltp-probe`` s), then pgbench --rate at falling shares of the probe's applied rate, each step as long
as the probe, until both pgbench keeps the rate (>= 97 %) and the worker keeps up (realtime ratio >= 0.97); the
measured run (``--oltp-seconds``) uses that rate (none: the probe passed), on tables the ladder's loads have grown.
Worker, PostgreSQL, pgbench and the readers share the machine's cores (the row prints each one's CPU).

Staleness of table T to a reader at time t (the HTAP benchmarks' freshness score): t minus the commit time of the
oldest source transaction that touched T and that the reader cannot see yet, 0 when it sees all of T committed by
t; sampled every 100 ms over the measured load, p50/p99 per table. A table whose changes stop showing keeps
growing. Commit times and LSNs are those of the lake's change-log rows (``_commit_ts``, ``_lsn``), complete once
the replication slot is confirmed past the load. Two readers:
  - pyiceberg: a plain reader of each state table ``public.T``: every 100 ms the catalog's metadata locations,
    and ``load_table`` of each table whose location changed; it sees the source up to its ``lakegate.lsn`` stamp.
  - gateway: the consistent cut the gateway reads at (``lakegate.cut.pg`` in the catalog, CutWatch, every 50 ms):
    a change is visible once its LSN is below the cut; the gateway's own query time is not counted.
Each poll's period bounds the error (up to 0.1 s / 0.05 s late). The ratio column also gives the p99 of the
per-change delay (commit to visible).

Realtime ratio: changes applied per second (becoming visible to the reader) over changes made per second (committed
on the source), over the load less its first WARM s: made/s is the slope of the count committed, applied/s that
less the growth of the backlog (committed, not visible yet), a robust slope (Theil-Sen) because the backlog swings
by seconds' worth of changes from one flush to the next (lake commits stall for seconds during state-table
compactions): applied/made counted over 20 s of the same load ranged from 0.89 to 1.2.
The source's own count (pg_stat_user_tables n_tup_ins+upd+del, which also counts rolled-back attempts) is printed
beside the lake's.
Baseline: after the run, a raw pgoutput read of the same changes from a slot made before it (bench.ingest's
raw_stream): the load's rate as a share of what logical decoding alone delivers.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import psycopg
import pyarrow as pa
from pyiceberg.expressions import GreaterThan

from bench.common import percentile
from bench.ingest import CutWatch, Worker, config, pgbench, raw_stream, tree_cpu
from lakegate.connectors.changes import parse_lsn
from lakegate.connectors.iceberg import catalog as lake_catalog
from lakegate.connectors.iceberg.commits import checkpoint_of

TABLES = ("warehouse", "district", "customer", "history", "new_order", "orders", "order_line", "item", "stock")
SLOT, RAW_SLOT = "lakegate_oltp", "bench_oltp_raw"
ITEMS, CUSTOMERS = 10_000, 300  #: items; customers (and initial orders) per district
STEP, WARM, POLL = 0.1, 5.0, 0.1  #: sampling period, ratio warm-up, pyiceberg poll (s)
SUSTAINED = 0.97
CHILDREN = resource.RUSAGE_CHILDREN  #: pgbench's, once it has exited (the worker has not)

SCHEMA = """
CREATE TABLE warehouse (w_id int PRIMARY KEY, w_name text, w_street text, w_city text, w_state char(2),
  w_zip char(9), w_tax numeric(4,4), w_ytd numeric(12,2));
CREATE TABLE district (d_id int, d_w_id int, d_name text, d_street text, d_city text, d_state char(2),
  d_zip char(9), d_tax numeric(4,4), d_ytd numeric(12,2), d_next_o_id int, PRIMARY KEY (d_w_id, d_id));
CREATE TABLE customer (c_id int, c_d_id int, c_w_id int, c_first text, c_middle char(2), c_last text,
  c_street text, c_city text, c_state char(2), c_zip char(9), c_phone char(16), c_since timestamptz,
  c_credit char(2), c_credit_lim numeric(12,2), c_discount numeric(4,4), c_balance numeric(12,2),
  c_ytd_payment numeric(12,2), c_payment_cnt int, c_delivery_cnt int, c_data text,
  PRIMARY KEY (c_w_id, c_d_id, c_id));
CREATE TABLE history (h_id bigserial PRIMARY KEY, h_c_id int, h_c_d_id int, h_c_w_id int, h_d_id int,
  h_w_id int, h_date timestamptz, h_amount numeric(6,2), h_data text);
CREATE TABLE new_order (no_o_id int, no_d_id int, no_w_id int, PRIMARY KEY (no_w_id, no_d_id, no_o_id));
CREATE TABLE orders (o_id int, o_d_id int, o_w_id int, o_c_id int, o_entry_d timestamptz, o_carrier_id int,
  o_ol_cnt int, o_all_local int, PRIMARY KEY (o_w_id, o_d_id, o_id));
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
CREATE TABLE order_line (ol_o_id int, ol_d_id int, ol_w_id int, ol_number int, ol_i_id int,
  ol_supply_w_id int, ol_delivery_d timestamptz, ol_quantity int, ol_amount numeric(6,2), ol_dist_info char(24),
  PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
CREATE TABLE item (i_id int PRIMARY KEY, i_im_id int, i_name text, i_price numeric(5,2), i_data text);
CREATE TABLE stock (s_i_id int, s_w_id int, s_quantity int, s_dist_01 char(24), s_ytd int, s_order_cnt int,
  s_remote_cnt int, s_data text, PRIMARY KEY (s_w_id, s_i_id));
-- Delivery: the oldest new order of each district of a warehouse (none: skipped), as TPC-C's stored procedures do;
-- one statement with data-modifying CTEs was planned from stale statistics into a scan of all of order_line
CREATE FUNCTION delivery(w int, carrier int) RETURNS int LANGUAGE plpgsql AS $$
DECLARE
  o int; c int; amount numeric; done int := 0;
BEGIN
  FOR d IN 1..10 LOOP
    DELETE FROM new_order WHERE (no_w_id, no_d_id, no_o_id) = (SELECT no_w_id, no_d_id, no_o_id FROM new_order
      WHERE no_w_id = w AND no_d_id = d ORDER BY no_o_id LIMIT 1) RETURNING no_o_id INTO o;
    CONTINUE WHEN o IS NULL;
    UPDATE orders SET o_carrier_id = carrier WHERE o_w_id = w AND o_d_id = d AND o_id = o RETURNING o_c_id INTO c;
    WITH lines AS (UPDATE order_line SET ol_delivery_d = now() WHERE ol_w_id = w AND ol_d_id = d AND ol_o_id = o
      RETURNING ol_amount) SELECT sum(ol_amount) INTO amount FROM lines;
    UPDATE customer SET c_balance = c_balance + amount, c_delivery_cnt = c_delivery_cnt + 1
      WHERE c_w_id = w AND c_d_id = d AND c_id = c;
    done := done + 1;
  END LOOP;
  RETURN done;
END $$;
"""
LOAD = """
INSERT INTO item SELECT i, 1 + i % 10000, 'item ' || i, 1 + (i * 37 % 9900) / 100.0, md5(i::text)
  FROM generate_series(1, {items}) i;
INSERT INTO warehouse SELECT w, 'warehouse ' || w, 'street', 'city', 'ST', '123456789', 0.1, 300000
  FROM generate_series(1, {w}) w;
INSERT INTO district SELECT d, w, 'district ' || d, 'street', 'city', 'ST', '123456789', 0.05, 30000, {c} + 1
  FROM generate_series(1, {w}) w, generate_series(1, 10) d;
INSERT INTO customer SELECT c, d, w, 'first ' || c, 'OE', 'last ' || c % 1000, 'street', 'city', 'ST',
  '123456789', '0123456789012345', now(), CASE WHEN c % 10 = 0 THEN 'BC' ELSE 'GC' END, 50000, c % 50 / 100.0,
  -10, 10, 1, 0, repeat(md5(c::text), 10) FROM generate_series(1, {w}) w, generate_series(1, 10) d,
  generate_series(1, {c}) c;
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  SELECT c_id, c_d_id, c_w_id, c_d_id, c_w_id, now(), 10, 'initial' FROM customer;
INSERT INTO orders SELECT o, d, w, 1 + o * 7919 % {c}, now(), CASE WHEN o <= {c} * 7 / 10 THEN 1 + o % 10 END,
  5 + o % 11, 1 FROM generate_series(1, {w}) w, generate_series(1, 10) d, generate_series(1, {c}) o;
INSERT INTO new_order SELECT o_id, o_d_id, o_w_id FROM orders WHERE o_carrier_id IS NULL;
INSERT INTO order_line SELECT o_id, o_d_id, o_w_id, n, 1 + (o_id * 31 + n * 17) % {items}, o_w_id,
  CASE WHEN o_carrier_id IS NOT NULL THEN now() END, 5, CASE WHEN o_carrier_id IS NULL THEN n * 1.5 ELSE 0 END,
  'dist info' FROM orders, generate_series(1, o_ol_cnt) n;
INSERT INTO stock SELECT i, w, 10 + i % 91, 'dist ' || w, 0, 0, 0, md5(i::text)
  FROM generate_series(1, {w}) w, generate_series(1, {items}) i;
"""
SCRIPTS = {  # name: (weight, pgbench script); {w}, {c}, {items} filled in
    "new_order": (45, """\\set w_id random(1, {w})
\\set d_id random(1, 10)
\\set c_id random(1, {c})
\\set ol_cnt random(5, 15)
BEGIN;
UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = :w_id AND d_id = :d_id
  RETURNING d_next_o_id - 1 AS o_id \\gset
INSERT INTO orders VALUES (:o_id, :d_id, :w_id, :c_id, now(), NULL, :ol_cnt, 1);
INSERT INTO new_order VALUES (:o_id, :d_id, :w_id);
WITH lines AS (
  SELECT n, 1 + floor(random() * {items})::int AS i_id, 1 + floor(random() * 10)::int AS qty
  FROM generate_series(1, :ol_cnt) n
), added AS (
  INSERT INTO order_line SELECT :o_id, :d_id, :w_id, n, i_id, :w_id, NULL, qty, qty * i_price, 'dist info'
  FROM lines JOIN item USING (i_id) RETURNING ol_i_id, ol_quantity
)
UPDATE stock SET s_quantity = CASE WHEN s_quantity >= q + 10 THEN s_quantity - q ELSE s_quantity - q + 91 END,
  s_ytd = s_ytd + q, s_order_cnt = s_order_cnt + 1
FROM (SELECT ol_i_id, sum(ol_quantity) AS q FROM added GROUP BY ol_i_id) x WHERE s_w_id = :w_id AND s_i_id = ol_i_id;
END;
"""),
    "payment": (43, """\\set w_id random(1, {w})
\\set d_id random(1, 10)
\\set c_id random(1, {c})
\\set cents random(100, 500000)
BEGIN;
UPDATE warehouse SET w_ytd = w_ytd + :cents / 100.0 WHERE w_id = :w_id;
UPDATE district SET d_ytd = d_ytd + :cents / 100.0 WHERE d_w_id = :w_id AND d_id = :d_id;
UPDATE customer SET c_balance = c_balance - :cents / 100.0, c_ytd_payment = c_ytd_payment + :cents / 100.0,
  c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id;
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
  VALUES (:c_id, :d_id, :w_id, :d_id, :w_id, now(), :cents / 100.0, 'payment');
END;
"""),
    "order_status": (4, """\\set w_id random(1, {w})
\\set d_id random(1, 10)
\\set c_id random(1, {c})
BEGIN;
SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id;
SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
  WHERE ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id = (SELECT max(o_id) FROM orders
  WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_c_id = :c_id);
END;
"""),
    "delivery": (4, """\\set w_id random(1, {w})
\\set carrier random(1, 10)
SELECT delivery(:w_id, :carrier);
"""),
    "stock_level": (4, """\\set w_id random(1, {w})
\\set d_id random(1, 10)
\\set threshold random(10, 20)
SELECT count(DISTINCT s_i_id) FROM district
  JOIN order_line ON ol_w_id = d_w_id AND ol_d_id = d_id AND ol_o_id >= d_next_o_id - 20 AND ol_o_id < d_next_o_id
  JOIN stock ON s_w_id = d_w_id AND s_i_id = ol_i_id
  WHERE d_w_id = :w_id AND d_id = :d_id AND s_quantity < :threshold;
"""),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--oltp", action="store_true", help="measure the OLTP row only (bench/oltp.py)")
    parser.add_argument("--oltp-seconds", type=float, default=90.0, help="the measured run's load")
    parser.add_argument("--oltp-rate", type=float, default=None, help="transactions/s (default: the ladder)")
    parser.add_argument("--oltp-clients", type=int, default=4, help="pgbench clients")
    parser.add_argument("--oltp-warehouses", type=int, default=2)
    parser.add_argument("--oltp-probe", type=float, default=30.0, help="seconds of each step of the ladder")
    parser.add_argument("--oltp-ingest", default="", help="more [ingest] settings, e.g. 'compact_every = 0'")


def setup(dsn: str, root: Path, warehouses: int) -> list[str]:
    """The schema and its rows; the pgbench arguments of the mix."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(SCHEMA)
        with conn.transaction():
            conn.execute(LOAD.format(w=warehouses, c=CUSTOMERS, items=ITEMS))
        for table in TABLES:  # the source's upkeep is not lakegate's work (as bench.ingest.many_tables says)
            conn.execute(f"ALTER TABLE {table} SET (autovacuum_enabled = false)")
        conn.execute(f"VACUUM ANALYZE {', '.join(TABLES)}")
    files = []
    for name, (weight, text) in SCRIPTS.items():
        path = root / f"{name}.pgbench"
        path.write_text(text.format(w=warehouses, c=CUSTOMERS, items=ITEMS))
        files += ["--file", f"{path}@{weight}"]
    return files


class LakeReader(threading.Thread):
    """A plain pyiceberg reader of every state table: ``seen[table]`` holds (stamp, wall time first seen)."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        self.db = root / "catalog.db"
        self.catalog = lake_catalog.open_catalog("lake", f"sqlite:///{self.db}", str(root / "warehouse"))
        self.seen: dict[str, list[tuple[int, float]]] = {t: [] for t in TABLES}
        self.done, self.ready = threading.Event(), threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        known: dict[str, str] = {}
        while True:
            try:
                rows = conn.execute(
                    "SELECT table_name, metadata_location FROM iceberg_tables WHERE table_namespace = 'public'"
                ).fetchall()
            except sqlite3.OperationalError:  # locked for a moment
                rows = []
            for name, location in rows:
                if name in self.seen and known.get(name) != location:
                    table = self.catalog.load_table(f"public.{name}")
                    known[name] = str(table.metadata_location)
                    position, seen = checkpoint_of(table), self.seen[name]
                    if position is not None and (not seen or position.lsn > seen[-1][0]):
                        seen.append((position.lsn, time.time()))
            self.ready.set()
            if self.done.wait(POLL):
                return


def changes(catalog, start_lsn: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:  # type: ignore[no-untyped-def]
    """table -> (commit LSNs, commit times in s) of its changes after ``start_lsn``, by LSN."""
    out = {}
    for name in TABLES:
        rows = catalog.load_table(f"public.{name}__changelog").scan(
            row_filter=GreaterThan("_lsn", start_lsn), selected_fields=("_lsn", "_commit_ts")
        ).to_arrow()
        lsns = rows["_lsn"].to_numpy()
        commits = rows["_commit_ts"].cast(pa.int64()).to_numpy() / 1e6
        order = np.argsort(lsns, kind="stable")
        out[name] = (lsns[order], commits[order])
    return out


def timeline(points: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([p for p, _ in points], dtype=np.int64), np.array([t for _, t in points], dtype=float)


def staleness(lsns, commits, positions, times, grid, strict: bool) -> np.ndarray:  # type: ignore[no-untyped-def]
    """At each grid time: how long ago the oldest change the reader cannot see was committed (0: none). The reader
    sees changes below (``strict``) or up to its position."""
    oldest = np.append(np.minimum.accumulate(commits[::-1])[::-1], np.inf)  # of the changes from i on
    i = np.searchsorted(times, grid, side="right") - 1
    position = np.where(i >= 0, positions[np.maximum(i, 0)] if len(positions) else -1, -1)
    first = np.searchsorted(lsns, position, side="left" if strict else "right")  # the first change not seen
    return np.where(oldest[first] <= grid, grid - oldest[first], 0.0)


def visible_at(lsns, positions, times, strict: bool) -> np.ndarray:  # type: ignore[no-untyped-def]
    """When each change became visible (inf: not while watched)."""
    j = np.searchsorted(positions, lsns, side="right" if strict else "left")
    return np.where(j < len(times), times[np.minimum(j, len(times) - 1)] if len(times) else np.inf, np.inf)


def realtime(window: np.ndarray, made: np.ndarray, applied: np.ndarray) -> tuple[float, float, float]:
    """(applied/s, made/s, their ratio) over ``window``: made/s the least-squares slope of the count committed,
    applied/s that less the backlog's growth, the Theil-Sen slope (median of the pairwise slopes) of the count
    committed and not yet visible, sampled every 0.5 s."""
    made_n, applied_n = (np.searchsorted(np.sort(events), window, side="right") for events in (made, applied))
    made_rate = float(np.polyfit(window, made_n, 1)[0])
    t, backlog = window[::5], (made_n - applied_n)[::5]
    i, j = np.triu_indices(len(t), 1)
    growth = float(np.median((backlog[j] - backlog[i]) / (t[j] - t[i])))
    return made_rate - growth, made_rate, 1 - growth / made_rate


def source_changes(conn: psycopg.Connection) -> int:
    conn.execute("SELECT pg_stat_clear_snapshot()")
    query = "SELECT sum(n_tup_ins + n_tup_upd + n_tup_del) FROM pg_stat_user_tables WHERE relname = ANY(%s)"
    return int(conn.execute(query, (list(TABLES),)).fetchone()[0])


def cpu() -> tuple[float, float, float]:
    """CPU seconds so far: this process (the readers), its exited children (pgbench), the whole machine."""
    me, children, machine = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(CHILDREN), psutil.cpu_times()
    busy = sum(machine) - machine.idle - getattr(machine, "iowait", 0.0)
    return me.ru_utime + me.ru_stime, children.ru_utime + children.ru_stime, busy


def run(dsn: str, root: Path, files: list[str], args: argparse.Namespace, rate: float | None, seconds: float,
        worker: Worker, lake_reader: bool = False) -> dict:  # type: ignore[type-arg]
    """One load of ``seconds`` (at ``rate`` tx/s, or as fast as it goes), watched until the worker confirmed it."""
    watch, reader = CutWatch(root / "catalog.db"), LakeReader(root) if lake_reader else None
    watch.start()
    if reader is not None:
        reader.start()
        reader.ready.wait(30)
    limit = [] if rate is None else ["--rate", f"{rate:g}"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        start_lsn = parse_lsn(conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0])
        counted, worker_before, before = source_changes(conn), tree_cpu(worker.rss.proc), cpu()
        began, began_mono = time.time(), time.monotonic()
        load = subprocess.run(
            [pgbench(), "--no-vacuum", *files, *limit, "--time", f"{seconds:g}", "--client", str(args.oltp_clients),
             "--jobs", "1", "--max-tries", "10", dsn],
            capture_output=True, text=True, check=False,
        )
        ended, ended_mono, generated = time.time(), time.monotonic(), cpu()[1] - before[1]
        if load.returncode != 0:
            raise SystemExit(f"pgbench failed ({load.returncode}): {load.stderr.strip()[-2000:]}")
        caught_up = watch.wait_past(conn, SLOT)  # the cut is recorded by then
        worker_after, after, busy = tree_cpu(worker.rss.proc), cpu(), caught_up - began_mono
        counted = source_changes(conn) - counted
    if reader is not None:
        reader.done.set()
        reader.join()
    found = changes(lake_catalog.open_catalog("lake", f"sqlite:///{root}/catalog.db", str(root / "warehouse")),
                    start_lsn)
    grid = np.arange(began, ended, STEP)
    made = np.concatenate([c for _, c in found.values()])
    cuts, cut_times = timeline(watch.moves)
    def parsed(pattern: str, default: float = float("nan")) -> float:
        return float(m.group(1)) if (m := re.search(pattern, load.stdout)) else default
    out: dict = {  # type: ignore[type-arg]
        "changes": len(made), "counted": counted, "catch_up": caught_up - ended_mono, "seconds": ended - began,
        "tps": parsed(r"tps = ([\d.]+) \(without"), "failed": parsed(r"failed transactions: (\d+)"),
        "retried": parsed(r"transactions retried: (\d+)", 0), "lag": parsed(r"schedule lag: .* \(max ([\d.]+)\)") / 1e3,
        "cpu": [(sum(worker_after[:2]) - sum(worker_before[:2])) / busy, (after[2] - before[2]) / busy,
                generated / (ended_mono - began_mono), (after[0] - before[0]) / busy],
        "cut_every": np.diff(cut_times[(cut_times >= began) & (cut_times <= ended)]), "readers": {},
    }
    readers = {"gateway": {t: (cuts, cut_times) for t in TABLES}}
    if reader is not None:
        readers["pyiceberg"] = {t: timeline(reader.seen[t]) for t in TABLES}
    for label, lines in readers.items():
        strict, per_table, visible = label == "gateway", {}, []
        for table, (lsns, commits) in found.items():
            positions, times = lines[table]
            visible.append(visible_at(lsns, positions, times, strict))
            per_table[table] = (staleness(lsns, commits, positions, times, grid, strict), visible[-1] - commits)
        applied, out["made"], ratio = realtime(grid[grid >= began + WARM], made, np.concatenate(visible))
        out["readers"][label] = {"tables": per_table, "applied": applied, "ratio": ratio}
    return out


def ladder(dsn: str, root: Path, files: list[str], args: argparse.Namespace, worker: Worker) -> tuple:  # type: ignore[type-arg]
    """The highest rate sustained: pgbench keeps it (>= 97 %) and the worker keeps up (realtime ratio >= 0.97 at
    the gateway); and the steps tried, (rate, tx/s, ratio, kept)."""
    steps: list[tuple[float | None, float, float, bool]] = []
    rate = None
    for share in (None, 1.0, 0.8, 0.6, 0.4, 0.25):  # of the rate applied unthrottled
        if share is not None:
            rate = round(steps[0][1] * min(steps[0][2], 1.0) * share)
        step = run(dsn, root, files, args, rate, args.oltp_probe, worker)
        ratio = step["readers"]["gateway"]["ratio"]
        steps.append((rate, step["tps"], ratio, ratio >= SUSTAINED and step["tps"] >= SUSTAINED * (rate or 0)))
        if steps[-1][3]:
            break
    return rate, steps


def rows(dsn: str, root: Path, args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    began = time.monotonic()
    files = setup(dsn, root, args.oltp_warehouses)
    worker = Worker(config(root, dsn, list(TABLES), SLOT, extra=args.oltp_ingest), root / "oltp.log")
    try:
        worker.wait_for("streaming from slot", timeout=600)
        ready = time.monotonic() - began
        rate, steps = (args.oltp_rate, []) if args.oltp_rate else ladder(dsn, root, files, args, worker)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (RAW_SLOT,))
        logged = worker.log.stat().st_size
        main = run(dsn, root, files, args, rate, args.oltp_seconds, worker, lake_reader=True)
        compactions = [(float(m.group(2)), m.group(1)) for m in re.finditer(
            r"(public\.\w+): compacted: .*\(([\d.]+)s\)", worker.log.read_text()[logged:])]
        raw = main["changes"] / raw_stream(dsn, RAW_SLOT, SLOT, main["changes"])
        rss = worker.stop()
    finally:
        Worker.kill_all()
    out = []
    for reader in ("pyiceberg", "gateway"):
        for table in TABLES:
            stale, delays = (list(a) for a in main["readers"][reader]["tables"][table])
            note = f"{len(delays):,} changes; per change p99 {percentile(delays, 99):.2f} s" if delays \
                else "no changes (TPC-C only reads it)"
            out.append((f"staleness p50 / p99, {table}, {reader} reader",
                        f"{percentile(stale, 50):.2f} s / {percentile(stale, 99):.2f} s", "target p99 3 s", note))
    for reader in ("pyiceberg", "gateway"):
        r = main["readers"][reader]
        out.append((f"realtime ratio, {reader} reader: changes/s applied vs made, {main['tps']:,.0f} tx/s",
                    f"{r['applied']:,.0f}", f"{main['made']:,.0f} made", f"{r['ratio']:.3f} (target 0.97)"))
    gaps, (worker_cpu, machine, generator, readers) = main["cut_every"], main["cpu"]
    out += [
        (f"load: {args.oltp_warehouses} warehouses, {args.oltp_clients} clients, "
         + ("unthrottled" if rate is None else f"--rate {rate:g}") + f", {main['seconds']:.0f} s",
         f"{main['tps']:,.0f} tx/s", f"{main['failed']:.0f} failed, {main['retried']:.0f} retried",
         f"schedule lag max {main['lag']:.2f} s"),
        ("changes in the lake vs attempted on the source (pg_stat_user_tables)", f"{main['changes']:,}",
         f"{main['counted']:,}", f"{main['changes'] / max(1, main['counted']):.4f}"),
        ("the load's changes/s vs a raw pgoutput read of the same changes after it", f"{main['made']:,.0f}",
         f"{raw:,.0f} (raw read)", f"{main['made'] / raw:.2f}"),
        ("caught up after the load stopped", f"{main['catch_up']:.1f} s", "", ""),
        ("CPU from the load's start until caught up: worker / whole machine", f"{worker_cpu:.2f} cores",
         f"{machine:.2f} of {os.cpu_count()} cores", f"pgbench {generator:.2f}, the readers here {readers:.2f}"),
        ("consistent cut moved every (mean / p99 / max), commit_interval 1 s",
         f"{np.mean(gaps):.2f} s / {percentile(list(gaps), 99):.2f} s / {np.max(gaps):.2f} s", "", ""),
        ("state-table compactions on the writer's thread during the run: count / seconds",
         f"{len(compactions)} / {sum(c for c, _ in compactions):.1f} s",
         "longest {:.2f} s ({})".format(*max(compactions)) if compactions else "", ""),
        ("worker peak RSS", f"{rss / 2**20:,.0f} MiB", "", ""),
    ]
    for step_rate, tps, ratio, kept in steps:
        out.append(("ladder step: " + ("unthrottled" if step_rate is None else f"--rate {step_rate}")
                    + f", {args.oltp_probe:g} s", f"{tps:,.0f} tx/s", f"ratio {ratio:.3f}", "kept" if kept else ""))
    out.append(("set-up (schema, rows, worker's copy) / whole row",
                f"{ready:.0f} s / {time.monotonic() - began:.0f} s", "", ""))
    return out

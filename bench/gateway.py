"""Gateway benchmark: every figure is measured in one run against a baseline measured in the same run.

(a) TPC-H (DuckDB's tpch extension generates it) written to Iceberg: the 22 queries through the HTTP gateway vs.
    in-process DuckDB on the same Iceberg tables; per-query ratio and geometric mean.
(b) A federated join of a large Iceberg fact table with a PostgreSQL dimension under a selective filter vs. the
    same join with both tables local in DuckDB, and vs. fetching both into pandas and merging.
(c) A 1 M-row x 5-column result: rows/s as Arrow and as JSON through HTTP vs. psycopg fetching the same rows.
(d) p50/p99 latency of a small lake query with 1 and with 32 concurrent clients.
(e) p50/p99 of ``SELECT 1`` while 200 slowloris connections (request heads that never end) are held open, vs. the
    same query on the idle gateway.
(f) p50/p99 of ``SELECT 1`` from a well-behaved client while 10 hostile clients send the statements that used to
    stall the whole gateway (40,000 ``/**/``, 40,000 nested comments, 1 MiB of ``/**/``: PostgreSQL's parser is
    quadratic on them), and again with 2,000 idle connections without a token opened on top, vs. the same
    query on the idle gateway (issue 27.4: ratio <= 2). Its own gateway, with ``timeout = "10s"``: every
    hostile statement runs until that deadline, and is over soon after the row.

The gateway runs as ``lakegate serve`` in its own process, on an embedded PostgreSQL and a SQLite-backed Iceberg
catalog in a temporary directory, with its lake cache on (``--cache-bytes``, large enough for every table of the
run: what a dashboard's steady state sees). After each warm-up run the benchmark waits until the cache has no
load queued or running, so the timed runs read what the steady state reads. (a) and (b) are measured a second
time against a gateway with the cache off (``cache_bytes = 0``: every lake table read from Parquet).
Usage::

    pip install -e '.[bench]'
    python -m bench.gateway [--sf 1] [--facts 10000000] [--rows 1000000] [--repeat 3] [--cache-bytes 8GiB]
    python -m bench.gateway --only f     # one row (e and f need no TPC-H data: nothing is generated for them)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pandas as pd
import psycopg
import pyarrow as pa

from bench.common import machine, percentile, print_table, start_postgres, workdir
from lakegate.connectors.iceberg import catalog as lake_catalog


def _plain(table: pa.Table) -> pa.Table:
    """Arrow types pyiceberg writes (DuckDB hands out string views and large strings)."""
    fields = [
        pa.field(
            f.name,
            pa.string() if pa.types.is_string_view(f.type) or pa.types.is_large_string(f.type) else f.type,
        )
        for f in table.schema
    ]
    return table.cast(pa.schema(fields))


def _load(con: duckdb.DuckDBPyConnection, name: str) -> None:
    import duckdb_extensions

    duckdb_extensions.import_extension(name, con=con)
    con.execute(f"LOAD {name}")


#: TPC-H's char(n) columns (specification 1.4.1). The lake holds them as the ingest does: padded to n, with the
#: source type bpchar(n) recorded (lakegate.pgtypes), so the gateway answers with PostgreSQL's char semantics
CHARS = {
    "region": {"r_name": 25},
    "nation": {"n_name": 25},
    "part": {"p_mfgr": 25, "p_brand": 10, "p_container": 10},
    "supplier": {"s_name": 25, "s_phone": 15},
    "customer": {"c_phone": 15, "c_mktsegment": 10},
    "orders": {"o_orderstatus": 1, "o_orderpriority": 15, "o_clerk": 15},
    "lineitem": {"l_returnflag": 1, "l_linestatus": 1, "l_shipinstruct": 25, "l_shipmode": 10},
}


def write_lake(
    catalog: Any, name: str, data: pa.Table, pgtypes: dict[str, str] | None = None, namespace: str = "public"
) -> str:
    properties = {"lakegate.pgtypes": json.dumps(pgtypes, sort_keys=True)} if pgtypes else {}
    table = catalog.create_table(f"{namespace}.{name}", _plain(data).schema, properties=properties)
    table.append(_plain(data))
    return str(table.metadata_location)


def _padded_sql(name: str) -> str:
    """The TPC-H table ``name`` as the lake holds it on the official schema (char(n) values padded)."""
    chars = CHARS.get(name, {})
    if not chars:
        return f"SELECT * FROM {name}"
    replace = ", ".join(f"rpad({col}, {n}, ' ') AS {col}" for col, n in chars.items())
    return f"SELECT * REPLACE ({replace}) FROM {name}"


def timed(
    fn: Callable[[], Any],
    repeat: int,
    warm: Callable[[], None] | None = None,
    before: Callable[[], Any] | None = None,
) -> float:
    """Median seconds of ``repeat`` runs after one warm-up run (and ``warm()``); ``before()`` runs untimed
    before each run."""
    fn()
    if warm is not None:
        warm()
    runs = []
    for _ in range(repeat):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


class Gateway:
    """``lakegate serve`` in a child process."""

    def __init__(self, root: Path, dsn: str, cache_bytes: str, timeout: str = "600s") -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.cache_bytes = cache_bytes
        config = root / f"lakegate-{cache_bytes}-{timeout}.toml"
        config.write_text(
            f'[lake]\ncatalog_uri = "sqlite:///{root}/catalog.db"\nwarehouse = "{root}/warehouse"\n'
            f'[[sources]]\nname = "pg"\ndsn = "{dsn}"\nallow_privileged_role = true\n'
            f'[gateway]\nport = {self.port}\nmax_rows = 2000000\ntimeout = "{timeout}"\nworkers = 8\n'
            f'max_result_bytes = "4GiB"\ncache_bytes = "{cache_bytes}"\n'
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "lakegate", "serve", "--config", str(config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        self.client = httpx.Client(base_url=self.url, timeout=600)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if self.client.get("/healthz").status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError("lakegate serve did not start")

    def query(self, sql: str, fmt: str = "json", client: httpx.Client | None = None) -> bytes:
        response = (client or self.client).post("/v1/query", json={"sql": sql, "format": fmt})
        if response.status_code != 200:
            raise RuntimeError(f"{sql[:80]}: {response.status_code} {response.text[:300]}")
        return response.content

    def warm(self) -> None:
        """Wait until the lake cache has no load queued or running."""
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            cache = self.client.get("/v1/status").json().get("cache") or {}
            if not cache.get("loading"):
                return
            time.sleep(0.2)
        raise RuntimeError("the lake cache did not finish loading within 10 minutes")

    def cache(self) -> dict[str, Any]:
        return dict(self.client.get("/v1/status").json().get("cache") or {})

    def stop(self) -> None:
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(30)


def tpch(
    gateways: list[Gateway],
    local: duckdb.DuckDBPyConnection,
    native: duckdb.DuckDBPyConnection,
    queries: list[tuple[int, str]],
    repeat: int,
) -> None:
    """``local``: DuckDB on the same (padded) tables, trimming char columns in its views; ``native``: DuckDB on
    the varchar schema its tpch extension generates (no padding at all: the floor)."""
    rows = []
    ratios: list[list[float]] = [[] for _ in range(2 * len(gateways))]
    for number, sql in queries:
        want = native.execute(sql).fetchall()
        for engine, got in (("DuckDB, trimmed views", local.execute(sql).fetchall()),
                            ("the gateway", json.loads(gateways[0].query(sql))["rows"])):  # fmt: skip
            if len(got) != len(want):  # char(n) semantics must give the answer of the varchar schema
                print(f"Q{number:02d}: {engine} returned {len(got)} rows, the varchar schema {len(want)}")
        base = timed(lambda sql=sql: local.execute(sql).to_arrow_table(), repeat)
        floor = timed(lambda sql=sql: native.execute(sql).to_arrow_table(), repeat)
        row = [f"Q{number:02d}", f"{base * 1000:.0f} ms", f"{floor * 1000:.0f} ms"]
        for i, gateway in enumerate(gateways):
            ours = timed(lambda sql=sql, gateway=gateway: gateway.query(sql), repeat, gateway.warm)
            ratios[2 * i].append(ours / base)
            ratios[2 * i + 1].append(ours / floor)
            row += [f"{ours * 1000:.0f} ms", f"{ours / base:.2f}", f"{ours / floor:.2f}"]
        rows.append(tuple(row))
    geo = [f"{math.exp(sum(math.log(r) for r in rs) / len(rs)):.2f}" for rs in ratios]
    rows.append(("geometric mean", "", "", *[x for i in range(len(gateways)) for x in ("", *geo[2 * i : 2 * i + 2])]))
    headers = ["query", "DuckDB", "DuckDB varchar"] + [
        h for g in gateways for h in (f"gateway, cache {g.cache_bytes}", "ratio", "vs varchar")
    ]
    _print_wide(
        "(a) TPC-H (official schema: char(n) columns padded, typed bpchar) through the HTTP gateway vs. "
        "in-process DuckDB on the same Iceberg tables, char columns trimmed in its views (ratio; target <= 1.2), "
        "and vs. DuckDB on the varchar schema of its tpch extension (vs varchar); medians of runs",
        headers,
        rows,
    )


def _print_wide(title: str, headers: list[str], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[i])) for r in [tuple(headers), *rows]) for i in range(len(headers))]
    print(f"\n{title}")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)) + " |")


def federated(
    gateways: list[Gateway], local: duckdb.DuckDBPyConnection, catalog: Any, dsn: str, facts: int, repeat: int
) -> None:
    template = (
        "SELECT count(*) AS n, sum(f.amount) AS total FROM lake.public.{facts} f "
        "JOIN pg.public.dims d ON d.id = f.dim_id WHERE d.region = 'r7'"
    )
    with psycopg.connect(dsn) as conn:
        dims = pa.Table.from_pylist(
            [
                dict(zip(("id", "region"), r, strict=True))
                for r in conn.execute("SELECT id, region FROM dims").fetchall()
            ]
        )
    local.register("dims_arrow", dims)
    local.execute("CREATE TABLE dims_local AS SELECT * FROM dims_arrow")
    import duckdb_extensions

    duckdb_extensions.import_extension("postgres", con=local)
    local.execute("LOAD postgres_scanner")
    local.execute(f"ATTACH '{dsn}' AS pgl (TYPE postgres, READ_ONLY)")
    rows = []
    pandas_seconds = timed(lambda: with_pandas(catalog, dsn), 1)
    dims_sql = "SELECT count(*) FROM pg.public.dims WHERE region = 'r7'"
    dims_seconds = timed(lambda: gateways[0].query(dims_sql), repeat * 5)
    for name, label in (
        ("facts", "fact rows in random key order"),
        ("facts_by_dim", "fact table sorted by key"),
    ):
        sql = template.format(facts=name)
        local.execute(f"CREATE TABLE {name}_local AS SELECT * FROM {name}")
        local_sql = sql.replace(f"lake.public.{name}", f"{name}_local").replace(
            "pg.public.dims", "dims_local"
        )
        floor_sql = local_sql.replace("dims_local", "pgl.public.dims")
        floor = timed(lambda floor_sql=floor_sql: local.execute(floor_sql).fetchall(), repeat)
        base = timed(lambda local_sql=local_sql: local.execute(local_sql).fetchall(), repeat)
        rows.append(
            (
                f"{label}: in-process DuckDB, facts in memory, dimension read from PostgreSQL by the postgres "
                "extension (no gateway)",
                f"{floor * 1000:.0f} ms",
                f"{base * 1000:.0f} ms",
                f"{floor / base:.2f}",
            )
        )
        for gateway in gateways:
            ours = timed(lambda sql=sql, gateway=gateway: gateway.query(sql), repeat, gateway.warm)
            base = timed(lambda local_sql=local_sql: local.execute(local_sql).fetchall(), repeat)
            rows.append(
                (
                    f"{label}, cache {gateway.cache_bytes}: vs. both tables local in DuckDB (target <= 1.5)",
                    f"{ours * 1000:.0f} ms",
                    f"{base * 1000:.0f} ms",
                    f"{ours / base:.2f}",
                )
            )
            if name == "facts":
                rows.append(
                    (
                        f"{label}, cache {gateway.cache_bytes}: vs. fetch both into pandas and merge "
                        "(target <= 0.1)",
                        f"{ours * 1000:.0f} ms",
                        f"{pandas_seconds * 1000:.0f} ms",
                        f"{ours / pandas_seconds:.3f}",
                    )
                )
    # last (a write makes the cache back off that table): a server that writes all the time, whose dimension
    # the cache cannot vouch for, so it is read live by every query
    sql = template.format(facts="facts")
    local_sql = sql.replace("lake.public.facts", "facts_local").replace("pg.public.dims", "dims_local")
    with psycopg.connect(dsn, autocommit=True) as writer:
        busy = timed(
            lambda: gateways[0].query(sql),
            repeat,
            before=lambda: writer.execute("SELECT txid_current()"),
        )
    base = timed(lambda: local.execute(local_sql).fetchall(), repeat)
    rows.append(
        (
            f"fact rows in random key order, cache {gateways[0].cache_bytes}, PostgreSQL writing between queries "
            "(dimension read live): vs. both tables local in DuckDB",
            f"{busy * 1000:.0f} ms",
            f"{base * 1000:.0f} ms",
            f"{busy / base:.2f}",
        )
    )
    rows.append(
        (
            "the dimension's part alone: the filtered PostgreSQL count through the gateway (PostgreSQL route)",
            f"{dims_seconds * 1000:.1f} ms",
            "",
            "",
        )
    )
    print_table(
        f"(b) federated join: {facts:,}-row Iceberg fact table x 100,000-row PostgreSQL dimension, "
        "the filter keeps 1% of the dimension (ratio = gateway / baseline)",
        rows,
    )


def with_pandas(catalog: Any, dsn: str) -> tuple[int, float]:
    """The do-it-yourself way: fetch the fact table (pyiceberg) and the dimension (psycopg), merge in pandas."""
    fact_frame = catalog.load_table("public.facts").scan(selected_fields=("dim_id", "amount")).to_pandas()
    with psycopg.connect(dsn) as conn:
        dim_frame = pd.DataFrame(
            conn.execute("SELECT id, region FROM dims").fetchall(), columns=["id", "region"]
        )
    merged = fact_frame.merge(dim_frame, left_on="dim_id", right_on="id")
    chosen = merged[merged.region == "r7"]
    return len(chosen), float(chosen.amount.sum())


def wide(gateway: Gateway, dsn: str, rows: int, repeat: int) -> None:
    """Medians of ``repeat`` transfers after a warm-up (and, for the lake route, after the cache has loaded the
    table), each route and format against psycopg's median in the same run."""

    def psycopg_fetch() -> int:
        with psycopg.connect(dsn) as conn:
            return len(conn.execute("SELECT * FROM wide").fetchall())

    base = timed(psycopg_fetch, repeat)
    out = []
    for route, table in (("PostgreSQL route", "pg.public.wide"), ("lake route", "lake.public.wide")):
        for fmt in ("arrow", "json"):
            seconds = timed(
                lambda table=table, fmt=fmt: gateway.query(f"SELECT * FROM {table}", fmt), repeat, gateway.warm
            )
            out.append(
                (
                    f"{route}, {fmt}",
                    f"{rows / seconds:,.0f} rows/s",
                    f"{rows / base:,.0f} rows/s",
                    f"{base / seconds:.2f}",
                )
            )
    print_table(
        f"(c) a {rows:,}-row x 5-column result through HTTP vs. psycopg fetchall() from PostgreSQL "
        f"(ratio = gateway rows/s / psycopg rows/s; medians of {repeat} runs)",
        out,
    )


def latency(gateway: Gateway, local: duckdb.DuckDBPyConnection) -> None:
    gateway.query("SELECT n_name, n_regionkey FROM lake.public.nation WHERE n_nationkey = 7")
    gateway.warm()
    sql = "SELECT n_name, n_regionkey FROM lake.public.nation WHERE n_nationkey = 7"
    local_sql = "SELECT n_name, n_regionkey FROM nation WHERE n_nationkey = 7"

    def measure(clients: int, each: int) -> list[float]:
        samples: list[float] = []
        lock = threading.Lock()

        def run() -> None:
            with httpx.Client(base_url=gateway.url, timeout=60) as client:
                for _ in range(each):
                    start = time.perf_counter()
                    gateway.query(sql, client=client)
                    with lock:
                        samples.append(time.perf_counter() - start)

        threads = [threading.Thread(target=run) for _ in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return samples

    base = []
    for _ in range(200):
        start = time.perf_counter()
        local.execute(local_sql).fetchall()
        base.append(time.perf_counter() - start)
    rows = []
    for clients, each in ((1, 200), (32, 20)):
        samples = measure(clients, each)
        for q in (50, 99):
            ours, theirs = percentile(samples, q), percentile(base, q)
            rows.append(
                (
                    f"p{q}, {clients} client{'s' if clients > 1 else ''}",
                    f"{ours * 1000:.1f} ms",
                    f"{theirs * 1000:.1f} ms",
                    f"{ours / theirs:.1f}",
                )
            )
    print_table(
        "(d) latency of a small lake query (baseline: the same query in-process in DuckDB, one client)", rows
    )


class Loris:
    """``count`` connections that keep a request head open (a byte every few seconds, never the blank line),
    replaced as soon as the gateway closes one (after its read_timeout): a slowloris client."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.sockets: list[socket.socket] = []
        self.opened = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="loris", daemon=True)

    def _open(self) -> None:
        sock = socket.create_connection(("127.0.0.1", self.port))
        sock.sendall(b"POST /v1/query HTTP/1.1\r\nHost: bench\r\nX-Loris: ")
        sock.setblocking(False)
        self.sockets.append(sock)
        self.opened += 1

    def _alive(self, sock: socket.socket) -> bool:
        try:
            if sock.recv(4096) == b"":
                raise OSError("closed")
            return True
        except BlockingIOError:
            return True
        except OSError:
            sock.close()
            return False

    def _run(self) -> None:
        last_trickle = 0.0
        while not self.stopping.is_set():
            self.sockets = [s for s in self.sockets if self._alive(s)]
            while len(self.sockets) < self.count:
                self._open()
            if time.monotonic() - last_trickle > 2:
                for sock in self.sockets:
                    with contextlib.suppress(OSError):
                        sock.send(b"x")
                last_trickle = time.monotonic()
            self.stopping.wait(0.2)
        for sock in self.sockets:
            sock.close()

    def __enter__(self) -> Loris:
        self.thread.start()
        deadline = time.monotonic() + 30
        while len(self.sockets) < self.count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopping.set()
        self.thread.join(10)


def select_one_latencies(gateway: Gateway, duration: float, timeout: float) -> list[float]:
    """Seconds per ``SELECT 1`` from one client, back to back for ``duration`` seconds."""
    out = []
    with httpx.Client(base_url=gateway.url, timeout=timeout) as client:
        until = time.monotonic() + duration
        while time.monotonic() < until:
            start = time.perf_counter()
            gateway.query("SELECT 1 AS x", client=client)
            out.append(time.perf_counter() - start)
    return out


def slow_clients(gateway: Gateway, held: int = 200, seconds: float = 12.0) -> None:
    """(e) ``SELECT 1`` with ``held`` slowloris connections open vs. on an idle gateway, in the same run; each
    measurement lasts longer than the gateway's read_timeout (10 s), so the loris connections are closed and
    opened again while it runs."""

    def measure(duration: float = seconds) -> list[float]:
        return select_one_latencies(gateway, duration, timeout=60)

    measure(1.0)  # warm: plan cache, connections
    idle = measure()
    with Loris(gateway.port, held) as loris:
        busy = measure()
        opened = loris.opened
    rows = [
        (
            f"p{q}, {held} slow-header connections held open",
            f"{percentile(busy, q) * 1000:.1f} ms",
            f"{percentile(idle, q) * 1000:.1f} ms",
            f"{percentile(busy, q) / percentile(idle, q):.2f}",
        )
        for q in (50, 99)
    ]
    print_table(
        f"(e) SELECT 1 through HTTP while slowloris connections are held open ({opened} opened in all: each is "
        "closed after read_timeout and opened again) vs. the same query on the idle gateway (target <= 1.5)",
        rows,
    )


#: The statements that stalled the whole gateway (issue 27.4): libpg_query rescans a run of operator characters at
#: every comment start in it, holding the interpreter lock (1 MiB of ``/**/``: about 20 minutes).
HOSTILE = (
    "SELECT 1 AS x" + "/**/" * 40_000,
    "SELECT 1 AS x " + "/*" * 40_000 + "*/" * 40_000,
    "SELECT 1 AS x" + "/**/" * (((1 << 20) - 64) // 4),
)


class Hostile:
    """``clients`` threads in a child process of their own (so that their work in Python does not slow the
    measuring client down), each sending the :data:`HOSTILE` statements in turn, the next as soon as the gateway
    answers the last, whatever it answers; for ``seconds`` at most, or until stopped (the child's stdin closes)."""

    def __init__(self, url: str, clients: int, seconds: float) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", f"import bench.gateway as b; b.hostile_clients({url!r}, {clients}, {seconds})"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            cwd=Path(__file__).resolve().parent.parent,
        )
        self.answers: dict[str, int] = {}

    def __enter__(self) -> Hostile:
        assert self.process.stdout is not None
        self.process.stdout.readline()  # every client has sent its first statement
        return self

    def __exit__(self, *exc: object) -> None:
        out, _ = self.process.communicate(timeout=180)  # closes stdin: the clients stop after their answer
        self.answers = json.loads(out.decode().strip().splitlines()[-1])


def hostile_clients(url: str, clients: int, seconds: float) -> None:
    """The child process of :class:`Hostile`: prints a line once every client sent a statement, then the
    answers' status codes as JSON when stdin closes."""
    stopping = threading.Event()
    answers: dict[str, int] = {}
    lock = threading.Lock()
    started = threading.Barrier(clients + 1)

    def run(index: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as client:
            turn = index
            first = True
            while not stopping.is_set():
                request = client.build_request("POST", "/v1/query", json={"sql": HOSTILE[turn % len(HOSTILE)]})
                if first:
                    started.wait()
                    first = False
                try:
                    status = str(client.send(request).status_code)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                with lock:
                    answers[status] = answers.get(status, 0) + 1
                turn += 1

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    started.wait()
    time.sleep(0.5)  # the statements are on their way
    print("started", flush=True)
    threading.Thread(target=lambda: (sys.stdin.read(), stopping.set()), daemon=True).start()
    stopping.wait(seconds)
    stopping.set()
    for thread in threads:
        thread.join(150)
    print(json.dumps(answers), flush=True)


class Idle:
    """``count`` TCP connections that never send a byte, opened once and held (the gateway closes what it will)."""

    def __init__(self, port: int, count: int) -> None:
        self.port = port
        self.count = count
        self.sockets: list[socket.socket] = []

    def held(self) -> int:
        """How many the gateway has not closed."""
        count = 0
        for sock in self.sockets:
            try:
                count += sock.recv(1) != b""
            except BlockingIOError:
                count += 1
            except OSError:
                pass
        return count

    def __enter__(self) -> Idle:
        for _ in range(self.count):
            sock = socket.create_connection(("127.0.0.1", self.port))
            sock.setblocking(False)
            self.sockets.append(sock)
        return self

    def __exit__(self, *exc: object) -> None:
        for sock in self.sockets:
            sock.close()


def stalls(
    root: Path, dsn: str, seconds: float = 30.0, clients: int = 10, idle: int = 2000, rounds: int = 3
) -> None:
    """(f) ``SELECT 1`` from one well-behaved client while ``clients`` hostile clients send :data:`HOSTILE` (and
    then with ``idle`` connections without a token opened too) vs. on the idle gateway, in the same run:
    ``seconds`` of each, in ``rounds`` alternating phases."""
    gateway = Gateway(root, dsn, "0", timeout="10s")
    try:

        def measure(duration: float = seconds) -> list[float]:
            return select_one_latencies(gateway, duration, timeout=120)

        measure(2.0)  # warm: plan cache, connections, the parser process
        quiet: list[float] = []
        busy: list[float] = []
        answers: dict[str, int] = {}
        # idle and hostile phases in turn, so that whatever else the machine does weighs on both alike; a hostile
        # phase ends when every hostile client has its last answer (the gateway has nothing of theirs left)
        for _ in range(rounds):
            quiet += measure(seconds / rounds)
            with Hostile(gateway.url, clients, seconds) as hostile:
                busy += measure(seconds / rounds)
            for status, count in hostile.answers.items():
                answers[status] = answers.get(status, 0) + count
        # then with the idle connections on top, measured once they are open (within read_timeout)
        with Hostile(gateway.url, clients, seconds), Idle(gateway.port, idle) as connections:
            crowded = measure(min(seconds / rounds, 8.0))
            kept = connections.held()
        rows = []
        for label, samples in (
            (f"{clients} hostile clients", busy),
            (f"{clients} hostile clients + {idle:,} idle connections ({kept:,} kept open)", crowded),
        ):
            for q in (50, 99):
                rows.append(
                    (
                        f"p{q}, {label}",
                        f"{percentile(samples, q) * 1000:.1f} ms",
                        f"{percentile(quiet, q) * 1000:.1f} ms",
                        f"{percentile(samples, q) / percentile(quiet, q):.2f}",
                    )
                )
        print_table(
            f"(f) SELECT 1 through HTTP ({len(busy)} and {len(crowded)} samples) while hostile clients send "
            f"statements that stalled the gateway (answers: {answers}) vs. the same query on the idle gateway "
            f"({len(quiet)} samples; target p99 <= 2)",
            rows,
        )
    finally:
        gateway.stop()


def prepare(root: Path, dsn: str, sf: float, facts: int, rows: int) -> tuple[Any, list[tuple[int, str]]]:
    catalog = lake_catalog.open_catalog("lake", f"sqlite:///{root}/catalog.db", str(root / "warehouse"))
    catalog.create_namespace("public")
    gen = duckdb.connect()
    _load(gen, "tpch")
    started = time.perf_counter()
    gen.execute(f"CALL dbgen(sf={sf})")
    queries = [(int(n), q) for n, q in gen.execute("SELECT query_nr, query FROM tpch_queries()").fetchall()]
    catalog.create_namespace("native")
    for (name,) in gen.execute("SHOW TABLES").fetchall():
        pgtypes = {col: f"bpchar({n})" for col, n in CHARS.get(name, {}).items()}
        write_lake(catalog, name, gen.execute(_padded_sql(name)).to_arrow_table(), pgtypes)
        write_lake(catalog, name, gen.execute(f"SELECT * FROM {name}").to_arrow_table(), namespace="native")
    print(
        f"TPC-H sf={sf} generated and written to Iceberg in {time.perf_counter() - started:.0f} s", flush=True
    )
    started = time.perf_counter()
    gen.execute(
        f"CREATE TABLE facts AS SELECT range AS id, (hash(range) % 100000)::INT + 1 AS dim_id, "
        f"(range % 10000) / 100.0 AS amount, TIMESTAMP '2024-01-01' + to_seconds(range) AS at "
        f"FROM range({facts})"
    )
    write_lake(catalog, "facts", gen.execute("SELECT * FROM facts").to_arrow_table())
    write_lake(catalog, "facts_by_dim", gen.execute("SELECT * FROM facts ORDER BY dim_id").to_arrow_table())
    write_lake(
        catalog,
        "wide",
        gen.execute(
            f"SELECT range AS id, (range % 1000)::INT AS a, 'text ' || range AS b, "
            f"((range % 100000)::DECIMAL(12,2) / 100)::DECIMAL(12,2) AS c, "
            f"TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(range) AS d FROM range({rows})"
        ).to_arrow_table(),
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE dims (id int PRIMARY KEY, region text, label text)")
        conn.execute(
            "INSERT INTO dims SELECT g, 'r' || (g / 1000), 'dimension row ' || g "
            "FROM generate_series(1, 100000) g"
        )
        conn.execute(
            "CREATE TABLE wide (id bigint PRIMARY KEY, a int, b text, c numeric(12,2), d timestamptz)"
        )
        conn.execute(
            f"INSERT INTO wide SELECT g, g % 1000, 'text ' || g, (g % 100000) / 100.0, "
            f"timestamptz '2024-01-01 00:00:00+00' + g * interval '1 second' FROM generate_series(0, {rows - 1}) g"
        )
        conn.execute("VACUUM ANALYZE")
    print(
        f"fact table ({facts:,} rows), wide table ({rows:,} rows) and dimension ready in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )
    return catalog, queries


def local_duckdb(catalog: Any, namespace: str = "public") -> duckdb.DuckDBPyConnection:
    """In-process DuckDB with a view over each Iceberg table (the baseline engine); the views of the TPC-H tables
    trim the padding of their char(n) columns, which is how DuckDB gives char(n) data PostgreSQL's answers."""
    con = duckdb.connect()
    for name in ("avro", "iceberg"):
        _load(con, name)
    for _namespace, name in catalog.list_tables(namespace):
        location = catalog.load_table(f"{namespace}.{name}").metadata_location
        chars = CHARS.get(name, {}) if namespace == "public" else {}
        trim = f" REPLACE ({', '.join(f'rtrim({c}) AS {c}' for c in chars)})" if chars else ""
        con.execute(f"CREATE VIEW {name} AS SELECT *{trim} FROM iceberg_scan('{location}')")
    return con


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sf", type=float, default=1.0, help="TPC-H scale factor")
    parser.add_argument("--facts", type=int, default=10_000_000, help="rows of the fact table in (b)")
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows of the result in (c)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per measurement (after a warm-up)")
    parser.add_argument("--skip", default="", help="parts to skip, e.g. 'b,d'")
    parser.add_argument("--only", default="", help="the only parts to run, e.g. 'f' (default: all)")
    parser.add_argument("--stall-seconds", type=float, default=30.0, help="length of each measurement of (f)")
    parser.add_argument("--cache-bytes", default="8GiB", help="[gateway] cache_bytes of the gateway measured")
    parser.add_argument(
        "--no-uncached", action="store_true", help="do not measure (a) and (b) again with the cache off"
    )
    args = parser.parse_args()
    root = workdir("lakegate-bench-gw-")
    print(f"lakegate gateway benchmark on {machine()}; work directory {root}", flush=True)
    pg = start_postgres(root)
    with psycopg.connect(pg.dsn(), autocommit=True) as admin:
        admin.execute("CREATE DATABASE bench")
    dsn = pg.dsn("bench")
    gateways: list[Gateway] = []
    parts = set(args.only.split(",")) if args.only else set("abcdef") - set(args.skip.split(","))
    try:
        if parts & set("abcd"):
            catalog, queries = prepare(root, dsn, args.sf, args.facts, args.rows)
            local = local_duckdb(catalog)
        if parts & set("abcde"):
            gateways.append(Gateway(root, dsn, args.cache_bytes))
        if parts & set("ab") and not args.no_uncached:
            gateways.append(Gateway(root, dsn, "0"))
        if "a" in parts:
            tpch(gateways, local, local_duckdb(catalog, "native"), queries, args.repeat)
        if "b" in parts:
            federated(gateways, local, catalog, dsn, args.facts, args.repeat)
        if "c" in parts:
            wide(gateways[0], dsn, args.rows, args.repeat)
        if "d" in parts:
            latency(gateways[0], local)
        if "e" in parts:
            slow_clients(gateways[0])
        if "f" in parts:
            stalls(root, dsn, args.stall_seconds)
        if gateways:
            print(f"\nlake cache at the end: {gateways[0].cache()}")
    finally:
        for gateway in gateways:
            gateway.stop()
        pg.stop("immediate")
        if not os.environ.get("LAKEGATE_BENCH_KEEP"):
            import shutil

            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

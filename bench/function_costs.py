"""How the cost and the output of each DuckDB function grow with its arguments: the measurement behind the lake
route's argument bounds (:mod:`lakegate.gateway.dialect_bounds`).

DuckDB checks for an interrupt between vectors (2048 rows) and not at all while it folds a constant expression
at plan time, so one call of a function whose cost is super-linear in its arguments, or whose output is much
larger than its input, can hold a query past its time limit for as long as the call takes. This script times
every scalar function of ``duckdb_functions()`` that the guard allows, each overload with arguments of growing
size ``n`` (strings of n characters, lists of n elements, counts and positions n, time ranges n units long),
and prints those whose time grows faster than their input (the exponent of t(10 n)/t(n)) or whose output is many
times their input. Each call runs in a child process that is killed past ``--kill`` seconds (the call cannot be
interrupted: that is the point). Usage::

    python -m bench.function_costs [--sizes 1000,10000,100000] [--kill 5] [--only lpad,levenshtein] [--bounded]

With ``--bounded`` the functions carry the lake route's bounds: a bounded call past its budget is an error, so
what is still flagged is what the bounds leave (see the module doc of pgbounds for why).
"""

from __future__ import annotations

import argparse
import itertools
import math
import multiprocessing as mp
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import duckdb

from lakegate.connectors.duckdb import pgbounds
from lakegate.gateway import functions

SKIPPED = ("LAMBDA", "MAP", "STRUCT", "GEOMETRY", "VARIANT", "UNION", "AGGREGATE_STATE", "BIGNUM", "TIME_NS")
_INTS = {"TINYINT": 100, "UTINYINT": 200, "SMALLINT": 30000, "USMALLINT": 60000}


@dataclass
class Overload:
    name: str
    types: list[str]

    def label(self) -> str:
        return f"{self.name}({', '.join(self.types)})"


def argument(kind: str, n: int, position: int, uniform: bool = False) -> str | None:
    """An SQL expression of type ``kind`` whose size is ``n`` (None: a type this script does not build). Texts
    are mixed (letters, separators, wildcards) or ``uniform`` (one letter: no two arguments share one, the worst
    case of the similarity measures)."""
    kind = kind.upper()  # built-ins by their full names: with --bounded the short ones are the gateway's
    if any(kind.startswith(s) for s in SKIPPED):
        return None
    # each argument its own text (a rotation of the same characters): equal arguments short-cut some functions
    unit = "ab,%_ c"[position % 7 :] + "ab,%_ c"[: position % 7] if not uniform else "xyzuvw"[position % 6]
    text = f"left(system.main.repeat('{unit}', {n // 7 + 1}), {n})"
    if kind.endswith("[]") or kind.endswith("[ANY]"):
        inner = kind[: kind.rindex("[")]
        if inner in ("VARCHAR", "ANY", "T", "K", "V"):
            return f"list_transform(system.main.range({n}), x -> 'v' || x)"
        if inner.endswith("[]"):
            return f"[system.main.range({n})]"
        cast = "" if inner in ("BIGINT", "ANY", "T") else f"::{inner}[]"
        return f"system.main.range({n}){cast}" + ("" if not kind.endswith("[ANY]") else f"::{inner}[{n}]")
    if kind in ("VARCHAR", "ANY", "T", "K", "V"):
        return text
    if kind == "JSON":
        return f"('[' || system.main.repeat('1,', {n // 2}) || '1]')::JSON"
    if kind == "BLOB":
        return f"{text}::BLOB"
    if kind == "BIT":
        return f"system.main.repeat('10', {n // 2})::BIT"
    if kind == "INTERVAL":
        return "INTERVAL '1 minute'"
    if kind in _INTS:
        return f"{min(n, _INTS[kind])}::{kind}"
    if "INT" in kind or kind in ("DOUBLE", "FLOAT", "DECIMAL"):
        return f"{n}::{'DECIMAL(18,3)' if kind == 'DECIMAL' else kind}"
    if kind == "BOOLEAN":
        return "true"
    if kind in ("DATE", "TIMESTAMP", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP_NS"):
        offset = f" + to_minutes({n})" if position else ""
        return f"CAST(TIMESTAMP '2000-01-01'{offset} AS {kind})"
    if kind in ("TIME", "TIME WITH TIME ZONE"):
        return f"CAST(TIME '01:00' AS {kind})"
    if kind == "UUID":
        return "uuid()"
    return None


def quote(name: str) -> str:
    return name if name.isidentifier() else '"' + name + '"'


def overloads(only: set[str]) -> list[Overload]:
    con = duckdb.connect()
    engine = frozenset(
        r[0] for r in con.execute("SELECT DISTINCT function_name FROM duckdb_functions()").fetchall()
    )
    rows = con.execute(
        "SELECT DISTINCT function_name, parameter_types, varargs FROM duckdb_functions() "
        "WHERE function_type = 'scalar' ORDER BY ALL"
    ).fetchall()
    return [
        Overload(name, list(types) + ([varargs, varargs] if varargs else []))
        for name, types, varargs in rows
        if functions.allowed(name.lower(), engine)
        and (not only or name in only)
        and not name.startswith("!__")
    ]


def _worker(conn: Connection, interrupt: float, bounded: bool) -> None:
    con = duckdb.connect(config={"threads": 1})
    if bounded:  # the gateway's bounds (lakegate.connectors.duckdb.pgbounds): what is left flagged has none
        pgbounds.register(con)
    while True:
        job = conn.recv()
        if job is None:
            return
        setup, query = job
        timer = threading.Timer(interrupt, con.interrupt)  # a call that stops for it is not a problem
        try:
            con.execute(f"CREATE OR REPLACE TEMP TABLE args AS {setup}")
            size = con.execute("SELECT * FROM args").to_arrow_table().nbytes
            start = time.perf_counter()
            timer.start()
            out = con.execute(query).to_arrow_table().nbytes
            conn.send(("ok", time.perf_counter() - start, size, out))
        except duckdb.InterruptException:
            conn.send(("interrupted", time.perf_counter() - start, 0, 0))
        except Exception as exc:  # noqa: BLE001 - reported, not raised: most functions refuse some arguments
            conn.send(("error", 0.0, 0, str(exc).splitlines()[0][:80]))
        finally:
            timer.cancel()


class Runner:
    """One child process that runs calls; killed and replaced when a call takes longer than ``kill`` s."""

    def __init__(self, kill: float, bounded: bool) -> None:
        self.kill = kill
        self.bounded = bounded
        self._start()

    def _start(self) -> None:
        self.conn, child = mp.Pipe()
        self.proc = mp.Process(target=_worker, args=(child, self.kill / 4, self.bounded), daemon=True)
        self.proc.start()

    def run(self, setup: str, query: str) -> tuple[str, float, int, Any]:
        self.conn.send((setup, query))
        if self.conn.poll(self.kill):
            result: tuple[str, float, int, Any] = self.conn.recv()
            return result
        self.proc.kill()
        self.proc.join()
        self._start()
        return ("killed", self.kill, 0, 0)

    def close(self) -> None:
        self.conn.send(None)
        self.proc.join(5)


def measure(
    runner: Runner, overload: Overload, sizes: list[int], grown: int | None, uniform: bool
) -> list[tuple[str, float, int, Any]]:
    """The calls of ``overload`` with argument ``grown`` (None: every argument) of each size, the others of
    size 2 (a two-character string, the number 2, a list of two elements)."""
    out = []
    for n in sizes:
        args = [argument(t, n if grown in (None, i) else 2, i, uniform) for i, t in enumerate(overload.types)]
        if any(a is None for a in args):
            return []
        setup = "SELECT " + (", ".join(f"{a} AS a{i}" for i, a in enumerate(args)) or "1 AS a0")
        call = f"{quote(overload.name)}({', '.join(f'a{i}' for i in range(len(args)))})"
        result = runner.run(setup, f"SELECT {call} AS r FROM args")
        out.append(result)
        if result[0] not in ("ok", "interrupted"):
            break
    return out


def verdict(results: list[tuple[str, float, int, Any]], sizes: list[int]) -> str | None:
    """Why the overload is bounded ("super-linear", "amplifies", "killed"), or None."""
    if any(r[0] == "killed" for r in results):
        return "killed"
    ok = [r for r in results if r[0] == "ok"]
    reasons = []
    if len(ok) >= 2 and ok[-1][1] > 0.05:
        exponent = math.log10(max(ok[-1][1], 1e-6) / max(ok[-2][1], 1e-6))
        if exponent > 1.4:
            reasons.append(f"super-linear (t x{10**exponent:.0f} for n x10)")
    if len(ok) == len(sizes) and ok[-1][3] > 64 * max(ok[-1][2], 1) and ok[-1][3] >= sizes[-1]:
        reasons.append(f"amplifies (out {ok[-1][3] / max(ok[-1][2], 1):.0f}x in)")
    return "; ".join(reasons) or None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--kill", type=float, default=5.0)
    parser.add_argument("--only", default="")
    parser.add_argument("--start", default="", help="skip the functions whose name sorts before this one")
    parser.add_argument("--all", action="store_true", help="print every overload, not only the flagged ones")
    parser.add_argument(
        "--bounded", action="store_true", help="with the lake route's bounds on the functions"
    )
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    runner = Runner(options.kill, options.bounded)
    try:
        for overload in overloads(set(filter(None, options.only.split(",")))):
            if overload.name < options.start:
                continue
            growths = [None, *range(len(overload.types))] if len(overload.types) > 1 else [None]
            for grown, uniform in itertools.product(growths, (False, True)):
                if uniform and "VARCHAR" not in overload.types:
                    continue
                results = measure(runner, overload, sizes, grown, uniform)
                why = verdict(results, sizes)
                if why or options.all:
                    times = " ".join(f"{r[1]:.3f}s/{r[3] if r[0] == 'error' else r[0]}" for r in results)
                    what = ("all" if grown is None else f"arg {grown + 1}") + ("/u" if uniform else "")
                    print(f"{overload.label():50} {what:6} {why or '-':40} {times}", flush=True)
    finally:
        runner.close()


if __name__ == "__main__":
    main()

"""Run generated queries three ways and compare: PostgreSQL through psycopg (the specification), the gateway on
``pg.*``, the gateway on ``lake.*`` (the same rows, replicated by the real ingest worker), and — for statements
over several tables — federated (the first table from PostgreSQL, the others from the lake). Table-less
statements run once through the gateway. Answers are compared by :func:`tests.answers_harness.compare`: column
names, PostgreSQL type names, exact values, order where the statement orders, SQLSTATEs where PostgreSQL raises.

A refusal (400, SQLSTATE 0A000, the gateway's own words) is counted, not failed: the fuzzer asks for the same
answer *or a clear error*. Anything else that differs is minimised (:mod:`tests.fuzz.shrink`) and reported.
"""

from __future__ import annotations

import random
import re
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.answers_harness import (
    DIFFERING,
    IDENTICAL,
    REFUSED,
    Answer,
    Query,
    compare,
    from_gateway,
    from_postgres,
    infinities,
    ordered,
    unordered_columns,
)
from tests.fuzz.generate import Generator, Tables
from tests.fuzz.known import known
from tests.fuzz.shrink import shrink
from tests.fuzz.types import OF_TYPE
from tests.gateway_fixtures.harness import database, gateway_settings, live_server
from tests.lakehelp import running_worker, wait_caught_up

HERE = Path(__file__).parent
DATA = HERE / "data.sql"
REGRESSIONS = HERE / "regressions.sql"
_TABLE = re.compile(r"\{(\w+)\}")
KNOWN = "known"  #: a difference of a class tests/fuzz/known.py lists


@dataclass
class Env:
    conn: psycopg.Connection
    client: httpx.Client
    tables: Tables
    type_names: dict[int, str]


@contextmanager
def environment(server: Any) -> Iterator[Env]:
    """The fuzzer's tables in a fresh database of ``server``, replicated into a fresh lake, and a gateway."""
    lake_dir = Path(tempfile.mkdtemp(prefix="lakegate-fuzz-"))
    with database(server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(DATA.read_text())
        tables = catalog(conn)
        settings = gateway_settings(dsn, lake_dir, [f"public.{t}" for t in sorted(tables)])
        with running_worker(settings):
            wait_caught_up(conn)
        with live_server(settings) as live, live.client() as client:
            infinities(conn)
            conn.execute("SET statement_timeout = '20s'")
            names = {
                oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()
            }
            yield Env(conn, client, tables, names)


def catalog(conn: psycopg.Connection) -> Tables:
    """Every fuzz table's columns with their families, read from PostgreSQL's catalog."""
    rows = conn.execute(
        "SELECT c.relname, a.attname, t.typname FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_type t ON t.oid = a.atttypid WHERE c.relname LIKE 'fz\\_%' AND c.relkind = 'r' "
        "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY c.relname, a.attnum"
    ).fetchall()
    tables: Tables = {}
    for table, column, typname in rows:
        tables.setdefault(table, []).append((column, OF_TYPE[typname]))
    return tables


@dataclass
class Finding:
    route: str
    template: str
    why: str
    minimal: str = ""


@dataclass
class Score:
    queries: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)  #: per query: its worst outcome over the routes
    routes: dict[str, Counter[str]] = field(default_factory=dict)
    postgres_errors: int = 0
    refusals: Counter[str] = field(default_factory=Counter)
    findings: list[Finding] = field(default_factory=list)
    known: Counter[str] = field(default_factory=Counter)  #: known differences (tests/fuzz/known.py) by class
    seconds: float = 0.0

    def line(self) -> str:
        o = self.outcomes
        return (
            f"{self.queries} queries in {self.seconds:.0f} s: identical {o[IDENTICAL]}, refused with a reason "
            f"{o[REFUSED]}, differing {o[DIFFERING]} and known differences {o[KNOWN]} (PostgreSQL raised an error in "
            f"{self.postgres_errors}, the same SQLSTATE counts as identical)"
        )

    def report(self) -> str:
        lines = [self.line()]
        for route, counts in sorted(self.routes.items()):
            lines.append(
                f"  {route:10} identical {counts[IDENTICAL]}, refused {counts[REFUSED]}, known {counts[KNOWN]}, "
                f"differing {counts[DIFFERING]}"
            )
        if self.known:
            lines.append("  known differences (tests/fuzz/known.py):")
            lines += [f"    {n:4} x {what}" for what, n in self.known.most_common()]
        if self.refusals:
            lines.append("  most frequent refusals:")
            lines += [f"    {n:4} x {why[:130]}" for why, n in self.refusals.most_common(12)]
        for f in self.findings:
            lines.append(f"  DIFFERING [{f.route}] {f.minimal or f.template}\n      {f.why[:400]}")
        return "\n".join(lines)


def routes_of(template: str) -> dict[str, str]:
    """The gateway statements of ``template`` by route name."""
    query = Query("fuzz", 0, template)
    names = set(_TABLE.findall(template))
    if not names:
        return {"tableless": template}
    out = {"pg": query.on("pg.public", names), "lake": query.on("lake.public", names)}
    if len(_TABLE.findall(template)) >= 2:
        count = iter(range(1000))
        out["federated"] = _TABLE.sub(
            lambda m: f"{'pg' if next(count) == 0 else 'lake'}.public.{m.group(1)}", template
        )
    return out


def gateway_answer(env: Env, sql: str) -> Answer:
    """The gateway's answer; a broken connection (the server failed mid-answer) is one too."""
    try:
        return from_gateway(env.client, sql)
    except httpx.HTTPError as exc:
        return Answer(error=f"{type(exc).__name__}: {exc}", status=599)


def postgres_answer(env: Env, template: str) -> Answer:
    names = set(_TABLE.findall(template))
    return from_postgres(env.conn, Query("fuzz", 0, template).on("public", names), env.type_names)


def check(env: Env, template: str, want: Answer | None = None) -> dict[str, tuple[str, str]]:
    """(outcome, why) per route of ``template``."""
    plain = Query("fuzz", 0, template).on("public", set(_TABLE.findall(template)))
    want = want or postgres_answer(env, template)
    in_order, unordered = ordered(plain), unordered_columns(plain)
    out = {}
    for route, sql in routes_of(template).items():
        got = gateway_answer(env, sql)
        out[route] = compare(want, got, in_order, may_refuse=True, unordered=unordered)
    return out


def minimise(env: Env, template: str, route: str) -> tuple[str, str]:
    """The smallest variant of ``template`` that still differs on ``route``, and how it differs. PostgreSQL
    must answer each variant as it answered the original: rows, or an error with the same SQLSTATE."""
    first = postgres_answer(env, template)

    def still(candidate: str) -> bool:
        want = postgres_answer(env, candidate)
        if (want.error is None) != (first.error is None) or want.sqlstate != first.sqlstate:
            return False
        sql = routes_of(candidate).get(route)
        if sql is None:
            return False
        plain = Query("fuzz", 0, candidate).on("public", set(_TABLE.findall(candidate)))
        got = gateway_answer(env, sql)
        return compare(want, got, ordered(plain), True, unordered_columns(plain))[0] == DIFFERING

    minimal = shrink(template, still)
    return minimal, check(env, minimal).get(route, ("", ""))[1]


def run(
    env: Env,
    seed: int,
    queries: int | None = None,
    seconds: float | None = None,
    minimise_findings: bool = True,
) -> Score:
    """Generate and check queries from ``seed`` until ``queries`` ran or ``seconds`` passed."""
    generator = Generator(random.Random(seed), env.tables)
    score = Score()
    start = time.monotonic()
    while (queries is None or score.queries < queries) and (
        seconds is None or time.monotonic() - start < seconds
    ):
        template = generator.query()
        check_one(env, template, score, minimise_findings)
    score.seconds = time.monotonic() - start
    return score


def check_one(env: Env, template: str, score: Score, minimise_findings: bool = True) -> None:
    want = postgres_answer(env, template)
    score.queries += 1
    score.postgres_errors += want.error is not None
    results = check(env, template, want)
    worst = IDENTICAL
    for route, (outcome, why) in results.items():
        counted = KNOWN if outcome == DIFFERING and known(template, why) else outcome
        score.routes.setdefault(route, Counter())[counted] += 1
        if outcome == REFUSED:
            score.refusals[re.sub(r"\d+", "N", why.split(";")[0])] += 1
            worst = REFUSED if worst == IDENTICAL else worst
        elif outcome == DIFFERING and known(template, why):
            score.known[known(template, why) or ""] += 1
            worst = KNOWN if worst != DIFFERING else worst
        elif outcome == DIFFERING:
            worst = DIFFERING
            minimal, minimal_why = minimise(env, template, route) if minimise_findings else ("", "")
            score.findings.append(Finding(route, template, minimal_why or why, minimal))
    score.outcomes[worst] += 1


def regressions() -> list[str]:
    """The saved minimal queries (one per line; ``--`` lines say what each found)."""
    if not REGRESSIONS.exists():
        return []
    return [
        line.strip()
        for line in REGRESSIONS.read_text().splitlines()
        if line.strip() and not line.startswith("--")
    ]

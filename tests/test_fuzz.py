"""The differential fuzzer in CI (issue 28.2): a fixed seed's generated queries, and every saved regression, on
PostgreSQL and through the gateway on ``pg.*``, ``lake.*`` and federated; no silent difference and no 5xx.
``python -m tests.fuzz --minutes N --seed S`` runs it for longer (see tests/fuzz/__init__.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from lakegate.gateway import functions
from tests.fuzz import functions as function_table
from tests.fuzz import types
from tests.fuzz.run import Env, Score, check_one, environment, regressions, run

SEED = 20261207
QUERIES = int(os.environ.get("LAKEGATE_FUZZ_QUERIES", "3000"))


@pytest.fixture(scope="module")
def env(pg_server: Any) -> Iterator[Env]:
    with environment(pg_server) as e:
        yield e


def test_the_generator_calls_only_allowed_functions() -> None:
    types.check_allowed(functions.POSTGRES_FUNCTIONS)


def test_saved_regressions_answer_as_postgresql(env: Env) -> None:
    saved = regressions()
    score = Score()
    for template in saved:
        check_one(env, template, score, minimise_findings=False)
    print("\nregressions: " + score.report())
    assert not score.findings, score.report()


def test_generated_queries_answer_as_postgresql(env: Env) -> None:
    score = run(env, SEED, QUERIES)
    print(f"\nseed {SEED}: " + score.report())
    assert score.queries >= QUERIES
    assert not score.findings, score.report()


def test_every_allowed_function_and_operator_with_edge_values(env: Env) -> None:
    """Issue 28.3: each allowed function and operator of the source's catalog, called with edge values of every
    argument type it takes (one edge per argument in CI; ``python -m tests.fuzz --functions`` runs them all)."""
    calls = function_table.templates(env.conn, edges_per_argument=1)
    score = Score()
    for template in calls:
        check_one(env, template, score, minimise_findings=False)
    print("\nfunctions and operators: " + score.report())
    assert score.queries >= 1000
    assert not score.findings, score.report()

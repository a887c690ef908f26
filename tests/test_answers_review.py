"""Fixes of a code review of the lake route's rules (whole-row references in parenthesised joins, unaliased row
generators' column names, pg_typeof, lag/lead's NULL offset and widened default, volatile FILTER conditions,
gcd/lcm's type): checked on the SQL the rules produce, and — where the fix is an answer rather than a refusal —
against PostgreSQL through the differential harness (tests/fuzz/regressions.sql holds the other pins)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import sqlglot
from sqlglot import exp

from lakegate.gateway.dialect import postgres_semantics
from lakegate.gateway.errors import UnsupportedQuery
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer
from tests.answers_harness import IDENTICAL
from tests.fuzz.run import Env, check, environment

COLUMNS = {
    "id": PgType("int4"),
    "x": PgType("int4"),
    "big": PgType("int8"),
    "n": PgType("numeric", precision=20, scale=6),
    "nu": PgType("numeric", loose_scale=True),
}


def _rewritten(sql: str, lake: bool = True) -> str:
    ast = sqlglot.parse_one(sql, read="postgres")
    typer = Typer(ast, lambda table: COLUMNS)
    if lake:
        typer.lake_tables = {id(t) for t in ast.find_all(exp.Table) if not isinstance(t.this, exp.Func)}
    postgres_semantics(ast, typer)
    return ast.sql(dialect="duckdb")


def _refused(sql: str, lake: bool = True) -> str:
    with pytest.raises(UnsupportedQuery) as raised:
        _rewritten(sql, lake)
    return str(raised.value)


# ---------------------------------------------------------------------------------- whole rows, generators


def test_a_whole_row_in_a_parenthesised_join_counts_its_present_rows() -> None:
    sql = _rewritten(
        "SELECT a.id, count(b.*), count(bb) FROM t AS a LEFT JOIN (t AS b JOIN (t AS bb JOIN t AS c ON true) "
        "ON b.id = c.id) ON a.id = b.id GROUP BY a.id"
    )
    assert 'COUNT("b"."_lsn")' in sql and 'COUNT("bb"."_lsn")' in sql, sql


def test_a_whole_row_the_rule_cannot_place_is_refused() -> None:
    # a source table's row under a parenthesised outer join: no column known never to be NULL in it
    assert "count(b)" in _refused(
        "SELECT count(b.*) FROM t AS a LEFT JOIN (t AS b JOIN t AS c ON true) ON true", lake=False
    )
    # an aliased join's row, whose columns the gateway does not know: a column or the row?
    assert "whole-row" in _refused(
        "SELECT count(j) FROM t AS a LEFT JOIN (t AS b JOIN t AS c ON true) AS j ON true"
    )
    # under a parenthesised inner join, a source table's row is never NULL-extended
    assert "IS NULL" in _rewritten("SELECT count(b.*) FROM (t AS b JOIN t AS c ON true)", lake=False)


def test_an_unaliased_generator_column_is_named_after_the_function() -> None:
    for sql in (
        "SELECT generate_series FROM generate_series(1, 2)",
        "SELECT id, unnest FROM t, unnest(ARRAY[1, 2])",
        "SELECT id, unnest FROM t, LATERAL unnest(ARRAY[1, 2])",
    ):
        _rewritten(sql)  # no refusal as a whole-row reference
    ast = sqlglot.parse_one("SELECT 1 FROM generate_series(1, 2), unnest(ARRAY['a']) AS u", read="postgres")
    typer = Typer(ast, lambda table: COLUMNS)
    items = [ast.args["from_"].this, ast.args["joins"][0].this]
    assert [typer.source_columns(i) for i in items] == [["generate_series"], ["u"]]


# ---------------------------------------------------------------------------------------------- pg_typeof


def test_pg_typeof_still_evaluates_its_argument() -> None:
    sql = _rewritten("SELECT pg_typeof(sum(x)), pg_typeof(100 / x) FROM t")
    assert "SUM(x)" in sql and "'bigint'" in sql and "'integer'" in sql, sql
    assert "100" in sql, sql


def test_pg_typeof_compared_as_a_regtype_is_refused() -> None:
    for sql in (
        "SELECT pg_typeof(x) = 'int4' FROM t",
        "SELECT pg_typeof(x) = 'integer'::regtype FROM t",
        "SELECT pg_typeof(x) < pg_typeof(big) FROM t",
        "SELECT pg_typeof(x) IN ('integer', 'bigint') FROM t",
        "SELECT s.k FROM (SELECT pg_typeof(x) AS k FROM t) AS s WHERE s.k = '23'",
    ):
        assert "pg_typeof" in _refused(sql), sql
    _rewritten(
        "SELECT pg_typeof(x) = pg_typeof(big), pg_typeof(x)::text = 'integer', pg_typeof(x) || 'x' FROM t"
    )


# -------------------------------------------------------------------------------------------- lag / lead


def test_lag_with_a_null_offset_is_null_not_the_default() -> None:
    sql = _rewritten("SELECT lag(x + 1, NULL, 7) OVER (ORDER BY id) FROM t")
    assert "THEN 7" in sql and "WHEN NOT LAG(TRUE, NULL, FALSE)" in sql and "ELSE" not in sql, sql


def test_a_widened_default_beside_a_value_of_unknown_digits_is_refused() -> None:
    assert "lead()" in _refused("SELECT lead(n * 2, 1, 0.1234567) OVER (ORDER BY id) FROM t")
    sql = _rewritten("SELECT lead(n, 1, 0.1234567) OVER (ORDER BY id) FROM t")  # numeric(20, 6): known
    assert "0.1234567" in sql, sql


# ------------------------------------------------------------------------------------------------ FILTER


def test_a_volatile_filter_condition_is_not_evaluated_again() -> None:
    sql = _rewritten("SELECT count(x + 1) FILTER (WHERE random() < 0.5) FROM t")
    assert sql.upper().count("RANDOM()") == 1 and "CASE" not in sql, sql
    sql = _rewritten("SELECT sum(100 / x) FILTER (WHERE x <> 0 AND uuidv4() IS NOT NULL) FROM t")
    assert "CASE WHEN x <> 0 THEN" in sql and sql.upper().count("UUIDV4()") == 1, sql
    sql = _rewritten("SELECT count(x + 1) FILTER (WHERE clock_timestamp() > '2000-01-01') FROM t")
    assert "CASE" not in sql, sql


# --------------------------------------------------------------------------------------------------- gcd


def test_gcd_with_a_numeric_argument_is_numeric() -> None:
    ast = sqlglot.parse_one("SELECT gcd(x, n), lcm(nu, x), gcd(x, big), gcd(x, x) FROM t", read="postgres")
    typer = Typer(ast, lambda table: COLUMNS)
    names = [typer.of(e) for e in ast.expressions]
    assert [t.name if t else None for t in names] == ["numeric", "numeric", "int8", "int4"]


# ------------------------------------------------------------------------------------- against PostgreSQL


@pytest.fixture(scope="module")
def env(pg_server: Any) -> Iterator[Env]:
    with environment(pg_server) as e:
        yield e


@pytest.mark.parametrize(
    "template",
    [
        "SELECT a.id, count(b.*), count(bb) FROM {fz_num} AS a LEFT JOIN ({fz_txt} AS b LEFT JOIN {fz_time} AS bb "
        "ON b.id = bb.id AND bb.id = 1) ON a.id = b.id AND b.id < 3 GROUP BY a.id",
        "SELECT a.id, generate_series, unnest FROM {fz_num} AS a, generate_series(1, 2), unnest(ARRAY[3, 4]) "
        "WHERE a.id < 3",
        "SELECT pg_typeof(sum(a.i4)), pg_typeof(a.k), count(*) FROM {fz_num} AS a GROUP BY a.k",
        "SELECT a.id, lag(100 / a.i4, NULL, 7) OVER (ORDER BY a.id), lead(a.n, 1, 0.1234567) OVER (ORDER BY a.id) "
        "FROM {fz_num} AS a",
    ],
)
def test_answered_as_postgresql_answers(env: Env, template: str) -> None:
    outcomes = check(env, template)
    assert all(outcome == IDENTICAL for outcome, _ in outcomes.values()), outcomes

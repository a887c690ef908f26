"""The lake route's char(n) rewrites, checked on the SQL they produce (the answers themselves are compared with
PostgreSQL by tests/test_answers.py)."""

from __future__ import annotations

import sqlglot

from lakegate.gateway.dialect import postgres_semantics
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer

COLUMNS = {
    "c": PgType("bpchar", length=10, padded=True),
    "v": PgType("varchar"),
}


def _rewritten(sql: str) -> str:
    ast = sqlglot.parse_one(sql, read="postgres")
    postgres_semantics(ast, Typer(ast, lambda table: COLUMNS))
    return ast.sql(dialect="duckdb")


def test_an_in_list_trims_its_char_column_once_not_once_per_value() -> None:
    sql = _rewritten("SELECT 1 FROM t WHERE c IN ('SM CASE', 'SM BOX', 'SM PACK  ', 'a literal too long')")
    assert sql.upper().count("RTRIM(") == 1, sql
    assert "'SM PACK'" in sql  # a literal compared as char(n) loses its trailing spaces


def test_char_column_against_literals_compares_the_column_as_stored_with_padded_literals() -> None:
    sql = _rewritten("SELECT 1 FROM t WHERE c IN ('SM CASE', 'SM PACK  ', '') AND 'ab' = c AND c <> 'é'")
    assert "RTRIM(" not in sql.upper(), sql
    for literal in ("SM CASE", "SM PACK", "", "ab", "é"):
        assert f"'{literal.ljust(10)}'" in sql, sql
    mixed = _rewritten("SELECT 1 FROM t WHERE c IN ('ab', v)")  # not all literals: trimmed as before
    assert mixed.upper().count("RTRIM(") == 2, mixed


def test_an_in_list_of_char_columns_trims_each_side_once() -> None:
    sql = _rewritten("SELECT 1 FROM t AS a, t AS b WHERE a.c IN (b.c, 'x', b.c)")
    assert sql.upper().count("RTRIM(") == 3, sql

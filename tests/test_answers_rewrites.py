"""Unit tests of the lake route's hand-written translations (the differential corpus runs them against
PostgreSQL; here the translation itself, including what it must refuse)."""

from __future__ import annotations

import re

import pytest
import sqlglot
from pyiceberg.types import DecimalType, IntegerType

from lakegate.connectors.duckdb import pgkeys
from lakegate.gateway.dialect import postgres_semantics
from lakegate.gateway.dialect_patterns import similar_regex
from lakegate.gateway.dialect_scale import show_numerics
from lakegate.gateway.errors import UnsupportedQuery
from lakegate.gateway.pgtype import PgType, lake_column
from lakegate.gateway.pgtyping import Typer


@pytest.mark.parametrize(
    ("pattern", "escape", "regex"),
    [
        ("%(o|e)%", "\\", "^(?:.*(?:o|e).*)$"),
        ("h_.%", "\\", "^(?:h.\\..*)$"),
        ("a\\%b", "\\", "^(?:a\\%b)$"),
        ("a#_b\\", "#", "^(?:a\\_b\\\\)$"),
        ("x{2,3}|^$", None, "^(?:x{2,3}|\\^\\$)$"),
    ],
)
def test_similar_to_becomes_postgresqls_regular_expression(pattern: str, escape: str | None, regex: str) -> None:
    assert similar_regex(pattern, escape) == regex
    re.compile(regex)  # and RE2's syntax is Python's for these


@pytest.mark.parametrize("pattern", ["[a-c]%", "\\d+", "a{x}", "a\\", 'a\\"b\\"c'])
def test_similar_to_patterns_the_engines_read_differently_are_not_translated(pattern: str) -> None:
    assert similar_regex(pattern, "\\") is None


@pytest.mark.parametrize("text", ["1.234,56 €", "$1234.56", "12.50", "($3.00)", "$1,234.5"])
def test_money_written_otherwise_than_lc_monetary_c_is_an_error_not_a_guess(text: str) -> None:
    with pytest.raises(pgkeys.UnreadableValue, match="lc_monetary C"):
        pgkeys.money_cents(text)


def test_money_text_round_trips_and_keeps_int8s_range() -> None:
    for cents in (0, -1, 1_234_56, -9223372036854775808, 9223372036854775807):
        assert pgkeys.money_cents(pgkeys.money_text(cents)) == cents
    with pytest.raises(pgkeys.UnreadableValue, match="money out of range"):
        pgkeys.money_text(2**63)


def test_timetz_keys_order_by_utc_instant_then_offset() -> None:
    texts = ["12:00:00+01", "11:00:00+00", "10:00:30+05:30", "24:00:00-15:59", "00:00:00.000001+14"]
    ordered = sorted(texts, key=pgkeys.timetz_key)
    assert ordered == ["00:00:00.000001+14", "10:00:30+05:30", "12:00:00+01", "11:00:00+00", "24:00:00-15:59"]
    assert [pgkeys.timetz_text(*p) for p in map(pgkeys.timetz_parts, texts) if p] == texts


def _lake_route(sql: str, columns: dict[str, PgType | None]) -> str:
    ast = sqlglot.parse_one(sql, read="postgres")
    typer = Typer(ast, lambda table: columns)
    typer.all()
    projections = typer.projections(ast)
    postgres_semantics(ast, typer)
    show_numerics(ast, typer, projections)
    return ast.sql(dialect="duckdb")


def test_an_unconstrained_numeric_stored_as_decimal_is_refused_where_shown() -> None:
    """[ingest] unbounded_numeric = "decimal(P,S)" keeps values, not their display scales (1.5 and 1.50 are both
    1.5000000000): the lake route computes with them but refuses to show them, never printing S digits."""
    columns = {"v": lake_column(DecimalType(38, 10), "numeric"), "id": lake_column(IntegerType(), "integer")}
    assert "WHERE" in _lake_route("SELECT count(*) FROM t WHERE v > 1", columns)
    for sql in ("SELECT v FROM t", "SELECT v * 2 FROM t", "SELECT sum(v) FROM t", "SELECT v::text FROM t"):
        with pytest.raises(UnsupportedQuery, match="display scale|numeric"):
            _lake_route(sql, columns)


def test_distinct_aggregates_are_sorted_as_postgresql_sorts_them_and_arrays_of_arrays_refused() -> None:
    """PostgreSQL removes an aggregate's duplicates by sorting its input: array_agg(DISTINCT x) comes sorted.
    string_agg's char(n) value is text (trimmed) in the DISTINCT and in the ORDER BY added for it."""
    from lakegate.gateway.dialect_aggregates import sort_distinct

    columns: dict[str, PgType | None] = {"x": PgType("int4"), "c": PgType("bpchar", length=6, padded=True)}
    ast = sqlglot.parse_one("SELECT array_agg(DISTINCT x), string_agg(DISTINCT c, ',') FROM t", read="postgres")
    sort_distinct(ast)
    typer = Typer(ast, lambda table: columns)
    typer.all()
    postgres_semantics(ast, typer)
    sql = ast.sql(dialect="duckdb")
    assert "ARRAY_AGG(DISTINCT x ORDER BY x" in sql, sql
    assert re.search(r"LISTAGG\(DISTINCT RTRIM\(c, ' '\), ',' ORDER BY RTRIM\(c, ' '\)", sql, re.I), sql
    columns["ia"] = PgType("int4", dims=1)
    for refused in ("SELECT array_agg(ia) FROM t", "SELECT json_agg(DISTINCT x) FROM t"):
        with pytest.raises(UnsupportedQuery, match="array_agg|DISTINCT"):
            ast = sqlglot.parse_one(refused, read="postgres")
            sort_distinct(ast)
            typer = Typer(ast, lambda table: columns)
            typer.all()
            postgres_semantics(ast, typer)


def test_to_char_and_to_date_patterns_are_read_whole_or_refused() -> None:
    """IDDD and SSSS are patterns of their own (not ID then DD, SS twice); to_date reads only numeric fields,
    refusing names and 12-hour fields whose reading PostgreSQL does itself."""
    from lakegate.gateway.pgdialect import DIALECT

    columns: dict[str, PgType | None] = {"d": PgType("date"), "t": PgType("text")}

    def lake(sql: str) -> str:
        ast = sqlglot.parse_one(sql, read=DIALECT)
        typer = Typer(ast, lambda table: columns)
        typer.all()
        postgres_semantics(ast, typer)
        return ast.sql(dialect="duckdb")

    sql = lake("SELECT to_char(d, 'IDDD SSSS') FROM x")
    assert "WEEKOFYEAR" in sql.upper() and "%d" not in sql and "%S" not in sql, sql
    assert "TRY_STRPTIME(t, '%Y-%m-%d')" in lake("SELECT to_date(t, 'YYYY-MM-DD') FROM x")
    for refused in ("SELECT to_date(t, 'Mon DD YYYY') FROM x", "SELECT to_timestamp(t, 'HH12:MI AM') FROM x"):
        with pytest.raises(UnsupportedQuery, match="pattern part"):
            lake(refused)

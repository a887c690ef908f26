"""PostgreSQL's grammar judges every statement before it is routed (gateway/pggrammar.py): what PostgreSQL's
parser rejects is its syntax error, at its position, on every route; what it accepts passes."""

from __future__ import annotations

import pytest
import sqlglot

from lakegate.gateway import pggrammar
from lakegate.gateway.errors import SqlSyntaxError


def _error(sql: str) -> SqlSyntaxError:
    with pytest.raises(SqlSyntaxError) as raised:
        pggrammar.check(sql, sqlglot.parse_one(sql, read="postgres"))
    return raised.value


def test_reserved_words_as_bare_names_are_postgresqls_syntax_error_at_its_position() -> None:
    error = _error("SELECT 'é', id\n  FROM lake.public.one AS user")
    assert (error.message, error.sqlstate, error.line, error.column) == (
        'syntax error at or near "user"',
        "42601",
        2,
        27,
    )
    assert _error("SELECT overlaps FROM t").message == 'syntax error at or near "FROM"'
    assert _error("SELECT id FROM t fetch").message == "syntax error at end of input"
    assert _error("SELECT id FROM t LIMIT 1, 2").message == "LIMIT #,# syntax is not supported"
    window = "SELECT sum(x) OVER (ORDER BY x ROWS BETWEEN UNBOUNDED FOLLOWING AND CURRENT ROW) FROM t"
    assert _error(window).sqlstate == "42P20"  # the grammar's windowing_error


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1 AS select, 2 AS from, 3 AS overlaps",
        "SELECT 1 select",  # a bare column label (PostgreSQL 14 and later)
        "SELECT q.user, q.order FROM (SELECT 1 AS user, 2 AS order) q",
        "SELECT year, value, name FROM t",
        "/* Redash */ SELECT 1;",
        "EXPLAIN SELECT 1",
    ],
)
def test_what_postgresqls_grammar_accepts_passes(sql: str) -> None:
    pggrammar.check(sql, None)


def test_time_travel_is_the_gateways_own_clause_and_is_not_checked() -> None:
    sql = "SELECT * FROM lake.public.t FOR VERSION AS OF 42 AS u"
    pggrammar.check(sql, sqlglot.parse_one(sql, read="postgres"))


@pytest.mark.parametrize(
    "written, read",
    [
        ("1_000", "1000"),
        ("0o17", "15"),
        ("0x1F", "31"),
        ("0X_1f", "31"),
        ("0b1_01", "5"),
        ("1_000.5", "1000.5"),
        ("1e1_0", "1e10"),
        (".5", "0.5"),
        ("x'1F'", "x'1F'"),  # bit strings stay bit strings
        ("12abc", "12 AS abc"),  # PostgreSQL 16 raises; the source's EXPLAIN (gateway.pgcheck) says so
        ("- -2147483648", "2147483648"),  # PostgreSQL folds each minus into the constant (a bigint here)
        ("-(-(2))", "2"),
        ("- - -5", "-5"),
        ("1 - -2", "1 - -2"),
    ],
)
def test_numbers_read_as_postgresql_16_reads_them(written: str, read: str) -> None:
    """PostgreSQL's numeric literals with radix prefixes and underscores are one number (issue 28.6); sqlglot's
    tokens read ``1_000`` as ``1 AS _000``, and the lake route answered 1."""
    from lakegate.gateway import parse

    ast = parse.parse(f"SELECT {written}").ast
    assert ast is not None and ast.sql(dialect="postgres") == f"SELECT {read}"


def test_a_radix_integer_past_pythons_digit_limit_is_read() -> None:
    """``0x`` and 4,000 hex digits is a number of 4,817 digits: past the 4,300 Python converts an int to text
    by default, which raised a ValueError (an HTTP 500)."""
    from decimal import Decimal

    from lakegate.gateway import parse

    ast = parse.parse("SELECT 0x" + "F" * 4000).ast
    assert ast is not None and ast.sql(dialect="postgres") == f"SELECT {Decimal(16**4000 - 1)}"


@pytest.mark.parametrize(
    "written, read",
    [
        ("INTERVAL '3 years 4 months' YEAR", "CAST('3 years 4 months' AS INTERVAL YEAR)"),  # was: AS year
        ("INTERVAL '1 day 02:03' DAY TO MINUTE AS x", "CAST('1 day 02:03' AS INTERVAL DAY TO MINUTE) AS x"),
        ("INTERVAL '1.5' SECOND(0)", "CAST('1.5' AS INTERVAL SECOND)"),
        ("INTERVAL(0) '1.5'", "CAST('1.5' AS INTERVAL SECOND)"),
        ("x::interval second(0), x::interval(2)", "CAST(x AS INTERVAL SECOND), CAST(x AS INTERVAL SECOND)"),
        ("INTERVAL '1 day', x::interval", "INTERVAL '1 DAY', CAST(x AS INTERVAL)"),
    ],
)
def test_interval_typmods_read_as_postgresql_reads_them(written: str, read: str) -> None:
    """An interval's fields and precision after the literal, before it, or after the type (issue 28.6): sqlglot
    read the first as an alias (a wrong answer) and the others as syntax errors on every route."""
    from lakegate.gateway import parse

    ast = parse.parse(f"SELECT {written}").ast
    assert ast is not None and ast.sql(dialect="postgres") == f"SELECT {read}"


@pytest.mark.parametrize(
    "written, read",
    [
        ("'{}'::int[5]", "CAST('{}' AS INT[])"),  # was: CAST('{}' AS INT)[5], a subscript
        (
            "'{}'::int[][5], CAST(x AS int[3][4])",
            "CAST('{}' AS INT[][]), CAST(x AS INT[][])",
        ),  # was: syntax errors
        (
            "'{1}'::numeric(10,2)[3], x::double precision[2]",
            "CAST('{1}' AS DECIMAL(10, 2)[]), CAST(x AS DOUBLE PRECISION[])",
        ),
        ("a[5], (x::int[])[2], x AS y", "a[5], (CAST(x AS INT[]))[2], x AS y"),  # subscripts stay subscripts
        # found by the 30-minute fuzz run: a type name is recognised looking back from the bracket, so an alias
        # or a parenthesised condition after ``::`` never hides the bounds inside it
        (
            "x::date AS c1, ARRAY['{}'::int[][5], y]",
            "CAST(x AS DATE) AS c1, ARRAY[CAST('{}' AS INT[][]), y]",
        ),
        (
            "CASE WHEN x::bool THEN a[1] END, y::date BETWEEN a[2] AND b, z::timestamp with time zone[3]",
            "CASE WHEN CAST(x AS BOOLEAN) THEN a[1] END, CAST(y AS DATE) BETWEEN a[2] AND b, CAST(z AS TIMESTAMPTZ[])",
        ),
    ],
)
def test_array_bounds_in_a_type_name_are_documentation(written: str, read: str) -> None:
    """PostgreSQL records no array bounds: ``int[5]`` and ``int[3][4]`` are ``int[]`` and ``int[][]``."""
    from lakegate.gateway import parse

    ast = parse.parse(f"SELECT {written} FROM t").ast
    assert ast is not None and ast.sql(dialect="postgres") == f"SELECT {read} FROM t"


def test_nested_macro_calls_past_the_expansion_bound_are_refused_before_duckdb() -> None:
    """regexp_replace copies its argument 7 times a level when DuckDB expands the gateway's macro: eight levels
    would be millions of nodes that DuckDB's binder builds without looking at the time limit (54001); four pass."""
    from lakegate.gateway import dialect_bounds, parse
    from lakegate.gateway.errors import BadRequest

    def nested(depth: int) -> str:
        sql = "t"
        for _ in range(depth):
            sql = f"regexp_replace({sql}, 'a', 'b')"
        return f"SELECT {sql} FROM x"

    dialect_bounds._refuse_expansion(parse.parse_one(nested(4)))
    with pytest.raises(BadRequest) as refused:
        dialect_bounds._refuse_expansion(parse.parse_one(nested(8)))
    assert refused.value.sqlstate == "54001" and "regexp_replace" in str(refused.value)

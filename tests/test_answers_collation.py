"""Issue 10.4: the lake route orders text as bytes; text that its source orders by a linguistic collation is
refused wherever its order matters (with a 400 naming the collation), and nowhere else.

The session's test PostgreSQL has no linguistic collation to offer (built without ICU; the machine has only the C
locales): the byte-order cases run against it in the differential corpus (``tests/answers/collation.sql``), ICU
collations against a PostgreSQL built with ICU in ``tests/test_answers_icu.py``;
here the typing's seam (the column types a table has) gives columns a linguistic collation, and the catalog
rows of other PostgreSQL versions and providers are classified as the reader sees them."""

from __future__ import annotations

import dataclasses

import pytest
import sqlglot

from lakegate.gateway.collations import ASCII_CASING, Collation, column_collation, database_collation
from lakegate.gateway.dialect import postgres_semantics
from lakegate.gateway.errors import UnsupportedQuery
from lakegate.gateway.pgtype import TEXT, PgType, t
from lakegate.gateway.pgtyping import Typer

EN = '"en_US.utf8" (the database default, libc)'
COLUMNS: dict[str, PgType | None] = {
    "id": t("int4"),
    "w": dataclasses.replace(TEXT, collation=EN),
    "b": dataclasses.replace(TEXT, collation=""),  # COLLATE "C" in the source
}


def rewrite(sql: str, default: str | None = EN) -> str:
    ast = sqlglot.parse_one(sql, read="postgres")
    typer = Typer(ast, lambda table: COLUMNS)
    typer.collation = default
    postgres_semantics(ast, typer)
    return ast.sql(dialect="duckdb")


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id FROM t ORDER BY w",
        "SELECT id, w FROM t ORDER BY 2",
        "SELECT w AS x FROM t ORDER BY x DESC",
        "SELECT upper(w) FROM t ORDER BY 1",
        "SELECT min(w) FROM t",
        "SELECT id FROM t WHERE w > 'm'",
        "SELECT id FROM t WHERE w BETWEEN 'a' AND 'm'",
        "SELECT greatest(w, 'x') FROM t",
        "SELECT rank() OVER (ORDER BY w) FROM t",
        "SELECT string_agg(b, ',' ORDER BY w) FROM t",
        "SELECT id FROM t ORDER BY id::text",  # no column: the database's default collation
        'SELECT id FROM t ORDER BY w COLLATE "en_US"',
        "SELECT w FROM t UNION SELECT b FROM t ORDER BY 1",
    ],
)
def test_ordering_by_a_linguistic_collation_is_refused_with_its_name(sql: str) -> None:
    with pytest.raises(UnsupportedQuery) as refused:
        rewrite(sql)
    message = str(refused.value)
    assert "collation" in message.lower() and ("en_US" in message), message


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id FROM t WHERE w = 'a'",
        "SELECT w, count(*) FROM t GROUP BY w",
        "SELECT DISTINCT w FROM t",
        'SELECT id FROM t ORDER BY w COLLATE "C"',
        "SELECT id FROM t WHERE w COLLATE \"C\" < 'm'",
        "SELECT id FROM t ORDER BY b",
        "SELECT max(b) FROM t",
        "SELECT id FROM t ORDER BY id",
    ],
)
def test_what_does_not_depend_on_the_collation_runs(sql: str) -> None:
    assert "COLLATE" not in rewrite(sql)


def test_a_byte_order_database_refuses_nothing() -> None:
    columns = {"id": t("int4"), "w": dataclasses.replace(TEXT, collation="")}
    ast = sqlglot.parse_one("SELECT id FROM t ORDER BY w, id::text", read="postgres")
    postgres_semantics(ast, Typer(ast, lambda table: columns))


def test_catalog_rows_of_each_provider_and_version_are_classified() -> None:
    libc_c = {"datlocprovider": "c", "datcollate": "C.UTF-8", "datctype": "C.UTF-8"}
    libc_en = {"datlocprovider": "c", "datcollate": "en_US.UTF-8", "datctype": "en_US.UTF-8"}
    libc_posix = {"datcollate": "POSIX", "datctype": "POSIX"}  # PostgreSQL < 15: no provider column
    icu_15 = {"datlocprovider": "i", "datcollate": "C", "daticulocale": "en-US"}
    builtin_17 = {"datlocprovider": "b", "datcollate": "C", "datlocale": "C.UTF-8"}
    assert database_collation(libc_c) == Collation() == database_collation(builtin_17)
    assert database_collation(libc_posix) == Collation(None, ASCII_CASING)
    assert database_collation(libc_en) == Collation('"en_US.UTF-8" (the database default, libc)', "")
    assert database_collation(icu_15) == Collation(
        '"en-US" (the database default, ICU locale en-US, version unknown)', "ICU's case mapping (en-US)"
    )
    default = {"collname": "default", "collprovider": "d", "collisdeterministic": True}
    assert column_collation(default, libc_en) == database_collation(libc_en)
    assert column_collation(default, libc_c) == Collation()
    c = {
        "collname": "C",
        "collprovider": "c",
        "collcollate": "C",
        "collctype": "C",
        "collisdeterministic": True,
    }
    assert column_collation(c, libc_en) == Collation(None, ASCII_CASING)
    fast = {"collname": "pg_unicode_fast", "collprovider": "b", "colllocale": "PG_UNICODE_FAST"}
    assert column_collation(fast, libc_c) == Collation(None, "full Unicode case mapping (PG_UNICODE_FAST)")
    utf8 = {"collname": "pg_c_utf8", "collprovider": "b", "colllocale": "C.UTF-8"}
    assert column_collation(utf8, libc_c) == Collation()
    turkish = {
        "collname": "tr",
        "collprovider": "c",
        "collcollate": "tr_TR.UTF-8",
        "collctype": "tr_TR.UTF-8",
    }
    assert column_collation(turkish, libc_c) == Collation('"tr"', "the dotted and dotless i of tr_TR.UTF-8")
    icu = {"collname": "und-x-icu", "collprovider": "i", "colllocale": "und", "collisdeterministic": True}
    assert column_collation(icu, libc_c) == Collation(
        '"und-x-icu" (ICU locale und, version unknown)', "ICU's case mapping (und)"
    )
    folded = {
        "collname": "ci",
        "collprovider": "i",
        "colliculocale": "und-u-ks-level2",
        "collisdeterministic": False,
    }
    assert not column_collation(folded, libc_c).deterministic
    assert column_collation(None, libc_en) == Collation()


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT upper(a) FROM t",
        "SELECT id FROM t WHERE a ILIKE 'é%'",
        "SELECT id FROM t WHERE a ~* 'é'",
        'SELECT initcap(w COLLATE "C") FROM t',
        "SELECT lower(w COLLATE pg_unicode_fast) FROM t",
    ],
)
def test_case_mapping_other_than_the_lake_routes_is_refused(sql: str) -> None:
    columns = {**COLUMNS, "a": dataclasses.replace(TEXT, collation="", casing=ASCII_CASING)}
    ast = sqlglot.parse_one(sql, read="postgres")
    with pytest.raises(UnsupportedQuery, match="case mapping"):
        postgres_semantics(ast, Typer(ast, lambda table: columns))


def test_case_mapping_of_a_utf8_locale_runs() -> None:
    columns = {**COLUMNS, "a": dataclasses.replace(TEXT, collation="", casing="")}
    ast = sqlglot.parse_one(
        "SELECT upper(a), lower(w COLLATE pg_c_utf8) FROM t WHERE a ILIKE 'x'", read="postgres"
    )
    postgres_semantics(ast, Typer(ast, lambda table: columns))


def test_a_nondeterministic_collation_refuses_the_column_everywhere() -> None:
    from lakegate.gateway.pgcolumns import _collated

    typ = _collated(TEXT, {"collname": "ci", "collprovider": "i", "collisdeterministic": False}, None)
    assert typ is not None and typ.lossy and "nondeterministic" in typ.lossy
    columns = {"id": t("int4"), "w": typ}
    ast = sqlglot.parse_one("SELECT id FROM t WHERE w = 'a'", read="postgres")
    with pytest.raises(UnsupportedQuery, match="nondeterministic collation"):
        postgres_semantics(ast, Typer(ast, lambda table: columns))


def test_a_lake_query_does_not_wait_for_a_source_that_is_down() -> None:
    """After a failed catalog read the source is not asked again for a while; the collations read before
    stay in use (a fake engine at the catalog seam: the real one waits its connect timeout)."""
    from lakegate.connectors.query import QueryError
    from lakegate.gateway import pgcolumns

    class Engine:
        calls = 0
        down = False

        def fetch(self, sql: str, params: tuple[str, str]) -> list[tuple[object, ...]]:
            Engine.calls += 1
            if Engine.down:
                raise QueryError("PostgreSQL source 'pg' is unavailable", "unavailable", engine="postgres")
            c = {"collname": "C", "collprovider": "c", "collcollate": "C", "collctype": "C"}
            return [("w", "text", c, {"datcollate": "C.UTF-8", "datctype": "C.UTF-8"}, None)]

    class Catalog:
        postgres = {"pg": Engine()}

    columns = pgcolumns.PgColumns(Catalog())  # type: ignore[arg-type]
    first = columns.collations("pg", "public", "t")
    assert first is not None and first["w"] == dataclasses.replace(TEXT, collation="", casing=ASCII_CASING)
    Engine.down = True
    columns._cache.clear()  # the short cache expired
    assert columns.collations("pg", "public", "t") == first and Engine.calls == 2
    columns._cache.clear()
    assert columns.collations("pg", "public", "t") == first and Engine.calls == 2  # not asked again yet

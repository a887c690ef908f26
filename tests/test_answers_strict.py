"""The comparison is as strict as a user (issue 28.0): the differential harness and the routing fixtures'
canonical values tell apart what a user tells apart — column names (``?column?`` and repeated names
included), type names, ``'42'`` and ``42``, ``true`` and ``1``, a float's last digit, ``-0`` and ``0``, NaN
and anything but NaN, a timestamptz's offset, a numeric's scale — and a refusal counts only as a 400 with
SQLSTATE 0A000 in the gateway's own words that ``tests/answers/refusals.txt`` pins."""

from __future__ import annotations

import datetime
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from tests.answers_harness import (
    DIFFERING,
    IDENTICAL,
    REFUSED,
    Answer,
    Query,
    Tally,
    canon,
    compare,
    read_corpus,
)
from tests.answers_refusals import PINNED, ROUTES, read_pins
from tests.gateway_fixtures import harness as fixtures

UTC = datetime.UTC
KOLKATA = datetime.timezone(datetime.timedelta(hours=5, minutes=30))
MIDNIGHT = datetime.datetime(2024, 1, 1, tzinfo=UTC)  # the same instant as 05:30 in Kolkata


def _answer(names: list[str], types: list[str], *row: object) -> Answer:
    return Answer([tuple(canon(v, t) for v, t in zip(row, types, strict=True))], types, names)


def test_column_names_are_compared_as_postgresql_gives_them() -> None:
    want = _answer(["count", "?column?", "?column?"], ["int8", "int4", "int4"], 1, 2, 3)
    assert compare(want, want, True, False)[0] == IDENTICAL
    others = (["?column?", "?column?", "?column?"], ["count", "?column?", "?column?_2"], ["count", "a", "b"])
    for names in others:
        got = _answer(names, ["int8", "int4", "int4"], 1, 2, 3)
        outcome, why = compare(want, got, True, False)
        assert outcome == DIFFERING and why.startswith("column names"), names


@pytest.mark.parametrize(
    ("typ", "value", "other"),
    [
        ("float8", 0.1 + 0.2, 0.3),  # the last digit a user sees
        ("float8", -0.0, 0.0),  # PostgreSQL writes -0
        ("float8", float("nan"), float("inf")),
        ("float4", 1.5, 1.25),
        ("numeric", "1.50", "1.5"),  # the display scale is part of the answer
        ("numeric", "NaN", "0"),
        ("int4", 1, True),
        ("text", "42", 42),
        ("bool", True, 1),
        ("timestamptz", datetime.datetime(2024, 1, 1, 5, 30, tzinfo=KOLKATA), MIDNIGHT),
        ("interval", "P1D", "PT24H"),  # 1 day is not 24 hours (across a change to daylight-saving time)
    ],
)
def test_values_equal_only_where_a_user_sees_the_same(typ: str, value: object, other: object) -> None:
    want = _answer(["v"], [typ], value)
    assert compare(want, _answer(["v"], [typ], value), True, False)[0] == IDENTICAL  # NaN equals NaN
    assert compare(want, _answer(["v"], [typ], other), True, False)[0] == DIFFERING, (value, other)


def test_types_are_compared() -> None:
    assert compare(_answer(["v"], ["int4"], 1), _answer(["v"], ["int8"], 1), True, False)[0] == DIFFERING


ERRORS = {
    "refusal": (400, "0A000", "jsonb_agg() as a window function cannot be computed exactly as PostgreSQL"),
    "no code": (400, "", "dividing an interval cannot be computed exactly"),
    "raw DuckDB": (400, "0A000", "DuckDB: Invalid Input Error: Option 'g' (global replace) is only valid"),
    "raw UDF": (400, "0A000", "DuckDB: Invalid Input Error: Python exception occurred while executing"),
    "not a 400": (500, "0A000", "the numeric 1e400 cannot be computed exactly"),
}


@pytest.mark.parametrize("kind", sorted(ERRORS))
def test_a_refusal_is_a_400_with_0a000_in_the_gateway_s_own_words(kind: str) -> None:
    status, sqlstate, message = ERRORS[kind]
    got = Answer(error=message, status=status, sqlstate=sqlstate)
    want = _answer(["v"], ["int4"], 1)
    assert compare(want, got, True, may_refuse=True)[0] == (REFUSED if kind == "refusal" else DIFFERING)
    assert compare(want, got, True, may_refuse=False)[0] == DIFFERING


def test_an_engine_error_where_postgresql_raises_the_same_sqlstate_is_identical() -> None:
    want = Answer(error="division by zero", sqlstate="22012")
    raw = Answer(error="DuckDB: Out of Range Error: division by zero", status=400, sqlstate="22012")
    assert compare(want, raw, True, False)[0] == IDENTICAL
    other = Answer(error="DuckDB: Conversion Error: Invalid hex escape", status=400, sqlstate="")
    assert compare(Answer(error="invalid input syntax", sqlstate="22P02"), other, True, True)[0] == DIFFERING


def _tally(tmp_path: Path, lines: str) -> Tally:
    path = tmp_path / "refusals.txt"
    path.write_text(lines)
    return Tally(pins=read_pins(path))


def test_only_a_pinned_refusal_in_its_pinned_words_is_accepted(tmp_path: Path) -> None:
    query = Query("json.sql", 7, "SELECT ...")
    why = "jsonb_agg() as a window function cannot be computed exactly as PostgreSQL does on the lake route"
    tally = _tally(tmp_path, "# a comment\njson.sql:7 lake jsonb_agg() as a window function\n")
    tally.add("lake", query, REFUSED, why)
    assert tally.outcomes["lake"][REFUSED] == 1 and not tally.differing
    tally.add("pg", query, REFUSED, why)  # pinned on the lake route only
    tally.add("lake", query, REFUSED, "jsonb_agg() cannot be computed")  # other words
    tally.add("lake", query, IDENTICAL, "")  # answered now: the pin must go
    assert tally.outcomes["lake"][DIFFERING] == 2 and tally.outcomes["pg"][DIFFERING] == 1
    assert "nobody pinned" in tally.differing[0] and "json.sql:7 pg jsonb_agg()" in tally.differing[0]
    assert "in other words than refusals.txt line 2" in tally.differing[1]
    assert "answered identically, but refusals.txt line 2 pins a refusal" in tally.differing[2]


def test_a_pin_for_one_time_zone_holds_there_only(tmp_path: Path) -> None:
    query = Query("times.sql", 9, "SELECT ...")
    tally = _tally(tmp_path, "times.sql:9 lake@America/New_York generate_series() in time zone\n")
    zone = "America/New_York"
    tally.add("lake", query, REFUSED, f"generate_series() in time zone {zone} reaches", zone)
    tally.add("lake", query, REFUSED, "generate_series() in time zone UTC reaches", "UTC")
    assert tally.outcomes["lake"][REFUSED] == 1 and tally.outcomes["lake"][DIFFERING] == 1


@pytest.mark.parametrize("line", ["json.sql:7 lake", "json.sql lake words", "json.sql:7 duckdb words"])
def test_a_malformed_pin_is_an_error(tmp_path: Path, line: str) -> None:
    with pytest.raises(ValueError, match="is not"):
        _tally(tmp_path, line + "\n")


def test_every_pin_names_a_query_of_the_corpus() -> None:
    """A corpus edit that moves a query moves its pin too: each pins a query line (not a comment)."""
    pins = read_pins()
    files = sorted({pin.where.split(":")[0] for pin in pins.values()})
    queries = {q.where for q in read_corpus(files)}
    for pin in pins.values():
        assert pin.where in queries, f"{PINNED.name} line {pin.line}: {pin.where} is no query of the corpus"
        assert pin.route in ROUTES and pin.prefix, pin
    keys = [(p.where.split(":")[0], int(p.where.split(":")[1]), p.route, p.zone or "") for p in pins.values()]
    assert keys == sorted(keys), f"keep {PINNED.name} sorted by file, line and route"


def test_fixture_values_are_compared_as_strictly() -> None:
    """``tests/gateway_fixtures/harness.py``'s canonical values (routing, lake and cache tests)."""
    canon = fixtures.canon
    for a, b in [
        ("42", 42),
        (True, 1),
        (1.0000000001, 1.0),
        (-0.0, 0.0),
        (Decimal("1.50"), Decimal("1.5")),
        (datetime.datetime(2024, 1, 1, 5, 30, tzinfo=KOLKATA), MIDNIGHT),
        ([1, 2], (1, "2")),
    ]:
        assert canon(a) != canon(b), (a, b)
    assert canon(float("nan")) == canon(float("nan")) and canon(Decimal("1E-8")) == ("numeric", "0.00000001")
    assert fixtures.same_rows([(canon(1),), (canon(2),)], [(canon(2),), (canon(1),)], ordered=False)
    assert not fixtures.same_rows([(canon(1),), (canon(2),)], [(canon(2),), (canon(1),)], ordered=True)


def test_fixture_numerics_are_read_with_their_display_scale() -> None:
    """A gateway numeric column compares as the text the gateway shows (its JSON's), not its Arrow decimal."""
    table = pa.table({"n": pa.array([Decimal("1.50"), None], pa.decimal128(12, 2))})
    assert fixtures.rows_of(table) == [(("numeric", "1.50"),), (None,)]
    assert fixtures.names_of(pa.table([pa.array([1]), pa.array([2])], names=["id", "id"])) == ["id", "id"]

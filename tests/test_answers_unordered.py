"""The differential harness compares aggregates without ORDER BY (whose element order PostgreSQL leaves to the
plan) as multisets — only those columns, and still fails on other elements."""

from __future__ import annotations

from tests.answers_harness import DIFFERING, IDENTICAL, Answer, compare, unordered_columns


def test_only_listing_aggregates_without_order_by_or_distinct_are_unordered() -> None:
    sql = (
        "SELECT g, array_agg(x), string_agg(t, ', '), json_agg(x ORDER BY x), array_agg(DISTINCT x), "
        "jsonb_agg(x) FILTER (WHERE x > 1), json_object_agg(k, v), array_agg(x) OVER (PARTITION BY g), "
        "array_agg(x) OVER (ORDER BY x), string_agg(t, sep), array_length(array_agg(x), 1) FROM t GROUP BY g"
    )
    assert unordered_columns(sql) == {1: "array", 2: "text:, ", 5: "json", 6: "json", 7: "array"}
    assert unordered_columns("SELECT array_agg(x) FROM t UNION ALL SELECT array_agg(x) FROM u") == {}


def test_a_multiset_compares_equal_in_any_order_and_differs_with_other_elements() -> None:
    def answer(*row: object) -> Answer:
        return Answer([row], ["_int4", "text", "json"], ["a", "s", "j"])

    unordered = unordered_columns("SELECT array_agg(x), string_agg(t, ','), json_agg(j) FROM t")
    want = answer((1, 2, 2, None), "a,b", ("json", '[{"a": 1, "b": [1, 2]}, "x, y", 3]'))
    same = answer((2, None, 1, 2), "b,a", ("json", '[3, "x, y", {"a": 1, "b": [1, 2]}]'))
    assert compare(want, same, True, False, unordered)[0] == IDENTICAL
    assert compare(want, same, True, False)[0] == DIFFERING  # not where the query orders them
    for other in (
        answer((1, 2, None, None), "b,a", ("json", '[3, "x, y", {"a": 1, "b": [1, 2]}]')),
        answer((2, None, 1, 2), "b,a,a", ("json", '[3, "x, y", {"a": 1, "b": [1, 2]}]')),
        answer((2, None, 1, 2), "b,a", ("json", '[3, "x,  y", {"a": 1, "b": [1, 2]}]')),
        answer((2, None, 1, 2), "b,a", ("json", '[3, "x, y", {"b": [1, 2], "a": 1}]')),
    ):
        assert compare(want, other, True, False, unordered)[0] == DIFFERING, other

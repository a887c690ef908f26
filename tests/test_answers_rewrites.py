"""Unit tests of the lake route's hand-written translations (the differential corpus runs them against
PostgreSQL; here the translation itself, including what it must refuse)."""

from __future__ import annotations

import re

import pytest

from lakegate.gateway.dialect_patterns import similar_regex


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

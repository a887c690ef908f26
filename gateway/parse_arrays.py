"""Array bounds in a type name, as PostgreSQL reads them: ``'{}'::int[5]``, ``CAST(x AS int[3][4])`` and
``int[][5]`` are the array types ``int[]`` and ``int[][]`` (PostgreSQL records no bounds; the sizes are
documentation). sqlglot read ``'{}'::int[5]`` as a subscript of ``'{}'::int`` (the lake route subscripted an
integer) and ``int[][5]``/``int[3][4]`` not at all. A token pass (beside :mod:`lakegate.gateway.parse_intervals`)
drops the size between brackets that follow a type name after ``::`` or ``AS`` (looking back from the bracket:
a subscript ``a[5]`` follows no such name).
"""

from __future__ import annotations

import re

from sqlglot.tokens import Token, TokenType

_WORD = re.compile(r"^[A-Za-z_][\w$]*(?:\s+[A-Za-z_][\w$]*)*$")  # also one token of several words


def array_bounds(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    i, count = 0, len(tokens)
    while i < count:
        if (
            i + 2 < count
            and tokens[i].token_type == TokenType.L_BRACKET
            and tokens[i + 1].token_type == TokenType.NUMBER
            and tokens[i + 2].token_type == TokenType.R_BRACKET
            and _after_type_name(out)
        ):
            out += [tokens[i], tokens[i + 2]]
            i += 3
            continue
        out.append(tokens[i])
        i += 1
    return out


def _after_type_name(before: list[Token]) -> bool:
    """Whether ``before`` ends with ``::`` or ``AS``, a type name (a word, schema-qualified or not, and the words
    that continue a name: ``double precision``), its typmod and its bounds. A subscript after a condition
    (``x::bool THEN a[1]``) follows no type name: only those continuation words may stand between."""
    j = len(before) - 1
    while j >= 1 and before[j].token_type == TokenType.R_BRACKET and before[j - 1].token_type == TokenType.L_BRACKET:
        j -= 2  # earlier bounds, already without their sizes
    if j >= 0 and before[j].token_type == TokenType.R_PAREN:  # the typmod: numbers and commas only
        j -= 1
        while j >= 0 and before[j].token_type in (TokenType.NUMBER, TokenType.COMMA):
            j -= 1
        if j < 0 or before[j].token_type != TokenType.L_PAREN:
            return False
        j -= 1
    while j >= 0 and before[j].text.lower() in _CONTINUATIONS and before[j].token_type != TokenType.ALIAS:
        j -= 1  # the later words of double precision, character varying, time with time zone ...
    if j < 0 or before[j].token_type == TokenType.ALIAS or not _WORD.match(before[j].text):
        return False
    j -= 1  # the type's first word, then its schema's
    while j >= 1 and before[j].token_type == TokenType.DOT and _WORD.match(before[j - 1].text):
        j -= 2
    return j >= 0 and before[j].token_type in (TokenType.DCOLON, TokenType.ALIAS)


#: words that continue a type's name (``double precision``, ``character varying``, ``timestamp with time zone``)
_CONTINUATIONS = frozenset({"precision", "varying", "with", "without", "time", "zone"})

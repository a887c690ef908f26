"""Array bounds in a type name, as PostgreSQL reads them: ``'{}'::int[5]``, ``CAST(x AS int[3][4])`` and
``int[][5]`` are the array types ``int[]`` and ``int[][]`` (PostgreSQL records no bounds; the sizes are
documentation). sqlglot read ``'{}'::int[5]`` as a subscript of ``'{}'::int`` (the lake route subscripted an
integer) and ``int[][5]``/``int[3][4]`` not at all. A token pass (beside :mod:`lakegate.gateway.parse_intervals`)
drops the size between the brackets that follow a type name after ``::`` or ``AS``.
"""

from __future__ import annotations

import re

from sqlglot.tokens import Token, TokenType

_WORD = re.compile(r"^[A-Za-z_][\w$]*(?:\s+[A-Za-z_][\w$]*)*$")  # also one token of several words


def array_bounds(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    i, count = 0, len(tokens)
    while i < count:
        token = tokens[i]
        out.append(token)
        i += 1
        if token.token_type not in (TokenType.DCOLON, TokenType.ALIAS):
            continue
        start = i  # the type's name: words and dots, then at most one parenthesised group (its typmod)
        while i < count and (tokens[i].token_type == TokenType.DOT or _WORD.match(tokens[i].text)):
            i += 1
        if i == start:
            continue
        if i < count and tokens[i].token_type == TokenType.L_PAREN:
            depth = 0
            while i < count:
                depth += {TokenType.L_PAREN: 1, TokenType.R_PAREN: -1}.get(tokens[i].token_type, 0)
                i += 1
                if depth == 0:
                    break
        out += tokens[start:i]
        while i + 1 < count and tokens[i].token_type == TokenType.L_BRACKET:
            if tokens[i + 1].token_type == TokenType.R_BRACKET:
                out += tokens[i : i + 2]
                i += 2
            elif (
                i + 2 < count
                and tokens[i + 1].token_type == TokenType.NUMBER
                and tokens[i + 2].token_type == TokenType.R_BRACKET
            ):
                out += [tokens[i], tokens[i + 2]]
                i += 3
            else:
                break
    return out

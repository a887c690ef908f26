"""Interval literals and types with fields and precision, read as PostgreSQL reads them (a token pass of
:mod:`lakegate.gateway.parse`).

PostgreSQL writes an interval's typmod after the literal (``INTERVAL '3 years 4 months' YEAR``,
``INTERVAL '1 day 02:03:04' DAY TO MINUTE``, ``INTERVAL '1.5' SECOND(0)``) or before it (``INTERVAL(0) '1.5'``),
and after the type name in a cast (``::interval second(0)``). sqlglot reads the first as the literal with the
alias ``YEAR`` (the lake route answered 3 years 4 months, named "year"), and the others not at all (a syntax error
on every route). Each literal becomes ``CAST('...' AS INTERVAL <fields>)``, which sqlglot reads, and a precision is
kept as the field ``SECOND`` it restricts: PostgreSQL's route runs the statement as written, and the lake route
refuses a cast to an interval with fields (:mod:`lakegate.gateway.dialect_literals`), which is what these are.
"""

from __future__ import annotations

from sqlglot.tokens import Token, TokenType

FIELDS = {"YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"}


def interval_fields(tokens: list[Token]) -> list[Token]:
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if token.token_type != TokenType.INTERVAL:
            out.append(token)
            i += 1
            continue
        j = i + 1
        before = _precision(tokens, j)  # INTERVAL(3) '...'
        j += 3 if before else 0
        literal = tokens[j] if j < len(tokens) and tokens[j].token_type == TokenType.STRING else None
        j += 1 if literal is not None else 0
        fields, j = _fields(tokens, j)
        after = _precision(tokens, j)  # ... SECOND(0), ::interval second(0)
        j += 3 if after else 0
        if literal is None and not (before or after):  # a type without precision (sqlglot reads its fields)
            out.append(token)
            i += 1
            continue
        if not fields and (before or after):
            fields = [_like(token, TokenType.VAR, "SECOND")]
        if literal is None:  # a type: its fields stand for the precision
            out += [token, *fields]
        elif not fields:
            out += tokens[i:j]  # INTERVAL '...': nothing to read otherwise
        else:
            out += [
                _like(token, TokenType.VAR, "CAST"),
                _like(token, TokenType.L_PAREN, "("),
                literal,
                _like(literal, TokenType.ALIAS, "AS"),
                token,
                *fields,
                _like(tokens[j - 1], TokenType.R_PAREN, ")"),
            ]
        i = j
    return out


def _precision(tokens: list[Token], at: int) -> bool:
    """``( <number> )`` at ``at``."""
    part = tokens[at : at + 3]
    return [t.token_type for t in part] == [TokenType.L_PAREN, TokenType.NUMBER, TokenType.R_PAREN]


def _fields(tokens: list[Token], at: int) -> tuple[list[Token], int]:
    """The field tokens at ``at`` (``DAY``, ``DAY TO MINUTE``) and where they end."""
    if at >= len(tokens) or tokens[at].text.upper() not in FIELDS:
        return [], at
    if (
        at + 2 < len(tokens)
        and tokens[at + 1].text.upper() == "TO"
        and tokens[at + 2].text.upper() in FIELDS
    ):
        return tokens[at : at + 3], at + 3
    return tokens[at : at + 1], at + 1


def _like(token: Token, kind: TokenType, text: str) -> Token:
    return Token(kind, text, token.line, token.col, token.start, token.end)

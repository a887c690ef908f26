"""SQL text -> one statement (sqlglot AST, PostgreSQL dialect), with syntax errors that carry line and column.

Statements the gateway answers itself are recognised from sqlglot's tokens before parsing, because sqlglot parses
them only as opaque commands: ``EXPLAIN <query>`` (the route and each engine's SQL, as rows), ``SHOW TABLES``
/ ``SHOW SCHEMAS`` / ``SHOW SOURCES`` and ``DESCRIBE <table>``. Everything else must parse to exactly one
statement; whether that statement may run is :mod:`lakegate.gateway.guard`'s decision.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import cast

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from lakegate.gateway.errors import BadRequest, Forbidden, SqlSyntaxError, UnsupportedQuery
from lakegate.gateway.parse_arrays import array_bounds
from lakegate.gateway.parse_intervals import interval_fields
from lakegate.gateway.pgdialect import DIALECT

# sqlglot logs a warning for every statement it can only parse as an opaque command; the guard refuses those.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

QUERY, EXPLAIN, SHOW, DESCRIBE = "query", "explain", "show", "describe"
#: Tokens a statement may have (a 100,000-element IN list has 200,003). sqlglot gives the interpreter lock up as
#: it parses, but a full garbage collection walks every object of the tree at once: 0.14 s for 200,000 tokens
#: here, 1.2 s (3.6 s with its freeing) for the 520,000 of a 1 MiB list of names, during which no other
#: request runs (issue 27.4).
MAX_TOKENS = 250_000
SHOW_WHAT = ("tables", "schemas", "sources")


@dataclass
class Statement:
    """One parsed statement. ``ast`` is the query (for EXPLAIN: the explained query; for DESCRIBE: the table)."""

    kind: str
    ast: exp.Expression | None
    sql: str
    show: str = ""  #: for SHOW: tables | schemas | sources
    show_in: list[str] = field(default_factory=list)  #: SHOW TABLES FROM <source>[.<schema>]
    start: tuple[int | None, int | None] = (None, None)  #: line and column of the statement's first word


def _tokens(sql: str) -> list[Token]:
    try:
        tokens = numbers(sql, unicode_identifiers(Dialect.get_or_raise(DIALECT).tokenize(sql)))
        return array_bounds(interval_fields(tokens))
    except TokenError as exc:
        raise SqlSyntaxError(f"cannot read the SQL: {exc}") from exc


_DECIMAL = r"[0-9](?:_?[0-9])*"
#: PostgreSQL 16's numeric literals (scan.l): radix integers, underscores between digits, decimals, exponents
_NUMBER = re.compile(
    rf"0[xX](?:_?[0-9A-Fa-f])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+"
    rf"|(?:{_DECIMAL}\.(?:{_DECIMAL})?|\.{_DECIMAL}|{_DECIMAL})(?:[Ee][-+]?{_DECIMAL})?"
)
_NUMBER_TOKENS = (TokenType.NUMBER, TokenType.HEX_STRING, TokenType.BIT_STRING)


def numbers(sql: str, tokens: list[Token]) -> list[Token]:
    """PostgreSQL reads ``1_000``, ``0o17``, ``0x_1F`` and ``1e1_0`` as one number each; sqlglot reads a number
    and an alias (``1 AS _000``: the lake route answered 1). Each such run of tokens becomes one number token
    holding the value's plain decimal text (a radix integer's value)."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        match = _NUMBER.match(sql, token.start) if token.token_type in _NUMBER_TOKENS else None
        written = match.group(0) if match else ""
        if not match or (
            match.end() - 1 == token.end and "_" not in written and written[:2].lower() not in _RADIX
        ):
            out.append(token)
            i += 1
            continue
        last = i
        while last + 1 < len(tokens) and tokens[last + 1].end < match.end():
            last += 1
        plain = written.replace("_", "")
        # through Decimal: str() of an int of more than 4,300 digits raises (Python's conversion limit)
        text = str(Decimal(int(plain, 0))) if plain[:2].lower() in _RADIX else plain
        out.append(
            Token(TokenType.NUMBER, text, tokens[last].line, tokens[last].col, token.start, match.end() - 1)
        )
        i = last + 1
    return out


_RADIX = ("0x", "0o", "0b")


def unicode_identifiers(tokens: list[Token]) -> list[Token]:
    """PostgreSQL's ``U&"d\\0061ta" [UESCAPE '!']`` is one quoted identifier; sqlglot reads it as ``U & "..."`` (a
    bitwise AND with a column U), so the guard and the lake route would see another statement than
    PostgreSQL. The three (or five) tokens become one identifier token, decoded as PostgreSQL decodes it."""
    out: list[Token] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        rest = tokens[i + 1 : i + 3]
        if (
            token.text.upper() == "U"
            and len(rest) == 2
            and rest[0].token_type == TokenType.AMP
            and rest[1].token_type == TokenType.IDENTIFIER
            and token.end + 1 == rest[0].start
            and rest[0].end + 1 == rest[1].start
        ):
            escape, skip = "\\", 3
            after = tokens[i + 3 : i + 5]
            if (
                len(after) == 2
                and after[0].text.upper() == "UESCAPE"
                and after[1].token_type == TokenType.STRING
            ):
                escape, skip = after[1].text, 5
            last = tokens[i + skip - 1]
            text = _decode_unicode(rest[1].text, escape)
            out.append(Token(TokenType.IDENTIFIER, text, last.line, last.col, token.start, last.end))
            i += skip
            continue
        out.append(token)
        i += 1
    return out


def _decode_unicode(text: str, escape: str) -> str:
    if len(escape) != 1:
        raise SqlSyntaxError(f"invalid Unicode escape character {escape!r}: UESCAPE takes one character")
    e = re.escape(escape)
    pattern = re.compile(f"{e}([0-9A-Fa-f]{{4}})|{e}\\+([0-9A-Fa-f]{{6}})|{e}{e}")

    def one(match: re.Match[str]) -> str:
        code = match.group(1) or match.group(2)
        if code is None:
            return escape
        try:
            return chr(int(code, 16))
        except ValueError:
            raise SqlSyntaxError(f"invalid Unicode escape value {match.group(0)!r}") from None

    return pattern.sub(one, text)


def parse(sql: str) -> Statement:
    """Parse ``sql``; exactly one statement (a trailing ``;`` and comments anywhere are fine)."""
    if not sql or not sql.strip():
        raise SqlSyntaxError("the query is empty")
    every = _tokens(sql)
    if len(every) > MAX_TOKENS:
        raise BadRequest(
            f"the statement has {len(every):,} tokens, more than the {MAX_TOKENS:,} the gateway reads: its syntax "
            "tree would pause the whole server while Python's garbage collector walks it; pass long lists as a "
            "table (a lake or PostgreSQL table joined in) or split the statement",
            code="too_large",
            sqlstate="54000",
        )
    _one_statement(every)
    tokens = [t for t in every if t.token_type != TokenType.SEMICOLON]
    if not tokens:
        raise SqlSyntaxError("the query is empty (only comments)")
    first = tokens[0].text.upper()
    if first == "EXPLAIN":
        return _explain(sql, tokens)
    if first == "SHOW":
        return _show(sql, tokens)
    try:
        statement = parse_tokens(sql, every)
    except SqlSyntaxError:
        _refuse_unparsable(tokens)
        raise
    if isinstance(statement, exp.Describe):
        return Statement(DESCRIBE, statement.this, sql)
    return Statement(QUERY, statement, sql, start=(tokens[0].line, _start_column(tokens[0])))


def _one_statement(tokens: list[Token]) -> None:
    """Refuse a second statement after a ``;`` wherever it is (also after EXPLAIN ... ; and SHOW ... ;)."""
    statements: list[Token] = []
    after_semicolon = True
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            after_semicolon = True
        elif after_semicolon:
            statements.append(token)
            after_semicolon = False
    if len(statements) > 1:
        second = statements[1]
        raise Forbidden(
            f"only one statement per request is allowed; this request holds {len(statements)} "
            f"(separated by ';'), the second starts with {second.text.split()[0].upper()!r}",
            line=second.line,
            column=_start_column(second),
        )


def _start_column(token: Token) -> int:
    """sqlglot's ``col`` is where a token ends; psql points at where it starts."""
    return max(1, token.col - len(token.text) + 1)


QUERY_STARTS = ("SELECT", "WITH", "VALUES", "(", "TABLE", "DESCRIBE", "DESC")


def _refuse_unparsable(tokens: list[Token]) -> None:
    """SQL that sqlglot cannot parse is a syntax error, unless it is plainly not a query (ATTACH, EXPORT, ...)
    or calls a forbidden function: then say that, which is the more useful answer."""
    from lakegate.gateway import functions  # local: functions does not depend on parsing

    first = tokens[0].text.upper()
    if first not in QUERY_STARTS:
        raise Forbidden(
            f"{first} is not allowed: the gateway runs only queries (SELECT, WITH, "
            "UNION/INTERSECT/EXCEPT, VALUES, EXPLAIN, SHOW, DESCRIBE)",
            line=tokens[0].line,
            column=_start_column(tokens[0]),
        )
    for token, following in zip(tokens, tokens[1:], strict=False):
        name = token.text.lower()
        if following.token_type == TokenType.L_PAREN and functions.denied(name):
            raise Forbidden(
                f"function {name}() is not allowed: the gateway runs only functions on its allow-list, "
                "and never ones that reach files, URLs, other databases, settings or sequences",
                line=token.line,
                column=_start_column(token),
            )


def parse_one(sql: str) -> exp.Expression:
    return parse_tokens(sql, _tokens(sql))


def parse_tokens(sql: str, tokens: list[Token]) -> exp.Expression:
    """The one statement of ``tokens`` (of ``sql``); syntax errors carry line and column, nesting deeper than
    the interpreter's stack is a clear 400."""
    try:
        parsed = Dialect.get_or_raise(DIALECT).parser().parse(tokens, sql)
        statements = [s for s in parsed if s is not None and not isinstance(s, exp.Semicolon)]
    except ParseError as exc:
        raise _syntax_error(exc) from exc
    except TokenError as exc:
        raise SqlSyntaxError(f"cannot read the SQL: {exc}") from exc
    except RecursionError:
        raise too_deep() from None
    if not statements:
        raise SqlSyntaxError("the query is empty")
    if len(statements) > 1:
        raise Forbidden(
            f"only one statement per request is allowed; this request holds {len(statements)} "
            "(separated by ';')"
        )
    return quantified_first(fold_negations(cast(exp.Expression, statements[0])))


def fold_negations(tree: exp.Expression) -> exp.Expression:
    """PostgreSQL's grammar folds a unary minus into the number it negates (``doNegate``), through parentheses
    and again for each minus: ``- -2147483648`` and ``-(-2147483648)`` are the constant 2147483648, a bigint,
    where negating the integer -2147483648 overflows (the lake route's error). Each chain of minuses over a
    number becomes the number, or one minus over it."""
    for node in list(tree.walk()):
        if not isinstance(node, exp.Neg) or isinstance(_outer(node), exp.Neg):
            continue
        signs, inner = 0, node
        while isinstance(inner, exp.Neg | exp.Paren):
            signs += isinstance(inner, exp.Neg)
            inner = inner.this
        if signs > 1 and isinstance(inner, exp.Literal) and not inner.is_string:
            folded = inner.copy() if signs % 2 == 0 else exp.Neg(this=inner.copy())
            if node is tree:
                return folded
            node.replace(folded)
    return tree


#: comparisons PostgreSQL's grammar quantifies (``x <op> ANY/ALL (...)``)
_QUANTIFIED = (exp.EQ, exp.NEQ, exp.LT, exp.LTE, exp.GT, exp.GTE, exp.Like, exp.ILike)
#: operators whose left operand is their ``this`` (the spine :func:`quantified_first` climbs)
_LEFT_OPERAND = (exp.Binary, exp.In, exp.Between)


def quantified_first(tree: exp.Expression) -> exp.Expression:
    """``x = ANY(a) IN (...)`` is ``(x = ANY(a)) IN (...)`` in PostgreSQL's grammar (the quantified comparison is
    one production, complete at its closing parenthesis, before any operator after it); sqlglot reads
    ``x = (ANY(a) IN (...))``, which answered true where PostgreSQL answers NULL. Such a comparison is moved
    back under the operators that followed it."""
    for node in list(tree.walk()):
        if not isinstance(node, _QUANTIFIED):
            continue
        spine: list[exp.Expr] = []
        right = node.expression
        while isinstance(right, _LEFT_OPERAND) and not isinstance(right, exp.Connector):
            spine.append(right)
            right = right.this
        if not spine or not isinstance(right, exp.Any | exp.All):
            continue
        top = spine[0]
        spine[-1].set("this", exp.Paren(this=type(node)(this=node.this, expression=right)))
        if node is tree:
            top.pop()
            tree = cast(exp.Expression, top)
        else:
            node.replace(top)
    return tree


def _outer(node: exp.Expr) -> exp.Expr | None:
    """The nearest ancestor of ``node`` that is not a parenthesis."""
    parent = node.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return parent


def too_deep() -> BadRequest:
    return BadRequest(
        "the statement is too deeply nested (parentheses, subqueries, CASE or chains of operators): "
        "flatten it, e.g. with a CTE or an IN list",
        code="too_deep",
    )


def _syntax_error(exc: ParseError) -> SqlSyntaxError:
    if not exc.errors:
        return SqlSyntaxError(f"syntax error: {_plain(str(exc))}")
    first = exc.errors[0]
    line, col = first.get("line"), first.get("col")
    near = first.get("highlight") or ""
    if col and near:  # sqlglot reports where the offending token ends; point at where it starts, like psql
        col = max(1, col - len(near) + 1)
    description = _plain(first.get("description") or "syntax error")
    where = f" at line {line}, column {col}" if line else ""
    return SqlSyntaxError(
        f"syntax error{where}: {description}" + (f" (near {near!r})" if near else ""), line=line, column=col
    )


_CLASS = re.compile(r"Required keyword: '\w+' missing for <class '[\w.]+'>")


def _plain(description: str) -> str:
    """sqlglot's parser messages without its class names (``... missing for <class '...Paren'>``)."""
    description = _CLASS.sub("the expression is incomplete", description)
    return re.sub(r"<class '[\w.]+'>", "an expression", description)


def _explain(sql: str, tokens: list[Token]) -> Statement:
    rest = tokens[1].text if len(tokens) > 1 else ""
    words = rest.split(None, 1)
    if words and words[0].upper() in ("ANALYZE", "ANALYSE", "VERBOSE", "(") or rest.startswith("("):
        raise UnsupportedQuery(
            "EXPLAIN takes no options here; it shows the route and each engine's SQL "
            "(POST /v1/explain gives the same as JSON)"
        )
    if not rest.strip():
        raise SqlSyntaxError("EXPLAIN needs a query to explain")
    # the explained query is parsed in place (EXPLAIN and what precedes it blanked), so that positions of
    # errors point into the text the user sent
    cut = tokens[0].end + 1
    masked = "".join(c if c == "\n" else " " for c in sql[:cut]) + sql[cut:]
    return Statement(EXPLAIN, parse_one(masked), sql)


def _show(sql: str, tokens: list[Token]) -> Statement:
    rest = tokens[1].text.split() if len(tokens) > 1 else []
    what = rest[0].lower() if rest else ""
    if what not in SHOW_WHAT:
        raise UnsupportedQuery(
            f"SHOW {what or '?'} is not supported; use SHOW TABLES [FROM source[.schema]], "
            "SHOW SCHEMAS or SHOW SOURCES"
        )
    where: list[str] = []
    if len(rest) >= 3 and rest[1].upper() in ("FROM", "IN"):
        where = [part.strip('"') for part in rest[2].split(".")]
    elif len(rest) > 1:
        raise SqlSyntaxError(
            f"cannot read SHOW {what.upper()} {' '.join(rest[1:])}; write SHOW TABLES FROM source[.schema]"
        )
    return Statement(SHOW, None, sql, show=what, show_in=where)


def position(node: exp.Expression | exp.Func) -> tuple[int | None, int | None]:
    """Line and column where ``node`` starts in the user's SQL, when sqlglot recorded them (sqlglot's ``col`` is
    where a token ends; ``start``/``end`` give its length)."""
    for sub in node.walk():
        meta = getattr(sub, "_meta", None) or {}
        if "line" in meta:
            col = meta.get("col")
            if col is not None and "start" in meta and "end" in meta:
                col = max(1, col - (meta["end"] - meta["start"]))
            return meta["line"], col
    return None, None

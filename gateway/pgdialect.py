"""sqlglot's PostgreSQL dialect, read closer to PostgreSQL: the gateway parses every statement with it.

sqlglot's parser (30.x) differs from PostgreSQL's grammar in a few places that matter to the gateway:

* ``@ x`` is PostgreSQL's absolute value (sqlglot reads ``@`` as a parameter marker and fails);
* ``ROLLUP``/``CUBE``/``GROUPING SETS`` take any expression (``ROLLUP (x IS NULL)``), not only a bitwise one;
* ``date_part('field', x)`` is ``float8`` and ``extract(field FROM x)`` is ``numeric``; sqlglot parses both into
  :class:`~sqlglot.exp.Extract`, so the parser marks the former (``_date_part``);
* ``timestamp 'x'::date`` is ``(timestamp 'x')::date``: a type name before a string is a constant of that type,
  which the operators after it apply to (sqlglot cast the whole ``'x'::date`` to timestamp);
* ``json_object(text[])`` and ``json_object(keys, values)`` are PostgreSQL's functions (sqlglot read only the
  SQL/JSON constructor ``JSON_OBJECT(k : v)`` and failed on them);
* ``f(j -> 'k')`` is the json operator (sqlglot reads a lambda of ``j``: PostgreSQL has none);
* ``to_char(x, pattern)``, ``to_date(text, pattern)`` and ``to_timestamp(text, pattern)`` stay plain calls with
  PostgreSQL's pattern (sqlglot rewrites it as ``strftime``'s), ``date_bin(stride, x, origin)`` a plain call with
  its origin (sqlglot reads it as a bare word).

Generation is unchanged (the class inherits PostgreSQL's generator); the lake route generates DuckDB.
"""

from __future__ import annotations

from typing import Any, cast

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.dialects.postgres import Postgres
from sqlglot.tokens import TokenType


def _to_timestamp(args: list[exp.Expr], dialect: Dialect) -> exp.Expr:
    """``to_timestamp(text, pattern)`` kept as written; ``to_timestamp(seconds)`` as sqlglot reads it."""
    if len(args) == 2:
        return exp.Anonymous(this="to_timestamp", expressions=args)
    return cast(exp.Expr, Postgres.Parser.FUNCTIONS["TO_TIMESTAMP"](args, dialect))


class LakegatePostgres(Postgres):
    class Parser(Postgres.Parser):  # type: ignore[misc,valid-type]  # sqlglot's dialects are extended so
        UNARY_PARSERS = {
            **Postgres.Parser.UNARY_PARSERS,
            TokenType.PARAMETER: lambda self: self._parse_at_sign(),
        }
        FUNCTIONS = {
            **Postgres.Parser.FUNCTIONS,
            # kept as written: sqlglot's translation of the pattern to strftime loses FM, padding and AM/PM
            "TO_CHAR": lambda args: exp.Anonymous(this="to_char", expressions=args),
            # kept as written: sqlglot reads the origin as a bare word (a column's name upper-cased, a literal
            # unquoted)
            "DATE_BIN": lambda args: exp.Anonymous(this="date_bin", expressions=args),
            # kept as written, as to_char: the lake route reads the text with PostgreSQL's pattern
            "TO_DATE": lambda args: exp.Anonymous(this="to_date", expressions=args),
            "TO_TIMESTAMP": _to_timestamp,
        }
        # PostgreSQL has no lambdas: ``f(j -> 'k')`` is the json operator, not a lambda of j (=> stays: named args)
        LAMBDAS = {k: v for k, v in Postgres.Parser.LAMBDAS.items() if k != TokenType.ARROW}
        FUNCTION_PARSERS = {
            **{k: v for k, v in Postgres.Parser.FUNCTION_PARSERS.items() if k != "JSON_OBJECT"},
            "DATE_PART": lambda self: self._parse_marked_date_part(),
        }

        def _parse_type(self, parse_interval: bool = True, fallback_to_identifier: bool = False) -> Any:
            """``type 'literal'`` then ``::``/``[...]``: the constant first, the operators on it."""
            first, second = self._curr, self._next
            result = super()._parse_type(parse_interval, fallback_to_identifier)
            literal_type = (
                first is not None
                and first.token_type in self.TYPE_TOKENS
                and second is not None
                and second.token_type == TokenType.STRING
            )
            if not literal_type or not isinstance(result, exp.Cast) or isinstance(result.this, exp.Literal):
                return result
            link, chain = result.this, []
            while isinstance(link, exp.Cast | exp.Bracket) and not isinstance(link, exp.Literal):
                chain.append(link)
                link = link.this
            if not chain or not isinstance(link, exp.Literal) or not link.is_string:
                return result
            chain[-1].set("this", exp.Cast(this=link, to=result.args["to"]))
            return chain[0]

        def _parse_at_sign(self) -> Any:
            """``@ x`` is abs(x); any other parameter token (``$1``) parses as sqlglot parses it."""
            if self._prev.text != "@":
                self._retreat(self._index - 1)
                return self._parse_at_time_zone(self._parse_type())
            return self.expression(exp.Abs(this=self._parse_unary()))

        def _parse_marked_date_part(self) -> exp.Expr:
            node = self._parse_date_part()
            node.set("_date_part", True)
            return node

        def _parse_cube_or_rollup(self, with_prefix: bool = False) -> Any:
            if self._match(TokenType.CUBE):
                kind: type[exp.Cube | exp.Rollup] = exp.Cube
            elif self._match(TokenType.ROLLUP):
                kind = exp.Rollup
            else:
                return None
            return self.expression(
                kind(expressions=[] if with_prefix else self._parse_wrapped_csv(self._parse_disjunction))
            )

        def _parse_grouping_set(self) -> Any:
            return self._parse_grouping_sets() or self._parse_cube_or_rollup() or self._parse_disjunction()


DIALECT = LakegatePostgres

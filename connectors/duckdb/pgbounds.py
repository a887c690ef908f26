"""Bounds on the arguments of the DuckDB functions whose one call can outlast a query's time limit (created in
the gateway's DuckDB before its configuration is locked).

DuckDB sees an interrupt between vectors of 2048 rows, never inside one function call over a vector, nor while
it folds a constant expression at plan time (``EXPLAIN`` included). A function whose cost is super-linear in its
arguments (edit distances), or whose result is far larger than its arguments (``repeat``, ``lpad``, series,
splits), ran for minutes on arguments a query of a few bytes makes (DuckDB 1.5.5: ``levenshtein`` of two
100,000-character strings 99 s, ``lpad(x, 2000000000)`` 5 s, a series of 10^8 elements per row...). Each such
function is shadowed here by a macro of the same name (DuckDB resolves a name to the database's macro before its
built-in, for operators and for the built-in macros that call it, such as ``split_part``) that raises a clear
error (SQLSTATE 54000, through :mod:`lakegate.connectors.duckdb.pgerrors`) before the call when its arguments
pass a budget, then calls the built-in as ``system.main.<name>``. Which functions: those ``python -m
bench.function_costs`` finds super-linear or amplifying. Their budgets: a vector of 2048 calls at the bound took
at most about 0.5 s on a loaded 2-core runner (tests/test_gateway_engine_limits.py runs each at its bound over
an endless series: 408, and no CPU spent from twice the time limit on), and is far above what ordinary queries
use. ``levenshtein`` keeps PostgreSQL's own bound (255 characters, fuzzystrmatch) and message.

Most checks run inside a one-element ``list_apply`` so that each argument is evaluated once: a macro parameter
used twice is computed twice, and ``random()`` would let the check see another value than the call. The checks of
the hot text functions (regular expressions, splits) and of the series are plain ``CASE`` expressions instead,
which DuckDB folds away for constant arguments (a pattern inside a lambda is no longer a constant: the regular
expression would be compiled for every row; a time's text inside a struct is no longer read as a time); the
gateway refuses volatile functions in their arguments (:mod:`lakegate.gateway.dialect_bounds`), and calls the
built-in directly where it checked literal arguments itself (``pg_raw_*``). Users cannot call the ``pg_``
helpers (the guard denies the prefix).

What this does not bound: the cost of linear functions, which is that of their input, however many of them a
query chains over one vector (nested ``upper(lower(...))`` over 16 KiB rows held DuckDB 70 s past an interrupt
for 300 calls), and the final phase of ordered and distinct aggregates over many rows; neither is a function's
argument.
"""

from __future__ import annotations

import collections
import functools
import re

import duckdb

MAX_EDIT = 255  #: characters of each argument of levenshtein (PostgreSQL's MAX_LEVENSHTEIN_STRLEN)
MAX_DAMERAU = 100  #: characters of each argument of damerau_levenshtein (8 times levenshtein's cost per cell)
MAX_JARO = 1000  #: characters of each argument of the Jaro similarities
MAX_TEXT = 16384  #: characters (bytes for bytea) of a result of repeat, lpad, rpad, replace, array_to_string
MAX_ELEMENTS = 4096  #: elements of a list a series of numbers, repeat, list_resize or equi_width_bins makes
MAX_TIMES = 1024  #: elements of a series of times (an interval addition each: 4 to 8 numbers' worth)
MAX_PIECES = 2048  #: pieces of a string_split
MAX_MATCHES = 512  #: matches of regexp_extract_all, pieces of regexp_split_to_array (each costs ~1 us)
MAX_PATTERN = 1024  #: characters of a regular expression (compiled for every row when it is not a constant)
MAX_WIDTH = 9999  #: field width or precision of printf
#: steps of DuckDB's backtracking LIKE: a text of n characters and k '%' that more pattern follows cost up to n^k
MAX_LIKE_STEPS = 16384


LIMIT_WORDS = "is over the lake route's limit of"
#: the errors this module raises, with the SQLSTATE PostgreSQL gives the same failure (pgerrors reads them)
ERRORS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\w+ argument exceeds maximum length of \d+ characters"), "22023"),
    (re.compile(r"\w+\(\): [^\n]*? " + re.escape(LIMIT_WORDS) + r" \d+ [^\n]*"), "54000"),
)
_ADVICE = (
    "(DuckDB cannot interrupt one call of it at the time limit); run the query on a PostgreSQL source (pg.*)"
)


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def limit_error(name: str, what: str, limit: int, unit: str, advice: str = "") -> str:
    """The ``error()`` call of a bound: names the function, what is over, the limit and what to do."""
    more = f", or {advice}" if advice else ""
    return f"error({_literal(f'{name}(): {what} {LIMIT_WORDS} {limit} {unit} {_ADVICE}{more}')})"


Check = tuple[str, str]  #: (the condition under which the call is refused, the error() it raises)


def _single(name: str, params: tuple[str, ...], checks: list[Check], raw: tuple[str, ...] = ()) -> str:
    """One overload: the arguments evaluated once (packed into a struct that a one-element list_apply hands to
    the checks, as ``p``, and to the built-in). ``raw`` parameters stay outside (the built-in wants them constant).
    No parameter may be named ``p``."""
    assert "p" not in params
    packed = ", ".join(f"'{p}': {p}" for p in params if p not in raw)
    args = ", ".join(p if p in raw else f"p.{p}" for p in params)
    whens = " ".join(f"WHEN {over} THEN {error}" for over, error in checks)
    return (
        f"({', '.join(params)}) AS list_apply([{{{packed}}}], lambda p: CASE {whens} "
        f"ELSE system.main.{name}({args}) END)[1]"
    )


def _case(name: str, params: tuple[str, ...], checks: list[Check]) -> str:
    """One overload checked by a CASE (its arguments evaluated twice; constant ones fold away)."""
    whens = " ".join(f"WHEN {over} THEN {error}" for over, error in checks)
    return f"({', '.join(params)}) AS CASE {whens} ELSE system.main.{name}({', '.join(params)}) END"


def _macro(names: tuple[str, ...], overloads: list[str]) -> list[str]:
    return [f'CREATE MACRO "{name}"{", ".join(o.replace("@", name) for o in overloads)}' for name in names]


def _edit(name: str, limit: int, pg_message: bool) -> Check:
    over = f"length(p.a) > {limit} OR length(p.b) > {limit}"
    if pg_message:  # PostgreSQL's words (fuzzystrmatch), SQLSTATE 22023
        return over, f"error('{name} argument exceeds maximum length of {limit} characters')"
    return over, limit_error(name, "an argument", limit, "characters", "compare shorter strings")


def _edits() -> list[str]:
    out = []
    for name in ("levenshtein", "editdist3"):
        out += _macro((name,), [_single(name, ("a", "b"), [_edit(name, MAX_EDIT, True)])])
    check = _edit("damerau_levenshtein", MAX_DAMERAU, False)
    out += _macro(("damerau_levenshtein",), [_single("damerau_levenshtein", ("a", "b"), [check])])
    for name in ("jaro_similarity", "jaro_winkler_similarity"):
        check = _edit(name, MAX_JARO, False)
        out += _macro((name,), [_single(name, ("a", "b"), [check]), _single(name, ("a", "b", "c"), [check])])
    return out


def _text_results() -> list[str]:
    size = "greatest(length(CAST(p.x AS VARCHAR)), 1)::DOUBLE * p.n"  # text, bytea (as its escapes) and lists
    check = (f"{size} > {MAX_TEXT}", limit_error("repeat", "the result", MAX_TEXT, "characters"))
    out = _macro(("repeat",), [_single("repeat", ("x", "n"), [check])])
    for name in ("lpad", "rpad"):
        check = (f"p.n > {MAX_TEXT}", limit_error(name, "the length", MAX_TEXT, "characters"))
        out += _macro((name,), [_single(name, ("s", "n", "f"), [check])])
    # replace(s, a, b): b for each a in s; only a replacement more than 16 times longer is counted
    count = "(length(p.s) - length(system.main.replace(p.s, p.a, ''))) // greatest(length(p.a), 1)"
    over = (
        f"length(p.b) > 16 * greatest(length(p.a), 1) AND length(p.s)::DOUBLE * length(p.b) > {MAX_TEXT} "
        f"AND length(p.s) + {count}::DOUBLE * (length(p.b) - length(p.a)) > {MAX_TEXT}"
    )
    check = (over, limit_error("replace", "the result", MAX_TEXT, "characters"))
    out += _macro(("replace",), [_single("replace", ("s", "a", "b"), [check])])
    # array_to_string(l, sep): the separator once per element. A CASE: string_agg wants a constant separator,
    # which it is not inside a lambda
    joined = f"len(l)::DOUBLE * length(sep) > {MAX_TEXT}"
    check = (
        joined,
        limit_error("array_to_string", "the result", MAX_TEXT, "characters", "join fewer elements"),
    )
    out += _macro(("array_to_string",), [_case("array_to_string", ("l", "sep"), [check])])
    digits = len(str(MAX_WIDTH)) + 1
    wide = f"regexp_matches(p.f, '%[^a-zA-Z%]*([0-9]{{{digits},}}|[*])')"
    check = (
        wide,
        limit_error("printf", "a field width or precision", MAX_WIDTH, "characters (or a * width)"),
    )
    out += _macro(
        ("printf",), [_single("printf", ("f", *(f"a{i}" for i in range(k))), [check]) for k in range(17)]
    )
    return out


#: the elements of a series of integers, or of times stepped by an interval (a month counts 30 days): NULL for
#: the other kind (both read the arguments' text, which every type has)
_NUMBERS = (
    "(TRY_CAST(CAST(b AS VARCHAR) AS HUGEINT) - TRY_CAST(CAST(a AS VARCHAR) AS HUGEINT))::DOUBLE "
    "/ nullif(TRY_CAST(CAST(s AS VARCHAR) AS HUGEINT), 0)"
)
_TIMES = (
    "(epoch(TRY_CAST(CAST(b AS VARCHAR) AS TIMESTAMPTZ)) - epoch(TRY_CAST(CAST(a AS VARCHAR) AS TIMESTAMPTZ))) "
    "/ nullif(epoch(TRY_CAST(CAST(s AS VARCHAR) AS INTERVAL)), 0)"
)


def _lists() -> list[str]:
    """Series are checked by a CASE (a lambda's struct would turn the text of a time into text, which the built-in
    then does not read as a time): the gateway refuses volatile functions in their arguments."""
    out = []
    for name in ("range", "generate_series"):
        advice = f"use it as a table (FROM {name}(...)), which has none"
        numbers = limit_error(name, "the series", MAX_ELEMENTS, "elements", advice)
        times = limit_error(name, "the series of times", MAX_TIMES, "elements", advice)
        out += _macro(
            (name,),
            [
                _case(name, ("b",), [(f"CAST(b AS DOUBLE) > {MAX_ELEMENTS}", numbers)]),
                _case(
                    name, ("a", "b"), [(f"CAST(b AS DOUBLE) - CAST(a AS DOUBLE) > {MAX_ELEMENTS}", numbers)]
                ),
                _case(
                    name,
                    ("a", "b", "s"),
                    [(f"abs({_NUMBERS}) > {MAX_ELEMENTS}", numbers), (f"abs({_TIMES}) > {MAX_TIMES}", times)],
                ),
            ],
        )
    check = (
        f"CAST(p.n AS DOUBLE) > {MAX_ELEMENTS}",
        limit_error("list_resize", "the size", MAX_ELEMENTS, "elements"),
    )
    out += _macro(
        ("list_resize", "array_resize"),
        [_single("@", ("l", "n"), [check]), _single("@", ("l", "n", "v"), [check])],
    )
    check = (
        f"p.n > {MAX_ELEMENTS}",
        limit_error("equi_width_bins", "the number of bins", MAX_ELEMENTS, "bins"),
    )
    out += _macro(("equi_width_bins",), [_single("equi_width_bins", ("lo", "hi", "n", "nice"), [check])])
    return out


def _matches(options: str) -> str:
    """More than MAX_MATCHES matches of ``p`` in ``s`` (each replaced by one character, then by none)."""
    flags = f"'g' || {options}"
    return (
        f"length(s) > {MAX_MATCHES} AND length(system.main.regexp_replace(s, p, 'x', {flags})) "
        f"- length(system.main.regexp_replace(s, p, '', {flags})) > {MAX_MATCHES}"
    )


def _splits() -> list[str]:
    """String splits and regular expressions: CASE checks (constant patterns fold; see the module doc)."""
    pieces = (
        "CASE WHEN sep = '' THEN length(s) ELSE "
        "(length(s) - length(system.main.replace(s, sep, ''))) // length(sep) + 1 END"
    )
    error = limit_error(
        "string_split", "the number of pieces", MAX_PIECES, "pieces", "split a shorter string"
    )
    check = (f"length(s) > {MAX_PIECES} AND {pieces} > {MAX_PIECES}", error)
    out = _macro(
        ("string_split", "str_split", "string_to_array", "split"), [_case("@", ("s", "sep"), [check])]
    )

    def long(name: str) -> Check:
        return f"length(p) > {MAX_PATTERN}", limit_error(
            name, "the regular expression", MAX_PATTERN, "characters"
        )

    for name in ("regexp_matches", "regexp_full_match"):
        out += _macro(
            (name,), [_case(name, ("s", "p"), [long(name)]), _case(name, ("s", "p", "o"), [long(name)])]
        )
    shapes = (("s", "p"), ("s", "p", "g"), ("s", "p", "g", "o"))
    out += _macro(
        ("regexp_extract",), [_case("regexp_extract", ps, [long("regexp_extract")]) for ps in shapes]
    )
    name = "regexp_extract_all"
    many = limit_error(name, "the number of matches", MAX_MATCHES, "matches", "match in a shorter string")
    out += _macro(
        (name,),
        [_case(name, ps, [long(name), (_matches("o" if "o" in ps else "''"), many)]) for ps in shapes],
    )
    name = "regexp_split_to_array"
    split = limit_error(name, "the number of pieces", MAX_MATCHES, "pieces", "split a shorter string")
    out += _macro(
        ("string_split_regex", "str_split_regex", "regexp_split_to_array"),
        [
            _case("@", ps, [long(name), (_matches("o" if "o" in ps else "''"), split)])
            for ps in (("s", "p"), ("s", "p", "o"))
        ],
    )
    name = "regexp_replace"
    error = limit_error(name, "the result", MAX_TEXT, "characters")

    def grows(options: str) -> str:  # a replacement longer than 8 characters, with its matches counted
        flags = f"'g' || {options}"
        return (
            f"length(r) > 8 AND length(s)::DOUBLE * length(r) > {MAX_TEXT} AND length(s) + "
            f"(length(system.main.regexp_replace(s, p, 'x', {flags})) - "
            f"length(system.main.regexp_replace(s, p, '', {flags})))::DOUBLE * length(r) * 2 > {MAX_TEXT}"
        )

    out += _macro(
        (name,),
        [
            _case(name, ps, [long(name), (grows("o" if "o" in ps else "''"), error)])
            for ps in (("s", "p", "r"), ("s", "p", "r", "o"))
        ],
    )
    return out


def _wildcards(pattern: str, wildcard: str) -> str:
    """How many ``wildcard`` characters more pattern follows (an escaped one counts too: an estimate from above)."""
    trimmed = f"rtrim({pattern}, '{wildcard}')"
    return f"(length({trimmed}) - length(system.main.replace({trimmed}, '{wildcard}', '')))"


def _likes() -> list[str]:
    """The bounded LIKE of a pattern that is not a literal (:mod:`lakegate.gateway.dialect_bounds` rewrites literal
    ones into regular expressions); the regular expression of a literal one, compiled once."""
    out = [
        "CREATE MACRO pg_like_regex(s, p) AS system.main.regexp_full_match(s, p, 's')",
        "CREATE MACRO pg_ilike_regex(s, p) AS system.main.regexp_full_match(s, p, 'si')",
    ]
    for name, builtin, escaped in (("pg_like", "~~", "like_escape"), ("pg_ilike", "~~*", "ilike_escape")):
        k = _wildcards("p.pat", "%")
        over = f"{k} >= 2 AND pow(length(p.s), {k}) > {MAX_LIKE_STEPS}"
        error = limit_error(
            "like", "the text's length for the pattern's % wildcards", MAX_LIKE_STEPS, "steps", "use fewer %"
        )
        two = _single(builtin, ("s", "pat"), [(over, error)]).replace(
            f"system.main.{builtin}(", f'system.main."{builtin}"('
        )
        three = _single(escaped, ("s", "pat", "e"), [(over, error)], raw=("e",))
        out.append(f"CREATE MACRO {name}{two}, {three}")
    k = _wildcards("p.pat", "*")
    over = f"{k} >= 2 AND pow(length(p.s), {k}) > {MAX_LIKE_STEPS}"
    error = limit_error(
        "glob", "the text's length for the pattern's * wildcards", MAX_LIKE_STEPS, "steps", "use fewer *"
    )
    two = _single("~~~", ("s", "pat"), [(over, error)]).replace("system.main.~~~(", 'system.main."~~~"(')
    out.append(f"CREATE MACRO pg_glob{two}")
    return out


#: the functions whose macros check with CASE an argument that may not be a constant (their arguments are then
#: evaluated twice: the gateway refuses volatile functions in them)
SPLITS: frozenset[str] = frozenset(
    {
        "range",
        "generate_series",
        "string_split",
        "str_split",
        "string_to_array",
        "split",
        "regexp_extract_all",
        "string_split_regex",
        "str_split_regex",
        "regexp_split_to_array",
        "array_to_string",
    }
)
CASE_CHECKED: frozenset[str] = SPLITS | {
    "range",
    "generate_series",
    "regexp_matches",
    "regexp_full_match",
    "regexp_extract",
    "regexp_replace",
}

_MACRO = re.compile(r'CREATE (?:OR REPLACE )?MACRO "?(\w+)"?(.*)', re.DOTALL | re.IGNORECASE)
_CALLS = re.compile(r"(\w+)\s*\(")


@functools.cache
def case_checked() -> frozenset[str]:
    """:data:`CASE_CHECKED` and every macro that hands its arguments to a split, DuckDB's own (``split_part``)
    and the gateway's (``pg_string_to_array``): a volatile argument of those is computed twice as well. (The
    gateway's macros call the regular expressions with constant patterns and short replacements, which the
    CASE folds away.)"""
    from lakegate.connectors.duckdb import pgdatetime, pgmacros

    calls: dict[str, set[str]] = collections.defaultdict(set)
    for statement in (*pgmacros.MACROS, *pgdatetime.MACROS):
        found = _MACRO.match(statement.strip())
        if found:
            calls[found.group(1).lower()] |= {c.lower() for c in _CALLS.findall(found.group(2))}
    with duckdb.connect() as con:
        for name, body in con.execute(
            "SELECT function_name, macro_definition FROM duckdb_functions() WHERE function_type = 'macro'"
        ).fetchall():
            calls[name.lower()] |= {c.lower() for c in _CALLS.findall(body or "")}
    closed = set(SPLITS)
    while True:
        more = {name for name, called in calls.items() if called & closed} - closed
        if not more:
            return frozenset(closed | CASE_CHECKED)
        closed |= more


def macros() -> list[str]:
    return [*_edits(), *_text_results(), *_lists(), *_splits(), *_likes(), *RAW]


#: built-ins the gateway calls unchecked where it checked the arguments that bound them itself (literals): the
#: shadowing macro's check would cost every row a struct and a lambda (lpad 1.5 times slower, replace 2.2)
RAW = (
    "CREATE MACRO pg_raw_lpad(s, n, f) AS system.main.lpad(s, n, f)",
    "CREATE MACRO pg_raw_rpad(s, n, f) AS system.main.rpad(s, n, f)",
    "CREATE MACRO pg_raw_replace(s, a, b) AS system.main.replace(s, a, b)",
    *(
        f"CREATE MACRO pg_raw_printf{k}(f{''.join(f', a{i}' for i in range(k))}) AS "
        f"system.main.printf(f{''.join(f', a{i}' for i in range(k))})"
        for k in range(17)
    ),
)


def printf_too_wide(fmt: str) -> bool:
    """Whether a printf format has a field width or precision past MAX_WIDTH, or a ``*`` one (as the macro
    checks it)."""
    digits = len(str(MAX_WIDTH)) + 1
    return re.search(f"%[^a-zA-Z%]*([0-9]{{{digits},}}|[*])", fmt) is not None


def shadowed() -> list[str]:
    """The built-in functions this module's macros shadow (every name a query may call them by)."""
    names = (_MACRO.match(statement) for statement in macros())
    return [found.group(1) for found in names if found and not found.group(1).startswith("pg_")]


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Create the bounding macros in ``con`` (after the gateway's other macros, which call some of them)."""
    for statement in macros():
        con.execute(statement)

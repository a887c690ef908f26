"""The PostgreSQL route sends PostgreSQL the user's own text (issue 28.5): sqlglot's regeneration of valid
PostgreSQL is not always the same PostgreSQL (``to_hex`` becomes ``hex``, ``date_bin`` and ``= ALL(array)``
change meaning, ``t.a FROM t AS x`` or an alias with too many column names come back with rows where PostgreSQL
raises an error). So PostgreSQL parses, binds and fails the statement exactly as it would for the user.

Only the names that must change are rewritten, at the positions libpg_query (PostgreSQL's own parser, see
:mod:`lakegate.gateway.pggrammar`) gives them, so its reading of the text is the one that counts, whatever the
text's lexical features (``E'\\x41'``, dollar quotes, ``U&"..."``, nested comments):

* a table (``RangeVar``) becomes the PostgreSQL name the gateway resolved it to (``pg.public.t`` -> ``public.t``,
  ``t`` -> ``public.t``);
* a column written with its source (``ColumnRef`` ``pg.public.t.a``, also ``pg.public.t.*``) loses that part;
* ``current_schema()`` becomes ``public``, the schema a one-part name means (:data:`CURRENT_SCHEMA`).

Every table PostgreSQL reads must be one the gateway resolved (and so guarded) or a CTE reference in scope, at the
same position in both readings; otherwise, and where libpg_query gives no tree (a tree too deep to decode; the
statement of an EXPLAIN, which the router gets without its text), the statement goes out regenerated from the
AST the guard checked instead (:meth:`lakegate.gateway.route.Router._postgres`).

The row cap (:func:`capped`) reads PostgreSQL's tree too: a LIMIT appended where the statement has none, the whole
wrapped (``SELECT * FROM (<text>) AS _lakegate LIMIT n``) where its own LIMIT/FETCH is larger or not a constant.
Trailing semicolons and comments are cut off first (the text ends at its last token), so that what the cap
appends is never commented out nor a second statement.
"""

from __future__ import annotations

from typing import Any

from sqlglot import exp

from lakegate.gateway import pgcalls, scope

_SPACE = frozenset(" \t\n\r\f\v")  #: scan.l's ``space``
#: ``current_schema()`` as the gateway answers it: the schema a one-part table name means (the pooled session's
#: search_path is pg_catalog alone); a scalar subquery is named after its column, as the call would be
CURRENT_SCHEMA = "(SELECT 'public'::pg_catalog.name AS current_schema)"
_RANGE_VAR_PARTS = ("catalogname", "schemaname", "relname")


def user_text(
    sql: str,
    tree: list[Any] | None,
    ast: exp.Expression,
    tables: list[tuple[exp.Table, str]],
    source: str | None,
) -> str | None:
    """``sql`` with each table of ``tables`` (sqlglot's nodes, resolved) replaced by its PostgreSQL name and
    ``source.`` dropped from columns written with it, or None where PostgreSQL's reading (``tree``) of the
    tables differs from sqlglot's or is not known."""
    if not tree or len(tree) != 1 or not isinstance(tree[0], dict):
        return None
    offsets = _Offsets(sql)
    statement = tree[0]
    start = offsets.char(int(statement.get("stmt_location") or 0))
    length = statement.get("stmt_len")
    stop = offsets.char(int(statement.get("stmt_location") or 0) + int(length)) if length else len(sql)
    end = _last_token_end(sql, start, stop)
    if end is None:
        return None
    named: dict[int, str] = {}
    for table, name in tables:
        first = table.parts[0].meta.get("start") if table.parts else None
        if first is None:
            return None
        named[first] = name
    ctes = {table.parts[0].meta.get("start") for table in scope.bind(ast).ctes if table.parts}
    edits: list[tuple[int, int, str]] = []
    for kind, body in pgcalls.nodes(tree):
        if kind == "RangeVar":
            at = offsets.char(int(body.get("location", -1)))
            count = sum(1 for key in _RANGE_VAR_PARTS if body.get(key))
            spans = _name_spans(sql, at, count)
            if spans is None:
                return None
            if at in named:
                edits.append((at, spans[-1][1], named.pop(at)))
            elif not (count == 1 and at in ctes):
                return None  # a table PostgreSQL would read that the gateway did not resolve: send the AST
        elif _is_current_schema(kind, body):
            at = offsets.char(int(body.get("location", -1)))
            finish = _call_end(sql, at, len(body.get("funcname") or ()) if kind == "FuncCall" else 0)
            if finish is None:
                return None
            edits.append((at, finish, CURRENT_SCHEMA))
        elif kind == "ColumnRef" and source is not None:
            fields = body.get("fields") or []
            first_name = (
                fields[0].get("String", {}).get("sval") if fields and isinstance(fields[0], dict) else None
            )
            if len(fields) == 4 and first_name in (source, source.lower()):
                at = offsets.char(int(body.get("location", -1)))
                spans = _name_spans(sql, at, 2)
                if spans is None:
                    return None
                edits.append((at, spans[1][0], ""))  # ``pg.public.t.a`` -> ``public.t.a``
    if named:
        return None  # a table sqlglot resolved that PostgreSQL reads otherwise
    out, at = [], start
    for begin, finish, name in sorted(edits):
        if begin < at or finish > end:
            return None
        out += [sql[at:begin], name]
        at = finish
    out.append(sql[at:end])
    return "".join(out)


def _is_current_schema(kind: str, body: dict[str, Any]) -> bool:
    if kind == "SQLValueFunction":
        return body.get("op") == "SVFOP_CURRENT_SCHEMA"
    if kind != "FuncCall" or body.get("args"):
        return False
    schema, name = pgcalls.name_of(body.get("funcname"))
    return name == "current_schema" and schema in ("", "pg_catalog")


def _call_end(sql: str, at: int, parts: int) -> int | None:
    """Past ``name`` (``parts`` dotted parts; 0: one keyword) and its empty ``()`` written at ``at``."""
    if parts == 0:
        return _word_end(sql, at) if at >= 0 else None
    spans = _name_spans(sql, at, parts)
    if spans is None:
        return None
    opening = _blank_end(sql, spans[-1][1], len(sql))
    if opening is None or not sql.startswith("(", opening):
        return None
    closing = _blank_end(sql, opening + 1, len(sql))
    return closing + 1 if closing is not None and sql.startswith(")", closing) else None


def capped(text: str, tree: list[Any], max_rows: int | None) -> str:
    """``text`` (whose PostgreSQL tree is ``tree``) returning at most ``max_rows + 1`` rows: a LIMIT appended where
    the statement has none, the whole wrapped where its own LIMIT (or FETCH) is larger or not a constant."""
    select = tree[0].get("stmt", {}).get("SelectStmt") if tree else None
    if max_rows is None or select is None:
        return text
    cap = max_rows + 1
    count = select.get("limitCount")
    if count is None and select.get("limitOffset") is None and not select.get("lockingClause"):
        return f"{text} LIMIT {cap}"  # the text ends at a token (user_text), never inside a comment
    if count is not None:
        value = _integer(count)
        if value is not None and value <= cap:
            return text
    return f"SELECT * FROM (\n{text}\n) AS _lakegate LIMIT {cap}"


def _integer(node: Any) -> int | None:
    """The value of an integer constant node (``{"A_Const": {"ival": {"ival": 5}}}``; 0 is ``{"ival": {}}``)."""
    const = node.get("A_Const") if isinstance(node, dict) else None
    if not isinstance(const, dict):
        return None
    if "ival" in const:
        return int(const["ival"].get("ival", 0))
    text = str(const.get("fval", {}).get("fval", ""))
    return int(text) if text.isdigit() else None


class _Offsets:
    """libpg_query's locations are byte offsets in the UTF-8 text; Python's are characters."""

    def __init__(self, sql: str) -> None:
        self.ascii = sql.isascii()
        self.data = b"" if self.ascii else sql.encode()

    def char(self, byte: int) -> int:
        if byte < 0:
            return -1
        if self.ascii:
            return byte
        return len(self.data[:byte].decode(errors="replace"))


# ------------------------------------------------------------------------------ PostgreSQL's lexer (scan.l)


def _ident_start(ch: str) -> bool:
    return ch == "_" or ("a" <= ch <= "z") or ("A" <= ch <= "Z") or (ch != "" and ord(ch[0]) >= 0x80)


def _ident_cont(ch: str) -> bool:
    return _ident_start(ch) or ch == "$" or ("0" <= ch <= "9" and ch != "")


def _blank_end(sql: str, i: int, stop: int) -> int | None:
    """Past the whitespace and comments (``--`` to a line end, nested ``/* */``) at ``i``; None: unterminated."""
    while i < stop:
        if sql[i] in _SPACE:
            i += 1
        elif sql.startswith("--", i):
            while i < stop and sql[i] not in "\n\r":
                i += 1
        elif sql.startswith("/*", i):
            depth, i = 1, i + 2
            while depth:
                if i >= stop:
                    return None
                if sql.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif sql.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    i += 1
        else:
            break
    return i


def _word_end(sql: str, i: int) -> int:
    while i < len(sql) and _ident_cont(sql[i]):
        i += 1
    return i


def _quoted_end(sql: str, i: int, quote: str, backslash: bool = False) -> int | None:
    """Past the quoted text opened at ``i`` (a doubled quote is one; with ``backslash``, ``\\x`` is one)."""
    i += 1
    while i < len(sql):
        ch = sql[i]
        if backslash and ch == "\\":
            i += 2
        elif ch == quote:
            if sql.startswith(quote, i + 1):
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return None


def _dollar_end(sql: str, i: int) -> int | None:
    """Past the dollar-quoted string opened at ``i`` (``$$...$$``, ``$tag$...$tag$``), or None if none opens."""
    j = i + 1
    if j < len(sql) and _ident_start(sql[j]):
        while j < len(sql) and _ident_cont(sql[j]) and sql[j] != "$":
            j += 1
    if not sql.startswith("$", j):
        return None
    close = sql.find(sql[i : j + 1], j + 1)
    return None if close < 0 else close + j + 1 - i


def _token_end(sql: str, i: int) -> int | None:
    """Past the token at ``i`` (strings and quoted names whole; an operator character by character)."""
    ch = sql[i]
    if ch == "'":
        return _quoted_end(sql, i, "'")
    if ch == '"':
        return _quoted_end(sql, i, '"')
    if ch == "$":
        end = _dollar_end(sql, i)
        return end if end is not None else _word_end(sql, i + 1)  # $1
    if _ident_start(ch):
        k = _word_end(sql, i)
        word = sql[i:k]
        if sql.startswith("'", k):  # E'...' (backslash escapes), B'', X'', N'', typed literals: 'x' follows
            return _quoted_end(sql, k, "'", backslash=word in ("e", "E"))
        if word in ("u", "U") and sql.startswith("&'", k):
            return _quoted_end(sql, k + 1, "'")
        return k
    if "0" <= ch <= "9":
        k = i
        while k < len(sql) and (sql[k].isalnum() or sql[k] in "._"):
            k += 1
        return k
    return i + 1


def _last_token_end(sql: str, start: int, stop: int) -> int | None:
    """Where the last token of ``sql[start:stop]`` that is not a ``;`` ends (what follows: semicolons, blanks
    and comments), or None where a string or comment does not end."""
    i, end = start, start
    while True:
        j = _blank_end(sql, i, stop)
        if j is None:
            return None
        if j >= stop:
            return end if end > start else None
        if sql[j] == ";":
            i = j + 1
            continue
        k = _token_end(sql, j)
        if k is None or k > stop:
            return None
        i = end = k


def _ident_end(sql: str, i: int) -> int | None:
    """Past the identifier at ``i``: a word, a quoted name, or ``U&"..."`` with its ``UESCAPE '!'`` clause."""
    ch = sql[i : i + 1]
    if ch == '"':
        return _quoted_end(sql, i, '"')
    if ch in ("u", "U") and sql.startswith('&"', i + 1):
        k = _quoted_end(sql, i + 2, '"')
        j = _blank_end(sql, k, len(sql)) if k is not None else None
        if j is not None and sql[j : j + 7].lower() == "uescape" and not _ident_cont(sql[j + 7 : j + 8]):
            m = _blank_end(sql, j + 7, len(sql))
            if m is not None and sql.startswith("'", m):
                return _quoted_end(sql, m, "'")
        return k
    if _ident_start(ch):
        return _word_end(sql, i)
    return None


def _name_spans(sql: str, at: int, count: int) -> list[tuple[int, int]] | None:
    """The spans of the ``count`` dotted parts of the name written at ``at`` (blanks and comments may stand
    around the dots), or None where the text there is not such a name."""
    if at < 0 or count < 1:
        return None
    spans: list[tuple[int, int]] = []
    i: int | None = at
    for index in range(count):
        if index:
            dot = _blank_end(sql, spans[-1][1], len(sql))
            if dot is None or not sql.startswith(".", dot):
                return None
            i = _blank_end(sql, dot + 1, len(sql))
        end = _ident_end(sql, i) if i is not None else None
        if i is None or end is None:
            return None
        spans.append((i, end))
    return spans

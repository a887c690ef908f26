"""PostgreSQL functions and operators DuckDB lacks for some types, written with what DuckDB has (rules of
:mod:`lakegate.gateway.dialect`):

* ``bytea``: ``length(b)`` is its bytes (``octet_length``), ``encode(b, 'hex')`` PostgreSQL's lower-case hex
  (``base64`` and ``escape`` are refused: PostgreSQL wraps base64 lines at 76 characters and escapes bytes its own
  way);
* times of day: ``timestamp + time`` (and ``time + timestamp``) adds the time as an interval, ``time - time`` is
  the interval between them (PostgreSQL's ``time_mi_time``: microseconds only, ``24:00`` included);
* an array literal (``'{1,2,"x y",NULL}'::int[]``): PostgreSQL's text form of a one-dimensional array, read as
  PostgreSQL reads it (quotes, backslash escapes, unquoted ``NULL``, blanks around unquoted elements), becomes a
  list of the elements cast to the element type (DuckDB reads ``[1, 2]``), for integer and text elements; other
  dimensions and element types are refused;
* numeric ``*``: DuckDB multiplies two decimals of up to 18 digits in 18 digits (``DECIMAL(12,4) *
  DECIMAL(12,4)`` is ``DECIMAL(18,8)``, an overflow error beyond), where PostgreSQL's product has every digit: an
  operand of known scale is widened to 38 digits first;
* ``lag``/``lead`` with a default of another type than the value's: DuckDB casts the default to the value's type,
  PostgreSQL takes their common one: taken where the value's decimal holds the default exactly, else refused.
"""

from __future__ import annotations

from sqlglot import exp

from lakegate.connectors.duckdb import pgbytea
from lakegate.gateway import dialect_widths
from lakegate.gateway.dialect import Rule, call, cast, refusal
from lakegate.gateway.dialect_scale import TEXT_SCALE, text_of
from lakegate.gateway.dialect_text import padded
from lakegate.gateway.errors import QueryFailed
from lakegate.gateway.pgtype import PgType
from lakegate.gateway.pgtyping import Typer


def _is(typ: PgType | None, *names: str) -> bool:
    return typ is not None and typ.is_(*names)


def _bytes(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if isinstance(node, exp.Length) and _is(types.of(node.this), "bytea"):
        return cast(call("octet_length", node.this), "INTEGER")
    if isinstance(node, exp.Encode) and _is(types.of(node.this), "bytea"):
        form = node.args.get("charset")
        if isinstance(form, exp.Literal) and form.is_string and form.this.lower() == "hex":
            return call("lower", call("hex", node.this))
        raise refusal(node, f"encode() with the format {form.sql(dialect='postgres') if form else '?'}")
    return None


def _as_interval(time: exp.Expr) -> exp.Expr:
    """A time of day as the interval since midnight (PostgreSQL's time -> interval)."""
    midnight = cast(exp.Literal.string("00:00:00"), "TIME")
    return call("to_microseconds", call("date_diff", exp.Literal.string("microsecond"), midnight, time))


def _times_of_day(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Add | exp.Sub):
        return None
    left, right = types.of(node.this), types.of(node.expression)
    if isinstance(node, exp.Sub) and _is(left, "time") and _is(right, "time"):
        return call(
            "to_microseconds",
            call("date_diff", exp.Literal.string("microsecond"), node.expression, node.this),
        )
    if isinstance(node, exp.Add) and _is(left, "timestamp") and _is(right, "time"):
        return exp.Add(this=node.this, expression=_as_interval(node.expression))
    if isinstance(node, exp.Add) and _is(left, "time") and _is(right, "timestamp"):
        return exp.Add(this=node.expression, expression=_as_interval(node.this))
    return None


def _wide_product(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Mul):
        return None
    operands = (node.this, node.expression)
    kinds = [types.of(o) for o in operands]
    if not any(k is not None and k.numeric and not k.dims for k in kinds):
        return None
    for key, operand, kind in zip(("this", "expression"), operands, kinds, strict=True):
        if kind is None or kind.dims:
            continue
        if kind.integer:
            node.set(key, cast(operand, "DECIMAL(38, 0)"))
            return None
        if kind.numeric and kind.precision is not None and kind.scale is not None and not kind.loose_scale:
            node.set(key, cast(operand, f"DECIMAL(38, {kind.scale})"))
            return None
    return None


def array_elements(text: str) -> list[str | None] | None:
    """The elements of PostgreSQL's text of a one-dimensional array (None: not one this reads)."""
    body = text.strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    body = body[1:-1]
    if not body.strip():
        return []
    out: list[str | None] = []
    i, n = 0, len(body)
    while i <= n:
        while i < n and body[i].isspace():
            i += 1
        if i < n and body[i] == '"':
            value, i = _quoted_element(body, i + 1)
            if value is None:
                return None
            while i < n and body[i].isspace():
                i += 1
            out.append(value)
        else:
            end = body.find(",", i)
            end = n if end < 0 else end
            raw = body[i:end].strip()
            if not raw or any(c in raw for c in '{}"\\'):
                return None
            out.append(None if raw.upper() == "NULL" else raw)
            i = end
        if i < n and body[i] != ",":
            return None
        i += 1
    return out


def _quoted_element(body: str, i: int) -> tuple[str | None, int]:
    value: list[str] = []
    while i < len(body):
        char = body[i]
        if char == "\\" and i + 1 < len(body):
            value.append(body[i + 1])
            i += 2
        elif char == '"':
            return "".join(value), i + 1
        else:
            value.append(char)
            i += 1
    return None, i


def _array_literal(node: exp.Expr, types: Typer) -> exp.Expr | None:
    if not isinstance(node, exp.Cast) or not isinstance(node.this, exp.Literal) or not node.this.is_string:
        return None
    target = types.of(node)
    if target is None or target.dims != 1 or not node.to.is_type(exp.DType.ARRAY):
        return None
    return array_literal(node, target)


def array_literal(node: exp.Cast, target: PgType) -> exp.Expr:
    """DuckDB's list of the one-dimensional array literal ``node`` (a cast of a string to ``target``)."""
    assert isinstance(node.this, exp.Literal)
    elements = array_elements(node.this.this)
    if elements is None:
        raise refusal(
            node, f"the array literal {node.this.this!r} (the lake route reads one-dimensional arrays)"
        )
    element_type = node.to.expressions[0].sql(dialect="duckdb")
    if target.elem.integer:  # '1.5' is an error for an integer, as in PostgreSQL (DuckDB rounds)
        items = [
            cast(exp.Null() if e is None else call("pg_int_text", exp.Literal.string(e)), element_type)
            for e in elements
        ]
    elif target.elem.is_("text", "varchar"):
        items = [cast(exp.Null() if e is None else exp.Literal.string(e), element_type) for e in elements]
    else:
        raise refusal(
            node, f"an array literal of {target.elem.name} (the lake route reads integer and text ones)"
        )
    return cast(exp.Array(expressions=items), node.to.sql(dialect="duckdb"))


def _lag_default(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """lag/lead(x, n, default): DuckDB casts the default to x's type (``lead(i4, 1, 0.50)`` gives 1), where
    PostgreSQL takes their common type. Taken: a default of x's type, a string literal, an integer, or a numeric
    literal for a numeric x (one whose digits x's decimal does not hold is computed as a CASE by
    :mod:`.dialect_lazy`, in the decimal that holds both); else refused."""
    default = node.args.get("default") if isinstance(node, exp.Lag | exp.Lead) else None
    if default is None or isinstance(default, exp.Null):
        return None
    value_type, default_type = types.of(node.this), types.of(default)
    if default_outgrows(node, types) is not None:
        return None
    if default_type is not None and (default_type == value_type or default_type.is_("unknown")):
        return None
    if value_type is not None and value_type.numeric and default_type is not None and default_type.integer:
        return None
    name = "lag" if isinstance(node, exp.Lag) else "lead"
    what = default_type.typname if default_type is not None else "unknown type"
    raise refusal(
        node, f"{name}() with a default of another type ({what}) than its value's (DuckDB casts it)"
    )


def default_outgrows(node: exp.Expr, types: Typer) -> bool | None:
    """For lag/lead of a numeric with a numeric literal default: whether the default has more fraction digits
    than the value's decimal holds (DuckDB would round it to that scale); None for any other call."""
    default = node.args.get("default") if isinstance(node, exp.Lag | exp.Lead) else None
    value_type = types.of(node.this)
    if default is None or value_type is None or not value_type.numeric or _literal_scale(default) < 0:
        return None
    shape = dialect_widths.shape(node.this, types)  # DuckDB's decimal of the value, where known
    room = (
        shape[1]
        if shape is not None
        else value_type.scale
        if value_type.scale is not None
        else TEXT_SCALE
        if text_of(node.this)
        else None
    )
    return room is None or _literal_scale(default) > room


def _literal_scale(value: exp.Expr) -> int:
    """A numeric literal's digits after the point (-1 for anything else); parentheses and a minus allowed."""
    inner = value.unnest()
    inner = inner.this.unnest() if isinstance(inner, exp.Neg) else inner
    if not isinstance(inner, exp.Literal) or inner.is_string or "e" in inner.this.lower():
        return -1
    return len(inner.this.partition(".")[2])


_COMPARE = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ, exp.NullSafeNEQ, exp.DPipe)


def _bytea_literal(node: exp.Expr, types: Typer) -> exp.Expr | None:
    """A string read as bytea (``'\\x0102'::bytea``, ``b = '\\x0102'``) is PostgreSQL's bytea input: hex after
    ``\\x``, else the escape format (``\\\\`` and ``\\ooo``); DuckDB reads ``\\x01`` as one byte and the
    rest as characters (``'\\x0102'`` was three bytes)."""
    if isinstance(node, exp.Cast) and node.to.this in (exp.DType.VARBINARY, exp.DType.BINARY, exp.DType.BLOB):
        if isinstance(node.this, exp.Literal) and node.this.is_string:
            return _blob(node.this.this)
        source = types.of(node.this)
        if source is not None and source.bpchar and not source.dims:  # its output, padded (PostgreSQL's I/O cast)
            return call("pg_bytea_in", padded(node.this, source, node))
        if source is not None and source.is_("text", "varchar", "unknown") and not source.dims:
            return call("pg_bytea_in", node.this)  # byteain (connectors/duckdb/pgbytea.py)
        return None
    if isinstance(node, exp.Decode) and isinstance(node.args.get("charset"), exp.Literal):
        how = node.args[
            "charset"
        ].name.lower()  # decode(text, 'escape' | 'hex') is byteain without / with \\x
        text = _as_text(node.this, types)
        if how == "escape":
            return call("pg_decode_escape", text)
        if how == "hex":
            return call("pg_bytea_in", exp.DPipe(this=exp.Literal.string("\\x"), expression=text))
        return None
    if isinstance(node, _COMPARE):
        pairs = [(node.this, node.expression), (node.expression, node.this)]
    elif isinstance(node, exp.In):
        pairs = [(e, node.this) for e in node.expressions]
    elif isinstance(
        node, exp.Coalesce | exp.Greatest | exp.Least | exp.Nullif | exp.Lag | exp.Lead | exp.Case
    ):
        # one result type for all: a string beside a bytea is bytea input (DuckDB cast '\\x' to a blob and failed)
        if isinstance(node, exp.Case):
            values = [i.args["true"] for i in node.args.get("ifs") or []] + [node.args.get("default")]
        elif isinstance(node, exp.Lag | exp.Lead):
            values = [node.this, node.args.get("default")]
        else:
            values = (
                [node.this, *node.expressions]
                if not isinstance(node, exp.Nullif)
                else [node.this, node.expression]
            )
        present = [v for v in values if isinstance(v, exp.Expr)]
        typed = next((v for v in present if _is(types.of(v), "bytea")), None)
        pairs = [(v, typed) for v in present] if typed is not None else []
    else:
        return None
    for literal, other in pairs:
        if isinstance(literal, exp.Literal) and literal.is_string and _is(types.of(other), "bytea"):
            blob = _blob(literal.this)
            types.note(blob, types.of(other))
            literal.replace(blob)
    return None


def _as_text(value: exp.Expr, types: Typer) -> exp.Expr:
    """``value`` as PostgreSQL's cast to text reads it: a char(n) without its padding."""
    typ = types.of(value)
    return call("rtrim", value, exp.Literal.string(" ")) if typ is not None and typ.bpchar else value


def _blob(text: str) -> exp.Expr:
    return call("unhex", exp.Literal.string(bytea_input(text).hex()))


def bytea_input(text: str) -> bytes:
    """PostgreSQL's byteain: the bytes of ``text``, or its error (the rules: :mod:`~lakegate.connectors.duckdb.pgbytea`,
    which computes the same for values that are not literals)."""
    try:
        return pgbytea.bytea_in(text)
    except pgbytea.ByteaError as exc:
        raise QueryFailed(str(exc), sqlstate=pgbytea.sqlstate(str(exc))) from None


RULES: list[Rule] = [_bytes, _times_of_day, _wide_product, _array_literal, _lag_default, _bytea_literal]

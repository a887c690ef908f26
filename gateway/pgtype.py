"""PostgreSQL's types as the lake route reasons about them: :class:`PgType` (a ``pg_type`` name, array
dimensions, the length of ``char(n)``), type categories, PostgreSQL's choice of a common type, and the mapping
from sqlglot's and from lake (Iceberg + recorded source) types.

The lake loses some of PostgreSQL's distinctions (``int2`` is stored as ``int4``, ``json``/``jsonb``/``interval``
/``char(n)`` as text); the ingest records each column's source type in the lake table's properties
(``lakegate.pgtypes``), and :func:`lake_column` reads a column's type from both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from sqlglot import exp

INTS = ("int2", "int4", "int8")
FLOATS = ("float4", "float8")
NUMBERS = (*INTS, "numeric", *FLOATS)
STRINGS = ("text", "varchar", "bpchar", "name", "unknown")
TIMES = ("date", "time", "timetz", "timestamp", "timestamptz", "interval")


@dataclass(frozen=True)
class PgType:
    """A PostgreSQL type: ``name`` is the scalar's ``pg_type.typname`` (``unknown`` for a string literal whose
    type the context decides); ``dims`` > 0 for arrays of it; ``length`` for ``char(n)``/``varchar(n)``;
    ``padded``: a ``char(n)`` value as stored in the lake (padded to ``length``, as PostgreSQL stores it) rather
    than as DuckDB's PostgreSQL scanner reads it (trailing spaces stripped); ``loose_scale``: a ``numeric`` whose
    DuckDB decimal scale is not PostgreSQL's display scale (an unconstrained ``numeric`` column); ``held_text``:
    such a numeric held as PostgreSQL's exact text of each value (an unconstrained ``numeric`` column of a lake
    table, and a derived table's column that passes it on), which the rewrites turn into a decimal wherever the
    value is used (:mod:`lakegate.gateway.dialect_scale`)."""

    name: str
    dims: int = 0
    length: int | None = None
    padded: bool = False
    loose_scale: bool = False
    held_text: bool = False
    precision: int | None = None  #: numeric(p, s)
    scale: int | None = None
    lossy: str | None = None  #: why DuckDB cannot read this column exactly (refused where it is used)
    #: the linguistic collation a text column orders by in its source ("": bytes, as DuckDB; None: not known)
    collation: str | None = None
    casing: str | None = None  #: its case mapping where not the lake route's ("": the same; None: not known)
    #: a type the lake route holds as PostgreSQL's text of its values (``inet``, ``money``, an enum ...): what
    #: of PostgreSQL's semantics that text keeps — EQUAL (equality), ORDERED (equality and order) or "" (neither)
    as_text: str | None = None
    labels: tuple[str, ...] | None = None  #: an enum's labels in their order (read from its source)

    @property
    def elem(self) -> PgType:
        return replace(self, dims=max(0, self.dims - 1))

    def array(self, dims: int = 1) -> PgType:
        return replace(self, dims=self.dims + dims)

    @property
    def typname(self) -> str:
        """The name ``pg_type`` gives it (arrays as ``_elem``)."""
        base = "text" if self.name == "unknown" else self.name
        return ("_" if self.dims else "") + base

    def is_(self, *names: str) -> bool:
        return self.dims == 0 and self.name in names

    @property
    def integer(self) -> bool:
        return self.is_(*INTS)

    @property
    def floating(self) -> bool:
        return self.is_(*FLOATS)

    @property
    def numeric(self) -> bool:
        return self.is_("numeric")

    @property
    def number(self) -> bool:
        return self.is_(*NUMBERS)

    @property
    def string(self) -> bool:
        return self.is_(*STRINGS)

    @property
    def bpchar(self) -> bool:
        return self.is_("bpchar")


#: ``as_text`` values: equal text is an equal value (the type's output is canonical) ...
EQUAL = "equal"
#: ... and the text's byte order is the type's order as well
ORDERED = "ordered"
#: the types the lake holds as their text, by what of their semantics the text keeps (any other type of a
#: source that the rules do not know — citext, xml, tsquery, extension types — keeps neither: "")
AS_TEXT = {
    **dict.fromkeys(("macaddr", "macaddr8", "bit", "varbit"), ORDERED),
    **dict.fromkeys(("inet", "cidr", "money", "timetz", "pg_lsn", "tsvector"), EQUAL),
    **dict.fromkeys(("xml", "tsquery", "jsonpath", "citext"), ""),
}


def as_text(name: str, dims: int = 0, *, labels: tuple[str, ...] | None = None) -> PgType:
    """A value the lake route holds as PostgreSQL's text of it; an enum's (``labels``: its labels in order) is
    its label, and equal labels are equal values."""
    return PgType(name, dims, as_text=EQUAL if labels is not None else AS_TEXT.get(name, ""), labels=labels)


def t(name: str, dims: int = 0) -> PgType:
    return PgType(name, dims)


TEXT, UNKNOWN, BOOL = t("text"), t("unknown"), t("bool")
INT2, INT4, INT8, NUMERIC, FLOAT4, FLOAT8 = (t(n) for n in (*INTS, "numeric", *FLOATS))
DATE, TIME, TIMESTAMP, TIMESTAMPTZ, INTERVAL = (
    t(n) for n in ("date", "time", "timestamp", "timestamptz", "interval")
)
JSON, JSONB, BYTEA, UUID = t("json"), t("jsonb"), t("bytea"), t("uuid")
#: a numeric whose display scale PostgreSQL picks per value (a quotient, an average): DuckDB's decimal has one
#: scale per column, so its value is exact but its text may show other trailing zeros
LOOSE_NUMERIC = PgType("numeric", loose_scale=True)

_SQLGLOT = {
    exp.DType.SMALLINT: "int2",
    exp.DType.TINYINT: "int2",
    exp.DType.INT: "int4",
    exp.DType.BIGINT: "int8",
    exp.DType.DECIMAL: "numeric",
    exp.DType.FLOAT: "float4",
    exp.DType.DOUBLE: "float8",
    exp.DType.TEXT: "text",
    exp.DType.VARCHAR: "varchar",
    exp.DType.NVARCHAR: "varchar",
    exp.DType.CHAR: "bpchar",
    exp.DType.NCHAR: "bpchar",
    exp.DType.BPCHAR: "bpchar",
    exp.DType.NAME: "name",
    exp.DType.BOOLEAN: "bool",
    exp.DType.DATE: "date",
    exp.DType.TIME: "time",
    exp.DType.TIMETZ: "timetz",
    exp.DType.TIMESTAMP: "timestamp",
    exp.DType.DATETIME: "timestamp",
    exp.DType.TIMESTAMPTZ: "timestamptz",
    exp.DType.INTERVAL: "interval",
    exp.DType.UUID: "uuid",
    exp.DType.VARBINARY: "bytea",
    exp.DType.BINARY: "bytea",
    exp.DType.JSON: "json",
    exp.DType.JSONB: "jsonb",
}


def from_sqlglot(to: exp.DataType) -> PgType | None:
    """sqlglot's (PostgreSQL dialect) type -> PgType; None for types the rules do not know."""
    dims = 0
    while to.this == exp.DType.ARRAY and to.expressions:
        dims += 1
        inner = to.expressions[0]
        if not isinstance(inner, exp.DataType):
            return None
        to = inner
    name = _SQLGLOT.get(to.this)  # type: ignore[call-overload]
    if name is None:
        return None
    params = []
    for param in to.expressions:
        value = param.this if isinstance(param, exp.DataTypeParam) else param
        params.append(int(value.this) if isinstance(value, exp.Literal) and value.is_int else None)
    length = params[0] if name in ("bpchar", "varchar") and params else None
    if name == "bpchar" and length is None and to.this == exp.DType.CHAR:
        length = 1  # char without a length is char(1)
    if name == "numeric" and params and params[0] is not None:
        return PgType(name, dims, precision=params[0], scale=params[1] if len(params) > 1 else 0)
    return PgType(name, dims, length)


_SOURCE = re.compile(r"^(?P<name>[a-z0-9_ ]+?)(?:\((?P<args>[\d, ]+)\))?(?P<dims>(?:\[\])*)$")
_LAKE_SIMPLE = {
    "IntegerType": "int4",
    "LongType": "int8",
    "FloatType": "float4",
    "DoubleType": "float8",
    "StringType": "text",
    "BooleanType": "bool",
    "DateType": "date",
    "TimeType": "time",
    "TimestampType": "timestamp",
    "TimestamptzType": "timestamptz",
    "UUIDType": "uuid",
    "BinaryType": "bytea",
    "FixedType": "bytea",
    "DecimalType": "numeric",
}


def lake_column(iceberg: object, source: str | None) -> PgType | None:
    """The PostgreSQL type of a lake column: its Iceberg type, refined by the source type the ingest recorded
    (``source``, e.g. ``bpchar(8)``, ``jsonb``, ``int2[]``) where the two agree."""
    dims = 0
    while type(iceberg).__name__ == "ListType":
        dims += 1
        iceberg = iceberg.element_type  # type: ignore[attr-defined]
    name = _LAKE_SIMPLE.get(type(iceberg).__name__)
    if name is None:
        return None
    stored = PgType(name, dims)
    if name == "numeric":
        stored = PgType(name, dims, precision=iceberg.precision, scale=iceberg.scale)  # type: ignore[attr-defined]
    recorded = _parse_source(source) if source else None
    if recorded is None or recorded.dims != dims:
        return stored
    if name == "numeric" and re.fullmatch(r"\s*(numeric|decimal)\s*(\[\])*\s*", source or "", re.IGNORECASE):
        # an unconstrained numeric stored as decimal(P,S) ([ingest] unbounded_numeric): the values' own display
        # scales are not kept (1.5 and 1.50 are both 1.500...): usable as values, refused where shown
        return replace(stored, loose_scale=True)
    if name == "text" and recorded.name in (
        "bpchar",
        "varchar",
        "json",
        "jsonb",
        "interval",
        "name",
        "numeric",
    ):
        numeric = recorded.name == "numeric"
        return replace(recorded, padded=recorded.name == "bpchar", loose_scale=numeric, held_text=numeric)
    if name == "int4" and recorded.name == "int2":
        return recorded
    if name == "text" and recorded.as_text is not None:
        return recorded
    return stored


def named_as_text(text: str, *, labels: tuple[str, ...] | None = None) -> PgType:
    """A type the rules do not know, by its ``format_type()`` or recorded name (``public.mood[]``), as text."""
    dims = 0
    while text.endswith("[]"):
        text, dims = text[:-2], dims + 1
    name = text.split("(", 1)[0].split(".", 1)[-1].strip().strip('"')
    return as_text({"bit varying": "varbit"}.get(name, name), dims, labels=labels)


def _parse_source(text: str) -> PgType | None:
    if "." in text:  # an enum or a text-like type of an extension (citext), recorded with its schema
        return named_as_text(text)
    match = _SOURCE.match(text.strip().lower())
    if not match:
        return None
    if match.group("name") in AS_TEXT:
        return as_text(match.group("name"), len(match.group("dims")) // 2)
    name = {"character": "bpchar", "character varying": "varchar", "smallint": "int2"}.get(
        match.group("name"), match.group("name")
    )
    args = [int(a) for a in (match.group("args") or "").replace(" ", "").split(",") if a]
    length = args[0] if name in ("bpchar", "varchar") and args else None
    return PgType(name, len(match.group("dims")) // 2, length)


# ------------------------------------------------------------------------------------------ common types

_RANK = {"int2": 1, "int4": 2, "int8": 3, "numeric": 4, "float4": 5, "float8": 6}


def arithmetic(left: PgType | None, right: PgType | None) -> PgType | None:
    """The result type of ``+ - * / %`` on two numbers (PostgreSQL's operator resolution): integers widen,
    an integer and a numeric give numeric, any float gives float8 (float4 with float4 stays float4)."""
    if left is None or right is None:
        return None
    if left.is_("unknown"):
        left = right
    if right.is_("unknown"):
        right = left
    if not (left.number and right.number):
        return None
    if left.floating or right.floating:
        return FLOAT4 if left.is_("float4") and right.is_("float4") else FLOAT8
    if left.numeric or right.numeric:
        return PgType("numeric", loose_scale=left.loose_scale or right.loose_scale)
    return left if _RANK[left.name] >= _RANK[right.name] else right


def common(types: list[PgType | None]) -> PgType | None:
    """The type PostgreSQL resolves CASE / COALESCE / UNION / VALUES branches to (None when unsure)."""
    known = [x for x in types if x is not None and not x.is_("unknown")]
    if len(known) != len([x for x in types if x is not None]) and not known:
        return UNKNOWN if types and all(x is not None for x in types) else None
    if any(x is None for x in types) or not known:
        return None
    first = known[0]
    if len(known) > 1 and all(x.number for x in known):
        best = max(known, key=lambda x: _RANK[x.name])
        if best.numeric and (any(x != best for x in known) or best.scale is None and not best.loose_scale):
            # numerics of other scales (or an integer, or literals, whose scales the type does not hold):
            # PostgreSQL's common typmod is none, so each value keeps its own display scale
            return LOOSE_NUMERIC
    if all(x == first for x in known):
        return first
    if all(x.number for x in known):
        best = max(known, key=lambda x: _RANK[x.name])
        return FLOAT8 if best.floating and any(x.name != best.name for x in known) else best
    if all(x.string for x in known):
        if all(x.bpchar for x in known):
            return PgType(
                "bpchar",
                padded=all(x.padded for x in known) and len({x.length for x in known}) == 1,
                length=first.length if len({x.length for x in known}) == 1 else None,
            )
        return (
            TEXT
            if any(x.is_("text", "unknown") for x in known) or len({x.name for x in known}) > 1
            else first
        )
    names = {x.typname for x in known}
    if names <= {"timestamp", "timestamptz", "date"}:
        return TIMESTAMPTZ if "timestamptz" in names else TIMESTAMP
    if names <= {"json", "jsonb"}:
        return None
    return None

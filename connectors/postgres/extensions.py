"""Which schemas besides ``pg_catalog`` the gateway's PostgreSQL sessions search for functions and operators.

A session that searched only ``pg_catalog`` (so that no user object could shadow a built-in: CVE-2018-1058)
did not find the operators of extensions either: ``citext_col = 'ABC'`` resolved to text's ``=`` through
citext's implicit cast and compared case-sensitively, where psql uses citext's operator — a silently different
answer. An extension's members resolve as psql resolves them only if their schema is searched; a schema is
searched only where nothing an untrusted role can create would be found there:

* it is on the database's default ``search_path`` (``ALTER DATABASE ... SET search_path``, else PostgreSQL's
  ``"$user", public``), in that order, after ``pg_catalog`` — psql would not find an extension elsewhere either;
* it holds members of an installed extension (``pg_depend.deptype = 'e'``);
* its owner is a superuser, the database's owner or ``pg_database_owner`` (PostgreSQL 15+'s owner of
  ``public``), and no other role but superusers can create objects in it: its ACL (``aclexplode``) grants
  ``CREATE`` to no one else — not ``PUBLIC``, no role or group — and no non-superuser is a member of the owner
  (who could act as it). That is every way to the privilege: grants and ownership. PostgreSQL 13/14's
  ``public`` (``CREATE`` for ``PUBLIC``) is not searched; PostgreSQL 15+'s is, unless someone granted
  ``CREATE`` on it;
* it holds no operator that is not an extension's (one the owner made would be found implicitly, by ``=``
  of a join or ``IN``, whatever its function does).

Such a schema may hold the database's own functions (an application's): an unqualified call that could reach
one is refused (:func:`refusal`), which keeps the guard's rule that users cannot call the database's own
functions. An extension whose schema is on the default path but not safe is not searched, and a query that
would use it is refused with a message that names the schema, the roles that can write it and what to
change: qualifying its operators (``OPERATOR(public.=)``) would not help, PostgreSQL then picks the best
match among all operators of that name in the schema, including one a hostile role planted there (tested:
``citext OPERATOR(public.=) text`` ran a hostile ``public.=(citext, text)``).

Written by hand: no library knows PostgreSQL's catalogs for this.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

#: psql's search_path when the database sets none (PostgreSQL's default)
DEFAULT_PATH = '"$user", public'
DATABASE_PATH = """
SELECT s.setconfig FROM pg_catalog.pg_db_role_setting s JOIN pg_catalog.pg_database d ON d.oid = s.setdatabase
WHERE d.datname = pg_catalog.current_database() AND s.setrole = 0
"""
_MEMBER = """
SELECT FROM pg_catalog.pg_depend d WHERE d.classid = '{cls}'::pg_catalog.regclass AND d.objid = {oid}
  AND d.deptype = 'e'"""
_IS_PROC = _MEMBER.format(cls="pg_catalog.pg_proc", oid="p.oid")
_IS_OPER = _MEMBER.format(cls="pg_catalog.pg_operator", oid="o.oid")
_IS_TYPE = _MEMBER.format(cls="pg_catalog.pg_type", oid="t.oid")
#: the extension types of a schema (an argument of one makes a member function or operator the extension's own)
_EXT_TYPES = f"SELECT t.oid FROM pg_catalog.pg_type t WHERE t.typnamespace = n.oid AND EXISTS ({_IS_TYPE})"
#: an argument type of a member that a pg_catalog operator or function of the same name also takes (itself,
#: polymorphic, or by an implicit cast): there, psql may pick the extension's member on core types alone
_REACHES = """(x.{a} = {b} OR x.{a} IN (SELECT c.casttarget FROM pg_catalog.pg_cast c WHERE c.castsource = {b}
  AND c.castcontext = 'i') OR (SELECT y.typtype FROM pg_catalog.pg_type y WHERE y.oid = x.{a}) = 'p')"""
SCHEMAS = f"""
WITH db AS (SELECT d.datdba FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
SELECT n.nspname::text, pg_catalog.pg_get_userbyid(n.nspowner)::text,
  (SELECT r.rolsuper OR r.rolname = 'pg_database_owner' OR r.oid = db.datdba
   FROM pg_catalog.pg_roles r WHERE r.oid = n.nspowner),
  ARRAY(SELECT CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(a.grantee)::text END
        FROM pg_catalog.aclexplode(n.nspacl) a LEFT JOIN pg_catalog.pg_roles r ON r.oid = a.grantee
        WHERE a.privilege_type = 'CREATE' AND a.grantee <> n.nspowner AND a.grantee <> db.datdba
          AND NOT coalesce(r.rolsuper, false)
        UNION
        SELECT r.rolname::text FROM pg_catalog.pg_roles r
        WHERE NOT r.rolsuper AND r.oid <> n.nspowner AND r.oid <> db.datdba
          AND pg_catalog.pg_has_role(r.oid, n.nspowner, 'MEMBER')),
  ARRAY(SELECT DISTINCT e.extname::text FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
        JOIN pg_catalog.pg_proc p ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND p.oid = d.objid
        WHERE d.deptype = 'e' AND p.pronamespace = n.oid
        UNION SELECT e.extname::text FROM pg_catalog.pg_depend d
        JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid
        JOIN pg_catalog.pg_type t ON d.classid = 'pg_catalog.pg_type'::pg_catalog.regclass AND t.oid = d.objid
        WHERE d.deptype = 'e' AND t.typnamespace = n.oid),
  ARRAY({_EXT_TYPES})::int8[],
  ARRAY(SELECT t.typname::text FROM pg_catalog.pg_type t WHERE t.typnamespace = n.oid AND EXISTS ({_IS_TYPE})),
  ARRAY(SELECT DISTINCT e.extname || ' ' || p.proname FROM pg_catalog.pg_proc p
        JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass AND d.objid = p.oid
             AND d.deptype = 'e'
        JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid WHERE p.pronamespace = n.oid),
  ARRAY(SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid AND EXISTS ({_IS_PROC})
        AND NOT EXISTS (SELECT FROM pg_catalog.pg_proc q
                        WHERE q.pronamespace = 'pg_catalog'::pg_catalog.regnamespace AND q.proname = p.proname)),
  ARRAY(SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid AND EXISTS ({_IS_PROC})
        AND NOT p.proargtypes::pg_catalog.oid[] && ARRAY({_EXT_TYPES})
        AND EXISTS (SELECT FROM pg_catalog.pg_proc q WHERE q.pronamespace = 'pg_catalog'::pg_catalog.regnamespace
                    AND q.proname = p.proname)),
  ARRAY(SELECT DISTINCT o.oprname::text FROM pg_catalog.pg_operator o WHERE o.oprnamespace = n.oid
        AND EXISTS ({_IS_OPER}) AND o.oprleft <> ALL(ARRAY({_EXT_TYPES})) AND o.oprright <> ALL(ARRAY({_EXT_TYPES}))
        AND EXISTS (SELECT FROM pg_catalog.pg_operator x
                    WHERE x.oprnamespace = 'pg_catalog'::pg_catalog.regnamespace AND x.oprname = o.oprname
                      AND (o.oprleft = 0) = (x.oprleft = 0)
                      AND (o.oprleft = 0 OR {_REACHES.format(a="oprleft", b="o.oprleft")})
                      AND {_REACHES.format(a="oprright", b="o.oprright")})),
  ARRAY(SELECT DISTINCT p.proname::text FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid
        AND p.prokind <> 'p' AND NOT EXISTS ({_IS_PROC})
        AND p.prorettype NOT IN ('pg_catalog.trigger'::pg_catalog.regtype,
                                 'pg_catalog.event_trigger'::pg_catalog.regtype)),
  ARRAY(SELECT DISTINCT o.oprname::text FROM pg_catalog.pg_operator o WHERE o.oprnamespace = n.oid
        AND NOT EXISTS ({_IS_OPER}))
FROM pg_catalog.pg_namespace n, db
WHERE n.nspname = ANY(%s) AND (EXISTS (SELECT FROM pg_catalog.pg_proc p WHERE p.pronamespace = n.oid
                                       AND EXISTS ({_IS_PROC}))
                               OR EXISTS ({_EXT_TYPES}))
"""
#: the columns of the statement's relations whose type (or its base type, or its element's) is one of the
#: extension types given
CARRIERS = """
SELECT DISTINCT a.attname::text FROM pg_catalog.pg_attribute a
JOIN pg_catalog.pg_class c ON c.oid = a.attrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
LEFT JOIN pg_catalog.pg_type b ON b.oid = t.typbasetype
LEFT JOIN pg_catalog.pg_type el ON el.oid = t.typelem AND t.typcategory = 'A'
WHERE a.attnum > 0 AND NOT a.attisdropped AND (n.nspname, c.relname) IN (SELECT * FROM unnest(%s::text[], %s::text[]))
  AND ARRAY[t.oid, t.typbasetype, coalesce(el.oid, 0), coalesce(el.typbasetype, 0), coalesce(b.typelem, 0)]::int8[]
      && %s::int8[]
"""


@dataclass(frozen=True)
class ExtensionSchema:
    """A schema on the database's default search_path that holds members of installed extensions."""

    name: str
    owner: str
    trusted_owner: bool  #: a superuser, the database's owner or pg_database_owner
    writers: tuple[str, ...]  #: other roles (or PUBLIC) that can create objects in it
    extensions: tuple[str, ...]
    type_oids: frozenset[int]
    types: frozenset[str]  #: the extensions' type names (arrays as _name)
    functions: frozenset[str]  #: the extensions' function names
    by_extension: tuple[tuple[str, str], ...]  #: (extension, function name)
    new_functions: frozenset[str]  #: those that pg_catalog has no function of that name for
    shadow_functions: frozenset[str]  #: extension functions on core types only, named like a pg_catalog one
    shadow_operators: frozenset[str]  #: extension operators on core types that a pg_catalog operator matches
    own_functions: frozenset[str]  #: callable functions of its own (not an extension's)
    own_operators: frozenset[str]

    @property
    def problem(self) -> str | None:
        """Why the gateway does not search it (None: it does)."""
        if not self.trusted_owner:
            return f"it is owned by {self.owner}, who is not a superuser nor the database's owner"
        if self.writers:
            return f"{_roles(self.writers)} can create objects in it"
        if self.own_operators:
            return f"it holds operators that are not an extension's ({', '.join(sorted(self.own_operators))})"
        return None

    @property
    def fix(self) -> str:
        what = ", ".join(self.extensions) or "the extension"
        step = (
            f"REVOKE CREATE ON SCHEMA {quote_ident(self.name)} FROM {', '.join(self.writers)}"
            if self.trusted_owner and self.writers
            else None
        )
        move = (
            f"move the extension into a schema that only its owner can write (ALTER EXTENSION {what} SET "
            "SCHEMA ...) and put that schema on the database's search_path (ALTER DATABASE ... SET search_path)"
        )
        return f"{step}, or {move}" if step else move


@dataclass(frozen=True)
class Extensions:
    """What the gateway searches in one database, read from its catalog."""

    default_path: tuple[str, ...]
    schemas: tuple[ExtensionSchema, ...] = ()  #: in the order of the default path
    searched: tuple[ExtensionSchema, ...] = field(init=False)
    unsafe: tuple[ExtensionSchema, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "searched", tuple(s for s in self.schemas if s.problem is None))
        object.__setattr__(self, "unsafe", tuple(s for s in self.schemas if s.problem is not None))

    @property
    def search_path(self) -> str:
        """The sessions' search_path: pg_catalog first (a built-in always wins a tie), then the safe schemas."""
        quoted = ('"' + s.name.replace('"', '""') + '"' for s in self.searched)
        return ", ".join(["pg_catalog", *quoted, "pg_temp"])

    def functions(self, extensions: frozenset[str]) -> frozenset[str]:
        """Names of the functions of ``extensions`` on the default path (the guard lets them through;
        :func:`refusal` refuses those of schemas that are not searched)."""
        return frozenset(name for s in self.schemas for ext, name in s.by_extension if ext in extensions)


@dataclass(frozen=True)
class Footprint:
    """What of a PostgreSQL-route statement could meet an extension's operator or function (from its syntax,
    :mod:`lakegate.gateway.pgfootprint`): used conservatively, a name stands for every column of that name."""

    relations: tuple[tuple[str, str], ...] = ()  #: (schema, name) of the tables and views it reads
    uses: tuple[tuple[str, str], ...] = ()  #: (column name, what uses it) other than passing it through
    aliases: tuple[tuple[str, str], ...] = ()  #: (column name, the name it is passed on as)
    opaque: bool = False  #: columns are renamed by position (column alias lists, NATURAL joins)
    functions: frozenset[str] = frozenset()  #: names of unqualified function calls
    operators: frozenset[str] = frozenset()  #: operator symbols written in it
    casts: frozenset[str] = frozenset()  #: type names it casts to


Run = Callable[..., list[tuple[Any, ...]]]


def load(run: Run) -> Extensions:
    """Read the database's extension schemas with ``run(sql, params)``."""
    setting = run(DATABASE_PATH)
    setconfig = setting[0][0] if setting else None
    return read(run(SCHEMAS, (list(default_path(setconfig)),)), setconfig)


def read(rows: Iterable[tuple[object, ...]], setconfig: list[str] | None) -> Extensions:
    """The catalog rows of :data:`SCHEMAS` (queried with :func:`default_path`) -> :class:`Extensions`."""
    path = default_path(setconfig)
    by_name = {str(row[0]): _schema(row) for row in rows}
    return Extensions(path, tuple(by_name[name] for name in path if name in by_name))


def _schema(row: tuple[object, ...]) -> ExtensionSchema:
    def names(value: object) -> frozenset[str]:
        return frozenset(str(v) for v in (value or ()))  # type: ignore[attr-defined]

    return ExtensionSchema(
        name=str(row[0]),
        owner=str(row[1]),
        trusted_owner=bool(row[2]),
        writers=tuple(sorted(set(str(v) for v in row[3] or ()))),  # type: ignore[attr-defined]
        extensions=tuple(sorted(names(row[4]))),
        type_oids=frozenset(int(v) for v in row[5] or ()),  # type: ignore[attr-defined]
        types=names(row[6]),
        functions=frozenset(pair.split(" ", 1)[1] for pair in names(row[7])),
        by_extension=tuple(sorted(tuple(pair.split(" ", 1)) for pair in names(row[7]))),  # type: ignore[misc]
        new_functions=names(row[8]),
        shadow_functions=names(row[9]),
        shadow_operators=names(row[10]),
        own_functions=names(row[11]),
        own_operators=names(row[12]),
    )


def default_path(setconfig: list[str] | None) -> tuple[str, ...]:
    """The schemas of the database's default search_path (``setconfig`` of ``pg_db_role_setting``), without
    ``"$user"`` (the gateway cannot know psql's user; such a schema belongs to that user anyway), pg_catalog
    and pg_temp."""
    value = DEFAULT_PATH
    for item in setconfig or ():
        key, _, rest = item.partition("=")
        if key.strip().lower() == "search_path":
            value = rest
    out = []
    for match in re.finditer(r'\s*("(?:[^"]|"")*"|[^,]*)\s*(?:,|$)', value):
        raw = match.group(1).strip()
        if not raw:
            continue
        name = raw[1:-1].replace('""', '"') if raw.startswith('"') else raw.lower()
        if name not in ("$user", "pg_catalog", "pg_temp") and name not in out:
            out.append(name)
    return tuple(out)


Carriers = Callable[[tuple[tuple[str, str], ...], frozenset[int]], set[str]]


def refusal(ext: Extensions, fp: Footprint, carriers: Carriers) -> tuple[str, bool] | None:
    """Why the statement must not run on this database's path (and whether it is forbidden, 403, rather than
    unanswerable, 400), or None. ``carriers(relations, type_oids)``: the columns of those relations whose type
    is one of those."""
    for schema in ext.searched:
        own = sorted(fp.functions & schema.own_functions)
        if own:
            name = own[0]
            return (
                f"function {name}() is not run: the database has its own {quote_ident(schema.name)}.{name}, "
                f"not an extension's, which the call could reach, and the gateway does not run the database's own "
                f"functions; call the built-in as pg_catalog.{name}(...), or list \"{schema.name}.{name}\" in "
                "[gateway] allow_functions and call it schema-qualified",
                True,
            )
    for schema in ext.unsafe:
        why = _unsafe_use(schema, fp, carriers)
        if why:
            return (
                f"{why} needs extension {', '.join(schema.extensions)} (psql would use its operators and "
                f"functions), whose schema {quote_ident(schema.name)} the gateway does not search because "
                f"{schema.problem}: an operator or function planted there could run instead, and the gateway does "
                f"not answer with a built-in one either. To have it answered, {schema.fix}; or cast to a built-in "
                "type (col::text) for the built-in's semantics",
                False,
            )
    return None


def _unsafe_use(schema: ExtensionSchema, fp: Footprint, carriers: Carriers) -> str | None:
    called = sorted(fp.functions & (schema.new_functions | schema.shadow_functions))
    if called:
        return f"function {called[0]}()"
    cast = sorted(fp.casts & schema.types)
    if cast:
        return f"a cast to type {cast[0]}"
    shadow = sorted(fp.operators & schema.shadow_operators | schema.shadow_operators & _IMPLICIT)
    if shadow:
        return f"operator {shadow[0]}"
    if not schema.type_oids or not fp.relations:
        return None
    names = carriers(fp.relations, schema.type_oids)
    if not names:
        return None
    if fp.opaque:
        return f"column {sorted(names)[0]} (renamed by position here)"
    grown = True
    while grown:  # a column passed on under another name carries its type along
        more = {new for old, new in fp.aliases if old in names} - names
        names |= more
        grown = bool(more)
    for column, how in fp.uses:
        if column in names:
            return f"{how} on column {column}"
    return None


#: operators PostgreSQL applies without their symbol in the text (IN, BETWEEN, USING, CASE, NULLIF ...)
_IMPLICIT = frozenset({"=", "<>", "<", ">", "<=", ">="})

def _roles(writers: tuple[str, ...]) -> str:
    shown = ", ".join(writers[:5]) + (f" and {len(writers) - 5} more" if len(writers) > 5 else "")
    return f"role{'s' if len(writers) > 1 else ''} {shown}"


def quote_ident(name: str) -> str:
    return name if re.fullmatch(r"[a-z_][a-z0-9_$]*", name) else '"' + name.replace('"', '""') + '"'

"""Which text collation a source column is ordered by, as far as the lake route (DuckDB) can follow it.

DuckDB compares text byte by byte, which is code-point order in UTF-8: PostgreSQL's ``"C"``/``"POSIX"``, libc's
``C.UTF-8``, ``ucs_basic`` and the builtin provider's collations (PostgreSQL 17+: ``pg_c_utf8``,
``pg_unicode_fast``) order text the same way. A linguistic collation (libc ``en_US.UTF-8``, any ICU locale) does
not: glibc's and ICU's tables differ from each other and between versions, so DuckDB's ICU collations cannot be
shown to order as the source does. The lake route refuses to order or compare text by such a collation
(:mod:`lakegate.gateway.dialect_collation`); a nondeterministic collation changes equality too, so a column
with one is refused wherever it is used.

Collations are read from the catalog as ``to_jsonb`` of ``pg_collation`` and ``pg_database`` rows, whose column
names differ between PostgreSQL versions (``daticulocale`` in 15-16, ``datlocale`` from 17). Written by hand:
no library answers "does this PostgreSQL collation order as bytes".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Any

#: collation names (lower case) that order text as bytes (code points), as a query's COLLATE may name them
BYTEWISE_NAMES = frozenset({"c", "posix", "ucs_basic", "pg_c_utf8", "pg_unicode_fast"})
_C_LOCALE = re.compile(r"(?i)(c|posix|c\.utf-?8)")
_C_UTF8 = re.compile(r"(?i)c\.utf-?8")
NONDETERMINISTIC = (
    "a column with a nondeterministic collation ({}), whose equality DuckDB cannot follow (it compares bytes)"
)
ASCII_CASING = 'ASCII-only case mapping (the "C" locale)'
#: case mappings of a query's COLLATE name that differ from the lake route's (libc's in a UTF-8 locale)
CASING_OF_NAME = {
    "c": ASCII_CASING,
    "posix": ASCII_CASING,
    "ucs_basic": ASCII_CASING,
    "pg_unicode_fast": "full Unicode case mapping (pg_unicode_fast)",
}


@dataclass(frozen=True)
class Collation:
    """What the lake route needs to know of a column's collation: ``order`` names it when it does not order
    text as bytes (None when it does); ``casing`` describes its case mapping (upper, lower, initcap, ILIKE)
    when it is not the lake route's (libc's in a UTF-8 locale, simple Unicode mappings), else ""."""

    order: str | None = None
    casing: str = ""
    deterministic: bool = True


def bytewise_locale(provider: str, locale: str | None) -> bool:
    """Whether a collation of ``provider`` (``c`` libc, ``i`` ICU, ``b`` builtin) and locale orders as bytes."""
    if provider == "b":  # builtin: C, C.UTF-8, PG_UNICODE_FAST all sort by code point
        return True
    if provider == "c":
        return locale is not None and _C_LOCALE.fullmatch(locale) is not None
    return False


def casing(provider: str, ctype: str | None) -> str:
    """How a collation of ``provider`` and character-class locale ``ctype`` maps case, when it is not as the
    lake route does ("" when it is: libc in a UTF-8 locale, the builtin C.UTF-8)."""
    locale = ctype or ""
    if provider == "b":
        if _C_UTF8.fullmatch(locale):
            return ""
        return ASCII_CASING if locale.upper() == "C" else f"full Unicode case mapping ({locale})"
    if provider == "c":
        if locale.upper() in ("C", "POSIX"):
            return ASCII_CASING
        if locale[:3].lower() in ("tr_", "az_"):
            return f"the dotted and dotless i of {locale}"
        if "utf" not in locale.lower():
            return f"the case mapping of the non-UTF-8 locale {locale}"
        return ""
    return f"ICU's case mapping ({locale})"


def column_collation(collation: dict[str, Any] | None, database: dict[str, Any] | None) -> Collation:
    """A column's collation from the ``to_jsonb`` rows of its ``pg_collation`` and of ``pg_database``."""
    if not collation:
        return Collation()
    deterministic = bool(collation.get("collisdeterministic", True))
    provider = str(collation.get("collprovider") or "c")
    if provider == "d":
        return replace(database_collation(database), deterministic=deterministic)
    locale = collation.get("colllocale") or collation.get("colliculocale") or collation.get("collcollate")
    ctype = collation.get("collctype") if provider == "c" else locale
    order = None if bytewise_locale(provider, locale) else f'"{collation.get("collname")}"'
    return Collation(order, casing(provider, ctype), deterministic)


def database_collation(database: dict[str, Any] | None) -> Collation:
    """The database's default collation."""
    if not database:
        return Collation()
    provider = str(database.get("datlocprovider") or "c")
    if provider == "c":
        locale, ctype = database.get("datcollate"), database.get("datctype")
    else:
        locale = ctype = database.get("datlocale") or database.get("daticulocale")
    kind = {"i": "ICU", "c": "libc", "b": "builtin"}.get(provider, provider)
    order = None if bytewise_locale(provider, locale) else f'"{locale}" (the database default, {kind})'
    return Collation(order, casing(provider, ctype))

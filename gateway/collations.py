"""Which text collation a source column is ordered by, as far as the lake route (DuckDB) can follow it.

DuckDB compares text byte by byte, which is code-point order in UTF-8: PostgreSQL's ``"C"``/``"POSIX"``, libc's
``C.UTF-8``, ``ucs_basic`` and the builtin provider's collations (PostgreSQL 17+: ``pg_c_utf8``,
``pg_unicode_fast``) order text the same way. A linguistic collation (libc ``en_US.UTF-8``, any ICU locale) does
not. An ICU collation whose collator version is the one the lake route's DuckDB was compared with (ICU 72's
``153.120``, ``tests/test_answers_icu.py``) and whose locale DuckDB's ICU collations have orders as
``x COLLATE <locale>, x`` in DuckDB (PostgreSQL breaks a deterministic collation's ties by the bytes); the lake
route follows it in ``ORDER BY`` (:mod:`lakegate.gateway.dialect_collation`). Other linguistic collations
(glibc's tables differ from ICU's, and between versions) are refused wherever the order of text matters; a
nondeterministic collation changes equality too, so a column with one is refused wherever it is used.

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
    if provider == "i" and order:
        order += f" (ICU locale {locale}, version {collation.get('collversion') or 'unknown'})"
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
    if provider == "i" and order:
        order = order[:-1] + f" locale {locale}, version {database.get('datcollversion') or 'unknown'})"
    return Collation(order, casing(provider, ctype))


#: ICU collator versions (``collversion``'s first two parts) whose order the lake route's DuckDB is compared with
#: (``tests/test_answers_icu.py``: PostgreSQL 15 with ICU 72); another version may order new characters otherwise
ICU_VERSIONS = frozenset({"153.120"})
#: DuckDB's ICU collations (``pragma_collations()`` of DuckDB 1.5); ICU's root locale orders as ``en`` (CLDR's
#: English has no tailoring)
DUCKDB_ICU = frozenset(
    """
    af am ar ar_sa as az be bg bn bo br bs ca ceb chr cs cy da de de_at dsb dz ee el en en_us eo es et fa fa_af ff
    fi fil fo fr fr_ca fy ga gl gu ha haw he he_il hi hr hsb hu hy id id_id ig is it ja ka kk kl km kn ko kok ku ky
    lb lij lkt ln lo lt lv mk ml mn mr ms mt my nb nb_no ne nl nn nso om or pa pa_in pl ps pt ro ru sa se si sk sl
    smn sq sr sr_ba sr_me sr_rs st sv sw ta te th tk tn to tr ug uk ur uz vi wae wo xh yi yo yue yue_cn zh zh_cn
    zh_hk zh_mo zh_sg zh_tw zu
    """.split()  # noqa: SIM905 (a list of words, as pragma_collations() prints them)
)
_ICU = re.compile(r"ICU locale ([\w-]+), version ([\w.]+)\)$")


def icu_collation(order: str | None) -> tuple[str | None, str]:
    """(DuckDB's ICU collation that orders as the linguistic collation ``order`` describes, or None; why not)."""
    found = _ICU.search(order or "")
    if not found:
        return None, 'DuckDB orders text as bytes, as the "C" collation'
    locale, version = found.groups()
    if ".".join(version.split(".")[:2]) not in ICU_VERSIONS:
        return (
            None,
            f"the source's ICU collation version {version} is not the one the lake route was compared with",
        )
    name = "en" if locale.lower() in ("und", "root") else locale.lower().replace("-", "_")
    if name not in DUCKDB_ICU:
        return None, f"DuckDB has no ICU collation for {locale}"
    return name, ""

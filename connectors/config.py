"""Declaring settings: the typed section of every layer is a dataclass whose fields carry their default and help
text (``setting(...)``); durations and sizes are parsed where the file is read (:mod:`lakegate.settings`). This
module holds the sections the connectors themselves take: the lake and the sources.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any


class SettingsError(ValueError):
    """The configuration is invalid; the message names the key, the value and what is expected."""


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|kb|kib|mb|mib|gb|gib)?\s*$", re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
_SIZES = {"b": 1, "kb": 1000, "kib": 1024, "mb": 10**6, "mib": 2**20, "gb": 10**9, "gib": 2**30, None: 1}


def parse_duration(value: Any, key: str) -> float:
    """``"1s"``, ``"500ms"``, ``"2m"``, ``"1h"`` or a number of seconds -> seconds."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    match = _DURATION.match(str(value))
    if not match:
        raise SettingsError(f"{key} = {value!r} is not a duration; write e.g. '1s', '500ms', '2m' or '1h'")
    return float(match.group(1)) * _UNITS[match.group(2)]


def parse_size(value: Any, key: str) -> int:
    """``"64MiB"``, ``"1GB"`` or a number of bytes -> bytes."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _SIZE.match(str(value))
    if not match:
        raise SettingsError(
            f"{key} = {value!r} is not a size; write e.g. '64MiB', '1GB' or a number of bytes"
        )
    unit = match.group(2).lower() if match.group(2) else None
    return int(float(match.group(1)) * _SIZES[unit])


def setting(text: str, default: Any = None, **kw: Any) -> Any:
    if callable(default):
        return field(default_factory=default, metadata={"help": text, **kw})
    return field(default=default, metadata={"help": text, **kw})


@dataclass
class LakeSettings:
    name: str = setting("Source name of the lake in SQL (lake.schema.table).", "lake")
    catalog_uri: str = setting(
        "pyiceberg SQL catalog URI (SQLite or PostgreSQL).", "sqlite:///.lakegate/catalog.db"
    )
    warehouse: str = setting("Where data files go: a path or a file:// / s3:// URI.", ".lakegate/warehouse")
    catalog: dict[str, Any] = setting("Extra pyiceberg catalog properties (type=rest, uri=..., ...).", dict)


@dataclass
class SourceSettings:
    name: str = setting("Source name in SQL (name.schema.table).", "pg")
    kind: str = setting("Source kind; only 'postgres' today.", "postgres")
    dsn: str = setting("libpq connection string or URI.", "")
    replicate: list[str] = setting("Tables kept in the lake, as schema.table; [] = query-only.", list)
    slot: str = setting("Logical replication slot name (default lakegate_<name>).", "")
    publication: str = setting("Publication name (default lakegate_<name>).", "")
    allow_privileged_role: bool = setting(
        "Let 'lakegate serve' use this DSN although its role is more than a reader (superuser, owner or writer "
        "of tables, member of pg_read_server_files ...); it then warns at every start and in /v1/status.",
        False,
    )

    def __post_init__(self) -> None:
        self.slot = self.slot or f"lakegate_{self.name}"
        self.publication = self.publication or f"lakegate_{self.name}"

"""Settings: one TOML file merged with ``LAKEGATE_<SECTION>__<KEY>`` environment variables.

Each layer declares its own typed section where it is used (``[lake]`` and ``[[sources]]`` in
:mod:`lakegate.connectors.config`, ``[ingest]`` in :mod:`lakegate.ingest.config`, ``[gateway]`` in
:mod:`lakegate.gateway.config`); this module only reads, merges and validates them, and hands each layer its
section. Sources are addressed in the environment by name: ``LAKEGATE_SOURCES__PG__DSN`` overrides the ``dsn``
of the source named ``pg``.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from lakegate.connectors.config import (
    LakeSettings,
    SettingsError,
    SourceSettings,
    parse_duration,
    parse_size,
)
from lakegate.gateway.config import GatewaySettings
from lakegate.ingest.config import IngestSettings

__all__ = [
    "GatewaySettings",
    "IngestSettings",
    "LakeSettings",
    "Settings",
    "SettingsError",
    "SourceSettings",
    "load",
    "parse_duration",
    "parse_size",
]


#: Names of DuckDB's own databases: a source attached under one of them would be ambiguous in the gateway's SQL.
RESERVED_SOURCE_NAMES = frozenset({"system", "temp", "memory", "main"})


@dataclass
class Settings:
    lake: LakeSettings = field(default_factory=LakeSettings)
    sources: list[SourceSettings] = field(default_factory=list)
    ingest: IngestSettings = field(default_factory=IngestSettings)
    gateway: GatewaySettings = field(default_factory=GatewaySettings)

    def source(self, name: str) -> SourceSettings:
        for src in self.sources:
            if src.name == name:
                return src
        known = ", ".join(s.name for s in self.sources) or "none"
        raise SettingsError(f"no source named {name!r} (configured: {known})")


def _coerce(cls: type, section: str, raw: Mapping[str, Any]) -> Any:
    known = {f.name: f for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, value in raw.items():
        if key not in known:
            raise SettingsError(
                f"unknown setting [{section}] {key!r}; known settings: {', '.join(sorted(known))}"
            )
        kind = known[key].metadata.get("kind")
        default = known[key].default
        if kind == "duration":
            value = parse_duration(value, f"{section}.{key}")
        elif kind == "size":
            value = parse_size(value, f"{section}.{key}")
        elif isinstance(default, bool):
            value = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes", "on")
        elif isinstance(default, int) and not isinstance(value, int):
            try:
                value = int(str(value).replace("_", ""))
            except ValueError as exc:
                raise SettingsError(f"{section}.{key} = {value!r} is not an integer") from exc
        elif known[key].type in ("list[str]",) and isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        kwargs[key] = value
    return cls(**kwargs)


def _env_overrides(data: dict[str, Any], environ: Mapping[str, str]) -> None:
    for name, value in environ.items():
        if not name.startswith("LAKEGATE_") or "__" not in name:
            continue
        parts = name[len("LAKEGATE_") :].lower().split("__")
        if parts[0] == "sources" and len(parts) == 3:
            sources = data.setdefault("sources", [])
            match = next((s for s in sources if s.get("name", "").lower() == parts[1]), None)
            if match is None:
                match = {"name": parts[1]}
                sources.append(match)
            match[parts[2]] = value
        elif len(parts) == 2 and parts[0] in ("lake", "ingest", "gateway"):
            data.setdefault(parts[0], {})[parts[1]] = value


def load(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Read the TOML file (if any), apply environment overrides, validate."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            data = tomllib.loads(Path(path).read_text())
        except FileNotFoundError as exc:
            raise SettingsError(f"configuration file {path} does not exist") from exc
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"configuration file {path} is not valid TOML: {exc}") from exc
    _env_overrides(data, os.environ if environ is None else environ)
    unknown = set(data) - {"lake", "sources", "ingest", "gateway"}
    if unknown:
        raise SettingsError(
            f"unknown section(s) {sorted(unknown)}; expected [lake], [[sources]], [ingest], [gateway]"
        )
    sources = [_coerce(SourceSettings, f"sources.{i}", s) for i, s in enumerate(data.get("sources", []))]
    settings = Settings(
        lake=_coerce(LakeSettings, "lake", data.get("lake", {})),
        sources=sources,
        ingest=_coerce(IngestSettings, "ingest", data.get("ingest", {})),
        gateway=_coerce(GatewaySettings, "gateway", data.get("gateway", {})),
    )
    _validate(settings)
    return settings


def _validate(settings: Settings) -> None:
    names = [s.name for s in settings.sources]
    if len(set(names)) != len(names):
        raise SettingsError(f"source names must be unique, got {names}")
    reserved = [n for n in names if n.lower() in RESERVED_SOURCE_NAMES]
    if reserved:
        raise SettingsError(
            f"source name {reserved[0]!r} is reserved (DuckDB's own databases are named "
            f"{', '.join(sorted(RESERVED_SOURCE_NAMES))}); rename the source"
        )
    if settings.lake.name in names:
        raise SettingsError(f"source name {settings.lake.name!r} is also the lake's name; rename one of them")
    owners: dict[str, str] = {}
    for src in settings.sources:
        for table in src.replicate:
            if table in owners:
                raise SettingsError(
                    f"sources {owners[table]!r} and {src.name!r} both replicate {table}, and both would write the "
                    f"lake tables {table} and {table}__changelog; replicate it from one source only"
                )
            owners[table] = src.name
    for src in settings.sources:
        if src.kind != "postgres":
            raise SettingsError(f"source {src.name!r}: kind {src.kind!r} is not supported (only 'postgres')")
        if not src.dsn:
            raise SettingsError(
                f"source {src.name!r} has no dsn; set it in the file or LAKEGATE_SOURCES__"
                f"{src.name.upper()}__DSN"
            )
        for table in src.replicate:
            if table.count(".") != 1:
                raise SettingsError(f"source {src.name!r}: replicate entry {table!r} must be schema.table")
    if settings.ingest.commit_interval <= 0:
        raise SettingsError("ingest.commit_interval must be positive")
    ingest = settings.ingest
    if not 0 < ingest.compact_deleted_fraction <= 1:
        raise SettingsError(
            f"ingest.compact_deleted_fraction = {ingest.compact_deleted_fraction} must be above 0 and at most 1 "
            "(the default is 0.2: a file is rewritten once a fifth of its rows are deleted)"
        )
    for key in (
        "compact_every",
        "compact_small_file",
        "compact_min_small_files",
        "compact_max_delete_files",
        "changelog_compact_every",
    ):
        if getattr(ingest, key) < 0:
            raise SettingsError(f"ingest.{key} = {getattr(ingest, key)} must not be negative")
    if ingest.compact_max_bytes <= 0:
        raise SettingsError(f"ingest.compact_max_bytes = {ingest.compact_max_bytes} must be positive")

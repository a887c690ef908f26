"""Settings: one TOML file merged with ``LAKEGATE_<SECTION>__<KEY>`` environment variables.

Every setting is declared once below with its default and help text. Sources are addressed in the
environment by name: ``LAKEGATE_SOURCES__PG__DSN`` overrides the ``dsn`` of the source named ``pg``.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
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


def _help(text: str, default: Any = None, **kw: Any) -> Any:
    if callable(default):
        return field(default_factory=default, metadata={"help": text, **kw})
    return field(default=default, metadata={"help": text, **kw})


@dataclass
class LakeSettings:
    name: str = _help("Source name of the lake in SQL (lake.schema.table).", "lake")
    catalog_uri: str = _help(
        "pyiceberg SQL catalog URI (SQLite or PostgreSQL).", "sqlite:///.lakegate/catalog.db"
    )
    warehouse: str = _help("Where data files go: a path or a file:// / s3:// URI.", ".lakegate/warehouse")
    catalog: dict[str, Any] = _help("Extra pyiceberg catalog properties (type=rest, uri=..., ...).", dict)


@dataclass
class SourceSettings:
    name: str = _help("Source name in SQL (name.schema.table).", "pg")
    kind: str = _help("Source kind; only 'postgres' today.", "postgres")
    dsn: str = _help("libpq connection string or URI.", "")
    replicate: list[str] = _help("Tables kept in the lake, as schema.table; [] = query-only.", list)
    slot: str = _help("Logical replication slot name (default lakegate_<name>).", "")
    publication: str = _help("Publication name (default lakegate_<name>).", "")

    def __post_init__(self) -> None:
        self.slot = self.slot or f"lakegate_{self.name}"
        self.publication = self.publication or f"lakegate_{self.name}"


@dataclass
class IngestSettings:
    commit_interval: float = _help(
        "Longest time a change waits before it is committed to Iceberg.", 1.0, kind="duration"
    )
    max_batch_rows: int = _help("Flush earlier when this many changes are buffered.", 100_000)
    max_batch_bytes: int = _help(
        "Flush earlier when this many bytes of changes are buffered.", 64 * 2**20, kind="size"
    )
    fold_interval: float = _help(
        "How often the change-log tail is merged into the state table.", 60.0, kind="duration"
    )
    fold_rows: int = _help(
        "Merge the tail into the state table earlier once it holds this many changes.", 1_000_000
    )
    unbounded_numeric: str = _help(
        "Lake type of numeric columns without precision: 'string' (exact text) or "
        "'decimal(P,S)' (values that do not fit stop ingest with an error).",
        "string",
    )
    snapshot_expiry: float = _help(
        "Expire Iceberg snapshots older than this (time travel reaches this far back).",
        3600.0,
        kind="duration",
    )
    changelog_retention: float = _help(
        "Change-log rows older than this are removed once folded into the state (0 = keep every change).",
        0.0,
        kind="duration",
    )
    maintenance_interval: float = _help(
        "How often the worker compacts small files and expires snapshots "
        "(0 = never; run 'lakegate maintain' instead).",
        300.0,
        kind="duration",
    )


@dataclass
class GatewaySettings:
    host: str = _help("Address to bind; without tokens only loopback is allowed.", "127.0.0.1")
    port: int = _help("HTTP port.", 8080)
    tokens: list[str] = _help("Bearer tokens accepted (also as the Basic-auth password).", list)
    max_rows: int = _help("Row cap per query; results beyond it are truncated and flagged.", 100_000)
    timeout: float = _help("Time limit per query; a request may lower it.", 30.0, kind="duration")
    max_result_bytes: int = _help(
        "Cap on a result's size (Arrow bytes); beyond it the query fails with 413.", 512 * 2**20, kind="size"
    )
    workers: int = _help("Queries that run at once; more wait in a queue.", 8)
    max_queue: int = _help("Queries that may wait for a worker; beyond that the gateway answers 503.", 64)
    search_path: list[str] = _help(
        "Sources searched for two-part names (default: the lake, then every PostgreSQL source in order).",
        list,
    )
    allow_functions: list[str] = _help("Extra SQL functions the guard allows (names, lower case).", list)
    duckdb_threads: int = _help("DuckDB worker threads (0 = one per core).", 0)
    duckdb_memory_limit: str = _help(
        "DuckDB memory limit, e.g. '4GB' ('' = DuckDB's default, 80% of RAM).", ""
    )
    cache_bytes: int = _help(
        "Memory for the lake cache: hot lake tables kept in DuckDB memory at their current snapshot, least "
        "recently used evicted first (0 = off; at most half of DuckDB's memory limit). The default holds a "
        "fact table of a few tens of millions of narrow rows and leaves most of DuckDB's memory to the "
        "queries even on a 4 GiB host.",
        2**30,
        kind="size",
    )


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

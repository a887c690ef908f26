"""Open the lake's pyiceberg catalog from settings (SQL catalog on SQLite by default; PostgreSQL, REST, Glue).

The SQL catalog is pyiceberg's, able to commit the tables of a flush together (:mod:`.flushcatalog`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pyiceberg.catalog import Catalog, load_catalog

from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg.flushcatalog import FlushCatalog


def warehouse_uri(warehouse: str) -> str:
    """A path or URI -> a URI pyiceberg accepts (relative paths become absolute file:// URIs)."""
    if "://" in warehouse:
        return warehouse
    path = Path(warehouse).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path.as_uri()


def sqlite_path(uri: str) -> Path | None:
    if uri.startswith("sqlite:///"):
        return Path(uri[len("sqlite:///") :])
    return None


def open_catalog(name: str, catalog_uri: str, warehouse: str, extra: dict[str, Any] | None = None) -> Catalog:
    """The configured catalog. ``extra`` (``[lake.catalog]``) with a ``type`` selects rest/glue/... instead."""
    props: dict[str, Any] = {"warehouse": warehouse_uri(warehouse)}
    try:
        if extra and extra.get("type"):
            return load_catalog(name, **{**props, **extra})
        db = sqlite_path(catalog_uri)
        if db is not None:
            db = db.expanduser()
            db.parent.mkdir(parents=True, exist_ok=True)
            catalog_uri = f"sqlite:///{db.resolve()}"
        return FlushCatalog(name, uri=catalog_uri, **props, **(extra or {}))
    except Exception as exc:  # pyiceberg/sqlalchemy raise many types; all mean the catalog is unusable
        raise LakeError(
            f"cannot open the Iceberg catalog {catalog_uri!r} (warehouse {warehouse!r}): {exc}"
        ) from exc


def from_settings(lake: Any) -> Catalog:
    return open_catalog(lake.name, lake.catalog_uri, lake.warehouse, dict(lake.catalog) or None)


def env_flag(name: str) -> bool:
    return os.environ.get(name, "").lower() in ("1", "true", "yes")

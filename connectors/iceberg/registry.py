"""Which source tables a source replicates into the lake, by source identity (PostgreSQL's oid).

Kept in the Iceberg namespace properties of each namespace that holds such tables, under
``lakegate.tables.<source>`` (a JSON object table name -> oid), so any catalog can hold it and the lake describes
itself. The worker reads it before it starts and writes it once its tables are copied; it tells

- that a table in ``replicate`` was renamed in the source (its oid is recorded under the old name), so the lake
  tables follow it without a copy;
- that a table in ``replicate`` was left out of it for a while (its lake tables exist but the record lacks it): its
  changes of that time were not streamed, so it is copied again.
"""

from __future__ import annotations

import json
import logging

from pyiceberg.catalog import Catalog

from lakegate.connectors.changes import TableRef
from lakegate.connectors.errors import LakeError

log = logging.getLogger(__name__)

PREFIX = "lakegate.tables."
#: the shapes of a source's tables (connectors/postgres/shapes.py), by table oid, in each namespace's properties
SHAPES = "lakegate.shapes."


def read(catalog: Catalog, source: str) -> dict[TableRef, int] | None:
    """The tables the record says ``source`` replicates (None when nothing was ever recorded for it)."""
    key = PREFIX + source
    found: dict[TableRef, int] | None = None
    try:
        namespaces = catalog.list_namespaces()
        for ident in namespaces:
            namespace = ".".join(ident)
            raw = catalog.load_namespace_properties(namespace).get(key)
            if raw is None:
                continue
            found = found or {}
            for name, oid in json.loads(raw).items():
                found[TableRef(namespace, str(name))] = int(oid)
    except (ValueError, TypeError) as exc:
        raise LakeError(f"the lake's record of the tables of source {source!r} is damaged: {exc}") from exc
    except Exception as exc:  # whatever the catalog implementation raises
        raise LakeError(f"cannot read the lake's record of the tables of source {source!r}: {exc}") from exc
    return found


def write(catalog: Catalog, source: str, tables: dict[TableRef, int]) -> None:
    """Record exactly ``tables`` for ``source`` (namespaces that no longer hold any lose the entry)."""
    wanted: dict[str, dict[str, object]] = {}
    for ref, oid in tables.items():
        wanted.setdefault(ref.schema, {})[ref.name] = oid
    _record(catalog, PREFIX + source, wanted, f"the tables of source {source!r}")


def _record(catalog: Catalog, key: str, wanted: dict[str, dict[str, object]], what: str) -> None:
    """Namespace property ``key`` of each namespace: the JSON of ``wanted[namespace]``, or none."""
    try:
        for ident in catalog.list_namespaces():
            namespace = ".".join(ident)
            props = catalog.load_namespace_properties(namespace)
            value = json.dumps(wanted[namespace], sort_keys=True) if namespace in wanted else None
            if value is None and key in props:
                catalog.update_namespace_properties(namespace, removals={key})
            elif value is not None and props.get(key) != value:
                catalog.update_namespace_properties(namespace, updates={key: value})
    except Exception as exc:  # whatever the catalog implementation raises
        raise LakeError(f"cannot record {what} in the lake: {exc}") from exc


def read_shapes(catalog: Catalog, source: str) -> dict[int, dict[str, object]]:
    """The shapes recorded for ``source``'s tables, by table oid (empty: none recorded)."""
    found: dict[int, dict[str, object]] = {}
    try:
        for ident in catalog.list_namespaces():
            raw = catalog.load_namespace_properties(".".join(ident)).get(SHAPES + source)
            if raw is not None:
                found.update({int(oid): dict(shape) for oid, shape in json.loads(raw).items()})
    except (ValueError, TypeError) as exc:
        raise LakeError(
            f"the lake's record of the table shapes of source {source!r} is damaged: {exc}"
        ) from exc
    except Exception as exc:  # whatever the catalog implementation raises
        raise LakeError(
            f"cannot read the lake's record of the table shapes of source {source!r}: {exc}"
        ) from exc
    return found


def write_shapes(catalog: Catalog, source: str, shapes: dict[TableRef, tuple[int, dict[str, object]]]) -> None:
    """Record exactly ``shapes`` (lake name -> (oid, shape)) for ``source``, in the namespace of each table."""
    wanted: dict[str, dict[str, object]] = {}
    for ref, (oid, shape) in shapes.items():
        wanted.setdefault(ref.schema, {})[str(oid)] = shape
    _record(catalog, SHAPES + source, wanted, f"the table shapes of source {source!r}")

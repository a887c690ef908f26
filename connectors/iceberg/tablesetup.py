"""Creating, renaming and dropping the two lake tables of one source table (and their namespace).

The state table ``<schema>.<table>`` exists only for a source table with a key; the change log
``<schema>.<table>__changelog`` always. Each step tolerates a concurrent or an interrupted earlier one, so a worker
that stopped half-way completes it on its next start.
"""

from __future__ import annotations

import contextlib
import json

from pyiceberg.catalog import Catalog
from pyiceberg.exceptions import NamespaceAlreadyExistsError, NoSuchTableError
from pyiceberg.table import Table

from lakegate.connectors.changes import TableRef, TableSchema
from lakegate.connectors.errors import LakeError
from lakegate.connectors.iceberg import statesync
from lakegate.connectors.iceberg.commits import TABLE_PROPERTIES
from lakegate.connectors.iceberg.evolution import ATTNUMS, KEY, pgtypes_property
from lakegate.connectors.iceberg.schema import CHANGELOG, CHANGELOG_SUFFIX, STATE, lake_schema


def identifiers(ref: TableRef) -> tuple[str, str]:
    """The catalog identifiers of ``ref``'s state table and change log."""
    return f"{ref.schema}.{ref.name}", f"{ref.schema}.{ref.name}{CHANGELOG_SUFFIX}"


def ensure_namespace(catalog: Catalog, namespace: str) -> None:
    try:
        catalog.create_namespace(namespace)
    except NamespaceAlreadyExistsError:
        pass
    except Exception as exc:  # a concurrent creator wins the race inside the catalog (e.g. SQLite UNIQUE)
        try:
            catalog.load_namespace_properties(namespace)
        except Exception:
            raise LakeError(f"cannot create the lake namespace {namespace!r}: {exc}") from exc


def create_missing(
    catalog: Catalog, schema: TableSchema, source: str, changelog: Table | None, state: Table | None
) -> tuple[Table, Table | None]:
    """The change log and (for a keyed table) the state table, each created when missing (given as None)."""
    ensure_namespace(catalog, schema.table.schema)
    state_id, changelog_id = identifiers(schema.table)
    props = {
        **TABLE_PROPERTIES,
        "lakegate.source": source,
        KEY: ",".join(schema.key),
        ATTNUMS: json.dumps(
            {c.name: c.source_id for c in schema.columns if c.source_id is not None}, sort_keys=True
        ),
        **pgtypes_property({}, schema),
    }
    if changelog is None:
        changelog = catalog.create_table_if_not_exists(
            changelog_id, lake_schema(schema, CHANGELOG), properties={**props, "lakegate.kind": CHANGELOG}
        )
    if schema.key and state is None:
        state = catalog.create_table_if_not_exists(
            state_id,
            lake_schema(schema, STATE),
            properties={
                **props,
                "lakegate.kind": STATE,
                statesync.FORMAT_PROPERTY: statesync.POSITION_DELETES,
            },
        )
    return changelog, state


def rename(catalog: Catalog, old: TableRef, new: TableRef) -> None:
    """Rename the lake tables of ``old`` to ``new``'s names (Iceberg keeps snapshots and history). Each of the two
    renames is skipped when already done, so an interrupted rename completes on the next call."""
    ensure_namespace(catalog, new.schema)
    for before, after in zip(identifiers(old), identifiers(new), strict=True):
        try:
            catalog.rename_table(before, after)
        except NoSuchTableError:
            continue
        except Exception as exc:  # whatever the catalog implementation raises
            raise LakeError(f"cannot rename lake table {before} to {after}: {exc}") from exc


def drop(catalog: Catalog, ref: TableRef) -> None:
    for ident in identifiers(ref):
        with contextlib.suppress(NoSuchTableError):
            catalog.purge_table(ident)

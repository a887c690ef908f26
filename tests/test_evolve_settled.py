"""``LakeTable.evolve`` answers a repeated question from what it decided last time (issue 11.16): the worker asks it
for every table of every flush. The shortcut must not hide a change: a new column, a changed source type, a
record another process wrote, or a table object that was loaded again all go through the planning again, and
the lake tables end up as planning them from scratch would leave them."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lakegate.connectors.changes import Column, TableRef, TableSchema
from lakegate.connectors.iceberg import schemachange
from lakegate.connectors.iceberg.catalog import open_catalog
from lakegate.connectors.iceberg.evolution import PGTYPES, pgtypes_of
from lakegate.connectors.iceberg.writer import LakeTable

REF = TableRef("public", "t")


def _schema(*extra: Column, name_type: str = "text") -> TableSchema:
    columns = (
        Column("id", pa.int64(), "bigint", key=True, nullable=False, source_id=1),
        Column("name", pa.string(), name_type, source_id=2),
        *extra,
    )
    return TableSchema(REF, columns, ("id",))


@pytest.fixture
def table(tmp_path: Path) -> LakeTable:
    catalog = open_catalog("lake", f"sqlite:///{tmp_path / 'catalog.db'}", str(tmp_path / "warehouse"))
    made = LakeTable(catalog, _schema())
    made.create()
    made.evolve(_schema())
    return made


def _plans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Records each table ``schemachange.evolve`` plans (the work the shortcut saves)."""
    calls: list[str] = []
    original = schemachange.evolve

    def counting(table, kind, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(kind)
        return original(table, kind, *args, **kwargs)

    monkeypatch.setattr(schemachange, "evolve", counting)
    return calls


def _fields(table: LakeTable) -> list[str]:
    assert table.changelog is not None and table.state is not None
    return [f.name for f in table.state.schema().fields]


def test_the_same_question_is_answered_without_planning(
    table: LakeTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _plans(monkeypatch)
    table.evolve(_schema())  # the fixture's evolve changed nothing: settled
    table.evolve(_schema())
    assert calls == []


def test_a_new_column_is_still_added(table: LakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _plans(monkeypatch)
    table.evolve(_schema())
    wider = _schema(Column("extra", pa.int32(), "integer", source_id=3))
    table.evolve(wider)
    assert calls == ["changelog", "state"]
    assert "extra" in _fields(table)
    assert table.changelog is not None and "extra" in [f.name for f in table.changelog.schema().fields]
    table.evolve(wider)  # committed: the next call plans again (and finds nothing), then settles
    table.evolve(wider)
    assert calls == ["changelog", "state"] * 2


def test_a_changed_source_type_is_still_recorded(table: LakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _plans(monkeypatch)
    table.evolve(_schema(name_type="character varying(20)"))
    assert calls == ["changelog", "state"]
    assert table.changelog is not None
    assert pgtypes_of(table.changelog.properties)["name"] == "character varying(20)"


def test_a_record_changed_elsewhere_is_planned_again(
    table: LakeTable, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _plans(monkeypatch)
    assert table.changelog is not None
    # another writer (or an older lakegate) rewrote the source types this process recorded
    table.changelog.transaction().set_properties({PGTYPES: "{}"}).commit_transaction()
    table.evolve(_schema())
    assert calls == ["changelog", "state"]
    assert pgtypes_of(table.changelog.properties) == {"id": "bigint", "name": "text"}


def test_tables_loaded_again_are_planned_again(table: LakeTable, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _plans(monkeypatch)
    table.load()  # new Table objects (a restart of the stream, a re-copy): their schemas are other objects
    table.evolve(_schema())
    assert calls == ["changelog", "state"]
    table.evolve(_schema())
    assert calls == ["changelog", "state"]

"""The stop -> DDL -> start and schema-change tests again, with writer processes (issue 29.9: CI runs the ingest
tests with writer processes as well as without). ``LAKEGATE_TEST_PROCESSES=2 pytest tests/test_ingest_*.py``
runs every ingest test so; the suite runs these, the ones where the main process and the writers must agree on a
table's shape, its copies and its stops.

The tests are the very functions of :mod:`tests.test_ingest_ddl` (all) and :mod:`tests.test_ingest_stopped` (the
partition, re-created table and reconnect cases: the rest take the same paths at a worker's start), collected here
a second time under an environment that gives every worker they start two writer processes (about 80 s)."""

from __future__ import annotations

import pytest

from tests.test_ingest_ddl import (  # noqa: F401  (collected again here)
    test_add_column_with_defaults_while_streaming,
    test_column_added_again_under_its_name_with_another_type,
    test_column_dropped_and_added_again_under_the_same_name,
    test_columns_added_while_the_worker_is_stopped,
    test_rename_column_keeps_history_values_and_toast,
)
from tests.test_ingest_stopped import (  # noqa: F401
    test_a_table_dropped_and_created_again_is_copied_afresh,
    test_a_table_that_lost_its_key_stops_alone_at_a_reconnect,
    test_partitions_attached_and_detached_while_stopped,
)


@pytest.fixture(autouse=True)
def _writer_processes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAKEGATE_TEST_PROCESSES", "2")

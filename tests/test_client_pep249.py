"""PEP 249 compliance: the classic DB-API 2.0 driver test suite (``dbapi20`` of the ``dbapi-compliance`` package,
by Stuart Bishop) run against the client and a real gateway, its read-only parts.

The gateway is read-only: the suite's tests that create tables and insert rows through the cursor are skipped
with that reason (their reading halves are covered by tests/test_client_dbapi.py). ``test_close`` runs: its
``executeDDL1`` on the cursor of a closed connection must raise before anything is sent."""

from __future__ import annotations

import unittest

import dbapi20
import pytest

import lakegate
from tests.clienthelp import Env, client_env

READ_ONLY = "the gateway is read-only: this test creates tables and inserts rows through the cursor"


@pytest.fixture(scope="session")
def env(request: pytest.FixtureRequest, pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Env:
    return client_env(request, pg_server, tmp_path_factory)


class TestPep249(dbapi20.DatabaseAPI20Test):
    driver = lakegate
    table_prefix = "pg.public.dbapi20test_"

    @pytest.fixture(autouse=True)
    def _gateway(self, env: Env) -> None:
        self.connect_args = (env.url,)
        self.connect_kw_args = {"token": env.token}

    def tearDown(self) -> None:
        """Nothing to drop: no test that runs creates anything."""

    @unittest.skip("close() is idempotent, as psycopg's: closing twice is not an error")
    def test_non_idempotent_close(self) -> None: ...

    @unittest.skip("the gateway answers one result set per statement (no nextset)")
    def test_nextset(self) -> None: ...

    @unittest.skip("setoutputsize() does nothing (PEP 249 lets a driver ignore it)")
    def test_setoutputsize(self) -> None: ...

    @unittest.skip(READ_ONLY + " (and description=None after DDL)")
    def test_description(self) -> None: ...


for _name in (
    "test_cursor_isolation", "test_rowcount", "test_execute", "test_executemany", "test_fetchone",
    "test_fetchmany", "test_fetchall", "test_mixedfetch", "test_setinputsizes", "test_setoutputsize_basic",
    "test_None",
):  # fmt: skip
    setattr(TestPep249, _name, unittest.skip(READ_ONLY)(lambda self: None))


def test_the_suite_ran_its_read_only_tests() -> None:
    """The run above is not empty: these tests of the suite run for real (not skipped)."""
    ran = {name for name in dir(TestPep249) if name.startswith("test_")}
    skipped = {name for name in ran if getattr(getattr(TestPep249, name), "__unittest_skip__", False)}
    assert {
        "test_connect", "test_apilevel", "test_threadsafety", "test_paramstyle", "test_Exceptions",
        "test_ExceptionsAsConnectionAttributes", "test_commit", "test_rollback", "test_cursor", "test_close",
        "test_arraysize", "test_Date", "test_Time", "test_Timestamp", "test_Binary", "test_STRING",
        "test_BINARY", "test_NUMBER", "test_DATETIME", "test_ROWID", "test_callproc",
    } <= ran - skipped  # fmt: skip

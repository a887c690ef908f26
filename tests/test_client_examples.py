"""The example queries in ``sql/examples`` run against the demo schema through a real gateway, and answer what
PostgreSQL itself answers (the lake merges updates and deletes; the federated join reads live users); the
time-travel example answers as of the earlier snapshot. Also the header every example carries for Redash."""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

import lakegate
from tests.clienthelp import ROOT, Env, client_env, run_sql

EXAMPLES = ROOT / "sql" / "examples"


@pytest.fixture(scope="session")
def env(request: pytest.FixtureRequest, pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Env:
    return client_env(request, pg_server, tmp_path_factory)


def example(name: str) -> str:
    (path,) = EXAMPLES.glob(f"[0-9][0-9]_{name}.sql")
    return path.read_text()


def lake_rows(env: Env, sql: str) -> list[tuple[object, ...]]:
    with lakegate.connect(env.url, token=env.token) as conn:
        return conn.cursor().execute(sql).fetchall()


def pg_rows(env: Env, sql: str) -> list[tuple[object, ...]]:
    with env.pg() as pg:
        return [tuple(row) for row in pg.execute(sql).fetchall()]


def test_every_example_has_a_title_and_a_description() -> None:
    files = sorted(EXAMPLES.glob("*.sql"))
    assert len(files) >= 6
    for path in files:
        head = path.read_text().splitlines()[:2]
        assert re.match(r"-- title: \S", head[0]) and re.match(r"-- description: \S", head[1]), path


def test_latest_state_has_updates_applied_and_deletes_removed(env: Env) -> None:
    got = [row[:5] for row in lake_rows(env, example("latest_transactions"))]
    want = pg_rows(
        env, "SELECT id, user_id, amount, currency, status FROM transactions ORDER BY id DESC LIMIT 100"
    )
    assert got == want and 1 not in [row[0] for row in got]
    assert (4, 3, Decimal("14999.99"), "USD", "pending") in got and got[-1][0] == 2


def test_totals_registrations_and_high_value(env: Env) -> None:
    totals = "SELECT user_id, currency, count(*), sum(amount) FROM transactions "
    totals += "WHERE status IN ('completed', 'pending') GROUP BY 1, 2 ORDER BY 4 DESC, 1"
    assert lake_rows(env, example("total_per_user")) == pg_rows(env, totals)
    recent = lake_rows(env, example("new_registrations"))
    assert [row[0] for row in recent] == [4, 3]
    high = lake_rows(env, example("high_value_transactions"))
    assert [(row[0], row[2]) for row in high] == [(4, Decimal("14999.99")), (2, Decimal("2500.00"))]


def test_flagged_metadata_joined_with_live_users(env: Env) -> None:
    sql = example("flagged_with_live_users")
    with lakegate.connect(env.url, token=env.token) as conn:
        cur = conn.cursor().execute(sql)
        got = cur.fetchall()
        assert cur.route == "duckdb"  # lake and PostgreSQL in one query
    want = pg_rows(
        env,
        "SELECT m.transaction_id, m.reason, m.channel, t.amount, t.currency, t.status, u.email, u.country "
        "FROM transaction_metadata m JOIN transactions t ON t.id = m.transaction_id "
        "JOIN users u ON u.id = t.user_id WHERE m.flagged ORDER BY 1 DESC",
    )
    assert got == want and [row[0] for row in got] == [4, 3, 2]
    with env.pg() as pg:  # live: a change in PostgreSQL shows at once, without waiting for ingest
        pg.execute("UPDATE users SET country = 'CA' WHERE id = 3")
        try:
            assert "CA" in [row[7] for row in lake_rows(env, sql) if row[0] == 4]
        finally:
            pg.execute("UPDATE users SET country = 'FI' WHERE id = 3")


def test_time_travel_answers_as_of_the_earlier_snapshot(env: Env) -> None:
    sql = example("total_per_user_earlier")
    assert sql.count("now() - INTERVAL '5 minutes'") == 1
    at = env.before_changes.isoformat()
    earlier = lake_rows(env, sql.replace("now() - INTERVAL '5 minutes'", f"'{at}'"))
    assert earlier == [
        (3, "USD", 1, Decimal("15000.00")),
        (1, "EUR", 2, Decimal("2512.50")),
        (2, "USD", 2, Decimal("141.99")),
    ]
    now = lake_rows(env, example("total_per_user"))
    assert now[:2] == [(3, "USD", 1, Decimal("14999.99")), (1, "EUR", 1, Decimal("2500.00"))]


def test_examples_run_with_lakegate_sql(env: Env) -> None:
    files = [str(p) for p in sorted(EXAMPLES.glob("*.sql")) if "earlier" not in p.name]
    result = run_sql(env, "--on-error-stop", *[arg for f in files for arg in ("-f", f)])
    assert result.returncode == 0, result.stderr
    assert (
        "ERROR" not in result.stderr and result.stdout.count(" rows)") + result.stdout.count("(1 row)") == 5
    )
    assert Path(files[0]).name.startswith("01_")

"""Same answers as PostgreSQL on every route (issue 10): the corpus of ``tests/answers/*.sql`` runs on PostgreSQL
through psycopg, through the gateway on ``pg.*`` and through the gateway on ``lake.*`` (the same data, replicated
by the real ingest worker), and every answer must be identical in column names, PostgreSQL type names and values
(issue 28.0: as strictly as a user compares them) — or refused with a 400, SQLSTATE 0A000, in words that name
what cannot be translated exactly, where ``tests/answers/refusals.txt`` pins that refusal. The counts are
printed."""

from __future__ import annotations

import csv
import datetime
import io
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest

from tests.answers_harness import (
    CORPUS,
    IDENTICAL,
    Tally,
    compare,
    from_gateway,
    from_postgres,
    infinities,
    ordered,
    read_corpus,
    run_corpus,
    unordered_columns,
)
from tests.gateway_fixtures.harness import database, gateway_settings, live_server
from tests.lakehelp import running_worker, wait_caught_up

TABLES = {"nums", "strs", "times", "misc", "grp", "tree", "one", "words", "jnums", "ties", "moves", "edges"}
NOT_QUERIES = ("data.sql", "changes.sql", "tpch.sql", "federated.sql", "icu.sql")
FAST = sorted(p.name for p in CORPUS.glob("*.sql") if p.name not in NOT_QUERIES)


@pytest.fixture(scope="module")
def setup(
    pg_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[psycopg.Connection, httpx.Client]]:
    lake_dir = tmp_path_factory.mktemp("answers")
    with database(pg_server) as dsn, psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute((CORPUS / "data.sql").read_text())
        settings = gateway_settings(dsn, lake_dir, [f"public.{t}" for t in sorted(TABLES)])
        with running_worker(settings):
            wait_caught_up(conn)
            for line in (CORPUS / "changes.sql").read_text().splitlines():  # streamed, after the snapshot
                if line.strip() and not line.startswith("--"):
                    conn.execute(line)
            wait_caught_up(conn)
        with live_server(settings) as server, server.client() as client:
            yield conn, client


def test_corpus_answers_as_postgresql(setup: tuple[psycopg.Connection, httpx.Client]) -> None:
    conn, client = setup
    queries = read_corpus(FAST)
    tally = Tally()
    run_corpus(queries, conn, client, TABLES, tally)
    print("\n" + tally.report(f"differential corpus, {len(queries)} queries"))
    assert not tally.differing, f"{len(tally.differing)} silent differences:\n  " + "\n  ".join(
        tally.differing
    )


def test_federated_answers_as_postgresql(setup: tuple[psycopg.Connection, httpx.Client]) -> None:
    """Lake x PostgreSQL statements (``federated.sql``), each run twice with the two sides swapped: a
    PostgreSQL table's char(n) values must come back padded however the statement expands them."""
    conn, client = setup
    queries = read_corpus(["federated.sql"])
    tally = Tally()
    infinities(conn)
    type_names = {oid: name for oid, name in conn.execute("SELECT oid::int, typname FROM pg_type").fetchall()}
    for query in queries:
        want = from_postgres(conn, query.plain, type_names)
        for swap in (False, True):
            got = from_gateway(client, query.federated(swap))
            in_order, unordered = ordered(query.plain), unordered_columns(query.plain)
            outcome, why = compare(want, got, in_order, may_refuse=True, unordered=unordered)
            tally.add("swapped" if swap else "federated", query, outcome, why)
    print("\n" + tally.report(f"federated corpus, {len(queries)} queries x 2"))
    assert not tally.differing, f"{len(tally.differing)} silent differences:\n  " + "\n  ".join(
        tally.differing
    )
    assert tally.outcomes["federated"][IDENTICAL] + tally.outcomes["swapped"][IDENTICAL] >= len(queries)


@pytest.mark.parametrize("zone", ["America/New_York", "Asia/Kolkata"])
def test_times_in_other_time_zones(setup: tuple[psycopg.Connection, httpx.Client], zone: str) -> None:
    """Issue 10.4: the request's time zone on both routes is PostgreSQL's session TimeZone: timestamptz shown
    with the zone's offsets, ::date, date_trunc, extract, literals, comparisons and interval arithmetic."""
    conn, client = setup
    queries = read_corpus(["times.sql", "zones.sql"])
    tally = Tally()
    try:
        run_corpus(queries, conn, client, TABLES, tally, zone)
    finally:
        conn.execute("SET TimeZone = 'UTC'")
    print("\n" + tally.report(f"times and zones in {zone}, {len(queries)} queries"))
    assert not tally.differing, f"{len(tally.differing)} silent differences:\n  " + "\n  ".join(
        tally.differing
    )
    assert tally.outcomes["lake"]["identical"] >= len(queries) * 3 // 4


def test_a_schema_created_after_start_is_queryable_at_once(
    setup: tuple[psycopg.Connection, httpx.Client],
) -> None:
    """Issue 10.6: a schema (and a table in it) created in PostgreSQL while the gateway runs is seen by the next
    query on both routes, federated with the lake included, without a restart."""
    conn, client = setup
    for query in ("SELECT count(*) FROM lake.public.grp", "SELECT count(*) FROM pg.public.grp"):
        assert client.post("/v1/query", json={"sql": query}).status_code == 200  # both engines warmed up
    conn.execute("CREATE SCHEMA late; CREATE TABLE late.tags (g int PRIMARY KEY, tag char(4))")
    conn.execute("INSERT INTO late.tags SELECT g, 't' || g FROM generate_series(0, 9) g")
    join = "SELECT g.id, t.tag FROM {grp} g JOIN {tags} t ON t.g = g.id ORDER BY g.id"
    want = conn.execute(join.format(grp="public.grp", tags="late.tags")).fetchall()
    assert want, "the join must return rows to be a check"
    for grp in ("lake.public.grp", "pg.public.grp"):
        response = client.post("/v1/query", json={"sql": join.format(grp=grp, tags="pg.late.tags")})
        assert response.status_code == 200, response.text
        got = [(r["id"], r["tag"].rstrip()) for r in response.json()["rows"]]  # char(4)
        assert got == [(i, tag.rstrip()) for i, tag in want], grp
    conn.execute("CREATE TABLE late.more (g int); INSERT INTO late.more VALUES (1), (2)")
    response = client.post(
        "/v1/query", json={"sql": "SELECT sum(m.g) AS s FROM pg.late.more m JOIN lake.public.one o ON true"}
    )
    assert response.status_code == 200, response.text
    want_sum = conn.execute("SELECT sum(m.g) FROM late.more m JOIN public.one o ON true").fetchone()
    assert want_sum is not None and response.json()["rows"] == [{"s": want_sum[0]}]


ERRORS = {
    "SELECT 7 / (id - id) FROM {one}": "22012",
    "SELECT '1.5'::int FROM {one}": "22P02",
    "SELECT 2147483647 + id FROM {one}": "22003",
    "SELECT 'x'::uuid FROM {one}": "22P02",
    "SELECT 123.456::numeric(4,2) FROM {one}": "22003",
    "SELECT '2024-13-01'::date FROM {one}": "22008",
}


@pytest.mark.parametrize("sql", sorted(ERRORS))
def test_errors_carry_postgresql_code_and_words_on_both_routes(
    setup: tuple[psycopg.Connection, httpx.Client], sql: str
) -> None:
    """Issue 10.5: what PostgreSQL raises, both routes answer with a 400 whose error object holds PostgreSQL's
    SQLSTATE and whose message holds PostgreSQL's own words."""
    conn, client = setup
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(sql.format(one="public.one"))
    sqlstate, words = raised.value.sqlstate, raised.value.diag.message_primary
    assert sqlstate == ERRORS[sql] and words
    for schema in ("pg.public", "lake.public"):
        response = client.post("/v1/query", json={"sql": sql.format(one=f"{schema}.one")})
        error = response.json()["error"]
        assert response.status_code == 400 and error["sqlstate"] == sqlstate, (schema, error)
        assert words in error["message"], (schema, error["message"])


def test_time_zone_shows_in_json_and_leaves_no_trace_in_pooled_sessions(
    setup: tuple[psycopg.Connection, httpx.Client],
) -> None:
    """The request's zone is how timestamptz values display on both routes; a PostgreSQL session that ran in one
    goes back to the pool in UTC; an unknown zone is a 400 that says what to write."""
    conn, client = setup
    sql = "SELECT tz, tz::date AS day FROM {s}.times WHERE id = 2"
    want = conn.execute(sql.format(s="public")).fetchone()
    assert want is not None
    for schema in ("pg.public", "lake.public"):
        body = {"sql": sql.format(s=schema), "time_zone": "Asia/Kolkata"}
        rows = client.post("/v1/query", json=body).json()["rows"]
        local = want[0].astimezone(datetime.timezone(datetime.timedelta(hours=5, minutes=30)))
        assert rows == [{"tz": local.isoformat(timespec="microseconds"), "day": local.date().isoformat()}], (
            schema
        )
    for _ in range(12):  # more than the pool's sessions: none kept Asia/Kolkata
        rows = client.post("/v1/query", json={"sql": sql.format(s="pg.public")}).json()["rows"]
        assert rows[0]["tz"].endswith("+00:00"), rows
    response = client.post("/v1/query", json={"sql": "SELECT 1", "time_zone": "Mars/Olympus_Mons"})
    error = response.json()["error"]
    assert response.status_code == 400 and "unknown time zone 'Mars/Olympus_Mons'" in error["message"]
    assert "America/New_York" in error["message"]


def _csv(client: httpx.Client, sql: str) -> list[list[str]]:
    response = client.post("/v1/query", json={"sql": sql, "format": "csv"})
    assert response.status_code == 200, response.text
    return list(csv.reader(io.StringIO(response.text)))[1:]


def test_equal_numerics_of_different_scales_are_shown_as_written_or_refused(
    setup: tuple[psycopg.Connection, httpx.Client],
) -> None:
    """Issue 10.1: 1.5 and 1.50 are equal values PostgreSQL prints differently. Each row shows its own text on
    the lake route; where they meet (one group, a tie for min/max) PostgreSQL shows the one its plan reads
    first, which the lake route cannot know: a 400 that says so, never one of them picked otherwise."""
    conn, client = setup
    texts = "SELECT id::text, v::text, (v * 2)::text, (v + 0.5)::text FROM public.ties ORDER BY id"
    want = [[v or "" for v in row] for row in conn.execute(texts).fetchall()]
    got = _csv(client, "SELECT id, v, v * 2 AS twice, v + 0.5 AS more FROM lake.public.ties ORDER BY id")
    assert got == want
    assert ["2", "1.50", "3.00", "2.00"] in got  # PostgreSQL's text, not 1.5 or 1.500000000000000000
    for sql in ("SELECT v, count(*) FROM {t} GROUP BY v", "SELECT min(v), max(v) FROM {t} WHERE id < 5"):
        assert conn.execute(sql.format(t="public.ties")).fetchall()  # PostgreSQL answers: one of them
        response = client.post("/v1/query", json={"sql": sql.format(t="lake.public.ties")})
        assert response.status_code == 400, response.text
        assert "different display scales" in response.json()["error"]["message"]
    groups = conn.execute("SELECT v::text, count(*)::text FROM public.ties WHERE id > 4 GROUP BY v ORDER BY v")
    got = _csv(client, "SELECT v, count(*) FROM lake.public.ties WHERE id > 4 GROUP BY v ORDER BY v")
    assert got == [[v or "", n] for v, n in groups.fetchall()]  # one scale per group: shown

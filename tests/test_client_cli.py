"""``lakegate sql`` as a subprocess against a real gateway (``lakegate serve`` in a subprocess): output formats,
backslash commands, errors with a caret, exit statuses like psql's, -c / -f / stdin, and an interactive session
on a pseudo-terminal (prompt, multi-line statements, Ctrl-C cancelling the running query, history)."""

from __future__ import annotations

import csv
import io
import json
import os
import pty
import select
import sys
import time
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest

from tests.clienthelp import ROOT, Env, client_env, free_port, run_sql


@pytest.fixture(scope="session")
def env(request: pytest.FixtureRequest, pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Env:
    return client_env(request, pg_server, tmp_path_factory)


def test_aligned_output_like_psql(env: Env) -> None:
    result = run_sql(env, "-c", "SELECT id, email, country FROM lake.public.users WHERE id <= 2 ORDER BY id")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        " id |       email       | country\n"
        "----+-------------------+---------\n"
        "  1 | ada@example.com   | GB\n"
        "  2 | grace@example.com | US\n"
        "(2 rows)\n\n"
    )
    assert result.stderr == ""
    one = run_sql(
        env, "-c", "SELECT id, label, amount, flag, raw FROM pg.public.vals WHERE id >= 2 ORDER BY id"
    )
    assert one.stdout == (
        " id |             label             |   amount    | flag | raw\n"
        "----+-------------------------------+-------------+------+-----\n"
        "  2 | quote ' \" backslash \\ newline+| -0.00000001 | f    | \\x\n"
        "    |  tab\tend                      |             |      |\n"
        "  3 |                               |             |      |\n"
        "(2 rows)\n\n"
    )
    single = run_sql(env, "-c", "SELECT count(*) AS n FROM lake.public.transactions")
    assert single.stdout.endswith(" 5\n(1 row)\n\n")


def test_expanded_csv_and_json(env: Env) -> None:
    sql = "SELECT id, amount, at, day FROM lake.public.vals WHERE id = 1"
    expanded = run_sql(env, "-x", "-c", sql)
    assert expanded.stdout == (
        "-[ RECORD 1 ]------------------------\n"
        "id     | 1\n"
        "amount | 12345678901234567890.12345678\n"
        "at     | 2024-05-01 10:00:00.123456+00\n"
        "day    | 2024-05-01\n\n"
    )
    as_csv = run_sql(env, "--format", "csv", "-c", "SELECT id, label, ratio FROM pg.public.vals ORDER BY id")
    rows = list(csv.reader(io.StringIO(as_csv.stdout)))
    assert rows[0] == ["id", "label", "ratio"] and rows[1] == ["1", "plain", "0.1"]
    assert rows[2] == ["2", "quote ' \" backslash \\ newline\n tab\tend", "NaN"] and rows[3] == [
        "3",
        "",
        "Infinity",
    ]
    as_json = run_sql(
        env, "--format", "json", "-c", "SELECT id, amount, at, day FROM pg.public.vals ORDER BY id"
    )
    records = json.loads(as_json.stdout, parse_float=Decimal)
    assert records[0] == {
        "id": 1,
        "amount": Decimal("12345678901234567890.12345678"),
        "at": "2024-05-01T10:00:00.123456+00:00",
        "day": "2024-05-01",
    }
    assert records[1]["amount"] == Decimal("-0.00000001") and records[2]["amount"] is None
    empty = run_sql(env, "--format", "json", "-c", "SELECT id FROM lake.public.users WHERE id < 0")
    assert json.loads(empty.stdout) == []


def test_backslash_commands(env: Env) -> None:
    tables = run_sql(env, "-c", "\\dt lake.public.trans*")
    assert tables.returncode == 0, tables.stderr
    assert "List of tables" in tables.stdout and "(4 rows)" in tables.stdout
    assert " lake   | public | transactions__changelog         | changelog" in tables.stdout
    assert " pg " not in tables.stdout
    everything = run_sql(env, "-c", "\\dt")
    assert " pg     | public | users" in everything.stdout and "(12 rows)" in everything.stdout
    missing = run_sql(env, "-c", "\\dt nothing*")
    assert missing.returncode == 1 and 'Did not find any tables named "nothing*"' in missing.stderr
    described = run_sql(env, "-c", "\\d lake.public.users")
    assert 'Table "lake.public.users"' in described.stdout
    assert " id            | long        | not null\n" in described.stdout
    assert " registered_at | timestamptz |\n" in described.stdout
    assert described.stdout.endswith("Indexes:\n    PRIMARY KEY (id)\n\n")
    pg_table = run_sql(env, "-c", "\\d pg.public.transaction_metadata").stdout  # the key as PostgreSQL has it
    assert " transaction_id | bigint " in pg_table and pg_table.endswith(
        "    PRIMARY KEY (transaction_id)\n\n"
    )
    sources = run_sql(env, "-c", "\\l").stdout
    assert " lake   | lake" in sources and " pg     | postgres" in sources
    assert " pg     | public" in run_sql(env, "-c", "\\dn").stdout
    helped = run_sql(env, "-c", "\\?")
    assert "\\dt [PATTERN]" in helped.stdout and "\\timing" in helped.stdout
    invalid = run_sql(env, "-c", "\\frobnicate")
    assert invalid.returncode == 1 and "invalid command \\frobnicate" in invalid.stderr


def test_scripts_from_file_and_stdin(env: Env, tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    script = tmp_path / "script.sql"
    script.write_text(
        "-- a comment; with a semicolon\n"
        "SELECT 'a;b' AS t,\n"
        "       2 AS two;\n"
        "\\timing on\n"
        f"\\o {out}\n"
        "SELECT count(*) AS n FROM pg.public.users;\n"
        "\\o\n"
        "\\x\n"
        "SELECT 3 AS three  -- no semicolon at the end\n"
    )
    result = run_sql(env, "-f", str(script))
    assert result.returncode == 0, result.stderr
    assert result.stdout == ("  t  | two\n-----+-----\n a;b |   2\n(1 row)\n\n-[ RECORD 1 ]\nthree | 3\n\n")
    assert out.read_text() == " n\n---\n 5\n(1 row)\n\n"
    assert "Timing is on." in result.stderr and result.stderr.count("Time: ") == 2
    piped = run_sql(env, stdin="SELECT 1 AS one;\nSELECT 2 AS two")
    assert piped.returncode == 0 and "(1 row)" in piped.stdout and " two\n-----\n   2\n" in piped.stdout
    several = run_sql(env, "-c", "SELECT 1 AS a; SELECT 2 AS b", "-c", "\\l")
    assert several.stdout.count("(1 row)") == 2 and "List of sources" in several.stdout


def test_syntax_errors_show_line_column_and_caret(env: Env) -> None:
    result = run_sql(env, "-c", "SELECT *\nFROM lake.public.users WHERE")
    assert result.returncode == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("ERROR:  syntax_error: syntax error at line 2")
    assert lines[1] == "LINE 2: FROM lake.public.users WHERE"
    assert lines[2] == " " * len("LINE 2: FROM lake.public.users ") + "^"
    forbidden = run_sql(env, "-c", "SELECT 1;\nDROP TABLE pg.public.users")
    assert forbidden.returncode == 1 and "ERROR:  forbidden: DROP is not allowed" in forbidden.stderr
    context, caret = forbidden.stderr.splitlines()[-2:]
    assert context == "LINE 1: DROP TABLE pg.public.users"  # each statement is sent (and positioned) alone
    assert caret.strip() == "^" and context[len(caret) - 1 - 1] in " ."  # under the start of a word


def test_exit_statuses_like_psql(env: Env, tmp_path: Path) -> None:
    script = tmp_path / "bad.sql"
    script.write_text("SELECT * FROM lake.public.nope;\nSELECT 'after' AS went_on;\n")
    keeps_going = run_sql(env, "-f", str(script))
    assert (
        keeps_going.returncode == 0
        and "after" in keeps_going.stdout
        and "does not exist" in keeps_going.stderr
    )
    stops = run_sql(env, "--on-error-stop", "-f", str(script))
    assert stops.returncode == 3 and "after" not in stops.stdout
    assert run_sql(env, "-c", "SELECT * FROM lake.public.nope").returncode == 1
    assert run_sql(env, "-f", str(tmp_path / "missing.sql")).returncode == 1
    assert run_sql(env, "--format", "xml", "-c", "SELECT 1").returncode == 1
    unreachable = run_sql(
        env, "-c", "SELECT 1", "-c", "SELECT 2", extra_env={"LAKEGATE_URL": f"http://127.0.0.1:{free_port()}"}
    )
    assert unreachable.returncode == 2 and "cannot reach the lakegate gateway" in unreachable.stderr
    assert unreachable.stderr.count("ERROR:") == 1  # stopped at the first failure
    refused = run_sql(env, "--token", "wrong", "-c", "SELECT 1")
    assert refused.returncode == 2 and "unauthorized: the token is not valid" in refused.stderr
    explicit = run_sql(
        env, "--url", env.url, "-c", "SELECT 7 AS seven", extra_env={"LAKEGATE_URL": "http://x.invalid"}
    )
    assert explicit.returncode == 0 and "7" in explicit.stdout


def test_backslash_commands_inside_a_statement_and_the_query_buffer(env: Env, tmp_path: Path) -> None:
    inside = run_sql(env, stdin="SELECT 1 AS one,\n\\x\n2 AS two;\n")  # psql runs \x, the statement goes on
    assert (
        inside.stdout == "-[ RECORD 1 ]\none | 1\ntwo | 2\n\n" and "Expanded display is on." in inside.stderr
    )
    quoted = run_sql(env, stdin="SELECT 'a\\x' AS t;\n")  # a backslash in a literal is no command
    assert quoted.stdout == "  t\n-----\n a\\x\n(1 row)\n\n" and quoted.stderr == ""
    out = tmp_path / "four.txt"
    sent = run_sql(env, stdin=f"SELECT 3 AS three \\g\nSELECT 4 AS four \\g {out}\nSELECT 5 AS five;\n\\g\n")
    assert sent.stdout.count(" three\n-------\n     3\n") == 1
    assert sent.stdout.count(" five\n------\n    5\n(1 row)") == 2
    assert out.read_text() == " four\n------\n    4\n(1 row)\n\n" and "four" not in sent.stdout
    empty = run_sql(env, stdin="\\g\n")
    assert "\\g: there is no query to send" in empty.stderr

    included = tmp_path / "inc.sql"
    included.write_text("SELECT 6 AS six;\n\\x\n")
    ran = run_sql(env, stdin=f"\\i {included}\nSELECT 7 AS seven;\n\\i {tmp_path / 'nope.sql'}\n")
    assert " six\n-----\n   6\n" in ran.stdout and "-[ RECORD 1 ]\nseven | 7\n" in ran.stdout
    assert "nope.sql: No such file or directory" in ran.stderr

    seen = tmp_path / "seen.sql"
    editor = tmp_path / "editor.py"  # an editor that keeps what it was given and writes a new query
    editor.write_text(
        "import shutil, sys\n"
        f"shutil.copy(sys.argv[1], {str(seen)!r})\n"
        "open(sys.argv[1], 'w').write('SELECT 9 AS nine;\\n')\n"
    )
    edited = run_sql(
        env, stdin="SELECT 'draft' AS d\n\\e\n", extra_env={"EDITOR": f"{sys.executable} {editor}"}
    )
    assert seen.read_text() == "SELECT 'draft' AS d\n" and " nine\n------\n    9\n" in edited.stdout
    assert "draft" not in edited.stdout


def test_watch_and_expanded_auto(env: Env) -> None:
    watched = run_sql(env, stdin="SELECT 10 AS ten \\watch 0.1 c=3\n")
    assert watched.returncode == 0 and watched.stdout.count("(1 row)") == 3
    assert watched.stdout.count("(every 0.1s)") == 3 and watched.stdout.count("  10\n") == 3
    bad = run_sql(env, stdin="SELECT 1 \\watch soon\n")
    assert 'invalid arguments "soon"' in bad.stderr
    auto = run_sql(
        env,
        stdin="\\x auto\nSELECT 1 AS a;\nSELECT 'a rather long text value, wider than the terminal' AS t, 2 AS b;\n",
        extra_env={"COLUMNS": "40"},
    )
    assert "Expanded display is used automatically." in auto.stderr
    assert auto.stdout.startswith(" a\n---\n 1\n(1 row)\n\n")  # narrow: a table
    assert "-[ RECORD 1 ]" in auto.stdout and "b | 2\n" in auto.stdout  # too wide: records
    pset = run_sql(env, stdin="\\pset pager off\n\\pset border 2\n")
    assert "Pager usage is off." in pset.stderr and '\\pset: unknown option "border"' in pset.stderr


def test_pager_for_results_taller_than_the_terminal(env: Env, tmp_path: Path) -> None:
    paged = tmp_path / "paged.txt"
    pager = f"{sys.executable} -c \"import sys; open({str(paged)!r}, 'a').write(sys.stdin.read())\""
    term = Terminal(env, tmp_path, {"LAKEGATE_PAGER": pager, "LINES": "10", "COLUMNS": "80"})
    term.expect("lakegate=> ")
    term.send("SELECT i FROM generate_series(0, 29) t(i);\n")
    term.expect("lakegate=> ")
    assert "(30 rows)" in paged.read_text() and "(30 rows)" not in term.seen
    term.send("SELECT 1 AS short;\n")  # fits: no pager
    term.expect("(1 row)")
    term.send("\\pset pager off\n")
    term.expect("Pager usage is off.")
    term.send("SELECT i FROM generate_series(0, 29) t(i);\n")
    term.expect("(30 rows)")
    term.send("\\q\n")
    assert term.wait() == 0
    assert paged.read_text().count("(30 rows)") == 1 and "short" not in paged.read_text()

    missing = Terminal(env, tmp_path, {"LAKEGATE_PAGER": "no-such-pager-here", "LINES": "10"})
    missing.expect("lakegate=> ")
    missing.send("SELECT i FROM generate_series(0, 29) t(i);\n")
    missing.expect("(30 rows)")  # a pager that cannot run loses nothing
    assert "the pager 'no-such-pager-here' could not run" in missing.seen
    missing.send("\\q\n")
    assert missing.wait() == 0


INTERVALS = [  # as SQL expressions both engines read (DuckDB cannot read '-1 day +2 hours')
    "interval '1 day 2 hours'", "interval '-1 day' + interval '2 hours'", "interval '-1 month'",
    "interval '-90 seconds'", "interval '14 months 3 days 04:05:06.5'", "interval '0 seconds'",
    "interval '1 microsecond'", "interval '-2 years -3 months' + interval '4 days' - interval '05:06:07'",
]  # fmt: skip


def test_intervals_as_postgresql_prints_them(env: Env) -> None:
    """Arrow's month-day-nanosecond intervals (the lake route's) printed as psql does. (The PostgreSQL route
    answers intervals as ISO 8601 text today, e.g. P1DT2H: the gateway's encoding, shown as it comes.)"""
    sql = "SELECT " + ", ".join(f"{v} AS i{n}" for n, v in enumerate(INTERVALS))
    with env.pg() as pg:
        as_text = "SELECT " + ", ".join(f"({v})::text" for v in INTERVALS)
        expected = [str(v) for v in pg.execute(as_text).fetchone()]  # type: ignore[union-attr]
    result = run_sql(env, "--format", "csv", "-c", sql)
    assert result.returncode == 0, result.stderr
    assert list(csv.reader(io.StringIO(result.stdout)))[1] == expected


@pytest.mark.parametrize("source", ["pg", "lake"])
def test_infinite_times_as_postgresql_prints_them(env: Env, source: str) -> None:
    """``infinity``/``-infinity`` reach Python as ``datetime.max``/``min`` (psycopg's recipe) and print as psql
    prints them, not as 9999-12-31 23:59:59.999999."""
    items = ["'infinity'::timestamptz", "'-infinity'::timestamp", "'infinity'::date", "'-infinity'::date"]
    sql = "SELECT " + ", ".join(items) + f" FROM {source}.public.users WHERE id = 1"
    with env.pg() as pg:
        expected = [str(v) for v in pg.execute("SELECT " + ", ".join(f"{i}::text" for i in items)).fetchone()]  # type: ignore[union-attr]
    result = run_sql(env, "--format", "csv", "-c", sql)
    assert result.returncode == 0, result.stderr
    assert list(csv.reader(io.StringIO(result.stdout)))[1] == expected


def test_row_cap_notice(env: Env) -> None:
    result = run_sql(env, "--max-rows", "2", "-c", "SELECT id FROM lake.public.users ORDER BY id")
    assert result.returncode == 0 and "(2 rows)" in result.stdout
    assert "NOTICE:  the result was cut at the gateway's row cap (2 rows)" in result.stderr


# ------------------------------------------------------------------------------------------- interactive


class Terminal:
    """``lakegate sql`` on a pseudo-terminal: what a person at a terminal sees and types."""

    def __init__(self, env: Env, home: Path, extra: dict[str, str] | None = None) -> None:
        environ = {
            **os.environ,
            "LAKEGATE_URL": env.url,
            "LAKEGATE_TOKEN": env.token,
            "HOME": str(home),
            "TERM": "dumb",
            "PYTHONPATH": str(ROOT),
            **(extra or {}),
        }
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: a session leader whose controlling terminal is the pty
            os.chdir(ROOT)
            os.execve(sys.executable, [sys.executable, "-m", "lakegate", "sql"], environ)
        self.seen = ""
        self.mark = 0  #: expect() looks at what appeared after the last send()

    def expect(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.seen[self.mark :]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{text!r} did not appear; the terminal shows:\n{self.seen[-2000:]}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:  # the child has gone
                    break
        if text not in self.seen[self.mark :]:
            raise AssertionError(f"{text!r} did not appear; the terminal shows:\n{self.seen[-2000:]}")
        return self.seen

    def send(self, text: str) -> None:
        self.mark = len(self.seen)
        os.write(self.fd, text.encode())

    def wait(self, timeout: float = 30.0) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            try:
                if select.select([self.fd], [], [], 0.1)[0]:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
            except OSError:
                time.sleep(0.05)
        os.kill(self.pid, 9)
        raise AssertionError(f"lakegate sql did not exit:\n{self.seen[-2000:]}")


def _sleeping(env: Env) -> int:
    with psycopg.connect(env.dsn, autocommit=True) as pg:
        return pg.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query ILIKE '%%pg_sleep(22)%%' "
            "AND pid <> pg_backend_pid()"
        ).fetchone()[0]  # type: ignore[index]


def test_interactive_session_on_a_terminal(env: Env, tmp_path: Path) -> None:
    term = Terminal(env, tmp_path)
    term.expect('Type "\\?" for help')
    term.expect("lakegate=> ")
    term.send("SELECT id,\n")
    term.expect("lakegate-> ")
    term.send("  email FROM pg.public.users WHERE id = 3;\n")
    term.expect("linus@example.com")
    term.expect("(1 row)")
    term.send("SELECT pg_sleep(22) FROM pg.public.users LIMIT 1;\n")
    deadline = time.monotonic() + 20  # generous: a loaded machine is slow, the assertion is about the cancel
    while not _sleeping(env) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleeping(env) == 1, "the query did not start"
    term.send("\x03")  # Ctrl-C
    term.expect("canceling statement due to user request")
    deadline = time.monotonic() + 10  # well before pg_sleep(22) would end by itself
    while _sleeping(env) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _sleeping(env) == 0, "Ctrl-C did not cancel the query on the server"
    term.send("SELECT 40 + 2 AS answer;\n")  # the program is still there
    term.expect("42")
    term.expect("lakegate=> ")  # typed before the prompt, the line is echoed by the terminal, not by readline
    term.send("SELECT 'unfinished\n")
    term.expect("lakegate'> ")
    term.send("\x03")  # Ctrl-C at the prompt clears the input
    try:
        term.expect("lakegate=> ", timeout=5)
    except AssertionError:  # it came before readline waited for input: CPython sees it at the next key only
        term.send("\x03")  # (a user presses it again)
        term.expect("lakegate=> ")
    term.send("\\q\n")
    assert term.wait() == 0
    history = (tmp_path / ".lakegate_history").read_text().splitlines()  # one entry a line, as psql's file
    assert history[0] == "SELECT id,\x01  email FROM pg.public.users WHERE id = 3;" and len(history) == 4

    again = Terminal(env, tmp_path)  # the next session recalls the two-line statement as one entry
    again.expect("lakegate=> ")
    again.send("\x12email")  # Ctrl-R: search the history
    again.expect("email")
    again.send("\r")
    again.expect("linus@example.com")
    again.expect("(1 row)")
    again.send("SELECT email FROM lake.public.us\t")  # Tab completes the table's name from /v1/schema
    again.send(" WHERE id = 1;\n")
    again.expect("ada@example.com")
    again.send("\\q\n")
    assert again.wait() == 0


def test_time_zone_of_the_session(env: Env) -> None:
    """SET TIME ZONE, \\timezone and --time-zone: the session's zone goes with every query, and timestamptz values
    print as psql prints them in that zone (compared with PostgreSQL's own text in a session in that zone)."""
    sql = "SELECT at, at::date AS day FROM {t}.public.vals WHERE id = 1"
    with env.pg() as pg:
        pg.execute("SET TimeZone = 'Asia/Kolkata'")
        row = pg.execute("SELECT at::text, (at::date)::text FROM public.vals WHERE id = 1").fetchone()
    assert row is not None
    want = ["at,day", ",".join(row)]
    for table in ("pg", "lake"):
        set_first = run_sql(
            env, "--format", "csv", "-c", "SET TIME ZONE 'Asia/Kolkata'", "-c", sql.format(t=table)
        )
        assert set_first.returncode == 0, set_first.stderr
        assert set_first.stdout.splitlines() == ["SET", *want], table
        option = run_sql(env, "--time-zone", "Asia/Kolkata", "--format", "csv", "-c", sql.format(t=table))
        assert option.stdout.splitlines() == want, option.stderr
    command = run_sql(env, "--format", "csv", "-c", "\\timezone Asia/Kolkata", "-c", "SHOW timezone")
    assert command.stdout.splitlines() == ["SET", "TimeZone", "Asia/Kolkata"], command.stderr
    wrong = run_sql(env, "-c", "SET TIME ZONE 'Mars/Olympus_Mons'", "-c", "SHOW TIME ZONE")
    assert "unknown time zone 'Mars/Olympus_Mons'" in wrong.stderr and "the gateway's" in wrong.stdout

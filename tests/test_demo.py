"""`lakegate demo` end to end, in a subprocess: it starts, a change in its PostgreSQL reaches the gateway within
seconds, Ctrl-C leaves no process behind, and a second run resumes from the data of the first."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from tests.procs import Proc


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _query(port: int, sql: str) -> list[dict]:
    response = httpx.post(f"http://127.0.0.1:{port}/v1/query", json={"sql": sql}, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()["rows"]


def _lakegate_sql(port: int, sql: str) -> str:
    """The result of ``lakegate sql -c`` (csv), as a user of the demo would run it."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "lakegate",
            "sql",
            "--url",
            f"http://127.0.0.1:{port}",
            "--format",
            "csv",
            "-c",
            sql,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def _processes_using(path: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        try:
            if any(str(path) in part for part in proc.info["cmdline"] or []):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def test_demo_on_a_busy_port_says_so_before_starting_anything(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "lakegate", "demo", "--dir", str(tmp_path / "demo"), "--port", str(port)],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1, done
    assert f"cannot use port {port} on 127.0.0.1" in done.stderr and "--port" in done.stderr
    assert "Traceback" not in done.stderr and "PostgreSQL" not in done.stderr + done.stdout
    assert not (tmp_path / "demo").exists()  # nothing was started or created


def _left_behind(root: Path, grace: float = 10.0) -> list[psutil.Process]:
    """Processes still using ``root`` after ``grace`` seconds (PostgreSQL's children may take a moment to exit
    after the postmaster has stopped, more so on a loaded machine)."""
    deadline = time.monotonic() + grace
    while (found := _processes_using(root)) and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


@pytest.mark.slow
def test_demo_starts_streams_stops_cleanly_and_resumes(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    port = _free_port()
    demo = Proc(["demo", "--dir", str(root), "--port", str(port), "--rate", "50"], tmp_path / "demo1.log")
    try:
        demo.wait_for_output("Uvicorn running on", timeout=120)
        output = demo.output()
        assert f"http://127.0.0.1:{port}" in output and "lakegate sql" in output
        dsn = next(line.split()[-1] for line in output.splitlines() if line.strip().startswith("PostgreSQL"))
        with psycopg.connect(dsn, autocommit=True) as conn:
            (tables,) = conn.execute("SELECT count(*) FROM pg_publication_tables").fetchone()
            assert tables == 3
            conn.execute("UPDATE transactions SET amount = 12345.67 WHERE id = 1")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            seen = _lakegate_sql(port, "SELECT amount FROM lake.public.transactions WHERE id = 1")
            if seen.splitlines()[1:] == ["12345.67"]:
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"the change did not reach the lake within 15 s: {seen!r}")
        before = _query(port, "SELECT count(*) AS n FROM lake.public.users")[0]["n"]
        # a second demo on the same directory (what the busy-port message leads to) is refused, the first goes on
        second = subprocess.run(
            [sys.executable, "-m", "lakegate", "demo", "--dir", str(root), "--port", str(_free_port())],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert second.returncode == 1, second
        assert f"another demo is running on {root.resolve()}" in second.stderr, second.stderr
        assert "Traceback" not in second.stderr
        assert _query(port, "SELECT count(*) AS n FROM lake.public.users")[0]["n"] >= before
    finally:
        demo.signal(signal.SIGINT)
        code = demo.wait(60)
    assert code == 0, demo.output()[-3000:]
    assert "stopped cleanly" in demo.output()
    assert not _left_behind(root), "the demo left processes behind"

    port = _free_port()
    again = Proc(["demo", "--dir", str(root), "--port", str(port), "--rate", "0"], tmp_path / "demo2.log")
    try:
        again.wait_for_output("Uvicorn running on", timeout=120)
        assert "seeded" not in again.output()
        assert _query(port, "SELECT count(*) AS n FROM lake.public.users")[0]["n"] >= before
        assert Decimal(
            str(_query(port, "SELECT amount FROM transactions WHERE id = 1")[0]["amount"])
        ) == Decimal("12345.67")
    finally:
        again.signal(signal.SIGTERM)
        assert again.wait(60) == 0
    assert not _left_behind(root), "the demo left processes behind"

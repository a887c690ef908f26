"""Redash against a real gateway (``lakegate serve`` in a subprocess):

* the built-in JSON data source: the documented YAML query, read the way Redash's ``json_ds`` reads it
  (requests with HTTP Basic auth, ``path: rows``, columns typed from the values);
* the lakegate query runner (compose/redash/lakegate_query_runner.py): its plain parts (HTTP, result, schema
  and error shaping) without Redash; the Redash class through a stand-in of Redash 25's runner interface; and
  through the real Redash when it is importable (it is not on PyPI, so that test is usually skipped).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any
from urllib.parse import urljoin

import pytest
import requests
import yaml

from tests.clienthelp import ROOT, Env, client_env, free_port

RUNNER_DIR = ROOT / "compose" / "redash"
STANDIN = Path(__file__).parent / "redash_standin"
# The query text a Redash user writes for the JSON data source (base URL http://gateway:8080 in compose; here
# the test gateway's URL). README "Redash" shows the same.
JSON_QUERY = """
url: /v1/query
method: post
json:
  sql: |
    SELECT t.id, t.amount, t.status, t.created_at, m.flagged
    FROM lake.public.transactions t
    JOIN lake.public.transaction_metadata m ON m.transaction_id = t.id
    ORDER BY t.id
path: rows
"""


@pytest.fixture(scope="session")
def env(request: pytest.FixtureRequest, pg_server: object, tmp_path_factory: pytest.TempPathFactory) -> Env:
    return client_env(request, pg_server, tmp_path_factory)


# ---------------------------------------------------------------------------------- the JSON data source


def json_source(query: str, base_url: str, username: str | None, password: str | None) -> tuple[Any, Any]:
    """What Redash's JSON data source does with a query: YAML -> one request (Basic auth from the data source's
    username/password) -> the list at ``path`` -> columns typed from the first value seen of each key."""
    spec = yaml.safe_load(query)
    options = {k: spec[k] for k in ("params", "headers", "data", "auth", "json", "verify") if k in spec}
    if username or password:
        options["auth"] = (username or "", password or "")
    response = requests.request(
        spec.get("method", "get"), urljoin(base_url, spec["url"]), timeout=30, **options
    )
    if response.status_code != 200:
        return None, f"Failed to execute query. Return Code: {response.status_code} Reason: {response.text}"
    data = response.json()
    for part in spec["path"].split("."):
        data = data[part]
    types = {str: "string", int: "integer", float: "float", bool: "boolean"}
    columns: dict[str, str] = {}
    rows = []
    for row in data:
        assert isinstance(row, dict) and not any(isinstance(v, dict) for v in row.values())  # else flattened
        for key, value in row.items():
            columns.setdefault(key, types.get(type(value), "string"))
        rows.append(row)
    return {"columns": columns, "rows": rows}, None


def test_json_data_source_reads_rows_with_basic_auth(env: Env) -> None:
    data, error = json_source(JSON_QUERY, env.url, "redash", env.token)
    assert error is None
    assert [row["id"] for row in data["rows"]] == [2, 3, 4]
    assert data["columns"] == {
        "id": "integer",
        "amount": "float",
        "status": "string",
        "created_at": "string",  # an ISO 8601 string: Redash's JSON source types values, not declared columns
        "flagged": "boolean",
    }
    assert data["rows"][2]["amount"] == 14999.99 and data["rows"][2]["created_at"].endswith("+00:00")
    only_password, error = json_source(JSON_QUERY, env.url, None, env.token)  # username left empty
    assert error is None and len(only_password["rows"]) == 3


def test_json_data_source_errors_are_readable(env: Env) -> None:
    _, refused = json_source(JSON_QUERY, env.url, "redash", "wrong-token")
    assert "Return Code: 401" in refused and "the token is not valid" in refused
    bad = JSON_QUERY.replace("ORDER BY t.id", "ORDER BY")
    _, error = json_source(bad, env.url, "redash", env.token)
    assert "Return Code: 400" in error and '"code":"syntax_error"' in error and '"line":' in error
    empty, error = json_source(
        JSON_QUERY.replace("ORDER BY", "WHERE t.id < 0 ORDER BY"), env.url, "r", env.token
    )
    assert error is None and empty == {"columns": {}, "rows": []}


def test_json_response_shape_is_redash_shaped(env: Env) -> None:
    response = requests.post(
        f"{env.url}/v1/query",
        json={"sql": "SELECT * FROM lake.public.users ORDER BY id"},
        auth=("x", env.token),
    )
    body = response.json()
    assert set(body) >= {"columns", "rows", "truncated", "elapsed_ms", "route"}
    # Redash's keys, plus the PostgreSQL type name (issue 10.2), which Redash ignores
    assert all(set(c) == {"name", "friendly_name", "type", "pg_type"} for c in body["columns"])
    assert all(isinstance(c["pg_type"], str) and c["pg_type"] for c in body["columns"])
    assert {c["type"] for c in body["columns"]} <= {
        "integer",
        "float",
        "boolean",
        "string",
        "datetime",
        "date",
    }
    assert [list(row) for row in body["rows"]] == [[c["name"] for c in body["columns"]]] * 5


# ------------------------------------------------------------------------------ the runner, without Redash


@pytest.fixture
def runner() -> Iterator[ModuleType]:
    sys.path.insert(0, str(RUNNER_DIR))
    try:
        sys.modules.pop("lakegate_query_runner", None)
        yield importlib.import_module("lakegate_query_runner")
    finally:
        sys.path.remove(str(RUNNER_DIR))
        sys.modules.pop("lakegate_query_runner", None)


def test_runner_module_needs_only_requests(runner: ModuleType) -> None:
    if importlib.util.find_spec("redash") is None:
        assert runner.BaseSQLQueryRunner is None and not hasattr(runner, "Lakegate")
    source = (RUNNER_DIR / "lakegate_query_runner.py").read_text()
    imports = {
        line.split()[1].split(".")[0] for line in source.splitlines() if line.startswith(("import ", "from "))
    }
    assert imports <= {"__future__", "json", "logging", "typing", "requests", "redash"}, imports


def test_runner_shapes_results_schema_and_errors(env: Env, runner: ModuleType) -> None:
    gateway = runner.Gateway(env.url, env.token, timeout=10)
    data = gateway.query("SELECT id, amount, created_at, status FROM lake.public.transactions ORDER BY id")
    assert [c["type"] for c in data["columns"]] == ["integer", "float", "datetime", "string"]
    assert [r["id"] for r in data["rows"]] == [2, 3, 4, 5, 6] and data["metadata"]["route"] == "duckdb"
    assert runner.columns([{"name": "x", "type": "interval"}]) == [
        {"name": "x", "friendly_name": "x", "type": "string"}
    ]
    tables = {t["name"]: t["columns"] for t in gateway.schema()}
    assert {"lake.public.transactions", "lake.public.transactions__changelog", "pg.public.users"} <= set(
        tables
    )
    assert {"name": "amount", "type": "decimal(12, 2)"} in tables["lake.public.transactions"]
    assert {"name": "email", "type": "text"} in tables["pg.public.users"]
    with pytest.raises(runner.GatewayError) as syntax:
        gateway.query("SELECT *\nFROM lake.public.users WHERE")
    assert str(syntax.value).startswith(
        "syntax_error: syntax error at line 2"
    ) and "(line 2, column 24)" in str(syntax.value)
    with pytest.raises(runner.GatewayError, match="not_found: table lake.public.nope does not exist"):
        gateway.query("SELECT * FROM lake.public.nope")
    with pytest.raises(runner.GatewayError, match="unauthorized"):
        runner.Gateway(env.url, "wrong").check()
    with pytest.raises(runner.GatewayError, match="cannot reach the lakegate gateway"):
        runner.Gateway(f"http://127.0.0.1:{free_port()}", env.token).check()
    assert "HTTP 502" in runner.error_message(502, "<html>bad gateway</html>")


# ------------------------------------------------------------------------------- the runner, in "Redash"


def _load_with(path: Path) -> tuple[ModuleType, ModuleType]:
    for name in [m for m in sys.modules if m == "redash" or m.startswith("redash.")] + [
        "lakegate_query_runner"
    ]:
        sys.modules.pop(name, None)
    sys.path[:0] = [str(path), str(RUNNER_DIR)]
    module = importlib.import_module("lakegate_query_runner")
    return module, importlib.import_module("redash.query_runner")


def _check_registered_runner(env: Env, module: ModuleType, query_runner: ModuleType) -> None:
    cls = query_runner.query_runners["lakegate"]
    assert cls is module.Lakegate and cls.name() == "lakegate"
    schema = cls.configuration_schema()
    assert schema["secret"] == ["token"] and schema["required"] == ["url"]
    runner = query_runner.get_query_runner("lakegate", {"url": env.url, "token": env.token})
    assert runner.syntax == "sql"
    query = runner.annotate_query(
        "SELECT id FROM pg.public.users ORDER BY id", {"Username": "ada", "Query ID": 7}
    )
    data, error = runner.run_query(query, None)
    assert error is None and [r["id"] for r in data["rows"]] == [1, 2, 3, 4, 5]
    assert data["columns"] == [{"name": "id", "friendly_name": "id", "type": "integer"}]
    data, error = runner.run_query("SELECT * FROM lake.public.nope", None)
    assert data is None and error.startswith("not_found: table lake.public.nope does not exist")
    runner.test_connection()
    names = [t["name"] for t in runner.get_schema()]
    assert "lake.public.users" in names and names == sorted(names)
    broken = query_runner.get_query_runner("lakegate", {"url": env.url, "token": "wrong"})
    with pytest.raises(Exception, match="unauthorized"):
        broken.test_connection()
    with pytest.raises(Exception, match="Error getting the lakegate schema"):
        broken.get_schema()


@pytest.fixture
def isolated_imports() -> Iterator[None]:
    path, modules = list(sys.path), dict(sys.modules)
    try:
        yield
    finally:
        sys.path[:] = path
        for name in [m for m in sys.modules if m not in modules]:
            sys.modules.pop(name, None)
        sys.modules.update(modules)


def test_runner_registers_and_runs_in_a_redash_standin(env: Env, isolated_imports: None) -> None:
    module, query_runner = _load_with(STANDIN)
    assert query_runner.__file__.startswith(str(STANDIN))
    _check_registered_runner(env, module, query_runner)


def test_runner_in_the_real_redash(env: Env, isolated_imports: None) -> None:
    if importlib.util.find_spec("redash") is None:
        pytest.skip("Redash is not installed (it is not on PyPI); run this inside a Redash image")
    spec = importlib.util.find_spec("redash")
    module, query_runner = _load_with(Path(spec.origin).parent.parent)  # type: ignore[union-attr,arg-type]
    _check_registered_runner(env, module, query_runner)

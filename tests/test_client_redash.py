"""Redash against a real gateway (``lakegate serve`` in a subprocess):

* the built-in JSON data source: the documented YAML query, read the way Redash's ``json_ds`` reads it
  (requests with HTTP Basic auth, ``path: rows``, columns typed from the values);
* the lakegate query runner (compose/redash/lakegate_query_runner.py): its plain parts (HTTP, result, schema
  and error shaping) without Redash; the Redash class through a stand-in of Redash 25's runner interface; and
  through the real Redash when it is importable (it is not on PyPI, so that test is usually skipped).
"""

from __future__ import annotations

import csv
import importlib
import importlib.util
import io
import logging
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
from tests.redash_standin import flow

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
    assert imports <= {"__future__", "decimal", "json", "logging", "re", "typing", "requests", "redash"}, imports


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
    message = str(syntax.value)
    assert message.startswith("syntax_error: ") and "line 2" in message and "column 24" in message
    assert message.count("line 2") == 1, message  # the position once
    assert (
        runner.error_text({"code": "x", "message": "bad", "line": 3, "column": 4})
        == "x: bad (line 3, column 4)"
    )
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


# ------------------------------------------------------------------- what a Redash user sees of the runner


@pytest.fixture
def standin_runner(env: Env, isolated_imports: None) -> Any:
    _, query_runner = _load_with(STANDIN)

    def make(**options: Any) -> Any:
        return query_runner.get_query_runner("lakegate", {"url": env.url, "token": env.token, **options})

    return make


def test_a_cut_result_is_visible_in_redash(env: Env, standin_runner: Any) -> None:
    """Redash shows "N rows" and nothing of the metadata: the cut shows as a last row (tables, dashboards) and
    in the query page's "Log Information"; Redash's own flag is set; or the query fails, as configured."""
    sql = "SELECT id, email FROM pg.public.users ORDER BY id"
    with env.pg() as pg:
        emails = [e for (e,) in pg.execute("SELECT email FROM users ORDER BY id").fetchall()]
    data = flow.execute(standin_runner(max_rows=2), sql)
    assert [r["email"] for r in data["rows"][:2]] == emails[:2] and len(data["rows"]) == 3
    marker = data["rows"][-1]
    assert marker["id"] is None and marker["email"].startswith("\u26a0 lakegate: the result was cut")
    assert "only the first 2 rows" in marker["email"]
    page = flow.query_page(data)
    assert page["rows"] == "3 rows" and page["truncated"] is True
    assert page["log"][0] == "Log Information:" and "only the first 2 rows" in page["log"][1]

    numbers = flow.execute(standin_runner(max_rows=2), "SELECT id FROM pg.public.users ORDER BY id")
    assert [c["name"] for c in numbers["columns"]] == ["id", "lakegate"]  # a column to carry the note
    assert [r["id"] for r in numbers["rows"]] == [1, 2, None] and numbers["rows"][2]["lakegate"]

    logged = flow.execute(standin_runner(max_rows=2, on_truncate="log"), sql)
    assert len(logged["rows"]) == 2 and "only the first 2 rows" in flow.query_page(logged)["log"][1]
    with pytest.raises(flow.QueryExecutionError, match="more than 2 rows, the gateway's row cap"):
        flow.execute(standin_runner(max_rows=2, on_truncate="error"), sql)
    with pytest.raises(flow.QueryExecutionError, match="write one of warn, log, error"):
        flow.execute(standin_runner(on_truncate="silently"), sql)

    whole = flow.execute(standin_runner(), sql)  # not cut: nothing added
    assert [r["email"] for r in whole["rows"]] == emails and "log" not in whole and "truncated" not in whole
    assert flow.query_page(whole)["log"] == []


def test_arrays_download_as_postgresql_literals(env: Env, standin_runner: Any) -> None:
    # on the lake route: PostgreSQL's result does not say how many dimensions an expression's array has, so the
    # PostgreSQL route refuses a two-dimensional array expression (connectors/postgres/textforms.py)
    sql = (
        "SELECT ARRAY['a', 'b c', NULL, ''] AS words, ARRAY[1, 2] AS nums, ARRAY[[1, 2], [3, 4]] AS grid "
        "FROM lake.public.transactions LIMIT 1"
    )
    data = flow.execute(standin_runner(), sql)
    with env.pg() as pg:  # PostgreSQL's own text of the same arrays
        as_text = sql.replace(" AS", "::text AS").replace("lake.public.", "public.")
        expected = [str(v) for v in pg.execute(as_text).fetchone()]  # type: ignore[union-attr]
    rows = list(csv.reader(io.StringIO(flow.csv_download(data))))
    assert rows == [["words", "nums", "grid"], expected]
    assert [c["type"] for c in data["columns"]] == ["string", "string", "string"]


def test_intervals_read_as_postgresql_prints_them(env: Env, standin_runner: Any) -> None:
    values = ["interval '1 day 2 hours'", "interval '-1 day' + interval '2 hours'", "interval '-1 month'",
              "interval '14 months 3 days 04:05:06.5'", "interval '0 seconds'"]  # fmt: skip
    sql = "SELECT " + ", ".join(f"{v} AS i{n}" for n, v in enumerate(values))
    with env.pg() as pg:
        as_text = "SELECT " + ", ".join(f"({v})::text" for v in values)
        expected = [str(v) for v in pg.execute(as_text).fetchone()]  # type: ignore[union-attr]
    data = flow.execute(standin_runner(), sql)
    assert list(data["rows"][0].values()) == expected
    assert {c["type"] for c in data["columns"]} == {"string"}


def test_errors_in_redash_point_into_the_users_sql(env: Env, standin_runner: Any) -> None:
    """Redash prefixes /* Username: …, Job ID: … */: the position is the user's line and column, given once."""
    runner = standin_runner()
    with pytest.raises(flow.QueryExecutionError) as syntax:
        flow.execute(runner, "SELECT *\nFROM pg.public.users WHERE")
    assert str(syntax.value).count("line 2") == 1 and "column 22" in str(syntax.value), str(syntax.value)
    with pytest.raises(flow.QueryExecutionError) as first_line:  # line 1 shares its line with the comment
        flow.execute(runner, "SELECT * FROM pg.public.users WHERE")
    message = str(first_line.value)
    assert message.count("line 1") == 1 and "column 31" in message, message  # where WHERE starts
    assert "sqlglot" not in message and "<class" not in message, message
    for sql in ("SELECT 1 AS one;", "SELECT 1 AS one -- a comment", "SELECT 1 AS one /* a comment */ ;"):
        assert flow.execute(runner, sql)["rows"] == [{"one": 1}], sql  # the annotation after any ending
    assert flow.execute(runner, "SELECT 1 AS one", username="a */ DROP TABLE x; /*")["rows"] == [{"one": 1}]
    with pytest.raises(flow.QueryExecutionError) as forbidden:
        flow.execute(runner, "DELETE FROM pg.public.users")
    assert str(forbidden.value).startswith("forbidden: ") and "DELETE" in str(forbidden.value)
    assert "/*" not in str(forbidden.value), str(forbidden.value)  # the guard names the statement


# ----------------------------------------------------------------------------------------- provisioning


class StandinRedash:
    """The part of redash-toolbelt's client that compose/provision.py uses, over an in-memory Redash whose
    query jobs run for real: the lakegate runner (through the Redash stand-in) or the JSON data source (as
    :func:`json_source` does) against the test gateway."""

    def __init__(self, make_runner: Any) -> None:
        self.make_runner = make_runner
        self.sources: dict[int, dict[str, Any]] = {}
        self.saved: dict[int, dict[str, Any]] = {}
        self.boards: list[dict[str, Any]] = []

    def _get(self, path: str) -> Any:
        assert path == "api/data_sources/types", path
        return _Json([{"type": "lakegate"}, {"type": "json"}])

    def _post(self, path: str, json: Any = None) -> Any:
        parts = path.split("/")
        if parts[1] == "data_sources" and len(parts) == 3:
            self.sources[int(parts[2])].update(json)
            return _Json(self.sources[int(parts[2])])
        if parts[1] == "data_sources" and parts[3] == "test":
            return _Json(self._test(self.sources[int(parts[2])]))
        assert parts[1] == "queries" and parts[3] == "results", path
        return _Json({"job": self._run(self.saved[int(parts[2])])})

    def _test(self, source: dict[str, Any]) -> dict[str, Any]:
        if source["type"] == "json":
            return {"ok": True}  # Redash's JSON data source tests nothing
        try:
            self.make_runner(**source["options"]).test_connection()
        except Exception as exc:  # noqa: BLE001 - Redash reports any exception as the test's message
            return {"ok": False, "message": str(exc)}
        return {"ok": True, "message": "success"}

    def _run(self, query: dict[str, Any]) -> dict[str, Any]:
        source = self.sources[query["data_source_id"]]
        options = source["options"]
        if source["type"] == "json":
            auth = (options.get("username"), options.get("password"))
            _, error = json_source(query["query"], options["base_url"], *auth)
        else:
            try:
                flow.execute(self.make_runner(**options), query["query"], query_id=query["id"])
                error = None
            except flow.QueryExecutionError as exc:
                error = str(exc)
        return {"id": query["id"], "status": 4 if error else 3, "error": error or ""}

    def get_data_sources(self) -> list[dict[str, Any]]:
        return [{"id": i, **s} for i, s in self.sources.items()]

    def create_data_source(self, name: str, kind: str, options: dict[str, Any]) -> Any:
        self.sources[len(self.sources) + 1] = {"name": name, "type": kind, "options": options}
        return _Json({"id": len(self.sources)})

    def queries(self) -> list[dict[str, Any]]:
        return list(self.saved.values())

    def dashboards(self) -> list[dict[str, Any]]:
        return self.boards

    def paginate(self, resource: Any) -> list[dict[str, Any]]:
        return resource()  # type: ignore[no-any-return]

    def create_query(self, payload: dict[str, Any]) -> Any:
        query_id = len(self.saved) + 1
        self.saved[query_id] = {"id": query_id, "visualizations": [{"id": 100 + query_id}], **payload}
        return _Json(self.saved[query_id])

    def update_query(self, query_id: int, payload: dict[str, Any]) -> Any:
        self.saved[query_id].update(payload)
        return _Json(self.saved[query_id])

    def get_query(self, query_id: int) -> dict[str, Any]:
        return self.saved[query_id]

    def create_dashboard(self, name: str) -> dict[str, Any]:
        self.boards.append({"id": len(self.boards) + 1, "name": name, "widgets": []})
        return self.boards[-1]

    def create_widget(self, dashboard: int, visualization: int, text: str, options: dict[str, Any]) -> None:
        self.boards[dashboard - 1]["widgets"].append(visualization)

    def update_dashboard(self, dashboard: int, properties: dict[str, Any]) -> None:
        self.boards[dashboard - 1].update(properties)


class _Json:
    def __init__(self, value: Any) -> None:
        self.value = value

    def json(self) -> Any:
        return self.value


@pytest.fixture
def provision_module() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("lakegate_provision", ROOT / "compose" / "provision.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_provision_checks_what_it_provisions(
    env: Env,
    standin_runner: Any,
    provision_module: ModuleType,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    module = provision_module
    caplog.set_level(logging.INFO, logger="lakegate.provision")
    cfg = module.Config.from_env({"LAKEGATE_URL": env.url, "LAKEGATE_TOKEN": env.token})
    redash = StandinRedash(lambda **options: standin_runner(**options))
    assert module.provision(cfg, redash) == 0, caplog.text
    examples = module.read_examples(cfg.examples)
    assert len(redash.saved) == len(examples) + 1 and len(redash.boards[0]["widgets"]) == len(examples) + 1
    assert "Redash is ready" in caplog.text

    first = redash.saved[1]
    first["query"] = "SELECT 1 AS edited_by_a_user"  # a user's edit survives a second run
    assert module.provision(cfg, redash) == 0 and redash.saved[1]["query"] == "SELECT 1 AS edited_by_a_user"
    assert len(redash.saved) == len(examples) + 1  # nothing created twice
    forced = module.Config.from_env({"LAKEGATE_URL": env.url, "LAKEGATE_TOKEN": env.token}, force=True)
    assert module.provision(forced, redash) == 0 and redash.saved[1]["query"] == examples[0].sql

    caplog.clear()  # a changed token reaches the data sources, and a wrong one is said, not hidden
    wrong = module.Config.from_env({"LAKEGATE_URL": env.url, "LAKEGATE_TOKEN": "not-the-token"})
    assert module.provision(wrong, redash) == 1
    assert redash.sources[1]["options"]["token"] == "not-the-token"
    assert "the data source 'lakegate' failed Redash's connection test: unauthorized" in caplog.text
    assert "Redash is ready" not in caplog.text and "failed: unauthorized" in caplog.text

    caplog.clear()  # an example that fails makes the script fail, naming the query and the reason
    (tmp_path / "01_bad.sql").write_text("-- title: Broken\nSELECT * FROM lake.public.nope")
    broken = module.Config.from_env(
        {"LAKEGATE_URL": env.url, "LAKEGATE_TOKEN": env.token, "EXAMPLES": str(tmp_path)}
    )
    assert module.provision(broken, redash) == 1
    assert "the query 'Broken' failed: not_found: table lake.public.nope does not exist" in caplog.text

    no_token = module.data_source_options(module.Config.from_env({"LAKEGATE_URL": env.url}))
    assert no_token == {
        "lakegate": ("lakegate", {"url": env.url}),
        "lakegate (JSON)": ("json", {"base_url": env.url}),
    }

"""Provision Redash for lakegate, idempotently: the data sources "lakegate" (the lakegate query runner) and
"lakegate (JSON)" (Redash's built-in JSON data source with Basic auth), one query per file of sql/examples (plus
one through the JSON source), and a dashboard "lakegate" with a table of each. Then it checks the result: every
data source passes Redash's connection test and every example query runs once; the script exits non-zero with
the reason when one does not.

    python compose/provision.py [--force]     # settings from the environment, see Config.from_env

* Data sources are created when missing and updated on every run, so that a new LAKEGATE_URL or LAKEGATE_TOKEN
  takes effect. An empty LAKEGATE_TOKEN is fine for a gateway without tokens (``lakegate demo``).
* Queries are created when missing and otherwise left as they are (a user may have edited them); ``--force``
  puts the example text back.
* The admin must exist: compose's ``redash-admin`` service creates it with Redash's own
  ``manage.py users create_root``. Redash's /setup page is not used: its handler subscribes the new admin to
  Redash's newsletter and security notifications whatever the form says.

Uses redash-toolbelt (``pip install 'lakegate[redash]'``) for Redash's API; the API key comes from logging in
as the admin. Plain functions first, so that the reading of examples and the building of queries and layouts
can be tested without a Redash.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger("lakegate.provision")
HERE = Path(__file__).resolve().parent
DASHBOARD = "lakegate"
RUNNER_SOURCE, JSON_SOURCE = "lakegate", "lakegate (JSON)"
WIDGET_WIDTH, WIDGET_HEIGHT = 3, 8  # Redash's grid is 6 columns wide
JOB_DONE, JOB_FAILED = 3, 4  # Redash's job statuses
#: A time-travel example on a lake younger than its "AS OF" interval: not a failure, it works later.
NOT_YET = "has no snapshot at or before"


@dataclass
class Config:
    redash_url: str
    admin_email: str
    admin_password: str
    admin_name: str
    org_name: str
    gateway_url: str
    token: str
    examples: Path
    force: bool = False
    job_timeout: float = 120.0

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, force: bool = False) -> Config:
        get = (os.environ if env is None else env).get
        return cls(
            redash_url=get("REDASH_URL", "http://localhost:5000").rstrip("/"),
            admin_email=get("REDASH_ADMIN_EMAIL", "admin@example.com"),
            admin_password=get("REDASH_ADMIN_PASSWORD", "lakegate-admin"),
            admin_name=get("REDASH_ADMIN_NAME", "lakegate admin"),
            org_name=get("REDASH_ORG_NAME", "lakegate"),
            gateway_url=get("LAKEGATE_URL", "http://gateway:8080").rstrip("/"),
            token=get("LAKEGATE_TOKEN", ""),
            examples=Path(get("EXAMPLES", str(HERE.parent / "sql" / "examples"))),
            force=force,
        )


@dataclass
class Example:
    title: str
    description: str
    sql: str


# -------------------------------------------------------------------------------------------- plain parts


def read_examples(folder: Path) -> list[Example]:
    """Each ``NN_name.sql``: ``-- title:`` and ``-- description:`` header lines, then the query."""
    examples = []
    for path in sorted(folder.glob("*.sql")):
        text = path.read_text(encoding="utf-8")
        title = re.search(r"^-- title: (.+)$", text, re.MULTILINE)
        description = re.search(r"^-- description: (.+)$", text, re.MULTILINE)
        sql = "\n".join(line for line in text.splitlines() if not re.match(r"-- (title|description): ", line))
        examples.append(
            Example(
                title.group(1).strip() if title else path.stem,
                description.group(1).strip() if description else "",
                sql.strip().rstrip(";").strip(),
            )
        )
    return examples


def json_source_query(sql: str) -> str:
    """The YAML a Redash JSON data source query needs to ask the gateway (relative to the source's base URL)."""
    body = "\n".join("    " + line if line.strip() else "" for line in sql.splitlines())
    return f"url: /v1/query\nmethod: post\njson:\n  sql: |\n{body}\npath: rows\n"


def widget_position(index: int) -> dict[str, int]:
    """Two tables side by side per row."""
    return {
        "col": (index % 2) * WIDGET_WIDTH,
        "row": (index // 2) * WIDGET_HEIGHT,
        "sizeX": WIDGET_WIDTH,
        "sizeY": WIDGET_HEIGHT,
    }


# ------------------------------------------------------------------------------------------ Redash's API


def wait_for_redash(url: str, timeout: float = 300.0) -> None:
    import requests

    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(f"{url}/ping", timeout=5).status_code == 200:
                return
        except requests.RequestException:
            pass
        if time.monotonic() > deadline:
            raise SystemExit(f"provision: Redash at {url} did not answer /ping within {timeout:.0f} s")
        time.sleep(2)


def admin_api_key(cfg: Config) -> str:
    """Log in as the admin and read the API key."""
    import requests

    session = requests.Session()
    setup = session.get(f"{cfg.redash_url}/setup", allow_redirects=False, timeout=30)
    if setup.status_code == 200:  # a fresh Redash shows its setup form: there is no admin yet
        raise SystemExit(
            f"provision: Redash at {cfg.redash_url} has no admin yet. Create it with Redash's own command "
            "(compose: the redash-admin service; elsewhere: manage.py users create_root EMAIL NAME --password "
            "PASSWORD --org default). The /setup page is not used: it subscribes the admin to Redash's newsletter."
        )
    session.get(f"{cfg.redash_url}/login", timeout=30)
    form = {
        "csrf_token": session.cookies.get("csrf_token", ""),
        "email": cfg.admin_email,
        "password": cfg.admin_password,
    }
    response = session.post(f"{cfg.redash_url}/login", data=form, allow_redirects=False, timeout=30)
    me = session.get(f"{cfg.redash_url}/api/session", timeout=30)
    if response.status_code not in (200, 302) or me.status_code != 200:
        raise SystemExit(
            f"provision: could not log in to Redash as {cfg.admin_email} (HTTP {response.status_code}); "
            "check REDASH_ADMIN_EMAIL and REDASH_ADMIN_PASSWORD"
        )
    user = session.get(f"{cfg.redash_url}/api/users/{me.json()['user']['id']}", timeout=30).json()
    return str(user["api_key"])


def data_source_options(cfg: Config) -> dict[str, tuple[str, dict[str, Any]]]:
    """Name -> (type, options) of the two data sources; no token, no credentials (a gateway without tokens)."""
    runner: dict[str, Any] = {"url": cfg.gateway_url}
    json_options: dict[str, Any] = {"base_url": cfg.gateway_url}
    if cfg.token:
        runner["token"] = cfg.token
        json_options |= {"username": "lakegate", "password": cfg.token}
    return {RUNNER_SOURCE: ("lakegate", runner), JSON_SOURCE: ("json", json_options)}


def ensure_data_sources(redash: Any, cfg: Config) -> tuple[int, int]:
    """Create the data sources when missing, update them otherwise (a changed URL or token takes effect)."""
    types = {t["type"] for t in redash._get("api/data_sources/types").json()}
    if "lakegate" not in types:
        raise SystemExit(
            "provision: Redash has no 'lakegate' data source type: the query runner is not loaded. Check that "
            "REDASH_ADDITIONAL_QUERY_RUNNERS=lakegate_query_runner and that the file is mounted on PYTHONPATH"
        )
    existing = {source["name"]: source["id"] for source in redash.get_data_sources()}
    for name, (kind, options) in data_source_options(cfg).items():
        if name in existing:
            body = {"name": name, "type": kind, "options": options}
            redash._post(f"api/data_sources/{existing[name]}", json=body)
            log.info("updated the data source %r (%s)", name, cfg.gateway_url)
        else:
            existing[name] = redash.create_data_source(name, kind, options).json()["id"]
            log.info("created the data source %r (%s)", name, kind)
    return existing[RUNNER_SOURCE], existing[JSON_SOURCE]


def check_data_sources(redash: Any, sources: dict[str, int]) -> list[str]:
    """Redash's connection test of each data source; the failures, said."""
    failures = []
    for name, source_id in sources.items():
        answer = redash._post(f"api/data_sources/{source_id}/test").json()
        if not answer.get("ok"):
            failures.append(
                f"the data source {name!r} failed Redash's connection test: {answer.get('message')}"
            )
    return failures


def ensure_query(
    redash: Any, known: dict[str, dict[str, Any]], name: str, text: str, description: str, source: int,
    force: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """The query named ``name``: created when missing; an existing one is left as it is (a user may have
    edited it) unless ``force``."""
    payload = {"name": name, "query": text, "description": description, "data_source_id": source}
    if name in known and not force:
        return redash.get_query(known[name]["id"])  # type: ignore[no-any-return]
    if name in known:
        query = redash.update_query(known[name]["id"], payload).json()
        log.info("reset the query %r to the example (--force)", name)
    else:
        query = redash.create_query(payload).json()
        log.info("created the query %r", name)
    redash.update_query(query["id"], {"is_draft": False})
    return redash.get_query(query["id"])  # type: ignore[no-any-return]


def run_query(redash: Any, query: dict[str, Any], timeout: float) -> str | None:
    """Run a saved query once through Redash (as its refresh button does) and wait for the job: None when it
    succeeded, else Redash's error text."""
    answer = redash._post(f"api/queries/{query['id']}/results", json={"max_age": 0, "parameters": {}}).json()
    job = answer.get("job")
    deadline = time.monotonic() + timeout
    while job is not None and job.get("status") not in (JOB_DONE, JOB_FAILED):
        if time.monotonic() > deadline:
            return f"no result within {timeout:.0f} s (Redash job {job.get('id')})"
        time.sleep(0.5)
        job = redash._get(f"api/jobs/{job['id']}").json()["job"]
    if job is not None and job.get("status") == JOB_FAILED:
        return str(job.get("error") or "failed without a message")
    return None


def run_queries(redash: Any, queries: list[dict[str, Any]], timeout: float) -> list[str]:
    """Run each query once; the failures, said (a time-travel query on a lake too young is only a warning)."""
    failures = []
    for query in queries:
        error = run_query(redash, query, timeout)
        if error is None:
            log.info("ran the query %r", query["name"])
        elif NOT_YET in error:
            log.warning("the query %r will work once the lake is old enough: %s", query["name"], error)
        else:
            failures.append(f"the query {query['name']!r} failed: {error}")
    return failures


def ensure_dashboard(redash: Any, queries: list[dict[str, Any]]) -> None:
    dashboards = {d["name"]: d for d in redash.paginate(redash.dashboards)}
    if DASHBOARD in dashboards:
        log.info("the dashboard %r exists; left as it is", DASHBOARD)
        return
    dashboard = redash.create_dashboard(DASHBOARD)
    for index, query in enumerate(queries):
        visualization = query["visualizations"][0]["id"]
        redash.create_widget(dashboard["id"], visualization, "", {"position": widget_position(index)})
    redash.update_dashboard(dashboard["id"], {"is_draft": False})
    log.info("created the dashboard %r with %d widgets", DASHBOARD, len(queries))


def provision(cfg: Config, redash: Any = None) -> int:
    """Provision and check; 0 when every check passed. ``redash``: a redash-toolbelt client (default: one
    logged in as the admin at ``cfg.redash_url``)."""
    if redash is None:
        from redash_toolbelt import Redash

        wait_for_redash(cfg.redash_url)
        redash = Redash(cfg.redash_url, admin_api_key(cfg))
    runner_source, json_source = ensure_data_sources(redash, cfg)
    known = {q["name"]: q for q in redash.paginate(redash.queries)}
    examples = read_examples(cfg.examples)
    queries = [
        ensure_query(redash, known, e.title, e.sql, e.description, runner_source, cfg.force) for e in examples
    ]
    first = examples[0]
    queries.append(
        ensure_query(
            redash,
            known,
            f"{first.title} (JSON data source)",
            json_source_query(first.sql),
            "The same query through Redash's built-in JSON data source.",
            json_source,
            cfg.force,
        )
    )
    ensure_dashboard(redash, queries)
    failures = check_data_sources(redash, {RUNNER_SOURCE: runner_source, JSON_SOURCE: json_source})
    failures += run_queries(redash, queries, cfg.job_timeout)
    for failure in failures:
        log.error("%s", failure)
    if failures:
        log.error("provision: %d check(s) failed; Redash is provisioned but not working", len(failures))
        return 1
    log.info("Redash is ready: %s/dashboards", cfg.redash_url)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if "-h" in args or "--help" in args:
        print(__doc__)
        return 0
    unknown = [a for a in args if a != "--force"]
    if unknown:
        print(f"provision: unknown argument {unknown[0]!r}; see --help", file=sys.stderr)
        return 2
    return provision(Config.from_env(force="--force" in args))


if __name__ == "__main__":
    sys.exit(main())

"""Provision Redash for lakegate, idempotently: the admin user (first run), the data sources "lakegate" (the
lakegate query runner) and "lakegate (JSON)" (Redash's built-in JSON data source with Basic auth), one query per
file of sql/examples (plus one through the JSON source), and a dashboard "lakegate" with a table of each.

    python compose/provision.py            # settings from the environment, see Config.from_env

Uses redash-toolbelt (``pip install 'lakegate[redash]'``) for Redash's API; the API key comes from logging in
as the admin (the first run creates the admin through Redash's /setup page). Plain functions first, so that the
reading of examples and the building of queries and layouts can be tested without a Redash.
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

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None) -> Config:
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
    """Log in as the admin (creating the organisation and the admin on a fresh Redash) and read the API key."""
    import requests

    session = requests.Session()
    setup = session.get(f"{cfg.redash_url}/setup", allow_redirects=False, timeout=30)
    form = {"csrf_token": session.cookies.get("csrf_token", "")}
    if setup.status_code == 200:  # a fresh Redash shows its setup form
        form |= {
            "name": cfg.admin_name,
            "email": cfg.admin_email,
            "password": cfg.admin_password,
            "org_name": cfg.org_name,
        }
        response = session.post(f"{cfg.redash_url}/setup", data=form, allow_redirects=False, timeout=30)
        log.info("created the Redash admin %s", cfg.admin_email)
    else:
        session.get(f"{cfg.redash_url}/login", timeout=30)
        form = {
            "csrf_token": session.cookies.get("csrf_token", ""),
            "email": cfg.admin_email,
            "password": cfg.admin_password,
        }
        response = session.post(f"{cfg.redash_url}/login", data=form, allow_redirects=False, timeout=30)
    if response.status_code not in (200, 302):
        raise SystemExit(
            f"provision: could not log in to Redash as {cfg.admin_email} (HTTP {response.status_code})"
        )
    me = session.get(f"{cfg.redash_url}/api/session", timeout=30)
    if me.status_code != 200:
        raise SystemExit(
            f"provision: Redash did not accept the login of {cfg.admin_email}; check REDASH_ADMIN_PASSWORD"
        )
    user = session.get(f"{cfg.redash_url}/api/users/{me.json()['user']['id']}", timeout=30).json()
    return str(user["api_key"])


def ensure_data_sources(redash: Any, cfg: Config) -> tuple[int, int]:
    types = {t["type"] for t in redash._get("api/data_sources/types").json()}
    if "lakegate" not in types:
        raise SystemExit(
            "provision: Redash has no 'lakegate' data source type: the query runner is not loaded. Check that "
            "REDASH_ADDITIONAL_QUERY_RUNNERS=lakegate_query_runner and that the file is mounted on PYTHONPATH"
        )
    existing = {source["name"]: source["id"] for source in redash.get_data_sources()}
    wanted = {
        RUNNER_SOURCE: ("lakegate", {"url": cfg.gateway_url, "token": cfg.token}),
        JSON_SOURCE: ("json", {"base_url": cfg.gateway_url, "username": "lakegate", "password": cfg.token}),
    }
    for name, (kind, options) in wanted.items():
        if name not in existing:
            existing[name] = redash.create_data_source(name, kind, options).json()["id"]
            log.info("created the data source %r (%s)", name, kind)
    return existing[RUNNER_SOURCE], existing[JSON_SOURCE]


def ensure_query(
    redash: Any, known: dict[str, dict[str, Any]], name: str, text: str, description: str, source: int
) -> dict[str, Any]:
    payload = {"name": name, "query": text, "description": description, "data_source_id": source}
    if name in known:
        query = redash.update_query(known[name]["id"], payload).json()
    else:
        query = redash.create_query(payload).json()
        log.info("created the query %r", name)
    redash.update_query(query["id"], {"is_draft": False})
    try:  # run it once, so that the dashboard has results (the time-travel example needs a lake 5 minutes old)
        redash._post(f"api/queries/{query['id']}/results", json={"max_age": 0})
    except Exception as exc:  # noqa: BLE001 - a first run is a convenience
        log.warning("could not run %r yet: %s", name, exc)
    return redash.get_query(query["id"])


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


def provision(cfg: Config) -> None:
    from redash_toolbelt import Redash

    if not cfg.token:
        raise SystemExit("provision: set LAKEGATE_TOKEN (a token of the gateway's [gateway] tokens)")
    wait_for_redash(cfg.redash_url)
    redash = Redash(cfg.redash_url, admin_api_key(cfg))
    runner_source, json_source = ensure_data_sources(redash, cfg)
    known = {q["name"]: q for q in redash.paginate(redash.queries)}
    examples = read_examples(cfg.examples)
    queries = [ensure_query(redash, known, e.title, e.sql, e.description, runner_source) for e in examples]
    first = examples[0]
    queries.append(
        ensure_query(
            redash,
            known,
            f"{first.title} (JSON data source)",
            json_source_query(first.sql),
            "The same query through Redash's built-in JSON data source.",
            json_source,
        )
    )
    ensure_dashboard(redash, queries)
    log.info("Redash is ready: %s/dashboards", cfg.redash_url)


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s")
    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        print(__doc__)
        return 0
    provision(Config.from_env())
    return 0


if __name__ == "__main__":
    sys.exit(main())

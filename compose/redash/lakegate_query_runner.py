"""A Redash query runner for lakegate: SQL with syntax highlighting, typed result columns, the schema browser from
the gateway's ``GET /v1/schema``, the gateway's own error messages, and a connection test.

Load it into Redash (server and workers) by putting this file on the Python path and setting
``REDASH_ADDITIONAL_QUERY_RUNNERS=lakegate_query_runner`` (compose/docker-compose.yml mounts it at
/opt/lakegate and sets PYTHONPATH). Then add a data source of type "lakegate" with the gateway URL and token.

It imports only what a Redash image has (Redash itself and requests). Everything but the Redash class is plain
Python (the HTTP calls, the shaping of results, schemas and errors), so it can be tested without Redash: the
class at the bottom is defined only when ``redash`` is importable. Written for Redash 25 (``run_query`` returns
a dict); Redash 10 and older, which expect JSON text, are detected by version.
"""

from __future__ import annotations

import decimal
import json
import logging
import re
from typing import Any

import requests

logger = logging.getLogger(__name__)

REDASH_TYPES = ("integer", "float", "boolean", "string", "datetime", "date")
DEFAULT_URL = "http://gateway:8080"
DEFAULT_TIMEOUT = 30.0
#: What a result cut at the row cap does: "warn" = a line in Redash's "Log Information" (the query page) and a
#: last row that says so (tables and dashboards); "log" = the log line only; "error" = the query fails.
ON_TRUNCATE = ("warn", "log", "error")
NOTE_COLUMN = "lakegate"  # the marker row's column when the result has no text column to carry the note
HTTP_GRACE = 30.0  # the HTTP read may wait this much longer than the query's own time limit


class GatewayError(Exception):
    """The gateway could not be reached or answered with an error; the message is what Redash shows."""


# ------------------------------------------------------------------------------------- pure shaping


def columns(gateway_columns: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The gateway's JSON columns as Redash columns (it already uses Redash's type names)."""
    out = []
    for column in gateway_columns:
        kind = column.get("type")
        name = str(column["name"])
        out.append(
            {
                "name": name,
                "friendly_name": str(column.get("friendly_name") or name),
                "type": kind if kind in REDASH_TYPES else "string",
            }
        )
    return out


def result_data(body: dict[str, Any], on_truncate: str = "warn") -> dict[str, Any]:
    """A ``POST /v1/query`` JSON answer as Redash's query result data.

    Arrays become PostgreSQL array literals (``{a,"b c"}``), as psql shows them: Redash would write a Python
    list into its CSV download. A result cut at the gateway's row cap is said so where Redash shows it (see
    :data:`ON_TRUNCATE`); Redash's own ``truncated`` flag (``QueryResult.getTruncated()``) is set too."""
    if "error" in body:  # the query failed after rows had started streaming
        raise GatewayError(error_text(body["error"]))
    cols = columns(body.get("columns", []))
    rows = body.get("rows", [])
    for column in body.get("columns", []):  # ISO 8601 (or [months, days, nanoseconds]) -> PostgreSQL's text
        if column.get("pg_type") == "interval":
            for row in rows:
                value = row.get(column["name"])
                if isinstance(value, str):
                    value = iso_interval(value)
                if isinstance(value, list | tuple) and len(value) == 3:
                    row[column["name"]] = interval_text(*value)
    arrays = [c["name"] for c in cols if any(isinstance(row.get(c["name"]), list) for row in rows)]
    for row in rows:
        for name in arrays:
            if isinstance(row.get(name), list):
                row[name] = array_literal(row[name])
    for column in cols:
        if column["name"] in arrays:
            column["type"] = "string"
    data: dict[str, Any] = {"columns": cols, "rows": rows}
    data["metadata"] = {key: body[key] for key in ("truncated", "route", "elapsed_ms") if key in body}
    if body.get("truncated"):
        _mark_truncated(data, on_truncate)
    return data


def truncation_note(rows: int) -> str:
    return (
        f"lakegate: the result was cut at the gateway's row cap: only the first {rows} rows are shown. "
        "Add a LIMIT or an aggregate, or raise the data source's row cap (up to the gateway's max_rows)."
    )


def _mark_truncated(data: dict[str, Any], on_truncate: str) -> None:
    rows = data["rows"]
    note = truncation_note(len(rows))
    if on_truncate == "error":
        raise GatewayError(
            f"lakegate: the result has more than {len(rows)} rows, the gateway's row cap (this data source "
            "fails such queries). Add a LIMIT or an aggregate, or raise the data source's row cap."
        )
    data["truncated"] = True
    data["log"] = [note]
    if on_truncate != "warn":
        return
    text_columns = [c["name"] for c in data["columns"] if c["type"] == "string"]
    if not text_columns:
        data["columns"].append({"name": NOTE_COLUMN, "friendly_name": NOTE_COLUMN, "type": "string"})
        text_columns = [NOTE_COLUMN]
    rows.append({c["name"]: None for c in data["columns"]} | {text_columns[0]: "\u26a0 " + note})


_ISO_INTERVAL = re.compile(
    r"P(?:(-?\d+)Y)?(?:(-?\d+)M)?(?:(-?\d+)W)?(?:(-?\d+)D)?(?:T(?:(-?\d+)H)?(?:(-?\d+)M)?(?:(-?\d+(?:\.\d+)?)S)?)?"
)


def iso_interval(text: str) -> tuple[int, int, int] | str:
    """The gateway's JSON interval (PostgreSQL's ISO 8601 form, ``P1DT2H``) -> (months, days, nanoseconds);
    other text as it is."""
    match = _ISO_INTERVAL.fullmatch(text)
    if not match or text in ("P", "PT"):
        return text
    y, mo, w, d, h, mi, s = (g or "0" for g in match.groups())
    seconds = decimal.Decimal(s) + int(mi) * 60 + int(h) * 3600
    return int(y) * 12 + int(mo), int(w) * 7 + int(d), int(seconds * 1_000_000_000)


def interval_text(months: int, days: int, nanoseconds: int) -> str:
    """An interval as PostgreSQL prints it (``1 year 2 mons 3 days 04:05:06.5``, ``-1 days +02:00:00``); the
    same rule as ``lakegate sql`` (lakegate.gateway.cli_format), repeated here: the runner imports no lakegate."""
    parts: list[str] = []
    negative_seen = False
    years, mons = int(months / 12), months - int(months / 12) * 12
    micros = int(nanoseconds / 1000)
    fields = [(years, "year"), (mons, "mon"), (days, "day")]
    for value, unit in fields + ([(micros, "")] if micros or not any(v for v, _ in fields) else []):
        if not value and unit:
            continue
        sign = "+" if negative_seen and value > 0 else ""
        negative_seen = negative_seen or value < 0
        if unit:
            parts.append(f"{sign}{value} {unit}{'' if value == 1 else 's'}")
            continue
        hours, rest = divmod(abs(value), 3_600_000_000)
        minutes, rest = divmod(rest, 60_000_000)
        seconds, fraction = divmod(rest, 1_000_000)
        clock = f"{hours:02d}:{minutes:02d}:{seconds:02d}" + (
            f".{fraction:06d}".rstrip("0") if fraction else ""
        )
        parts.append(sign + ("-" if value < 0 else "") + clock)
    return " ".join(parts)


def array_literal(values: list[Any]) -> str:
    """A PostgreSQL array literal of JSON values (nested lists are sub-arrays)."""
    return "{" + ",".join(_array_item(v) for v in values) + "}"


def _array_item(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, list):
        return array_literal(value)
    if isinstance(value, bool):
        text = "t" if value else "f"
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = str(value)
    if text == "" or text.upper() == "NULL" or any(c in text for c in ' ,{}"\\\t\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


def error_text(error: dict[str, Any]) -> str:
    """``code: message (line L, column C)`` from the gateway's error member; the position once (left out when
    the message already gives it)."""
    text = f"{error.get('code', 'error')}: {error.get('message', '')}".strip()
    line, column = error.get("line"), error.get("column")
    if line and f"line {line}" not in str(error.get("message", "")):
        text += f" (line {line}, column {column})" if column else f" (line {line})"
    return text


def error_message(status: int, body: str) -> str:
    """What Redash shows for a non-200 answer."""
    try:
        error = json.loads(body)["error"]
        return error_text(error)
    except (ValueError, KeyError, TypeError):
        return f"the gateway answered HTTP {status}: {body.strip()[:500] or '(empty)'}"


def schema_tables(listing: dict[str, Any]) -> list[dict[str, Any]]:
    """``GET /v1/schema`` as Redash's schema browser wants it: fully qualified table names (what a query must
    write) with typed columns."""
    tables = []
    for source in listing.get("sources", []):
        if source.get("error"):
            logger.warning("lakegate source %s: %s", source.get("name"), source["error"])
        for table in source.get("tables", []):
            name = f"{source['name']}.{table['schema']}.{table['name']}"
            tables.append(
                {
                    "name": name,
                    "columns": [
                        {"name": c["name"], "type": c.get("type", "")} for c in table.get("columns", [])
                    ],
                }
            )
    return sorted(tables, key=lambda t: t["name"])


def annotated(query: str, metadata: dict[str, Any]) -> str:
    """``query`` with Redash's metadata as a comment on a line of its own after it (a ``*/`` or ``/*`` in a value
    can neither end the comment early nor open a nested one)."""
    annotation = ", ".join(f"{k}: {v}" for k, v in metadata.items()).replace("*/", "* /").replace("/*", "/ *")
    return f"{query.rstrip()}\n/* {annotation} */"


# ------------------------------------------------------------------------------------------------ HTTP


class Gateway:
    """The gateway's HTTP API through requests; every failure becomes a :class:`GatewayError`."""

    def __init__(
        self,
        url: str,
        token: str | None = None,
        timeout: float | None = None,
        max_rows: Any = None,
        on_truncate: str | None = None,
    ):
        self.url = (url or DEFAULT_URL).rstrip("/")
        self.token = token or None
        self.timeout = float(timeout) if timeout else DEFAULT_TIMEOUT
        self.max_rows = int(max_rows) if max_rows else None
        self.on_truncate = (on_truncate or "warn").strip().lower()
        if self.on_truncate not in ON_TRUNCATE:
            raise GatewayError(
                f"the data source's 'When the row cap cuts a result' is {on_truncate!r}: "
                f"write one of {', '.join(ON_TRUNCATE)}"
            )

    def _request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """One request on its own session, closed afterwards in every case: when Redash interrupts a running
        query (cancel, job timeout) the connection drops, and the gateway cancels the engine query."""
        session = requests.Session()
        if self.token:
            session.headers["Authorization"] = f"Bearer {self.token}"
        try:
            response = session.request(
                method, self.url + path, timeout=(10, self.timeout + HTTP_GRACE), **kwargs
            )
        except requests.RequestException as exc:
            raise GatewayError(f"cannot reach the lakegate gateway at {self.url}: {exc}") from exc
        finally:
            session.close()
        if response.status_code != 200:
            raise GatewayError(error_message(response.status_code, response.text))
        return response

    def query(self, sql: str) -> dict[str, Any]:
        body: dict[str, Any] = {"sql": sql, "format": "json", "timeout_ms": self.timeout * 1000}
        if self.max_rows:
            body["max_rows"] = self.max_rows
        response = self._request("POST", "/v1/query", json=body)
        try:
            return result_data(response.json(), self.on_truncate)
        except ValueError as exc:
            raise GatewayError(f"the gateway's answer was not JSON: {exc}") from exc

    def schema(self) -> list[dict[str, Any]]:
        return schema_tables(self._request("GET", "/v1/schema").json())

    def check(self) -> None:
        """Reachable, the token accepted, and a query answered."""
        self.query("SELECT 1 AS ok")


def configuration_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "url": {"type": "string", "title": "Gateway URL", "default": DEFAULT_URL},
            "token": {"type": "string", "title": "Token"},
            "timeout": {"type": "number", "title": "Query time limit (seconds)", "default": DEFAULT_TIMEOUT},
            "max_rows": {"type": "number", "title": "Row cap (at most the gateway's max_rows)"},
            "on_truncate": {
                "type": "string",
                "title": "When the row cap cuts a result: warn (a last row and a log line), log, or error",
                "default": "warn",
            },
        },
        "order": ["url", "token", "timeout", "max_rows", "on_truncate"],
        "required": ["url"],
        "secret": ["token"],
    }


def gateway_of(configuration: dict[str, Any]) -> Gateway:
    return Gateway(
        configuration.get("url", DEFAULT_URL),
        configuration.get("token"),
        configuration.get("timeout"),
        configuration.get("max_rows"),
        configuration.get("on_truncate"),
    )


# ------------------------------------------------------------------------------------------ Redash glue

try:
    import redash
    from redash.query_runner import BaseSQLQueryRunner, register
except ImportError:  # not inside Redash: the pure parts above stay usable
    BaseSQLQueryRunner = None

if BaseSQLQueryRunner is not None:
    LEGACY_JSON_TEXT = int(str(getattr(redash, "__version__", "25")).split(".")[0] or 25) <= 10

    class Lakegate(BaseSQLQueryRunner):
        noop_query = "SELECT 1"
        should_annotate_query = True

        def annotate_query(self, query: str, metadata: dict[str, Any]) -> str:
            """Redash's comment (who ran the query, which job) after the query rather than before it: the
            gateway's log keeps it, and every line and column in an error is the user's own."""
            return annotated(query, metadata)

        def __init__(self, configuration: dict[str, Any]) -> None:
            super().__init__(configuration)
            self.syntax = "sql"

        @classmethod
        def name(cls) -> str:
            return "lakegate"

        @classmethod
        def type(cls) -> str:
            return "lakegate"

        @classmethod
        def enabled(cls) -> bool:
            return True

        @classmethod
        def configuration_schema(cls) -> dict[str, Any]:
            return configuration_schema()

        def test_connection(self) -> None:
            try:
                gateway_of(self.configuration).check()
            except GatewayError as exc:
                raise Exception(str(exc)) from exc

        def run_query(self, query: str, user: Any) -> tuple[Any, str | None]:
            try:
                data = gateway_of(self.configuration).query(query)
            except GatewayError as exc:
                return None, str(exc)
            return (json.dumps(data) if LEGACY_JSON_TEXT else data), None

        def get_schema(self, get_stats: bool = False) -> list[dict[str, Any]]:
            try:
                return gateway_of(self.configuration).schema()
            except GatewayError as exc:
                raise Exception(f"Error getting the lakegate schema: {exc}") from exc

    register(Lakegate)

"""What Redash 25 does around a query runner, restated from its code for the runner's tests (not Redash's code):

* :func:`execute` — ``redash/tasks/queries/execution.py`` (``QueryExecutor.run``): the query is annotated with
  the job's metadata (``/* Username: …, query_id: …, Queue: …, Job ID: …, Query Hash: …, Scheduled: … */``),
  ``run_query`` returns ``(data, error)``; an exception becomes the error text; an error *with no data* fails
  the job (the user sees the error text), anything else is stored as the result, error or not; the stored
  result is JSON (``QueryResult.data``).
* :func:`query_page` — what the query page shows of a stored result: ``client/app/lib/getQueryResultData.js``
  (``rows``, ``log`` from ``data.log``, ``metadata`` from ``data.metadata``), the "N rows" of
  ``QueryExecutionMetadata`` (it reads nothing else of the metadata but ``data_scanned``), the "Log
  Information:" lines that ``QuerySource.jsx`` renders above the results, and ``getTruncated()`` of
  ``services/query-result.js`` (``data.truncated``, which no component shows).
* :func:`csv_download` — ``redash/serializers/query_result.py`` (``serialize_query_result_to_csv``): a
  ``csv.DictWriter`` over the stored rows, booleans as ``true``/``false``; any other value as Python's ``str``
  (a list becomes ``['a', 'b']``).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import uuid
from typing import Any


class QueryExecutionError(Exception):
    """The job failed; its message is what the user sees."""


def execute(
    runner: Any, query: str, username: str = "admin@example.com", query_id: int | str = "adhoc"
) -> Any:
    metadata: dict[str, Any] = {"Username": username, "query_id": query_id, "Queue": "queries"}
    metadata |= {
        "Job ID": uuid.uuid4().hex,
        "Query Hash": hashlib.md5(query.encode()).hexdigest(),  # noqa: S324 - Redash's query hash
        "Scheduled": False,
    }
    annotated = runner.annotate_query(query, metadata)
    try:
        data, error = runner.run_query(annotated, None)
    except Exception as exc:  # noqa: BLE001 - Redash turns any exception into the job's error
        data, error = None, str(exc)
    if error is not None and data is None:
        raise QueryExecutionError(error)
    return json.loads(json.dumps(data if isinstance(data, dict) else json.loads(data)))


def query_page(data: dict[str, Any]) -> dict[str, Any]:
    """The parts of the query page that show a result: the row count, the log lines, Redash's flag."""
    rows = data.get("rows") or []
    log = data.get("log") or []
    return {
        "rows": f"{len(rows)} {'row' if len(rows) == 1 else 'rows'}",
        "log": ["Log Information:", *log] if log else [],
        "truncated": data.get("truncated"),
        "data_scanned": (data.get("metadata") or {}).get("data_scanned"),
    }


def csv_download(data: dict[str, Any]) -> str:
    out = io.StringIO()
    names = [c["name"] for c in data["columns"]]
    booleans = {c["name"] for c in data["columns"] if c["type"] == "boolean"}
    writer = csv.DictWriter(out, extrasaction="ignore", fieldnames=names)
    writer.writeheader()
    for row in data["rows"]:
        writer.writerow(
            {k: ({True: "true", False: "false"}.get(v, v) if k in booleans else v) for k, v in row.items()}
        )
    return out.getvalue()

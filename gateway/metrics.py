"""Prometheus text exposition of the gateway's counters and the lake tables' freshness (``GET /metrics``).

Hand-written (a few counters and one histogram) rather than a client library: the text format is simple and
the gateway needs no registry, push gateway or multiprocess mode.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from lakegate.connectors.changes import parse_lsn

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def _labels(**labels: Any) -> str:
    inner = ",".join(
        f'{k}="{str(v).replace(chr(92), chr(92) * 2).replace(chr(34), chr(92) + chr(34))}"'
        for k, v in labels.items()
    )
    return "{" + inner + "}" if inner else ""


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.queries: dict[tuple[str, str], int] = defaultdict(int)
        self.rows: dict[str, int] = defaultdict(int)
        self.buckets: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS) + 1))
        self.sums: dict[str, float] = defaultdict(float)
        self.in_flight = 0
        self.waiting = 0
        self.rejected = 0

    def observe(self, route: str, code: str, seconds: float, rows: int = 0) -> None:
        with self._lock:
            self.queries[(route, code)] += 1
            self.rows[route] += rows
            index = next((i for i, bound in enumerate(BUCKETS) if seconds <= bound), len(BUCKETS))
            self.buckets[route][index] += 1
            self.sums[route] += seconds

    def render(self, status: dict[str, Any] | None = None) -> str:
        lines = [
            "# HELP lakegate_queries_total Queries answered, by route and outcome code.",
            "# TYPE lakegate_queries_total counter",
        ]
        with self._lock:
            for (route, code), count in sorted(self.queries.items()):
                lines.append(f"lakegate_queries_total{_labels(route=route, code=code)} {count}")
            lines += [
                "# HELP lakegate_result_rows_total Rows returned, by route.",
                "# TYPE lakegate_result_rows_total counter",
            ]
            lines += [
                f"lakegate_result_rows_total{_labels(route=r)} {n}" for r, n in sorted(self.rows.items())
            ]
            lines += [
                "# HELP lakegate_query_duration_seconds Query time from start to last row, by route.",
                "# TYPE lakegate_query_duration_seconds histogram",
            ]
            for route, counts in sorted(self.buckets.items()):
                total = 0
                for bound, count in zip((*BUCKETS, "+Inf"), counts, strict=True):
                    total += count
                    lines.append(
                        f"lakegate_query_duration_seconds_bucket{_labels(route=route, le=bound)} {total}"
                    )
                lines.append(
                    f"lakegate_query_duration_seconds_sum{_labels(route=route)} {self.sums[route]:.6f}"
                )
                lines.append(f"lakegate_query_duration_seconds_count{_labels(route=route)} {total}")
            lines += [
                "# HELP lakegate_queries_in_flight Queries running now.",
                "# TYPE lakegate_queries_in_flight gauge",
                f"lakegate_queries_in_flight {self.in_flight}",
                "# HELP lakegate_queries_waiting Queries waiting for a worker.",
                "# TYPE lakegate_queries_waiting gauge",
                f"lakegate_queries_waiting {self.waiting}",
                "# HELP lakegate_queries_rejected_total Queries refused with 503 because every worker was busy.",
                "# TYPE lakegate_queries_rejected_total counter",
                f"lakegate_queries_rejected_total {self.rejected}",
            ]
        if status is not None:
            lines += table_gauges(status)
            if status.get("cache"):
                lines += cache_lines(status["cache"])
        return "\n".join(lines) + "\n"


_CACHE = (
    ("lakegate_cache_entries", "gauge", "Lake tables held in the lake cache.", "entries"),
    ("lakegate_cache_bytes", "gauge", "DuckDB memory held by the lake cache.", "bytes"),
    (
        "lakegate_cache_budget_bytes",
        "gauge",
        "The lake cache's byte budget ([gateway] cache_bytes).",
        "budget_bytes",
    ),
    ("lakegate_cache_loading", "gauge", "Lake cache loads queued or running.", "loading"),
    ("lakegate_cache_hits_total", "counter", "Lake table reads served from the lake cache.", "hits"),
    (
        "lakegate_cache_delta_hits_total",
        "counter",
        "Lake table reads at another snapshot than the cached one, read through it (the files and deletes between).",
        "delta_hits",
    ),
    ("lakegate_cache_misses_total", "counter", "Lake table reads at a snapshot not (yet) cached.", "misses"),
    ("lakegate_cache_loads_total", "counter", "Lake cache loads completed.", "loads"),
    ("lakegate_cache_load_failures_total", "counter", "Lake cache loads that failed.", "load_failures"),
    (
        "lakegate_cache_skipped_total",
        "counter",
        "Loads not done: the budget was held by tables in use.",
        "skipped",
    ),
    ("lakegate_cache_evictions_total", "counter", "Entries evicted to keep the byte budget.", "evictions"),
    ("lakegate_cache_load_seconds_total", "counter", "Time spent loading the lake cache.", "load_seconds"),
)


def cache_lines(cache: dict[str, Any]) -> list[str]:
    """The lake cache's and the plan cache's figures (``Gateway.cache_figures``)."""
    lines: list[str] = []
    for name, kind, help_text, key in _CACHE:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {cache.get(key, 0)}"]
    plans = cache.get("plans") or {}
    for key, kind, help_text in (
        ("entries", "gauge", "Routed statements kept by the plan cache."),
        ("hits", "counter", "Statements whose parse, guard and routing came from the plan cache."),
        ("misses", "counter", "Statements parsed, guarded and routed anew."),
    ):
        name = f"lakegate_plan_cache_{key}" + ("_total" if kind == "counter" else "")
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}", f"{name} {plans.get(key, 0)}"]
    return lines


_GAUGES = (
    ("lakegate_table_committed_lsn", "Source LSN the table's change log holds.", "committed_lsn"),
    ("lakegate_table_source_lsn", "Current WAL position of the table's source.", "source_lsn"),
    ("lakegate_table_lag_bytes", "WAL bytes the table is behind its source.", "lag_bytes"),
    ("lakegate_table_lag_seconds", "Seconds the table is behind its source.", "lag_seconds"),
    ("lakegate_table_last_commit_timestamp_seconds", "Unix time of the table's last commit.", "last_commit"),
)


def table_gauges(status: dict[str, Any]) -> list[str]:
    import datetime

    lines: list[str] = []
    for name, help_text, key in _GAUGES:
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for table in status.get("tables", []):
            value = table.get(key)
            if value is None:
                continue
            if key.endswith("_lsn"):
                value = parse_lsn(value)
            elif key == "last_commit":
                value = datetime.datetime.fromisoformat(value).timestamp()
            lines.append(f"{name}{_labels(table=table['table'])} {value}")
    name = "lakegate_table_upkeep_failing_seconds"
    lines += [
        f"# HELP {name} Seconds since a background upkeep step (maintenance) of the table began failing.",
        f"# TYPE {name} gauge",
    ]
    for table in status.get("tables", []):
        for step, failure in (table.get("upkeep") or {}).items():
            since = failure.get("since") if isinstance(failure, dict) else None
            age = time.time() - datetime.datetime.fromisoformat(since).timestamp() if since else 0.0
            lines.append(f"{name}{_labels(table=table['table'], step=step)} {max(0.0, age):.0f}")
    for name, key, help_text in (
        ("lakegate_table_files", "files", "Data files, by part (state, changelog)."),
        ("lakegate_table_rows", "rows", "Rows stored, by part (state, changelog)."),
    ):
        lines += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge"]
        for table in status.get("tables", []):
            for part, value in (table.get(key) or {}).items():
                if value is not None:
                    lines.append(f"{name}{_labels(table=table['table'], part=part)} {value}")
    return lines

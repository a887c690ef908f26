"""Prometheus text exposition of the gateway's counters and the lake tables' freshness (``GET /metrics``).

Hand-written (a few counters and one histogram) rather than a client library: the text format is simple and
the gateway needs no registry, push gateway or multiprocess mode.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

from connectors.changes import parse_lsn

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
        return "\n".join(lines) + "\n"


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

"""What the document's "Performance Metrics" asks of the query pipeline, counted per orchestrator.

Query response time (P50, P95, P99), LLM processing time, resource cache hit rate and error
rate by type are the pipeline's; per-server latency (MCP connection and resource fetch times)
is the host's own ``get_metrics()``, which :meth:`Talk2TablesOrchestrator.metrics` puts
beside them. Durations are kept for the last :data:`WINDOW` queries only (a bound: a
long-running backend must not grow without end).
"""

from __future__ import annotations

import collections
import math
from typing import Any

__all__ = ["WINDOW", "QueryMetrics"]

WINDOW = 1000


def _percentiles(values: collections.deque[float]) -> dict[str, float | None]:
    """Nearest-rank P50, P95, P99 (None before the first value)."""
    ordered = sorted(values)
    if not ordered:
        return {"p50": None, "p95": None, "p99": None}

    def rank(p: int) -> float:
        return ordered[max(0, math.ceil(len(ordered) * p / 100) - 1)]

    return {"p50": rank(50), "p95": rank(95), "p99": rank(99)}


class QueryMetrics:
    """Counters and recent durations of the queries one orchestrator processed."""

    def __init__(self) -> None:
        self.queries = self.succeeded = self.failed = self.recovered = 0
        self.cache_hits = self.cache_misses = 0
        self.errors_by_type: collections.Counter[str] = collections.Counter()
        self.query_ms: collections.deque[float] = collections.deque(maxlen=WINDOW)
        self.llm_ms: collections.deque[float] = collections.deque(maxlen=WINDOW)

    def record(self, *, duration_ms: float, llm_ms: float, error_type: str | None, recovered: bool,
               cache_hits: int, cache_misses: int, sql_errors: list[str]) -> None:
        """One query: its time, its model's time, how it ended, and the SQL errors on the way."""
        self.queries += 1
        self.query_ms.append(duration_ms)
        self.llm_ms.append(llm_ms)
        self.cache_hits += cache_hits
        self.cache_misses += cache_misses
        self.errors_by_type.update(sql_errors)
        if error_type is None:
            self.succeeded += 1
            self.recovered += recovered
        else:
            self.failed += 1
            self.errors_by_type[error_type] += 1

    def snapshot(self) -> dict[str, Any]:
        looked_up = self.cache_hits + self.cache_misses
        return {"queries": self.queries, "succeeded": self.succeeded, "failed": self.failed,
                "recovered": self.recovered,
                "error_rate": self.failed / self.queries if self.queries else 0.0,
                "errors_by_type": dict(sorted(self.errors_by_type.items())),
                "query_time_ms": _percentiles(self.query_ms), "llm_time_ms": _percentiles(self.llm_ms),
                "resource_cache": {"hits": self.cache_hits, "misses": self.cache_misses,
                                   "hit_rate": self.cache_hits / looked_up if looked_up else 0.0}}

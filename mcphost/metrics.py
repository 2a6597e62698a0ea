"""Counters and latency summaries, per server and per tool.

Sans-I/O (layer 1): durations are measured by the caller and passed in. Latencies keep a
bounded reservoir (the most recent N samples) so percentiles cost memory O(N), not O(calls).
``snapshot()`` returns plain dicts, safe to serialise and to keep.
"""

from __future__ import annotations

from collections import deque
from typing import Any

__all__ = ["Metrics", "CallStats"]

_RESERVOIR = 1024


class CallStats:
    """Calls of one kind (a tool, a method): counts and latencies in seconds."""

    __slots__ = ("calls", "errors", "is_errors", "last_error", "max", "min", "recent", "timeouts", "total")

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.is_errors = 0
        self.timeouts = 0
        self.total = 0.0
        self.min = float("inf")
        self.max = 0.0
        self.last_error: str | None = None
        self.recent: deque[float] = deque(maxlen=_RESERVOIR)

    def record(self, seconds: float, *, error: str | None = None, is_error: bool = False,
               timeout: bool = False) -> None:
        self.record_result(seconds, is_error)
        if error is not None:
            self.errors += 1
            self.last_error = error
        if timeout:
            self.timeouts += 1

    def record_result(self, seconds: float, is_error: bool) -> None:
        """One call that got a result (the hot path: no keywords)."""
        self.calls += 1
        self.total += seconds
        if seconds < self.min:
            self.min = seconds
        if seconds > self.max:
            self.max = seconds
        self.recent.append(seconds)
        if is_error:
            self.is_errors += 1

    def snapshot(self) -> dict[str, Any]:
        ordered = sorted(self.recent)

        def pct(p: float) -> float | None:
            if not ordered:
                return None
            return ordered[min(len(ordered) - 1, int(p * len(ordered)))]

        return {
            "calls": self.calls,
            "errors": self.errors,
            "isError": self.is_errors,
            "timeouts": self.timeouts,
            "totalSeconds": self.total,
            "meanSeconds": self.total / self.calls if self.calls else None,
            "minSeconds": self.min if self.calls else None,
            "maxSeconds": self.max if self.calls else None,
            "p50Seconds": pct(0.50),
            "p95Seconds": pct(0.95),
            "p99Seconds": pct(0.99),
            "lastError": self.last_error,
        }


class Metrics:
    """All statistics of one server."""

    __slots__ = ("methods", "restarts", "started_at", "tools")

    def __init__(self) -> None:
        self.tools: dict[str, CallStats] = {}
        self.methods: dict[str, CallStats] = {}
        self.restarts = 0
        self.started_at: float | None = None

    def tool(self, name: str) -> CallStats:
        stats = self.tools.get(name)
        if stats is None:
            stats = self.tools[name] = CallStats()
        return stats

    def method(self, name: str) -> CallStats:
        stats = self.methods.get(name)
        if stats is None:
            stats = self.methods[name] = CallStats()
        return stats

    def snapshot(self) -> dict[str, Any]:
        return {
            "tools": {name: s.snapshot() for name, s in self.tools.items()},
            "methods": {name: s.snapshot() for name, s in self.methods.items()},
        }

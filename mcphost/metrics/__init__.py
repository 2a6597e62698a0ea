"""Counters and latency histograms, per server and per tool or method.

Sans-I/O (layer 1): durations are measured by the caller and passed in. Latencies go into a
bounded-memory :class:`~mcphost.metrics.histogram.Histogram` (integer nanoseconds, counters
only for the buckets that hold a value, quantiles within 1.6 %), so memory does not grow
with the number of calls. ``snapshot()`` returns plain dicts,
safe to serialise and to keep.

- :mod:`.histogram`: the histogram.
- :mod:`.prometheus`: the Prometheus text exposition format (families, samples, names).
- :mod:`.exposition`: the families of a host's :class:`Metrics`, ready for ``render``.

Failures are counted by kind (:data:`ERROR_KINDS`): ``server_error`` (the server answered with
a JSON-RPC error), ``is_error`` (a tool result with ``isError: true``: a result, not an
exception), ``timeout``, ``cancelled``, ``unavailable`` (the server is not running or went
away), ``validation`` (arguments or a result failed their schema), ``protocol`` (the server
broke the protocol, e.g. a malformed result) and ``other``. :func:`error_kind` names the kind
of an exception.
"""

from __future__ import annotations

import builtins
from typing import Any

from ..errors import (
    OutputValidationError,
    ProtocolError,
    SchemaError,
    ServerError,
    ServerStartupError,
    ServerUnavailableError,
    TransportError,
    ValidationError,
)
from .histogram import Histogram

__all__ = ["CallStats", "ERROR_KINDS", "Histogram", "Metrics", "error_kind"]

#: The kinds of failure a :class:`CallStats` counts, in the order ``snapshot()`` lists them.
ERROR_KINDS: tuple[str, ...] = (
    "server_error", "is_error", "timeout", "cancelled", "unavailable", "transport", "validation", "protocol", "other",
)
_KNOWN = frozenset(ERROR_KINDS)


def error_kind(exc: BaseException) -> str:
    """The kind (one of :data:`ERROR_KINDS`) of a failed call's exception."""
    # mcphost.TimeoutError is a builtin TimeoutError, and so is asyncio's from 3.11.
    if isinstance(exc, builtins.TimeoutError):
        return "timeout"
    if isinstance(exc, ServerError):
        return "server_error"
    if isinstance(exc, (ServerUnavailableError, ServerStartupError)):
        return "unavailable"
    if isinstance(exc, TransportError):  # an exchange failed on its way (HTTP status, socket)
        return "transport"
    if isinstance(exc, (ValidationError, OutputValidationError, SchemaError)):
        return "validation"
    if isinstance(exc, ProtocolError):
        return "protocol"
    # asyncio is not imported in layer 1: its CancelledError is known by name.
    if type(exc).__name__ == "CancelledError":
        return "cancelled"
    return "other"


class CallStats:
    """Calls of one kind (a tool, a method): counts, failures by kind, latencies in seconds."""

    __slots__ = ("by_kind", "errors", "histogram", "is_errors", "last_error", "refused", "timeouts")

    def __init__(self) -> None:
        self.histogram = Histogram()
        #: Calls that failed with an exception (every kind but ``is_error``).
        self.errors = 0
        #: Results with ``isError: true``, and calls that timed out.
        self.is_errors = 0
        #: Requests refused before they were sent (invalid arguments): errors, never calls.
        self.refused = 0
        self.timeouts = 0
        self.last_error: str | None = None
        #: Failures with an exception, by kind (only kinds seen; ``is_error`` is ``is_errors``).
        self.by_kind: dict[str, int] = {}

    # The running numbers live in the histogram; these keep the old attribute names.
    @property
    def calls(self) -> int:
        return self.histogram.count

    @property
    def total(self) -> float:
        return self.histogram.sum

    @property
    def min(self) -> float:
        return self.histogram.min

    @property
    def max(self) -> float:
        return self.histogram.max

    def record(self, seconds: float, *, error: str | None = None, is_error: bool = False,
               timeout: bool = False, kind: str | None = None) -> None:
        """One call, however it ended. ``kind`` (one of :data:`ERROR_KINDS`) says how it
        failed; without it, ``timeout=True`` means ``"timeout"``, ``is_error=True``
        ``"is_error"``, and an ``error`` message alone ``"other"``."""
        if kind is None:
            if timeout:
                kind = "timeout"
            elif error is not None:
                kind = "other"
        elif kind not in _KNOWN:
            raise ValueError(f"unknown error kind {kind!r} (known: {', '.join(ERROR_KINDS)})")
        if kind == "is_error":
            kind = None
            is_error = True
        self.record_result(seconds, is_error)
        if kind is not None:
            self.errors += 1
            self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
            self.last_error = error if error is not None else kind
            if kind == "timeout":
                self.timeouts += 1

    def count_error(self, kind: str, message: str | None = None, *, sent: bool = True) -> None:
        """A failure with no latency of its own: a result refused after it was timed, or
        (``sent=False``) arguments refused before anything was sent."""
        if kind not in _KNOWN:
            raise ValueError(f"unknown error kind {kind!r} (known: {', '.join(ERROR_KINDS)})")
        if not sent:
            self.refused += 1
        self.errors += 1
        self.by_kind[kind] = self.by_kind.get(kind, 0) + 1
        self.last_error = message if message is not None else kind

    def record_result(self, seconds: float, is_error: bool) -> None:
        """One call that got a result (the hot path: no keywords)."""
        self.histogram.record(seconds)
        if is_error:
            self.is_errors += 1

    def merge(self, other: CallStats) -> CallStats:
        """Add ``other``'s calls to these (e.g. the same tool on two servers); returns self."""
        self.histogram.merge(other.histogram)
        self.errors += other.errors
        self.refused += other.refused
        self.is_errors += other.is_errors
        self.timeouts += other.timeouts
        for kind, n in other.by_kind.items():
            self.by_kind[kind] = self.by_kind.get(kind, 0) + n
        if other.last_error is not None:
            self.last_error = other.last_error
        return self

    def snapshot(self) -> dict[str, Any]:
        h = self.histogram
        calls = h.count
        p50, p95, p99 = h.quantiles((0.50, 0.95, 0.99)) if calls else (None, None, None)
        by_kind = {kind: self.by_kind.get(kind, 0) for kind in ERROR_KINDS}
        by_kind["is_error"] = self.is_errors
        return {
            "calls": calls,
            "errors": self.errors,
            "isError": self.is_errors,
            "refused": self.refused,
            "timeouts": self.timeouts,
            "errorsByKind": by_kind,
            "totalSeconds": h.sum,
            "meanSeconds": h.sum / calls if calls else None,
            "minSeconds": h.min if calls else None,
            "maxSeconds": h.max if calls else None,
            "p50Seconds": p50,
            "p95Seconds": p95,
            "p99Seconds": p99,
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

    def summary(self, seconds: float | None) -> dict[str, Any]:
        """The server's totals over every tool and method (FR9.3): ``requests`` (sent:
        answered or failed), ``errors`` (failures with an exception, arguments refused before
        sending included), ``successes`` (a result without ``isError``), ``successRate`` and
        ``errorRate`` (of the requests and refusals; ``isError`` results count as errors),
        ``averageLatencySeconds`` (of the requests) and ``requestsPerSecond`` (over
        ``seconds``, the time the metrics cover). Rates are ``None`` before any request."""
        requests = refused = errors = is_errors = 0
        total = 0.0
        for stats in (*self.tools.values(), *self.methods.values()):
            requests += stats.calls
            refused += stats.refused
            errors += stats.errors
            is_errors += stats.is_errors
            total += stats.total
        successes = requests - (errors - refused) - is_errors
        attempts = requests + refused
        return {
            "requests": requests,
            "errors": errors,
            "successes": successes,
            "successRate": successes / attempts if attempts else None,
            "errorRate": (attempts - successes) / attempts if attempts else None,
            "averageLatencySeconds": total / requests if requests else None,
            "requestsPerSecond": requests / seconds if seconds and seconds > 0 else None,
            "metricsSeconds": seconds,
        }

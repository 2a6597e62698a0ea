"""Per-server statistics: the snapshot the host shows, failures by kind, fixed memory."""

from __future__ import annotations

import asyncio
import math
import random

import pytest

from mcphost.errors import (
    MCPHostError,
    OutputValidationError,
    ProtocolError,
    RoutingError,
    ServerError,
    ServerUnavailableError,
    TimeoutError,
    TransportError,
    ValidationError,
)
from mcphost.metrics import ERROR_KINDS, CallStats, Histogram, Metrics, error_kind
from mcphost.metrics.histogram import MAX_RELATIVE_ERROR

KEYS = {
    "calls", "errors", "isError", "refused", "timeouts", "errorsByKind", "totalSeconds", "meanSeconds",
    "minSeconds", "maxSeconds", "p50Seconds", "p95Seconds", "p99Seconds", "lastError",
}


def test_an_unused_stats_snapshot() -> None:
    snap = CallStats().snapshot()
    assert set(snap) == KEYS
    assert snap["calls"] == 0 and snap["totalSeconds"] == 0.0
    for key in ("meanSeconds", "minSeconds", "maxSeconds", "p50Seconds", "p95Seconds", "p99Seconds",
                "lastError"):
        assert snap[key] is None
    assert snap["errorsByKind"] == dict.fromkeys(ERROR_KINDS, 0)


def test_the_old_calls_keep_working() -> None:
    s = CallStats()
    s.record_result(0.010, False)        # the hot path of call_tool
    s.record_result(0.020, True)         # a result with isError: true
    s.record(0.030)                      # a method that answered
    s.record(0.5, error="timed out", timeout=True)
    s.record(0.040, error="malformed result")
    s.record(0.050, is_error=True)
    snap = s.snapshot()
    assert snap["calls"] == 6
    assert snap["errors"] == 2
    assert snap["isError"] == 2
    assert snap["timeouts"] == 1
    assert snap["lastError"] == "malformed result"
    assert snap["totalSeconds"] == pytest.approx(0.65)
    assert snap["meanSeconds"] == pytest.approx(0.65 / 6)
    assert snap["minSeconds"] == 0.010 and snap["maxSeconds"] == 0.5
    assert snap["errorsByKind"] == {**dict.fromkeys(ERROR_KINDS, 0), "is_error": 2, "timeout": 1, "other": 1}
    assert s.calls == 6 and s.total == pytest.approx(0.65) and s.min == 0.010 and s.max == 0.5


def test_failures_by_kind() -> None:
    s = CallStats()
    for kind in ERROR_KINDS:
        s.record(0.1, kind=kind, error=f"{kind} happened")
    s.record(0.1, kind="cancelled")  # no message: the kind is the last error
    snap = s.snapshot()
    assert snap["errorsByKind"] == {**dict.fromkeys(ERROR_KINDS, 1), "cancelled": 2}
    assert snap["errors"] == len(ERROR_KINDS)  # is_error is a result, not an exception
    assert snap["isError"] == 1
    assert snap["timeouts"] == 1
    assert snap["lastError"] == "cancelled"
    assert snap["calls"] == len(ERROR_KINDS) + 1
    with pytest.raises(ValueError, match="unknown error kind"):
        s.record(0.1, kind="oops")


def test_error_kind() -> None:
    assert error_kind(TimeoutError("slow", server="a")) == "timeout"
    assert error_kind(ServerError("bad", server="a", code=-32000)) == "server_error"
    assert error_kind(ServerUnavailableError("gone", server="a")) == "unavailable"
    assert error_kind(ValidationError("bad args", server="a")) == "validation"
    assert error_kind(ProtocolError("garbage", server="a")) == "protocol"
    assert error_kind(TransportError("HTTP 502 Bad Gateway", server="a", http_status=502)) == "transport"
    assert error_kind(OutputValidationError("bad output", server="a")) == "validation"
    assert error_kind(asyncio.CancelledError()) == "cancelled"
    assert error_kind(RoutingError("nope")) == "other"
    assert error_kind(MCPHostError("x")) == "other"
    assert error_kind(ValueError("x")) == "other"
    s = CallStats()
    s.record(1.0, error="slow", kind=error_kind(TimeoutError("slow")))
    assert s.timeouts == 1


def test_percentiles_come_from_the_histogram() -> None:
    rng = random.Random(3)
    values = [rng.lognormvariate(math.log(0.02), 1.0) for _ in range(5000)]
    s = CallStats()
    for v in values:
        s.record_result(v, False)
    ordered = sorted(values)
    snap = s.snapshot()
    for key, q in (("p50Seconds", 0.50), ("p95Seconds", 0.95), ("p99Seconds", 0.99)):
        want = ordered[math.ceil(q * len(ordered)) - 1]
        assert abs(snap[key] - want) / want <= MAX_RELATIVE_ERROR
    # Exact to the nanosecond (the unit the histogram keeps).
    assert snap["minSeconds"] == pytest.approx(ordered[0], abs=5e-10)
    assert snap["maxSeconds"] == pytest.approx(ordered[-1], abs=5e-10)


def test_memory_does_not_grow_with_calls() -> None:
    s = CallStats()
    assert isinstance(s.histogram, Histogram)
    before = len(s.histogram.bucket_counts())
    for i in range(100_000):
        s.record_result((i % 1000) / 1000.0, False)
    assert len(s.histogram.bucket_counts()) == before
    assert not hasattr(s, "recent")  # no sample reservoir any more
    assert s.snapshot()["calls"] == 100_000


def test_merge_stats() -> None:
    a, b = CallStats(), CallStats()
    a.record(0.1)
    a.record(0.2, error="x", kind="server_error")
    b.record(0.3, error="y", kind="timeout")
    b.record_result(0.4, True)
    assert a.merge(b) is a
    snap = a.snapshot()
    assert snap["calls"] == 4 and snap["errors"] == 2 and snap["timeouts"] == 1 and snap["isError"] == 1
    assert snap["errorsByKind"]["server_error"] == 1 and snap["errorsByKind"]["timeout"] == 1
    assert snap["lastError"] == "y"
    assert snap["maxSeconds"] == 0.4


def test_metrics_of_a_server() -> None:
    m = Metrics()
    assert m.tool("echo") is m.tool("echo")
    assert m.method("prompts/get") is m.method("prompts/get")
    m.tool("echo").record_result(0.01, False)
    m.method("prompts/get").record(0.02, error="boom", kind="server_error")
    snap = m.snapshot()
    assert set(snap) == {"tools", "methods"}
    assert snap["tools"]["echo"]["calls"] == 1
    assert snap["methods"]["prompts/get"]["errors"] == 1
    assert set(snap["tools"]["echo"]) == KEYS
    assert m.restarts == 0 and m.started_at is None


def test_errors_without_latency_are_counted_by_kind() -> None:
    stats = CallStats()
    stats.record_result(0.01, False)
    stats.count_error("validation", "bad arguments", sent=False)  # refused: never sent
    stats.count_error("validation", "bad output")  # sent, timed, then refused
    snap = stats.snapshot()
    assert snap["calls"] == 1 and snap["errors"] == 2 and snap["refused"] == 1
    assert snap["errorsByKind"]["validation"] == 2 and snap["lastError"] == "bad output"
    with pytest.raises(ValueError, match="unknown error kind"):
        stats.count_error("gremlins")

"""The Prometheus families of the host's per-server :class:`~mcphost.metrics.Metrics`.

Layer 1 (no I/O): the host passes its servers' metrics in and renders what comes out with
:func:`mcphost.metrics.prometheus.render`, adding families of its own (connection counters,
states) as it sees fit.

Names and labels follow OpenTelemetry's semantic conventions for MCP, mapped to Prometheus:
the duration of every request is ``mcp_client_operation_duration_seconds`` (from
``mcp.client.operation.duration``, unit ``s``, the recommended buckets of
:data:`~mcphost.metrics.histogram.DEFAULT_BOUNDS`), labelled ``mcp_server`` (the configured
name), ``mcp_method_name`` (``tools/call``, ``prompts/get``, ...) and, for a tool call,
``gen_ai_tool_name``. Failures are ``mcphost_operation_errors_total`` with the same labels
and ``error_type`` (a kind of :data:`~mcphost.metrics.ERROR_KINDS`); only kinds that
happened appear.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from . import ERROR_KINDS, CallStats, Metrics
from .histogram import DEFAULT_BOUNDS
from .prometheus import Family, otel_name

__all__ = ["DURATION", "ERRORS", "families"]

DURATION = otel_name("mcp.client.operation.duration", "s", "histogram")
ERRORS = otel_name("mcphost.operation.errors", "{error}", "counter")


def _series(servers: Mapping[str, Metrics]) -> Iterable[tuple[dict[str, str], CallStats]]:
    for server, metrics in servers.items():
        for tool, stats in metrics.tools.items():
            yield {"mcp_server": server, "mcp_method_name": "tools/call", "gen_ai_tool_name": tool}, stats
        for method, stats in metrics.methods.items():
            yield {"mcp_server": server, "mcp_method_name": method}, stats


def families(servers: Mapping[str, Metrics], bounds: Iterable[float] = DEFAULT_BOUNDS) -> list[Family]:
    """The duration histogram and the error counter of every tool and method of every server."""
    bounds = tuple(bounds)
    duration = Family(DURATION, "histogram", "Duration of the MCP requests the host sent, in seconds.")
    errors = Family(ERRORS, "counter", "MCP requests that failed, by kind of failure.")
    for labels, stats in _series(servers):
        duration.add_histogram(stats.histogram, labels, bounds)
        for kind in ERROR_KINDS:
            n = stats.is_errors if kind == "is_error" else stats.by_kind.get(kind, 0)
            if n:
                errors.add(n, {**labels, "error_type": kind})
    return [duration, errors]

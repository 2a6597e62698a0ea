"""What the host tells about its requests: metrics, the ``on_call`` hook, request logs,
and the Prometheus text of it all.

Layer 4. Every request the host sends ends in :func:`completed` or :func:`failed`: its
latency goes into the server's histogram (per tool, per method), a failure is counted by
kind (:func:`mcphost.metrics.error_kind`), the application's ``on_call`` hooks get one
record, and the ``mcphost.requests`` logger gets ``request_completed`` (DEBUG) or
``request_failed`` (INFO). A request refused before anything was sent (an unknown name, a
denied tool, invalid arguments, a usage mistake) goes through :func:`refused`: one
``request_refused`` record each, bounded (see there). The fast path of ``call_tool`` records its latency itself and
comes here only when a hook or DEBUG logging wants the record.

:class:`Observability` is the part of the public API this module serves
(``metrics_text()``, ``on_call()``), mixed into :class:`~mcphost.host.facade.MCPHost`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from ..errors import MCPHostError, UsageError
from ..metrics import error_kind

if TYPE_CHECKING:
    from ..metrics.prometheus import Family
    from .handle import ServerHandle
    from .readcache import ReadCache

__all__ = ["CallRecord", "Observability", "apply_settings", "check_level", "restore_levels", "completed", "failed", "refused",
           "requests_log"]

#: Request logs (event ``request_completed`` at DEBUG, ``request_failed`` at INFO).
requests_log = logging.getLogger("mcphost.requests")
logger = logging.getLogger("mcphost.host.observe")

#: What an ``on_call`` hook receives: ``server``, ``method``, ``tool`` (None unless
#: ``tools/call``), ``duration`` (seconds), ``outcome`` (``"ok"``, ``"is_error"`` or a kind
#: of failure: ``server_error``, ``timeout``, ``cancelled``, ``unavailable``, ``transport``, ``validation``,
#: ``protocol``, ``other``), ``request_id`` (the JSON-RPC id, when known), ``error`` (the
#: message of a failure, else None).
CallRecord = dict[str, Any]
CallHook = Callable[[CallRecord], Any]


def _tell(hooks: list[CallHook], record: CallRecord) -> None:
    for hook in list(hooks):
        try:
            hook(record)
        except Exception:  # a hook's bug must not fail the call it observes
            logger.exception("on_call hook %r failed", hook)


def completed(handle: ServerHandle, method: str, tool: str | None, seconds: float, is_error: bool,
              request_id: Any = None) -> None:
    """A request got its result: hooks and the DEBUG log (metrics are the caller's)."""
    outcome = "is_error" if is_error else "ok"
    if requests_log.isEnabledFor(logging.DEBUG):
        requests_log.debug("%s: %s%s %s in %.1f ms", handle.name, method, f" {tool}" if tool else "", outcome,
                           seconds * 1000, extra={"event": "request_completed", "server": handle.name,
                                                  "method": method, "tool": tool, "request_id": request_id,
                                                  "duration_ms": round(seconds * 1000, 3), "outcome": outcome})
    if handle.call_hooks:
        _tell(handle.call_hooks, {"server": handle.name, "method": method, "tool": tool, "duration": seconds,
                                  "outcome": outcome, "request_id": request_id, "error": None})


#: At most this many ``request_refused`` records a minute at INFO; the others are DEBUG (a
#: model looping on a bad call must not flood the application's log).
REFUSALS_PER_MINUTE: Final = 20
#: Characters of a refusal's message kept in its record.
REFUSAL_LENGTH: Final = 500
_refusals = {"window": 0.0, "count": 0, "quiet": 0}

_E = TypeVar("_E", bound=MCPHostError)


def refused(exc: _E, method: str | None = None) -> _E:
    """Log ``exc``, a request refused before anything was sent (FR7.4), and return it to be
    raised: one ``request_refused`` record, its message clipped to
    :data:`REFUSAL_LENGTH`, at INFO for the first :data:`REFUSALS_PER_MINUTE` of a minute
    and at DEBUG after that (the first INFO record of the next minute says how many)."""
    now = time.monotonic()
    state = _refusals
    if now - state["window"] >= 60.0:
        state["window"], state["count"], quiet = now, 0, int(state["quiet"])
        state["quiet"] = 0
        if quiet:
            requests_log.info("%d more request(s) were refused in the last minute (logged at DEBUG)", quiet)
    state["count"] += 1
    loud = state["count"] <= REFUSALS_PER_MINUTE
    if not loud:
        state["quiet"] += 1
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if len(text) > REFUSAL_LENGTH:
        text = text[:REFUSAL_LENGTH] + "…"
    requests_log.log(logging.INFO if loud else logging.DEBUG, "%s refused (%s): %s", method or "request",
                     type(exc).__name__, text,
                     extra={"event": "request_refused", "server": exc.server, "method": method,
                            "outcome": type(exc).__name__})
    return exc


def failed(handle: ServerHandle, method: str, tool: str | None, seconds: float, exc: MCPHostError,
           request_id: Any = None) -> None:
    """A request failed: counted by kind, logged at INFO, told to the hooks."""
    kind = error_kind(exc)
    stats = handle.metrics.tool(tool) if tool is not None else handle.metrics.method(method)
    stats.record(seconds, error=str(exc), kind=kind)
    requests_log.info("%s: %s%s failed (%s) after %.1f ms: %s", handle.name, method, f" {tool}" if tool else "",
                      kind, seconds * 1000, str(exc).splitlines()[0],
                      extra={"event": "request_failed", "server": handle.name, "method": method, "tool": tool,
                             "request_id": request_id, "duration_ms": round(seconds * 1000, 3), "outcome": kind})
    if handle.call_hooks:
        _tell(handle.call_hooks, {"server": handle.name, "method": method, "tool": tool, "duration": seconds,
                                  "outcome": kind, "request_id": request_id, "error": str(exc)})


def _state_families(servers: Mapping[str, ServerHandle]) -> list[Family]:
    from ..metrics.prometheus import Family

    now = time.monotonic()
    up = Family("mcphost_server_up", "gauge", "1 when the server is ready, else 0.")
    state = Family("mcphost_server_state_seconds", "gauge", "Seconds the server has been in its current state.")
    restarts = Family("mcphost_server_restarts_total", "counter", "Restarts of the server.")
    in_flight = Family("mcphost_requests_in_flight", "gauge", "Requests sent to the server and not answered yet.")
    sent = Family("mcphost_transport_sent_bytes_total", "counter", "Bytes written to the server.")
    received = Family("mcphost_transport_received_bytes_total", "counter", "Bytes read from the server.")
    noise = Family("mcphost_transport_noise_lines_total", "counter", "Lines from the server that were not JSON-RPC.")
    cache = Family("mcphost_cache_operations_total", "counter", "Reads and prompts looked up in the cache, by result.")
    requests = Family("mcphost_server_requests_total", "counter", "Requests sent to the server (answered or failed).")
    rate = Family("mcphost_server_requests_per_second", "gauge",
                  "Requests per second to the server, since it was configured.")
    latency = Family("mcphost_server_request_latency_average_seconds", "gauge",
                     "Average latency of the server's requests, in seconds.")
    success = Family("mcphost_server_success_ratio", "gauge",
                     "Share of the server's requests that got a result without isError.")
    protocol = Family("mcphost_server_protocol_info", "gauge",
                      "1, labelled with the MCP era (legacy: the initialize handshake; modern: 2026-07-28, "
                      "stateless) and the protocol version the server speaks.")
    for name, handle in servers.items():
        labels = {"mcp_server": name}
        summary = handle.metrics.summary(handle.metrics_seconds())
        requests.add(summary["requests"], labels)
        for family, key in ((rate, "requestsPerSecond"), (latency, "averageLatencySeconds"),
                            (success, "successRate")):
            if summary[key] is not None:
                family.add(summary[key], labels)
        up.add(1 if handle.state.value == "ready" else 0, labels)
        state.add(round(now - handle.state_since, 3), {**labels, "state": handle.state.value})
        restarts.add(handle.restarts, labels)
        session = handle.session
        in_flight.add(session.pending if session is not None else 0, labels)
        if session is not None and session.protocol_version:
            protocol.add(1, {**labels, "era": session.era, "version": session.protocol_version})
        stats = handle.transport.statistics() if handle.transport is not None else {}
        sent.add(stats.get("bytes_out", 0), labels)
        received.add(stats.get("bytes_in", 0), labels)
        noise.add(handle.transport.vitals().noise_lines if handle.transport is not None else 0, labels)
        for result, n in handle.cache_stats.items():
            cache.add(n, {**labels, "result": result})
    return [up, state, restarts, in_flight, sent, received, noise, cache, requests, rate, latency, success, protocol]


class Observability:
    """``metrics_text()``, ``get_metrics()`` and ``on_call()`` of
    :class:`~mcphost.host.facade.MCPHost`."""

    def __init__(self, servers: Mapping[str, ServerHandle], call_hooks: list[CallHook]) -> None:
        self._servers = servers
        #: The hooks every server's handle calls after each request (shared with them).
        self.call_hooks = call_hooks

    def get_metrics(self) -> dict[str, Any]:
        """Per-server state, counters and per-tool latency statistics."""
        return {name: h.metrics_snapshot() for name, h in self._servers.items()}

    def metrics_text(self) -> str:
        """Every server's metrics in the Prometheus text exposition format (0.0.4).

        Request durations are the OpenTelemetry MCP histogram
        ``mcp_client_operation_duration_seconds`` (labels ``mcp_server``,
        ``mcp_method_name``, ``gen_ai_tool_name``); failures
        ``mcphost_operation_errors_total`` (plus ``error_type``); then the servers' states,
        restarts, requests in flight, bytes, noise and cache counters (docs/observability.md).
        """
        # The text format loads with the first scrape: a host nobody scrapes never loads it.
        from ..metrics.exposition import families
        from ..metrics.prometheus import render

        servers = self._servers
        return render([*families({n: h.metrics for n, h in servers.items()}), *_state_families(servers)])

    def on_call(self, hook: CallHook) -> None:
        """Call ``hook(record)`` after every request the host sends: ``server``, ``method``,
        ``tool``, ``duration`` (s), ``outcome``, ``request_id``, ``error``. For exporting to
        OpenTelemetry or anything else; a hook that raises is logged, never the call's
        failure."""
        if not callable(hook):
            raise UsageError(f"on_call() takes a function, not {type(hook).__name__}")
        self.call_hooks.append(hook)


def apply_settings(reads: ReadCache, levels: dict[str, int], config: Any, log_level: str | int | None = None) -> None:
    """What the configuration (and ``MCPHost(log_level=)``, which wins) says of the cache
    and of the log levels (``enableLogging: false``: nothing is logged): host-wide for the ``mcphost`` loggers, per server for its
    ``mcphost.server.<name>`` and ``mcphost.wire.<name>`` loggers; ``levels`` keeps each
    logger's level as it was."""
    reads.configure(config.cache)
    wanted: list[tuple[str, str | int]] = []
    level = log_level if log_level is not None else config.log_level
    if log_level is None and getattr(config, "enable_logging", None) is False:
        level = logging.CRITICAL + 1  # enableLogging: false (the application's log_level= still wins)
    if level is not None:
        wanted.append(("mcphost", level))
    for name, server in config.servers.items():
        if server.log_level is not None:
            wanted += [(f"mcphost.server.{name}", server.log_level), (f"mcphost.wire.{name}", server.log_level)]
    for logger_name, value in wanted:
        target = logging.getLogger(logger_name)
        levels.setdefault(logger_name, target.level)  # given back when the host shuts down
        target.setLevel(value)


def restore_levels(levels: dict[str, int]) -> None:
    """The loggers' levels as they were before the host set them (``levels``, saved by
    :func:`apply_settings`; given back at shutdown): the host's settings last as long as the
    host."""
    for logger_name, level in levels.items():
        logging.getLogger(logger_name).setLevel(level)
    levels.clear()


def check_level(level: str | int | None) -> str | int | None:
    """``level`` as logging takes it; a ``UsageError`` for one it does not know."""
    if level is None or (isinstance(level, int) and not isinstance(level, bool)):
        return level
    if isinstance(level, str) and level.upper() in ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"):
        return level.upper()
    raise UsageError(f"log_level must be DEBUG, INFO, WARNING, ERROR or CRITICAL (or a number), not {level!r}")

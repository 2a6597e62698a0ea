"""What the host tells: on_call records, get_metrics(), metrics_text(), JSON logs with event
names, the wire trace, log levels (mcphost/host/observe.py, mcphost/logs.py)."""

from __future__ import annotations

import io
import json
import logging
import re
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost, ServerError, TimeoutError, ValidationError
from mcphost.logs import EVENTS, JSONFormatter

SECRET = "observed-s3cret-value"
NUMBER = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def tool(name: str, schema: dict[str, Any] | None = None, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": schema or {"type": "object"}, "behavior": behavior}


SERVER = {
    "tools": [ECHO_TOOL, tool("fails", error={"code": -32000, "message": "broken"}),
              tool("inside", isError="not found"), tool("slow", delay=30), tool("typed", NUMBER),
              tool('we"ird\\name')],
    "resources": [{"uri": "mem://a", "name": "a", "text": "alpha"}],
}


@pytest.fixture
def json_log() -> Iterator[io.StringIO]:
    """Every record of the mcphost tree at DEBUG, as JSON lines."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JSONFormatter())
    root = logging.getLogger("mcphost")
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


async def test_on_call_records_every_outcome() -> None:
    records: list[dict[str, Any]] = []
    async with MCPHost(fake_config(a=fake(SERVER)), unavailable_after_timeouts=0) as host:
        host.on_call(records.append)
        host.on_call(lambda r: 1 / 0)  # a broken hook is logged, never the call's failure
        await host.call_tool("a.echo", {"text": "x"})
        await host.call_tool("a.inside", {})
        with pytest.raises(ServerError):
            await host.call_tool("a.fails", {})
        with pytest.raises(TimeoutError):
            await host.call_tool("a.slow", {}, timeout=0.2)
        with pytest.raises(ValidationError):
            await host.call_tool("a.typed", {"n": "one"})
        await host.get_resource("mem://a")
        metrics = host.get_metrics()["a"]
    assert [(r["tool"], r["outcome"]) for r in records] == [
        ("echo", "ok"), ("inside", "is_error"), ("fails", "server_error"), ("slow", "timeout"), (None, "ok")]
    assert records[-1]["method"] == "resources/read"
    assert all(r["server"] == "a" and r["duration"] >= 0 for r in records)
    assert isinstance(records[0]["request_id"], int) and records[2]["error"]
    # The same outcomes in get_metrics(); refused arguments are an error, never a request.
    tools = metrics["tools"]
    assert tools["typed"]["errorsByKind"]["validation"] == 1 and tools["typed"]["calls"] == 0
    assert tools["fails"]["errorsByKind"]["server_error"] == 1
    assert tools["slow"]["errorsByKind"]["timeout"] == 1 and tools["inside"]["isError"] == 1
    assert (metrics["requests"], metrics["errors"], metrics["successes"]) == (5, 3, 2)
    for key in ("state", "stateSeconds", "pid", "pending", "restarts", "start_seconds", "connection",
                "transport", "cache", "tools", "methods"):
        assert key in metrics, key


def parse_exposition(text: str) -> dict[str, Any]:
    """A small parser of the Prometheus text format: HELP, TYPE and samples with labels."""
    families: dict[str, dict[str, Any]] = {}
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)')
    for line in text.splitlines():
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            families.setdefault(name, {"samples": []})["help"] = help_text
        elif line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            families.setdefault(name, {"samples": []})["type"] = kind
        elif line:
            m = sample.match(line)
            assert m is not None, line
            labels = {k: re.sub(r"\\(.)", lambda e: {"n": "\n"}.get(e.group(1), e.group(1)), v)
                      for k, v in label.findall(m.group(2) or "")}
            base = re.sub(r"_(bucket|sum|count)$", "", m.group(1))
            family = families.get(m.group(1)) or families[base]
            family["samples"].append((m.group(1), labels, float(m.group(3))))
    return families


async def test_metrics_text_is_prometheus_with_the_otel_names() -> None:
    async with MCPHost(fake_config(a=fake(SERVER))) as host:
        await host.call_tool("a.echo", {"text": "x"})
        await host.call_tool('a.we"ird\\name', {})
        with pytest.raises(ServerError):
            await host.call_tool("a.fails", {})
        text = host.metrics_text()
    families = parse_exposition(text)
    duration = families["mcp_client_operation_duration_seconds"]
    assert duration["type"] == "histogram" and duration["help"]
    echo = [s for s in duration["samples"] if s[1].get("gen_ai_tool_name") == "echo"]
    assert {"mcp_server": "a", "mcp_method_name": "tools/call"}.items() <= echo[0][1].items()
    assert ("mcp_client_operation_duration_seconds_count", 1.0) in [(n, v) for n, _, v in echo]
    assert any(s[1].get("le") == "+Inf" for s in echo)
    # A label value with a quote and a backslash comes back as it was.
    assert any(s[1].get("gen_ai_tool_name") == 'we"ird\\name' for s in duration["samples"])
    errors = families["mcphost_operation_errors_total"]["samples"]
    assert [(s[1]["gen_ai_tool_name"], s[1]["error_type"], s[2]) for s in errors] == [("fails", "server_error", 1.0)]
    up = families["mcphost_server_up"]["samples"]
    assert up == [("mcphost_server_up", {"mcp_server": "a"}, 1.0)]
    for name in ("mcphost_server_restarts_total", "mcphost_transport_sent_bytes_total",
                 "mcphost_requests_in_flight", "mcphost_cache_operations_total"):
        assert name in families, name


async def test_json_logs_name_every_event_and_hold_no_secret(json_log: io.StringIO) -> None:
    server = fake(SERVER)
    server["env"] = {"TOKEN": "${SECRET}"}
    async with MCPHost(fake_config(a=server), environ={"SECRET": SECRET, "PATH": "/usr/bin"},
                       trace_bodies=True) as host:
        await host.call_tool("a.echo", {"text": SECRET})
        with pytest.raises(ServerError):
            await host.call_tool("a.fails", {})
        await host.get_resource("mem://a")
        await host.get_resource("mem://a")
    lines = [json.loads(line) for line in json_log.getvalue().splitlines()]
    assert lines and SECRET not in json_log.getvalue()
    for line in lines:
        assert {"timestamp", "level", "logger", "event", "message"} <= line.keys()
        assert line["event"] in EVENTS, line["event"]
        assert line["timestamp"].endswith("Z")
    events = {line["event"] for line in lines}
    assert {"server_starting", "server_ready", "request_completed", "request_failed", "cache_miss",
            "cache_hit", "wire", "server_stopped"} <= events
    failed = next(line for line in lines if line["event"] == "request_failed")
    assert failed["server"] == "a" and failed["tool"] == "fails" and failed["outcome"] == "server_error"
    assert isinstance(failed["duration_ms"], float)
    wire = [line for line in lines if line["event"] == "wire" and line.get("method") == "tools/call"]
    assert wire and wire[0]["message"].startswith("-> request tools/call id=")


async def test_a_trace_and_request_logs_turned_on_mid_session_are_heard(caplog: pytest.LogCaptureFixture) -> None:
    # The hot path reads the loggers' cached answers: a level set later must still count.
    async with MCPHost(fake_config(a=fake(SERVER))) as host:
        await host.call_tool("a.echo", {"text": "one"})  # the caches now say "not at DEBUG"
        assert not [r for r in caplog.records if r.name in ("mcphost.wire.a", "mcphost.requests")]
        caplog.set_level(logging.DEBUG, logger="mcphost.wire.a")
        caplog.set_level(logging.DEBUG, logger="mcphost.requests")
        await host.call_tool("a.echo", {"text": "two"})
    traced = [r.getMessage() for r in caplog.records if r.name == "mcphost.wire.a"]
    assert any(m.startswith("-> request tools/call id=") for m in traced)
    assert any(m.startswith("<- response id=") for m in traced)
    assert any(getattr(r, "event", None) == "request_completed" for r in caplog.records if r.name == "mcphost.requests")


async def test_the_wire_trace_has_no_bodies_unless_asked(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="mcphost.wire")
    async with MCPHost(fake_config(a=fake(SERVER))) as host:
        await host.call_tool("a.echo", {"text": "private words"})
    traced = [r.getMessage() for r in caplog.records if r.name == "mcphost.wire.a"]
    assert any(m.startswith("-> request tools/call id=") for m in traced)
    assert any(m.startswith("<- response id=") for m in traced)
    assert not any("private words" in m for m in traced)


async def test_log_levels_from_the_host_and_the_configuration() -> None:
    saved = {name: logging.getLogger(name).level for name in ("mcphost", "mcphost.server.a", "mcphost.wire.a")}
    cfg = fake_config(a=fake(SERVER))
    cfg["logLevel"] = "error"
    cfg["mcpServers"]["a"]["logLevel"] = "debug"
    try:
        async with MCPHost(cfg):
            assert logging.getLogger("mcphost").level == logging.ERROR
            assert logging.getLogger("mcphost.server.a").level == logging.DEBUG
            assert logging.getLogger("mcphost.wire.a").level == logging.DEBUG
        # The host's settings last as long as the host: shut down, the levels are back.
        assert {name: logging.getLogger(name).level for name in saved} == saved
        async with MCPHost(cfg, log_level="info"):  # the application's word wins
            assert logging.getLogger("mcphost").level == logging.INFO
        assert logging.getLogger("mcphost").level == saved["mcphost"]
        with pytest.raises(ValueError, match="log_level must be"):
            MCPHost(cfg, log_level="loud")
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)


async def test_per_server_rates_and_average_latency() -> None:
    # FR9.3: request count, success rate, error rate and average latency, per server.
    async with MCPHost(fake_config(a=fake(SERVER), b=fake(SERVER))) as host:
        fresh = host.get_metrics()["b"]
        assert (fresh["requests"], fresh["successRate"], fresh["averageLatencySeconds"]) == (0, None, None)
        await host.call_tool("a.echo", {"text": "x"})
        await host.call_tool("a.echo", {"text": "y"})
        await host.call_tool("a.inside", {})  # isError: an error of the tool, counted as a failure
        with pytest.raises(ServerError):
            await host.call_tool("a.fails", {})
        a = host.get_metrics()["a"]
        assert (a["requests"], a["successes"]) == (4, 2)
        assert a["successRate"] == 0.5 and a["errorRate"] == 0.5
        tools = a["tools"].values()
        assert a["averageLatencySeconds"] == pytest.approx(sum(t["totalSeconds"] for t in tools) / 4)
        assert a["requestsPerSecond"] == pytest.approx(4 / a["metricsSeconds"], rel=0.5)
        assert a["requestsPerSecond"] > 0 and a["metricsSeconds"] > 0
        families = parse_exposition(host.metrics_text())
    samples = {(n, s["mcp_server"]): v for family in ("mcphost_server_requests_total",
                                                      "mcphost_server_success_ratio",
                                                      "mcphost_server_request_latency_average_seconds",
                                                      "mcphost_server_requests_per_second")
               for n, s, v in families[family]["samples"]}
    assert samples[("mcphost_server_requests_total", "a")] == 4.0
    assert samples[("mcphost_server_requests_total", "b")] == 0.0
    assert samples[("mcphost_server_success_ratio", "a")] == 0.5
    assert samples[("mcphost_server_request_latency_average_seconds", "a")] > 0
    assert ("mcphost_server_success_ratio", "b") not in samples  # no request yet: no ratio
    protocol = {s["mcp_server"]: (s["era"], s["version"]) for _, s, v in families["mcphost_server_protocol_info"]["samples"]}
    assert protocol["a"] == ("legacy", "2025-11-25")


async def test_nothing_is_kept_per_finished_call_and_tool_metrics_are_small() -> None:
    import sys

    from helpers import fake, fake_config

    from mcphost import MCPHost
    from mcphost.metrics.histogram import PENDING

    tools = [{"name": "t", "inputSchema": {"type": "object", "properties": {"i": {"type": "integer"}}},
              "behavior": {"result": {"content": [{"type": "text", "text": "ok"}]}}}]
    async with MCPHost(fake_config(a=fake({"tools": tools}))) as host:
        noop = lambda params: None  # noqa: E731
        for i in range(150):
            await host.call_tool("a.t", {"i": i}, progress=noop if i % 2 else None)
        peer = host.servers["a"].session.peer
        assert not peer._pending and not peer.progress_calls  # no record of a finished call
        stats = host.servers["a"].metrics.tool("t")
        h = stats.histogram
        assert len(h.pending) < PENDING  # at most a batch not yet in its buckets
        assert h.count == stats.calls == 150
        # Counters only over the span of the values seen: fewer than the layout has.
        from mcphost.metrics.histogram import BUCKETS

        assert len(h._counts) < BUCKETS and sys.getsizeof(h._counts) < 8 * BUCKETS
        assert stats.snapshot()["p50Seconds"] > 0

"""What the orchestrator specification asks of every host (issue 22, part 2): close(),
list_resources() asked live, servers_with(), add_server()/remove_server(), failFast and
enableLogging from the configuration, the nested JSON log shape with an operation id."""

from __future__ import annotations

import asyncio
import io
import json
import logging
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import ConfigurationError, MCPHost, RoutingError, ServerStartupError, UsageError
from mcphost.logs import JSONFormatter, operation, operation_id
from mcphost.policy import NO_RETRY

pytestmark = pytest.mark.usefixtures("no_leftovers")

QUERY = {"name": "execute_query", "inputSchema": {"type": "object"}}


def with_resources(*uris: str, **spec: Any) -> dict[str, Any]:
    return fake({"resources": [{"uri": u, "name": u, "text": u} for u in uris], **spec})


async def test_close_is_shutdown() -> None:
    host = MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})))
    await host.initialize()
    await host.close()
    assert host.get_tools()["a"]["state"] == "stopped"
    await host.close()  # idempotent, as shutdown is


async def test_list_resources_asks_now() -> None:
    grow = {"name": "grow", "inputSchema": {"type": "object"},
            "behavior": {"mutate": {"resources": [{"uri": "mem://a", "name": "a"}, {"uri": "mem://new", "name": "n"}]}}}
    cfg = fake_config(a=with_resources("mem://a", tools=[grow]), b=with_resources("mem://b"),
                      c=fake({"tools": [ECHO_TOOL]}))
    async with MCPHost(cfg) as host:
        assert [(r["server"], r["uri"]) for r in await host.list_resources()] == [("a", "mem://a"), ("b", "mem://b")]
        assert [r["uri"] for r in await host.list_resources("b")] == ["mem://b"]
        await host.call_tool("a.grow", {})
        assert [r["uri"] for r in await host.list_resources("a")] == ["mem://a", "mem://new"]
        with pytest.raises(RoutingError):
            await host.list_resources("nobody")
        assert host.get_metrics()["a"]["methods"]["resources/list"]["calls"] >= 2


async def test_servers_with_a_capability() -> None:
    cfg = fake_config(db=fake({"tools": [QUERY]}), meta=with_resources("mem://m"),
                      declared=fake({"tools": [ECHO_TOOL]}))
    cfg["mcpServers"]["db"]["priority"] = 10
    cfg["mcpServers"]["meta"]["priority"] = 1
    cfg["mcpServers"]["declared"].update(priority=5, capabilities=["execute_query"])
    async with MCPHost(cfg) as host:
        assert host.servers_with("execute_query") == ["declared", "db"]  # declared or a tool of that name
        assert host.servers_with("resources") == ["meta"]  # an MCP capability of the session
        assert host.servers_with("nothing") == []
        await host.stop_server("declared")
        assert host.servers_with("execute_query") == ["db"]
        assert host.servers_with("execute_query", ready=False) == ["declared", "db"]
        with pytest.raises(UsageError, match="capability must be a non-empty string"):
            host.servers_with("")


async def test_add_and_remove_a_server_at_run_time() -> None:
    host = MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})), retry=NO_RETRY)
    with pytest.raises(UsageError, match="needs a running host"):
        await host.add_server("b", fake({"tools": [ECHO_TOOL]}))
    async with host:
        await host.add_server("b", fake({"tools": [ECHO_TOOL]}))
        assert (await host.call_tool("b.echo", {"text": "x"}))["content"][0]["text"] == '{"text":"x"}'
        assert "b" in host.config.servers
        with pytest.raises(UsageError, match="exists already"):
            await host.add_server("b", fake())
        with pytest.raises(UsageError, match="not a server name"):
            await host.add_server("b.c", fake())
        with pytest.raises(ConfigurationError, match="timeout"):
            await host.add_server("c", {**fake(), "timeout": "soon"})
        assert "c" not in host.get_tools()
        with pytest.raises(ServerStartupError):
            await host.add_server("broken", fake(exit_at_start=1))
        assert host.get_tools()["broken"]["state"] == "failed"  # listed, with its error
        await host.add_server("later", fake({"tools": [ECHO_TOOL]}), start=False)
        assert host.get_tools()["later"]["state"] != "ready"
        await host.start_server("later")
        await host.remove_server("b")
        assert "b" not in host.get_tools() and "b" not in host.config.servers
        with pytest.raises(RoutingError):
            await host.call_tool("b.echo", {})
        with pytest.raises(RoutingError):
            await host.remove_server("b")


async def test_fail_fast_from_the_configuration() -> None:
    cfg = fake_config(good=fake({"tools": [ECHO_TOOL]}), bad=fake(exit_at_start=1))
    cfg["failFast"] = False
    async with MCPHost(cfg, retry=NO_RETRY) as host:  # not all-or-nothing: the good one serves
        assert host.get_tools()["good"]["state"] == "ready" and host.get_tools()["bad"]["state"] == "failed"
    cfg["failFast"] = True
    with pytest.raises(ServerStartupError):
        await MCPHost(cfg, retry=NO_RETRY).initialize()
    async with MCPHost(cfg, retry=NO_RETRY, require_all=False):  # the application's word wins
        pass


async def test_fail_fast_is_the_default_of_gathering() -> None:
    cfg = fake_config(a=fake({"resources": [{"uri": "mem://a", "name": "a", "text": "a"}],
                              "resourceTemplates": []}))
    cfg["failFast"] = False
    async with MCPHost(cfg) as host:
        # A listed resource whose read fails: with failFast false, it is an error of the result.
        host.servers["a"].resources = [*host.servers["a"].resources, {"uri": "mem://gone", "name": "gone"}]
        gathered = await host.gather_resources()
        assert [r["uri"] for r in gathered["resources"]] == ["mem://a"]
        assert [e["uri"] for e in gathered["errors"]] == ["mem://gone"]


async def test_enable_logging_false_silences_the_host() -> None:
    root = logging.getLogger("mcphost")
    before = root.level
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}))
    cfg["enableLogging"] = False
    async with MCPHost(cfg):
        assert not root.isEnabledFor(logging.CRITICAL)
    assert root.level == before
    async with MCPHost(cfg, log_level="INFO"):  # the application's word wins
        assert root.isEnabledFor(logging.INFO)
    assert root.level == before


def record(**extra: Any) -> logging.LogRecord:
    rec = logging.LogRecord("mcphost.compat.orchestrator", logging.INFO, __file__, 1, "fetched %s", ("x",), None)
    for key, value in extra.items():
        setattr(rec, key, value)
    return rec


def test_the_nested_log_shape() -> None:
    nested = JSONFormatter(nested=True)
    with operation("op-7") as op:
        assert op == "op-7" and operation_id.get() == "op-7"
        line = json.loads(nested.format(record(event="resource_fetch_completed", server="db", duration_ms=1.5,
                                               context={"user_query": "q"}, metrics={"resource_count": 3})))
    assert operation_id.get() is None
    assert line["event"] == "resource_fetch_completed" and line["component"] == "mcphost.compat.orchestrator"
    assert line["context"] == {"operation_id": "op-7", "mcp_server": "db", "user_query": "q"}
    assert line["metrics"] == {"duration_ms": 1.5, "resource_count": 3}
    assert line["message"] == "fetched x" and line["level"] == "INFO" and line["timestamp"].endswith("Z")
    try:
        raise ValueError("broken")
    except ValueError:
        import sys

        failed = record(event="error_occurred")
        failed.exc_info = sys.exc_info()
    error = json.loads(nested.format(failed))["error"]
    assert error["type"] == "ValueError" and error["message"] == "broken" and "Traceback" in error["stack_trace"]
    flat = json.loads(JSONFormatter().format(record(event="resource_fetch_completed", server="db")))
    assert flat["server"] == "db" and "context" not in flat  # flat stays the default
    with operation(new_id=lambda: "made") as made:
        assert made == "made"
    with pytest.raises(ValueError, match="non-empty string"), operation(""):
        pass


async def test_the_operation_id_follows_tasks() -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JSONFormatter(nested=True))
    log = logging.getLogger("mcphost.test.operation")
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        async def work() -> None:
            log.info("inside", extra={"event": "query_received"})

        with operation("op-task"):
            await asyncio.get_running_loop().create_task(work())
        await work()
    finally:
        log.removeHandler(handler)
    ids = [json.loads(line)["context"]["operation_id"] for line in out.getvalue().splitlines()]
    assert ids == ["op-task", None]

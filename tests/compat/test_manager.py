"""mcphost.compat.manager: the client-manager API (specification 003) over the fake server."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from helpers import ECHO_TOOL

from mcphost import PermissionDeniedError, RoutingError, ServerUnavailableError, UsageError
from mcphost.compat.manager import (
    CapabilitySet,
    MCPClientManager,
    MCPServerConfig,
    MCPServerConnection,
    ToolLookupError,
    ToolWrapper,
)
from mcphost.policy import NO_RETRY
from mcphost.testing import server_config

WRITE_TOOL = {"name": "write_file", "description": "Write", "inputSchema": {"type": "object"}}


def fake_server(name: str, tools: list[dict[str, Any]] | None = None, **faults: Any) -> MCPServerConfig:
    entry = server_config({"tools": tools if tools is not None else [ECHO_TOOL],
                           "resources": [{"uri": f"{name}://r", "name": "r", "text": "x"}]}, **faults)
    return MCPServerConfig(name=name, transport="stdio", command=entry["command"], args=entry["args"],
                           env=entry["env"])


async def test_connect_all_lists_wrappers_and_executes() -> None:
    manager = MCPClientManager([fake_server("fs", [ECHO_TOOL, WRITE_TOOL]), fake_server("api")])
    try:
        assert await manager.connect_all() == {"fs": True, "api": True}
        assert sorted(manager.connected_servers) == ["api", "fs"]
        tools = manager.get_tools()
        assert all(isinstance(t, ToolWrapper) for t in tools)
        assert sorted(t.name for t in tools) == ["mcp__api__echo", "mcp__fs__echo", "mcp__fs__write_file"]
        echo = next(t for t in tools if t.name == "mcp__fs__echo")
        assert echo.description == ECHO_TOOL["description"] and echo.parameters == ECHO_TOOL["inputSchema"]
        assert await echo({"text": "a"}) == '{"text":"a"}' and await echo(text="b") == '{"text":"b"}'
        assert [t.name for t in manager.get_tools_for_server("api")] == ["mcp__api__echo"]
        assert manager.get_tools_for_server("nobody") == []
        assert manager.available_tool_count == 3
        assert manager.qualified_tools("fs") == ["fs.echo", "fs.write_file"]
        assert await manager.execute_tool("mcp__fs__echo", {"text": "x"}) == '{"text":"x"}'
        connection = manager.get_connection("fs")
        assert isinstance(connection, MCPServerConnection) and connection.connected and connection.error is None
        assert connection.config.name == "fs" and set(connection.tools) == {"mcp__fs__echo", "mcp__fs__write_file"}
        assert connection.resources[0]["uri"] == "fs://r"
        assert manager.get_connection("nobody") is None
    finally:
        await manager.disconnect_all()


async def test_execute_errors_are_value_and_permission_errors() -> None:
    caps = CapabilitySet()
    caps.grant("mcp:fs:echo", "execute")
    manager = MCPClientManager([fake_server("fs", [ECHO_TOOL, WRITE_TOOL])], capability_set=caps)
    async with manager:
        with pytest.raises(PermissionError):
            await manager.execute_tool("mcp__fs__write_file", {})
        with pytest.raises(PermissionDeniedError):
            await manager.execute_tool("mcp__fs__write_file", {})
        for name in ("fs.echo", "mcp__fs", "mcp__nobody__echo", "mcp__fs__nothing"):
            with pytest.raises(ValueError):
                await manager.execute_tool(name, {})
        with pytest.raises(RoutingError):  # and the mcphost error it stands for
            await manager.execute_tool("mcp__nobody__echo", {})
        assert [t.name for t in manager.get_tools()] == ["mcp__fs__echo"]  # denied tools are not offered
        await manager.disconnect_server("fs")
        with pytest.raises(ToolLookupError) as info:
            await manager.execute_tool("mcp__fs__echo", {"text": "x"})
        assert isinstance(info.value, ValueError) and isinstance(info.value, ServerUnavailableError)


async def test_connect_server_before_and_after_connect_all() -> None:
    manager = MCPClientManager([])
    try:
        assert await manager.connect_server(fake_server("one")) is True
        assert manager.connected_servers == ["one"]
        broken = MCPServerConfig(name="broken", transport="stdio", command="no-such-command-here")
        assert await manager.connect_server(broken) is False
        record = manager.get_connection("broken")
        assert record is not None and record.connected is False and "not found" in str(record.error)
        await manager.disconnect_server("one")
        record = manager.get_connection("one")
        assert record is not None and not record.connected and record.tools == {}
        assert await manager.connect_server(fake_server("one")) is True  # connected again
        with pytest.raises(ValueError):
            await manager.disconnect_server("nobody")
    finally:
        await manager.disconnect_all()
    assert manager.get_connection("one") is None and manager.connected_servers == []  # the state is cleared
    assert await manager.connect_all() == {"one": True, "broken": False}  # the configs stay
    await manager.disconnect_all()


async def test_register_tools_without_a_server_then_with_one() -> None:
    manager = MCPClientManager([], retry=NO_RETRY)
    manager.register_tools("custom", [
        {
            "name": "greet",
            "description": "Say hello",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "description": "Who to greet"},
                },
            },
        },
    ])
    [greet] = manager.get_tools()
    assert (greet.name, greet.description) == ("mcp__custom__greet", "Say hello")
    record = manager.get_connection("custom")
    assert record is not None and not record.connected and list(record.tools) == ["mcp__custom__greet"]
    with pytest.raises(ValueError):
        await manager.execute_tool("mcp__custom__greet", {"name": "x"})
    with pytest.raises(UsageError):
        manager.register_tools("custom", [{"description": "no name"}])
    await manager.disconnect_all()


def test_configs_are_checked() -> None:
    with pytest.raises(TypeError):
        MCPClientManager(configs=[MCPServerConfig(name="x")], capability_sett=None)  # type: ignore[call-arg]
    with pytest.raises(UsageError, match="twice: a"):
        MCPClientManager([MCPServerConfig(name="a", command="x"), MCPServerConfig(name="a", command="y")])
    with pytest.raises(UsageError, match="MCPServerConfig"):
        MCPClientManager([{"name": "a"}])  # type: ignore[list-item]
    with pytest.raises(UsageError, match="unknown transport 'pigeon'"):
        MCPServerConfig(name="a", transport="pigeon").to_entry()
    assert MCPServerConfig(name="api", transport="sse", url="https://mcp.example.com/sse").to_entry() == {
        "type": "sse", "url": "https://mcp.example.com/sse"}
    assert MCPServerConfig(name="fs", command=sys.executable).to_entry()["type"] == "stdio"

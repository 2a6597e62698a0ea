"""Tools from elsewhere: register_tools() serves the application's functions as a server of
the host, listed, validated, routed, permitted and timed like MCP tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost, PermissionDeniedError, Permissions, UsageError, ValidationError

ADD = {"name": "add", "description": "Add two integers",
       "inputSchema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]}}
WEATHER = {"name": "weather", "inputSchema": {"type": "object"}}
BROKEN = {"name": "broken"}


async def handler(name: str, arguments: dict[str, Any]) -> Any:
    if name == "add":
        return {"sum": arguments["a"] + arguments["b"]}
    if name == "weather":
        await asyncio.sleep(0)
        return "sunny"
    raise RuntimeError("the database is down")


async def test_local_tools_are_tools_like_any_other() -> None:
    host = MCPHost(fake_config(remote=fake({"tools": [ECHO_TOOL]})))
    await host.register_tools("local", [ADD, WEATHER, BROKEN], handler)  # before initialize
    async with host:
        listed = host.get_tools()
        assert [t["name"] for t in listed["local"]["tools"]] == ["add", "weather", "broken"]
        assert listed["local"]["state"] == "ready" and listed["remote"]["state"] == "ready"
        result = await host.call_tool("local.add", {"a": 2, "b": 3})
        assert result["structuredContent"] == {"sum": 5} and result["content"][0]["text"] == '{"sum":5}'
        assert (await host.call_tool("local.weather", {}))["content"] == [{"type": "text", "text": "sunny"}]
        failed = await host.call_tool("local.broken", {})
        assert failed["isError"] is True and "the database is down" in failed["content"][0]["text"]
        with pytest.raises(ValidationError):
            await host.call_tool("local.add", {"a": "two", "b": 3})
        assert host.get_metrics()["local"]["tools"]["add"]["calls"] == 1
        # Formatted and dispatched like any server's tools.
        openai = {t["function"]["name"]: t["function"] for t in host.tools_for("openai")}
        assert openai["local__add"]["parameters"]["required"] == ADD["inputSchema"]["required"]
        assert {t["name"] for t in host.tools_for("anthropic")} >= {"local__add", "remote__echo"}
        reply = await host.dispatch({"functionCall": {"name": "local__add", "args": {"a": 1, "b": 2}}})
        assert '"sum":3' in json.dumps(reply["functionResponse"]["response"], separators=(",", ":"))
        # Registered on a running host: started at once; names are checked.
        await host.register_tools("more", [WEATHER], lambda name, args: "cloudy")
        assert (await host.call_tool("more.weather", {}))["content"][0]["text"] == "cloudy"
        for bad in ("local", "remote", "no.dots", ""):
            with pytest.raises(UsageError):
                await host.register_tools(bad, [WEATHER], handler)
        with pytest.raises(UsageError, match="twice"):
            await host.register_tools("dup", [WEATHER, WEATHER], handler)
        with pytest.raises(UsageError, match="handler must be callable"):
            await host.register_tools("nohandler", [WEATHER], None)  # type: ignore[arg-type]
        # Permissions apply to them as to any tool.
        host.permissions = Permissions().grant("mcp:local:weather")
        with pytest.raises(PermissionDeniedError):
            await host.call_tool("local.add", {"a": 1, "b": 1})
    assert host.get_tools()["local"]["state"] == "stopped"

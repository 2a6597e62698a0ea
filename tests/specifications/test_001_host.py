"""Specification 001, the MCP host: its public API (TR12.1) called as written, and a
configuration of its schema (TR8.1). Its requirements FR*/TR* are tested where they live;
docs/specifications.md lists each with its test."""

from __future__ import annotations

import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL

from mcphost import MCPHost, MCPHostError, RoutingError
from mcphost.testing import server_config

PROMPT = {"name": "greet", "arguments": [{"name": "who"}], "messages": [{"role": "user", "content": "Hi {who}"}]}
RESOURCE = {"uri": "mem://a", "name": "a", "text": "alpha"}


def tr8_config(tmp_path: Path) -> Path:
    # TR8.1's schema: "servers", each with a "type" and a "command" (required), args, env,
    # timeout, dependencies.
    fake = server_config({"tools": [ECHO_TOOL], "prompts": [PROMPT], "resources": [RESOURCE]})
    other = server_config({"tools": [ECHO_TOOL]})
    servers = {"a": {"type": "stdio", "command": fake["command"], "args": fake["args"], "env": fake["env"],
                     "timeout": 30, "dependencies": []},
               "b": {"type": "stdio", "command": other["command"], "args": other["args"], "env": other["env"],
                     "dependencies": ["a"]}}
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"servers": servers}))
    return path


async def test_the_public_api_as_tr12_writes_it(tmp_path: Path) -> None:
    host = MCPHost()
    seen: list[Any] = []
    assert host.register_callback(lambda server, method, params: seen.append(method) or {}) is None
    await host.initialize(str(tr8_config(tmp_path)))  # initialize(self, config_path: str)
    try:
        tools = host.get_tools()
        assert isinstance(tools, dict) and set(tools) == {"a", "b"}
        assert {"tools", "prompts", "resources"} <= set(tools["a"])
        result = await host.call_tool("a.echo", {"text": "x"})  # call_tool(tool_name, parameters) -> dict
        assert isinstance(result, dict) and result["content"][0]["text"] == '{"text":"x"}'
        prompt = await host.get_prompt("a.greet", {"who": "Ada"})  # get_prompt(prompt_name, arguments=None)
        assert isinstance(prompt, dict) and prompt["messages"]
        resource = await host.get_resource("mem://a")  # get_resource(resource_uri) -> dict
        assert isinstance(resource, dict) and resource["contents"][0]["text"] == "alpha"
        metrics = host.get_metrics()
        assert isinstance(metrics, dict) and metrics["a"]["requests"] >= 3
        with pytest.raises(MCPHostError):  # TR12.3: errors are raised
            await host.call_tool("nobody.echo", {})
        with pytest.raises(RoutingError):
            await host.get_resource("mem://nothing")
    finally:
        assert await host.shutdown() is None


def test_async_and_sync_as_tr12_2_says() -> None:
    for name in ("initialize", "shutdown", "call_tool", "get_prompt", "get_resource"):
        assert inspect.iscoroutinefunction(getattr(MCPHost, name)), name
    for name in ("get_tools", "get_metrics", "register_callback"):
        assert not inspect.iscoroutinefunction(getattr(MCPHost, name)), name
    parameters = inspect.signature(MCPHost.call_tool).parameters
    assert list(parameters)[:3] == ["self", "name", "params"]  # positional, as the document calls it

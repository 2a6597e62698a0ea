"""Routing over the fake server: qualified names, URIs, tool filters, what an unknown name
says, and how a routed call's result and the server's error come back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost
from mcphost.errors import PermissionDeniedError, RoutingError, ServerError

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


async def test_routing_errors_list_what_exists() -> None:
    async with MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]}))) as host:
        with pytest.raises(RoutingError, match=r"unknown server 'zz' \(servers: a\)"):
            await host.call_tool("zz.echo", {})
        with pytest.raises(RoutingError, match=r"unknown tool 'nope' \(tools of a: echo\)"):
            await host.call_tool("a.nope", {})
        with pytest.raises(RoutingError, match="must be qualified"):
            await host.call_tool("echo", {})
        with pytest.raises(RoutingError, match="unknown prompt"):
            await host.get_prompt("a.nothing")
        with pytest.raises(RoutingError, match="no server offers resource"):
            await host.get_resource("mem://nowhere")


async def test_ambiguous_resource_needs_server_argument() -> None:
    res = {"resources": [{"uri": "mem://same", "name": "x", "text": "from-{n}"}]}
    cfg = fake_config(a=fake(res), b=fake(res))
    async with MCPHost(cfg) as host:
        with pytest.raises(RoutingError, match="several servers"):
            await host.get_resource("mem://same")
        out = await host.get_resource("mem://same", server="b")
        assert out["contents"][0]["uri"] == "mem://same"


async def test_tool_filter_denies(tmp_path: Path) -> None:
    server = fake({"tools": [ECHO_TOOL, tool("secret")]})
    cfg = {"mcpServers": {"a": {**server, "tools": {"deny": ["sec*"]}}}}
    async with MCPHost(cfg) as host:
        assert [t["name"] for t in host.get_tools()["a"]["tools"]] == ["echo"]
        with pytest.raises(PermissionDeniedError):
            await host.call_tool("a.secret", {})


async def test_is_error_is_a_result_and_server_error_raises() -> None:
    cfg = fake_config(a=fake({"tools": [tool("bad", isError="it broke"), tool(
        "rpc", error={"code": -32000, "message": "nope", "data": {"x": 1}})]}))
    async with MCPHost(cfg) as host:
        result = await host.call_tool("a.bad", {})
        assert result["isError"] is True
        assert result["content"][0]["text"] == "it broke"
        with pytest.raises(ServerError) as info:
            await host.call_tool("a.rpc", {})
        assert info.value.code == -32000
        assert info.value.data == {"x": 1}
        assert info.value.server == "a"
        assert host.get_metrics()["a"]["tools"]["bad"]["isError"] == 1

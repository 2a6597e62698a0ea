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


async def test_local_tools_are_served_by_the_role_neutral_peer_over_the_factory() -> None:
    # No second hand-written JSON-RPC server: the factory connects type "local" to the
    # server's serve(), and a Peer answers in the server role (the same Peer as the client).
    from mcphost.client.session import ClientSession
    from mcphost.config import ServerConfig
    from mcphost.errors import ConfigurationError, ServerError
    from mcphost.host.local import LocalServer
    from mcphost.protocol.versions import SUPPORTED_VERSIONS
    from mcphost.rpc.peer import Peer
    from mcphost.transports.factory import make_transport

    local = LocalServer("mine", [ADD], handler)
    config = ServerConfig(name="mine", type="local")
    transport = make_transport(config, environ={}, max_message_size=1 << 20, in_process={"mine": local.serve})
    assert isinstance(local.peer, Peer)
    await transport.start()
    for offered in (SUPPORTED_VERSIONS[-1], SUPPORTED_VERSIONS[0]):
        session = ClientSession("mine", transport, client_info={"name": "t", "version": "1"},
                                versions=(offered, *SUPPORTED_VERSIONS))
        await session.open()
        assert session.protocol_version == offered  # answered with the version asked for
        assert (await session.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))[
            "structuredContent"] == {"sum": 3}
        with pytest.raises(ServerError, match="not served by local tools") as info:
            await session.request("prompts/list", {})
        assert info.value.code == -32601
        await session.aclose(1)
        transport = make_transport(config, environ={}, max_message_size=1 << 20, in_process={"mine": local.serve})
        await transport.start()
    await transport.aclose(1)
    with pytest.raises(ConfigurationError, match="register_tools"):
        make_transport(config, environ={}, max_message_size=1 << 20)

"""The gateway in the 2026-07-28 era: mcphost's own client (``protocol`` "modern" and "auto")
lists and calls the aggregated tools, gets progress, and answers a downstream server's
sampling request relayed as a multi-round-trip ``inputRequests``; over stdio too."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_gateway_inprocess import two_servers
from test_gateway_stdio import serve_entry

from mcphost import MCPHost
from mcphost.errors import UsageError
from mcphost.gateway.app import Gateway
from mcphost.transports.memory import memory_pair


def sampled(_server: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "model": "m", "content": {"type": "text", "text": "sampled by the modern client"}}


@contextlib.asynccontextmanager
async def modern_client(gateway: Gateway, protocol: str) -> AsyncIterator[MCPHost]:
    ours, theirs = memory_pair("gateway")
    client = MCPHost({"mcpServers": {"gw": {"command": "unused", "protocol": protocol}}},
                     transport_factory=lambda _cfg: ours, handle_signals=False)
    client.on_sampling(sampled)
    gateway.connect(theirs)
    async with client:
        yield client


@pytest.mark.parametrize("protocol", ["modern", "auto"])
async def test_mcphosts_own_client_in_the_modern_era(protocol: str) -> None:
    async with Gateway(two_servers(), handle_signals=False, coalesce=0.01) as gateway, \
            modern_client(gateway, protocol) as client:
        info = client.get_tools("gw")["gw"]
        assert (info["era"], info["protocolVersion"]) == ("modern", "2026-07-28")
        names = [t["name"] for t in info["tools"]]
        assert "a.ask" in names and "b.echo" in names
        echoed = await client.call_tool("gw.b.echo", {"text": "hi"})
        assert not echoed.get("isError")
        seen: list[Any] = []
        await client.call_tool("gw.a.count", {}, progress=seen.append)
        assert [p["progress"] for p in seen] == [1, 2, 3]
        asked = await client.call_tool("gw.a.ask", {})
        assert "sampled by the modern client" in asked["content"][0]["text"]


async def test_a_client_without_sampling_gets_32021_for_a_relayed_request() -> None:
    async with Gateway(two_servers(), handle_signals=False, coalesce=0.01) as gateway:
        ours, theirs = memory_pair("gateway")
        gateway.connect(theirs)
        async with MCPHost({"mcpServers": {"gw": {"command": "unused", "protocol": "modern"}}},
                           transport_factory=lambda _cfg: ours, handle_signals=False) as client:
            # The gateway answers -32021 naming the capability; the client says so in its own words.
            with pytest.raises(UsageError) as failed:
                await client.call_tool("gw.a.ask", {})
            assert "capabilities 'sampling'" in failed.value.message


async def test_mcphosts_modern_client_over_stdio(tmp_path: Path) -> None:
    entry = {**serve_entry(tmp_path), "protocol": "modern"}
    client = MCPHost({"mcpServers": {"gw": entry}}, handle_signals=False)
    client.on_sampling(sampled)
    async with client:
        info = client.get_tools("gw")["gw"]
        assert info["era"] == "modern"
        asked = await client.call_tool("gw.a.ask", {})
        assert "sampled by the modern client" in asked["content"][0]["text"]


async def test_list_changed_comes_on_the_listen_stream() -> None:
    async with Gateway(two_servers(), handle_signals=False, coalesce=0.01) as gateway, \
            modern_client(gateway, "modern") as client:
        changed = asyncio.Event()
        client.on_event(lambda e: changed.set() if e["type"] == "capabilities_changed" else None)
        await client.call_tool("gw.a.grow", {})
        await asyncio.wait_for(changed.wait(), 10)
        session, = gateway.sessions
        assert session.modern.listening and not session.initialized  # it came on the listen stream
        names = [t["name"] for t in client.get_tools()["gw"]["tools"]]
        assert "a.new" in names and "a.count" not in names

"""Health from use: how a server that goes away is noticed, and what callers get then."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, group_alive, wait_for

from mcphost import MCPHost, ServerUnavailableError


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, "behavior": behavior}


async def test_leader_exit_is_noticed_while_a_grandchild_holds_stdout(no_leftovers: None) -> None:
    # The server's child inherited stdout: no EOF comes when the server exits. The exit
    # itself must fail the calls in flight, long before their 60 s timeout.
    cfg = fake_config(
        a=fake({"tools": [tool("slow", delay=30), tool("boom")]}, exitOnCall=3, spawnChild=True),
        b=fake({"tools": [ECHO_TOOL]}),
    )
    events: list[dict[str, Any]] = []
    host = MCPHost(cfg, request_timeout=60, shutdown_timeout=3)
    host.on_event(events.append)
    async with host:
        pid = host.servers["a"].pid()
        slow = asyncio.ensure_future(host.call_tool("a.slow", {}))
        slow2 = asyncio.ensure_future(host.call_tool("a.slow", {}))
        with pytest.raises(ServerUnavailableError) as info:
            await asyncio.wait_for(host.call_tool("a.boom", {}), 15)
        assert info.value.exit_code == 3
        for fut in (slow, slow2):
            with pytest.raises(ServerUnavailableError, match="exited with code 3"):
                await asyncio.wait_for(fut, 15)
        assert host.get_tools()["a"]["state"] == "unavailable"
        assert await wait_for(lambda: any(e["type"] == "server_exited" for e in events))
        with pytest.raises(ServerUnavailableError, match="exited with code 3"):
            await host.call_tool("a.boom", {})  # at once, naming why
        assert (await host.call_tool("b.echo", {}))["content"]  # the other server serves on
    assert pid is not None and not group_alive(pid)  # the grandchild went with shutdown

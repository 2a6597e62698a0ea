"""Health from use: how a server that goes away is noticed, and what callers get then."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, group_alive, wait_for

from mcphost import MCPHost, ServerUnavailableError, TimeoutError


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
        session = host.servers["a"].session
        assert session is not None
        assert await wait_for(lambda: session.pending == 2)  # both out: boom is the 3rd call
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


async def test_a_timeout_makes_the_server_unavailable_until_restarted(no_leftovers: None) -> None:
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True), ECHO_TOOL]}), b=fake({"tools": [ECHO_TOOL]}))
    events: list[dict[str, Any]] = []
    host = MCPHost(cfg, shutdown_timeout=3)
    host.on_event(events.append)
    async with host:
        pid = host.servers["a"].pid()
        other = asyncio.ensure_future(host.call_tool("a.hang", {}))  # pending when it happens
        with pytest.raises(TimeoutError):
            await host.call_tool("a.hang", {}, timeout=0.2)
        # FR6.3, FR6.6: unavailable; calls fail at once naming why; FR6.7: nothing offered.
        assert host.get_tools()["a"]["state"] == "unavailable"
        with pytest.raises(ServerUnavailableError, match="timed out .*considered unavailable"):
            await host.call_tool("a.echo", {})
        with pytest.raises(ServerUnavailableError, match="considered unavailable"):
            await asyncio.wait_for(other, 10)
        info = host.get_tools()["a"]
        assert info["tools"] == [] and "considered unavailable" in (info["error"] or "")
        assert {t["name"] for t in host.get_tools(include_unavailable=True)["a"]["tools"]} == {"hang", "echo"}
        assert list(host.get_tools(server="b")) == ["b"]
        assert [e["data"] for e in events if e["type"] == "server_unavailable"]
        # Its process is stopped (a server that does not answer holds resources).
        assert await wait_for(lambda: pid is not None and not group_alive(pid))
        assert (await host.call_tool("b.echo", {}))["content"]  # the other one serves on
        # FR6.5: nothing restarts it by itself; restart_server does.
        await host.restart_server("a")
        assert host.get_tools()["a"]["state"] == "ready"
        assert (await host.call_tool("a.echo", {}))["content"]


async def test_the_timeout_count_is_configurable() -> None:
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True), ECHO_TOOL]}))
    async with MCPHost(cfg, unavailable_after_timeouts=2) as host:
        with pytest.raises(TimeoutError):
            await host.call_tool("a.hang", {}, timeout=0.1)
        assert host.get_tools()["a"]["state"] == "ready"
        with pytest.raises(TimeoutError):
            await host.call_tool("a.hang", {}, timeout=0.1)
        assert host.get_tools()["a"]["state"] == "unavailable"
    async with MCPHost(cfg, unavailable_after_timeouts=0) as host:
        for _ in range(3):
            with pytest.raises(TimeoutError):
                await host.call_tool("a.hang", {}, timeout=0.1)
        assert host.get_tools()["a"]["state"] == "ready"

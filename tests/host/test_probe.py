"""A remote server made unavailable by a time-out (FR6.3) is probed with ``ping`` on a
backoff and returns to ready when it answers; nothing restarts it (FR6.5). Against the
hostile server of ``tests/hostile_http.py``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers import HostEvents, clocked, wait_for
from hostile_http import HostileServer

from mcphost import MCPHost, ServerUnavailableError, TimeoutError
from mcphost.host.recovery import PROBE_BACKOFF, PROBES
from mcphost.policy import NO_RETRY
from mcphost.protocol.lifecycle import ServerState


def config(url: str, **extra: Any) -> dict[str, Any]:
    return {"mcpServers": {"h": {"url": url, "timeout": 10, "requestTimeout": 0.3, **extra}}}


async def test_a_server_that_timed_out_once_answers_a_ping_and_is_ready_again() -> None:
    # Before: one time-out took the server out of service until a restart, its connection
    # closed. Now: unavailable (FR6.3), pinged after 1 s, ready again with an event.
    async with HostileServer() as server:
        host = MCPHost(config(server.url), retry=NO_RETRY)
        events = HostEvents(host)
        async with host:
            delays = clocked(host)
            with pytest.raises(TimeoutError):
                await host.call_tool("h.hang", {})
            assert await wait_for(lambda: any(e["type"] == "server_recovered" for e in events))
            assert host.servers["h"].state is ServerState.READY
            assert delays[:1] == [PROBE_BACKOFF.initial]
            moves = [(e["data"]["from"], e["data"]["to"]) for e in events if e["type"] == "state_changed"]
            assert moves[-2:] == [("ready", "unavailable"), ("unavailable", "ready")]
            assert (await host.call_tool("h.echo", {"n": 1}))["content"][0]["text"] == '{"n": 1}'
            assert sum(1 for m in server.posts if m.get("method") == "initialize") == 1  # not restarted


async def test_a_server_that_never_answers_is_probed_a_bounded_number_of_times_then_closed() -> None:
    async with HostileServer() as server:
        server.answer_pings = False
        host = MCPHost(config(server.url), retry=NO_RETRY)
        async with host:
            delays = clocked(host)
            with pytest.raises(TimeoutError):
                await host.call_tool("h.hang", {})
            assert await wait_for(lambda: host.servers["h"].session is None, 30)
            assert host.servers["h"].state is ServerState.UNAVAILABLE
            assert delays == [PROBE_BACKOFF.delay(n) for n in range(1, PROBES + 1)]
            assert sum(1 for m in server.posts if m.get("method") == "ping") == PROBES
            with pytest.raises(ServerUnavailableError, match="timed out"):
                await host.call_tool("h.echo", {})


async def test_a_server_that_goes_away_while_probed_is_closed_at_once() -> None:
    server = HostileServer()
    await server.__aenter__()
    host = MCPHost(config(server.url), retry=NO_RETRY)
    async with host:
        delays = clocked(host)
        gate = asyncio.Event()

        async def sleep(seconds: float) -> None:  # the first probe waits until the server is gone
            delays.append(seconds)
            await gate.wait()

        host.supervisor.sleep = sleep
        with pytest.raises(TimeoutError):
            await host.call_tool("h.hang", {})
        await server.__aexit__(None, None, None)
        gate.set()
        assert await wait_for(lambda: host.servers["h"].session is None)
        assert host.servers["h"].state is ServerState.UNAVAILABLE
        assert len(delays) == 1  # one probe found no connection: no more waits


async def test_with_a_restart_policy_the_server_is_restarted_not_probed() -> None:
    async with HostileServer() as server:
        host = MCPHost(config(server.url, restart={"policy": "on-failure", "maxAttempts": 1}), retry=NO_RETRY)
        events = HostEvents(host)
        async with host:
            clocked(host)
            with pytest.raises(TimeoutError):
                await host.call_tool("h.hang", {})
            assert await wait_for(lambda: sum(1 for m in server.posts if m.get("method") == "initialize") == 2)
            assert await wait_for(lambda: host.servers["h"].state is ServerState.READY)
            assert not any(e["type"] == "server_recovered" for e in events)
            assert not any(m.get("method") == "ping" for m in server.posts)


# -- keep-alive (off by default: FR6.8) ------------------------------------------------------


async def test_with_keepalive_a_dead_idle_server_without_a_get_stream_is_noticed() -> None:
    # No GET stream to lose (the server answers GET with 405). Before: still ready until a
    # call failed. With keepalive=0.2 the idle server is pinged; once it is gone the ping
    # finds no connection: unavailable, and the restart policy runs.
    server = HostileServer()
    await server.__aenter__()
    cfg = config(server.url, restart={"policy": "on-failure", "maxAttempts": 1, "backoff": {"initial": 60}})
    host = MCPHost(cfg, retry=NO_RETRY, keepalive=0.2)
    events = HostEvents(host)
    async with host:
        assert await wait_for(lambda: any(m.get("method") == "ping" for m in server.posts))
        loop = asyncio.get_running_loop()
        await server.__aexit__(None, None, None)
        died = loop.time()
        assert await wait_for(lambda: host.servers["h"].state is ServerState.UNAVAILABLE)
        assert loop.time() - died < 5  # two intervals of silence (0.4 s) and a refused connection
        assert await wait_for(lambda: any(e["type"] == "server_restarting" for e in events))


async def test_keepalive_pings_only_an_idle_server_and_none_by_default() -> None:
    async with HostileServer() as server, MCPHost(config(server.url), retry=NO_RETRY, keepalive=0.5) as host:
        loop = asyncio.get_running_loop()
        end = loop.time() + 1.2
        while loop.time() < end:  # busy: something comes back far more often than every 0.5 s
            await host.call_tool("h.echo", {})
            await asyncio.sleep(0.02)
        assert not any(m.get("method") == "ping" for m in server.posts)
        assert await wait_for(lambda: any(m.get("method") == "ping" for m in server.posts))
    async with HostileServer() as server, MCPHost(config(server.url), retry=NO_RETRY) as host:
        assert host.supervisor.keepalive == 0
        assert not host.supervisor.recovery.alive


async def test_keepalive_must_be_seconds() -> None:
    from mcphost import UsageError

    with pytest.raises(UsageError, match="keepalive"):
        MCPHost({"mcpServers": {}}, keepalive=-1)

"""Streamable HTTP against the hostile server of ``tests/hostile_http.py`` (issue 21): what
a remote server controls (connections, reconnects, sessions) stays bounded, and what the
host gives up is said, never silent."""

from __future__ import annotations

import asyncio
import itertools
import math
import os
from typing import Any

import pytest
from helpers import HostEvents, wait_for
from hostile_http import SSE_HEAD, HostileServer, chunk, ping, sse_event

from mcphost import MCPHost, ServerStartupError
from mcphost.client.renewal import RenewalPolicy
from mcphost.policy import NO_RETRY, Backoff
from mcphost.protocol.lifecycle import ServerState
from mcphost.transports.http_pool import DEFAULT_MAX_CONNECTIONS
from mcphost.transports.http_stream import stale_session


def config(url: str) -> dict[str, Any]:
    return {"mcpServers": {"h": {"url": url, "timeout": 10}}}


def descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


async def test_answers_the_server_never_reads_stay_within_the_connection_cap() -> None:
    # The GET stream carries 300 pings; the server never reads a POSTed answer. Before:
    # one connection per answer (301 at once, past any descriptor limit of 256); now the
    # answers wait for the one connection left for them, and calls still go.
    pings = 300

    async def flood(server: HostileServer, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(SSE_HEAD)
        for n in range(pings):
            writer.write(sse_event(ping(n)))
        await writer.drain()
        await asyncio.Event().wait()
        return False

    async with HostileServer(read_answers=False, on_get=flood) as server:
        host = MCPHost(config(server.url), retry=NO_RETRY)
        async with host:
            before = descriptors()
            assert await wait_for(lambda: host.get_metrics()["h"]["transport"]["messages_out"] >= pings + 2)
            for n in range(20):  # calls go on the connections left to requests
                result = await host.call_tool("h.echo", {"n": n})
                assert result["content"][0]["text"] == f'{{"n": {n}}}'
            assert server.answers >= 1
            assert server.peak <= DEFAULT_MAX_CONNECTIONS  # before: one per answer (103 when first counted)
            # Each connection is two descriptors here (both ends in this process).
            assert descriptors() - before <= 2 * DEFAULT_MAX_CONNECTIONS


def stats(host: MCPHost) -> dict[str, Any]:
    return dict(host.get_metrics()["h"]["transport"])


async def test_a_get_stream_that_says_retry_0_and_closes_is_reopened_with_backoff(
        caplog: pytest.LogCaptureFixture) -> None:
    # Each GET stream sends one event with ``retry: 0`` and closes. Before: reopened at once,
    # forever (the event reset the failure count): thousands of GETs a second. Now at least
    # 0.5 s apart, doubling: 0, 0.5, 1.5, 3.5 s... and said once it keeps failing.
    async def one_event(server: HostileServer, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(SSE_HEAD + chunk(b"id: %d\nretry: 0\ndata: \n\n" % number) + b"0\r\n\r\n")
        await writer.drain()
        return False

    caplog.set_level("WARNING", logger="mcphost")
    async with HostileServer(on_get=one_event) as server:
        host = MCPHost(config(server.url), retry=NO_RETRY)
        async with host:
            start = asyncio.get_running_loop().time()
            assert await wait_for(lambda: stats(host)["get_stream"] == "retrying")
            assert await wait_for(lambda: server.gets >= 4)
            assert (await host.call_tool("h.echo", {}))["content"][0]["text"] == "{}"
            window = asyncio.get_running_loop().time() - start
            gets = [t for t in server.get_times if t - start <= window]
            # 0, 0.5, 1.5, 3.5 s: at most 2 + log2(window / 0.5) tries in the window.
            assert len(gets) <= 2 + max(0.0, math.log2(window / 0.5)) + 1
            gaps = [b - a for a, b in itertools.pairwise(server.get_times)]
            # Each wait at least the one scheduled (timers are late, never early): 0.5, 1, 2 s.
            assert all(gap >= 0.95 * 0.5 * 2 ** n for n, gap in enumerate(gaps[:3]))
    said = [r.getMessage() for r in caplog.records if "GET stream failed" in r.getMessage()]
    assert len(said) == 1 and "not received until it opens again" in said[0]


async def test_the_get_stream_is_reopened_after_an_outage_and_notifications_come_again(
        caplog: pytest.LogCaptureFixture) -> None:
    # The first 3 GET streams end at once (an outage); then the server is back. Before: the
    # stream was given up for good after 3 tries, without a word, and every later
    # notification was lost. Now it is said, tried again, and the notification comes.
    async def outage(server: HostileServer, writer: asyncio.StreamWriter, number: int) -> bool:
        if number <= 3:
            writer.write(SSE_HEAD + b"0\r\n\r\n")
            return False
        writer.write(SSE_HEAD + sse_event({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
        await writer.drain()
        await asyncio.Event().wait()
        return False

    caplog.set_level("WARNING", logger="mcphost")
    async with HostileServer(on_get=outage) as server:
        host = MCPHost(config(server.url), retry=NO_RETRY)
        events = HostEvents(host)
        async with host:
            assert await wait_for(lambda: stats(host)["get_stream"] == "retrying")
            assert any("GET stream failed 3 tries" in r.getMessage() for r in caplog.records)
            # The application is told, not only the log: server notifications may be lost.
            lost = await events.until(lambda e: e["type"] == "notifications_interrupted")
            assert lost["server"] == "h" and "GET stream failed 3 tries in a row" in lost["data"]
            assert host.get_tools()["h"]["state"] == "ready"  # calls still work

            def listed() -> int:
                return sum(1 for m in server.posts if m.get("method") == "tools/list")

            loop = asyncio.get_running_loop()
            end = loop.time() + 10
            while server.gets < 4 and loop.time() < end:  # calls go on; one of them (or the backoff) reopens it
                await host.call_tool("h.echo", {})
                await asyncio.sleep(0.05)
            assert await wait_for(lambda: listed() >= 2)  # the notification came, and was acted on
            assert stats(host)["get_stream"] == "open"
            assert server.gets == 4
            back = await events.until(lambda e: e["type"] == "notifications_restored")
            assert back == {"type": "notifications_restored", "server": "h", "data": "the GET stream is open again"}
    assert [e["type"] for e in events if e["type"].startswith("notifications_")] == [
        "notifications_interrupted", "notifications_restored"]
    assert any("the GET stream is open again" in r.getMessage() for r in caplog.records)


async def test_a_restarted_server_that_answers_the_stale_session_with_400_gets_a_new_one() -> None:
    # server-everything answers an unknown Mcp-Session-Id with 400 "No valid session ID
    # provided" (the spec says 404). Before: every later call failed with HTTP 400 and the
    # server stayed ready. Now the session is renewed, as after a 404.
    async with HostileServer(stale_status=400) as server:
        host = MCPHost(config(server.url), retry=NO_RETRY)
        async with host:
            assert (await host.call_tool("h.echo", {"n": 1}))["content"][0]["text"] == '{"n": 1}'
            for n in range(3):
                server.restart()
                assert (await host.call_tool("h.echo", {"n": n}))["content"][0]["text"] == f'{{"n": {n}}}'
            assert host.servers["h"].state is ServerState.READY
            assert sum(1 for m in server.posts if m.get("method") == "initialize") == 4


async def test_a_server_that_answers_every_session_with_400_is_given_up_within_the_renewal_bound() -> None:
    # It forgets each session at once: renewing is bounded as after 404s (5 in a row, backing
    # off; shorter waits here), then the server fails with the reason; never stuck with every
    # call failing.
    async with HostileServer(stale_status=400, keep_sessions=False) as server:
        host = MCPHost(config(server.url), retry=NO_RETRY)
        host.supervisor.connector.renewal = RenewalPolicy(backoff=Backoff(initial=0.01, maximum=0.05, jitter=0.0),
                                                min_interval=0.0)
        with pytest.raises(ServerStartupError, match="renewed 5 time"):
            await host.initialize()
        await host.shutdown()
        assert sum(1 for m in server.posts if m.get("method") == "initialize") == 6


async def test_a_400_that_refuses_the_request_itself_is_not_a_lost_session() -> None:
    async with HostileServer(stale_status=400) as server:
        host = MCPHost(config(server.url), retry=NO_RETRY)
        async with host:
            assert stale_session(b'{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad session arg"}}', 7) is False
            assert stale_session(b"Bad Request: invalid JSON", 7) is False
            assert stale_session(b'{"jsonrpc":"2.0","id":null,"error":{"message":"No valid session ID"}}', 7) is True
            assert host.servers["h"].state is ServerState.READY


async def test_a_dead_idle_server_with_a_get_stream_is_noticed_and_the_restart_policy_runs() -> None:
    # Nothing is called: the server dies with its GET stream open. Before: still ready 90 s
    # later (the stream was tried again and again, then given up). Now the failed reopening
    # makes the server unavailable within the stream's retry, and the restart policy runs.
    async def hold(server: HostileServer, writer: asyncio.StreamWriter, number: int) -> bool:
        writer.write(SSE_HEAD + sse_event({"jsonrpc": "2.0", "method": "notifications/message",
                                           "params": {"level": "info", "data": "x"}}, "1", retry=500))
        await writer.drain()
        await asyncio.Event().wait()
        return False

    server = HostileServer(on_get=hold)
    await server.__aenter__()
    cfg = config(server.url)
    cfg["mcpServers"]["h"]["restart"] = {"policy": "on-failure", "maxAttempts": 1, "backoff": {"initial": 60}}
    host = MCPHost(cfg, retry=NO_RETRY)
    events: list[dict[str, Any]] = []
    host.on_event(events.append)
    async with host:
        assert await wait_for(lambda: server.gets == 1)
        loop = asyncio.get_running_loop()
        await server.__aexit__(None, None, None)
        died = loop.time()
        assert await wait_for(lambda: host.servers["h"].state is ServerState.UNAVAILABLE)
        assert loop.time() - died < 10  # 3 tries that find no connection: 0.5 + 0.5 + 1 s
        assert await wait_for(lambda: any(e["type"] == "server_restarting" for e in events))
        assert "cannot connect" in str(host.servers["h"].error)

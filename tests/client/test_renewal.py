"""A session the server dropped (Streamable HTTP, 404) is renewed by the client session, not
the transport: the same handshake again, the held calls succeed, the host re-applies what
the old session was told (log level, subscriptions) and re-lists; renewals are bounded."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from helpers import wait_for
from remote_server import RemoteServer

from mcphost import MCPHost, ServerUnavailableError, UsageError
from mcphost.client.renewal import RenewalPolicy
from mcphost.client.session import ClientSession
from mcphost.policy import NO_RETRY, Backoff
from mcphost.protocol.lifecycle import ServerState
from mcphost.transports.base import SessionLost
from mcphost.transports.http import StreamableHttpTransport


def config(url: str) -> dict[str, Any]:
    return {"mcpServers": {"r": {"url": url, "timeout": 10}}}


def methods(server: RemoteServer) -> list[str]:
    return [m.get("method", "") for m in server.received]


async def test_a_renewed_session_gets_back_its_log_level_subscriptions_and_lists() -> None:
    async with RemoteServer(resources=True) as server:
        events: list[dict[str, Any]] = []
        host = MCPHost(config(server.url), retry=NO_RETRY)
        host.on_event(events.append)
        async with host:
            await host.set_log_level("r", "debug")
            await host.subscribe_resource("mem://a", server="r")
            await host.subscribe_resource("mem://b", server="r")
            await host.unsubscribe_resource("mem://b", server="r")
            before = methods(server)
            server.tools = [*server.tools, {"name": "added", "inputSchema": {"type": "object"}}]
            server.restart()  # every session forgotten: the next message gets 404

            assert json.loads((await host.call_tool("r.echo", {"n": 1}))["content"][0]["text"]) == {"n": 1}
            assert await wait_for(lambda: any(e["type"] == "session_renewed" for e in events))
            after = server.received[len(before):]
            # The handshake again, as it was first sent, then what the old session was told.
            inits = [m for m in server.received if m.get("method") == "initialize"]
            assert len(inits) == 2 and inits[1]["params"] == inits[0]["params"]
            assert {"method": "logging/setLevel", "level": "debug"} in [
                {"method": m["method"], **m["params"]} for m in after if m.get("method") == "logging/setLevel"]
            assert [m["params"]["uri"] for m in after if m.get("method") == "resources/subscribe"] == ["mem://a"]
            # The lists are fetched again: the tool added meanwhile is there.
            assert await wait_for(lambda: "added" in {t["name"] for t in host.get_tools()["r"]["tools"]})
            assert "resources/list" in methods(server)[len(before):]
            [renewed] = [e for e in events if e["type"] == "session_renewed"]
            assert renewed["server"] == "r"
            assert renewed["data"]["renewals"] == 1
            assert renewed["data"]["log_level"] == "debug"
            assert renewed["data"]["subscriptions"] == ["mem://a"]
            assert renewed["data"]["errors"] == []
            assert host.servers["r"].state is ServerState.READY


async def test_nothing_is_re_applied_that_was_never_set() -> None:
    async with RemoteServer(resources=True) as server:
        events: list[dict[str, Any]] = []
        host = MCPHost(config(server.url), retry=NO_RETRY)
        host.on_event(events.append)
        async with host:
            server.restart()
            await host.call_tool("r.echo", {})
            assert await wait_for(lambda: any(e["type"] == "session_renewed" for e in events))
            assert "logging/setLevel" not in methods(server)
            assert "resources/subscribe" not in methods(server)


async def _session(server: RemoteServer, policy: RenewalPolicy) -> tuple[ClientSession, list[dict[str, Any]]]:
    transport = StreamableHttpTransport("r", server.url, stream=False)
    await transport.start()
    session = ClientSession("r", transport, client_info={"name": "t", "version": "1"})
    session.renewal_policy = policy
    renewed: list[dict[str, Any]] = []
    session.on_renewed = renewed.append
    await session.open()
    return session, renewed


async def test_a_server_that_drops_every_session_is_renewed_a_bounded_number_of_times() -> None:
    # Issue 21 measured thousands of renewals a second against such a server.
    policy = RenewalPolicy(max_in_row=3, backoff=Backoff(initial=0.01, maximum=0.05, jitter=0.0), min_interval=0.0)
    async with RemoteServer() as server:
        session, renewed = await _session(server, policy)
        try:
            server.drop_sessions = True
            server.restart()
            with pytest.raises(ServerUnavailableError) as info:
                await session.request("tools/list", {}, timeout=10)
            assert "session expired (HTTP 404)" in str(info.value)
            assert "renewed 3 time(s) in a row" in str(info.value)
            # The first handshake, then exactly max_in_row renewals: no loop.
            assert methods(server).count("initialize") == 1 + 3
            assert len(renewed) == 3
            assert session.renewal is not None and session.renewal.given_up is not None
        finally:
            await session.aclose(1)


async def test_renewals_in_a_row_wait_longer_each_time() -> None:
    policy = RenewalPolicy(max_in_row=4, backoff=Backoff(initial=0.05, maximum=1.0, jitter=0.0), min_interval=0.0)
    assert [policy.delay(n, None) for n in (1, 2, 3, 4)] == [0.0, 0.05, 0.1, 0.2]
    # Never closer than min_interval to the start of the one before, even the first.
    assert RenewalPolicy(min_interval=0.25).delay(1, 0.05) == pytest.approx(0.2)
    assert RenewalPolicy(min_interval=0.25).delay(1, 3.0) == 0.0


@pytest.mark.parametrize("bad", [{"max_in_row": -1}, {"timeout": "x"}, {"min_interval": float("nan")},
                                 {"backoff": 3}, {"stable_after": 0}, {"max_in_row": True}])
def test_a_bad_renewal_policy_is_the_callers_error(bad: dict[str, Any]) -> None:
    with pytest.raises(UsageError, match="renewal"):
        RenewalPolicy(**bad)


async def test_a_session_that_served_before_it_was_lost_starts_a_new_row() -> None:
    policy = RenewalPolicy(max_in_row=1, min_interval=0.0)
    async with RemoteServer() as server:
        session, renewed = await _session(server, policy)
        try:
            for n in range(3):  # each new session answers a request before it is dropped
                server.restart()
                assert (await session.request("tools/list", {}, timeout=10))["tools"]
                assert len(renewed) == n + 1
            assert session.renewal is not None and session.renewal.in_row == 1
        finally:
            await session.aclose(1)


async def test_calls_given_up_while_held_are_not_sent_on_the_new_session() -> None:
    async with RemoteServer() as server:
        session, _ = await _session(server, RenewalPolicy(min_interval=0.0))
        try:
            gate = asyncio.Event()
            real = session.renewal.lost if session.renewal is not None else None
            assert real is not None

            def late(event: SessionLost) -> None:  # renew only once the test says so
                async def later() -> None:
                    await gate.wait()
                    real(event)
                task = asyncio.get_running_loop().create_task(later())
                tasks.add(task)

            tasks: set[asyncio.Task[None]] = set()
            session.peer.transport.watch_session(late)
            server.restart()
            kept = asyncio.ensure_future(session.request("tools/call", {"name": "echo", "arguments": {"k": 1}}))
            dropped = asyncio.ensure_future(session.request("tools/call", {"name": "echo", "arguments": {"d": 1}}))
            assert await wait_for(lambda: server.requests("POST") and len(tasks) == 1)
            dropped.cancel()
            gate.set()
            assert (await kept)["content"][0]["text"] == '{"k": 1}'
            with pytest.raises(asyncio.CancelledError):
                await dropped
            new = sorted(server.sessions)[-1]
            on_new = [json.loads(r.body) for r in server.requests("POST") if r.headers.get("mcp-session-id") == new]
            calls = [m["params"]["arguments"] for m in on_new if m.get("method") == "tools/call"]
            assert calls == [{"k": 1}]  # the call given up while held is not sent on the new session
            await asyncio.gather(*tasks)
        finally:
            await session.aclose(1)


async def test_a_host_gives_up_renewing_and_marks_the_server_unavailable_with_the_reason() -> None:
    async with RemoteServer() as server:
        events: list[dict[str, Any]] = []
        host = MCPHost(config(server.url), retry=NO_RETRY)
        host.supervisor.connector.renewal = RenewalPolicy(max_in_row=2, backoff=Backoff(initial=0.01, jitter=0.0),
                                                min_interval=0.0)
        host.on_event(events.append)
        async with host:
            server.drop_sessions = True
            server.restart()
            with pytest.raises(ServerUnavailableError, match="renewed 2 time"):
                await host.call_tool("r.echo", {})
            assert methods(server).count("initialize") == 1 + 2
            assert host.servers["r"].state is ServerState.UNAVAILABLE
            [exited] = [e for e in events if e["type"] == "server_exited"]
            assert "session expired (HTTP 404)" in exited["data"]
            assert host.get_metrics()["r"]["transport"]["sessions_lost"] == 3

"""The Streamable HTTP transport's side of a lost session, through the transport contract
alone (no client session): it holds, reports once, lets the opening messages through,
then sends what it held; with nobody listening, a lost session is the server gone."""

from __future__ import annotations

import json
from typing import Any

from helpers import wait_for
from remote_server import RemoteServer
from sink import Sink

from mcphost.transports.base import NOTIFICATION, SessionLost
from mcphost.transports.http import StreamableHttpTransport

INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def request(rid: int, method: str, params: Any = None) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}}).encode()


async def opened(server: RemoteServer) -> tuple[StreamableHttpTransport, Sink]:
    transport = StreamableHttpTransport("r", server.url, stream=False)
    await transport.start()
    into = Sink(strict=True)
    transport.set_receiver(into)
    transport.send(request(1, "initialize", INIT))
    assert await wait_for(lambda: into.answered(1))
    assert transport.session_id == "session-1"
    return transport, into


async def test_a_lost_session_is_held_reported_once_and_released_on_the_new_one() -> None:
    async with RemoteServer() as server:
        transport, into = await opened(server)
        lost: list[SessionLost] = []
        transport.watch_session(lost.append)
        server.restart()
        transport.send(request(2, "tools/list"))
        assert await wait_for(lambda: bool(lost))
        transport.send(request(3, "tools/list"))  # sent while lost: held, not POSTed
        assert len(lost) == 1 and lost[0].reason == "session expired (HTTP 404)" and lost[0].held == 1
        assert transport.session_id is None
        with transport.session_opening():  # goes out at once, without a session id
            transport.send(request(4, "initialize", INIT))
        assert await wait_for(lambda: into.answered(4))
        assert transport.session_id == "session-2"
        with transport.session_opening():
            transport.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}).encode(),
                           NOTIFICATION)
        transport.release_held()
        assert await wait_for(lambda: into.answered(2) and into.answered(3))
        assert not into.gone
        sessions = [r.headers.get("mcp-session-id") for r in server.requests("POST")
                    if json.loads(r.body).get("id") == 3]
        assert sessions == ["session-2"]  # held until the new session, POSTed once
        assert transport.statistics()["sessions_lost"] == 1
        await transport.aclose(1)


async def test_with_nobody_listening_a_lost_session_is_the_server_gone() -> None:
    async with RemoteServer() as server:
        transport, into = await opened(server)
        server.restart()
        transport.send(request(2, "tools/list"))
        assert await wait_for(lambda: bool(into.gone))
        assert into.gone[0].reason == "session expired (HTTP 404)"
        await transport.aclose(1)


async def test_give_up_ends_the_transport_with_the_reason() -> None:
    async with RemoteServer() as server:
        transport, into = await opened(server)
        transport.watch_session(lambda lost: transport.give_up(f"{lost.reason}: not renewed"))
        server.restart()
        transport.send(request(2, "tools/list"))
        assert await wait_for(lambda: bool(into.gone))
        assert into.gone[0].reason == "session expired (HTTP 404): not renewed"
        await transport.aclose(1)

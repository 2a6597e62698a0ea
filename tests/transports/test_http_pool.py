"""The keep-alive pool sized by demand, against a real server on 127.0.0.1 that counts its
connections: a burst opens more (never past the cap), what stays idle is closed but one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers import wait_for
from hostile_http import HostileServer

from mcphost import MCPHost
from mcphost.policy import NO_RETRY
from mcphost.transports.http import StreamableHttpTransport
from mcphost.transports.http_pool import ConnectionPool
from mcphost.transports.httpconn import Origin


def host_for(url: str, **options: Any) -> MCPHost:
    def factory(server: Any) -> StreamableHttpTransport:
        return StreamableHttpTransport(server.name, server.url or "", **options)

    return MCPHost({"mcpServers": {"h": {"url": url, "timeout": 10}}}, retry=NO_RETRY, transport_factory=factory)


async def test_a_burst_grows_the_pool_to_the_cap_and_idle_connections_are_closed_but_one() -> None:
    async with HostileServer() as server, host_for(server.url, max_connections=6, idle_timeout=0.2) as host:
        results = await asyncio.gather(*(host.call_tool("h.echo", {"n": n}) for n in range(30)))
        assert [r["content"][0]["text"] for r in results] == [f'{{"n": {n}}}' for n in range(30)]
        # 30 calls at once: as many connections as requests may hold (one is left for
        # answers and notifications), never more than the cap.
        assert 3 <= server.peak <= 6
        assert await wait_for(lambda: server.open == 1)  # idle ones closed, one kept
        transport = host.servers["h"].session.peer.transport
        assert len(transport.pool.idle) == 1
        assert transport.pool.busy == [0, 0]  # every exchange counted in was counted out
        again = await host.call_tool("h.echo", {"n": 99})  # on the connection kept
        assert again["content"][0]["text"] == '{"n": 99}'
        assert server.open == 1


def test_the_idle_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="idle_timeout"):
        ConnectionPool(Origin("http", "127.0.0.1", 80), idle_timeout=0)

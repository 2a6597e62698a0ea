"""Streamable HTTP against the hostile server of ``tests/hostile_http.py`` (issue 21): what
a remote server controls (connections, reconnects, sessions) stays bounded, and what the
host gives up is said, never silent."""

from __future__ import annotations

import asyncio
import os
from typing import Any

from helpers import wait_for
from hostile_http import SSE_HEAD, HostileServer, chunk, ping, sse_event

from mcphost import MCPHost
from mcphost.policy import NO_RETRY
from mcphost.transports.httpconn import DEFAULT_MAX_CONNECTIONS


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

"""What only the remote transports have, against the reference server
``@modelcontextprotocol/server-everything`` served over HTTP: the server's session and its
end, a restart that opens a new session, several HTTP servers in one configuration.

Every behaviour the transports share runs over stdio, Streamable HTTP and legacy HTTP+SSE
alike in ``test_everything.py``; these bodies run over the two remote modes (the ``remote``
fixture, ``everything_targets.py``):

- ``http``: Streamable HTTP (``npx ... server-everything streamableHttp``, endpoint
  ``/mcp``, configuration ``"type": "http"``). The end of a session is a DELETE, which the
  server logs.
- ``sse``: the legacy HTTP+SSE transport (``npx ... server-everything sse``, endpoint
  ``/sse``, configuration ``"type": "sse"``): every server message on one GET stream, every
  client message POSTed to the ``/message?sessionId=...`` endpoint the stream announced.
  The session ends when the GET stream closes, which the server logs.

One server process per mode serves the whole session (each host is a session of its own
on it). The last test runs two SSE servers in one Talk-2-Tables-shaped configuration.
"""

from __future__ import annotations

import urllib.parse

import pytest
from everything_targets import SERVER, SHUTDOWN_TIMEOUT, Servers, Target
from helpers import needs_npx, wait_for
from recorder import texts
from remote_everything import EverythingServer

from mcphost import MCPHost
from mcphost.transports.http import StreamableHttpTransport
from mcphost.transports.sse import SseTransport

pytestmark = [pytest.mark.interop, needs_npx, pytest.mark.asyncio(loop_scope="module")]

STATIC_DOCS = "demo://resource/static/document/"


@pytest.fixture(scope="module")
def sse_server(everything_servers: Servers) -> EverythingServer:
    """The SSE server, outside the parametrization (started before a test's own process
    checks)."""
    return everything_servers.get("sse")


def session_id(host: MCPHost, name: str = SERVER) -> str:
    """The server's id of the host's session: the ``Mcp-Session-Id`` (Streamable HTTP) or
    the ``sessionId`` of the endpoint the SSE stream announced (legacy HTTP+SSE)."""
    transport = host.servers[name].transport
    if isinstance(transport, StreamableHttpTransport):
        assert transport.session_id
        return transport.session_id
    assert isinstance(transport, SseTransport), transport
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(transport.post_target).query)
    [sid] = query["sessionId"]
    return sid


def began(server: EverythingServer, sid: str) -> str:
    """What the server logs when the session ``sid`` begins."""
    return (f"Session initialized with ID: {sid}" if server.mode == "http"
            else f"Client Connected:  {sid}")


def ended(server: EverythingServer, sid: str) -> str:
    """What the server logs when the session ``sid`` ends."""
    return (f"Transport closed for session {sid}" if server.mode == "http"
            else f"Client Disconnected:  {sid}")


async def test_shutdown_ends_the_servers_session(remote: Target) -> None:
    server = remote.server
    assert server is not None
    async with remote.new_host() as host:
        sid = session_id(host)
        assert texts(await host.call_tool(f"{SERVER}.echo", {"message": "bye"})) == ["Echo: bye"]
        assert began(server, sid) in server.log()
    if server.mode == "http":
        # The session was DELETEd: the server closed its transport and forgot the session.
        assert await wait_for(lambda: f"Received session termination request for session {sid}" in server.log())
    # Over SSE the GET stream was closed: the server saw its client go.
    assert await wait_for(lambda: ended(server, sid) in server.log())
    assert host.get_metrics()[SERVER]["transport"]["http_errors"] == 0


async def test_restart_starts_a_new_session(remote: Target) -> None:
    server = remote.server
    assert server is not None
    async with remote.new_host() as host:
        old = session_id(host)
        await host.restart_server(SERVER)
        new = session_id(host)
        assert new != old
        assert host.get_tools()[SERVER]["state"] == "ready"
        assert texts(await host.call_tool(f"{SERVER}.echo", {"message": "again"})) == ["Echo: again"]
        assert await wait_for(lambda: ended(server, old) in server.log())
        assert ended(server, new) not in server.log()


# -- two SSE servers, Talk-2-Tables-shaped ------------------------------------------------------


async def test_two_sse_servers_talk_2_tables_shape(sse_server: EverythingServer, no_leftovers: None) -> None:
    first = sse_server
    with EverythingServer("sse") as second:  # its own port; stopped (group and all) at the end
        assert second.port != first.port
        cfg = {
            "mcp_servers": {
                "database_mcp": {"name": "Database MCP Server", "url": first.url, "priority": 10,
                                 "domains": ["sales", "transactions", "orders", "products"],
                                 "capabilities": ["execute_query", "list_resources"], "transport": "sse"},
                "product_metadata_mcp": {"name": "Product Metadata MCP", "url": second.url, "priority": 1,
                                         "domains": ["products", "product_aliases", "column_mappings"],
                                         "capabilities": ["list_resources"], "transport": "sse"},
            },
            "orchestration": {"resource_cache_ttl": 300, "fail_fast": True, "log_level": "WARNING"},
        }
        async with MCPHost(cfg, shutdown_timeout=SHUTDOWN_TIMEOUT["sse"]) as host:
            names = ("database_mcp", "product_metadata_mcp")
            for name in names:
                assert isinstance(host.servers[name].transport, SseTransport)
                assert host.get_tools()[name]["state"] == "ready"
            assert host.get_tools()["database_mcp"]["declaredCapabilities"] == ["execute_query", "list_resources"]
            assert host.servers_for("products") == ["product_metadata_mcp", "database_mcp"]
            sids = {name: session_id(host, name) for name in names}
            assert f"Client Connected:  {sids['database_mcp']}" in first.log()
            assert f"Client Connected:  {sids['product_metadata_mcp']}" in second.log()

            gathered = await host.gather_resources(uri_filter=STATIC_DOCS + "*")
            assert gathered["errors"] == []
            found = gathered["resources"]
            # Both servers list the same documents: each is read from each, by priority.
            per_server = {name: sorted(r["uri"] for r in found if r["server"] == name) for name in names}
            listed = sorted(r["uri"] for r in host.get_tools()["database_mcp"]["resources"]
                            if r["uri"].startswith(STATIC_DOCS))
            assert listed and per_server == dict.fromkeys(names, listed)
            assert [r["server"] for r in found] == ["product_metadata_mcp"] * len(listed) + ["database_mcp"] * len(listed)
            assert {r["priority"] for r in found if r["server"] == "database_mcp"} == {10}
            for resource in found:
                [content] = resource["contents"]
                assert content["uri"] == resource["uri"] and content["text"].strip()
            reads = {name: host.get_metrics()[name]["methods"]["resources/read"]["calls"] for name in names}
            assert reads == {name: len(listed) for name in names}

            # A tool called on one server: only that server's session sees it.
            result = await host.call_tool("database_mcp.get-sum", {"a": 19, "b": 23})
            assert texts(result) == ["The sum of 19 and 23 is 42."]
            metrics = host.get_metrics()
            assert metrics["database_mcp"]["tools"]["get-sum"]["calls"] == 1
            assert "get-sum" not in metrics["product_metadata_mcp"]["tools"]
        for name, server in (("database_mcp", first), ("product_metadata_mcp", second)):
            assert await wait_for(lambda s=server, n=name: f"Client Disconnected:  {sids[n]}" in s.log())


# -- a restart of the server behind the same URL -----------------------------------------------


async def test_a_restarted_server_answers_the_old_session_with_400_and_a_new_one_is_opened(
        no_leftovers: None) -> None:
    # server-everything answers a session id it does not know with 400 ("No valid session ID
    # provided"), not the spec's 404. Before: every call after its restart failed with HTTP
    # 400 and the server stayed ready. Now the session is renewed as after a 404. No GET
    # stream here: the restart is what is under test, not its noticing.
    with EverythingServer("http") as server:
        cfg = {"mcpServers": {SERVER: {"url": server.url}}}
        host = MCPHost(cfg, transport_factory=lambda c: StreamableHttpTransport(c.name, c.url, stream=False))
        async with host:
            old = session_id(host)
            assert texts(await host.call_tool(f"{SERVER}.echo", {"message": "one"})) == ["Echo: one"]
            server.restart()
            assert texts(await host.call_tool(f"{SERVER}.echo", {"message": "two"})) == ["Echo: two"]
            assert session_id(host) != old
            assert host.get_tools()[SERVER]["state"] == "ready"
            assert host.get_metrics()[SERVER]["transport"]["sessions_lost"] == 1

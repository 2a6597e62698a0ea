"""Streamable HTTP and legacy HTTP+SSE through MCPHost, against the scripted server of
``tests/remote_server.py`` (stdlib, 127.0.0.1, a free port): both answer forms, the
session and version headers, the GET stream, resumption, a new session after a 404, DELETE,
and every fault the issue names, each ending in a clear error and a host that goes on."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from helpers import free_port, wait_for
from remote_server import RemoteServer

from mcphost import (
    ConfigurationError,
    MCPHost,
    ProtocolError,
    ServerError,
    ServerStartupError,
    ServerUnavailableError,
    TimeoutError,
    TransportError,
)
from mcphost.policy import NO_RETRY
from mcphost.protocol.lifecycle import ServerState


def config(url: str, **extra: Any) -> dict[str, Any]:
    return {"mcpServers": {"r": {"url": url, "timeout": 10, **extra}}}


@asynccontextmanager
async def serving(*, legacy: bool = False, host_options: dict[str, Any] | None = None,
                  entry: dict[str, Any] | None = None, sampling: str | None = None,
                  **server_options: Any) -> AsyncIterator[tuple[RemoteServer, MCPHost]]:
    """A server and a host connected to it; ``sampling``: the text the host samples."""
    async with RemoteServer(**server_options) as server:
        url = server.sse_url if legacy else server.url
        host = MCPHost(config(url, **(entry or {})), retry=NO_RETRY, **(host_options or {}))
        if sampling is not None:
            host.on_sampling(lambda name, params: {"role": "assistant", "model": "m",
                                                   "content": {"type": "text", "text": f"{sampling} to {name}"}})
        async with host:
            yield server, host


def text(result: Any) -> str:
    return str(result["content"][0]["text"])


# -- Streamable HTTP: the happy paths ------------------------------------------------------


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_calls_in_both_answer_forms(mode: str) -> None:
    async with serving(mode=mode) as (_, host):
        assert sorted(t["name"] for t in host.get_tools()["r"]["tools"]) == ["ask", "echo", "notify", "progress"]
        assert text(await host.call_tool("r.echo", {"a": 1})) == '{"a": 1}'
        results = await asyncio.gather(*(host.call_tool("r.echo", {"n": n}) for n in range(20)))
        assert [json.loads(text(r))["n"] for r in results] == list(range(20))
        stats = host.get_metrics()["r"]
        assert stats["state"] == "ready"


async def test_auto_probes_with_server_discover_then_speaks_the_handshake_era() -> None:
    # A legacy server refuses the probe (no session yet: HTTP 404 without the JSON-RPC
    # answer): the handshake goes on over Streamable HTTP, never over HTTP+SSE.
    async with serving() as (server, host):
        probe, initialize, *_ = server.requests("POST")
        assert json.loads(probe.body)["method"] == "server/discover"
        assert probe.headers["mcp-protocol-version"] == "2026-07-28"
        assert probe.headers["mcp-method"] == "server/discover"
        assert json.loads(initialize.body)["method"] == "initialize"
        assert host.get_tools()["r"]["era"] == "legacy"
        assert host.get_tools()["r"]["protocolVersion"] == "2025-11-25"
        assert all("mcp-session-id" in r.headers for r in server.requests("GET"))
        assert host.get_metrics()["r"]["transport"]["http_errors"] == 0  # the probe is no error


async def test_session_and_version_headers_and_delete() -> None:
    async with serving(entry={"protocol": "legacy"}) as (server, host):
        await host.call_tool("r.echo", {})
        initialize, *later = server.requests("POST")
        assert "mcp-session-id" not in initialize.headers
        assert "mcp-protocol-version" not in initialize.headers
        assert initialize.headers["accept"] == "application/json, text/event-stream"
        assert initialize.headers["content-type"] == "application/json"
        assert later, "the later POSTs"
        for request in later:
            assert request.headers["mcp-session-id"] == "session-1"
            assert request.headers["mcp-protocol-version"] == "2025-11-25"
        assert await wait_for(lambda: bool(server.requests("GET")))
        get = server.requests("GET")[0]
        assert get.headers["accept"] == "text/event-stream"
        assert get.headers["mcp-session-id"] == "session-1"
    assert server.deleted == ["session-1"]


async def test_a_stateless_server_gets_no_session_header_and_no_delete() -> None:
    async with serving(sessions=False, get_stream=False) as (server, host):
        assert text(await host.call_tool("r.echo", {"x": 1})) == '{"x": 1}'
        assert all("mcp-session-id" not in r.headers for r in server.log)
    assert server.requests("DELETE") == []


async def test_a_server_without_get_stream_405_is_fine() -> None:
    async with serving(get_stream=False) as (server, host):
        assert await wait_for(lambda: bool(server.requests("GET")))
        assert text(await host.call_tool("r.echo", {"y": 2})) == '{"y": 2}'
        assert host.servers["r"].state is ServerState.READY


async def test_delete_refused_with_405_is_fine() -> None:
    async with serving(delete_status=405) as (server, host):
        await host.call_tool("r.echo", {})
    assert server.deleted == ["session-1"]


async def test_progress_and_sampling_on_the_response_stream() -> None:
    async with serving(mode="sse", sampling="sampled") as (server, host):
        seen: list[Any] = []
        result = await host.call_tool("r.progress", {}, progress=seen.append)
        assert [p["progress"] for p in seen] == [1, 2]
        assert text(result) == "{}"
        assert text(await host.call_tool("r.ask", {})) == "sampled to r"
        answer = next(m for m in server.received if "result" in m and str(m.get("id")).startswith("ask-"))
        assert answer["result"]["content"]["text"] == "sampled to r"


async def test_server_requests_and_notifications_on_the_get_stream() -> None:
    async with serving(mode="json", sampling="via get") as (server, host):
        logs: list[Any] = []
        host.on_log(lambda name, params: logs.append((name, params["data"])))
        assert await wait_for(server.get_opened.is_set)
        assert text(await host.call_tool("r.ask", {"via": "get"})) == "via get to r"
        await host.call_tool("r.notify", {"text": "hello there"})
        assert await wait_for(lambda: ("r", "hello there") in logs)


async def test_the_get_stream_is_opened_again_when_the_server_ends_it() -> None:
    async with serving(mode="json") as (server, host):
        logs: list[Any] = []
        host.on_log(lambda name, params: logs.append(params["data"]))
        assert await wait_for(server.get_opened.is_set)
        server.get_opened.clear()
        server.end_streams()
        assert await wait_for(server.get_opened.is_set)
        await host.call_tool("r.notify", {"text": "after"})
        assert await wait_for(lambda: "after" in logs)


async def test_custom_headers_go_on_every_request() -> None:
    async with serving(entry={"headers": {"Authorization": "Bearer t0ken", "X-Trace": "1"}}) as (server, host):
        await host.call_tool("r.echo", {})
        assert await wait_for(lambda: bool(server.requests("GET")))
    assert server.log
    assert all(r.headers.get("authorization") == "Bearer t0ken" for r in server.log)


async def test_a_reserved_header_in_the_configuration_is_refused() -> None:
    async with RemoteServer() as server:
        host = MCPHost(config(server.url, headers={"Mcp-Session-Id": "mine"}), retry=NO_RETRY)
        with pytest.raises((ConfigurationError, ServerStartupError), match="Mcp-Session-Id"):
            await host.initialize()
        await host.shutdown()


# -- resumption -------------------------------------------------------------------------------


async def test_a_stream_that_stops_before_the_response_is_resumed() -> None:
    async with serving(mode="sse") as (server, host):
        server.fault = "sse_stops"
        assert text(await host.call_tool("r.echo", {})) == "late"
        resumed = [r for r in server.requests("GET") if "last-event-id" in r.headers]
        assert [r.headers["last-event-id"] for r in resumed] == ["4-0"] or len(resumed) == 1
        assert resumed[0].headers["mcp-session-id"] == "session-1"
        server.fault = None
        assert text(await host.call_tool("r.echo", {"ok": 1})) == '{"ok": 1}'


async def test_a_stream_that_keeps_stopping_fails_its_call_after_the_attempts() -> None:
    async with serving(mode="sse") as (server, host):
        server.fault = "sse_stops_always"
        with pytest.raises(TransportError, match=r"after 2 resumption\(s\)"):
            await host.call_tool("r.echo", {})
        server.fault = None
        assert host.servers["r"].state is ServerState.READY
        assert text(await host.call_tool("r.echo", {"z": 1})) == '{"z": 1}'


async def test_a_stream_without_event_id_cannot_be_resumed() -> None:
    async with serving(mode="sse") as (server, host):
        server.fault = "sse_stops_no_id"
        with pytest.raises(TransportError, match="cannot be resumed"):
            await host.call_tool("r.echo", {})
        assert [r for r in server.requests("GET") if "last-event-id" in r.headers] == []


# -- a new session after a 404 --------------------------------------------------------------


@pytest.mark.parametrize("mode", ["json", "sse"])
async def test_a_restarted_server_gets_a_new_session_and_the_call_succeeds(mode: str) -> None:
    async with serving(mode=mode) as (server, host):
        logs: list[Any] = []
        host.on_log(lambda name, params: logs.append(params["data"]))
        await host.call_tool("r.echo", {})
        server.restart()
        assert text(await host.call_tool("r.echo", {"after": 1})) == '{"after": 1}'
        inits = [m for m in server.received if m.get("method") == "initialize"]
        assert len(inits) == 2
        assert inits[1]["params"] == inits[0]["params"]
        assert [m.get("method") for m in server.received].count("notifications/initialized") == 2
        assert host.servers["r"].state is ServerState.READY
        # The GET stream is opened again on the new session.
        assert await wait_for(lambda: any(r.headers.get("mcp-session-id") not in (None, "session-1")
                                          for r in server.requests("GET")))
        await host.call_tool("r.notify", {"text": "new session"})
        assert await wait_for(lambda: "new session" in logs)
        # And again: every restart is survived once the new session was used.
        server.restart()
        results = await asyncio.gather(*(host.call_tool("r.echo", {"n": n}) for n in range(5)))
        assert sorted(json.loads(text(r))["n"] for r in results) == list(range(5))
        assert len([m for m in server.received if m.get("method") == "initialize"]) == 3
        assert host.get_metrics()["r"]["state"] == "ready"


async def test_a_server_that_refuses_every_new_session_is_gone() -> None:
    async with serving() as (server, host):
        await host.call_tool("r.echo", {})
        original = server._answer

        async def refuse(msg: dict[str, Any], send: Any, sid: str | None) -> dict[str, Any]:
            if msg["method"] == "initialize":
                return {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32600, "message": "no more sessions"}}
            return await original(msg, send, sid)

        server._answer = refuse  # type: ignore[method-assign]
        server.restart()
        with pytest.raises(ServerUnavailableError, match="no more sessions"):
            await host.call_tool("r.echo", {})
        assert host.servers["r"].state is not ServerState.READY


async def test_a_new_session_in_another_version_is_not_taken() -> None:
    async with serving() as (server, host):
        await host.call_tool("r.echo", {})
        server.version = "2024-11-05"
        server.restart()
        with pytest.raises(ServerUnavailableError, match="protocol version 2024-11-05"):
            await host.call_tool("r.echo", {})


# -- faults: each call fails at once, with its reason; the server stays usable -------------


@pytest.mark.parametrize(
    ("fault", "message"),
    [
        ("reset", "connection lost before the response"),
        ("truncated_chunk", "connection lost before the response"),
        ("endless_headers", "header"),
        ("huge_length", "1000000000000 bytes"),
        ("status", "HTTP 503 Service Unavailable: the upstream is down"),
        ("redirect", "redirects are not followed"),
        ("bad_type", "text/html"),
    ],
)
async def test_a_broken_answer_fails_its_call_and_nothing_else(fault: str, message: str) -> None:
    async with serving() as (server, host):
        server.fault = fault
        with pytest.raises((TransportError, ProtocolError)) as info:
            await host.call_tool("r.echo", {}, timeout=10)
        assert message in str(info.value)
        # The server sent no JSON-RPC error: none is made up (ServerError means it sent one).
        assert not isinstance(info.value, ServerError)
        if fault == "status":
            assert isinstance(info.value, TransportError) and info.value.http_status == 503
            assert info.value.transient and info.value.server == "r"
            assert str(info.value).startswith("r: tools/call: HTTP 503")
        assert len(str(info.value)) < 600
        server.fault = None
        assert text(await host.call_tool("r.echo", {"again": True})) == '{"again": true}'
        assert host.servers["r"].state is ServerState.READY


async def test_the_servers_own_jsonrpc_error_is_delivered() -> None:
    async with serving() as (server, host):
        server.fault = "jsonrpc_error"
        with pytest.raises(ServerError, match="bad arguments here") as info:
            await host.call_tool("r.echo", {})
        assert info.value.code == -32602


async def test_a_slow_loris_body_times_out_and_the_request_is_cancelled() -> None:
    async with serving(host_options={"unavailable_after_timeouts": 3}) as (server, host):
        server.fault = "slow_body"
        with pytest.raises(TimeoutError):
            await host.call_tool("r.echo", {}, timeout=0.3)
        assert await wait_for(lambda: any(m.get("method") == "notifications/cancelled" for m in server.received))
        server.fault = None
        assert text(await host.call_tool("r.echo", {"b": 1})) == '{"b": 1}'


async def test_an_oversized_json_answer_is_refused() -> None:
    async with serving(host_options={"max_message_size": 4096}) as (_, host):
        with pytest.raises(ProtocolError, match="limit 4096 bytes"):
            await host.call_tool("r.echo", {"big": "x" * 10_000}, timeout=10)
        assert text(await host.call_tool("r.echo", {})) == "{}"


@pytest.mark.parametrize("legacy", [False, True])
async def test_an_oversized_event_fails_only_its_call(legacy: bool) -> None:
    async with serving(legacy=legacy, mode="sse", host_options={"max_message_size": 4096}) as (server, host):
        logs: list[Any] = []
        host.on_log(lambda name, params: logs.append(params["data"]))
        if legacy:
            big = "x" * 10_000
            with pytest.raises(ProtocolError, match="limit 4096 bytes"):
                await host.call_tool("r.echo", {"big": big}, timeout=10)
        else:
            server.fault = "big_event_response"
            with pytest.raises(ProtocolError, match="limit 4096 bytes"):
                await host.call_tool("r.echo", {}, timeout=10)
            server.fault = "big_event_notification"
            assert text(await host.call_tool("r.echo", {})) == "late"  # the notification was dropped
            assert logs == ["n" * 10]  # only the small one of the first answer
            server.fault = None
        assert text(await host.call_tool("r.echo", {"after": 1})) == '{"after": 1}'
        assert host.servers["r"].state is ServerState.READY
        assert host.get_metrics()["r"]["transport"]["oversized"] >= 1


async def test_connection_refused_at_start() -> None:
    port = free_port()
    host = MCPHost(config(f"http://127.0.0.1:{port}/mcp"), retry=NO_RETRY)
    with pytest.raises(ServerStartupError, match=f"cannot connect to 127.0.0.1:{port}: connection refused") as info:
        await host.initialize()
    # The transport's TransportError, mapped once by the supervisor: worth another try.
    failed = info.value.failures["r"]
    assert isinstance(failed, ServerStartupError) and failed.transient
    assert isinstance(failed.__cause__, TransportError) and failed.__cause__.os_error
    await host.shutdown()


async def test_a_server_that_goes_away_is_noticed() -> None:
    async with serving() as (server, host):
        await host.call_tool("r.echo", {})
        await server.close()
        with pytest.raises((TransportError, ServerUnavailableError)):
            await host.call_tool("r.echo", {}, timeout=5)
        assert await wait_for(lambda: host.servers["r"].state is not ServerState.READY)
        error = str(host.servers["r"].error)
        assert "connection refused" in error or "closed" in error


# -- legacy HTTP+SSE ---------------------------------------------------------------------------


async def test_legacy_sse_calls_progress_and_sampling() -> None:
    async with serving(legacy=True, sampling="legacy") as (server, host):
        assert sorted(t["name"] for t in host.get_tools()["r"]["tools"]) == ["ask", "echo", "notify", "progress"]
        assert text(await host.call_tool("r.echo", {"l": 1})) == '{"l": 1}'
        seen: list[Any] = []
        await host.call_tool("r.progress", {}, progress=seen.append)
        assert [p["progress"] for p in seen] == [1, 2]
        assert text(await host.call_tool("r.ask", {})) == "legacy to r"
        posts = server.requests("POST")
        assert posts and all(r.path == "/messages" and r.query["session_id"].startswith("legacy-") for r in posts)


async def test_legacy_http_error_fails_the_call() -> None:
    async with serving(legacy=True) as (server, host):
        server.fault = "status"
        with pytest.raises(TransportError, match="HTTP 503") as info:
            await host.call_tool("r.echo", {})
        assert info.value.http_status == 503
        server.fault = None
        assert text(await host.call_tool("r.echo", {})) == "{}"


async def test_legacy_endpoint_of_another_origin_is_refused() -> None:
    async with RemoteServer() as server:
        server.endpoint = "http://203.0.113.9:8080/messages"
        host = MCPHost(config(server.sse_url), retry=NO_RETRY)
        with pytest.raises(ServerStartupError, match="another origin"):
            await host.initialize()
        await host.shutdown()


async def test_legacy_stream_end_makes_the_server_unavailable() -> None:
    async with serving(legacy=True) as (server, host):
        await host.call_tool("r.echo", {})
        server.end_streams()
        assert await wait_for(lambda: host.servers["r"].state is not ServerState.READY)
        with pytest.raises(ServerUnavailableError, match="closed the SSE stream"):
            await host.call_tool("r.echo", {})


# -- the spec's probe: type http, a legacy server ------------------------------------------------


async def test_a_legacy_server_behind_type_http_is_found_by_the_probe() -> None:
    async with RemoteServer() as server:
        host = MCPHost(config(server.sse_url, type="http"), retry=NO_RETRY)
        async with host:
            assert text(await host.call_tool("r.echo", {"p": 1})) == '{"p": 1}'
            assert host.get_metrics()["r"]["transport"]["transport"].startswith("sse")
        first = server.log[0]
        assert (first.method, first.path) == ("POST", "/sse")
        assert [m.get("method") for m in server.received].count("initialize") == 1
        assert any(r.method == "GET" and r.path == "/sse" for r in server.log)
        assert all(r.path == "/messages" for r in server.log[2:] if r.method == "POST")


async def test_a_url_that_serves_neither_transport_says_both() -> None:
    async with RemoteServer() as server:
        host = MCPHost(config(f"http://127.0.0.1:{server.port}/nothing-here"), retry=NO_RETRY)
        with pytest.raises(ServerStartupError) as info:
            await host.initialize()
        message = str(info.value)
        assert "HTTP 404 Not Found to initialize" in message
        assert "no legacy HTTP+SSE endpoint at this URL either" in message
        await host.shutdown()


async def test_calls_waiting_for_a_connection_during_a_renewal_go_on_the_new_session() -> None:
    # Two connections for eight calls: most wait in the pool while the session is renewed.
    # Each keeps the session it was sent on: a 404 sends it again on the new one.
    from mcphost.transports.http_auto import HttpTransport

    async with RemoteServer(get_stream=False) as server:
        host = MCPHost(config(server.url, protocol="legacy"), retry=NO_RETRY,
                       transport_factory=lambda cfg: HttpTransport(cfg.name, cfg.url, max_connections=2))
        async with host:
            await host.call_tool("r.echo", {})
            for _ in range(3):
                server.restart()
                results = await asyncio.gather(*(host.call_tool("r.echo", {"n": n}) for n in range(8)))
                assert sorted(json.loads(text(r))["n"] for r in results) == list(range(8))
            assert all(r.headers.get("mcp-session-id") for r in server.requests("POST")
                       if json.loads(r.body).get("method") != "initialize")


async def test_an_http_failure_is_counted_as_a_transport_failure_not_a_server_error() -> None:
    async with serving() as (server, host):
        server.fault = "status"
        with pytest.raises(TransportError):
            await host.call_tool("r.echo", {})
        kinds = host.get_metrics()["r"]["tools"]["echo"]["errorsByKind"]
        assert kinds["transport"] == 1 and kinds["server_error"] == 0


async def test_junk_events_are_counted_and_logged_a_bounded_number_of_times(caplog: pytest.LogCaptureFixture) -> None:
    # 3,000 SSE events that are not JSON: before, 3,000 WARNING lines; now the first 5,
    # then one in 1000 with the count; every one is counted.
    caplog.set_level("DEBUG", logger="mcphost")
    async with serving() as (server, host):
        server.fault = "junk_events"
        assert text(await host.call_tool("r.echo", {}, timeout=10)) == "late"
        assert host.get_metrics()["r"]["transport"]["not_json"] == 3000
    warned = [r for r in caplog.records if "not JSON" in r.getMessage() and r.levelname == "WARNING"]
    assert len(warned) == 5 + 3 and "3000 so far" in warned[-1].getMessage()


async def test_the_wire_trace_and_request_logs_turned_on_mid_session_are_heard(
        caplog: pytest.LogCaptureFixture) -> None:
    # The hot path reads the loggers' cached answers; a level set later must still count.
    async with serving() as (_, host):
        await host.call_tool("r.echo", {"a": 1})  # the caches now say "not at DEBUG"
        assert not [r for r in caplog.records if r.name in ("mcphost.wire.r", "mcphost.requests")]
        caplog.set_level(logging.DEBUG, logger="mcphost.wire.r")
        caplog.set_level(logging.DEBUG, logger="mcphost.requests")
        await host.call_tool("r.echo", {"a": 2})
        traced = [r.getMessage() for r in caplog.records if r.name == "mcphost.wire.r"]
        assert any(m.startswith("-> request tools/call id=") for m in traced)
        assert any(m.startswith("<- response id=") for m in traced)
        assert any(getattr(r, "event", None) == "request_completed" for r in caplog.records
                   if r.name == "mcphost.requests")


@pytest.mark.parametrize("data", [
    b'{"jsonrpc":"2.0","id":7,"method":"m"}', b'{"jsonrpc":"2.0","id":7}', b'{"jsonrpc":"2.0","id":0,"method":"m"}',
    b'{"jsonrpc":"2.0","id":07,"method":"m"}', b'{"jsonrpc":"2.0","id":-3,"method":"m"}',
    b'{"jsonrpc":"2.0","id":1.5,"method":"m"}', b'{"jsonrpc":"2.0","id":"a,b","method":"m"}',
    b'{"jsonrpc":"2.0","id":12 ,"method":"m"}', b'{"jsonrpc":"2.0","id":' + b"9" * 18 + b',"method":"m"}',
    b'{"jsonrpc":"2.0","id":' + b"9" * 30 + b',"method":"m"}', b'{"jsonrpc":"2.0","id":true,"method":"m"}',
    b'{"id":5,"jsonrpc":"2.0","method":"m"}', b'{"jsonrpc":"2.0","id":', b'{"jsonrpc":"2.0","id":3',
    b'{"jsonrpc":"2.0","id":75',
])
def test_the_request_id_read_from_our_own_encoding_is_the_decoded_one(data: bytes) -> None:
    from mcphost._json import loads
    from mcphost.transports.remote import request_id

    try:
        expected = loads(data).get("id")
    except ValueError:
        expected = request_id(b" " + data)  # the careful path (a leading space skips the quick one)
    got = request_id(data)
    assert got == expected and type(got) is type(expected)


async def test_a_streamable_post_sets_what_every_post_sets() -> None:
    # StreamablePost.__init__ sets PostExchange's attributes itself (one call less per
    # message): the two must stay alike.
    from mcphost.transports.base import NOTIFICATION, REQUEST
    from mcphost.transports.http import StreamableHttpTransport
    from mcphost.transports.http_post import StreamablePost
    from mcphost.transports.remote_post import PostExchange

    transport = StreamableHttpTransport("s", "http://127.0.0.1:9/mcp")
    for data, kind in ((b'{"jsonrpc":"2.0","id":7,"method":"ping"}', REQUEST),
                       (b'{"jsonrpc":"2.0","method":"notifications/initialized"}', NOTIFICATION)):
        general = PostExchange(transport, data, kind, "m", [("X-A", "1")])
        ours = StreamablePost(transport, data, kind, "m", [("X-A", "1")])
        assert vars(general) == {k: v for k, v in vars(ours).items() if k != "sent_session"}
    assert ours.sent_session is None

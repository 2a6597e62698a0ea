"""The MCP client session over an in-memory transport, against a server scripted here."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers import wait_for

from mcphost._json import dumps
from mcphost.client.session import ClientSession
from mcphost.errors import ProtocolError, TimeoutError
from mcphost.transports.base import Gone
from mcphost.transports.memory import MemoryTransport, memory_pair


class Server:
    """A scripted server end: answers initialize, records everything else."""

    def __init__(self, end: MemoryTransport, version: str = "2025-11-25", capabilities: dict[str, Any] | None = None) -> None:
        self.end = end
        self.version = version
        self.capabilities = capabilities if capabilities is not None else {"tools": {}, "logging": {}}
        self.received: list[Any] = []
        end.set_receiver(self)

    def on_messages(self, messages: list[Any]) -> None:
        for msg in messages:
            self.received.append(msg)
            if msg.get("method") == "initialize":
                self.send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                    "protocolVersion": self.version, "capabilities": self.capabilities,
                    "serverInfo": {"name": "scripted", "version": "1"}, "instructions": "be kind"}})

    def on_undeliverable(self, request_id: Any, reason: str) -> None:
        raise AssertionError(reason)

    def on_gone(self, gone: Gone) -> None:
        pass

    def send(self, msg: Any) -> None:
        self.end.send(dumps(msg))

    def methods(self) -> list[str]:
        return [m.get("method", "<response>") for m in self.received]

    def find(self, method: str) -> dict[str, Any]:
        return next(m for m in self.received if m.get("method") == method)


async def opened(**kwargs: Any) -> tuple[ClientSession, Server]:
    a, b = memory_pair()
    version = kwargs.pop("version", "2025-11-25")
    server = Server(b, version=version, capabilities=kwargs.pop("capabilities", None))
    session = ClientSession("srv", a, client_info={"name": "test", "version": "0"}, **kwargs)
    await session.open()
    return session, server


async def test_handshake_negotiates_and_announces_initialized() -> None:
    session, server = await opened(capabilities_for=lambda v: {"roots": {"listChanged": True}})
    assert session.protocol_version == "2025-11-25" and session.version.tasks
    assert session.server_info == {"name": "scripted", "version": "1"}
    assert session.instructions == "be kind"
    assert session.has_capability("tools") and not session.has_capability("prompts")
    assert await wait_for(lambda: "notifications/initialized" in server.methods())
    init = server.find("initialize")
    assert init["params"]["protocolVersion"] == "2025-11-25"
    assert init["params"]["capabilities"] == {"roots": {"listChanged": True}}


async def test_an_older_version_is_accepted_and_its_row_used() -> None:
    session, _ = await opened(version="2025-03-26")
    assert session.protocol_version == "2025-03-26"
    assert session.version.batches and not session.version.tasks


async def test_an_unknown_version_is_refused_naming_both() -> None:
    with pytest.raises(ProtocolError, match="'1999-01-01'.*offered '2025-11-25'") as info:
        await opened(version="1999-01-01")
    assert info.value.server == "srv"


async def test_progress_token_is_the_request_id_and_reaches_the_callback() -> None:
    session, server = await opened()
    seen: list[dict[str, Any]] = []
    task = asyncio.ensure_future(session.request("tools/call", {"name": "x", "arguments": {}}, progress=seen.append))
    assert await wait_for(lambda: "tools/call" in server.methods())
    call = server.find("tools/call")
    token = call["params"]["_meta"]["progressToken"]
    assert token == call["id"]
    server.send({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, "progress": 1}})
    server.send({"jsonrpc": "2.0", "id": call["id"], "result": {"content": []}})
    assert await task == {"content": []}
    assert seen == [{"progressToken": token, "progress": 1}]


async def test_giving_up_sends_cancelled_but_never_for_initialize() -> None:
    session, server = await opened()
    with pytest.raises(TimeoutError):
        await session.request("tools/call", {"name": "slow", "arguments": {}}, timeout=0.05)
    assert await wait_for(lambda: "notifications/cancelled" in server.methods())
    cancelled = server.find("notifications/cancelled")
    assert cancelled["params"] == {"requestId": server.find("tools/call")["id"], "reason": "request timed out"}
    # The rule itself: an abandoned initialize is never cancelled.
    before = server.methods().count("notifications/cancelled")
    call = session.peer.start_request("initialize", {})
    session.abandon(call)
    session.notify("notifications/sync")
    assert await wait_for(lambda: "notifications/sync" in server.methods())
    assert server.methods().count("notifications/cancelled") == before


async def test_ping_is_answered_at_once_and_undeclared_requests_refused() -> None:
    asked: list[str] = []

    async def on_request(method: str, params: dict[str, Any]) -> Any:
        asked.append(method)
        return {"roots": []}

    _session, server = await opened(on_request=on_request, capabilities_for=lambda v: {})
    server.send({"jsonrpc": "2.0", "id": "p", "method": "ping"})
    server.send({"jsonrpc": "2.0", "id": "s", "method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 1}})
    server.send({"jsonrpc": "2.0", "id": "r", "method": "roots/list"})
    assert await wait_for(lambda: len([m for m in server.received if "method" not in m]) == 3)
    replies = {m["id"]: m for m in server.received if "method" not in m}
    assert replies["p"]["result"] == {}
    assert replies["s"]["error"]["code"] == -32601 and "did not declare" in replies["s"]["error"]["message"]
    assert replies["r"]["error"]["code"] == -32601  # roots were not declared either
    assert asked == []


async def test_declared_requests_reach_the_host_and_answers_are_checked() -> None:
    async def on_request(method: str, params: dict[str, Any]) -> Any:
        return {"roots": [{"uri": "file:///tmp", "name": "tmp"}]} if params.get("ok") else {"roots": "bad"}

    _session, server = await opened(
        on_request=on_request, capabilities_for=lambda v: {"roots": {"listChanged": True}}
    )
    server.send({"jsonrpc": "2.0", "id": 1, "method": "roots/list", "params": {"ok": True}})
    server.send({"jsonrpc": "2.0", "id": 2, "method": "roots/list", "params": {}})
    assert await wait_for(lambda: len([m for m in server.received if "method" not in m]) == 2)
    replies = {m["id"]: m for m in server.received if "method" not in m}
    assert replies[1]["result"]["roots"][0]["uri"] == "file:///tmp"
    assert replies[2]["error"]["code"] == -32603 and "answer was invalid" in replies[2]["error"]["message"]


async def test_a_server_request_with_params_not_an_object_is_answered() -> None:
    """A string or a number as params is refused -32602 (the server waits for an answer);
    an array keeps its old treatment (read as no params; strict checks refuse it)."""
    asked: list[Any] = []

    async def on_request(method: str, params: dict[str, Any]) -> Any:
        asked.append(params)
        return {"roots": []}

    _session, server = await opened(on_request=on_request, capabilities_for=lambda v: {"roots": {}})
    server.send({"jsonrpc": "2.0", "id": 1, "method": "roots/list", "params": "all"})
    server.send({"jsonrpc": "2.0", "id": 2, "method": "roots/list", "params": 7})
    server.send({"jsonrpc": "2.0", "id": 3, "method": "roots/list", "params": [1]})
    assert await wait_for(lambda: len([m for m in server.received if "method" not in m]) == 3)
    replies = {m["id"]: m for m in server.received if "method" not in m}
    assert replies[1]["error"]["code"] == -32602
    assert replies[1]["error"]["message"] == "request 'roots/list' has params of type string: params must be an object"
    assert replies[2]["error"]["code"] == -32602 and "of type number" in replies[2]["error"]["message"]
    assert replies[3]["result"] == {"roots": []} and asked == [{}]


async def test_notifications_reach_the_host_and_cancelled_stops_a_handler() -> None:
    notes: list[tuple[str, dict[str, Any]]] = []
    started, stopped = asyncio.Event(), asyncio.Event()

    async def on_request(method: str, params: dict[str, Any]) -> Any:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            stopped.set()
            raise

    _session, server = await opened(
        on_request=on_request, on_notification=lambda m, p: notes.append((m, p)),
        capabilities_for=lambda v: {"roots": {}},
    )
    server.send({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "hi"}})
    server.send({"jsonrpc": "2.0", "id": 9, "method": "roots/list"})
    await asyncio.wait_for(started.wait(), 5)
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}})
    await asyncio.wait_for(stopped.wait(), 5)
    assert notes[0] == ("notifications/message", {"level": "info", "data": "hi"})
    assert notes[1][0] == "notifications/cancelled"


async def test_strict_checks_fail_a_malformed_result() -> None:
    session, server = await opened(validate_messages="strict")
    task = asyncio.ensure_future(session.request("tools/list"))
    assert await wait_for(lambda: "tools/list" in server.methods())
    server.send({"jsonrpc": "2.0", "id": server.find("tools/list")["id"], "result": {"tools": "nope"}})
    with pytest.raises(ProtocolError, match="tools"):
        await task


async def test_closing_the_session_reports_how_it_ended() -> None:
    closed: list[Any] = []
    session, server = await opened(on_closed=closed.append)
    task = asyncio.ensure_future(session.request("tools/list"))
    assert await wait_for(lambda: "tools/list" in server.methods())
    server.end.peer_gone("server exited with code 9")
    with pytest.raises(Exception, match="exited with code 9"):
        await task
    assert len(closed) == 1 and session.closed and session.gone is not None


async def test_server_requests_are_bounded_per_kind() -> None:
    running, peak, release = 0, 0, asyncio.Event()

    async def on_request(method: str, params: dict[str, Any]) -> Any:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await release.wait()
        running -= 1
        return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "m"}

    session, server = await opened(on_request=on_request, capabilities_for=lambda v: {"sampling": {}})
    session.request_queue = 2
    ask = {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}
    for i in range(10):
        server.send({"jsonrpc": "2.0", "id": i, "method": "sampling/createMessage", "params": ask})
    # 4 run, 2 wait, the other 4 are refused at once.
    assert await wait_for(lambda: len([m for m in server.received if "method" not in m]) == 4)
    refused = [m for m in server.received if "method" not in m]
    assert all(m["error"]["code"] == -32603 and "too many sampling/createMessage" in m["error"]["message"]
               for m in refused)
    assert peak == 4
    release.set()
    assert await wait_for(lambda: len([m for m in server.received if "method" not in m]) == 10)
    answered = [m for m in server.received if "method" not in m and "result" in m]
    assert len(answered) == 6 and peak == 4

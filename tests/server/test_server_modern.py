"""The 2026-07-28 era of the server session (``mcphost.server.modern``): discover, ``_meta``
required, -32022, ``resultType`` and ``serverInfo``, and a question of the backend asked as a
multi-round-trip request whose ``requestState`` a client cannot forge."""

from __future__ import annotations

import asyncio
from typing import Any

from memory_client import send, session_with

from mcphost.protocol.modern import META_CAPABILITIES, META_SERVER_INFO, META_VERSION
from mcphost.server.context import Backend, RequestContext
from mcphost.server.session import ServerSession

MODERN = "2026-07-28"


def meta(caps: dict[str, Any] | None = None, version: str = MODERN) -> dict[str, Any]:
    return {META_VERSION: version, META_CAPABILITIES: caps if caps is not None else {}}


class Asking(Backend):
    def capabilities(self) -> dict[str, Any]:
        return {"tools": {"listChanged": True}}

    def server_info(self) -> dict[str, Any]:
        return {"name": "asking", "version": "2"}

    async def list(self, kind: str, ctx: RequestContext) -> list[dict[str, Any]]:
        return [{"name": "ask", "inputSchema": {"type": "object"}}]

    async def call_tool(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        first = await ctx.request("elicitation/create", {"message": "name?", "requestedSchema": {}})
        second = await ctx.request("sampling/createMessage", {"messages": [], "maxTokens": 5})
        text = f"{first['content']['name']} {second['content']['text']}"
        return {"content": [{"type": "text", "text": text}]}


async def test_discover_and_the_meta_rules() -> None:
    client, recorder = await session_with(Asking())
    send(client, 1, "server/discover", {"_meta": meta()})
    result = (await recorder.answer(1))["result"]
    assert result["supportedVersions"][0] == MODERN and "2025-11-25" in result["supportedVersions"]
    assert result["capabilities"] == {"tools": {"listChanged": True}, "logging": {}}
    assert result["_meta"][META_SERVER_INFO] == {"name": "asking", "version": "2"}
    assert result["resultType"] == "complete"
    send(client, 2, "server/discover", {})
    assert (await recorder.answer(2))["error"]["code"] == -32602
    send(client, 3, "tools/list", {"_meta": {META_VERSION: MODERN}})  # capabilities missing
    assert (await recorder.answer(3))["error"]["code"] == -32602
    send(client, 4, "tools/list", {"_meta": meta(version="2099-01-01")})
    error = (await recorder.answer(4))["error"]
    assert error["code"] == -32022 and MODERN in error["data"]["supported"]
    send(client, 5, "tools/list", {"_meta": meta()})
    listed = (await recorder.answer(5))["result"]
    assert listed["tools"][0]["name"] == "ask" and listed["resultType"] == "complete"
    send(client, 6, "ping", {"_meta": meta()})  # not a method of this era
    assert (await recorder.answer(6))["error"]["code"] == -32601


async def test_questions_become_input_rounds_and_the_state_cannot_be_forged() -> None:
    client, recorder = await session_with(Asking())
    caps = {"elicitation": {}, "sampling": {}}
    params = {"_meta": meta(caps), "name": "ask", "arguments": {}}
    send(client, 1, "tools/call", params)
    first = (await recorder.answer(1))["result"]
    assert first["resultType"] == "input_required"
    (key, asked), = first["inputRequests"].items()
    assert asked["method"] == "elicitation/create"
    forged = first["requestState"][:-1] + ("0" if first["requestState"][-1] != "0" else "1")
    send(client, 2, "tools/call", {**params, "inputResponses": {}, "requestState": forged})
    assert (await recorder.answer(2))["error"]["code"] == -32602
    answer = {"action": "accept", "content": {"name": "Ada"}}
    send(client, 3, "tools/call", {**params, "inputResponses": {key: answer}, "requestState": first["requestState"]})
    second = (await recorder.answer(3))["result"]
    (key2, asked2), = second["inputRequests"].items()
    assert asked2["method"] == "sampling/createMessage"
    # The first state was good for one retry only.
    send(client, 4, "tools/call", {**params, "inputResponses": {key: answer}, "requestState": first["requestState"]})
    assert (await recorder.answer(4))["error"]["code"] == -32602
    sampled = {"role": "assistant", "content": {"type": "text", "text": "Lovelace"}, "model": "m"}
    send(client, 5, "tools/call", {**params, "inputResponses": {key2: sampled},
                                   "requestState": second["requestState"]})
    done = (await recorder.answer(5))["result"]
    assert done["content"][0]["text"] == "Ada Lovelace" and done["resultType"] == "complete"
    assert done["_meta"][META_SERVER_INFO]["name"] == "asking"


async def test_a_question_the_request_cannot_answer_is_32021() -> None:
    client, recorder = await session_with(Asking())
    send(client, 1, "tools/call", {"_meta": meta({"sampling": {}}), "name": "ask", "arguments": {}})
    error = (await recorder.answer(1))["error"]
    assert error["code"] == -32021 and error["data"] == {"requiredCapabilities": {"elicitation": {}}}


async def test_a_legacy_session_is_unchanged_beside_it() -> None:
    client, recorder = await session_with(Asking())
    send(client, 1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                   "clientInfo": {"name": "t", "version": "1"}})
    assert (await recorder.answer(1))["result"]["protocolVersion"] == "2025-11-25"
    send(client, None, "notifications/initialized")
    send(client, 2, "tools/list")
    assert "resultType" not in (await recorder.answer(2))["result"]


class Listened(Asking):
    def __init__(self) -> None:
        self.sessions: list[ServerSession] = []
        self.subscribed: list[tuple[str, bool]] = []

    def capabilities(self) -> dict[str, Any]:
        return {"tools": {"listChanged": True}, "resources": {"subscribe": True}}

    def opened(self, session: ServerSession) -> None:
        self.sessions.append(session)

    async def subscribe(self, uri: str, on: bool, ctx: RequestContext) -> None:
        self.subscribed.append((uri, on))


async def test_listen_streams_the_changes_asked_for_until_cancelled() -> None:
    backend = Listened()
    client, recorder = await session_with(backend)
    wanted = {"toolsListChanged": True, "promptsListChanged": True, "resourceSubscriptions": ["a://1"]}
    send(client, 7, "subscriptions/listen", {"_meta": meta(), "notifications": wanted})

    async def note(method: str) -> dict[str, Any]:
        while True:
            for message in recorder.messages:
                if message.get("method") == method:
                    recorder.messages.remove(message)
                    return message["params"]  # type: ignore[no-any-return]
            recorder.arrived.clear()
            await asyncio.wait_for(recorder.arrived.wait(), 10)

    ack = await note("notifications/subscriptions/acknowledged")
    # prompts are not offered: not honoured.
    assert ack == {"_meta": {"io.modelcontextprotocol/subscriptionId": 7},
                   "notifications": {"toolsListChanged": True, "resourceSubscriptions": ["a://1"]}}
    assert backend.subscribed == [("a://1", True)]
    session, = backend.sessions
    session.notify("notifications/resources/updated", {"uri": "a://2"})  # not asked for: dropped
    session.notify("notifications/resources/updated", {"uri": "a://1"})
    session.notify("notifications/tools/list_changed")
    updated = await note("notifications/resources/updated")
    assert updated == {"uri": "a://1", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}
    changed = await note("notifications/tools/list_changed")
    assert changed["_meta"] == {"io.modelcontextprotocol/subscriptionId": 7}
    send(client, None, "notifications/cancelled", {"requestId": 7})
    while backend.subscribed[-1] != ("a://1", False):
        recorder.arrived.clear()
        send(client, 8, "tools/list", {"_meta": meta()})  # something to wait on
        await recorder.answer(8)
        recorder.messages.clear()
    assert not any(m.get("method") == "notifications/resources/updated" for m in recorder.messages)


class Keyed(Backend):
    """Asks three questions at once under keys of its own: a good one, one too long, and the
    good one again (a hostile backend repeating a key that is waiting)."""

    async def list(self, kind: str, ctx: RequestContext) -> list[dict[str, Any]]:
        return [{"name": "ask", "inputSchema": {"type": "object"}}]

    async def call_tool(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        asked = {"message": "name?", "requestedSchema": {}}
        answers = await asyncio.gather(*(ctx.request("elicitation/create", asked, key=key)
                                         for key in ("user_name", "k" * 200, "user_name")))
        return {"content": [{"type": "text", "text": " ".join(a["content"]["name"] for a in answers)}]}


async def test_a_question_keeps_its_own_key_when_it_can() -> None:
    client, recorder = await session_with(Keyed())
    params = {"_meta": meta({"elicitation": {}}), "name": "ask", "arguments": {}}
    send(client, 1, "tools/call", params)
    first = (await recorder.answer(1))["result"]
    keys = list(first["inputRequests"])
    assert keys[0] == "user_name" and len(keys) == 3 and len(set(keys)) == 3
    assert all(len(k) <= 128 for k in keys)  # the long one and the repeated one are named here
    answers = {k: {"action": "accept", "content": {"name": f"n{i}"}} for i, k in enumerate(keys)}
    send(client, 2, "tools/call", {**params, "inputResponses": answers, "requestState": first["requestState"]})
    done = (await recorder.answer(2))["result"]
    assert done["content"][0]["text"] == "n0 n1 n2"


class Slow(Backend):
    def __init__(self) -> None:
        self.release = asyncio.Event()

    async def list(self, kind: str, ctx: RequestContext) -> list[dict[str, Any]]:
        await self.release.wait()
        return []


async def test_requests_in_flight_are_bounded_per_client_in_this_era_too() -> None:
    backend = Slow()
    client, recorder = await session_with(backend, max_in_flight=1)
    send(client, 1, "tools/list", {"_meta": meta()})
    send(client, 2, "tools/list", {"_meta": meta()})
    error = (await recorder.answer(2))["error"]
    assert error["code"] == -32000 and "too many requests in flight (at most 1 per client)" in error["message"]
    backend.release.set()
    assert (await recorder.answer(1))["result"]["tools"] == []
    send(client, 3, "tools/list", {"_meta": meta()})  # the first one's place is free again
    assert (await recorder.answer(3))["result"]["resultType"] == "complete"

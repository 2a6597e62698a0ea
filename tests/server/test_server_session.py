"""The MCP server session on its own (``mcphost.server.session``): the handshake's version
negotiation, what is refused before and after it, subscriptions bounded, the client's
capabilities respected, and a backend's failure answered without a traceback."""

from __future__ import annotations

from typing import Any

import pytest
from memory_client import send, session_with

from mcphost.errors import UsageError
from mcphost.server.context import Backend, RequestContext
from mcphost.server.session import ServerLimits


class Failing(Backend):
    def capabilities(self) -> dict[str, Any]:
        return {"tools": {}, "resources": {"subscribe": True}, "completions": {}}

    async def list(self, kind: str, ctx: RequestContext) -> list[dict[str, Any]]:
        raise KeyError("a secret detail")

    async def subscribe(self, uri: str, on: bool, ctx: RequestContext) -> None:
        return None

    async def call_tool(self, name: str, arguments: dict[str, Any], ctx: RequestContext) -> dict[str, Any]:
        return await ctx.request("sampling/createMessage", {"messages": [], "maxTokens": 1})


def init(version: str) -> dict[str, Any]:
    return {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


@pytest.mark.parametrize("asked, answered", [("2025-11-25", "2025-11-25"), ("2024-11-05", "2024-11-05"),
                                             ("1999-01-01", "2025-11-25")])
async def test_the_version_is_echoed_or_our_newest(asked: str, answered: str) -> None:
    client, recorder = await session_with(Failing())
    send(client, 1, "initialize", init(asked))
    result = (await recorder.answer(1))["result"]
    assert result["protocolVersion"] == answered
    # 2024-11-05 had no completions capability flag (completion was always there).
    assert ("completions" in result["capabilities"]) is (answered != "2024-11-05")
    assert "logging" in result["capabilities"]


async def test_requests_before_and_after_the_handshake() -> None:
    client, recorder = await session_with(Failing(), max_subscriptions=1)
    send(client, 1, "tools/list")
    send(client, 2, "ping")
    assert (await recorder.answer(1))["error"]["code"] == -32600
    assert (await recorder.answer(2))["result"] == {}
    send(client, 3, "initialize", init("2025-11-25"))
    await recorder.answer(3)
    send(client, None, "notifications/initialized")
    send(client, 4, "initialize", init("2025-11-25"))
    assert (await recorder.answer(4))["error"]["code"] == -32600
    send(client, 5, "tools/list")
    failed = (await recorder.answer(5))["error"]
    assert failed == {"code": -32603, "message": "tools/list: internal error"}  # no detail, no traceback
    send(client, 6, "resources/subscribe", {"uri": "a://1"})
    send(client, 7, "resources/subscribe", {"uri": "a://2"})
    assert (await recorder.answer(6))["result"] == {}
    assert "too many subscriptions" in (await recorder.answer(7))["error"]["message"]
    send(client, 8, "logging/setLevel", {"level": "loud"})
    assert (await recorder.answer(8))["error"]["code"] == -32602
    send(client, 9, "tools/call", {"name": 5})
    assert (await recorder.answer(9))["error"]["code"] == -32602


@pytest.mark.parametrize("params, kind", [("x", "string"), (3, "number"), (True, "boolean"), ([1], "array")])
async def test_params_not_an_object_are_answered_invalid(params: Any, kind: str) -> None:
    client, recorder = await session_with(Failing())
    send(client, 1, "initialize", init("2025-11-25"))
    await recorder.answer(1)
    send(client, None, "notifications/initialized")
    send(client, 2, "tools/call", params)
    error = (await recorder.answer(2))["error"]
    assert error["code"] == -32602 and "params must be an object" in error["message"]
    if kind != "array":
        assert f"params of type {kind}" in error["message"]
    send(client, 3, "initialize", params)  # before or after the handshake, the same answer
    assert (await recorder.answer(3))["error"]["code"] == -32602


async def test_the_client_is_asked_only_what_it_declared() -> None:
    client, recorder = await session_with(Failing())
    send(client, 1, "initialize", init("2025-11-25"))  # no sampling capability declared
    await recorder.answer(1)
    send(client, None, "notifications/initialized")
    send(client, 2, "tools/call", {"name": "x"})
    error = (await recorder.answer(2))["error"]
    assert error["code"] == -32601 and "did not declare" in error["message"]
    assert not any(m.get("method") == "sampling/createMessage" for m in recorder.messages)


def test_limits_are_checked() -> None:
    with pytest.raises(UsageError, match="max_in_flight"):
        ServerLimits(max_in_flight=0)
    with pytest.raises(UsageError, match="request_timeout"):
        ServerLimits(request_timeout=-1)

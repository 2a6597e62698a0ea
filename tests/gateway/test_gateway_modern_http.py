"""The gateway's HTTP front in the 2026-07-28 era: no session, the headers checked against the
body (400 with -32020), ``_meta`` required (400, -32602), -32022 with ``data.supported``, a
multi-round request answered across two POSTs (each its own session) with a state a client
cannot forge; and the official SDK client (``mcp.Client`` at 2026-07-28) against it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from test_gateway_http import Front, post, raw, serving
from test_gateway_inprocess import two_servers

from mcphost.protocol.modern import META_CAPABILITIES, META_VERSION

MODERN = "2026-07-28"
META = {META_VERSION: MODERN, META_CAPABILITIES: {"sampling": {}}}


@pytest.fixture
async def front() -> AsyncIterator[Front]:
    gateway, http = await serving(two_servers())
    try:
        yield Front(gateway, http)
    finally:
        await http.aclose()
        await gateway.aclose()


async def ask(port: int, rid: int, method: str, params: dict[str, Any], **headers: str) -> tuple[int, Any]:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    given = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method, **headers}
    extra = "".join(f"{k}: {v}\r\n" for k, v in given.items())
    status, answered, data = await raw(port, post(body, extra=extra))
    assert "mcp-session-id" not in answered
    return status, json.loads(data)


async def test_stateless_requests_and_their_rules(front: Front) -> None:
    port = front.port
    status, found = await ask(port, 1, "server/discover", {"_meta": META})
    assert status == 200 and found["result"]["supportedVersions"][0] == MODERN
    status, listed = await ask(port, 2, "tools/list", {"_meta": META})
    assert status == 200 and len(listed["result"]["tools"]) == 6
    status, mismatch = await ask(port, 3, "tools/list", {"_meta": META}, **{"Mcp-Method": "tools/call"})
    assert status == 400 and mismatch["error"]["code"] == -32020
    status, unnamed = await ask(port, 4, "tools/call", {"_meta": META, "name": "b.echo", "arguments": {}},
                                **{"Mcp-Name": "a.echo"})
    assert status == 400 and unnamed["error"]["code"] == -32020
    status, no_meta = await ask(port, 5, "tools/list", {"_meta": {META_VERSION: MODERN}})
    assert status == 400 and no_meta["error"]["code"] == -32602
    old = {**META, META_VERSION: "2099-01-01"}
    status, unsupported = await ask(port, 6, "tools/list", {"_meta": old}, **{"MCP-Protocol-Version": "2099-01-01"})
    assert status == 400 and unsupported["error"]["code"] == -32022
    assert MODERN in unsupported["error"]["data"]["supported"]
    assert front.gateway.sessions == set()  # every request's session ended with its answer


async def test_a_multi_round_request_across_two_posts(front: Front) -> None:
    port = front.port
    params = {"_meta": META, "name": "a.ask", "arguments": {}}
    status, first = await ask(port, 1, "tools/call", params, **{"Mcp-Name": "a.ask"})
    interim = first["result"]
    assert status == 200 and interim["resultType"] == "input_required"
    (key, asked), = interim["inputRequests"].items()
    assert asked["method"] == "sampling/createMessage"
    sampled = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "over two posts"}}
    forged = {**params, "inputResponses": {key: sampled}, "requestState": interim["requestState"] + "0"}
    status, refused = await ask(port, 2, "tools/call", forged, **{"Mcp-Name": "a.ask"})
    assert refused["error"]["code"] == -32602
    retry = {**params, "inputResponses": {key: sampled}, "requestState": interim["requestState"]}
    status, done = await ask(port, 3, "tools/call", retry, **{"Mcp-Name": "a.ask"})
    assert status == 200 and "over two posts" in done["result"]["content"][0]["text"]
    assert not front.http.rounds.exchanges


async def test_the_official_sdk_client_at_2026_07_28(front: Front) -> None:
    import mcp
    from mcp import types

    async def sampling(_ctx: Any, _params: Any) -> Any:
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="sampled for the SDK"))

    steps: list[float] = []

    async def progress(value: float, _total: float | None, _message: str | None) -> None:
        steps.append(value)

    async with mcp.Client(front.url, mode=MODERN, sampling_callback=sampling) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "a.ask" in names and "b.echo" in names
        echoed = await client.call_tool("b.echo", {"text": "hi"})
        assert not echoed.is_error
        await client.call_tool("a.count", {}, progress_callback=progress)
        assert steps == [1, 2, 3]
        asked = await client.call_tool("a.ask", {})
        assert "sampled for the SDK" in asked.content[0].text  # type: ignore[union-attr]

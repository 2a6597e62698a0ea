"""The gateway's ASGI app (``mcphost.gateway.asgi_app``) under uvicorn: lifespan start and
stop, the official SDK client listing, calling, getting progress and a sampling request
relayed; the bounds and checks of the stdlib server apply unchanged."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from helpers import wait_for
from test_gateway_http import INIT, post, raw
from test_gateway_inprocess import two_servers

from mcphost import gateway
from mcphost.gateway.http import HttpOptions
from mcphost.serve import asgi_app  # the documented name (docs/serve.md)

uvicorn = pytest.importorskip("uvicorn", reason="uvicorn (in the 'test' extra) is not installed")


@pytest.fixture
async def port() -> AsyncIterator[int]:
    app = asgi_app(two_servers(), http=HttpOptions(max_body=10_000, allowed_hosts=["127.0.0.1", "localhost"]))
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="on", log_level="warning"))
    task = asyncio.ensure_future(server.serve())
    assert await wait_for(lambda: server.started or task.done(), 60) and server.started
    try:
        yield int(server.servers[0].sockets[0].getsockname()[1])
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
    assert app.gateway.host.state.value == "stopped"  # the lifespan shut the host down


async def test_the_sdk_client_through_uvicorn(port: int) -> None:
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client

    async def sampling(_ctx: Any, _params: Any) -> Any:
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="sampled via uvicorn"))

    async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_), \
            ClientSession(read, write, sampling_callback=sampling) as session:
        await session.initialize()
        assert len((await session.list_tools()).tools) == 6
        steps: list[float] = []

        async def progress(value: float, _total: float | None, _message: str | None) -> None:
            steps.append(value)

        await session.call_tool("a.count", {}, progress_callback=progress)
        assert steps == [1, 2, 3]
        asked = await session.call_tool("a.ask", {})
        assert "sampled via uvicorn" in asked.content[0].text  # type: ignore[union-attr]


async def test_bounds_and_checks_apply_under_uvicorn(port: int) -> None:
    status, _, _ = await raw(port, post(b"x" * 20_000))
    assert status == 413
    status, _, _ = await raw(port, post(INIT, host="evil.example.com"))
    assert status == 403
    status, headers, _ = await raw(port, post(INIT))
    assert status == 200 and headers["mcp-session-id"]
    status, _, body = await raw(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 200 and b'"a": "ready"' in body.replace(b'":"', b'": "')


async def test_the_parts_waiting_go_out_as_one_message() -> None:
    """AsgiWire.pump: what was written while a send was under way goes out in one body
    message (one write for the ASGI server, not one small segment per part), in order,
    the last one ending the response."""
    from mcphost.gateway.asgi import AsgiWire

    sent: list[dict[str, Any]] = []
    first_sent = asyncio.Event()
    go_on = asyncio.Event()

    async def send(message: Any) -> None:
        sent.append(dict(message))
        first_sent.set()
        await go_on.wait()

    async def receive() -> Any:
        return {"type": "http.disconnect"}

    wire = AsgiWire(receive, send)
    pump = asyncio.ensure_future(wire.pump())
    wire.start_sse({"Mcp-Session-Id": "s"})
    await first_sent.wait()  # the head is being sent: what follows waits in the queue
    for part in (b"id: 1\n", b"data: {}\n\n", b"id: 2\n"):
        wire.write(part)
    wire.close()
    go_on.set()
    await asyncio.wait_for(pump, 10)
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1] == {"type": "http.response.body", "body": b"id: 1\ndata: {}\n\nid: 2\n", "more_body": False}


def test_mcphost_serve_names_the_gateway_entry_points() -> None:
    from mcphost import serve
    from mcphost.gateway.app import serve_http, serve_stdio

    assert serve.asgi_app is gateway.asgi_app
    assert (serve.serve_http, serve.serve_stdio) == (serve_http, serve_stdio)
    assert serve.__all__ == ["asgi_app", "serve_http", "serve_stdio"]

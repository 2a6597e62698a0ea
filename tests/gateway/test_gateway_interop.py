"""Real servers behind ``mcphost serve``: the filesystem server and server-everything (npx),
the official SDK client in front over HTTP: the aggregated tools of both, a file read, the
progress of a long operation, and server-everything's sampling request answered by the
client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import needs_npx
from test_gateway_http import serving

pytestmark = [pytest.mark.interop, needs_npx]


async def test_filesystem_and_everything_through_the_gateway(tmp_path: Path) -> None:
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamable_http_client

    (tmp_path / "note.txt").write_text("hello through the gateway", encoding="utf-8")
    config = {"mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", str(tmp_path)]},
        "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"]},
    }}
    gateway, http = await serving(config)

    async def sampling(_ctx: Any, _params: Any) -> Any:
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="answered by the client"))

    try:
        url = f"http://127.0.0.1:{http.address[1]}/mcp"
        async with streamable_http_client(url) as (read, write, *_), \
                ClientSession(read, write, sampling_callback=sampling) as session:
            await session.initialize()
            names = {t.name for t in (await session.list_tools()).tools}
            assert {"filesystem.read_text_file", "everything.echo", "everything.trigger-sampling-request"} <= names
            read_back = await session.call_tool("filesystem.read_text_file", {"path": str(tmp_path / "note.txt")})
            assert "hello through the gateway" in read_back.content[0].text  # type: ignore[union-attr]
            steps: list[float] = []

            async def progress(value: float, _total: float | None, _message: str | None) -> None:
                steps.append(value)

            await session.call_tool("everything.trigger-long-running-operation", {"duration": 1, "steps": 3},
                                    progress_callback=progress)
            assert len(steps) == 3
            sampled = await session.call_tool("everything.trigger-sampling-request", {"prompt": "hi", "maxTokens": 5})
            assert "answered by the client" in str(sampled.content)
    finally:
        await http.aclose()
        await gateway.aclose()

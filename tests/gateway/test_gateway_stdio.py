"""``mcphost serve --stdio`` as a process: the official SDK client and mcphost's own client
start it as their one server (two fake servers behind it), list, call, get progress and have
a sampling request relayed; junk on its stdin is answered, never a traceback on stdout."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from test_gateway_inprocess import two_servers

from mcphost import MCPHost
from mcphost.testing import package_root


def serve_entry(tmp_path: Path, *extra: str) -> dict[str, Any]:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(two_servers()), encoding="utf-8")
    return {"command": sys.executable, "args": ["-m", "mcphost", "serve", "--stdio", *extra, str(path)],
            "env": {"PYTHONPATH": package_root()}}


async def test_the_official_sdk_client_over_stdio(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, types
    from mcp.client.stdio import stdio_client

    entry = serve_entry(tmp_path)
    params = StdioServerParameters(command=entry["command"], args=entry["args"],
                                   env={**os.environ, **entry["env"]})

    async def sampling(_ctx: Any, _params: Any) -> Any:
        return types.CreateMessageResult(role="assistant", model="m",
                                         content=types.TextContent(type="text", text="sampled over stdio"))

    async with stdio_client(params) as (read, write), \
            ClientSession(read, write, sampling_callback=sampling) as session:
        await session.initialize()
        names = [t.name for t in (await session.list_tools()).tools]
        assert names == ["a.echo", "a.count", "a.ask", "a.grow", "a.slow", "b.echo"]
        steps: list[float] = []

        async def progress(value: float, _total: float | None, _message: str | None) -> None:
            steps.append(value)

        await session.call_tool("a.count", {}, progress_callback=progress)
        assert steps == [1, 2, 3]
        asked = await session.call_tool("a.ask", {})
        assert "sampled over stdio" in asked.content[0].text  # type: ignore[union-attr]


async def test_mcphosts_own_client_over_stdio(tmp_path: Path) -> None:
    async with MCPHost({"mcpServers": {"gw": serve_entry(tmp_path, "--naming", "underscore")}},
                       handle_signals=False) as client:
        client.on_sampling(lambda _s, _p: {"role": "assistant", "model": "m",
                                           "content": {"type": "text", "text": "sampled by mcphost"}})
        names = [t["name"] for t in client.get_tools()["gw"]["tools"]]
        assert "a__count" in names and "b__echo" in names
        seen: list[Any] = []
        await client.call_tool("gw.a__count", {}, progress=seen.append)
        assert [p["progress"] for p in seen] == [1, 2, 3]


async def test_junk_on_stdin_is_answered_on_stdout(tmp_path: Path) -> None:
    entry = serve_entry(tmp_path)
    proc = await asyncio.create_subprocess_exec(
        entry["command"], *entry["args"], env={**os.environ, **entry["env"]},
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write(b"this is not json\n"
                         b'{"jsonrpc":"2.0","id":7,"method":"tools/list"}\n'
                         b'{"jsonrpc":"2.0","id":8,"method":"ping"}\n')
        await proc.stdin.drain()
        answers = [json.loads(await asyncio.wait_for(proc.stdout.readline(), 30)) for _ in range(3)]
        assert answers[0]["error"]["code"] == -32700
        assert answers[1]["id"] == 7 and answers[1]["error"]["code"] == -32600  # not initialized yet
        assert answers[2] == {"jsonrpc": "2.0", "id": 8, "result": {}}
        proc.stdin.close()
        assert await asyncio.wait_for(proc.wait(), 30) == 0  # the end of input ends it
        assert b"Traceback" not in await proc.stderr.read() if proc.stderr else True
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_a_server_that_fails_is_reported_and_the_others_served(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    config = two_servers()
    config["mcpServers"]["broken"] = {"command": str(tmp_path / "no-such-command")}
    path.write_text(json.dumps(config), encoding="utf-8")
    entry = {"command": sys.executable, "args": ["-m", "mcphost", "serve", str(path)],
             "env": {"PYTHONPATH": package_root()}}
    async with MCPHost({"mcpServers": {"gw": entry}}, handle_signals=False) as client:
        names = [t["name"] for t in client.get_tools()["gw"]["tools"]]
        assert "a.echo" in names and not any(n.startswith("broken.") for n in names)
        assert any("broken did not start and is not served" in line for line in client.servers["gw"].stderr_tail())


async def test_fastmcp_client_over_stdio_sees_list_changed(tmp_path: Path) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StdioTransport
    from mcp import types

    entry = serve_entry(tmp_path)
    changed = asyncio.Event()

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if isinstance(root, types.ToolListChangedNotification):
            changed.set()

    transport = StdioTransport(command=entry["command"], args=entry["args"], env={**os.environ, **entry["env"]})
    # The handshake era, where list_changed comes unasked (the 2026-07-28 era's
    # subscriptions/listen is tested in test_gateway_modern.py).
    async with Client(transport, message_handler=on_message, mode="legacy") as client:
        names = [t.name for t in await client.list_tools()]
        assert "a.grow" in names and "b.echo" in names
        await client.call_tool("a.grow", {})
        await asyncio.wait_for(changed.wait(), 10)
        assert "a.new" in [t.name for t in await client.list_tools()]

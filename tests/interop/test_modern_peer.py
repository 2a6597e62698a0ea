"""A real 2026-07-28 server: the official Python SDK's (``tests/peers/sdk_modern_server.py``).

Over stdio (``protocol: "modern"``) and over Streamable HTTP (``protocol`` left to its
default, ``auto``: the probe finds the modern era), mcphost's listings and results equal
what the SDK's own client (``mcp.Client``, which speaks the same era) sees of the same
server; a multi-round-trip tool is answered by the application's legacy handlers; the
``Mcp-*`` headers reach the server; a tool whose ``x-mcp-header`` annotation is invalid is
not offered. The SDK is a test-only dependency: the module is skipped without it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import accepts, free_port

from mcphost import MCPHost
from mcphost.policy import NO_RETRY

pytest.importorskip("mcp", reason="the MCP Python SDK (PyPI 'mcp', in the 'test' extra) is not installed")

PEER = Path(__file__).resolve().parents[1] / "peers" / "sdk_modern_server.py"
STARTUP_TIMEOUT = 60.0
#: What both clients are compared on (the rest, e.g. serverInfo in _meta, is the SDK's).
LISTED = ("tools", "resources", "resourceTemplates", "prompts")


@pytest.fixture(scope="module")
def http_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("modern-peer") / "peer.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, str(PEER), "http", str(port)], stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not accepts(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the modern peer did not start:\n{log.read_text(errors='replace')[-3000:]}")
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def stdio_entry() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(PEER), "stdio"], "protocol": "modern"}


@contextlib.asynccontextmanager
async def host_for(entry: dict[str, Any]) -> AsyncIterator[MCPHost]:
    # strict: every message of the SDK's server is checked against the 2026-07-28 schemas.
    host = MCPHost({"mcpServers": {"m": entry}}, retry=NO_RETRY, handle_signals=False, validate_messages="strict")
    host.on_elicitation(lambda server, params: {"action": "accept", "content": {"name": "Ada"}})
    host.on_sampling(lambda server, params: {"role": "assistant", "model": "m",
                                             "content": {"type": "text", "text": "hello"}})
    host.on_roots(lambda server: [{"uri": "file:///work", "name": "work"}])
    async with host:
        yield host


async def sdk_sees(server: Any) -> dict[str, Any]:
    """What the SDK's own client lists, and its results of the calls compared below."""
    import mcp

    async with mcp.Client(server, mode="auto") as client:
        tools = await client.list_tools()
        resources = await client.list_resources()
        templates = await client.list_resource_templates()
        prompts = await client.list_prompts()
        stats = await client.call_tool("stats", {"values": [1, 2, 3]})
        read = await client.read_resource("info://server")
        prompt = await client.get_prompt("review", {"code": "x = 1", "language": "python"})

        def dump(model: Any) -> Any:
            return model.model_dump(by_alias=True, exclude_none=True, mode="json")

        return {
            "tools": [dump(t) for t in tools.tools], "resources": [dump(r) for r in resources.resources],
            "resourceTemplates": [dump(t) for t in templates.resource_templates],
            "prompts": [dump(p) for p in prompts.prompts],
            "stats": dump(stats), "read": dump(read), "prompt": dump(prompt),
        }


def same(ours: Any, theirs: Any) -> None:
    """Equal, but for the members either side leaves out when empty or default."""
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if v not in (None, {}, []) and k != "_meta"}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    assert clean(ours) == clean(theirs)


async def check_against_the_sdk(host: MCPHost, sdk: dict[str, Any]) -> None:
    info = host.get_tools("m")["m"]
    assert (info["era"], info["protocolVersion"]) == ("modern", "2026-07-28")
    for kind in LISTED:
        if kind == "tools":  # the SDK client keeps bad_header: mcphost drops it (invalid x-mcp-header)
            same(info[kind], [t for t in sdk[kind] if t["name"] != "bad_header"])
        else:
            same(info[kind], sdk[kind])
    same(await host.call_tool("m.stats", {"values": [1, 2, 3]}), sdk["stats"])
    same(await host.get_resource("info://server", server="m"), sdk["read"])
    same(await host.get_prompt("m.review", {"code": "x = 1", "language": "python"}), sdk["prompt"])
    # A tool that asks for input over three rounds: the application's own handlers answer.
    answer = await host.call_tool("m.interview", {"topic": "tea"})
    assert answer["content"][0]["text"] == "Ada with 1 root(s); the model says hello"


async def test_stdio_modern_equals_the_sdk_client() -> None:
    from mcp import StdioServerParameters

    sdk = await sdk_sees(StdioServerParameters(command=sys.executable, args=[str(PEER), "stdio"]))
    async with host_for(stdio_entry()) as host:
        await check_against_the_sdk(host, sdk)


async def test_http_auto_finds_the_modern_era_and_sends_the_headers(http_url: str) -> None:
    sdk = await sdk_sees(http_url)
    async with host_for({"url": http_url}) as host:
        await check_against_the_sdk(host, sdk)
        echoed = await host.call_tool("m.headers", {"region": "eu west\u00e9", "count": 3, "flag": True,
                                                    "note": "not a header"})
        headers = json.loads(echoed["content"][0]["text"])
        assert headers == {
            "mcp-method": "tools/call", "mcp-name": "headers", "mcp-protocol-version": "2026-07-28",
            "mcp-param-region": "=?base64?ZXUgd2VzdMOp?=", "mcp-param-count": "3", "mcp-param-flag": "true",
        }


async def test_http_cancellation_closes_the_stream_and_sends_no_notification(http_url: str) -> None:
    async with host_for({"url": http_url, "protocol": "modern"}) as host:
        before = int((await host.call_tool("m.cancellations", {}))["content"][0]["text"])
        progressed = asyncio.Event()
        call = asyncio.create_task(host.call_tool("m.count", {"steps": 100, "delay": 0.05},
                                                  progress=lambda params: progressed.set()))
        await asyncio.wait_for(progressed.wait(), 30)  # the tool runs
        sent = host.get_metrics()["m"]["transport"]["messages_out"]
        call.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await call
        for _ in range(200):  # the server notices the closed stream on its own time
            now = int((await host.call_tool("m.cancellations", {}))["content"][0]["text"])
            if now > before:
                break
            await asyncio.sleep(0.05)
        assert now == before + 1
        # Nothing was sent for the cancellation: only the polls above.
        assert host.get_metrics()["m"]["transport"]["messages_out"] == sent + _ + 1

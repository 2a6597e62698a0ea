"""One allowed-size message must not freeze the host, on the remote transports too (issue 21, item 4).

The same 47 MB ``tools/list`` of 1,000,000 tools the stdio test sends, from a stdlib server
in a child process (``tests/data/big_remote_server.py``): as a Streamable HTTP JSON body, as
an event of a Streamable HTTP response stream, as an event of the legacy HTTP+SSE stream,
and as a WebSocket text frame. Each transport hands it to the shared
:class:`~mcphost.transports.counted.InOrder`: its tokens are counted a slice per loop turn
and it is refused undecoded past ``max_message_tokens``; the healthy server beside it works.
"""

from __future__ import annotations

import asyncio
import importlib.util
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, LoopLag, fake

from mcphost import MCPHost
from mcphost._json import codec
from mcphost.bounds import Bounds
from mcphost.errors import UsageError
from mcphost.transports import remote as remote_module
from mcphost.transports import websocket as websocket_module

SERVER = str(Path(__file__).resolve().parent.parent / "data" / "big_remote_server.py")
URLS = {"http-json": "http://127.0.0.1:{}/mcp", "http-sse": "http://127.0.0.1:{}/mcp",
        "sse": "http://127.0.0.1:{}/sse", "ws": "ws://127.0.0.1:{}/mcp"}
TYPES = {"http-json": "http", "http-sse": "http", "sse": "sse", "ws": "websocket"}


@asynccontextmanager
async def big_server(mode: str, *args: str) -> AsyncIterator[dict[str, Any]]:
    """The server's configuration entry, while it runs."""
    proc = subprocess.Popen([sys.executable, SERVER, mode, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None
        port = int(await asyncio.to_thread(proc.stdout.readline))
        yield {"type": TYPES[mode], "url": URLS[mode].format(port)}
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            await asyncio.to_thread(proc.wait, 10)
        except subprocess.TimeoutExpired:  # pragma: no cover - only if the server hangs
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


@pytest.mark.parametrize("mode", ["http-json", "http-sse", "sse", "ws"])
async def test_a_million_tool_listing_is_refused_while_counted_and_the_loop_never_stalls(mode: str) -> None:
    # Measured on a loaded 2-core machine, before: the whole message decoded and checked on
    # the loop in one go, a worst gap of 4.2-7.0 s by the clock (1.6 s of the loop's CPU
    # time with the machine quieter) and +790 MB; after: 0.04-0.06 s of CPU time (0.1-0.2 s
    # by the clock: the few whole-message passes left, reading the body, the UTF-8 of an
    # SSE event or text frame) and 137 MB. The bound is on the loop's CPU time, which a
    # loaded machine's scheduling does not inflate, and is still 3x under the old stall.
    async with big_server(mode) as entry:
        cfg = {"mcpServers": {"big": entry, "fine": fake({"tools": [ECHO_TOOL]})}}
        async with LoopLag() as lag, MCPHost(cfg, require_all=False) as host:
            listing = host.get_tools(include_unavailable=True)
            assert listing["fine"]["state"] == "ready"
            assert listing["big"]["state"] == "failed", listing["big"]
            assert "more than 1,000,000 JSON tokens" in listing["big"]["error"]
            assert "max_message_tokens" in listing["big"]["error"]
            assert (await host.call_tool("fine.echo", {"text": "hi"}))["content"]
            assert host.get_metrics()["big"]["transport"]["too_many_tokens"] == 1
    assert lag.worst < 0.5, f"the event loop stalled {lag.worst:.3f} s ({lag.worst_wall:.3f} s by the clock)"


#: orjson where this Python has it (an optional extra: the main CI run has it), else stdlib.
ORJSON = "orjson" if importlib.util.find_spec("orjson") is not None else "stdlib"


@pytest.mark.parametrize(("mode", "codec_name"),
                         [("http-json", ORJSON), ("http-sse", "stdlib"), ("sse", ORJSON), ("ws", "stdlib")])
async def test_a_listing_just_under_the_token_bound_is_decoded_in_slices_with_either_codec(
    mode: str, codec_name: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 142,855 tools, 999,993 tokens (6.7 MB): under the bound, so decoded (then refused for
    # its items). Decoded in one call it stalled the loop about 0.2 s with orjson, 0.7 s
    # with the standard library; now a few thousand members per loop turn
    # (_json.SlicedLoads), each transport with one codec or the other. Measured on a loaded
    # 2-core machine: a worst gap of 19-25 ms of the loop's CPU time.
    for module in (remote_module, websocket_module):
        monkeypatch.setattr(module, "loads", codec(codec_name == "orjson")[1])
    async with big_server(mode, "142855") as entry:
        cfg = {"mcpServers": {"big": entry}}
        # The first host of a process imports what it uses (tens of ms, not measured here);
        # this one refuses the listing after counting its first slice.
        async with MCPHost(cfg, require_all=False, bounds=Bounds(max_message_tokens=10)) as host:
            assert "more than 10 JSON tokens" in host.get_tools(include_unavailable=True)["big"]["error"]
        async with LoopLag() as lag, MCPHost(cfg, require_all=False) as host:
            error = host.get_tools(include_unavailable=True)["big"]["error"]
            assert "tools/list lists more than 10000 items" in error
    assert lag.worst < 0.1, f"the event loop stalled {lag.worst:.3f} s ({lag.worst_wall:.3f} s by the clock)"


@pytest.mark.parametrize("mode", ["http-sse", "ws"])
async def test_the_bound_is_an_option_and_a_big_notification_is_only_logged(
    mode: str, caplog: pytest.LogCaptureFixture,
) -> None:
    # 30,000 tools (about 1.5 MB, 210,000 tokens), after a notification just as big: within
    # the default bound, over this one. The notification is refused and only logged; the
    # answer, in its turn, fails the call it answered.
    async with big_server(mode, "30000", "notify") as entry:
        cfg = {"mcpServers": {"big": entry}}
        async with MCPHost(cfg, require_all=False, bounds=Bounds(max_message_tokens=100_000)) as host:
            error = host.get_tools(include_unavailable=True)["big"]["error"]
            assert "more than 100,000 JSON tokens" in error
            assert host.get_metrics()["big"]["transport"]["too_many_tokens"] == 2
    logged = [r.getMessage() for r in caplog.records if "more than 100,000 JSON tokens" in r.getMessage()]
    assert any("(a request or notification of the server)" in line for line in logged), logged


@pytest.mark.parametrize("mode", ["http-sse", "sse", "ws"])
async def test_big_messages_under_the_bound_arrive_in_order(mode: str) -> None:
    # Both big messages are counted, then decoded, in the order they came: the listing of
    # 30,000 tools is the one answer, complete.
    async with big_server(mode, "30000", "notify") as entry:
        cfg = {"mcpServers": {"big": entry}}
        async with MCPHost(cfg, bounds=Bounds(max_list_items=30_000)) as host:
            tools = host.get_tools()["big"]["tools"]
            assert len(tools) == 30_000 and tools[-1]["name"] == "t29999"


def test_the_bound_is_validated() -> None:
    with pytest.raises(UsageError, match="max_message_tokens must be a positive integer"):
        Bounds(max_message_tokens=0)

"""What a misbehaving or busy server does to the host, end to end over stdio: a crash
mid-call, noise on stdout, unhashable ids, huge messages, floods, a thousand calls at once."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, wait_for

from mcphost import MCPHost
from mcphost.errors import ProtocolError, ServerUnavailableError

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


async def test_crash_during_call_fails_pending_calls_at_once() -> None:
    cfg = fake_config(a=fake({"tools": [tool("slow", delay=30), tool("boom")]}, exitOnCall=3))
    async with MCPHost(cfg, request_timeout=60) as host:
        slow1 = asyncio.ensure_future(host.call_tool("a.slow", {}))
        slow2 = asyncio.ensure_future(host.call_tool("a.slow", {}))
        # Both slow calls are sent (calls 1 and 2) before the call that crashes the server.
        session = host.servers["a"].session
        assert session is not None
        assert await wait_for(lambda: session.pending == 2)
        with pytest.raises(ServerUnavailableError) as info:
            await asyncio.wait_for(host.call_tool("a.boom", {}), 10)
        assert info.value.exit_code == 3
        assert any("crashing on call 3" in line for line in info.value.stderr_tail)
        for fut in (slow1, slow2):
            with pytest.raises(ServerUnavailableError):
                await asyncio.wait_for(fut, 10)
        # Later calls fail at once, naming the exit.
        with pytest.raises(ServerUnavailableError, match="exited with code 3"):
            await host.call_tool("a.boom", {})
        assert host.get_tools()["a"]["state"] == "unavailable"


async def test_garbage_lines_are_skipped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL], "garbage": ["banner v1", "not json {"],
                              "garbageEvery": "log line"}))
    async with MCPHost(cfg) as host:
        for _ in range(3):
            await host.call_tool("a.echo", {})
        noise = host.get_metrics()["a"]["connection"]["noise_lines"]
        assert noise >= 5
    warnings = [r for r in caplog.records if "non-JSON" in r.getMessage()]
    assert len(warnings) == 1
    assert "banner v1" in warnings[0].getMessage()


@pytest.mark.parametrize("validate_messages", ["off", "lenient"])
async def test_blank_lines_and_unhashable_ids_leave_the_reader_running(
    validate_messages: str,
) -> None:
    # Lines of blanks are neither messages nor noise. Ids, tokens and request ids that no
    # dict can hold (arrays, objects) are the server's protocol errors: they must not
    # escape the reader as TypeError and take the connection down.
    garbage = [
        "   ",
        "\t",
        {"jsonrpc": "2.0", "id": [1], "result": {}},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": [1], "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}},
    ]
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL], "garbage": garbage}))
    async with MCPHost(cfg, validate_messages=validate_messages) as host:
        for i in range(3):
            result = await host.call_tool("a.echo", {"i": i}, progress=lambda params: None)
            assert json.loads(result["content"][0]["text"]) == {"i": i}
        stats = host.get_metrics()["a"]["connection"]
        assert stats["noise_lines"] == 0
        assert stats["protocol_errors"] >= 1  # the array id
        assert host.servers["a"].state == "ready"


async def test_fifty_megabyte_message() -> None:
    size = 50_000_000
    cfg = fake_config(a=fake({"tools": [tool("big", huge=size)]}))
    async with MCPHost(cfg) as host:
        result = await host.call_tool("a.big", {}, timeout=120)
        assert len(result["content"][0]["text"]) == size


async def test_message_over_limit_is_a_protocol_error_not_a_crash() -> None:
    cfg = fake_config(a=fake({"tools": [tool("big", huge=300_000), ECHO_TOOL]}))
    async with MCPHost(cfg, max_message_size=100_000) as host:
        with pytest.raises(ProtocolError, match="bytes"):
            await host.call_tool("a.big", {})
        # The connection survives.
        result = await host.call_tool("a.echo", {"text": "still here"})
        assert "still here" in result["content"][0]["text"]


async def test_huge_message_at_start_is_skipped() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, hugeMessageOnStart=200_000))
    async with MCPHost(cfg, max_message_size=100_000) as host:
        assert (await host.call_tool("a.echo", {}))["content"]


async def test_thousand_concurrent_calls_resolve_to_their_callers() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}))
    async with MCPHost(cfg) as host:
        results = await asyncio.gather(
            *(host.call_tool("a.echo", {"text": str(i)}) for i in range(1000))
        )
        for i, result in enumerate(results):
            assert json.loads(result["content"][0]["text"]) == {"text": str(i)}


async def test_notification_flood_does_not_block_calls() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, notificationFlood=5000))
    async with MCPHost(cfg) as host:
        assert (await host.call_tool("a.echo", {}))["content"]
        assert await wait_for(lambda: host.get_metrics()["a"]["connection"]["notifications"] >= 5000)


async def test_a_server_that_floods_requests_and_never_reads_cannot_grow_the_host(tmp_path: Path) -> None:
    # A stdlib server: answers the handshake, then sends 300,000 pings without reading
    # another byte. The host's answers cannot reach it: they must not pile up without end.
    server = tmp_path / "flood.py"
    server.write_text(
        "import json, sys\n"
        "line = sys.stdin.readline()\n"
        "rid = json.loads(line)['id']\n"
        "out = sys.stdout\n"
        "out.write(json.dumps({'jsonrpc': '2.0', 'id': rid, 'result': {'protocolVersion': '2025-06-18',"
        " 'capabilities': {}, 'serverInfo': {'name': 'flood', 'version': '1'}}}) + '\\n')\n"
        "out.flush()\n"
        "for i in range(300000):\n"
        "    out.write('{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}\\n' % i)\n"
        "out.flush()\n"
        "import time\n"
        "time.sleep(60)\n",
        encoding="utf-8",
    )
    cfg = {"mcpServers": {"flood": {"command": sys.executable, "args": [str(server)]},
                          "b": fake({"tools": [ECHO_TOOL]})}}
    async with MCPHost(cfg, shutdown_timeout=2) as host:
        handle = host.servers["flood"]
        assert handle.session is not None
        peer = handle.session.peer
        assert await wait_for(lambda: peer.stats.server_requests >= 300_000, timeout=60)
        buffered = handle.transport.process._stdin.get_write_buffer_size()  # type: ignore[union-attr]
        assert buffered < 4 << 20  # bounded near the high-water mark, not 300,000 answers
        assert peer.stats.dropped_requests > 0
        assert (await host.call_tool("b.echo", {}))["content"]  # the other server is served

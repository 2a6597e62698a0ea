"""Time-outs and cancellation of calls through the host (the peer's deadlines): each gives
up with TimeoutError or CancelledError and tells the server with notifications/cancelled."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, wait_for

from mcphost import MCPHost
from mcphost.errors import TimeoutError, UsageError

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


async def test_request_timeout_sends_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True)], "record": str(record)}))
    async with MCPHost(cfg, unavailable_after_timeouts=0) as host:
        with pytest.raises(TimeoutError) as info:
            await host.call_tool("a.hang", {}, timeout=0.2)
        assert isinstance(info.value, builtins_timeout())
        assert "timed out after 0.2 s" in str(info.value)

        def cancelled_seen() -> bool:
            lines = record.read_text().splitlines() if record.exists() else []
            return any('"notifications/cancelled"' in line for line in lines)

        assert await wait_for(cancelled_seen)
        assert host.get_metrics()["a"]["tools"]["hang"]["timeouts"] == 1


async def test_default_timeout_fires_in_sending_order_among_other_timeouts() -> None:
    # Calls on the connection's default timeout are watched in sending order; calls
    # without a timeout, or with their own, are stepped over, and an answered call does
    # not hold the watch back. What is asserted is the order in which the calls gave up
    # and which are still pending, never how long anything took.
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True), ECHO_TOOL]}))
    async with MCPHost(cfg, request_timeout=0.5, unavailable_after_timeouts=0) as host:
        loop = asyncio.get_running_loop()
        gave_up: list[str] = []  # in the order the calls ended

        def hang(label: str, **kwargs: Any) -> asyncio.Task[Any]:
            task = loop.create_task(host.call_tool("a.hang", {}, **kwargs))
            task.add_done_callback(lambda _: gave_up.append(label))
            return task

        forever = hang("forever", timeout=0)
        own = hang("own", timeout=30)
        await host.call_tool("a.echo", {"text": "answered"})
        defaults = [hang(f"default{i}") for i in range(3)]
        # Sent after the defaults with a far shorter timeout: it gives up first, while
        # every default call still waits (none fires early).
        probe = hang("probe", timeout=0.05)
        with pytest.raises(TimeoutError, match=r"timed out after 0\.05 s"):
            await probe
        assert gave_up == ["probe"]
        assert not any(task.done() for task in defaults)
        # A default call sent after the others gives up after them.
        later = hang("later")
        done, _ = await asyncio.wait([*defaults, later], timeout=10)
        assert len(done) == 4
        for task in [*defaults, later]:
            exc = task.exception()
            assert isinstance(exc, TimeoutError)
            assert "timed out after 0.5 s" in str(exc)
        assert gave_up == ["probe", "default0", "default1", "default2", "later"]
        assert not forever.done() and not own.done()
        conn = host.servers["a"].session
        assert conn is not None and conn.pending == 2
        # A quiet spell with no default call pending, longer than the default timeout: a
        # call on its own timeout runs out. Then the watch starts again for the next
        # default-timeout call.
        with pytest.raises(TimeoutError, match=r"timed out after 0\.6 s"):
            await host.call_tool("a.hang", {}, timeout=0.6)
        with pytest.raises(TimeoutError, match=r"timed out after 0\.5 s"):
            await host.call_tool("a.hang", {})
        # A shorter timeout sent after a default one still fires first.
        slow = hang("slow")
        with pytest.raises(TimeoutError, match=r"timed out after 0\.1 s"):
            await host.call_tool("a.hang", {}, timeout=0.1)
        assert not slow.done()
        with pytest.raises(TimeoutError, match=r"timed out after 0\.5 s"):
            await slow
        assert not forever.done() and not own.done()
        assert conn.pending == 2
        forever.cancel()
        own.cancel()
        await asyncio.gather(forever, own, return_exceptions=True)
        assert conn.pending == 0
        assert gave_up == ["probe", "default0", "default1", "default2", "later", "slow",
                           "forever", "own"]
        assert host.get_metrics()["a"]["tools"]["hang"]["timeouts"] == 9


def builtins_timeout() -> type:
    import builtins

    return builtins.TimeoutError


async def test_caller_cancellation_sends_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("wait", waitCancelled=True)], "record": str(record)}))
    async with MCPHost(cfg, unavailable_after_timeouts=0) as host:
        task = asyncio.ensure_future(host.call_tool("a.wait", {}))
        assert await wait_for(lambda: host.servers["a"].session.pending == 1)  # type: ignore[union-attr]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        def seen() -> bool:
            text = record.read_text() if record.exists() else ""
            return '"event": "cancelled"' in text or '"event":"cancelled"' in text

        assert await wait_for(seen)
        assert host.servers["a"].session.pending == 0  # type: ignore[union-attr]


# A server that answers the handshake and tools/list, then stops reading its stdin: the
# host's writes fill the pipe and wait. The call's timeout must bound that wait too.
_DEAF = r'''
import json, sys, time
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "deaf", "version": "1"}}
    elif msg.get("method") == "tools/list":
        result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    else:
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\n")
    sys.stdout.flush()
    if msg.get("method") == "tools/list":
        time.sleep(3600)
'''


def _deaf_config() -> dict[str, Any]:
    return {"mcpServers": {"deaf": {"command": sys.executable, "args": ["-c", _DEAF]}}}


async def test_the_timeout_covers_the_wait_for_a_full_pipe() -> None:
    # Regression: the wait for the pipe to drain was outside the call's deadline, so a
    # server that stopped reading held call_tool(..., timeout=1) as long as it liked.
    async with MCPHost(_deaf_config(), unavailable_after_timeouts=0, shutdown_timeout=1) as host:
        blob = "x" * (4 << 20)  # more than the pipe and the transport's high-water mark hold
        with pytest.raises(TimeoutError) as info:
            # (wait_for only guards the test run: the call itself must give up first.)
            await asyncio.wait_for(host.call_tool("deaf.t", {"blob": blob}, timeout=1.0), 30)
        assert "timed out after 1 s" in str(info.value)
        assert host.servers["deaf"].session is not None
        assert host.servers["deaf"].session.pending == 0


async def test_a_caller_cancelled_while_the_pipe_is_full_is_cancelled() -> None:
    # The caller's cancellation reaches the caller (never swallowed) and the call is given
    # up, while the host still waits for the server to read.
    async with MCPHost(_deaf_config(), unavailable_after_timeouts=0, shutdown_timeout=1) as host:
        session = host.servers["deaf"].session
        assert session is not None
        blob = "x" * (4 << 20)
        task = asyncio.get_running_loop().create_task(host.call_tool("deaf.t", {"blob": blob}, timeout=0))
        assert await wait_for(lambda: session.pending == 1 and session.peer.needs_drain)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)
        assert session.pending == 0


async def test_request_timeout_none_means_no_timeout() -> None:
    # The orchestrator document's "no timeout budgets": request_timeout=None is accepted in
    # the constructor and gives calls no deadline (a per-call timeout= still applies).
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL, tool("hang", hang=True)]}))
    async with MCPHost(cfg, request_timeout=None, unavailable_after_timeouts=0) as host:
        session = host.servers["a"].session
        assert session is not None and session.peer.request_timeout == 0
        assert (await host.call_tool("a.echo", {"text": "x"}))["content"]
        with pytest.raises(TimeoutError):
            await host.call_tool("a.hang", {}, timeout=0.2)


async def test_arguments_nested_too_deep_are_the_callers_error_with_either_codec() -> None:
    # Regression (issue 21): 5,000 levels escaped as a bare RecursionError with the stdlib codec.
    # (100,000 levels: past what any encoder writes; Python 3.13's standard library encoder
    # writes 5,000, older ones stop near 1,000, orjson at 255.)
    deep: Any = "x"
    for _ in range(100_000):
        deep = [deep]
    async with MCPHost(fake_config(a=fake({"tools": [tool("t")]}))) as host:
        with pytest.raises(UsageError, match="not JSON-serialisable"):
            await host.call_tool("a.t", {"deep": deep})
        assert (await host.call_tool("a.t", {"deep": "shallow"}))["content"]

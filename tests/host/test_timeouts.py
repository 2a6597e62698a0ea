"""Time-outs and cancellation of calls through the host (the peer's deadlines): each gives
up with TimeoutError or CancelledError and tells the server with notifications/cancelled."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, wait_for

from mcphost import MCPHost
from mcphost.errors import TimeoutError

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


async def test_request_timeout_sends_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True)], "record": str(record)}))
    async with MCPHost(cfg) as host:
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
    # not hold the watch back.
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True), ECHO_TOOL]}))
    async with MCPHost(cfg, request_timeout=0.4) as host:
        loop = asyncio.get_running_loop()
        forever = loop.create_task(host.call_tool("a.hang", {}, timeout=0))
        own = loop.create_task(host.call_tool("a.hang", {}, timeout=30))
        await host.call_tool("a.echo", {"text": "answered"})
        started = time.monotonic()
        defaults = [loop.create_task(host.call_tool("a.hang", {})) for _ in range(3)]
        done, _ = await asyncio.wait(defaults, timeout=10)
        assert len(done) == 3
        for task in defaults:
            exc = task.exception()
            assert isinstance(exc, TimeoutError)
            assert "timed out after 0.4 s" in str(exc)
        assert time.monotonic() - started >= 0.35
        assert not forever.done() and not own.done()
        # The watch starts again for the next default-timeout call after a quiet spell.
        await asyncio.sleep(0.5)
        with pytest.raises(TimeoutError, match="timed out after 0.4 s"):
            await host.call_tool("a.hang", {})
        # A shorter timeout sent after a default one still fires first.
        slow = loop.create_task(host.call_tool("a.hang", {}))
        with pytest.raises(TimeoutError, match="timed out after 0.1 s"):
            await host.call_tool("a.hang", {}, timeout=0.1)
        assert not slow.done()
        with pytest.raises(TimeoutError, match="timed out after 0.4 s"):
            await slow
        assert not forever.done() and not own.done()
        conn = host.servers["a"].session
        assert conn is not None and conn.pending == 2
        forever.cancel()
        own.cancel()
        await asyncio.gather(forever, own, return_exceptions=True)
        assert conn.pending == 0
        assert host.get_metrics()["a"]["tools"]["hang"]["timeouts"] == 6


def builtins_timeout() -> type:
    import builtins

    return builtins.TimeoutError


async def test_caller_cancellation_sends_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("wait", waitCancelled=True)], "record": str(record)}))
    async with MCPHost(cfg) as host:
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

"""A secret given through ${...} appears nowhere the host writes: logs at DEBUG, errors,
get_tools(), get_metrics()."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake

from mcphost import MCPHost, MCPHostError

SECRET = "s3cr3t-Value-9f8e7d"
CMD_SECRET = "private-binary-0a1b2c"


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, "behavior": behavior}


async def test_a_secret_appears_nowhere(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    # The secret reaches the server through its arguments (a key of the fake's spec, which
    # it ignores) and its env; the server then writes it to stderr, as careless ones do.
    good = fake({"tools": [ECHO_TOOL, tool("boom", error={"code": -32000, "message": "failed"}),
                           tool("die", exit=3, stderr=f"dying with --api-key={SECRET}")],
                 "apiKey": "${SECRET}"},
                stderr=f"starting with token {SECRET}")
    good["env"] = {**good["env"], "API_KEY": "${SECRET}"}
    cfg = {"mcpServers": {
        "good": good,
        "remote": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${SECRET}"}},
        "missing": {"command": "${SECRET_CMD}", "args": ["${SECRET}"]},
    }}
    environ = {**os.environ, "SECRET": SECRET, "SECRET_CMD": CMD_SECRET}
    seen: list[str] = []
    host = MCPHost(cfg, environ=environ, require_all=False, shutdown_timeout=2)
    host.on_event(lambda e: seen.append(json.dumps(e, default=str)))
    try:
        results = await host.initialize()
        seen.append(json.dumps(results))
        assert results["good"]["ok"] and not results["missing"]["ok"] and not results["remote"]["ok"]
        assert (await host.call_tool("good.echo", {"x": 1}))["content"]
        for name in ("good.boom", "good.die", "missing.x"):
            with pytest.raises(MCPHostError) as info:
                await host.call_tool(name, {})
            seen.append(str(info.value))
            seen.extend(getattr(info.value, "stderr_tail", []))
        seen.append(json.dumps(host.get_tools(include_unavailable=True), default=str))
        seen.append(json.dumps(host.get_metrics(), default=str))
    finally:
        await host.shutdown()
    seen.append(caplog.text)
    everything = "\n".join(seen)
    assert "dying with --api-key=***" in everything  # the stderr line is there, redacted
    assert SECRET not in everything
    assert CMD_SECRET not in everything

"""Validation in the host: arguments against inputSchema before sending, structuredContent
against outputSchema after."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import fake, fake_config

from mcphost import MCPHost
from mcphost.errors import OutputValidationError, ProtocolError, UsageError, ValidationError

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}
INPUT_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "count": {"type": "integer", "maximum": 20}},
    "required": ["path"],
    "additionalProperties": False,
}


async def test_arguments_are_validated_before_sending(tmp_path: Path) -> None:
    from mcphost.errors import ValidationError

    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [{"name": "read", "inputSchema": INPUT_SCHEMA}], "record": str(record)}))
    async with MCPHost(cfg) as host:
        assert (await host.call_tool("a.read", {"path": "x", "count": 3}))["content"]
        with pytest.raises(ValidationError) as info:
            await host.call_tool("a.read", {"count": 3})
        assert info.value.server == "a"
        assert "read" in str(info.value) and "path" in str(info.value)
        with pytest.raises(ValidationError) as info:
            await host.call_tool("a.read", {"path": "x", "count": 50})
        assert info.value.path == "$.count"
        assert info.value.keyword == "maximum"
        calls = [line for line in record.read_text().splitlines() if '"tools/call"' in line]
        assert len(calls) == 1  # the invalid calls were never sent
    async with MCPHost(cfg, validate_arguments=False) as host:
        assert (await host.call_tool("a.read", {"count": "not validated"}))["content"]


async def test_structured_content_checked_against_output_schema(caplog: pytest.LogCaptureFixture) -> None:
    out_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tools = [
        {"name": "good", "inputSchema": OBJ, "outputSchema": out_schema,
         "behavior": {"result": {"content": [], "structuredContent": {"n": 1}}}},
        {"name": "bad", "inputSchema": OBJ, "outputSchema": out_schema,
         "behavior": {"result": {"content": [], "structuredContent": {"n": "one"}}}},
        {"name": "none", "inputSchema": OBJ, "outputSchema": out_schema,
         "behavior": {"result": {"content": []}}},
    ]
    cfg = fake_config(a=fake({"tools": tools}))
    async with MCPHost(cfg) as host:
        for n in (1, 2):  # the first call compiles the schema, the second takes the fast check
            assert (await host.call_tool("a.good", {}))["structuredContent"] == {"n": 1}
            with pytest.raises(OutputValidationError, match="does not match its outputSchema") as info:
                await host.call_tool("a.bad", {})
            # The server's fault: a ProtocolError, never the caller's ValidationError (a loop that
            # corrects its arguments on ValidationError must not spin on a server's bug).
            assert isinstance(info.value, ProtocolError) and not isinstance(info.value, ValidationError)
            assert info.value.path == "$.n" and info.value.keyword == "type" and info.value.server == "a"
            assert host.get_metrics()["a"]["tools"]["bad"]["errorsByKind"]["validation"] == n
            with pytest.raises(OutputValidationError, match="no structuredContent"):
                await host.call_tool("a.none", {})
    async with MCPHost(cfg, validate_output="warn") as host:
        assert (await host.call_tool("a.bad", {}))["structuredContent"] == {"n": "one"}
    assert any("does not match its outputSchema" in r.getMessage() for r in caplog.records)
    with pytest.raises(UsageError, match="validate_output"):
        MCPHost(cfg, validate_output="maybe")


async def test_a_huge_schema_is_compiled_off_the_loop_and_a_hostile_pattern_cannot_stall() -> None:
    import asyncio

    from scripted import Script, scripted_host

    props = {f"p{i}": {"type": "string", "maxLength": 10} for i in range(30_000)}
    huge = {"name": "huge", "inputSchema": {"type": "object", "properties": props}}
    redos = {"name": "redos", "inputSchema": {"type": "object", "properties": {
        "s": {"type": "string", "pattern": "^(a|aa)*b$"}}}}
    script = Script({"tools/list": lambda p: {"tools": [huge, redos]},
                     "tools/call": lambda p: {"content": [{"type": "text", "text": "ok"}]}})
    async with scripted_host({"a": script}) as host:
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        beat = asyncio.ensure_future(ticker())
        try:
            assert (await host.call_tool("a.huge", {"p1": "x"}))["content"]
        finally:
            beat.cancel()
        assert ticks > 5  # the loop kept turning while the schema compiled
        with pytest.raises(ValidationError):
            await host.call_tool("a.redos", {"s": "a" * 5000})  # linear time: no stall

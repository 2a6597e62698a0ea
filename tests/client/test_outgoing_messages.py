"""Everything the host sends is well-formed for the negotiated protocol version.

For each version the host speaks, a fake server that answers with that version records every
message it receives while the host goes through every client feature: the handshake,
discovery, tool calls with progress, a timeout and a caller's cancellation (both send
``notifications/cancelled``), prompts, resources, templates, subscriptions, completions,
log levels, roots changes, answers to the server's own requests (roots, sampling,
elicitation, ping) and, on 2025-11-25, tasks. Each recorded message is checked against the
MCP schemas of that version (``mcphost.protocol.messages.outgoing_errors``), which agree with the
published schemas (see ``schemas/mcp/README.md``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, wait_for

from mcphost import MCPHost
from mcphost.errors import TimeoutError
from mcphost.protocol import versions
from mcphost.protocol.messages import VERSIONS, outgoing_errors


def version_at_least(version: str, minimum: str) -> bool:
    order = versions.SUPPORTED_VERSIONS
    return order.index(version) <= order.index(minimum)


OBJ = {"type": "object"}
SAMPLING = {"method": "sampling/createMessage",
            "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                       "maxTokens": 16}}
ELICITATION = {"method": "elicitation/create",
               "params": {"message": "Your name?",
                          "requestedSchema": {"type": "object",
                                              "properties": {"name": {"type": "string"}},
                                              "required": ["name"]}}}


def spec_for(version: str, record: Path) -> dict[str, Any]:
    asks: list[dict[str, Any]] = [{"method": "roots/list"}, SAMPLING, {"method": "ping"}]
    if version_at_least(version, "2025-06-18"):
        asks.append(ELICITATION)
    tools: list[dict[str, Any]] = [
        ECHO_TOOL,
        {"name": "work", "inputSchema": OBJ, "behavior": {"progress": 2, "echo": True}},
        {"name": "slow", "inputSchema": OBJ, "behavior": {"delay": 30}},
        {"name": "ask", "inputSchema": OBJ, "behavior": {"request": asks}},
    ]
    spec: dict[str, Any] = {
        "protocolVersion": version,
        "record": str(record),
        "tools": tools,
        "prompts": [{"name": "greet", "arguments": [{"name": "who", "required": True}],
                     "messages": [{"role": "user",
                                   "content": {"type": "text", "text": "hi {who}"}}]}],
        "resources": [{"uri": "file:///a.txt", "name": "a", "text": "A"}],
        "resourceTemplates": [{"uriTemplate": "file:///t/{x}", "name": "t", "text": "T {x}"}],
        "completions": {"greet": {"who": ["world", "web"]}},
        "onInitialized": [{"method": "roots/list"}],
    }
    if version_at_least(version, "2025-11-25"):
        tools.append({"name": "job", "inputSchema": OBJ,
                      "execution": {"taskSupport": "optional"},
                      "behavior": {"delay": 0.05, "echo": True}})
        tools.append({"name": "forever", "inputSchema": OBJ,
                      "execution": {"taskSupport": "optional"}, "behavior": {"hang": True}})
        # The server asks the host to run its requests as tasks, and follows them.
        tools.append({"name": "ask_task", "inputSchema": OBJ, "behavior": {"requestTask": {
            "method": "sampling/createMessage", "params": SAMPLING["params"], "list": True}}})
        tools.append({"name": "ask_cancel", "inputSchema": OBJ, "behavior": {"requestTask": {
            "method": "elicitation/create", "params": ELICITATION["params"], "cancel": True}}})
        spec["taskPollInterval"] = 10
    return spec


async def exercise(host: MCPHost, version: str, tmp_path: Path, record: Path) -> None:
    await host.call_tool("a.echo", {"text": "x"}, meta={"trace": "t-1"})
    steps: list[Any] = []
    await host.call_tool("a.work", {}, progress=steps.append)
    assert len(steps) == 2
    with pytest.raises(TimeoutError):
        await host.call_tool("a.slow", {}, timeout=0.2)
    cancelled = asyncio.ensure_future(host.call_tool("a.slow", {}))
    # Cancelled once the server has received the call (the one that timed out is the first).
    assert await wait_for(lambda: sum(
        m.get("method") == "tools/call" and m["params"]["name"] == "slow"
        for m in recorded(record)[0]) == 2)
    cancelled.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await cancelled
    answers = await host.call_tool("a.ask", {})
    assert "error" not in json.dumps(answers["structuredContent"]), answers
    await host.get_prompt("a.greet", {"who": "you"})
    await host.get_resource("file:///a.txt")
    await host.get_resource("file:///t/7")
    await host.subscribe_resource("file:///a.txt")
    await host.unsubscribe_resource("file:///a.txt")
    await host.set_log_level("a", "warning")
    await host.complete({"type": "ref/prompt", "name": "a.greet"}, {"name": "who", "value": "w"},
                        {"arguments": {}})
    await host.set_roots([tmp_path / "elsewhere"])
    if version_at_least(version, "2025-11-25"):
        job = await host.call_tool("a.job", {"n": 1}, task=True)
        await job
        forever = await host.call_tool("a.forever", {}, task=True)
        await forever.refresh()
        await forever.cancel()
        await host.list_tasks("a")
        await host.call_tool("a.ask_task", {})
        await host.call_tool("a.ask_cancel", {})


def recorded(record: Path) -> tuple[list[dict[str, Any]], dict[Any, tuple[str, bool]]]:
    messages: list[dict[str, Any]] = []
    asked: dict[Any, tuple[str, bool]] = {}  # id of a server request -> (method, as a task)
    for line in record.read_text(encoding="utf-8").splitlines():
        entry = json.loads(line)
        if entry.get("event") == "request":
            asked[entry["id"]] = (entry["method"], entry["task"])
        elif "event" not in entry:
            messages.append(entry)
    return messages, asked


@pytest.mark.parametrize("version", [v for v in VERSIONS if v in versions.SUPPORTED_VERSIONS])
async def test_everything_the_host_sends_matches_the_schema(version: str, tmp_path: Path) -> None:
    record = tmp_path / "received.jsonl"
    host = MCPHost(fake_config(a=fake(spec_for(version, record))), roots=[tmp_path], unavailable_after_timeouts=0,
                   validate_messages="strict")
    host.on_sampling(lambda server, params: {
        "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"})
    async def elicit(server: str, params: dict[str, Any]) -> dict[str, Any]:
        if "task" in params:
            await asyncio.sleep(10)  # still running when the server cancels the task
        return {"action": "accept", "content": {"name": "Ada"}}

    host.on_elicitation(elicit)
    async with host:
        assert host.get_tools()["a"]["protocolVersion"] == version
        await exercise(host, version, tmp_path, record)
        # The cancellation notifications were sent after their calls gave up: wait for them.
        assert await wait_for(lambda: sum(
            m.get("method") == "notifications/cancelled" for m in recorded(record)[0]) >= 2)

    messages, asked = recorded(record)
    problems = []
    for message in messages:
        method, as_task = asked.get(message.get("id"), (None, False))
        if "method" in message:
            method, as_task = None, False
        for problem in outgoing_errors(version, message, method, task=as_task):
            problems.append(f"{problem}\n    in {json.dumps(message)[:300]}")
    assert not problems, "\n".join(problems)

    sent = {m["method"] for m in messages if "method" in m}
    expected = {
        "initialize", "notifications/initialized", "tools/list", "prompts/list",
        "resources/list", "resources/templates/list", "tools/call", "prompts/get",
        "resources/read", "resources/subscribe", "resources/unsubscribe", "logging/setLevel",
        "completion/complete", "notifications/cancelled", "notifications/roots/list_changed",
    }
    if version_at_least(version, "2025-11-25"):
        expected |= {"tasks/get", "tasks/result", "tasks/cancel", "tasks/list"}
    assert expected <= sent, expected - sent
    answered = {asked[m["id"]] for m in messages if "method" not in m and m.get("id") in asked}
    want = {("roots/list", False), ("sampling/createMessage", False), ("ping", False)}
    if version_at_least(version, "2025-06-18"):
        want.add(("elicitation/create", False))
    if version_at_least(version, "2025-11-25"):
        want |= {("sampling/createMessage", True), ("elicitation/create", True),
                 ("tasks/get", False), ("tasks/list", False), ("tasks/cancel", False),
                 ("tasks/result", False)}
    assert want <= answered, want - answered
    # Nothing was refused, except the result of the task the server itself cancelled.
    refused = [asked[m["id"]] for m in messages if "error" in m]
    expected_refused = [("tasks/result", False)] if version_at_least(version, "2025-11-25") else []
    assert refused == expected_refused, refused


async def test_everything_the_host_sends_in_the_modern_era_matches_the_schema(tmp_path: Path) -> None:
    # 2026-07-28 against the fake server's modern era: every request with its _meta, the
    # rounds of a multi-round call (input responses, request state), the listen stream, a
    # caller's cancellation, and the tasks extension (tasks/get, tasks/update, tasks/cancel).
    version = versions.LATEST_MODERN_VERSION
    record = tmp_path / "received.jsonl"
    rounds = [{"who": ELICITATION, "llm": SAMPLING, "where": {"method": "roots/list"}}]
    spec = spec_for("2025-11-25", record)
    spec.pop("onInitialized")
    spec["tools"] = [
        ECHO_TOOL,
        {"name": "work", "inputSchema": OBJ, "behavior": {"progress": 2, "echo": True}},
        {"name": "slow", "inputSchema": OBJ, "behavior": {"delay": 30}},
        {"name": "ask", "inputSchema": OBJ, "behavior": {"inputRounds": rounds}},
        {"name": "job", "inputSchema": OBJ, "execution": {"taskSupport": "required"},
         "behavior": {"inputRounds": [{"who": ELICITATION}], "delay": 0.05}},
        {"name": "forever", "inputSchema": OBJ, "execution": {"taskSupport": "optional"}, "behavior": {"delay": 60}},
    ]
    entry = fake(spec)
    entry.update(args=[*entry["args"], "--era", "modern"], protocol="modern")
    host = MCPHost(fake_config(a=entry), roots=[tmp_path], unavailable_after_timeouts=0, validate_messages="strict")
    host.on_sampling(lambda server, params: {
        "role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"})
    host.on_elicitation(lambda server, params: {"action": "accept", "content": {"name": "Ada"}})
    async with host:
        assert host.get_tools()["a"]["protocolVersion"] == version
        await host.call_tool("a.echo", {"text": "x"}, meta={"trace": "t-1"})
        await host.call_tool("a.work", {}, progress=lambda params: None)
        cancelled = asyncio.ensure_future(host.call_tool("a.slow", {}))
        assert await wait_for(lambda: any(m.get("method") == "tools/call" and m["params"]["name"] == "slow"
                                          for m in recorded(record)[0]))
        cancelled.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await cancelled
        await host.call_tool("a.ask", {})
        await host.get_prompt("a.greet", {"who": "you"})
        await host.get_resource("file:///a.txt")
        await host.subscribe_resource("file:///a.txt")
        await host.set_log_level("a", "warning")
        await host.complete({"type": "ref/prompt", "name": "a.greet"}, {"name": "who", "value": "w"})
        await (await host.call_tool("a.job", {}, task=True))
        forever = await host.call_tool("a.forever", {}, task=True)
        await forever.cancel()
        assert await wait_for(lambda: any(m.get("method") == "subscriptions/listen" for m in recorded(record)[0]))

    messages, _ = recorded(record)
    problems = [f"{problem}\n    in {json.dumps(message)[:300]}"
                for message in messages for problem in outgoing_errors(version, message)]
    assert not problems, "\n".join(problems)
    sent = {m["method"] for m in messages if "method" in m}
    expected = {"server/discover", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
                "tools/call", "prompts/get", "resources/read", "completion/complete", "subscriptions/listen",
                "notifications/cancelled", "tasks/get", "tasks/update", "tasks/cancel"}
    assert expected <= sent, expected - sent
    assert not sent & {"initialize", "notifications/initialized", "logging/setLevel", "resources/subscribe"}

"""The era a server is spoken to in, over stdio and Streamable HTTP, against the fake server.

The fake server (``python -m mcphost.testing --era legacy|modern|both``) is the independent
oracle: each pair of its era and the host's ``protocol`` setting ends in the era the spec
says, or in a clear start-up error. The probe's other outcomes (``-32022`` then a retry, no
answer, an unknown ``resultType``...) are in ``test_era.py`` over the memory transport.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcphost import MCPHost
from mcphost.errors import ServerError, ServerStartupError, UsageError
from mcphost.policy import NO_RETRY

ROOT = Path(__file__).resolve().parents[2]
FAKE = [sys.executable, "-m", "mcphost.testing"]

#: (the fake's era, the host's protocol) -> the era spoken, or the words of the error.
OUTCOMES = [
    ("modern", "auto", "modern"),
    ("both", "auto", "modern"),
    ("legacy", "auto", "legacy"),
    ("both", "legacy", "legacy"),
    ("both", "2026-07-28", "modern"),
    ("legacy", "modern", "does not speak the 2026-07-28 era"),
]


async def outcome(entry: dict[str, Any]) -> str:
    host = MCPHost({"mcpServers": {"f": entry}}, retry=NO_RETRY, handle_signals=False, validate_messages="strict")
    try:
        async with host:
            info = host.get_tools("f")["f"]
            result = await host.call_tool("f.echo", {"text": "hi"})
            assert result["content"][0]["text"] == '{"text":"hi"}'
            assert info["protocolVersion"] == ("2026-07-28" if info["era"] == "modern" else "2025-11-25")
            return str(info["era"])
    except ServerStartupError as exc:
        return str(exc)


@pytest.mark.parametrize(("era", "protocol", "expected"), OUTCOMES)
async def test_stdio(era: str, protocol: str, expected: str) -> None:
    entry = {"command": sys.executable, "args": ["-m", "mcphost.testing", "--era", era], "cwd": str(ROOT),
             "protocol": protocol}
    assert expected in await outcome(entry)


@pytest.fixture(scope="module")
def urls() -> Iterator[dict[str, str]]:
    procs = {era: subprocess.Popen([*FAKE, "--era", era, "--http", "0"], cwd=ROOT, stdout=subprocess.PIPE,
                                   stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL, text=True)
             for era in ("legacy", "modern", "both")}
    try:
        yield {era: proc.stdout.readline().strip() for era, proc in procs.items() if proc.stdout is not None}
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait(timeout=30)
            if proc.stdout is not None:
                proc.stdout.close()


@pytest.mark.parametrize(("era", "protocol", "expected"), OUTCOMES)
async def test_http(urls: dict[str, str], era: str, protocol: str, expected: str) -> None:
    assert expected in await outcome({"url": urls[era], "protocol": protocol})


async def test_http_default_is_auto(urls: dict[str, str]) -> None:
    assert await outcome({"url": urls["modern"]}) == "modern"
    assert await outcome({"url": urls["legacy"]}) == "legacy"


async def test_stdio_default_is_legacy() -> None:
    entry = {"command": sys.executable, "args": ["-m", "mcphost.testing", "--era", "both"], "cwd": str(ROOT)}
    assert await outcome(entry) == "legacy"


async def test_tasks_the_server_makes_are_followed_to_their_result() -> None:
    # The tasks extension (2026-07-28): the host opts in on every request; a task-only tool's
    # call becomes a task, whose input request (a form) is answered with tasks/update by the
    # application's elicitation handler; an optional one is made a task too.
    ask = {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}}}}}
    spec = {"tools": [
        {"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"},
         "behavior": {"inputRounds": [{"who": ask}], "delay": 0.1}},
        {"name": "opt", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"},
         "behavior": {"echo": True}},
        {"name": "bad", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"},
         "behavior": {"error": {"code": -32050, "message": "it broke"}}},
    ]}
    entry = {"command": sys.executable, "args": ["-m", "mcphost.testing", "--era", "modern", "--spec", json.dumps(spec)],
             "cwd": str(ROOT), "protocol": "modern"}
    host = MCPHost({"mcpServers": {"f": entry}}, retry=NO_RETRY, handle_signals=False, validate_messages="strict")
    host.on_elicitation(lambda server, params: {"action": "accept", "content": {"name": "Ada"}})
    async with host:
        slow = await host.call_tool("f.slow", {})
        assert slow["structuredContent"] == {"inputResponses": {"who": {"action": "accept",
                                                                         "content": {"name": "Ada"}}}}
        assert (await host.call_tool("f.opt", {"x": 1}))["content"][0]["text"] == '{"x":1}'
        with pytest.raises(ServerError, match="it broke") as caught:
            await host.call_tool("f.bad", {})
        assert caught.value.code == -32050


async def test_call_tool_with_task_gives_the_same_task_handle_in_the_modern_era() -> None:
    # call_tool(task=True) against a 2026-07-28 server: the tasks extension's task behind the
    # TaskHandle of 2025-11-25 tasks (status, await, cancel); a call the server answers at once
    # gives a handle already completed.
    ask = {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}}}}}
    spec = {"tools": [
        {"name": "slow", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "required"},
         "behavior": {"inputRounds": [{"who": ask}], "delay": 0.1}},
        {"name": "forever", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"},
         "behavior": {"delay": 60}},
        {"name": "now", "inputSchema": {"type": "object"}, "behavior": {"echo": True}},
    ]}
    entry = {"command": sys.executable, "args": ["-m", "mcphost.testing", "--era", "modern", "--spec", json.dumps(spec)],
             "cwd": str(ROOT), "protocol": "modern"}
    host = MCPHost({"mcpServers": {"f": entry}}, retry=NO_RETRY, handle_signals=False, validate_messages="strict")
    host.on_elicitation(lambda server, params: {"action": "accept", "content": {"name": "Ada"}})
    async with host:
        slow = await host.call_tool("f.slow", {}, task=True)
        assert slow.task_id and slow.status in ("working", "input_required")
        result = await slow
        assert result["structuredContent"] == {"inputResponses": {"who": {"action": "accept",
                                                                           "content": {"name": "Ada"}}}}
        assert slow.status == "completed" and (await slow.refresh())["status"] == "completed"
        forever = await host.call_tool("f.forever", {}, task=True)
        assert (await forever.cancel())["status"] == "cancelled"
        with pytest.raises(ServerError, match="cancelled"):
            await forever
        now = await host.call_tool("f.now", {"x": 1}, task=True)
        assert now.done and now.task_id == ""
        assert (await now)["content"][0]["text"] == '{"x":1}'


async def test_a_capability_the_host_did_not_declare_is_named() -> None:
    # -32021: the server needs an elicitation the host cannot give (no on_elicitation): the
    # caller is told which capability, and which handler declares it.
    ask = {"method": "elicitation/create", "params": {"message": "name?", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string"}}}}}
    spec = {"tools": [{"name": "ask", "inputSchema": {"type": "object"},
                       "behavior": {"inputRounds": [{"who": ask}]}}]}
    entry = {"command": sys.executable, "args": ["-m", "mcphost.testing", "--era", "modern", "--spec", json.dumps(spec)],
             "cwd": str(ROOT), "protocol": "modern"}
    async with MCPHost({"mcpServers": {"f": entry}}, retry=NO_RETRY, handle_signals=False, validate_messages="strict") as host:
        with pytest.raises(UsageError, match=r"tools/call needs the client capabilities 'elicitation', which this "
                                             r"host did not declare \(register on_elicitation\(\)\)"):
            await host.call_tool("f.ask", {})

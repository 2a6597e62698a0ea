"""The fault matrix: every way a server misbehaves, against one host, one row each.

Each row runs a host with two servers over stdio: the *victim*, a fake server told to
misbehave, and a *bystander* that behaves. The same checks follow every row:

- the application gets exactly the error the row names (class and words), or none;
- it gets it before the time-out that would otherwise have ended the wait (``wait_for``
  bounds well under it: never an assertion on wall-clock speed);
- the victim went through the row's states, in order;
- the bystander still answers;
- nothing is left pending in any session;
- after shutdown no process is left: none of the host's descendants, and no process
  anywhere carrying the row's marker (the fake's spec carries it on its command line).
"""

from __future__ import annotations

import asyncio
import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from helpers import ECHO_TOOL, descendants, fake, wait_for

from mcphost import MCPHost
from mcphost.bounds import Bounds
from mcphost.errors import (
    MCPHostError,
    OutputValidationError,
    ProtocolError,
    SchemaError,
    ServerStartupError,
    ServerUnavailableError,
    TimeoutError,
)
from mcphost.policy import NO_RETRY

OBJ: dict[str, Any] = {"type": "object"}
BOUND = 20.0  # seconds: every wait of a row is bounded well under the host's 60 s timeouts


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


Act = Callable[[MCPHost], Awaitable[Any]]


async def call(host: MCPHost, name: str, **kwargs: Any) -> Any:
    return await host.call_tool(f"victim.{name}", {}, **kwargs)


@dataclass
class Row:
    id: str
    spec: dict[str, Any]
    act: Act | None = None
    error: type[BaseException] | None = None
    words: str = ""
    states: list[str] = field(default_factory=lambda: ["starting", "ready"])
    host: dict[str, Any] = field(default_factory=dict)
    after: Callable[[MCPHost], None] | None = None


def _tools(**extra: Any) -> dict[str, Any]:
    return {"tools": [ECHO_TOOL, *extra.pop("tools", [])], **extra}


def _hostile_output(pattern: str, value: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}
    return {"name": "hostile", "inputSchema": OBJ, "outputSchema": schema,
            "behavior": {"result": {"content": [], "structuredContent": {"v": value}}}}


def _only_echo(host: MCPHost) -> None:
    assert [t["name"] for t in host.get_tools()["victim"]["tools"]] == ["echo"]


def _noise_counted(host: MCPHost) -> None:
    assert host.get_metrics()["victim"]["transport"]["noise_lines"] >= 1


ROWS = [
    Row("crash mid-call", _tools(tools=[tool("boom", exit=3, stderr="boom")]),
        act=lambda h: call(h, "boom"), error=ServerUnavailableError, words="exited with code 3",
        states=["starting", "ready", "unavailable"]),
    Row("hang past its timeout", _tools(tools=[tool("stuck", hang=True)]),
        act=lambda h: call(h, "stuck", timeout=0.5), error=TimeoutError, words="timed out after 0.5 s",
        states=["starting", "ready", "unavailable"]),
    Row("exit at start", {"exitAtStart": 2, "stderr": "API key is required"},
        error=ServerStartupError, words="exited during start-up with code 2",
        states=["starting", "failed"]),
    Row("never answers initialize", {"neverAnswer": True}, error=ServerStartupError,
        words="not ready within its start-up timeout of 1 s", states=["starting", "failed"],
        host={"timeout": 1}),
    Row("noise on stdout between answers", _tools(garbageEvery="not json at all"),
        act=lambda h: call(h, "echo"), after=_noise_counted),
    Row("a message over the size limit", _tools(tools=[tool("big", huge=200_000)]),
        act=lambda h: call(h, "big"), error=ProtocolError, words="limit 100000 bytes",
        host={"max_message_size": 100_000}),
    Row("a listing that never ends", _tools(pageSize=1, cursorLoop=True),
        act=lambda h: call(h, "echo")),
    Row("more tools than the bound", {"tools": [tool(f"t{i}") for i in range(60)]},
        error=ServerStartupError, words="tools/list lists more than 50 items",
        states=["starting", "failed"], host={"bounds": Bounds(max_list_items=50)}),
    Row("the same tool twice, strict", {"tools": [ECHO_TOOL, ECHO_TOOL]}, error=ServerStartupError,
        words="tools/list lists name 'echo' twice", states=["starting", "failed"],
        host={"validate_messages": "strict"}),
    Row("the same tool twice, lenient: one kept", {"tools": [ECHO_TOOL, ECHO_TOOL]},
        act=lambda h: call(h, "echo"), after=_only_echo),
    Row("escape codes in a tool name", _tools(tools=[tool("evil\x1b]0;pwned\x07")]),
        act=lambda h: call(h, "echo"), after=_only_echo),
    Row("a flood of notifications", _tools(notificationFlood=5000), act=lambda h: call(h, "echo")),
    Row("a leader that exits while a grandchild holds its pipes",
        _tools(spawnChild=True, tools=[tool("die", exit=4)]),
        act=lambda h: call(h, "die"), error=ServerUnavailableError, words="exited with code 4",
        states=["starting", "ready", "unavailable"]),
    Row("a hostile pattern in an output schema", _tools(tools=[_hostile_output("^(a|aa)*b$", "a" * 5000)]),
        act=lambda h: call(h, "hostile"), error=(OutputValidationError, SchemaError)),  # type: ignore[arg-type]
    Row("a result nested 5,000 deep", _tools(tools=[tool("deep", result={
        "content": [], "structuredContent": {"v": "[" * 5000 + "]" * 5000}})]),
        act=lambda h: call(h, "deep")),
    Row("invalid JSON-RPC after the handshake", _tools(invalidJsonRpc=[{"jsonrpc": "1.0", "id": 1}]),
        act=lambda h: call(h, "echo")),
    Row("stubborn at shutdown", _tools(ignoreSigterm=True, ignoreStdinEof=True),
        act=lambda h: call(h, "echo"), host={"shutdown_timeout": 0.5}),
]


def marked(marker: str) -> list[int]:
    """Every live process whose command line carries ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as fh:
                    if marker.encode() in fh.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
async def test_a_bad_server_fails_only_itself(row: Row) -> None:
    marker = f"fault-matrix-{uuid.uuid4().hex}"
    options = dict(row.host)
    start_timeout = options.pop("timeout", 30)
    victim = fake({**row.spec, "marker": marker})
    victim["timeout"] = start_timeout
    cfg = {"mcpServers": {"bystander": fake({"tools": [ECHO_TOOL]}), "victim": victim}}
    before = set(descendants(os.getpid()))
    host = MCPHost(cfg, require_all=False, retry=NO_RETRY, **options)
    seen: list[str] = []
    host.on_event(lambda e: seen.append(e["data"]["to"]) if e["type"] == "state_changed"
                  and e["server"] == "victim" else None)
    try:
        await asyncio.wait_for(host.initialize(), BOUND)
        got: BaseException | None = None
        if row.act is not None and host.servers["victim"].state.value == "ready":
            try:
                await asyncio.wait_for(row.act(host), BOUND)
            except MCPHostError as exc:
                got = exc
        else:
            got = host.servers["victim"].error
        if row.error is None:
            assert got is None, f"unexpected {got!r}"
        else:
            assert isinstance(got, row.error), f"expected {row.error}, got {got!r}"
            assert row.words in str(got), str(got)
        # What happens to the victim next (a stop after a time-out) is over in bounded time.
        assert await wait_for(lambda: seen[: len(row.states)] == row.states and len(seen) >= len(row.states), BOUND), seen
        # The bystander is untouched.
        result = await asyncio.wait_for(host.call_tool("bystander.echo", {"text": "still here"}), BOUND)
        assert result["content"][0]["text"] == '{"text":"still here"}'
        if row.after is not None:
            row.after(host)
        for handle in host.servers.values():
            if handle.session is not None:
                assert handle.session.pending == 0, handle.name
    finally:
        await asyncio.wait_for(host.shutdown(), BOUND)
    assert [p for p in descendants(os.getpid()) if p not in before] == []
    assert await wait_for(lambda: marked(marker) == [], 5), marked(marker)

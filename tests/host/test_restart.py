"""Stop, start and restart one server of a running host while the other keeps serving."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, group_alive, needs_npx

from mcphost import MCPHost, ServerUnavailableError, UsageError


def moves_of(events: list[dict[str, Any]], server: str) -> list[str]:
    return [e["data"]["to"] for e in events if e["type"] == "state_changed" and e["server"] == server]


async def echo(host: MCPHost, server: str) -> str:
    result = await host.call_tool(f"{server}.echo", {"text": server})
    return str(result["content"][0]["text"])


async def exercise(host: MCPHost, target: str, other: str, call_target: Any) -> None:
    """The same story for any pair of servers: ``target`` stops, starts and restarts;
    ``other`` answers throughout."""
    events: list[dict[str, Any]] = []
    host.on_event(events.append)
    first_pid = host.servers[target].pid()
    await call_target()

    # A call to the other server in flight across the stop of the target.
    busy = asyncio.ensure_future(echo(host, other))
    await host.stop_server(target)
    assert await busy
    assert host.get_tools()[target]["state"] == "stopped"
    assert host.get_tools()[target]["tools"] == []  # its tools left at once
    assert first_pid is not None and not group_alive(first_pid)
    with pytest.raises(ServerUnavailableError, match="server is stopped"):
        await call_target()
    assert await echo(host, other)
    await host.stop_server(target)  # idempotent

    await host.start_server(target)
    second_pid = host.servers[target].pid()
    assert second_pid not in (None, first_pid)
    assert host.get_tools()[target]["state"] == "ready"
    assert host.get_tools()[target]["tools"]  # its tools came back
    await call_target()
    await host.start_server(target)  # already ready: nothing happens
    assert host.servers[target].pid() == second_pid

    await host.restart_server(target)
    third_pid = host.servers[target].pid()
    assert third_pid not in (None, first_pid, second_pid)
    assert not group_alive(second_pid)  # type: ignore[arg-type]
    await call_target()
    assert await echo(host, other)
    assert host.get_metrics()[target]["restarts"] == 1
    assert moves_of(events, target) == [
        "stopping", "stopped", "starting", "ready", "stopping", "stopped", "starting", "ready",
    ]
    assert moves_of(events, other) == []


async def test_restart_a_fake_server_while_another_serves(no_leftovers: None) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}), b=fake({"tools": [ECHO_TOOL]}))
    async with MCPHost(cfg, shutdown_timeout=2) as host:
        await exercise(host, "a", "b", lambda: echo(host, "a"))


@pytest.mark.interop
@needs_npx
async def test_restart_the_real_filesystem_server_while_a_fake_serves(
    tmp_path: Path, no_leftovers: None
) -> None:
    (tmp_path / "hello.txt").write_text("hello from the filesystem server")
    cfg = {
        "mcpServers": {
            "filesystem": {
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", str(tmp_path)],
                "timeout": 120,
            },
            "fake": fake({"tools": [ECHO_TOOL]}),
        }
    }

    async def read() -> None:
        result = await host.call_tool("filesystem.read_text_file", {"path": str(tmp_path / "hello.txt")})
        assert "hello from the filesystem server" in result["content"][0]["text"]

    async with MCPHost(cfg, shutdown_timeout=5) as host:
        await exercise(host, "filesystem", "fake", read)


async def test_a_server_left_out_can_be_started_on_request(no_leftovers: None) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}), b=fake({"tools": [ECHO_TOOL]}))
    host = MCPHost(cfg, servers=["a"])
    async with host:
        assert host.get_tools()["b"]["state"] == "disabled"
        with pytest.raises(ServerUnavailableError, match="disabled"):
            await host.call_tool("b.echo", {})
        await host.start_server("b")  # a disabled server starts on request
        assert await echo(host, "b")


async def test_server_operations_need_a_running_host() -> None:
    host = MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})))
    with pytest.raises(UsageError, match="needs a running host"):
        await host.restart_server("a")
    with pytest.raises(UsageError, match="before initialize"):
        await host.call_tool("a.echo", {})

"""Item 1 of the first hour: the command line serves what works and says what failed."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from cli_support import arun_cli, errors, run_cli, write_config
from helpers import ECHO_TOOL, fake, fake_config


def _mixed(tmp_path: Path) -> Path:
    cfg = fake_config(good=fake({"tools": [ECHO_TOOL]}), broken=fake(exitAtStart=1, stderr="Error: API key is required"),
                      needs=fake())
    cfg["mcpServers"]["needs"]["env"] = {"KEY": "${MCPHOST_TEST_NEVER_SET}"}
    cfg["mcpServers"]["off"] = {"command": "anything", "enabled": False}
    return write_config(tmp_path, cfg)


def test_inspect_shows_the_healthy_servers_and_why_the_others_failed(tmp_path: Path) -> None:
    done = run_cli("inspect", str(_mixed(tmp_path)))
    assert done.returncode == 3, done.stderr
    out = done.stdout
    assert "== good  [ready]  protocol 2025-11-25 (legacy era)  (fake-mcp 1.0.0)" in out and "good.echo(text?: string)" in out
    assert "== broken  [failed]\n  error: server exited during start-up with code 1 (stderr: Error: API key is required)" in out
    assert "== needs  [failed]\n  error: mcp.json:1: mcpServers.needs.env.KEY: environment variable " \
           "MCPHOST_TEST_NEVER_SET is not set" in out
    assert "== off  [disabled]\n" in out and "(?)" not in out and "protocol -" not in out
    assert errors(done.stderr) == [
        "mcphost: error: broken: server exited during start-up with code 1 (stderr: Error: API key is required)",
        "mcphost: error: needs: mcp.json:1: mcpServers.needs.env.KEY: environment variable MCPHOST_TEST_NEVER_SET "
        "is not set (use ${MCPHOST_TEST_NEVER_SET:-default} for a default)",
    ]
    # Tried once: a server that always exits is shown failed at once, not after 4 tries.
    assert "trying again" not in done.stderr


def test_require_all_fails_the_whole_command(tmp_path: Path) -> None:
    done = run_cli("inspect", str(_mixed(tmp_path)), "--require-all")
    assert done.returncode == 2 and done.stdout == ""
    assert errors(done.stderr) == [
        "mcphost: error: needs: mcp.json:1: mcpServers.needs.env.KEY: environment variable MCPHOST_TEST_NEVER_SET "
        "is not set (use ${MCPHOST_TEST_NEVER_SET:-default} for a default)"]


def test_tools_are_printed_for_the_servers_that_started(tmp_path: Path) -> None:
    done = run_cli("tools", str(_mixed(tmp_path)), "--format", "anthropic")
    assert done.returncode == 3
    assert [t["name"] for t in json.loads(done.stdout)] == ["good__echo"]
    assert "mcphost: error: broken: server exited during start-up with code 1" in done.stderr


def test_all_failed_is_a_failure(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(broken=fake(exitAtStart=1)))
    done = run_cli("inspect", str(path))
    assert done.returncode == 1 and "== broken  [failed]" in done.stdout


def test_retries_are_asked_for(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(broken=fake(exitAtStart=1, stderr="Error: boom")))
    done = run_cli("inspect", str(path), "--retries", "1")
    assert done.returncode == 1
    assert "mcphost: broken: server exited during start-up with code 1 (stderr: Error: boom); trying again in " \
           in done.stderr
    assert "(try 2 of 2)" in done.stderr


async def test_a_hanging_remote_fails_at_its_own_timeout_once(tmp_path: Path) -> None:
    accepted = asyncio.Event()

    async def mute(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.set()
        await reader.read()  # never answers; reads until the client goes away
        writer.close()

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    cfg = fake_config(good=fake({"tools": [ECHO_TOOL]}))
    cfg["mcpServers"]["slow"] = {"url": f"http://127.0.0.1:{port}/mcp", "timeout": 1}
    try:
        code, out, err = await arun_cli("inspect", str(write_config(tmp_path, cfg)))
    finally:
        server.close()
    assert accepted.is_set()
    assert code == 3, err
    assert errors(err) == ["mcphost: error: slow: not ready within its start-up timeout of 1 s"]
    assert "trying again" not in err and "== good  [ready]" in out

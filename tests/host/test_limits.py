"""Resource limits: applied before the server runs, survivable by Node, and a death by a
limit is reported as such."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from helpers import needs_npx

from mcphost import MCPHost, ServerStartupError
from mcphost.policy import NO_RETRY


def python_server(code: str, **limits: object) -> dict[str, object]:
    return {"command": sys.executable, "args": ["-c", code], "limits": limits, "timeout": 30}


async def test_a_server_out_of_memory_under_its_limit_is_told_so() -> None:
    cfg = {"mcpServers": {"hungry": python_server("x = bytearray(1 << 30)", memory="256M")}}
    with pytest.raises(ServerStartupError) as info:
        async with MCPHost(cfg, retry=NO_RETRY):
            pass
    assert "out of memory under its limit (256 MiB)" in str(info.value)


async def test_a_server_killed_by_its_cpu_limit_is_told_so() -> None:
    cfg = {"mcpServers": {"spinner": python_server("while True: pass", cpuSeconds=1)}}
    with pytest.raises(ServerStartupError) as info:
        async with MCPHost(cfg, retry=NO_RETRY):
            pass
    assert "killed by its CPU limit (1 s)" in str(info.value)


async def test_open_files_limit_applies() -> None:
    code = "import os, sys\nfds = []\ntry:\n    while True: fds.append(os.open(os.devnull, 0))\nexcept OSError as e:\n    sys.exit(f'stopped at {len(fds)}: {e}')"
    cfg = {"mcpServers": {"files": python_server(code, openFiles=32)}}
    with pytest.raises(ServerStartupError) as info:
        async with MCPHost(cfg, retry=NO_RETRY):
            pass
    assert "ran out of file descriptors under its limit (32)" in str(info.value)


@pytest.mark.interop
@needs_npx
async def test_the_documented_limits_work_for_a_real_npx_server(tmp_path: Path) -> None:
    # docs/config.md's example: 512M of memory must leave a Node server able to run.
    cfg = {"mcpServers": {"filesystem": {
        "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", str(tmp_path)],
        "limits": {"memory": "512M", "cpuSeconds": 600, "openFiles": 1024}, "timeout": 120}}}
    async with MCPHost(cfg) as host:
        result = await host.call_tool("filesystem.list_allowed_directories", {})
        assert not result.get("isError")

"""The acceptance test of the stdio host, against real servers started through npx.

filesystem (@modelcontextprotocol/server-filesystem) on a temporary directory, and Brave
Search (@brave/brave-search-mcp-server) with BRAVE_API_KEY expanded from the environment
(a placeholder is enough to start it and list its tools).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from helpers import descendants, needs_npx

from mcphost import MCPHost
from mcphost.errors import RoutingError, ValidationError

pytestmark = [pytest.mark.interop, needs_npx]

CONFIG = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"],
            "timeout": 180,
        },
        "brave-search": {
            "command": "npx",
            "args": ["-y", "@brave/brave-search-mcp-server"],
            "env": {"BRAVE_API_KEY": "${BRAVE_API_KEY}"},
            "timeout": 180,
        },
    }
}


def _param_types(tool: dict[str, Any]) -> dict[str, set[str]]:
    props = tool["inputSchema"].get("properties", {})
    out = {}
    for name, schema in props.items():
        t = schema.get("type")
        out[name] = set(t) if isinstance(t, list) else {t}
    return out


async def test_filesystem_and_brave_end_to_end(tmp_path: Path) -> None:
    config_file = tmp_path / "mcp.json"
    config_file.write_text(json.dumps(CONFIG), encoding="utf-8")
    (tmp_path / "hello.txt").write_text("hello from mcphost\n", encoding="utf-8")
    environ = dict(os.environ)
    environ.setdefault("BRAVE_API_KEY", "placeholder-key")
    before = set(descendants(os.getpid()))

    async with MCPHost(config_file, environ=environ) as host:
        caps = host.get_tools()
        assert set(caps) == {"filesystem", "brave-search"}
        for info in caps.values():
            assert info["state"] == "ready"
            assert info["protocolVersion"] in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
            assert info["serverInfo"] and info["serverInfo"]["name"]

        fs_tools = {t["name"]: t for t in caps["filesystem"]["tools"]}
        assert {"read_text_file", "write_file", "list_directory"} <= set(fs_tools)
        assert _param_types(fs_tools["read_text_file"])["path"] == {"string"}
        assert "path" in fs_tools["read_text_file"]["inputSchema"]["required"]

        brave_tools = {t["name"]: t for t in caps["brave-search"]["tools"]}
        assert "brave_web_search" in brave_tools
        web = _param_types(brave_tools["brave_web_search"])
        assert web["query"] == {"string"}
        assert web["count"] & {"number", "integer"}

        target = str(tmp_path / "hello.txt")
        result = await host.call_tool("filesystem.read_text_file", {"path": target})
        assert not result.get("isError")
        assert "hello from mcphost" in result["content"][0]["text"]

        listing = await host.call_tool("filesystem.list_directory", {"path": str(tmp_path)})
        assert "hello.txt" in listing["content"][0]["text"]

        with pytest.raises(RoutingError):
            await host.call_tool("filesystem.no_such_tool", {})

        # The filesystem server's own inputSchema is checked before anything is sent.
        sent = host.get_metrics()["filesystem"]["connection"]["requests"]
        with pytest.raises(ValidationError) as missing:
            await host.call_tool("filesystem.read_text_file", {})
        assert missing.value.server == "filesystem"
        assert "read_text_file" in str(missing.value) and "path" in str(missing.value)
        with pytest.raises(ValidationError) as wrong_type:
            await host.call_tool("filesystem.read_text_file", {"path": 7})
        assert wrong_type.value.path == "$.path" and wrong_type.value.keyword == "type"
        assert host.get_metrics()["filesystem"]["connection"]["requests"] == sent

        server_pids = [h.pid() for h in host.servers.values()]
        assert all(server_pids)
        assert set(descendants(os.getpid())) - before  # npx and node are running

    leftover = set(descendants(os.getpid())) - before
    assert leftover == set(), f"processes left behind: {sorted(leftover)}"

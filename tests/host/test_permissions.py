"""The application's permissions: rights on mcp:{server}:{tool}, globs, denials winning,
checked before anything is sent, denied tools absent from get_tools()."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from helpers import fake, fake_config

from mcphost import CapabilitySet, MCPHost, PermissionDeniedError, Permissions
from mcphost.config.model import ToolFilter


def tool(name: str) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}}


SERVERS = fake_config(fs=fake({"tools": [tool("read_file"), tool("read_dir"), tool("write_file")]}),
                      web=fake({"tools": [tool("fetch")]}))


def test_rights_globs_and_denials() -> None:
    caps = CapabilitySet()
    assert CapabilitySet is Permissions
    caps.grant("mcp:fs:read_*").grant("mcp:web:*", "execute", "read").deny("mcp:fs:read_dir")
    assert caps.has("mcp:fs:read_file", "execute")
    assert not caps.has("mcp:fs:read_dir")  # denial wins
    assert not caps.has("mcp:fs:write_file")  # never granted
    assert caps.allows("web", "fetch") and caps.has("mcp:web:fetch", "read")
    assert not caps.has("mcp:fs:read_file", "read")  # another right
    assert Permissions(["mcp:*"]).allows("any", "thing")
    with pytest.raises(ValueError):
        caps.grant("")


async def test_denied_calls_send_nothing_and_denied_tools_are_not_listed(caplog: pytest.LogCaptureFixture) -> None:
    caps = Permissions().grant("mcp:fs:read_*").deny("mcp:fs:read_dir")
    async with MCPHost(SERVERS, permissions=caps) as host:
        listed = host.get_tools()
        assert [t["name"] for t in listed["fs"]["tools"]] == ["read_file"]
        assert listed["web"]["tools"] == []
        assert (await host.call_tool("fs.read_file", {}))["content"]
        sent = host.get_metrics()["fs"]["connection"]["requests"]
        for name in ("fs.write_file", "fs.read_dir", "web.fetch"):
            with caplog.at_level(logging.WARNING, logger="mcphost"), pytest.raises(PermissionDeniedError) as info:
                await host.call_tool(name, {})
            assert "not permitted" in str(info.value) and isinstance(info.value, PermissionError)
        assert host.get_metrics()["fs"]["connection"]["requests"] == sent  # nothing was sent
        assert any(getattr(r, "event", None) == "permission_denied" for r in caplog.records)
        # Settable later; a cached route does not outlive the permissions it was checked by.
        host.permissions = None
        assert (await host.call_tool("fs.write_file", {}))["content"]
        assert len(host.get_tools()["fs"]["tools"]) == 3
        host.permissions = Permissions().grant("mcp:web:fetch")
        with pytest.raises(PermissionDeniedError):
            await host.call_tool("fs.write_file", {})
        with pytest.raises(ValueError, match="permissions must be"):
            host.permissions = {"mcp:fs:*": "execute"}  # type: ignore[assignment]


def test_the_config_tools_filter_is_read_into_the_same_rules() -> None:
    # Every filter gives the same answer as ToolFilter.permits, through the Permissions rules.
    names = ["read_file", "read", "write_file", "delete_all", "Read_file", "x", "a.b", "a[1]", "dir:ls", "", "*"]
    filters = [ToolFilter(), ToolFilter(allow=("read_*",)), ToolFilter(deny=("delete_*", "x")),
               ToolFilter(allow=("read_*", "write_?ile"), deny=("read",)), ToolFilter(allow=("[rw]*",)),
               ToolFilter(allow=("*",), deny=("*",)), ToolFilter(allow=("a.b", "dir:*"))]
    for tools in filters:
        rules = Permissions.from_tool_filter("fs", tools)
        for name in names:
            assert rules.allows("fs", name) == tools.permits(name), (tools, name)
            assert not rules.allows("other", name)  # the rules name their own server only

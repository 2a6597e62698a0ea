"""The era of an http origin is remembered for the host's life: a restart speaks it without
probing again, and a start that fails in it forgets it (the next start probes)."""

from __future__ import annotations

from typing import Any

import pytest
from scripted import Script

from mcphost import MCPHost
from mcphost.config.model import ServerConfig
from mcphost.errors import ServerStartupError
from mcphost.host.eras import EraMemory
from mcphost.policy import NO_RETRY


def host_of(script: Script, url: str = "http://127.0.0.1:8931/mcp", **entry: Any) -> MCPHost:
    return MCPHost({"mcpServers": {"a": {"url": url, **entry}}}, retry=NO_RETRY, handle_signals=False,
                   transport_factory=lambda config: script.connect())


def methods(script: Script) -> list[str]:
    return [m["method"] for m in script.received if m.get("method") in ("server/discover", "initialize")]


async def test_a_restart_speaks_the_remembered_era_without_probing() -> None:
    script = Script()  # a handshake-era server: server/discover is -32601
    async with host_of(script) as host:
        await host.restart_server("a")
        await host.restart_server("a")
        assert host.get_tools("a")["a"]["era"] == "legacy"
    assert methods(script) == ["server/discover", "initialize", "initialize", "initialize"]


async def test_a_start_that_fails_in_the_remembered_era_forgets_it() -> None:
    script = Script()
    async with host_of(script) as host:
        script.version = "1999-01-01"  # the server now answers initialize with a version refused
        with pytest.raises(ServerStartupError):
            await host.restart_server("a")
        script.version = "2025-11-25"
        await host.restart_server("a")
        assert host.get_tools("a")["a"]["state"] == "ready"
    assert methods(script) == ["server/discover", "initialize", "initialize", "server/discover", "initialize"]


async def test_only_auto_http_servers_are_remembered() -> None:
    script = Script()
    async with host_of(script, protocol="legacy") as host:
        await host.restart_server("a")
    assert methods(script) == ["initialize", "initialize"]


class Opened:
    """What EraMemory reads of a session that opened in the modern era."""

    era = "modern"
    protocol_version = "2026-07-28"

    async def open(self) -> None:
        pass


async def test_the_origin_is_the_key() -> None:
    memory = EraMemory()
    first = ServerConfig(name="a", type="http", url="HTTP://Example.test/mcp")
    same = ServerConfig(name="b", type="http", url="http://example.test:80/other")
    other = ServerConfig(name="c", type="http", url="http://example.test:8080/mcp")
    await memory.open(first, Opened())  # type: ignore[arg-type]
    assert [memory.setting(c) for c in (first, same, other)] == ["2026-07-28", "2026-07-28", "auto"]
    assert memory.setting(ServerConfig(name="d", type="http", url="http://example.test/", protocol="modern")) == "modern"
    assert memory.setting(ServerConfig(name="e", type="stdio", command="x")) == "legacy"

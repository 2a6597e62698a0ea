"""require_all=False serves what can start, even when a server's ${VAR} is unset; every
start (initialize, start_server, restart_server) is told as events."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import ConfigurationError, MCPHost


def _config() -> dict[str, Any]:
    cfg = fake_config(good=fake({"tools": [ECHO_TOOL]}), needs=fake({"tools": [ECHO_TOOL]}),
                      after=fake({"tools": [ECHO_TOOL]}))
    cfg["mcpServers"]["needs"]["env"] = {"KEY": "${MCPHOST_TEST_UNSET_KEY}"}
    cfg["mcpServers"]["after"]["dependencies"] = ["needs"]
    return cfg


async def test_an_unset_variable_fails_its_server_and_the_rest_is_served() -> None:
    environ = {"PATH": "/usr/bin:/bin"}
    events: list[dict[str, Any]] = []
    host = MCPHost(_config(), require_all=False, environ=environ)
    host.on_event(events.append)
    async with host:
        caps = host.get_tools(include_unavailable=True)
        assert caps["good"]["state"] == "ready"
        assert caps["needs"]["state"] == "failed"
        assert "environment variable MCPHOST_TEST_UNSET_KEY is not set" in str(caps["needs"]["error"])
        assert caps["after"]["state"] == "failed"
        assert "depends on needs" in str(caps["after"]["error"])
        result = await host.call_tool("good.echo", {"text": "hi"})
        assert not result.get("isError")
        with pytest.raises(ConfigurationError, match="MCPHOST_TEST_UNSET_KEY is not set"):
            await host.start_server("needs")  # read again: still unset, said again
    failed = [e["server"] for e in events if e["type"] == "server_failed"]
    assert failed[:2] == ["needs", "after"]


async def test_with_require_all_an_unset_variable_is_still_an_error_of_the_file() -> None:
    with pytest.raises(ConfigurationError, match="needs.env.KEY: environment variable MCPHOST_TEST_UNSET_KEY"):
        await MCPHost(_config(), environ={"PATH": "/usr/bin:/bin"}).initialize()


async def test_start_and_restart_server_emit_starting_and_ready() -> None:
    host = MCPHost(fake_config(one=fake({"tools": [ECHO_TOOL]})))
    events: list[tuple[str, Any]] = []
    host.on_event(lambda e: events.append((e["type"], e["server"])))
    async with host:
        assert ("server_starting", "one") in events and ("server_ready", "one") in events
        events.clear()
        await host.restart_server("one")
        assert [e for e in events if e[0].startswith("server_")] == [("server_starting", "one"),
                                                                   ("server_ready", "one")]
        events.clear()
        await host.stop_server("one")
        await host.start_server("one")
        assert [e for e in events if e[0] in ("server_starting", "server_ready")] == [
            ("server_starting", "one"), ("server_ready", "one")]


async def test_the_configurations_fail_fast_false_serves_the_others_too() -> None:
    cfg = _config()
    cfg["failFast"] = False
    async with MCPHost(cfg, environ={"PATH": "/usr/bin:/bin"}) as host:
        states = {name: info["state"] for name, info in host.get_tools(include_unavailable=True).items()}
    assert states == {"good": "ready", "needs": "failed", "after": "failed"}

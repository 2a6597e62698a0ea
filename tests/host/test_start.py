"""Starting servers over real subprocesses running the fake server: discovery, all or
nothing, the parallel start, start-up time-outs and errors, versions, selection, the child's
environment."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, group_alive

from mcphost import MCPHost
from mcphost.errors import (
    ConfigurationError,
    RoutingError,
    ServerStartupError,
    ServerUnavailableError,
)
from mcphost.policy import NO_RETRY

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


async def test_start_discover_call_and_shutdown() -> None:
    cfg = fake_config(
        a=fake({"tools": [ECHO_TOOL], "prompts": [
            {"name": "greet", "arguments": [{"name": "city", "required": True}],
             "messages": [{"role": "user", "content": {"type": "text", "text": "Hi {city}"}}]}
        ], "resources": [{"uri": "mem://a/readme", "name": "readme", "mimeType": "text/plain", "text": "hello"}],
            "resourceTemplates": [{"uriTemplate": "file:///{+path}", "name": "files", "text": "content for {path}"}],
            "instructions": "be nice"}),
        b=fake({"tools": [tool("dotted.name")]}),
    )
    async with MCPHost(cfg) as host:
        caps = host.get_tools()
        assert set(caps) == {"a", "b"}
        a = caps["a"]
        assert a["state"] == "ready"
        assert a["protocolVersion"] == "2025-11-25"
        assert a["instructions"] == "be nice"
        assert [t["name"] for t in a["tools"]] == ["echo"]
        assert a["prompts"][0]["name"] == "greet"
        assert a["resources"][0]["uri"] == "mem://a/readme"
        assert a["resourceTemplates"][0]["uriTemplate"] == "file:///{+path}"
        result = await host.call_tool("a.echo", {"text": "hi"})
        assert json.loads(result["content"][0]["text"]) == {"text": "hi"}
        # Tool names may contain dots: split on the first one only.
        result = await host.call_tool("b.dotted.name", {})
        assert result["content"][0]["type"] == "text"
        prompt = await host.get_prompt("a.greet", {"city": "Paris"})
        assert prompt["messages"][0]["content"]["text"] == "Hi Paris"
        res = await host.get_resource("mem://a/readme")
        assert res["contents"][0]["text"] == "hello"
        res = await host.get_resource("file:///tmp/x.txt")
        assert res["contents"][0]["text"] == "content for tmp/x.txt"
        metrics = host.get_metrics()
        assert metrics["a"]["tools"]["echo"]["calls"] == 1
        pids = {name: h.pid() for name, h in host.servers.items()}
    for pid in pids.values():
        assert pid is not None and not group_alive(pid)
    assert host.get_tools()["a"]["state"] == "stopped"


async def test_exit_at_start_reports_stderr() -> None:
    cfg = fake_config(brave=fake(exitAtStart=1, stderr="Error: API key is required"))
    with pytest.raises(ServerStartupError) as info:
        async with MCPHost(cfg, retry=NO_RETRY):
            pass
    err = info.value
    assert "brave" in str(err)
    assert "API key is required" in str(err)
    assert err.failures["brave"].stderr_tail[-1] == "Error: API key is required"


async def test_all_or_nothing_start_names_every_failure() -> None:
    cfg = fake_config(
        good=fake({"tools": [ECHO_TOOL]}),
        bad1=fake(exitAtStart=2, stderr="first failure"),
        bad2=fake(exitAtStart=3, stderr="second failure"),
    )
    host = MCPHost(cfg, retry=NO_RETRY)
    with pytest.raises(ServerStartupError) as info:
        await host.initialize()
    assert set(info.value.failures) == {"bad1", "bad2"}
    assert "first failure" in str(info.value) and "second failure" in str(info.value)
    good_pid = host.servers["good"].pid()
    assert good_pid is not None and not group_alive(good_pid)
    assert host.get_tools()["good"]["state"] == "stopped"


async def test_start_timeout_when_server_never_answers() -> None:
    server = fake(neverAnswer=True)
    cfg = {"mcpServers": {"mute": {**server, "timeout": 0.5}}}
    with pytest.raises(ServerStartupError, match="start-up timeout of 0.5 s"):
        async with MCPHost(cfg, shutdown_timeout=2, retry=NO_RETRY):
            pass


async def test_parallel_start_overlaps() -> None:
    # Each server delays its initialize answer; all must be starting at the same time.
    n = 5
    cfg = fake_config(**{f"s{i}": fake({"tools": [ECHO_TOOL]}, initializeDelay=0.3) for i in range(n)})
    moves: list[str] = []
    host = MCPHost(cfg)
    host.on_event(lambda e: moves.append(e["data"]["to"]) if e["type"] == "state_changed" else None)
    await host.initialize()
    try:
        # Every server entered STARTING before any became READY: a sequential start (one
        # server's handshake after another's) would interleave them.
        assert moves == ["starting"] * n + ["ready"] * n
    finally:
        await host.shutdown()


async def test_version_mismatch_is_a_clear_startup_error() -> None:
    cfg = fake_config(old=fake({"protocolVersion": "2023-01-01"}))
    with pytest.raises(ServerStartupError, match=r"'2023-01-01'.*'2025-11-25'"):
        async with MCPHost(cfg):
            pass


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_each_version_negotiates(version: str) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL], "protocolVersion": version}))
    async with MCPHost(cfg) as host:
        assert host.get_tools()["a"]["protocolVersion"] == version
        assert (await host.call_tool("a.echo", {}))["content"]


async def test_pagination_and_repeated_cursor_guard() -> None:
    tools = [tool(f"t{i}") for i in range(25)]
    cfg = fake_config(paged=fake({"tools": tools, "pageSize": 4}),
                      loop=fake({"tools": tools, "pageSize": 4, "cursorLoop": True}))
    async with MCPHost(cfg) as host:
        caps = host.get_tools()
        assert [t["name"] for t in caps["paged"]["tools"]] == [f"t{i}" for i in range(25)]
        assert 0 < len(caps["loop"]["tools"]) < 25 * 3


async def test_missing_command_is_a_configuration_error() -> None:
    cfg = {"mcpServers": {"x": {"command": "definitely-not-a-command-mcphost"}}}
    with pytest.raises(ConfigurationError, match="definitely-not-a-command-mcphost"):
        async with MCPHost(cfg):
            pass


async def test_config_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="nope.json: configuration file not found"):
        await MCPHost(tmp_path / "nope.json").initialize()


async def test_disabled_server_is_listed_not_started() -> None:
    server = fake({"tools": [ECHO_TOOL]})
    cfg = {"mcpServers": {"on": server, "off": {**server, "enabled": False}}}
    async with MCPHost(cfg) as host:
        assert host.get_tools()["off"]["state"] == "disabled"
        with pytest.raises(ServerUnavailableError, match="disabled"):
            await host.call_tool("off.echo", {})


async def test_start_only_some_servers_and_their_dependencies() -> None:
    server = fake({"tools": [ECHO_TOOL]})
    cfg = {"mcpServers": {
        "base": server,
        "app": {**server, "dependencies": ["base"]},
        "other": fake(exitAtStart=1),  # would fail the whole start if it were started
    }}
    async with MCPHost(cfg, servers=["app"]) as host:
        states = {name: info["state"] for name, info in host.get_tools().items()}
        assert states == {"base": "ready", "app": "ready", "other": "disabled"}
        assert (await host.call_tool("app.echo", {"text": "x"}))["content"]
    with pytest.raises(RoutingError, match="unknown server 'nope'"):
        async with MCPHost(cfg, servers=["nope"]):
            pass


async def test_child_environment_is_allow_listed() -> None:
    cfg = fake_config(a=fake({"tools": [tool("env", echoEnv=True)]}))
    env = {**os.environ, "MCPHOST_SECRET_TEST": "s3cret"}
    async with MCPHost(cfg, environ=env) as host:
        assert host.servers["a"].transport is not None
        proc_env = _environ_of(host.servers["a"].pid())
        assert "MCPHOST_SECRET_TEST" not in proc_env
        assert "PATH" in proc_env and "PYTHONPATH" in proc_env


def _environ_of(pid: int | None) -> dict[str, str]:
    assert pid is not None
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


async def test_selected_servers_are_isolated_from_broken_entries(tmp_path: Path) -> None:
    cfg = fake_config(good=fake({"tools": [ECHO_TOOL]}))
    cfg["mcpServers"]["bad"] = {"command": "no-such-binary", "env": {"KEY": "${UNSET_VARIABLE_FOR_TEST}"}}
    cfg["mcpServers"]["worse"] = {"command": 5}  # not even valid
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "UNSET_VARIABLE_FOR_TEST"}
    async with MCPHost(str(path), servers=["good"], environ=env) as host:
        assert (await host.call_tool("good.echo", {}))["content"]
        assert host.get_tools()["bad"]["state"] == "disabled"
        assert host.get_tools()["worse"]["state"] == "disabled"
    with pytest.raises(ConfigurationError, match="UNSET_VARIABLE_FOR_TEST"):
        async with MCPHost(str(path), servers=["bad"], environ=env):
            pass


async def test_the_first_start_through_a_package_runner_may_take_longer(tmp_path: Path) -> None:
    # "npx" here is this Python under that name, running the fake server: the host must treat
    # its first start as a possible download (a longer timeout, a server_installing event).
    runner = tmp_path / "npx"
    runner.symlink_to(sys.executable)
    entry = fake({"tools": [ECHO_TOOL]}, initializeDelay=1.0)
    cfg = {"mcpServers": {"pkg": {**entry, "command": str(runner), "timeout": 0.5}}}
    events: list[dict[str, Any]] = []
    host = MCPHost(cfg, retry=NO_RETRY)
    host.on_event(events.append)
    async with host:  # 1 s of start-up under a 0.5 s timeout: allowed the first time
        assert [e["type"] for e in events if e["type"] == "server_installing"] == ["server_installing"]
        with pytest.raises(ServerStartupError, match="start-up timeout of 0.5 s"):
            await host.restart_server("pkg")  # the package is there now: its own timeout

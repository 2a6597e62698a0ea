"""Hot reload: only what changed is touched; an invalid edit changes nothing."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, wait_for

from mcphost import ConfigurationError, MCPHost

SLOW = {"name": "slow", "inputSchema": {"type": "object"}, "behavior": {"delay": 1.0, "echo": True}}


def write(path: Path, cfg: dict[str, Any]) -> None:
    path.write_text(json.dumps(cfg), encoding="utf-8")


def pids(host: MCPHost) -> dict[str, int | None]:
    return {name: h.pid() for name, h in host.servers.items()}


def host_of(path: Path, cfg: dict[str, Any]) -> tuple[MCPHost, list[dict[str, Any]]]:
    """A host of the file ``path`` (written with ``cfg``), and the events it emits."""
    write(path, cfg)
    events: list[dict[str, Any]] = []
    host = MCPHost(str(path))
    host.on_event(events.append)
    return host, events


async def test_add_remove_change_and_leave_alone(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    base = fake_config(keep=fake({"tools": [ECHO_TOOL, SLOW]}), edit=fake({"tools": [ECHO_TOOL]}),
                       drop=fake({"tools": [ECHO_TOOL]}))
    write(path, base)
    events: list[dict[str, Any]] = []
    host = MCPHost(str(path))
    host.on_event(events.append)
    async with host:
        before = pids(host)
        in_flight = asyncio.ensure_future(host.call_tool("keep.slow", {"n": 1}))  # crosses the reload
        changed = fake_config(keep=fake({"tools": [ECHO_TOOL, SLOW]}),
                              edit=fake({"tools": [ECHO_TOOL, {**ECHO_TOOL, "name": "echo2"}]}),
                              new=fake({"tools": [ECHO_TOOL]}))
        write(path, changed)
        summary = await host.reload()
        assert summary == {"added": ["new"], "removed": ["drop"], "changed": ["edit"], "updated": [],
                           "unchanged": ["keep"], "failed": {}}
        assert (await in_flight)["content"]  # the unchanged server's call completed
        after = pids(host)
        assert after["keep"] == before["keep"]  # not touched
        assert after["edit"] != before["edit"]  # a new process with the new values
        assert "drop" not in host.get_tools() and "new" in host.get_tools()
        assert {t["name"] for t in host.get_tools()["edit"]["tools"]} == {"echo", "echo2"}
        assert (await host.call_tool("new.echo", {}))["content"]
        assert (await host.call_tool("edit.echo2", {}))["content"]
        reloaded = [e for e in events if e["type"] == "config_reloaded"]
        assert len(reloaded) == 1 and reloaded[0]["data"]["added"] == ["new"]
        # Nothing changed: nothing touched.
        same = pids(host)
        assert await host.reload() == {"added": [], "removed": [], "changed": [], "updated": [],
                                       "unchanged": ["keep", "edit", "new"], "failed": {}}
        assert pids(host) == same


async def test_an_invalid_edit_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    host, events = host_of(path, fake_config(a=fake({"tools": [ECHO_TOOL]})))
    async with host:
        before = pids(host)
        path.write_text('{"mcpServers": {"a": {"command": 5}}}', encoding="utf-8")
        with pytest.raises(ConfigurationError, match="mcp.json:1"):
            await host.reload()
        assert pids(host) == before
        assert (await host.call_tool("a.echo", {}))["content"]
        assert [e["type"] for e in events if e["type"].startswith("config_")] == ["config_reload_failed"]


async def test_dependents_of_a_changed_server_restart_after_it(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"

    def cfg(version: int) -> dict[str, Any]:
        base = fake({"tools": [ECHO_TOOL]}, stderr=f"v{version}")
        child = {**fake({"tools": [ECHO_TOOL]}), "dependencies": ["base"]}
        return fake_config(base=base, child=child, other=fake({"tools": [ECHO_TOOL]}))

    write(path, cfg(1))
    events: list[dict[str, Any]] = []
    host = MCPHost(str(path))
    host.on_event(events.append)
    async with host:
        before = pids(host)
        write(path, cfg(2))
        events.clear()
        summary = await host.reload()
        assert summary["changed"] == ["base", "child"] and summary["unchanged"] == ["other"]
        after = pids(host)
        assert after["other"] == before["other"]
        assert after["base"] != before["base"] and after["child"] != before["child"]
        moves = [(e["server"], e["data"]["to"]) for e in events if e["type"] == "state_changed"]
        assert moves.index(("child", "stopped")) < moves.index(("base", "stopped"))
        assert moves.index(("base", "ready")) < moves.index(("child", "starting"))


async def test_watch_reloads_a_burst_of_edits_once_coherently(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, fake_config(a=fake({"tools": [ECHO_TOOL]})))
    events: list[dict[str, Any]] = []
    host = MCPHost(str(path), watch=True)
    host.on_event(events.append)
    async with host:
        for n in range(1, 6):  # a burst: the last one wins
            write(path, fake_config(a=fake({"tools": [ECHO_TOOL]}),
                                    **{f"b{i}": fake({"tools": [ECHO_TOOL]}) for i in range(n)}))
        assert await wait_for(lambda: set(host.get_tools()) == {"a", "b0", "b1", "b2", "b3", "b4"}, timeout=15)
        assert await wait_for(lambda: all(i["state"] == "ready" for i in host.get_tools().values()), timeout=15)
        # The event comes when the reload has finished, which may be a moment after the new
        # servers are ready (a race seen once on a loaded machine): wait for it.
        assert await wait_for(lambda: any(e["type"] == "config_reloaded" for e in events), timeout=15)
        reloads = [e for e in events if e["type"] == "config_reloaded"]
        assert 1 <= len(reloads) <= 2  # polled: the burst is seen once or, at worst, twice
        assert reloads[-1]["data"]["removed"] == []


async def test_a_reload_during_another_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    host, events = host_of(path, fake_config(a=fake({"tools": [ECHO_TOOL]})))
    async with host:
        write(path, fake_config(a=fake({"tools": [ECHO_TOOL]}), b=fake({"tools": [ECHO_TOOL]})))
        first, second = await asyncio.gather(host.reload(), host.reload())
        # Queued, not interleaved: the first applies the edit, the second finds nothing to do.
        assert first["added"] == ["b"] and second["added"] == [] and second["unchanged"] == ["a", "b"]
        starts = [e for e in events if e["type"] == "state_changed" and e["server"] == "b"
                  and e["data"]["to"] == "starting"]
        assert len(starts) == 1
        assert [e["data"]["added"] for e in events if e["type"] == "config_reloaded"] == [["b"], []]


async def test_settings_are_updated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    write(path, fake_config(a=fake({"tools": [ECHO_TOOL, SLOW]}), b=fake({"tools": [ECHO_TOOL]})))
    host = MCPHost(str(path))
    async with host:
        before = pids(host)
        in_flight = asyncio.ensure_future(host.call_tool("a.slow", {"n": 1}))
        settled = fake({"tools": [ECHO_TOOL, SLOW]})
        settled.update(priority=3, domains=["docs"], cacheTtl=0, logLevel="DEBUG", capabilities=["search"],
                       retry={"retries": 1}, restart={"policy": "on-failure"})
        write(path, fake_config(a=settled, b=fake({"tools": [ECHO_TOOL]})))
        summary = await host.reload()
        assert summary["updated"] == ["a"] and summary["changed"] == [] and summary["unchanged"] == ["b"]
        assert pids(host) == before  # no process restarted
        assert (await in_flight)["content"]  # the call across the reload completed
        listed = host.get_tools()["a"]
        assert listed["priority"] == 3 and listed["domains"] == ["docs"] and listed["declaredCapabilities"] == ["search"]
        assert host.servers_for("docs") == ["a"]
        assert host.servers["a"].config.restart.policy == "on-failure"
        # A field of the process is a change: the server restarts.
        changed = fake({"tools": [ECHO_TOOL, SLOW]})
        changed.update(priority=3, domains=["docs"], cacheTtl=0, logLevel="DEBUG", capabilities=["search"],
                       retry={"retries": 1}, restart={"policy": "on-failure"}, cwd=str(tmp_path))
        write(path, fake_config(a=changed, b=fake({"tools": [ECHO_TOOL]})))
        summary = await host.reload()
        assert summary["changed"] == ["a"] and summary["updated"] == []
        assert pids(host)["a"] != before["a"] and pids(host)["b"] == before["b"]

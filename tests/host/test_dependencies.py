"""Dependency order: layers in parallel, dependents after their dependencies, reverse stop;
and the partial start that serves what could start."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import ConfigurationError, MCPHost, ServerStartupError
from mcphost.policy import NO_RETRY


def with_deps(entry: dict[str, Any], *deps: str) -> dict[str, Any]:
    return {**entry, "dependencies": list(deps)}


def moves(events: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(e["server"], e["data"]["to"]) for e in events if e["type"] == "state_changed"]


def diamond(**faults: Any) -> dict[str, Any]:
    slow = fake({"tools": [ECHO_TOOL]}, initializeDelay=0.2)
    return fake_config(
        a=fake({"tools": [ECHO_TOOL]}, **faults),
        b=with_deps(slow, "a"),
        c=with_deps(slow, "a"),
        d=with_deps(fake({"tools": [ECHO_TOOL]}), "b", "c"),
    )


async def test_a_diamond_starts_in_layers_and_stops_in_reverse() -> None:
    events: list[dict[str, Any]] = []
    host = MCPHost(diamond())
    host.on_event(events.append)
    async with host:
        started = moves(events)
        assert started[:2] == [("a", "starting"), ("a", "ready")]
        # b and c overlap: both start before either is ready; d only after both.
        assert {s for s, to in started[2:4]} == {"b", "c"} and all(to == "starting" for _, to in started[2:4])
        assert {s for s, to in started[4:6]} == {"b", "c"} and all(to == "ready" for _, to in started[4:6])
        assert started[6:] == [("d", "starting"), ("d", "ready")]
        events.clear()
    stopped = [s for s, to in moves(events) if to == "stopped"]
    assert stopped.index("d") < min(stopped.index("b"), stopped.index("c"))
    assert max(stopped.index("b"), stopped.index("c")) < stopped.index("a")


async def test_a_failing_dependency_stops_its_dependents_and_says_why() -> None:
    host = MCPHost(diamond(exitAtStart=4, stderr="a is broken"), require_all=False, retry=NO_RETRY)
    cfg = host.lifecycle.source
    assert isinstance(cfg, dict)
    cfg["mcpServers"]["e"] = fake({"tools": [ECHO_TOOL]})  # independent of a
    async with host:
        results = await _results(host)
    assert results["a"]["ok"] is False and "a is broken" in results["a"]["error"]
    for name in ("b", "c"):
        assert results[name] == {"ok": False, "state": "failed",
                                 "error": f"{name}: not started: it depends on a, which did not start"}
    assert "it depends on b, c" in results["d"]["error"]
    assert results["e"] == {"ok": True, "state": "ready", "error": None}


async def _results(host: MCPHost) -> dict[str, dict[str, Any]]:
    return {name: {"ok": info["state"] == "ready", "state": info["state"], "error": info["error"]}
            for name, info in host.get_tools().items()}


async def test_partial_start_serves_what_started_and_reports_the_rest() -> None:
    cfg = fake_config(one=fake({"tools": [ECHO_TOOL]}), two=fake(exitAtStart=3, stderr="no key"),
                      three=fake({"tools": [ECHO_TOOL]}))
    host = MCPHost(cfg, retry=NO_RETRY)
    try:
        results = await host.initialize(require_all=False)
        assert results["one"]["ok"] and results["three"]["ok"]
        assert results["two"]["ok"] is False and results["two"]["state"] == "failed"
        assert "exited during start-up with code 3" in results["two"]["error"]
        assert (await host.call_tool("one.echo", {}))["content"]
        assert (await host.call_tool("three.echo", {}))["content"]
        info = host.get_tools(include_unavailable=True)["two"]
        assert info["state"] == "failed" and "no key" in (info["error"] or "")
    finally:
        await host.shutdown()
    # The default stays all-or-nothing.
    with pytest.raises(ServerStartupError, match="1 server"):
        async with MCPHost(cfg, retry=NO_RETRY):
            pass


@pytest.mark.parametrize(
    ("deps", "message"),
    [
        ({"a": ["b"], "b": ["c"], "c": ["a"]}, "dependency cycle: a -> b -> c -> a"),
        ({"a": ["zz"]}, r"mcpServers.a.dependencies\[0\]: unknown server \"zz\""),
    ],
)
async def test_cycles_and_unknown_names_are_configuration_errors(deps: dict[str, list[str]], message: str) -> None:
    cfg = fake_config(**{name: with_deps(fake({"tools": [ECHO_TOOL]}), *d) for name, d in deps.items()})
    with pytest.raises(ConfigurationError, match=message):
        async with MCPHost(cfg):
            pass


async def test_restart_and_start_respect_the_graph() -> None:
    async with MCPHost(diamond()) as host:
        pids = {name: h.pid() for name, h in host.servers.items()}
        await host.restart_server("b")  # d depends on b: restarted after it; a and c untouched
        after = {name: h.pid() for name, h in host.servers.items()}
        assert after["b"] != pids["b"] and after["d"] != pids["d"]
        assert after["a"] == pids["a"] and after["c"] == pids["c"]
        assert all(i["state"] == "ready" for i in host.get_tools().values())
        await host.stop_server("a")
        with pytest.raises(ServerStartupError, match="depends on a, which is not ready"):
            await host.restart_server("b")
        await host.stop_server("d")
        await host.stop_server("b")
        with pytest.raises(ServerStartupError, match="depends on b, which is not ready"):
            await host.start_server("d")
        await host.start_server("a")
        await host.start_server("b")
        await host.start_server("d")
        assert (await host.call_tool("d.echo", {}))["content"]

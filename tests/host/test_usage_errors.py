"""Every public call raises only MCPHostError subclasses: the caller's own mistakes too."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost, MCPHostError, RoutingError, UsageError


@pytest.fixture
async def host() -> Any:
    async with MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL], "prompts": [{"name": "p"}]}))) as h:
        yield h


@pytest.mark.parametrize(
    "call",
    [
        lambda h: h.call_tool("a.echo", [("text", "x"), 5]),
        lambda h: h.call_tool("a.echo", 42),
        lambda h: h.call_tool("a.echo", {"text": object()}),
        lambda h: h.call_tool(None, {}),
        lambda h: h.call_tool("a.echo", {}, timeout="soon"),
        lambda h: h.get_prompt(7),
        lambda h: h.get_prompt("a.p", ["not", "a", "mapping"]),
        lambda h: h.get_resource(None),
        lambda h: h.complete({"type": "ref/nothing"}, {"name": "x", "value": ""}),
        lambda h: h.complete("not a mapping", {}),
        lambda h: h.set_log_level(None, "loud"),
        lambda h: h.set_roots([42]),
        lambda h: h.list_tasks("nobody"),
        lambda h: h.restart_server(3),
        lambda h: h.subscribe_resource(3.5),
    ],
)
async def test_bad_arguments_raise_the_tree(host: MCPHost, call: Any) -> None:
    with pytest.raises(MCPHostError):
        await call(host)
    # ... and the host still serves.
    assert (await host.call_tool("a.echo", {"text": "ok"}))["content"]


async def test_unserialisable_arguments_are_a_usage_error_naming_the_call(host: MCPHost) -> None:
    host.validate_arguments = False
    with pytest.raises(UsageError, match="tools/call: params are not JSON-serialisable") as info:
        await host.call_tool("a.echo", {"text": {1, 2}})
    assert info.value.server == "a"
    assert isinstance(info.value, ValueError)
    assert host.get_metrics()["a"]["pending"] == 0


@pytest.mark.parametrize("options", [{}, {"timeout": 5.0}], ids=["fast path", "full path"])
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
async def test_non_finite_numbers_are_refused_before_sending(host: MCPHost, options: dict[str, Any], bad: float) -> None:
    # orjson would write NaN as null: refused by both codecs, on the fused path of plain calls too.
    host.validate_arguments = False
    sent = host.get_metrics()["a"]["transport"]["messages_out"]
    with pytest.raises(UsageError, match="tools/call: params are not JSON-serialisable") as info:
        await host.call_tool("a.echo", {"text": "x", "n": [1, None, {"v": bad}]}, **options)
    assert info.value.server == "a"
    metrics = host.get_metrics()["a"]
    assert metrics["pending"] == 0 and metrics["transport"]["messages_out"] == sent  # nothing went out
    # A null that is really null is sent.
    assert (await host.call_tool("a.echo", {"text": "x", "n": None}, **options))["content"]


async def test_initialize_twice_and_bad_sources() -> None:
    host = MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]})))
    async with host:
        with pytest.raises(UsageError, match="initialize"):
            await host.initialize()
    with pytest.raises(MCPHostError):
        await MCPHost(12345).initialize()  # type: ignore[arg-type]
    with pytest.raises(RoutingError, match="unknown server 'zz'"):
        await MCPHost(fake_config(a=fake({})), servers=["zz"]).initialize()

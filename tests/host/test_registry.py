"""Discovery: paging, its guards, lists a server declares but does not serve, refreshes."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake
from scripted import MethodError, Script, scripted_host

from mcphost import MCPHost, RoutingError, ServerStartupError
from mcphost.bounds import Bounds
from mcphost.policy import NO_RETRY

TOOL = {"name": "t", "inputSchema": {"type": "object"}}


def paged(pages: list[list[dict[str, Any]]], key: str = "tools") -> Any:
    def handler(params: dict[str, Any]) -> dict[str, Any]:
        index = int(params.get("cursor", 0))
        page: dict[str, Any] = {key: pages[index]}
        if index + 1 < len(pages):
            page["nextCursor"] = str(index + 1)
        return page

    return handler


async def test_pages_are_followed_until_no_cursor() -> None:
    pages = [[{**TOOL, "name": f"t{p}{i}"} for i in range(3)] for p in range(4)]
    script = Script({"tools/list": paged(pages)})
    async with scripted_host({"a": script}) as host:
        assert [t["name"] for t in host.get_tools()["a"]["tools"]] == [f"t{p}{i}" for p in range(4) for i in range(3)]
        assert [r.get("params") for r in script.requests("tools/list")] == [None, {"cursor": "1"}, {"cursor": "2"}, {"cursor": "3"}]


async def test_a_repeated_cursor_ends_the_listing(caplog: pytest.LogCaptureFixture) -> None:
    script = Script({"tools/list": lambda p: {"tools": [{**TOOL, "name": f"t{len(script.requests('tools/list'))}"}], "nextCursor": "same"}})
    async with scripted_host({"a": script}) as host:
        assert len(host.get_tools()["a"]["tools"]) == 2
    assert any("repeated cursor" in r.getMessage() for r in caplog.records)


async def test_the_page_cap_ends_an_endless_listing(caplog: pytest.LogCaptureFixture) -> None:
    def page(params: dict[str, Any]) -> dict[str, Any]:
        n = len(script.requests("tools/list"))
        return {"tools": [{**TOOL, "name": f"t{n}"}], "nextCursor": str(n)}

    script = Script({"tools/list": page})
    async with scripted_host({"a": script}, max_pages=5) as host:
        assert len(host.get_tools()["a"]["tools"]) == 5
    assert any("exceeded 5 pages" in r.getMessage() for r in caplog.records)


async def test_a_declared_list_that_is_not_served_is_empty_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    resource = {"uri": "file:///x", "name": "x"}
    script = Script(
        {"resources/list": lambda p: {"resources": [resource]}},  # templates/list: -32601
        capabilities={"resources": {}},
    )
    async with scripted_host({"a": script}) as host:
        info = host.get_tools()["a"]
        assert info["state"] == "ready"
        assert info["resources"] == [resource] and info["resourceTemplates"] == []
        assert host.get_metrics()["a"]["connection"]["unserved_lists"] == 1
    warnings = [r.getMessage() for r in caplog.records if "is not served" in r.getMessage()]
    assert len(warnings) == 1 and "resources/templates/list" in warnings[0]


async def test_any_other_list_error_still_fails_the_start() -> None:
    def broken(params: dict[str, Any]) -> Any:
        raise MethodError(-32603, "database down")

    script = Script({"tools/list": broken})
    with pytest.raises(ServerStartupError, match="tools/list failed: database down"):
        async with scripted_host({"a": script}):
            pass


async def test_malformed_items_are_dropped_and_undeclared_kinds_not_asked() -> None:
    script = Script({"tools/list": lambda p: {"tools": [TOOL, "junk", 3, {"no": "name"}]}})
    async with scripted_host({"a": script}) as host:
        assert host.get_tools()["a"]["tools"] == [TOOL]
        assert script.requests("prompts/list") == [] and script.requests("resources/list") == []


async def test_a_listing_past_the_item_bound_fails_the_start() -> None:
    def page(params: dict[str, Any]) -> dict[str, Any]:
        n = len(script.requests("tools/list"))
        return {"tools": [{**TOOL, "name": f"t{n}-{i}"} for i in range(400)], "nextCursor": str(n)}

    script = Script({"tools/list": page})
    with pytest.raises(ServerStartupError, match="tools/list lists more than 1000 items"):
        async with scripted_host({"a": script}, bounds=Bounds(max_list_items=1000)):
            pass
    assert len(script.requests("tools/list")) == 3  # stopped at the page that crossed the bound


async def test_a_name_listed_twice_is_the_servers_protocol_error_in_strict_mode() -> None:
    script = Script({"tools/list": lambda p: {"tools": [TOOL, {**TOOL, "description": "again"}]}})
    with pytest.raises(ServerStartupError, match="tools/list lists name 't' twice"):
        async with scripted_host({"a": script}, validate_messages="strict"):
            pass


async def test_a_name_listed_twice_keeps_the_server_and_the_first_definition_in_lenient_mode(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The fake server lists "echo" twice (and "other" three times), as some servers do:
    # before, the server was refused entirely; now it starts, with one definition of each.
    caplog.set_level(logging.WARNING)
    first = {**ECHO_TOOL, "description": "first"}
    tools = [first, {"name": "other", "inputSchema": {"type": "object"}}, {**ECHO_TOOL, "description": "second"},
             {"name": "other", "inputSchema": {"type": "object"}, "description": "x"},
             {"name": "other", "inputSchema": {"type": "object"}, "description": "y"}]
    host = MCPHost({"mcpServers": {"dup": fake({"tools": tools})}}, retry=NO_RETRY)
    async with host:
        listed = host.get_tools()["dup"]["tools"]
        assert [t["name"] for t in listed] == ["echo", "other"]
        assert listed[0]["description"] == "first"
        assert (await host.call_tool("dup.echo", {"text": "hi"}))["content"]
        await host.restart_server("dup")  # listed again: not told again
        assert [t["name"] for t in host.get_tools()["dup"]["tools"]] == ["echo", "other"]
    told = [r for r in caplog.records if "more than once" in r.getMessage()]
    assert len(told) == 1
    assert "lists 3 name(s) more than once" in told[0].getMessage() and "'echo', 'other'" in told[0].getMessage()


async def test_unusable_names_are_dropped_odd_ones_kept_long_descriptions_cut(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    tools = [
        {**TOOL, "name": ""},
        {**TOOL, "name": "evil\x1b]0;pwned\x07"},
        {**TOOL, "name": "x" * 2000},
        {**TOOL, "name": "with space"},
        {**TOOL, "name": "ok", "description": "d" * 100},
    ]
    script = Script({"tools/list": lambda p: {"tools": tools}})
    async with scripted_host({"a": script}, bounds=Bounds(max_description_length=10)) as host:
        listed = {t["name"]: t for t in host.get_tools()["a"]["tools"]}
        assert set(listed) == {"with space", "ok"}
        assert listed["ok"]["description"] == "d" * 10 + "… (90 more characters)"
    text = caplog.text
    assert "3 item(s) without a usable name dropped" in text
    assert "1 tool name(s) outside [A-Za-z0-9._-]{1,128}: 'with space'" in text
    assert "x" * 400 not in text  # the log line is bounded too


async def test_errors_list_at_most_twenty_names() -> None:
    tools = [{**TOOL, "name": f"tool{i:03}"} for i in range(500)]
    script = Script({"tools/list": lambda p: {"tools": tools}})
    async with scripted_host({"a": script}) as host:
        with pytest.raises(RoutingError) as info:
            await host.call_tool("a." + "y" * 100_000, {})
        message = str(info.value)
        assert len(message) < 3000
        assert "tool000, tool001" in message and "and 480 more" in message


async def test_stopping_the_refresh_lets_the_callers_cancellation_through() -> None:
    # The refresher is cancelled and waited for; a cancellation of the caller meanwhile is
    # the caller's own and must reach it (it was swallowed with the refresher's).
    import asyncio

    from mcphost.config import ServerConfig
    from mcphost.host.handle import ServerHandle
    from mcphost.host.registry import Registry

    handle = ServerHandle(ServerConfig(name="a", type="local"), request_timeout=5, shutdown_timeout=5)
    told, release = asyncio.Event(), asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            told.set()
            await release.wait()  # a refresh finishing its step before it ends
            raise

    handle.refresher = asyncio.ensure_future(slow_to_stop())
    await asyncio.sleep(0)  # the refresher runs up to its wait
    stopping = asyncio.ensure_future(Registry(bounds=Bounds(), on_listed=lambda h, k: None).stop(handle))
    await asyncio.wait_for(told.wait(), 10)
    stopping.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(stopping, 10)
    assert stopping.cancelled()

"""Discovery: paging, its guards, lists a server declares but does not serve, refreshes."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scripted import MethodError, Script, scripted_host

from mcphost import ServerStartupError

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
    script = Script({"tools/list": lambda p: {"tools": [TOOL], "nextCursor": str(len(script.requests("tools/list")))}})
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

"""Resources for context: gather_resources() and servers_for(), and priority (lower first)
deciding which server serves a URI two servers offer."""

from __future__ import annotations

from typing import Any

import pytest
from helpers import fake, needs_npx
from scripted import MethodError, Script

from mcphost import MCPHost, RoutingError, ServerError


def resources(*uris: str) -> list[dict[str, Any]]:
    return [{"uri": uri, "name": uri.rsplit("/", 1)[-1], "mimeType": "text/plain", "text": f"text of {uri}"}
            for uri in uris]


def config() -> dict[str, Any]:
    metadata = fake({"resources": resources("meta://aliases", "meta://columns")})
    metadata.update(priority=1, domains=["sales"])
    database = fake({"resources": resources("db://tables", "db://schema/orders", "shared://readme")})
    database.update(priority=10, domains=["sales", "finance"])
    other = fake({"resources": resources("shared://readme")})
    other.update(priority=5)
    return {"mcpServers": {"database": database, "metadata": metadata, "other": other}}


async def test_every_resource_in_priority_order() -> None:
    async with MCPHost(config()) as host:
        gathered = await host.gather_resources()
        assert gathered["errors"] == []
        order = [(r["server"], r["uri"]) for r in gathered["resources"]]
        assert order == [("metadata", "meta://aliases"), ("metadata", "meta://columns"),
                         ("other", "shared://readme"),
                         ("database", "db://schema/orders"), ("database", "db://tables"), ("database", "shared://readme")]
        first = gathered["resources"][0]
        assert first["priority"] == 1 and first["domains"] == ["sales"] and first["name"] == "aliases"
        assert first["contents"][0]["text"] == "text of meta://aliases"
        # Chosen servers, a glob, a callable.
        only = await host.gather_resources(["database"], "db://*")
        assert [r["uri"] for r in only["resources"]] == ["db://schema/orders", "db://tables"]
        picked = await host.gather_resources(uri_filter=lambda uri: uri.endswith("readme"))
        assert [r["server"] for r in picked["resources"]] == ["other", "database"]
        assert host.servers_for("sales") == ["metadata", "database"]
        assert host.servers_for("nothing") == []
        # Two servers offer shared://readme: the lower priority wins.
        assert host.route_resource("shared://readme").name == "other"
        assert host.get_tools()["database"]["priority"] == 10
        assert host.get_tools()["database"]["domains"] == ["sales", "finance"]
        with pytest.raises(RoutingError, match="unknown server"):
            await host.gather_resources(["nobody"])
        with pytest.raises(ValueError, match="concurrency"):
            await host.gather_resources(concurrency=0)


def failing_server() -> Script:
    def read(params: dict[str, Any]) -> Any:
        if params["uri"] == "bad://one":
            raise MethodError(-32002, "Resource not found")
        return {"contents": [{"uri": params["uri"], "text": "fine"}]}

    listed = [{"uri": f"good://{i}", "name": str(i)} for i in range(5)] + [{"uri": "bad://one", "name": "bad"}]
    return Script({"resources/list": lambda p: {"resources": listed},
                   "resources/templates/list": lambda p: {"resourceTemplates": []},
                   "resources/read": read}, capabilities={"resources": {}})


async def test_one_failing_read_in_both_modes() -> None:
    script = failing_server()
    cfg = {"mcpServers": {"s": {"command": "never-run"}}}
    async with MCPHost(cfg, transport_factory=lambda c: script.connect()) as host:
        partial = await host.gather_resources(fail_fast=False, concurrency=2)
        assert [r["uri"] for r in partial["resources"]] == [f"good://{i}" for i in range(5)]
        assert len(partial["errors"]) == 1
        error = partial["errors"][0]
        assert error["uri"] == "bad://one" and "Resource not found" in error["error"]
        with pytest.raises(ServerError, match="Resource not found") as info:
            await host.gather_resources(fail_fast=True, concurrency=1)
        assert [e["uri"] for e in info.value.errors] == ["bad://one"]


@pytest.mark.interop
@needs_npx
async def test_gather_from_server_everything() -> None:
    cfg = {"mcpServers": {"everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"],
                                         "timeout": 180, "priority": 2, "domains": ["demo"]}}}
    async with MCPHost(cfg, shutdown_timeout=1) as host:
        listed = host.get_tools()["everything"]["resources"]
        gathered = await host.gather_resources(fail_fast=True)
        assert gathered["errors"] == []
        assert len(gathered["resources"]) == len(listed) > 0
        uris = [r["uri"] for r in gathered["resources"]]
        assert uris == sorted(uris)
        assert all(r["contents"] for r in gathered["resources"])
        assert host.servers_for("demo") == ["everything"]

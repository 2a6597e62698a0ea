"""mcphost.compat.orchestrator: the Talk-2-Tables orchestrator's API over the fake server."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
from helpers import fake

from mcphost import MCPHostError, RoutingError, ServerStartupError, ServerUnavailableError
from mcphost.compat.orchestrator import (
    ConnectionLostError,
    InitialConnectionError,
    MCPConnectionError,
    MCPOrchestrator,
    MCPOrchestratorException,
    NoExecutorAvailableError,
    NoMCPAvailableError,
    QueryExecutionError,
    ResourceDataError,
    ResourceFetchError,
    ResourceListError,
)
from mcphost.logs import JSONFormatter, operation
from mcphost.policy import NO_RETRY

QUERY_TOOL = {"name": "execute_query", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}}
ALIASES = {"abracadabra": {"canonical_id": "PROD_123", "canonical_name": "Magic Wand"}}


def servers(**extra: dict[str, Any]) -> dict[str, Any]:
    database = fake({"tools": [QUERY_TOOL], "resources": [
        {"uri": "database://schema", "name": "table_schemas", "mimeType": "application/json",
         "text": json.dumps({"sales": ["id", "total_amount"]})}]})
    metadata = fake({"resources": [
        {"uri": "metadata://product_aliases", "name": "product_aliases", "mimeType": "application/json",
         "text": json.dumps(ALIASES)},
        {"uri": "metadata://summary", "name": "metadata_summary", "text": "two products"}]})
    out = {
        "database_mcp": {"name": "Database MCP Server", "priority": 10, "domains": ["sales", "products"],
                         "capabilities": ["execute_query", "list_resources"], **database},
        "product_metadata_mcp": {"name": "Product Metadata MCP", "priority": 1, "domains": ["products"],
                                 "capabilities": ["list_resources"], **metadata},
    }
    out.update(extra)
    return out


def write(tmp_path: Path, mcp_servers: dict[str, Any], **orchestration: Any) -> Path:
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps({"mcp_servers": mcp_servers,
                                "orchestration": {"resource_cache_ttl": 300, "fail_fast": True,
                                                  "enable_logging": True, "log_level": "DEBUG", **orchestration}}))
    return path


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_exception_tree_is_the_documents_and_mcphosts() -> None:
    assert issubclass(MCPOrchestratorException, MCPHostError)
    assert issubclass(InitialConnectionError, MCPConnectionError) and issubclass(InitialConnectionError, ServerStartupError)
    assert issubclass(ConnectionLostError, MCPConnectionError) and issubclass(ConnectionLostError, ServerUnavailableError)
    assert issubclass(ResourceListError, ResourceFetchError) and issubclass(ResourceDataError, ResourceFetchError)
    assert issubclass(NoExecutorAvailableError, QueryExecutionError) and issubclass(NoExecutorAvailableError, RoutingError)
    assert issubclass(NoMCPAvailableError, MCPOrchestratorException)


async def test_initialize_list_get_gather_close(tmp_path: Path) -> None:
    clock = Clock()
    orchestrator = MCPOrchestrator(str(write(tmp_path, servers())), clock=clock)
    await orchestrator.initialize()
    try:
        assert orchestrator.fail_fast is True and orchestrator.resource_cache_ttl == 300
        clients = orchestrator.mcp_clients
        assert clients["database_mcp"]["connected"] and clients["database_mcp"]["capabilities"] == [
            "execute_query", "list_resources"]
        listed = await orchestrator.list_resources()
        assert sorted(r["uri"] for r in listed) == ["database://schema", "metadata://product_aliases",
                                                    "metadata://summary"]
        only = await orchestrator.list_resources("product_metadata_mcp")
        assert {r["server"] for r in only} == {"product_metadata_mcp"}
        assert await orchestrator.get_resource("product_metadata_mcp", "metadata://product_aliases") == ALIASES
        assert await orchestrator.get_resource("product_metadata_mcp", "metadata://summary") == "two products"
        gathered = await orchestrator.gather_all_resources()
        assert list(gathered) == ["product_metadata_mcp", "database_mcp"]  # priority 1 before 10
        assert gathered["product_metadata_mcp"]["resources"]["metadata://product_aliases"] == ALIASES
        assert gathered["database_mcp"]["domains"] == ["sales", "products"]
        assert orchestrator.find_executor() == "database_mcp"
        assert orchestrator.servers_for("products") == ["product_metadata_mcp", "database_mcp"]
        result = await orchestrator.call_tool("database_mcp", "execute_query", {"query": "SELECT 1"})
        assert result["content"][0]["text"] == '{"query":"SELECT 1"}'
        assert orchestrator.cache_timestamps["database_mcp"] == 1000.0
    finally:
        await orchestrator.close()
    await orchestrator.close()  # idempotent


async def test_errors_are_the_documents_and_mcphosts(tmp_path: Path) -> None:
    async with MCPOrchestrator(str(write(tmp_path, servers()))) as orchestrator:
        with pytest.raises(ResourceDataError) as info:
            await orchestrator.get_resource("database_mcp", "database://nothing")
        assert isinstance(info.value, MCPHostError) and info.value.server == "database_mcp"
        with pytest.raises(RoutingError):  # the same error, caught the mcphost way
            await orchestrator.get_resource("nobody", "database://schema")
        with pytest.raises(ResourceListError) as listed:
            await orchestrator.list_resources("nobody")
        assert isinstance(listed.value, RoutingError) and type(listed.value).__name__ == "ResourceListError"
        with pytest.raises(NoExecutorAvailableError):
            orchestrator.find_executor("drop_database")
        with pytest.raises(QueryExecutionError):
            await orchestrator.call_tool("database_mcp", "no_such_tool", {})


async def test_the_cache_serves_until_the_ttl_then_asks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    async with MCPOrchestrator(str(write(tmp_path, servers(), resource_cache_ttl=60)), clock=clock) as orchestrator:
        caplog.set_level(logging.DEBUG, logger="mcphost.compat.orchestrator")
        first = await orchestrator.gather_all_resources()
        events = [getattr(r, "event", None) for r in caplog.records]
        assert events.count("resource_cache_miss") == 2
        caplog.clear()
        assert await orchestrator.gather_all_resources() == first
        assert [getattr(r, "event", None) for r in caplog.records].count("resource_cache_hit") == 2
        caplog.clear()
        clock.now += 61
        await orchestrator.gather_all_resources()
        events = [getattr(r, "event", None) for r in caplog.records]
        assert events.count("resource_cache_expired") == 2 and "resource_fetch_completed" in events


async def test_fail_fast_fails_initialize(tmp_path: Path) -> None:
    broken = {"priority": 5, **fake(exit_at_start=1)}
    orchestrator = MCPOrchestrator(str(write(tmp_path, servers(broken_mcp=broken))), retry=NO_RETRY)
    with pytest.raises(InitialConnectionError) as info:
        await orchestrator.initialize()
    assert isinstance(info.value, ServerStartupError) and "broken_mcp" in info.value.failures
    await orchestrator.close()


async def test_without_fail_fast_the_others_serve(tmp_path: Path) -> None:
    broken = {"priority": 5, **fake(exit_at_start=1)}
    path = write(tmp_path, servers(broken_mcp=broken), fail_fast=False)
    async with MCPOrchestrator(str(path), retry=NO_RETRY) as orchestrator:
        assert orchestrator.fail_fast is False
        assert orchestrator.mcp_clients["broken_mcp"]["connected"] is False
        gathered = await orchestrator.gather_all_resources()
        assert list(gathered) == ["product_metadata_mcp", "database_mcp"]


async def test_a_lost_server_fails_fast_gathering(tmp_path: Path) -> None:
    async with MCPOrchestrator(str(write(tmp_path, servers())), retry=NO_RETRY) as orchestrator:
        await orchestrator.host.stop_server("database_mcp")
        with pytest.raises(ConnectionLostError) as info:
            await orchestrator.gather_all_resources()
        assert info.value.server == "database_mcp" and isinstance(info.value, ServerUnavailableError)


async def test_nothing_to_gather_is_no_mcp_available(tmp_path: Path) -> None:
    async with MCPOrchestrator(str(write(tmp_path, servers(), fail_fast=False)), retry=NO_RETRY) as orchestrator:
        await orchestrator.host.stop_server("database_mcp")
        await orchestrator.host.stop_server("product_metadata_mcp")
        with pytest.raises(NoMCPAvailableError):
            await orchestrator.gather_all_resources()


async def test_the_log_lines_are_the_documents(tmp_path: Path) -> None:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(self.format(record))

    handler = Keep(logging.DEBUG)
    handler.setFormatter(JSONFormatter(nested=True))
    target = logging.getLogger("mcphost.compat.orchestrator")
    target.addHandler(handler)
    try:
        async with MCPOrchestrator(str(write(tmp_path, servers()))) as orchestrator:
            with operation("op-1"):
                await orchestrator.get_resource("product_metadata_mcp", "metadata://summary")
                with pytest.raises(ResourceDataError):
                    await orchestrator.get_resource("product_metadata_mcp", "metadata://nothing")
    finally:
        target.removeHandler(handler)
    records = [json.loads(line) for line in lines]
    events = [r["event"] for r in records]
    assert {"mcp_connection_initiated", "mcp_connection_established", "resource_fetch_requested",
            "resource_fetch_completed", "error_occurred", "mcp_connection_closed"} <= set(events)
    fetched = next(r for r in records if r["event"] == "resource_fetch_completed")
    assert fetched["context"]["operation_id"] == "op-1" and fetched["context"]["mcp_server"] == "product_metadata_mcp"
    assert fetched["component"] == "mcphost.compat.orchestrator" and "duration_ms" in fetched["metrics"]
    error = next(r for r in records if r["event"] == "error_occurred")
    assert error["error"]["type"] == "ResourceDataError" and error["context"]["operation_id"] == "op-1"

"""Specification 004, the Talk-2-Tables orchestrator: its configuration file, interface,
exception tree, event names and log shape, as the document writes them.

The YAML is the document's, verbatim (but for the spaces on its one blank line) except
where its two servers are: the SSE URLs (``http://localhost:8000/sse``,
``http://localhost:8002/sse``) become the fake server over stdio (``transport: "stdio"`` and
its command), with the resources the document names.
"""

from __future__ import annotations

import io
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from mcphost import MCPHostError
from mcphost.compat import orchestrator as orch
from mcphost.compat.orchestrator import MCPOrchestrator
from mcphost.logs import EVENTS, JSONFormatter, operation
from mcphost.testing import server_config

pytest.importorskip("yaml", reason="the document's configuration is YAML: reading it needs PyYAML")

CONFIG = '''\
# Location: fastapi_server/mcp_config.yaml
mcp_servers:
  database_mcp:
    name: "Database MCP Server"
    url: "http://localhost:8000/sse"
    priority: 10  # Lower number = higher priority
    domains:
      - sales
      - transactions
      - orders
      - products
    capabilities:
      - execute_query
      - list_resources
    transport: "sse"

  product_metadata_mcp:
    name: "Product Metadata MCP"
    url: "http://localhost:8002/sse"
    priority: 1  # Higher priority for product information
    domains:
      - products
      - product_aliases
      - column_mappings
    capabilities:
      - list_resources
    transport: "sse"

orchestration:
  resource_cache_ttl: 300  # 5 minutes in seconds
  fail_fast: true
  enable_logging: true
  log_level: "DEBUG"
'''

EXCEPTION_TREE = '''
MCPOrchestratorException (Base)
├── MCPConnectionError
│   ├── InitialConnectionError
│   └── ConnectionLostError
├── ResourceFetchError
│   ├── ResourceListError
│   └── ResourceDataError
├── SQLGenerationError
│   ├── LLMCommunicationError
│   └── InvalidSQLError
└── QueryExecutionError
    ├── NoExecutorAvailableError
    └── SQLExecutionError
        ├── SQLSyntaxError
        ├── SQLSchemaError
        └── SQLDataError
'''

LOG_FORMAT = '''
{
    "timestamp": "ISO8601",
    "level": "DEBUG|INFO|WARNING|ERROR",
    "event": "event_name",
    "component": "component_name",
    "context": {
        "operation_id": "uuid",
        "user_query": "string",
        "mcp_server": "string"
    },
    "metrics": {
        "duration_ms": 123,
        "resource_count": 10
    },
    "error": {
        "type": "exception_type",
        "message": "error_message",
        "stack_trace": "..."
    }
}
'''

EVENT_NAMES = ["mcp_connection_initiated", "mcp_connection_established", "mcp_connection_failed", "mcp_connection_closed", "resource_list_requested", "resource_list_received", "resource_fetch_requested", "resource_fetch_completed", "resource_cache_hit", "resource_cache_miss", "resource_cache_expired", "query_received", "query_processing_started", "resource_gathering_started", "resource_gathering_completed", "llm_prompt_created", "llm_response_received", "sql_generated", "sql_execution_started", "sql_execution_completed", "query_processing_completed", "error_occurred", "exception_raised", "recovery_attempted", "fatal_error"]

ALIASES = {"abracadabra": {"canonical_id": "PROD_123", "canonical_name": "Magic Wand"}}
RESOURCES = {
    "database_mcp": [{"uri": "database://table_schemas", "name": "table_schemas", "mimeType": "application/json",
                      "text": json.dumps({"sales": ["product_id", "total_amount", "sale_date"]})}],
    "product_metadata_mcp": [
        {"uri": "metadata://product_aliases", "name": "product_aliases", "mimeType": "application/json",
         "text": json.dumps(ALIASES)},
        {"uri": "metadata://column_mappings", "name": "column_mappings", "mimeType": "application/json",
         "text": json.dumps({"user_friendly_terms": {"this month": "DATE_TRUNC('month', sale_date)"}})},
        {"uri": "metadata://metadata_summary", "name": "metadata_summary", "text": "1 product"}],
}
QUERY = {"name": "execute_query", "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}}}


def local(url: str, server: str) -> str:
    spec: dict[str, Any] = {"resources": RESOURCES[server]}
    if server == "database_mcp":
        spec["tools"] = [QUERY]
    entry = server_config(spec)
    return (f'command: {json.dumps(entry["command"])}\n    args: {json.dumps(entry["args"])}\n'
            f'    env: {json.dumps(entry["env"])}')


def write(tmp_path: Path) -> Path:
    text = CONFIG
    for url, server in (("http://localhost:8000/sse", "database_mcp"), ("http://localhost:8002/sse",
                                                                          "product_metadata_mcp")):
        line = f'url: "{url}"'
        assert line in text
        text = text.replace(line, local(url, server))
    assert text.count('transport: "sse"') == 2
    text = text.replace('transport: "sse"', 'transport: "stdio"')
    path = tmp_path / "mcp_config.yaml"
    path.write_text(text)
    return path


def test_the_exception_tree_is_the_documents() -> None:
    parents: list[tuple[int, str]] = []
    seen = 0
    for line in EXCEPTION_TREE.strip().splitlines():
        name = line.replace("(Base)", "").strip(" │├└─")
        depth = (len(line) - len(line.lstrip(" │├└─"))) // 4
        cls = getattr(orch, name)
        assert issubclass(cls, MCPHostError), name
        parents = parents[:depth]
        if parents:
            assert issubclass(cls, getattr(orch, parents[-1][1])), (name, parents[-1][1])
        parents.append((depth, name))
        seen += 1
    assert seen == 16
    assert issubclass(orch.NoMCPAvailableError, orch.MCPOrchestratorException)  # Algorithm 1, step 4


def test_every_event_name_is_known() -> None:
    assert [name for name in EVENT_NAMES if name not in EVENTS] == []


def test_the_structured_log_format() -> None:
    wanted = json.loads(LOG_FORMAT)
    record = logging.LogRecord("mcphost.compat.orchestrator", logging.ERROR, __file__, 1, "failed", (), None)
    record.event = "error_occurred"
    record.server = "database_mcp"
    record.context = {"user_query": "sales this month"}
    record.metrics = {"duration_ms": 123, "resource_count": 10}
    try:
        raise orch.SQLSyntaxError("near FORM")
    except orch.SQLSyntaxError:
        record.exc_info = sys.exc_info()
    with operation():
        line = json.loads(JSONFormatter(nested=True).format(record))
    assert set(line) == set(wanted) | {"message"}
    for part in ("context", "metrics", "error"):
        assert set(line[part]) == set(wanted[part]), part
    assert line["level"] in wanted["level"].split("|") and line["error"]["type"] == "SQLSyntaxError"


async def test_the_interface_over_the_documents_configuration(tmp_path: Path) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(JSONFormatter(nested=True))
    logging.getLogger("mcphost.compat").addHandler(handler)
    orchestrator = MCPOrchestrator(str(write(tmp_path)))
    try:
        assert await orchestrator.initialize() is None  # Returns: void
        assert orchestrator.fail_fast is True and orchestrator.resource_cache_ttl == 300
        assert logging.getLogger("mcphost").level == logging.DEBUG  # log_level: "DEBUG"
        clients = orchestrator.mcp_clients
        assert clients["database_mcp"]["priority"] == 10 and clients["product_metadata_mcp"]["priority"] == 1
        assert clients["database_mcp"]["capabilities"] == ["execute_query", "list_resources"]
        # list_resources(server_name: string?) -> List<Resource>
        every = await orchestrator.list_resources()
        assert isinstance(every, list) and len(every) == 4 and all("uri" in r for r in every)
        named = await orchestrator.list_resources("product_metadata_mcp")
        assert [r["name"] for r in named] == ["product_aliases", "column_mappings", "metadata_summary"]
        # get_resource(server_name: string, resource_uri: string) -> ResourceData, throws ResourceFetchError
        assert await orchestrator.get_resource("product_metadata_mcp", "metadata://product_aliases") == ALIASES
        with pytest.raises(orch.ResourceFetchError):
            await orchestrator.get_resource("product_metadata_mcp", "metadata://nothing")
        # Algorithm 2: every server's resources, sorted by priority (the document's Resource_Data).
        gathered = await orchestrator.gather_all_resources()
        assert list(gathered) == ["product_metadata_mcp", "database_mcp"]
        assert set(gathered["database_mcp"]) == {"priority", "domains", "capabilities", "resources"}
        assert set(orchestrator.resource_cache) == {"database_mcp", "product_metadata_mcp"}
        assert set(orchestrator.cache_timestamps) == set(orchestrator.resource_cache)
        # Algorithm 1, step 7: the database MCP is the one with the execute_query capability.
        assert orchestrator.find_executor("execute_query") == "database_mcp"
        # Algorithm 4: entities of a domain, by priority.
        assert orchestrator.servers_for("products") == ["product_metadata_mcp", "database_mcp"]
    finally:
        assert await orchestrator.close() is None  # Returns: void
        logging.getLogger("mcphost.compat").removeHandler(handler)
    events = [json.loads(line)["event"] for line in out.getvalue().splitlines()]
    for name in ("mcp_connection_initiated", "mcp_connection_established", "resource_list_requested",
                 "resource_list_received", "resource_fetch_requested", "resource_fetch_completed",
                 "resource_cache_miss", "resource_gathering_started", "resource_gathering_completed",
                 "error_occurred", "mcp_connection_closed"):
        assert name in events, name


async def test_initialize_throws_mcp_connection_error(tmp_path: Path) -> None:
    path = write(tmp_path)
    text = path.read_text()
    path.write_text(text.replace('"-m", "mcphost.testing"', '"-c", "raise SystemExit(1)", "-m", "mcphost.testing"', 1))
    from mcphost.policy import NO_RETRY

    orchestrator = MCPOrchestrator(str(path), retry=NO_RETRY)
    with pytest.raises(orch.MCPConnectionError):  # fail_fast: true
        await orchestrator.initialize()
    await orchestrator.close()

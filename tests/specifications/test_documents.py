"""Every configuration users were promised: each specification's documented file, read by
mcphost's own API (the documents' APIs are in test_00N_*.py beside this file). Servers the examples name are replaced by the
fake server where running the real one would need credentials or a network service; the
configuration itself is read as the document writes it."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake

from mcphost import ConfigurationError, MCPHost
from mcphost.config import parse_config
from mcphost.policy import NO_RETRY
from mcphost.testing import package_root

FAKE_ARGS = ["-m", "mcphost.testing", "--spec", json.dumps({"tools": [ECHO_TOOL]})]


def fake_command() -> list[str]:
    return [sys.executable, *FAKE_ARGS]


def load(text: str, tmp_path: Path | None = None) -> Any:
    path = str(tmp_path / "mcp.json") if tmp_path is not None else None
    return parse_config(text, path=path, environ={"HOME": "/home/u"})


# -- 000: the minimal aggregator ------------------------------------------------------------

AGGREGATOR = """{
  "servers": {
    "database": {
      "transport": "sse",
      "endpoint": "http://localhost:8000/sse"
    },
    "github": {
      "transport": "stdio",
      "command": ["npx", "-y", "@modelcontextprotocol/server-github"]
    }
  }
}"""


def test_the_aggregator_config_is_read_as_written() -> None:
    cfg = load(AGGREGATOR)
    database, github = cfg.servers["database"], cfg.servers["github"]
    assert (database.type, database.url) == ("sse", "http://localhost:8000/sse")
    assert (github.type, github.command, github.args) == ("stdio", "npx", ("-y", "@modelcontextprotocol/server-github"))
    # An error names the field the user wrote, on its line.
    with pytest.raises(ConfigurationError) as info:
        parse_config(AGGREGATOR.replace("http://localhost:8000/sse", "ftp://x/sse"), path="/x/mcp.json", environ={})
    assert str(info.value) == "mcp.json:5: servers.database.endpoint: expected a http:// or https:// URL for a sse server"


async def test_the_aggregator_routes_server_dot_tool() -> None:
    cfg = {"servers": {"github": {"transport": "stdio", "command": fake_command(),
                                  "env": {"PYTHONPATH": package_root()}}}}
    async with MCPHost(cfg) as host:
        result = await host.call_tool("github.echo", {"text": "hi"})
        assert result["content"][0]["text"] == '{"text":"hi"}'


# -- 002: the client-module revision ----------------------------------------------------------


def test_the_client_module_map_of_servers(tmp_path: Path) -> None:
    text = json.dumps({
        "filesystem": {"name": "Files", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                       "env": {}, "enabled": True},
        "weather": {"name": "Weather", "command": "weather-mcp", "args": [], "env": {"KEY": "k"}, "enabled": False},
    }, indent=2)
    cfg = load(text, tmp_path)
    assert cfg.servers["filesystem"].command == "npx" and cfg.servers["filesystem"].enabled
    assert not cfg.servers["weather"].enabled
    assert any("map of servers" in note for note in cfg.notes)
    # Not taken for a map of servers when something else is at the top.
    with pytest.raises(ConfigurationError):
        load(json.dumps({"filesystem": {"command": "x"}, "inputs": []}), tmp_path)


async def test_the_client_module_tool_definitions_and_dead_servers() -> None:
    cfg = {"ok": {"name": "OK", "command": sys.executable, "args": FAKE_ARGS, "env": {"PYTHONPATH": package_root()},
                  "enabled": True},
           "dead": {"name": "Dead", "command": sys.executable, "args": ["-c", "raise SystemExit(1)"], "enabled": True}}
    async with MCPHost(cfg, require_all=False, retry=NO_RETRY) as host:
        # Connection failures do not crash the system; the dead server offers nothing.
        assert host.get_tools()["dead"]["state"] == "failed" and host.get_tools()["dead"]["tools"] == []
        definitions = [{"name": f"{server}.{t['name']}", "description": t.get("description", ""),
                        "parameters": t["inputSchema"]} for server, info in host.get_tools().items() for t in info["tools"]]
        assert definitions == [{"name": "ok.echo", "description": ECHO_TOOL["description"],
                                "parameters": ECHO_TOOL["inputSchema"]}]


# -- 004: Talk-2-Tables ---------------------------------------------------------------------------

TALK_2_TABLES = {
    "mcp_servers": {
        "database_mcp": {"name": "Database MCP Server", "url": "http://localhost:8000/sse", "priority": 10,
                         "domains": ["sales", "transactions", "orders", "products"],
                         "capabilities": ["execute_query", "list_resources"], "transport": "sse"},
        "product_metadata_mcp": {"name": "Product Metadata MCP", "url": "http://localhost:8002/sse", "priority": 1,
                                 "domains": ["products", "product_aliases", "column_mappings"],
                                 "capabilities": ["list_resources"], "transport": "sse"},
    },
    "orchestration": {"resource_cache_ttl": 300, "fail_fast": True, "enable_logging": True, "log_level": "DEBUG"},
}


def test_the_talk_2_tables_config(tmp_path: Path) -> None:
    cfg = load(json.dumps(TALK_2_TABLES), tmp_path)
    database = cfg.servers["database_mcp"]
    assert (database.type, database.url, database.priority) == ("sse", "http://localhost:8000/sse", 10)
    assert database.declared_capabilities == ("execute_query", "list_resources")
    assert cfg.cache.ttl == 300 and cfg.log_level == "DEBUG"
    assert cfg.fail_fast is True and cfg.enable_logging is True


async def test_the_talk_2_tables_orchestration_shape() -> None:
    # The same configuration, with fake servers in place of the two SSE servers.
    servers = json.loads(json.dumps(TALK_2_TABLES["mcp_servers"]))
    for name, text in (("database_mcp", "tables: sales, orders"), ("product_metadata_mcp", "abracadabra -> PROD_123")):
        entry = servers[name]
        del entry["url"], entry["transport"]
        entry.update(fake({"tools": [ECHO_TOOL],
                           "resources": [{"uri": f"{name}://resource", "name": name, "text": text}]}))
    cfg = {"mcp_servers": servers, "orchestration": {"resource_cache_ttl": 300, "log_level": "WARNING"}}
    async with MCPHost(cfg) as host:
        shown = host.get_tools()["database_mcp"]
        assert shown["priority"] == 10 and "sales" in shown["domains"]
        assert shown["declaredCapabilities"] == ["execute_query", "list_resources"]
        gathered = await host.gather_resources(fail_fast=True)
        assert [r["server"] for r in gathered["resources"]] == ["product_metadata_mcp", "database_mcp"]
        assert host.servers_for("products") == ["product_metadata_mcp", "database_mcp"]
        result = await host.call_tool("database_mcp.echo", {"text": "SELECT 1"})
        assert not result.get("isError")


TALK_2_TABLES_YAML = """\
# Location: fastapi_server/mcp_config.yaml
mcp_servers:
  database_mcp:
    name: "Database MCP Server"
    url: "http://localhost:8000/sse"
    priority: 10  # Lower number = higher priority
    domains:
      - sales
      - transactions
    capabilities:
      - execute_query
      - list_resources
    transport: "sse"

orchestration:
  resource_cache_ttl: 300  # 5 minutes in seconds
  fail_fast: true
  enable_logging: true
  log_level: "DEBUG"
"""


async def test_the_talk_2_tables_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mcphost.host.configload import load_config

    path = tmp_path / "mcp_config.yaml"
    path.write_text(TALK_2_TABLES_YAML, encoding="utf-8")
    pytest.importorskip("yaml", reason="PyYAML is a test dependency: reading YAML needs it")
    cfg = await load_config(str(path), environ={}, inputs=None)
    assert cfg.servers["database_mcp"].priority == 10 and cfg.cache.ttl == 300
    path.write_text("mcp_servers:\n  a: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"mcp_config.yaml:\d+: invalid YAML"):
        await load_config(str(path), environ={}, inputs=None)
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    with pytest.raises(ConfigurationError, match="reading YAML needs PyYAML"):
        await load_config(str(path), environ={}, inputs=None)

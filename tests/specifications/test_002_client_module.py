"""Specification 002, the client-module revision: its configuration schema, its tool
registration format, and every class, property and method of its low-level tasks, called
with the documented arguments (the document gives signatures, not code)."""

from __future__ import annotations

import dataclasses
import inspect
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL

from mcphost.compat import client_module
from mcphost.compat.client_module import (
    MCPConfigManager,
    MCPServerConfig,
    MCPService,
    MCPSessionManager,
    get_mcp_connect_tool_definition,
    handle_mcp_connect,
    register,
)
from mcphost.policy import NO_RETRY
from mcphost.testing import server_config

# "1. Configuration Schema (config/mcp_servers.json)", with values in place of the type names.
SCHEMA_SHAPE = {"server_id": {"name": "string", "command": "string", "args": ["string"], "env": {"key": "value"},
                              "enabled": True}}
# "2. Tool Registration Format"
TOOL_FORMAT = {"name": "server_name.tool_name", "description": "Tool description",
               "parameters": {"type": "object", "properties": {}, "required": []}}


def fake_entry(name: str, enabled: bool = True) -> dict[str, Any]:
    fake = server_config({"tools": [ECHO_TOOL]})
    return {"name": name, "command": fake["command"], "args": fake["args"], "env": fake["env"], "enabled": enabled}


@pytest.fixture
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "config").mkdir()
    monkeypatch.chdir(tmp_path)
    MCPSessionManager.reset_instance()
    yield tmp_path
    MCPSessionManager.reset_instance()


def test_the_schema_shape_loads(config_dir: Path) -> None:
    (config_dir / "config" / "mcp_servers.json").write_text(json.dumps(SCHEMA_SHAPE))
    servers = MCPConfigManager().load_config()  # config/mcp_servers.json by default
    config = servers["server_id"]
    assert [f.name for f in dataclasses.fields(MCPServerConfig)][:5] == ["name", "command", "args", "env", "enabled"]
    assert (config.name, config.command, config.args, config.env, config.enabled) == (
        "string", "string", ["string"], {"key": "value"}, True)


async def test_every_documented_member(config_dir: Path) -> None:
    (config_dir / "config" / "mcp_servers.json").write_text(json.dumps(
        {"files": fake_entry("Files"), "off": fake_entry("Off", enabled=False)}))
    manager = MCPSessionManager.get_instance()
    assert MCPSessionManager.get_instance() is manager  # get_instance() -> MCPSessionManager
    assert isinstance(manager.config_manager, MCPConfigManager) and isinstance(manager.mcp_service, MCPService)
    assert list(manager.config_manager.get_enabled_servers()) == ["files"]
    service = manager.mcp_service
    assert service.sessions == {} and service.connected_servers == {}
    try:
        assert await manager.initialize_servers() == {"files": True}
        assert isinstance(service.connected_servers, dict) and service.connected_servers == {"files": True}
        assert set(service.sessions) == {"files"}
        # connect_to_server(server_config: MCPServerConfig) -> bool
        ok = await service.connect_to_server(manager.config_manager.load_config()["files"])
        assert ok is True
        definitions = service.register_server_tools("files")
        assert [set(d) for d in definitions] == [set(TOOL_FORMAT)]
        assert definitions[0]["name"] == "files.echo"
        assert set(definitions[0]["parameters"]) >= set(TOOL_FORMAT["parameters"])
        # _format_tool_definition(tool: dict, server_name: str) -> dict
        assert service._format_tool_definition({"name": "t"}, "s") == {
            "name": "s.t", "description": "", "parameters": {"type": "object", "properties": {}, "required": []}}
        # _create_tool_handler(server_name: str, tool_name: str)
        handler = service._create_tool_handler("files", "echo")
        assert (await handler({"text": "x"}))["content"][0]["text"] == '{"text":"x"}'
        # get_mcp_connect_tool_definition() -> dict; handle_mcp_connect() -> dict; register()
        definition = get_mcp_connect_tool_definition()
        assert isinstance(definition, dict) and set(definition) == set(TOOL_FORMAT)
        result = await handle_mcp_connect()
        assert isinstance(result, dict) and result["connected_servers"] == {"files": True}
        assert register() is None
        assert "mcp_connect" in [d["name"] for d in service.registry.get_definitions()]
    finally:
        assert await manager.cleanup() is None
    assert service.connected_servers == {"files": False} and service.registry.get_definitions() == [
        get_mcp_connect_tool_definition()]


async def test_a_failed_server_does_not_crash_and_is_marked_disconnected(config_dir: Path) -> None:
    service = MCPService(retry=NO_RETRY)
    try:
        assert await service.connect_to_server(MCPServerConfig(name="dead", command="no-such-command-here")) is False
        assert service.connected_servers == {"dead": False}
    finally:
        await service.cleanup()


def test_async_where_it_connects() -> None:
    for member in (MCPService.connect_to_server, MCPService.cleanup, MCPSessionManager.initialize_servers,
                   MCPSessionManager.cleanup, handle_mcp_connect):
        assert inspect.iscoroutinefunction(member), member
    for member in (MCPService.register_server_tools, MCPConfigManager.load_config,
                   MCPConfigManager.get_enabled_servers, get_mcp_connect_tool_definition, register):
        assert not inspect.iscoroutinefunction(member), member
    assert client_module.DEFAULT_CONFIG_PATH.replace("\\", "/") == "config/mcp_servers.json"

"""mcphost.compat.client_module: the client-module revision (specification 002) over the fake server."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL

from mcphost import ConfigurationError, UsageError
from mcphost.compat.client_module import (
    MCPConfigManager,
    MCPServerConfig,
    MCPServerSession,
    MCPService,
    MCPSessionManager,
    ToolRegistry,
    get_mcp_connect_tool_definition,
    handle_mcp_connect,
    register,
)
from mcphost.policy import NO_RETRY
from mcphost.testing import server_config

EXIT_TOOL = {"name": "die", "inputSchema": {"type": "object"}, "behavior": {"exit": 3}}


def entry(name: str, tools: list[dict[str, Any]] | None = None, **fields: Any) -> dict[str, Any]:
    fake = server_config({"tools": tools if tools is not None else [ECHO_TOOL]})
    return {"name": name, "command": fake["command"], "args": fake["args"], "env": fake["env"], "enabled": True,
            **fields}


def write(tmp_path: Path, servers: dict[str, Any]) -> Path:
    path = tmp_path / "config" / "mcp_servers.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(servers, indent=4))
    return path


@pytest.fixture
def fresh_instance() -> Iterator[None]:
    MCPSessionManager.reset_instance()
    yield
    MCPSessionManager.reset_instance()


def test_load_config_and_enabled_servers(tmp_path: Path) -> None:
    path = write(tmp_path, {"files": entry("Files"), "weather": entry("Weather", enabled=False)})
    manager = MCPConfigManager(path)
    servers = manager.load_config()
    assert list(servers) == ["files", "weather"]
    assert isinstance(servers["files"], MCPServerConfig) and servers["files"].name == "Files"
    assert servers["files"].server_id == "files" and servers["files"].command == sys.executable
    assert list(manager.get_enabled_servers()) == ["files"]


@pytest.mark.parametrize(("servers", "message"), [
    ({"files": {"name": "x"}}, "files.command: expected a command"),
    ({"files": {"command": "x", "args": "-y"}}, "files.args: expected a list of strings"),
    ({"files": {"command": "x", "enabled": "yes"}}, "files.enabled: expected true or false"),
    ({"files": {"command": "x", "env": {"K": 1}}}, "files.env: expected an object of strings"),
    ({"a b": {"command": "x"}}, "a b: a server id starts with a letter"),
    ([], "expected an object of servers"),
])
def test_a_bad_config_names_its_field(tmp_path: Path, servers: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        MCPConfigManager(write(tmp_path, servers)).load_config()


def test_a_missing_config_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no such file"):
        MCPConfigManager(tmp_path / "nothing.json").load_config()


async def test_service_connects_registers_and_unregisters_a_dead_servers_tools() -> None:
    registry = ToolRegistry()
    service = MCPService(registry, retry=NO_RETRY)
    try:
        config = MCPServerConfig(**{k: v for k, v in entry("one", [ECHO_TOOL, EXIT_TOOL]).items()
                                    if k != "name"}, name="one")
        assert await service.connect_to_server(config) is True
        assert service.connected_servers == {"one": True} and isinstance(service.sessions["one"], MCPServerSession)
        definitions = service.register_server_tools("one")
        assert definitions[0] == {"name": "one.echo", "description": ECHO_TOOL["description"],
                                  "parameters": {"type": "object", "properties": {"text": {"type": "string"}},
                                                 "required": []}}
        assert [d["name"] for d in registry.get_definitions()] == ["one.echo", "one.die"]
        handler = registry.get_handler("one.echo")
        assert handler is not None and (await handler(text="hi"))["content"][0]["text"] == '{"text":"hi"}'
        assert (await service.sessions["one"].call_tool("echo", {"text": "s"}))["content"][0]["text"] == '{"text":"s"}'
        broken = MCPServerConfig(name="broken", command="no-such-command-here")
        assert await service.connect_to_server(broken) is False  # no crash
        assert service.connected_servers == {"one": True, "broken": False}
        # The server dies: it is marked disconnected and its tools leave the registry.
        die = registry.get_handler("one.die")
        assert die is not None
        with pytest.raises(Exception):  # noqa: B017 - the server is gone, whichever way it is told
            await die()
        assert service.connected_servers["one"] is False and registry.get_definitions() == []
        with pytest.raises(UsageError):
            service.register_server_tools("one")
    finally:
        await service.cleanup()
    assert service.connected_servers == {"one": False, "broken": False} and service.sessions == {}


async def test_session_manager_initializes_concurrently(tmp_path: Path, fresh_instance: None) -> None:
    path = write(tmp_path, {"a": entry("A"), "b": entry("B"), "off": entry("Off", enabled=False)})
    manager = MCPSessionManager.get_instance(path)
    assert MCPSessionManager.get_instance() is manager
    try:
        assert await manager.initialize_servers() == {"a": True, "b": True}
        names = [d["name"] for d in manager.mcp_service.registry.get_definitions()]
        assert names == ["a.echo", "b.echo"]  # namespaced: the same tool of two servers never collides
    finally:
        await manager.cleanup()


async def test_the_mcp_connect_tool(tmp_path: Path, fresh_instance: None, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"a": entry("A")})
    monkeypatch.chdir(tmp_path)  # the document's default path: config/mcp_servers.json
    definition = get_mcp_connect_tool_definition()
    assert definition["name"] == "mcp_connect" and definition["parameters"]["type"] == "object"
    registry = ToolRegistry()
    register(registry)
    handler = registry.get_handler("mcp_connect")
    assert handler is not None
    try:
        result = await handler()
        assert result == {"success": True, "connected_servers": {"a": True}, "tools": ["a.echo"]}
        assert await handle_mcp_connect() == result  # connecting again changes nothing
    finally:
        await MCPSessionManager.get_instance().cleanup()

"""Specification 003, the client-manager API: its code examples run as written, and every
method and property it lists is called with its documented arguments.

The document's modules are mcphost's: ``corteX.interop.types`` and
``corteX.interop.mcp.client`` are ``mcphost.compat.manager``, ``corteX.security.capabilities``
is ``mcphost`` (its ``CapabilitySet``). Its servers are replaced: ``npx`` runs the fake
server (a shim on ``PATH``) and ``https://mcp.example.com/sse`` is a local HTTP+SSE server.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import pytest
from documents import alias_modules, program_shim, run
from remote_server import RemoteServer

import mcphost
from mcphost import PermissionDeniedError, RoutingError
from mcphost.compat import manager as compat_manager
from mcphost.compat.manager import MCPClientManager, MCPServerConnection, ToolWrapper

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the npx shim is a POSIX shell script")

READ_FILE = {"name": "read_file", "description": "Read a file", "inputSchema": {
    "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    "behavior": {"result": {"content": [{"type": "text", "text": "File contents"}]}}}
WRITE_FILE = {"name": "write_file", "description": "Write a file", "inputSchema": {"type": "object"}}

# -- the document's code, verbatim ----------------------------------------------------------

CONNECT_ALL = '''
from corteX.interop.types import MCPServerConfig
from corteX.interop.mcp.client import MCPClientManager

configs = [
    MCPServerConfig(name="fs", transport="stdio", command="npx",
                    args=["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]),
    MCPServerConfig(name="api", transport="sse",
                    url="https://mcp.example.com/sse"),
]

manager = MCPClientManager(configs)
results = await manager.connect_all()
# {"fs": True, "api": True}
'''

EXECUTE_TOOL = '''
result = await manager.execute_tool(
    "mcp__fs__read_file",
    {"path": "/tmp/data.txt"},
)
print(result)  # File contents
'''

REGISTER_TOOLS = '''
manager.register_tools("custom", [
    {
        "name": "greet",
        "description": "Say hello",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Who to greet"},
            },
        },
    },
])
'''

CAPABILITY_CHECK = '''
resource = f"mcp:{server_name}:{tool_name}"
capability_set.has(resource, "execute")
'''

CAPABILITY_SET = '''
from corteX.security.capabilities import CapabilitySet
from corteX.interop.mcp.client import MCPClientManager

caps = CapabilitySet()
caps.grant("mcp:fs:read_file", "execute")
# Only read_file is allowed; write_file will raise PermissionError

manager = MCPClientManager(configs, capability_set=caps)
'''


@pytest.fixture
def document(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    alias_modules(monkeypatch, {"corteX.interop.types": compat_manager,
                                "corteX.interop.mcp.client": compat_manager,
                                "corteX.security.capabilities": mcphost})
    program_shim(monkeypatch, tmp_path, "npx", {"tools": [READ_FILE, WRITE_FILE]})


@pytest.mark.usefixtures("document")
async def test_the_examples_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    async with RemoteServer(mode="sse") as api:
        scope = await run(CONNECT_ALL, **{'"https://mcp.example.com/sse"': repr(api.sse_url)})
        manager = scope["manager"]
        try:
            assert scope["results"] == {"fs": True, "api": True}
            await run(EXECUTE_TOOL, {"manager": manager})
            assert capsys.readouterr().out == "File contents\n"
            await run(REGISTER_TOOLS, {"manager": manager})
            assert "mcp__custom__greet" in [t.name for t in manager.get_tools()]
        finally:
            await manager.disconnect_all()


@pytest.mark.usefixtures("document")
async def test_capability_enforcement_as_written() -> None:
    scope = await run(CONNECT_ALL.split("manager = ", maxsplit=1)[0])  # the configs of the first example
    scope = await run(CAPABILITY_SET, {"configs": scope["configs"][:1]})
    manager = scope["manager"]
    assert await manager.connect_all() == {"fs": True}
    try:
        assert await manager.execute_tool("mcp__fs__read_file", {"path": "/tmp/data.txt"}) == "File contents"
        with pytest.raises(PermissionError):  # "write_file will raise PermissionError"
            await manager.execute_tool("mcp__fs__write_file", {})
        check = await run(CAPABILITY_CHECK, {"server_name": "fs", "tool_name": "read_file",
                                             "capability_set": scope["caps"]})
        assert check["capability_set"].has(check["resource"], "execute") is True
        assert scope["caps"].has("mcp:fs:write_file", "execute") is False
    finally:
        await manager.disconnect_all()


# -- every signature of the reference --------------------------------------------------------


@pytest.mark.usefixtures("document")
async def test_every_method_and_property_with_its_documented_shape() -> None:
    configs = (await run(CONNECT_ALL.split("manager = ", maxsplit=1)[0]))["configs"]
    manager = MCPClientManager(configs[:1], capability_set=None)
    # Async where the document says async, sync elsewhere.
    for name in ("connect_all", "connect_server", "disconnect_all", "disconnect_server", "execute_tool"):
        assert inspect.iscoroutinefunction(getattr(MCPClientManager, name)), name
    for name in ("get_tools", "get_tools_for_server", "register_tools", "get_connection"):
        assert not inspect.iscoroutinefunction(getattr(MCPClientManager, name)), name
    results = await manager.connect_all()
    try:
        assert results == {"fs": True} and isinstance(results["fs"], bool)
        tools = manager.get_tools()
        assert isinstance(tools, list) and all(isinstance(t, ToolWrapper) for t in tools)
        assert [t.name for t in manager.get_tools_for_server("fs")] == ["mcp__fs__read_file", "mcp__fs__write_file"]
        assert manager.get_tools_for_server("api") == []  # "or empty list if not connected"
        connection = manager.get_connection("fs")
        assert isinstance(connection, MCPServerConnection)
        assert connection.config is configs[0] and connection.connected is True and connection.error is None
        assert isinstance(connection.tools, dict) and all(k.startswith("mcp__fs__") for k in connection.tools)
        assert isinstance(connection.resources, list)
        assert manager.get_connection("nobody") is None
        assert manager.connected_servers == ["fs"] and manager.available_tool_count == 2
        closed = compat_manager.MCPServerConfig(name="api", transport="sse", url="http://127.0.0.1:9/sse")
        assert await manager.connect_server(closed) is False  # nothing listens there
        assert manager.get_connection("api").error  # type: ignore[union-attr]
        assert manager.register_tools("custom", []) is None
        # ValueError: not an MCP tool name, server not connected, tool not found.
        for name in ("read_file", "mcp__api__read_file", "mcp__fs__nothing"):
            with pytest.raises(ValueError):
                await manager.execute_tool(name, {})
        with pytest.raises(RoutingError):  # ... and the mcphost error it stands for
            await manager.execute_tool("mcp__fs__nothing", {})
        assert await manager.disconnect_server("fs") is None
        connection = manager.get_connection("fs")
        assert connection is not None and connection.connected is False and connection.tools == {}
    finally:
        assert await manager.disconnect_all() is None
    assert manager.connected_servers == [] and manager.get_connection("fs") is None


def test_permission_errors_are_both_kinds() -> None:
    assert issubclass(PermissionDeniedError, PermissionError)
    assert issubclass(compat_manager.ToolLookupError, ValueError)
    assert compat_manager.CapabilitySet is mcphost.CapabilitySet

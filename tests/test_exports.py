"""The public surface is pinned: a change to it is a decision, made here on purpose."""

from __future__ import annotations

import builtins

import mcphost

PUBLIC = [
    "MCPHost",
    "MCPHostError",
    "CallerError",
    "ServerFault",
    "ConnectionFault",
    "ConfigurationError",
    "ServerStartupError",
    "ServerUnavailableError",
    "RoutingError",
    "ValidationError",
    "SchemaError",
    "TimeoutError",
    "ProtocolError",
    "ServerError",
    "OutputValidationError",
    "TransportError",
    "PermissionDeniedError",
    "UsageError",
    "RpcError",
    "Permissions",
    "CapabilitySet",
    "__version__",
]


def test_all_is_pinned() -> None:
    assert mcphost.__all__ == PUBLIC


def test_every_name_resolves() -> None:
    for name in PUBLIC:
        assert getattr(mcphost, name) is not None


def test_one_exception_tree() -> None:
    errors = [getattr(mcphost, n) for n in PUBLIC if n.endswith("Error") and n != "RpcError"]
    for cls in errors:
        assert issubclass(cls, mcphost.MCPHostError)
    assert issubclass(mcphost.TimeoutError, builtins.TimeoutError)
    assert issubclass(mcphost.UsageError, ValueError)
    # RpcError is what handlers raise to answer a server with an error; never raised to callers.
    assert not issubclass(mcphost.RpcError, mcphost.MCPHostError)
    err = mcphost.RpcError(-32001, "nope", {"x": 1})
    assert (err.code, err.message, err.data) == (-32001, "nope", {"x": 1})


def test_the_host_keeps_its_own_api() -> None:
    # The documents' APIs live in mcphost.compat; MCPHost has what every user needs of them.
    from mcphost import MCPHost

    for name in ("connect_all", "connect_server", "disconnect_server", "disconnect_all", "get_connection",
                 "connected_servers", "available_tool_count", "qualified_tools", "execute_tool"):
        assert not hasattr(MCPHost, name), name
    for name in ("add_server", "remove_server", "close", "list_resources", "servers_with"):
        assert callable(getattr(MCPHost, name)), name


def test_the_compat_surfaces_are_pinned() -> None:
    from mcphost.compat import client_module, manager, orchestrator

    assert manager.__all__ == ["CapabilitySet", "MCPClientManager", "MCPServerConfig", "MCPServerConnection",
                               "ToolLookupError", "ToolWrapper", "mcp_tool_name", "split_mcp_tool_name"]
    assert client_module.__all__ == ["DEFAULT_CONFIG_PATH", "MCPConfigManager", "MCPServerConfig",
                                     "MCPServerSession", "MCPService", "MCPSessionManager", "ToolRegistry",
                                     "get_mcp_connect_tool_definition", "handle_mcp_connect", "register"]
    assert orchestrator.__all__[0] == "MCPOrchestrator" and "NoMCPAvailableError" in orchestrator.__all__
    for module in (client_module, manager, orchestrator):
        for name in module.__all__:
            assert getattr(module, name) is not None
        errors = [getattr(module, n) for n in module.__all__ if n.endswith(("Error", "Exception"))]
        for cls in errors:
            assert issubclass(cls, mcphost.MCPHostError), cls

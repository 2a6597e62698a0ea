"""The public surface is pinned: a change to it is a decision, made here on purpose."""

from __future__ import annotations

import builtins

import mcphost

PUBLIC = [
    "MCPHost",
    "MCPHostError",
    "ConfigurationError",
    "ServerStartupError",
    "ServerUnavailableError",
    "RoutingError",
    "ValidationError",
    "SchemaError",
    "TimeoutError",
    "ProtocolError",
    "ServerError",
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

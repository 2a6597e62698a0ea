"""mcphost: a pure-Python, zero-dependency host for the Model Context Protocol.

Start many MCP servers from an ``mcp.json``, discover what they offer, route
``server.tool`` calls, answer what servers ask of the client, and shut down cleanly::

    from mcphost import MCPHost

    async with MCPHost("mcp.json") as host:
        print(host.get_tools())
        result = await host.call_tool("filesystem.read_text_file", {"path": "README.md"})

Importing the package is cheap: ``MCPHost`` and its dependencies (asyncio included) load on
first use, so ``import mcphost`` costs a few milliseconds.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from .errors import (
    CallerError,
    ConfigurationError,
    ConnectionFault,
    MCPHostError,
    OutputValidationError,
    PermissionDeniedError,
    ProtocolError,
    RoutingError,
    RpcError,
    SchemaError,
    ServerError,
    ServerFault,
    ServerStartupError,
    ServerUnavailableError,
    TimeoutError,
    TransportError,
    UsageError,
    ValidationError,
)
from .version import __version__

# The library convention: a NullHandler, so that nothing reaches an application's stderr
# unless the application configures logging (the command line configures its own).
logging.getLogger("mcphost").addHandler(logging.NullHandler())

if TYPE_CHECKING:
    from .host import MCPHost
    from .host.permissions import CapabilitySet, Permissions

__all__ = [
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


def __getattr__(name: str) -> Any:
    if name == "MCPHost":
        from .host import MCPHost

        return MCPHost
    if name in ("Permissions", "CapabilitySet"):
        from .host import permissions

        return getattr(permissions, name)
    raise AttributeError(f"module 'mcphost' has no attribute {name!r}")

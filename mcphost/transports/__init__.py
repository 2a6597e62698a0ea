"""Transports move JSON-RPC messages and know no MCP (layer 2).

``base`` is the contract, ``factory`` builds one from a server's configuration,
``memory`` pairs two ends in one process, ``stdio`` speaks to a child process.
"""

from .base import Gone, Receiver, Transport

__all__ = ["Gone", "Receiver", "Transport"]

"""Transports: they move framed messages (bytes) and know nothing of MCP."""

from .base import Transport, TransportClosed

__all__ = ["Transport", "TransportClosed"]

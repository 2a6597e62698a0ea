"""Transports move JSON-RPC messages and know no MCP (layer 2).

``base`` is the contract, ``factory`` builds one from a server's configuration,
``memory`` pairs two ends in one process, ``stdio`` speaks to a child process, ``http``
(with ``http_session``: the session id and what is held while it is lost) speaks
Streamable HTTP, ``http_auto`` adds the spec's probe of a legacy server, ``sse`` speaks the
legacy HTTP+SSE transport. ``throttle`` bounds a diagnostic a server can repeat at will.
"""

from .base import BaseTransport, Gone, Receiver, SessionLost, Transport

__all__ = ["BaseTransport", "Gone", "Receiver", "SessionLost", "Transport"]

"""Transports move JSON-RPC messages and know no MCP (layer 2).

``base`` is the contract, ``factory`` builds one from a server's configuration,
``memory`` pairs two ends in one process, ``stdio/`` speaks to a child process and is the
process room (spawn, the one shutdown ladder, the operating system's differences: nothing
else in the package handles a process), ``http`` (with ``http_post``: a message
POSTed and what its answer means; ``http_session``: the session id and what is held while
it is lost; ``http_stream``: its SSE streams and their GETs) speaks Streamable HTTP, ``http_auto`` adds the spec's
probe of a legacy server, ``sse`` speaks the legacy HTTP+SSE transport, ``websocket`` MCP
over a WebSocket; ``remote`` is what the HTTP transports share (``remote_post``: the POST
of one message), ``httpconn`` their connections, ``http_pool`` their keep-alive pool, ``proxy``, ``tunnel`` and ``tls`` their proxies, tunnels and TLS contexts,
``oauth`` their authorizer (the OAuth steps of ``mcphost.auth`` over these connections, each
request to an authorization server made by ``oauth_fetch``);
``trace`` is the wire trace of every transport, ``throttle`` bounds a diagnostic a server
can repeat at will, ``counted`` delivers what a transport received in order, a message over
1 MiB counted (its JSON tokens, a slice per loop turn) before it is decoded.
"""

from .base import BaseTransport, Gone, ProcessEnd, Receiver, SessionLost, Transport, Vitals

__all__ = ["BaseTransport", "Gone", "ProcessEnd", "Receiver", "SessionLost", "Transport", "Vitals"]

"""The aggregated host served as one MCP server: the gateway (layer 5).

``asgi_app(config)`` is the gateway as an ASGI application (uvicorn, hypercorn, gunicorn
with uvicorn workers); ``mcphost serve`` runs it over stdio or the stdlib HTTP server.

``app`` (``Gateway``: a host and the sessions of its clients; ``serve_stdio``), ``view``
(``HostBackend``: the host's lists and calls under the gateway's names, and what is relayed
both ways: progress, cancellation, sampling, elicitation, roots, list changes, logs,
resource updates), ``naming`` (the naming modes: dot, underscore, pass-through, search),
``stdio`` (the server side of stdio: the process's own stdin and stdout), ``http`` (Streamable
HTTP on a stdlib asyncio server: sessions, Host/Origin checks, bearer token, ``/healthz``,
``/metrics``), ``oauth`` (the OAuth resource-server check: tokens introspected at the issuer,
Protected Resource Metadata), ``httpwire`` (one bounded HTTP/1.1 request in, one response out), ``streams``
(one HTTP session's SSE streams, resumable with ``Last-Event-ID``), ``asgi`` (the ASGI
application over the same endpoint), ``tasks`` (a client's ``tools/call`` made a task: the server's
own, followed through the host, or one the gateway runs).
"""

from __future__ import annotations

from typing import Any

__all__ = ["asgi_app"]


def asgi_app(config: Any, **options: Any) -> Any:
    """The gateway of ``config`` as an ASGI application (:func:`mcphost.gateway.asgi.asgi_app`)."""
    from .asgi import asgi_app as build

    return build(config, **options)

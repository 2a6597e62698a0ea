"""The gateway's entry points under the command's name (``mcphost serve``; docs/serve.md).

``asgi_app(config)`` is the gateway as an ASGI application, for uvicorn, hypercorn or
gunicorn with uvicorn workers; ``serve_http`` and ``serve_stdio`` run it on the stdlib HTTP
server or over the process's own stdin and stdout until cancelled. They are the objects of
:mod:`mcphost.gateway`, named here as well.
"""

from __future__ import annotations

from .gateway import asgi_app
from .gateway.app import serve_http, serve_stdio

__all__ = ["asgi_app", "serve_http", "serve_stdio"]

"""One uvicorn worker of a gateway to one downstream MCP server over HTTP, for the benchmarks.

``python benchmarks/gateway_worker.py mcphost|fastmcp DOWNSTREAM_URL``: the gateway as an
ASGI application under uvicorn, on a socket bound here to 127.0.0.1 and any free port (printed
as ``PORT <n>`` before serving); it ends on SIGTERM or SIGINT.

- ``mcphost``: ``mcphost.gateway.asgi_app`` with ``naming="pass-through"`` (the tool keeps
  its name, as through fastmcp's proxy);
- ``fastmcp``: ``fastmcp.server.create_proxy(DOWNSTREAM_URL, mode="auto").http_app()``,
  fastmcp's proxy with its defaults but for the backend's era, probed rather than mirrored
  from the client's (a benchmark-only dependency, never mcphost's).
"""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def app_of(kind: str, url: str) -> Any:
    if kind == "mcphost":
        from mcphost.gateway import asgi_app

        return asgi_app({"mcpServers": {"echo": {"type": "http", "url": url}}}, naming="pass-through")
    if kind == "fastmcp":
        from fastmcp.server import create_proxy

        # mode "auto": the backend era is probed, not mirrored from the front (the echo server
        # speaks only the handshake era, whatever era a client speaks to the proxy).
        return create_proxy(url, name="fastmcp-proxy", mode="auto").http_app(path="/mcp")
    raise SystemExit(f"unknown gateway {kind!r}: mcphost or fastmcp")


def main(kind: str, url: str) -> None:
    import uvicorn

    logging.getLogger("mcphost").setLevel(logging.ERROR)
    config = uvicorn.Config(app_of(kind, url), log_level="warning", access_log=False, lifespan="on")
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
    # without it each SSE event after the first waits for a delayed ACK (about 40 ms).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(2048)  # connections wait in the backlog until uvicorn accepts them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

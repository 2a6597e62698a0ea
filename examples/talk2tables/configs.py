"""Configurations of the example: the document's, over stdio, or over SSE on servers run in this process.

The document's ``mcp_config.yaml`` (and ``mcp_config.json``, the same for hosts without
PyYAML) names the two servers on ``localhost:8000`` and ``localhost:8002`` over SSE: start them
first, as its Startup Sequence says. For one command that needs nothing running,
:func:`stdio_config` gives the same servers, priorities, domains and capabilities as child
processes over stdio, and :func:`serve_sse` serves both in this process on free ports and
gives the configuration that names them.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from .servers import database, product_metadata
from .servers.mcpserver import SseServer

__all__ = ["DOCUMENT_CONFIG", "ROOT", "SERVERS", "serve_sse", "sse_config", "stdio_config"]

HERE = Path(__file__).resolve().parent
#: The repository root: children run ``python -m examples.talk2tables.servers...`` from it.
ROOT = HERE.parent.parent
DOCUMENT_CONFIG = HERE / "mcp_config.yaml"

#: What the document says of each server, whatever its transport.
SERVERS: dict[str, dict[str, Any]] = {
    "database_mcp": {"name": "Database MCP Server", "priority": 10,
                     "domains": ["sales", "transactions", "orders", "products"],
                     "capabilities": ["execute_query", "list_resources"],
                     "module": "examples.talk2tables.servers.database"},
    "product_metadata_mcp": {"name": "Product Metadata MCP", "priority": 1,
                             "domains": ["products", "product_aliases", "column_mappings"],
                             "capabilities": ["list_resources"],
                             "module": "examples.talk2tables.servers.product_metadata"},
}

ORCHESTRATION: dict[str, Any] = {"resource_cache_ttl": 300, "fail_fast": True, "enable_logging": True,
                                 "log_level": "INFO"}


def _entry(name: str, **transport: Any) -> dict[str, Any]:
    info = {k: v for k, v in SERVERS[name].items() if k != "module"}
    return {**info, **transport}


def stdio_config(python: str = sys.executable, **orchestration: Any) -> dict[str, Any]:
    """The document's configuration, each server a child process of ``python`` over stdio."""
    return {"mcp_servers": {name: _entry(name, transport="stdio", command=python,
                                         args=["-m", SERVERS[name]["module"]], cwd=str(ROOT))
                            for name in SERVERS},
            "orchestration": {**ORCHESTRATION, **orchestration}}


def sse_config(urls: dict[str, str], **orchestration: Any) -> dict[str, Any]:
    """The document's configuration with the SSE URLs given (``{server: "http://.../sse"}``)."""
    return {"mcp_servers": {name: _entry(name, transport="sse", url=urls[name]) for name in SERVERS},
            "orchestration": {**ORCHESTRATION, **orchestration}}


@contextlib.asynccontextmanager
async def serve_sse(host: str = "127.0.0.1", **orchestration: Any) -> AsyncIterator[dict[str, Any]]:
    """Serve both servers over SSE in this process (free ports); yields their configuration."""
    async with SseServer(database.build_server(), host) as db, \
            SseServer(product_metadata.build_server(), host) as meta:
        yield sse_config({"database_mcp": db.url, "product_metadata_mcp": meta.url}, **orchestration)

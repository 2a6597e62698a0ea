"""The document's HTTP API (FastAPI backend, port 8001), when FastAPI is installed.

- ``POST /chat`` ``{"query": "..."}`` -> the ``Query_Result`` of :meth:`process_query`
  (HTTP 200 with ``success: false`` for a question that could not be answered: the
  document's "Error details + suggestions"; 400 for an empty query);
- ``GET /health`` -> ``{"status": "healthy", "service": "fastapi_orchestrator",
  "mcp_servers": {name: connected}}`` (the document: only the backend has a health endpoint;
  a server is healthy when it answers MCP);
- ``GET /metrics`` -> the document's performance metrics (``Talk2TablesOrchestrator.metrics()``);
- startup connects every server of the configuration (``T2T_CONFIG``, default the document's
  ``mcp_config.yaml``; ``stdio`` for the servers as child processes); shutdown closes them.

FastAPI is never required: ``python -m examples.talk2tables.api`` without it says so and
exits. The model is the demo stand-in unless ``T2T_MODEL`` names an adapter
(``openai``, ``anthropic``, ``gemini``, ``auto``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

from . import configs
from .llm import DemoLLM, LLMInterface
from .orchestrator import Talk2TablesOrchestrator
from .providers import from_environment

logger = logging.getLogger("talk2tables.api")

__all__ = ["create_app", "main"]


def _config() -> Any:
    chosen = os.environ.get("T2T_CONFIG", str(configs.DOCUMENT_CONFIG))
    return configs.stdio_config() if chosen == "stdio" else chosen


def _model() -> LLMInterface:
    choice = os.environ.get("T2T_MODEL", "demo")
    if choice == "demo":
        return DemoLLM()
    return from_environment(None if choice == "auto" else choice) or DemoLLM()


def create_app(config: Any = None, model: LLMInterface | None = None) -> Any:
    """The FastAPI application (ImportError when FastAPI is not installed)."""
    from fastapi import FastAPI, HTTPException  # type: ignore[import-not-found]

    state: dict[str, Any] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        orchestrator = Talk2TablesOrchestrator(config if config is not None else _config())
        await orchestrator.initialize()
        state["orchestrator"], state["model"] = orchestrator, model or _model()
        try:
            yield
        finally:
            await orchestrator.close()

    app = FastAPI(title="Talk 2 Tables", lifespan=lifespan)

    @app.get("/health")  # type: ignore[untyped-decorator,unused-ignore]
    async def health() -> dict[str, Any]:
        clients = state["orchestrator"].mcp_clients
        return {"status": "healthy", "service": "fastapi_orchestrator",
                "mcp_servers": {name: info["connected"] for name, info in clients.items()}}

    @app.get("/metrics")  # type: ignore[untyped-decorator,unused-ignore]
    async def metrics() -> dict[str, Any]:
        result: dict[str, Any] = state["orchestrator"].metrics()
        return result

    @app.post("/chat")  # type: ignore[untyped-decorator,unused-ignore]
    async def chat(body: dict[str, Any]) -> dict[str, Any]:
        query = body.get("query") if isinstance(body, dict) else None
        if not isinstance(query, str) or not query.strip():
            raise HTTPException(status_code=400, detail="'query' must be a non-empty string")
        result: dict[str, Any] = await state["orchestrator"].process_query(query, state["model"])
        return result

    return app


def main() -> int:
    try:
        import uvicorn  # type: ignore[import-not-found,unused-ignore]

        app = create_app()
    except ImportError as exc:
        print(f"The HTTP API needs FastAPI and uvicorn ({exc.name} is not installed): "
              "pip install fastapi uvicorn. The command line works without them: "
              'python -m examples.talk2tables "which products are low on stock?"', file=sys.stderr)
        return 2
    uvicorn.run(app, host=os.environ.get("T2T_HOST", "127.0.0.1"), port=int(os.environ.get("T2T_PORT", "8001")))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""A 2026-07-28 (modern era) MCP server written with the official Python SDK (PyPI ``mcp`` 2).

Test-only, started by ``tests/interop/test_modern_peer.py``::

    python tests/peers/sdk_modern_server.py stdio
    python tests/peers/sdk_modern_server.py http PORT

The SDK's server speaks both eras; this one is asked in the modern era. It offers what
``peer_tools.py`` registers (whose ``ask_user``/``ask_llm`` use server-to-client requests,
which the modern era does not have), and tools that ask through multi-round-trip requests
(``inputRequests`` in an ``InputRequiredResult``):

- ``interview(topic)``: round 1 asks the user (elicitation); round 2 asks for the roots and
  a sampling answer at once; then returns what it got, and the ``requestState`` it saw;
- ``headers(region, count, flag, note)``: its ``inputSchema`` annotates three parameters with
  ``x-mcp-header``; it returns the ``Mcp-*`` request headers it received (HTTP);
- ``bad_header``: an ``x-mcp-header`` annotation on a ``number`` (a client must not offer it).
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Annotated, Any

import mcp_types as mt
from mcp.server.mcpserver import Context, MCPServer
from peer_tools import register
from pydantic import Field

warnings.simplefilter("ignore", DeprecationWarning)

NAME = "sdk-modern-peer"


def build() -> Any:
    server = MCPServer(NAME, version="2.0.0", instructions="A modern test peer (MCP Python SDK).",
                       log_level="WARNING")
    register(server, Context, NAME)

    @server.tool(description="Ask the user, then the roots and the model, over three rounds")
    async def interview(topic: str, ctx: Context) -> mt.InputRequiredResult | str:
        responses = ctx.input_responses or {}
        state = ctx.request_state
        if state is None:
            ask = mt.ElicitRequest(params=mt.ElicitRequestFormParams(
                message=f"Who are you? ({topic})",
                requested_schema={"type": "object", "properties": {"name": {"type": "string"}},
                                  "required": ["name"]}))
            return mt.InputRequiredResult(input_requests={"who": ask}, request_state="round-1")
        if state == "round-1":
            who = responses["who"]
            name = who.content.get("name") if getattr(who, "content", None) else "?"
            sample = mt.CreateMessageRequest(params=mt.CreateMessageRequestParams(
                messages=[mt.SamplingMessage(role="user", content=mt.TextContent(type="text", text=topic))],
                max_tokens=16))
            return mt.InputRequiredResult(
                input_requests={"roots": mt.ListRootsRequest(), "llm": sample},
                request_state=json.dumps({"name": name, "n": 2}))
        saw = json.loads(state)
        roots = [r.uri for r in responses["roots"].roots]
        llm = responses["llm"]
        text = llm.content.text if isinstance(llm.content, mt.TextContent) else "?"
        return f"{saw['name']} with {len(roots)} root(s); the model says {text}"

    @server.tool(description="Echo the Mcp-* request headers")
    def headers(
        ctx: Context,
        region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})] = "",
        count: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Count"})] = 0,
        flag: Annotated[bool, Field(json_schema_extra={"x-mcp-header": "Flag"})] = False,
        note: str = "",
    ) -> str:
        seen = ctx.headers or {}
        return json.dumps({k.lower(): v for k, v in seen.items() if k.lower().startswith("mcp-")}, sort_keys=True)

    @server.tool(description="Invalid: x-mcp-header on a number")
    def bad_header(ratio: float = 0.0) -> str:
        return "never called"

    # The SDK refuses to declare an invalid annotation: it is put in the listed schema here.
    server._tool_manager.get_tool("bad_header").parameters["properties"]["ratio"]["x-mcp-header"] = "Ratio"

    return server


def main() -> None:
    server = build()
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        # Stateless: the modern era has no sessions (a stateful SDK server asks for one).
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]), stateless_http=True)


if __name__ == "__main__":
    main()

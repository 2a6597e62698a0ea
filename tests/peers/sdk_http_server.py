"""An MCP server written with the official Python SDK (PyPI ``mcp``), over Streamable HTTP.

Test-only: started by ``tests/interop/test_python_peers.py`` as a subprocess::

    python tests/peers/sdk_http_server.py PORT [--json] [--stateless]

It serves ``http://127.0.0.1:PORT/mcp`` until it is killed: requests are answered with SSE
streams, or with single JSON bodies (``--json``); with ``--stateless`` there are no sessions
(and so no server-to-client requests). The SDK's high-level class is
``MCPServer`` from mcp 2 on (``mcp.server.mcpserver``); mcp 1 called it ``FastMCP``
(``mcp.server.fastmcp``): both are accepted. What it offers is the same as
``fastmcp_sse_server.py`` (the tests run one suite over both): what ``peer_tools.py``
registers, and

- ``bad_output``: declares an ``outputSchema`` its ``structuredContent`` does not match;
- ``toggle_extra``: adds the tool ``extra`` (or removes it), then sends ``tools/list_changed``.
"""

from __future__ import annotations

import sys
from typing import Any

from peer_tools import BAD_SCHEMA, quiet_deprecations, register
from pydantic import BaseModel, ConfigDict

try:  # mcp >= 2
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server

    V2 = True
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef,assignment]

    V2 = False

import mcp.types as types

quiet_deprecations()

NAME = "sdk-peer"


class Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


def build(port: int) -> Any:
    if V2:
        server = Server(NAME, version="1.2.3", instructions="A test peer (MCP Python SDK).",
                        log_level="WARNING")
    else:  # mcp 1: the address is a setting
        server = Server(NAME, instructions="A test peer (MCP Python SDK).", log_level="WARNING",
                        host="127.0.0.1", port=port)

    register(server, Context, NAME)

    @server.tool(description="Structured content that does not match the outputSchema")
    def bad_output() -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text='{"count": "three"}')],
            structuredContent={"count": "three"},
        )

    # Publish BAD_SCHEMA, and let the SDK check the result against a model accepting anything:
    # checking it against the schema is the host's job.
    metadata = server._tool_manager.get_tool("bad_output").fn_metadata
    metadata.output_schema = BAD_SCHEMA
    metadata.output_model = Anything

    def extra() -> str:
        """Added at run time."""
        return "extra!"

    @server.tool(description="Add the tool 'extra', or remove it; tell the client")
    async def toggle_extra(ctx: Context) -> str:
        if server._tool_manager.get_tool("extra") is not None:
            server.remove_tool("extra")
            done = "removed"
        else:
            server.add_tool(extra, description="Added at run time")
            done = "added"
        # Not related to this request: on Streamable HTTP it goes on the GET stream.
        await ctx.session.send_tool_list_changed()
        return done

    return server


def main() -> None:
    port = int(sys.argv[1])
    options = {"json_response": "--json" in sys.argv[2:], "stateless_http": "--stateless" in sys.argv[2:]}
    server = build(port)
    if V2:
        server.run("streamable-http", host="127.0.0.1", port=port, **options)
    else:
        for key, value in options.items():
            setattr(server.settings, key, value)
        server.run("streamable-http")


if __name__ == "__main__":
    main()

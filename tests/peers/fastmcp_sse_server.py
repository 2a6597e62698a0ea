"""An MCP server written with ``fastmcp`` (PyPI ``fastmcp``), over the legacy HTTP+SSE transport.

Test-only: started by ``tests/interop/test_python_peers.py`` as a subprocess::

    python tests/peers/fastmcp_sse_server.py PORT

It serves ``http://127.0.0.1:PORT/sse`` (the 2024-11-05 transport: a GET event stream whose
``endpoint`` event names where to POST) until it is killed. It offers what
``sdk_http_server.py`` offers (the tests run one suite over both): what ``peer_tools.py``
registers, and

- ``bad_output``: declares an ``outputSchema`` its ``structuredContent`` does not match;
- ``toggle_extra``: adds the tool ``extra`` (or removes it), then sends ``tools/list_changed``.
"""

from __future__ import annotations

import os
import sys

# Before fastmcp is imported: no banner, no update check, quiet logs.
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

import mcp.types as types
from fastmcp import Context, FastMCP
from fastmcp.tools import ToolResult
from peer_tools import BAD_SCHEMA, quiet_deprecations, register

quiet_deprecations()

NAME = "fastmcp-peer"


def build() -> FastMCP:
    server = FastMCP(NAME, version="4.5.6", instructions="A test peer (fastmcp).")

    register(server, Context, NAME)

    @server.tool(description="Structured content that does not match the outputSchema",
                 output_schema=BAD_SCHEMA)
    def bad_output() -> ToolResult:
        return ToolResult(content=[types.TextContent(type="text", text='{"count": "three"}')],
                          structured_content={"count": "three"})

    def extra() -> str:
        """Added at run time."""
        return "extra!"

    @server.tool(description="Add the tool 'extra', or remove it; tell the client")
    async def toggle_extra(ctx: Context) -> str:
        if "extra" in {t.name for t in await server.list_tools()}:
            server.local_provider.remove_tool("extra")
            done = "removed"
        else:
            server.add_tool(extra)
            done = "added"
        # Not related to this request: on Streamable HTTP it goes on the GET stream.
        await ctx.session.send_tool_list_changed()
        return done

    return server


def main() -> None:
    port = int(sys.argv[1])
    build().run(transport="sse", host="127.0.0.1", port=port, show_banner=False,
                log_level="WARNING")


if __name__ == "__main__":
    main()

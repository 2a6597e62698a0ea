"""An MCP server written with ``fastmcp`` (PyPI ``fastmcp``), over the legacy HTTP+SSE transport.

Test-only: started by ``tests/interop/test_python_peers.py`` as a subprocess::

    python tests/peers/fastmcp_sse_server.py PORT

It serves ``http://127.0.0.1:PORT/sse`` (the 2024-11-05 transport: a GET event stream whose
``endpoint`` event names where to POST) until it is killed. It offers what
``sdk_http_server.py`` offers (the tests run one suite over both):

- ``stats(values, label)``: typed arguments, a structured result (``outputSchema``);
- ``bad_output``: declares an ``outputSchema`` its ``structuredContent`` does not match;
- ``count(steps, delay)``: reports progress ``1..steps`` of ``steps``, ``delay`` s apart;
- ``cancellations``: how many ``count`` calls the client cancelled;
- ``chatty(message)``: logs at debug, info, warning and error;
- ``ask_llm(question)``: asks the client for sampling (through the request's session: fastmcp 4
  dropped ``ctx.sample``), returns its answer;
- ``ask_user(topic)``: asks the client for a form (elicitation), returns what it got;
- ``toggle_extra``: adds the tool ``extra`` (or removes it), then sends ``tools/list_changed``;
- the resource ``info://server`` and the template ``greeting://{name}``;
- the prompt ``review(code, language)``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings

# Before fastmcp is imported: no banner, no update check, quiet logs.
os.environ.setdefault("FASTMCP_SHOW_SERVER_BANNER", "false")
os.environ.setdefault("FASTMCP_CHECK_FOR_UPDATES", "off")
os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")

import mcp.types as types
from fastmcp import Context, FastMCP
from fastmcp.tools import ToolResult
from pydantic import BaseModel, Field

try:
    from mcp.shared.exceptions import MCPDeprecationWarning
except ImportError:  # mcp 1
    MCPDeprecationWarning = DeprecationWarning  # type: ignore[assignment,misc]

# Logging and sampling are "deprecated as of 2026-07-28" in mcp 2 (MCPDeprecationWarning, a
# UserWarning): they are what this peer exercises, over the handshake era the host speaks.
warnings.simplefilter("ignore", MCPDeprecationWarning)
warnings.simplefilter("ignore", DeprecationWarning)

NAME = "fastmcp-peer"
BAD_SCHEMA = {
    "type": "object",
    "properties": {"count": {"type": "integer"}},
    "required": ["count"],
}


class Stats(BaseModel):
    label: str
    count: int
    total: float
    mean: float


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(description="Your age")


#: The ``steps`` of each ``count`` call cancelled by the client.
cancelled: list[int] = []


def build() -> FastMCP:
    server = FastMCP(NAME, version="4.5.6", instructions="A test peer (fastmcp).")

    @server.tool(description="Count, sum and mean of numbers")
    def stats(values: list[float], label: str = "stats") -> Stats:
        total = sum(values)
        return Stats(label=label, count=len(values), total=total,
                     mean=total / len(values) if values else 0.0)

    @server.tool(description="Structured content that does not match the outputSchema",
                 output_schema=BAD_SCHEMA)
    def bad_output() -> ToolResult:
        return ToolResult(content=[types.TextContent(type="text", text='{"count": "three"}')],
                          structured_content={"count": "three"})

    @server.tool(description="Report progress 1..steps, waiting delay seconds before each")
    async def count(steps: int, ctx: Context, delay: float = 0.0) -> str:
        try:
            for i in range(1, steps + 1):
                if delay:
                    await asyncio.sleep(delay)
                await ctx.report_progress(i, steps, f"step {i} of {steps}")
        except asyncio.CancelledError:  # the client sent notifications/cancelled
            cancelled.append(steps)
            raise
        return f"counted to {steps}"

    @server.tool(description="How many count calls were cancelled")
    def cancellations() -> int:
        return len(cancelled)

    @server.tool(description="Log the message at four levels")
    async def chatty(message: str, ctx: Context) -> str:
        await ctx.debug(f"debug: {message}")
        await ctx.info(f"info: {message}")
        await ctx.warning(f"warning: {message}")
        await ctx.error(f"error: {message}")
        return "logged 4 messages"

    @server.tool(description="Ask the client's model")
    async def ask_llm(question: str, ctx: Context) -> str:
        result = await ctx.session.create_message(
            messages=[types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text=question))],
            max_tokens=64,
            system_prompt="You are a test.",
            related_request_id=ctx.request_id,
        )
        content = result.content
        text = content.text if isinstance(content, types.TextContent) else repr(content)
        return f"{result.model} says: {text}"

    @server.tool(description="Ask the user who they are")
    async def ask_user(topic: str, ctx: Context) -> str:
        answer = await ctx.elicit(f"Tell me about you ({topic})", Person)
        if answer.action == "accept":
            return f"{answer.data.name} is {answer.data.age}"
        return f"no answer: {answer.action}"

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

    @server.resource("info://server", name="info", description="About this server",
                     mime_type="text/plain")
    def info() -> str:
        return f"{NAME}: a test peer"

    @server.resource("greeting://{name}", name="greeting", description="A greeting",
                     mime_type="text/plain")
    def greeting(name: str) -> str:
        return f"Hello, {name}!"

    @server.prompt(description="Review some code")
    def review(code: str, language: str = "python") -> str:
        return f"Please review this {language} code:\n{code}"

    return server


def main() -> None:
    port = int(sys.argv[1])
    build().run(transport="sse", host="127.0.0.1", port=port, show_banner=False,
                log_level="WARNING")


if __name__ == "__main__":
    main()

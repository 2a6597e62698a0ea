"""An MCP server written with the official Python SDK (PyPI ``mcp``), over Streamable HTTP.

Test-only: started by ``tests/interop/test_python_peers.py`` as a subprocess::

    python tests/peers/sdk_http_server.py PORT [--json] [--stateless]

It serves ``http://127.0.0.1:PORT/mcp`` until it is killed: requests are answered with SSE
streams, or with single JSON bodies (``--json``); with ``--stateless`` there are no sessions
(and so no server-to-client requests). The SDK's high-level class is
``MCPServer`` from mcp 2 on (``mcp.server.mcpserver``); mcp 1 called it ``FastMCP``
(``mcp.server.fastmcp``): both are accepted. What it offers is the same as
``fastmcp_sse_server.py`` (the tests run one suite over both):

- ``stats(values, label)``: typed arguments, a structured result (``outputSchema``);
- ``bad_output``: declares an ``outputSchema`` its ``structuredContent`` does not match;
- ``count(steps, delay)``: reports progress ``1..steps`` of ``steps``, ``delay`` s apart;
- ``cancellations``: how many ``count`` calls the client cancelled;
- ``chatty(message)``: logs at debug, info, warning and error;
- ``ask_llm(question)``: asks the client for sampling, returns its answer;
- ``ask_user(topic)``: asks the client for a form (elicitation), returns what it got;
- ``toggle_extra``: adds the tool ``extra`` (or removes it), then sends ``tools/list_changed``;
- the resource ``info://server`` and the template ``greeting://{name}``;
- the prompt ``review(code, language)``.
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

try:  # mcp >= 2
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as Server

    V2 = True
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context  # type: ignore[no-redef]
    from mcp.server.fastmcp import FastMCP as Server  # type: ignore[no-redef,assignment]

    V2 = False

import mcp.types as types

try:
    from mcp.shared.exceptions import MCPDeprecationWarning
except ImportError:  # mcp 1
    MCPDeprecationWarning = DeprecationWarning  # type: ignore[assignment,misc]

# Logging and sampling are "deprecated as of 2026-07-28" in mcp 2 (MCPDeprecationWarning, a
# UserWarning): they are what this peer exercises, over the handshake era the host speaks.
warnings.simplefilter("ignore", MCPDeprecationWarning)
warnings.simplefilter("ignore", DeprecationWarning)

NAME = "sdk-peer"
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


class Anything(BaseModel):
    model_config = ConfigDict(extra="allow")


class Person(BaseModel):
    name: str = Field(description="Your name")
    age: int = Field(description="Your age")


#: The ``steps`` of each ``count`` call cancelled by the client.
cancelled: list[int] = []


def build(port: int) -> Any:
    if V2:
        server = Server(NAME, version="1.2.3", instructions="A test peer (MCP Python SDK).",
                        log_level="WARNING")
    else:  # mcp 1: the address is a setting
        server = Server(NAME, instructions="A test peer (MCP Python SDK).", log_level="WARNING",
                        host="127.0.0.1", port=port)

    @server.tool(description="Count, sum and mean of numbers")
    def stats(values: list[float], label: str = "stats") -> Stats:
        total = sum(values)
        return Stats(label=label, count=len(values), total=total,
                     mean=total / len(values) if values else 0.0)

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
        result = await ctx.request_context.session.create_message(
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
        if server._tool_manager.get_tool("extra") is not None:
            server.remove_tool("extra")
            done = "removed"
        else:
            server.add_tool(extra, description="Added at run time")
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

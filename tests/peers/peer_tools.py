"""What both Python peers offer, written once: ``sdk_http_server.py`` (the official SDK) and
``fastmcp_sse_server.py`` (fastmcp) register these on their own server object, whose
decorators are the same (``tool``, ``resource``, ``prompt``), so one interop suite runs over
both. Each peer adds what its library spells its own way (``bad_output``, ``toggle_extra``).

- ``stats(values, label)``: typed arguments, a structured result (``outputSchema``);
- ``count(steps, delay)``: reports progress ``1..steps`` of ``steps``, ``delay`` s apart;
- ``cancellations``: how many ``count`` calls the client cancelled;
- ``chatty(message)``: logs at debug, info, warning and error;
- ``ask_llm(question)``: asks the client for sampling (through the request's session, which
  both libraries have: fastmcp 4 dropped ``ctx.sample``), returns its answer;
- ``ask_user(topic)``: asks the client for a form (elicitation), returns what it got;
- the resource ``info://server`` and the template ``greeting://{name}``;
- the prompt ``review(code, language)``.
"""

# No ``from __future__ import annotations``: both libraries read each tool's signature, and
# a tool's ``Context`` annotation must be the very class of the server's library.

import asyncio
import warnings
from typing import Any

import mcp.types as types
from pydantic import BaseModel, Field


def quiet_deprecations() -> None:
    """Logging and sampling are "deprecated as of 2026-07-28" in mcp 2 (MCPDeprecationWarning,
    a UserWarning): they are what the peers exercise, over the handshake era the host speaks."""
    try:
        from mcp.shared.exceptions import MCPDeprecationWarning
    except ImportError:  # mcp 1
        MCPDeprecationWarning = DeprecationWarning  # type: ignore[assignment,misc]
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    warnings.simplefilter("ignore", DeprecationWarning)

#: What ``bad_output`` declares as its ``outputSchema`` (its result does not match it).
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


def register(server: Any, context: type, server_name: str) -> None:
    """Add the shared tools, resources and prompt to ``server``; ``context`` is its
    library's ``Context`` class, ``server_name`` its name."""
    Context = context

    @server.tool(description="Count, sum and mean of numbers")
    def stats(values: list[float], label: str = "stats") -> Stats:
        total = sum(values)
        return Stats(label=label, count=len(values), total=total,
                     mean=total / len(values) if values else 0.0)

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

    @server.resource("info://server", name="info", description="About this server",
                     mime_type="text/plain")
    def info() -> str:
        return f"{server_name}: a test peer"

    @server.resource("greeting://{name}", name="greeting", description="A greeting",
                     mime_type="text/plain")
    def greeting(name: str) -> str:
        return f"Hello, {name}!"

    @server.prompt(description="Review some code")
    def review(code: str, language: str = "python") -> str:
        return f"Please review this {language} code:\n{code}"

"""The official MCP Python SDK's client as a benchmark contender (``bench_http.py``).

Runs in its own process with an interpreter that has the ``mcp`` package (the benchmark
starts it with its own interpreter, or ``$MCPHOST_BENCH_SDK_PYTHON`` when ``mcp`` is not
importable next to mcphost). It connects once to the Streamable HTTP URL given
(``streamablehttp_client``, called ``streamable_http_client`` in SDK 2.x, and a
``ClientSession``), initializes, lists the tools (the SDK looks a tool's output schema up
before validating a result), then obeys its stdin, one command a line::

    run <width> <n>   n calls of echo({"i": i}), width callers in flight at once
                      -> "DONE <wall seconds> <CPU seconds of this process>"
    quit

It prints ``READY <sdk version>`` once initialized (or ``ERROR <reason>`` and exits). The
timing is this process's own: start-up and the pipe are not measured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from importlib import metadata
from typing import Any


def _say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def _client_factory() -> Any:
    try:
        from mcp.client.streamable_http import (  # type: ignore[attr-defined]  # SDK 1.x
            streamablehttp_client as factory,
        )
    except ImportError:
        from mcp.client.streamable_http import streamable_http_client as factory  # SDK 2.x
    return factory


async def _run(session: Any, width: int, n: int) -> None:
    items = [{"i": i} for i in range(n)]
    call = session.call_tool

    async def worker(mine: list[dict[str, Any]]) -> None:
        for args in mine:
            result = await call("echo", args)
            if getattr(result, "is_error", None) or getattr(result, "isError", None):
                raise RuntimeError(f"tool error: {result}")

    if width == 1:
        await worker(items)
    else:
        await asyncio.gather(*[worker(items[k::width]) for k in range(width)])


async def main(url: str) -> None:
    logging.disable(logging.WARNING)
    try:
        from mcp import ClientSession

        factory = _client_factory()
        version = metadata.version("mcp")
    except ImportError as exc:
        _say(f"ERROR cannot import the mcp package: {exc}")
        return
    loop = asyncio.get_running_loop()
    async with contextlib.AsyncExitStack() as stack:
        streams = await stack.enter_async_context(factory(url))
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await session.initialize()
        await session.list_tools()
        check = await session.call_tool("echo", {"i": 7})
        text = getattr(check.content[0], "text", "").replace(" ", "")
        if text != '{"i":7}':
            _say(f"ERROR wrong echo: {text!r}")
            return
        _say(f"READY {version}")
        while True:
            line = await loop.run_in_executor(None, sys.stdin.readline)
            words = line.split()
            if not words or words[0] == "quit":
                break
            if words[0] == "run":
                width, n = int(words[1]), int(words[2])
                cpu = time.process_time()
                started = time.perf_counter()
                await _run(session, width, n)
                wall = time.perf_counter() - started
                _say(f"DONE {wall:.9f} {time.process_time() - cpu:.9f}")
            else:
                _say(f"ERROR unknown command {words[0]!r}")


if __name__ == "__main__":
    try:
        asyncio.run(main(sys.argv[1]))
    except Exception as exc:
        _say(f"ERROR {type(exc).__name__}: {exc}")

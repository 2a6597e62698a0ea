"""``mcphost serve``: the servers of an mcp.json served as one MCP server.

``--stdio`` (the default) serves one client on stdin and stdout: an IDE starts
``mcphost serve --stdio mcp.json`` as its one server. stdout carries only protocol messages;
every line of ours goes to stderr. ``--naming`` chooses how tools and prompts are named
(``--pass-through``: one server, names unchanged). The first SIGINT or SIGTERM ends the
session and shuts the servers down through their ladder (exit status 130 or 143); the end
of the client's input ends it with status 0.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from typing import Any

from ..gateway.naming import MODES
from ..server.session import ServerLimits
from . import inputs as cli_inputs

__all__ = ["add_parser", "serve"]


def add_parser(sub: Any, common: Any) -> None:
    p = sub.add_parser("serve", help="serve the servers of an mcp.json as one MCP server (stdio)",
                       description="Serve every server of an mcp.json as one MCP server: its tools and prompts "
                                   "named server.name (or --naming), its resources by URI, permissions, the "
                                   "read cache and the metrics of the host applied. docs/serve.md")
    p.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p.add_argument("--stdio", action="store_true",
                   help="serve one client on stdin/stdout (the default; what an IDE starts)")
    p.add_argument("--naming", choices=MODES, default="dot",
                   help="dot: server.tool (default); underscore: server__tool; pass-through: one server, "
                        "names unchanged; search: the three search meta-tools instead of every tool")
    p.add_argument("--pass-through", dest="naming", action="store_const", const="pass-through",
                   help="the same as --naming pass-through")
    p.add_argument("--max-in-flight", type=int, default=64, metavar="N",
                   help="requests of the client served at once (default 64; past it: JSON-RPC error -32000)")
    p.add_argument("--page-size", type=int, default=500, metavar="N", help="items per page of a list (default 500)")
    common(p)


def serve(args: argparse.Namespace) -> int:
    """Run ``mcphost serve``; the exit status."""
    from ..gateway.app import serve_stdio
    from .commands import config_path

    given = cli_inputs.parse_inputs(args.input)
    # stdin is the protocol: an ${input:...} is never asked interactively.
    options: dict[str, Any] = {"inputs": cli_inputs.resolver(given, os.environ, False), "handle_signals": False}
    if args.retries is not None:
        from ..policy import RetryPolicy

        options["retry"] = RetryPolicy(retries=args.retries)
    limits = ServerLimits(max_in_flight=args.max_in_flight, page_size=args.page_size)
    config = config_path(args, args.config)
    stopped: list[signal.Signals] = []

    async def main() -> None:
        task = asyncio.current_task()
        loop = asyncio.get_running_loop()

        def stop(sig: signal.Signals) -> None:
            stopped.append(sig)
            if task is not None:
                task.cancel()

        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, stop, sig)
        await serve_stdio(config, naming=args.naming, limits=limits, **options)

    with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
        asyncio.run(main())
    return 128 + int(stopped[0]) if stopped else 0

"""``mcphost serve``: the servers of an mcp.json served as one MCP server.

``--stdio`` (the default) serves one client on stdin and stdout: an IDE starts
``mcphost serve --stdio mcp.json`` as its one server. stdout carries only protocol messages;
every line of ours goes to stderr. ``--http HOST:PORT`` serves Streamable HTTP to any number
of clients (``--token-env`` names the variable holding a bearer token to require; ``--oauth-issuer``
checks OAuth access tokens at an authorization server instead). ``--naming`` chooses how tools and prompts are named
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
import sys
from typing import Any

from ..errors import ConfigurationError
from ..gateway.naming import MODES
from ..server.session import ServerLimits
from . import inputs as cli_inputs

__all__ = ["add_parser", "serve"]


def add_parser(sub: Any, common: Any) -> None:
    p = sub.add_parser("serve", help="serve the servers of an mcp.json as one MCP server (stdio or HTTP)",
                       description="Serve every server of an mcp.json as one MCP server: its tools and prompts "
                                   "named server.name (or --naming), its resources by URI, permissions, the "
                                   "read cache and the metrics of the host applied. docs/serve.md")
    p.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true",
                      help="serve one client on stdin/stdout (the default; what an IDE starts)")
    mode.add_argument("--http", metavar="HOST:PORT",
                      help="serve Streamable HTTP at http://HOST:PORT/mcp (port 0: any free port, printed on "
                           "stderr), with /healthz and /metrics")
    p.add_argument("--token-env", metavar="VAR",
                   help="with --http: require 'Authorization: Bearer <the value of $VAR>' (never on the "
                        "command line, where other users could read it)")
    p.add_argument("--state-key-env", metavar="VAR",
                   help="with --http: the variable holding the secret (32 bytes or more) that seals 2026-07-28 "
                        "requestState, the same for every process of a deployment (default: a random one)")
    p.add_argument("--oauth-issuer", metavar="URL",
                   help="with --http: accept OAuth access tokens that this authorization server, asked by "
                        "token introspection (RFC 7662), says are active and issued for --oauth-resource; "
                        "serves /.well-known/oauth-protected-resource for clients to find it")
    p.add_argument("--oauth-resource", metavar="URL",
                   help="with --oauth-issuer: this endpoint's public URL (https://mcp.example.com/mcp), the "
                        "audience tokens must name")
    p.add_argument("--oauth-client-id", metavar="ID", help="with --oauth-issuer: the gateway's client id at the "
                                                            "introspection endpoint")
    p.add_argument("--oauth-client-secret-env", metavar="VAR",
                   help="with --oauth-client-id: the variable holding the gateway's client secret")
    p.add_argument("--oauth-scope", action="append", metavar="SCOPE",
                   help="with --oauth-issuer: a scope every token must carry (repeatable)")
    p.add_argument("--allow-host", action="append", metavar="NAME",
                   help="with --http: a Host/Origin name accepted (repeatable; default: the loopback names "
                        "when bound to a loopback address, else any)")
    p.add_argument("--naming", choices=MODES, default="dot",
                   help="dot: server.tool (default); underscore: server__tool; pass-through: one server, "
                        "names unchanged; search: the three search meta-tools instead of every tool")
    p.add_argument("--pass-through", dest="naming", action="store_const", const="pass-through",
                   help="the same as --naming pass-through")
    p.add_argument("--require-all", action="store_true",
                   help="fail (and stop every server) if any server fails to start; by default the servers "
                        "that started are served and each failure is reported on stderr")
    p.add_argument("--max-in-flight", type=int, default=64, metavar="N",
                   help="requests of the client served at once (default 64; past it: JSON-RPC error -32000)")
    p.add_argument("--page-size", type=int, default=500, metavar="N", help="items per page of a list (default 500)")
    common(p)


def _report(started: dict[str, dict[str, Any]]) -> None:
    for name, outcome in started.items():
        if not outcome.get("ok"):
            print(f"mcphost: warning: {name} did not start and is not served: {outcome.get('error')}",
                  file=sys.stderr, flush=True)


def _address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigurationError(f"--http takes HOST:PORT (e.g. 127.0.0.1:8808), not {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def _oauth(args: argparse.Namespace) -> Any:
    """The ``--oauth-*`` options as :class:`~mcphost.gateway.oauth.OAuthOptions` (or ``None``)."""
    from ..gateway.oauth import OAuthOptions

    given = [args.oauth_resource, args.oauth_client_id, args.oauth_client_secret_env, args.oauth_scope]
    if args.oauth_issuer is None:
        if any(value is not None for value in given):
            raise ConfigurationError("the --oauth-* options need --oauth-issuer")
        return None
    if args.oauth_resource is None:
        raise ConfigurationError("--oauth-issuer needs --oauth-resource, the public URL of this endpoint")
    secret = None
    if args.oauth_client_secret_env:
        secret = os.environ.get(args.oauth_client_secret_env)
        if not secret:
            raise ConfigurationError(f"--oauth-client-secret-env {args.oauth_client_secret_env}: the variable is "
                                     "not set or empty")
    return OAuthOptions(args.oauth_issuer, args.oauth_resource, client_id=args.oauth_client_id,
                        client_secret=secret, scopes=args.oauth_scope)


def serve(args: argparse.Namespace) -> int:
    """Run ``mcphost serve``; the exit status."""
    from ..gateway.app import serve_http, serve_stdio
    from ..gateway.http import HttpOptions
    from .commands import config_path

    given = cli_inputs.parse_inputs(args.input)
    # stdin is the protocol: an ${input:...} is never asked interactively.
    options: dict[str, Any] = {"inputs": cli_inputs.resolver(given, os.environ, False), "handle_signals": False,
                               "require_all": bool(args.require_all), "started": _report}
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
        if args.http is None:
            await serve_stdio(config, naming=args.naming, limits=limits, **options)
            return
        host, port = _address(args.http)
        token = None
        if args.token_env:
            token = os.environ.get(args.token_env)
            if not token:
                raise ConfigurationError(f"--token-env {args.token_env}: the variable is not set or empty")
        state_key = os.environ.get(args.state_key_env) if args.state_key_env else None
        if args.state_key_env and not state_key:
            raise ConfigurationError(f"--state-key-env {args.state_key_env}: the variable is not set or empty")
        http = HttpOptions(token=token, oauth=_oauth(args), allowed_hosts=args.allow_host, state_key=state_key)

        def ready(address: tuple[str, int]) -> None:
            print(f"mcphost: serving MCP on http://{address[0]}:{address[1]}{http.path}", file=sys.stderr, flush=True)

        await serve_http(config, host, port, naming=args.naming, limits=limits, http=http, ready=ready, **options)

    with contextlib.suppress(asyncio.CancelledError, KeyboardInterrupt):
        asyncio.run(main())
    return 128 + int(stopped[0]) if stopped else 0

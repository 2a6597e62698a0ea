"""The ``mcphost`` command line (layer 5).

``inspect`` starts the servers of an mcp.json and shows what each offers (``--watch``:
again after every change of the file); ``tools`` prints their tools for a model API;
``call`` calls one tool and prints its result; ``shell`` keeps the servers running and
calls tools one after another; ``check`` validates a configuration without starting
anything; ``serve`` serves them all as one MCP server (the gateway); ``auth
login|status|logout`` keeps OAuth logins for the others. Errors are one clear line per
problem (``mcphost: error: ...``, with what a failed server's stderr says) and never a
traceback. Exit status: 0 success; 1 a failure at run time (a tool's ``isError`` result, an
unknown tool, a failed start); 2 bad usage or configuration; 3 some servers failed and the
others were served (``--partial``); 130 after Ctrl-C; 143 after SIGTERM.

This module parses the command line; ``commands`` runs ``inspect``, ``tools`` and ``call``,
``check`` and ``shell`` their namesakes, ``login`` the ``auth`` commands; ``run`` holds a
host for one command (progress, Ctrl-C), ``render`` prints what ``inspect`` found,
``report`` and ``hints`` say what went wrong and what to do next, ``inputs`` asks for
``${input:id}`` values, ``output`` decides where messages and logs go and in which format.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence

from ..errors import ConfigurationError, MCPHostError, ServerStartupError
from ..version import __version__
from . import commands
from .check import check
from .output import LogSetup
from .render import render_inspect
from .report import print_error
from .run import run
from .serve import add_parser as add_serve_parser
from .serve import serve

__all__ = ["main", "render_inspect"]


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of 0 or more, not {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, not {text!r}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcphost",
        description="Start the MCP servers of an mcp.json and show or use what they offer.",
        epilog="exit status: 0 ok; 1 failure; 2 usage or configuration; 3 some servers failed, the others "
               "served; 130 Ctrl-C; 143 SIGTERM",
    )
    parser.add_argument("--version", action="version", version=f"mcphost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--config", dest="config_option", metavar="FILE",
                       help="path of mcp.json (also accepted as the first argument)")
        p.add_argument("--input", action="append", default=[], metavar="ID=VALUE",
                       help="a value for ${input:ID} (repeatable; or MCPHOST_INPUT_<ID>)")
        p.add_argument("-v", "--verbose", action="count", default=0,
                       help="more detail: full stderr of failed servers, logs (-vv: debug and the wire "
                            "trace; -vvv: with message bodies)")
        p.add_argument("--log-format", choices=("text", "json"), default="text",
                       help="json: every line on stderr is one JSON object (mcphost.logs.JSONFormatter)")
        p.add_argument("--retries", type=_count, default=None, metavar="N",
                       help="try a server whose start fails by exiting or timing out N more times "
                            "(default 0: a failure is shown at once; a server's own \"retry\" in mcp.json wins)")
        p.add_argument("--token-dir", metavar="DIR",
                       help="where OAuth logins are kept (default $XDG_CONFIG_HOME/mcphost/tokens, "
                            "else ~/.config/mcphost/tokens)")

    def partial(p: argparse.ArgumentParser) -> None:
        group = p.add_mutually_exclusive_group()
        group.add_argument("--partial", dest="require_all", action="store_false", default=False,
                           help="serve the servers that started; a failed one is reported and the exit "
                                "status is 3 (the default)")
        group.add_argument("--require-all", dest="require_all", action="store_true",
                           help="fail (and stop every server) if any server fails to start")

    p_inspect = sub.add_parser("inspect", help="start the servers and show what each offers")
    p_inspect.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p_inspect.add_argument("--json", action="store_true", help="print the get_tools() structure as JSON")
    p_inspect.add_argument("--server", action="append", metavar="NAME", help="only this server (repeatable)")
    p_inspect.add_argument("--request-timeout", type=_seconds, default=60.0, metavar="S",
                           help="seconds each request (initialize and the lists included) may take "
                                "(default 60; a server's own requestTimeout wins)")
    p_inspect.add_argument("--metrics", action="store_true",
                           help="after the listing, a table per server: start time, tools, calls, errors")
    p_inspect.add_argument("--watch", action="store_true",
                           help="keep the servers running and show the listing again whenever the file changes")
    partial(p_inspect)
    common(p_inspect)

    p_call = sub.add_parser("call", help="call one tool and print its result",
                            usage="mcphost call [options] [CONFIG] TOOL [ARGUMENTS]")
    p_call.add_argument("words", nargs="+", metavar="[CONFIG] TOOL [ARGUMENTS]",
                        help="the config (optional), the tool (server.tool, server__tool or "
                             "mcp__server__tool), and a JSON object of arguments")
    p_call.add_argument("--timeout", type=_seconds, default=None, metavar="S",
                        help="seconds the call may take (default: the server's requestTimeout, or 60)")
    common(p_call)

    p_tools = sub.add_parser("tools", help="print every tool in a model API's format (JSON)")
    p_tools.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p_tools.add_argument("--format", default="openai", dest="format",
                         choices=("openai", "openai-responses", "anthropic", "gemini", "mcp", "generic"),
                         help="the model API whose tool shape and names to use (default openai)")
    p_tools.add_argument("--search", action="store_true", help="the three meta-tools of the search mode instead")
    p_tools.add_argument("--server", action="append", metavar="NAME", help="only this server (repeatable)")
    partial(p_tools)
    common(p_tools)

    p_shell = sub.add_parser("shell", help="start the servers and call tools one after another (a small REPL)")
    p_shell.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p_shell.add_argument("--server", action="append", metavar="NAME", help="only this server (repeatable)")
    p_shell.add_argument("--timeout", type=_seconds, default=None, metavar="S", help="seconds each call may take")
    partial(p_shell)
    common(p_shell)

    p_check = sub.add_parser("check", help="validate a configuration without starting anything")
    p_check.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p_check.add_argument("--strict", action="store_true",
                         help="an unset ${VAR} is an error (by default it is listed as needed at run time)")
    common(p_check)

    add_serve_parser(sub, common)

    p_auth = sub.add_parser("auth", help="log in to a server that uses OAuth, see or forget logins")
    auth_sub = p_auth.add_subparsers(dest="auth_command", metavar="ACTION", required=True)

    p_login = auth_sub.add_parser("login", help="log in to SERVER in a browser and keep the tokens")
    p_login.add_argument("server", metavar="SERVER", help="the server's name in mcp.json")
    p_login.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p_login.add_argument("--no-browser", action="store_true",
                         help="print the address to open instead of opening a browser")
    p_login.add_argument("--timeout", type=_seconds, default=300.0, metavar="S",
                         help="seconds to wait for the browser to come back (default 300)")
    common(p_login)
    p_status = auth_sub.add_parser("status", help="per server: logged in, issuer, scopes, expiry (never a token)")
    p_status.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json, if there is one)")
    p_status.add_argument("--json", action="store_true", help="one JSON array")
    common(p_status)
    p_logout = auth_sub.add_parser("logout", help="forget what is kept for SERVER (tokens and registration)")
    p_logout.add_argument("server", metavar="SERVER", help="the server's name")
    common(p_logout)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    with LogSetup(args.verbose, args.log_format):
        return _dispatch(args)


def _dispatch(args: argparse.Namespace) -> int:
    verbose = bool(args.verbose)
    try:
        if args.command == "inspect":
            return run(lambda ints: commands.inspect(args, ints))
        if args.command == "check":
            return asyncio.run(check(args))
        if args.command == "tools":
            return run(lambda ints: commands.tools(args, ints))
        if args.command == "serve":
            return serve(args)

        if args.command == "auth":
            from . import login

            if args.auth_command == "login":
                return run(lambda ints: login.login(args, ints))
            return asyncio.run(login.status(args) if args.auth_command == "status" else login.logout(args))
        if args.command == "shell":
            from .shell import shell

            return run(lambda ints: shell(args, ints))
        return run(lambda ints: commands.call(args, ints))
    except commands.Reported as done:
        return done.code
    except BrokenPipeError:
        # The reader went away (`mcphost inspect | head -1`): end quietly.
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), sys.stdout.fileno())
        return 0
    except ConfigurationError as exc:
        print_error(exc, verbose)
        return 2
    except ServerStartupError as exc:
        print_error(exc, verbose)
        # Servers that could not even be spawned are a configuration problem.
        return 2 if exc.failures and all(isinstance(e, ConfigurationError) for e in exc.failures.values()) else 1
    except MCPHostError as exc:
        print_error(exc, verbose)
        return 1

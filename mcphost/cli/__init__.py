"""The ``mcphost`` command line (layer 5).

``inspect`` starts the servers of an mcp.json and shows what each offers; ``call`` calls
one tool and prints its result; ``check`` validates a configuration without starting
anything. Errors are one clear line per problem (``mcphost: error: ...``, with what a
failed server's stderr says) and never a traceback; the exit status is 1 for a failure at
run time, 2 for bad usage or configuration, 130 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import difflib
import json
import logging
import os
import shutil
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MCPHostError, RoutingError, ServerStartupError
from ..logs import JSONFormatter
from ..policy import RetryPolicy
from ..version import __version__
from . import inputs as cli_inputs
from .render import Style, render_inspect, render_metrics
from .report import print_error, print_notes
from .run import Interrupts, run, started_host, stop_host

__all__ = ["main", "render_inspect"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcphost",
        description="Start the MCP servers of an mcp.json and show or use what they offer.",
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
                       help="json: one JSON object per log line (mcphost.logs.JSONFormatter)")
        p.add_argument("--retries", type=_count, default=None, metavar="N",
                       help="try a server whose start fails by exiting or timing out N more times "
                            "(default 3; 0: never; a server's own \"retry\" in mcp.json wins)")

    p_inspect = sub.add_parser("inspect", help="start the servers and show what each offers")
    p_inspect.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p_inspect.add_argument("--json", action="store_true", help="print the get_tools() structure as JSON")
    p_inspect.add_argument("--server", action="append", metavar="NAME", help="only this server (repeatable)")
    p_inspect.add_argument("--request-timeout", type=float, default=60.0, metavar="S")
    p_inspect.add_argument("--metrics", action="store_true",
                           help="after the listing, a table per server: start time, tools, calls, errors")
    common(p_inspect)

    p_call = sub.add_parser("call", help="call one tool and print its result")
    p_call.add_argument("words", nargs="+", metavar="[CONFIG] TOOL [ARGUMENTS]",
                        help="the config (optional), server.tool, and a JSON object of arguments")
    p_call.add_argument("--timeout", type=float, default=None, metavar="S", help="request timeout")
    common(p_call)

    p_tools = sub.add_parser("tools", help="print every tool in a model API's format (JSON)")
    p_tools.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    p_tools.add_argument("--format", default="openai", dest="format",
                         choices=("openai", "openai-responses", "anthropic", "gemini", "mcp", "generic"),
                         help="the model API whose tool shape and names to use (default openai)")
    p_tools.add_argument("--search", action="store_true", help="the three meta-tools of the search mode instead")
    p_tools.add_argument("--server", action="append", metavar="NAME", help="only this server (repeatable)")
    common(p_tools)

    p_check = sub.add_parser("check", help="validate a configuration without starting anything")
    p_check.add_argument("config", nargs="?", help="path of mcp.json (default: ./mcp.json)")
    common(p_check)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if args.verbose or args.log_format == "json":
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(JSONFormatter() if args.log_format == "json" else logging.Formatter("%(name)s: %(message)s"))
        logging.basicConfig(level=(logging.WARNING, logging.INFO, logging.DEBUG)[min(args.verbose, 2)],
                            handlers=[handler])
    verbose = bool(args.verbose)
    try:
        if args.command == "inspect":
            return run(lambda ints: _inspect(args, ints))
        if args.command == "check":
            return asyncio.run(_check(args))
        if args.command == "tools":
            return run(lambda ints: _tools(args, ints))
        return run(lambda ints: _call(args, ints))
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


def _config_path(args: argparse.Namespace, positional: str | None) -> str:
    if positional and args.config_option and positional != args.config_option:
        raise ConfigurationError(f"two configurations given: {positional!r} and --config {args.config_option!r}")
    return positional or args.config_option or "mcp.json"


def _options(args: argparse.Namespace) -> dict[str, Any]:
    given = cli_inputs.parse_inputs(args.input)
    options: dict[str, Any] = {"inputs": cli_inputs.resolver(given, os.environ, cli_inputs.interactive_default())}
    if args.verbose >= 3:
        options["trace_bodies"] = True
    retries = getattr(args, "retries", None)
    if retries is not None:
        options["retry"] = RetryPolicy(retries=retries)
    return options


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number of 0 or more, not {text!r}")
    return value


def _missing_inputs(options: dict[str, Any]) -> None:
    missing = getattr(options["inputs"], "missing", [])
    if missing:
        raise cli_inputs.missing_error(missing)


async def _start(interrupts: Interrupts, config: str, **options: Any) -> Any:
    try:
        host = await started_host(interrupts, config, **options)
    except ConfigurationError:
        _missing_inputs(options)
        raise
    print_notes(getattr(host.config, "notes", ()))
    return host


async def _inspect(args: argparse.Namespace, interrupts: Interrupts) -> int:
    options = _options(args)
    config = _config_path(args, args.config)
    host = await _start(interrupts, config, request_timeout=args.request_timeout,
                        servers=args.server, **options)
    try:
        caps = host.get_tools(include_unavailable=True)
        if args.server:
            caps = {name: caps[name] for name in args.server}
        metrics = host.get_metrics()
        if args.json:
            print(json.dumps(caps, indent=2, ensure_ascii=False))
        else:
            tty = sys.stdout.isatty()
            style = Style(tty and "NO_COLOR" not in os.environ)
            width = shutil.get_terminal_size((100, 24)).columns if tty else 100
            print(render_inspect(caps, width=width, style=style, metrics=metrics), end="")
        if args.metrics:
            print(render_metrics(metrics), end="")
    finally:
        await stop_host(host, interrupts)
    return 0


async def _tools(args: argparse.Namespace, interrupts: Interrupts) -> int:
    """Start the servers and print their tools as a model API wants them."""
    host = await _start(interrupts, _config_path(args, args.config), servers=args.server, **_options(args))
    try:
        mode = "search" if args.search else "all"
        tools = host.tools_for(args.format, mode=mode)
        if args.server and not args.search:
            tools = [t for server in args.server for t in host.tools_for(args.format, server=server)]
    finally:
        await stop_host(host, interrupts)
    print(json.dumps(tools, indent=2, ensure_ascii=False))
    return 0


def _split_call_words(words: list[str], config_option: str | None) -> tuple[str | None, str, str]:
    """``[CONFIG] TOOL [ARGUMENTS]`` -> (config, tool, arguments)."""
    if len(words) > 3:
        raise ConfigurationError("call takes [CONFIG] TOOL [ARGUMENTS]: too many arguments")
    if len(words) == 3:
        return words[0], words[1], words[2]
    if len(words) == 2 and not words[1].lstrip().startswith("{") and (
        words[0].endswith((".json", ".jsonc")) or Path(words[0]).is_file()
    ):
        return words[0], words[1], "{}"
    if len(words) == 2:
        return None, words[0], words[1]
    return None, words[0], "{}"


async def _call(args: argparse.Namespace, interrupts: Interrupts) -> int:
    positional, tool, raw = _split_call_words(args.words, args.config_option)
    config = _config_path(args, positional)
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ConfigurationError("arguments must be a JSON object")
    if "." not in tool or tool.startswith("."):
        raise ConfigurationError(f"tool {tool!r} must be qualified as server.tool (see: mcphost inspect)")
    server = tool.partition(".")[0]
    await _known_server(config, server)
    options = _options(args)
    # Only the server called (and what it depends on) is started.
    host = await _start(interrupts, config, servers=[server], **options)
    try:
        started = time.perf_counter()
        result = await host.call_tool(tool, arguments, timeout=args.timeout)
        if args.verbose:
            print(f"mcphost: {tool} answered in {(time.perf_counter() - started) * 1000:.1f} ms", file=sys.stderr)
    finally:
        await stop_host(host, interrupts)
    print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    return 1 if result.get("isError") else 0


async def _known_server(config: str, server: str) -> None:
    """An unknown server is rejected before anything starts, with a suggestion."""
    names = _server_names(config)
    if names is not None and server not in names:
        close = difflib.get_close_matches(server, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        listed = ", ".join(names) or "none"
        raise RoutingError(f"unknown server {server!r} (servers: {listed}){hint}")


def _server_names(config: str) -> list[str] | None:
    """The server names of a configuration file, read without expanding anything (None if
    it cannot be read that way: the full load then reports the problem)."""
    try:
        data = json.loads(Path(config).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    for key in ("mcpServers", "servers", "mcp_servers"):
        block = data.get(key)
        if isinstance(block, dict):
            return list(block)
    return None


async def _check(args: argparse.Namespace) -> int:
    """Load and validate the configuration, start nothing; every problem on its own line."""
    from .. import config as config_mod
    from ..host.configload import load_config, read_config_text

    path = _config_path(args, args.config)
    given = cli_inputs.parse_inputs(args.input)
    text = read_config_text(path)  # a ConfigurationError names what is wrong with the file
    placeholders: dict[str, str] = {}
    with _suppress_config_errors():
        placeholders = {spec.id: given.get(spec.id, "<input>") for spec in config_mod.required_inputs(text, path=path)}
    loaded = await load_config(path, environ=os.environ, inputs=placeholders)
    print_notes(getattr(loaded, "notes", ()))
    names = ", ".join(loaded.servers) or "no servers"
    print(f"mcphost: {os.path.basename(path)} is valid ({len(loaded.servers)} server(s): {names})")
    return 0


class _suppress_config_errors:
    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, value: Any, tb: Any) -> bool:
        return kind is not None and issubclass(kind, ConfigurationError)

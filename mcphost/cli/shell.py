"""``mcphost shell``: the servers stay up, tools are called one after another.

A line is a tool name (``server.tool``, ``server__tool`` or ``mcp__server__tool``) then
its arguments, as a JSON object or as ``key=value`` words (a value that parses as JSON is
taken as such: ``n=3`` is a number, ``name=Paris`` a string). Commands: ``:tools``,
``:resources``, ``:reload`` (apply an edited mcp.json), ``:help``, ``:quit`` (or end of
input). On a terminal with ``readline``, Tab completes server and tool names and the
commands. Lines are read by a daemon thread, so that Ctrl-C or SIGTERM never waits for
the next line; a failed call prints its error and the shell goes on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shlex
import sys
import threading
from typing import Any

from ..errors import ConfigurationError, MCPHostError
from .commands import config_path, options_of, report_failures, start
from .report import clean, print_error
from .run import Interrupts, stop_host

__all__ = ["parse_line", "shell"]

COMMANDS = (":tools", ":resources", ":reload", ":help", ":quit")
_HELP = """\
  server.tool {"key": "value"}    call a tool, arguments as a JSON object
  server.tool key=value n=3       ... or as key=value words (values parsed as JSON when they can be)
  :tools  :resources              what the servers offer
  :reload                         apply an edited configuration file
  :quit                           stop the servers and leave (or end of input)"""


def parse_line(line: str) -> tuple[str, dict[str, Any]]:
    """``tool {json}`` or ``tool key=value ...`` -> (tool, arguments)."""
    tool, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if not rest:
        return tool, {}
    if rest.startswith("{"):
        try:
            arguments = json.loads(rest)
        except json.JSONDecodeError as exc:
            raise ConfigurationError(f"arguments are not valid JSON: {exc}") from None
        if not isinstance(arguments, dict):
            raise ConfigurationError("arguments must be a JSON object")
        return tool, arguments
    out: dict[str, Any] = {}
    try:
        words = shlex.split(rest)
    except ValueError as exc:
        raise ConfigurationError(f"arguments: {exc}") from None
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ConfigurationError(f"argument {word!r}: expected key=value (or a JSON object)")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return tool, out


def _reader(loop: asyncio.AbstractEventLoop, lines: asyncio.Queue[str | None], prompt: str) -> None:
    while True:
        try:
            line: str | None = input(prompt) if prompt else sys.stdin.readline()
            if not prompt and line == "":
                line = None
        except EOFError:
            line = None
        except Exception:  # a closed stdin: the end
            line = None
        loop.call_soon_threadsafe(lines.put_nowait, line)
        if line is None:
            return


def _completion(host: Any) -> None:
    """Tab completion of commands, servers and tools, where readline is available."""
    try:
        import readline
    except ImportError:  # pragma: no cover - Windows without pyreadline
        return

    def names() -> list[str]:
        found = list(COMMANDS)
        for server, info in host.get_tools().items():
            found.extend(f"{server}.{tool['name']}" for tool in info.get("tools", []))
        return found

    def complete(text: str, state: int) -> str | None:
        matches = [n for n in names() if n.startswith(text)]
        return matches[state] if state < len(matches) else None

    readline.set_completer_delims(" \t\n")
    readline.set_completer(complete)
    readline.parse_and_bind("tab: complete")


def _list(host: Any, what: str) -> None:
    for server, info in host.get_tools().items():
        for item in info.get(what, []):
            if what == "tools":
                print(clean(f"{server}.{item.get('name')}  {(item.get('description') or '').strip()[:70]}"))
            else:
                print(clean(f"{item.get('uri')}  {item.get('name', '')}"))
    sys.stdout.flush()


async def shell(args: argparse.Namespace, interrupts: Interrupts) -> int:
    host = await start(interrupts, config_path(args, args.config), verbose=bool(args.verbose), servers=args.server,
                       require_all=args.require_all, **options_of(args))
    verbose = bool(args.verbose)
    try:
        report_failures(host, verbose, args.server)
        tty = sys.stdin.isatty() and sys.stdout.isatty()
        if tty:
            _completion(host)
            print("mcphost shell: a tool and its arguments per line; :help for more; Ctrl-D to leave",
                  file=sys.stderr)
        lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        threading.Thread(target=_reader, args=(loop, lines, "mcphost> " if tty else ""), daemon=True,
                         name="mcphost-shell-input").start()
        failures = 0
        while True:
            line = await lines.get()
            if line is None:
                break
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if line in (":quit", ":q", ":exit"):
                break
            if line == ":help":
                print(_HELP)
            elif line == ":tools":
                _list(host, "tools")
            elif line == ":resources":
                _list(host, "resources")
            elif line == ":reload":
                try:
                    summary = await host.reload()
                except MCPHostError as exc:
                    print_error(exc, verbose)
                    continue
                touched = {k: v for k, v in summary.items() if v}
                print(f"mcphost: reloaded: {json.dumps(touched, default=str)}", file=sys.stderr)
            elif line.startswith(":"):
                print(f"mcphost: error: unknown command {line.split()[0]!r} (commands: {', '.join(COMMANDS)})",
                      file=sys.stderr)
            else:
                failures += not await _call_line(host, line, args, verbose)
            sys.stdout.flush()
    finally:
        await stop_host(host, interrupts)
    return 1 if failures else 0


async def _call_line(host: Any, line: str, args: argparse.Namespace, verbose: bool) -> bool:
    from .commands import did_you_mean

    try:
        tool, arguments = parse_line(line)
        try:
            result = await host.call_tool(tool, arguments, timeout=args.timeout)
        except MCPHostError as exc:
            server = tool.partition(".")[0] if "." in tool else None
            if server is not None and server in host.servers and "did you mean" not in str(exc) \
                    and "unknown tool" in str(exc):
                exc.message += did_you_mean(host, tool, server)
                exc.args = (exc.message,)
            raise
    except MCPHostError as exc:
        print_error(exc, verbose)
        return False
    print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    return not result.get("isError")

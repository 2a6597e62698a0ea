"""The ``mcphost`` command line: ``inspect`` the servers of an mcp.json, ``call`` a tool.

Layer 4. Errors are printed as one clear line per problem (``mcphost: error: ...``) and
the exit status is non-zero: 1 for a failure at run time, 2 for bad usage or
configuration, 130 after Ctrl-C. Ctrl-C and SIGTERM still shut every server down.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from .bounds import CONTROL
from .errors import ConfigurationError, MCPHostError, ServerStartupError
from .version import __version__

__all__ = ["main", "render_inspect"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcphost",
        description="Start the MCP servers of an mcp.json and show or use what they offer.",
    )
    parser.add_argument("--version", action="version", version=f"mcphost {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p_inspect = sub.add_parser("inspect", help="start the servers and show what each offers")
    p_inspect.add_argument("config", nargs="?", default="mcp.json", help="path of mcp.json (default: ./mcp.json)")
    p_inspect.add_argument("--json", action="store_true", help="print the get_tools() structure as JSON")
    p_inspect.add_argument("--request-timeout", type=float, default=60.0, metavar="S")

    p_call = sub.add_parser("call", help="call one tool and print its result")
    p_call.add_argument("--config", default="mcp.json", help="path of mcp.json (default: ./mcp.json)")
    p_call.add_argument("tool", help="qualified tool name: server.tool")
    p_call.add_argument("arguments", nargs="?", default="{}", help="JSON object of arguments")
    p_call.add_argument("--timeout", type=float, default=None, metavar="S", help="request timeout")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        if args.command == "inspect":
            return asyncio.run(_inspect(args))
        return asyncio.run(_call(args))
    except KeyboardInterrupt:
        print("mcphost: interrupted; servers were shut down", file=sys.stderr)
        return 130
    except ConfigurationError as exc:
        _error(exc)
        return 2
    except MCPHostError as exc:
        _error(exc)
        return 1


def _error(exc: MCPHostError) -> None:
    if isinstance(exc, ServerStartupError) and exc.failures:
        for err in exc.failures.values():
            print(f"mcphost: error: {_clean(_one_line(err))}", file=sys.stderr)
        return
    print(f"mcphost: error: {_clean(_one_line(exc))}", file=sys.stderr)


def _one_line(exc: MCPHostError) -> str:
    text = str(exc)
    first, _, _ = text.partition("\n")
    first = first.removesuffix("; last stderr lines:")
    tail = getattr(exc, "stderr_tail", None)
    if tail:
        first += f" (stderr: {tail[-1].strip()})"
    return first


async def _progress(host: Any, out: TextIO) -> None:
    """Tell the user which servers are still being waited on, and for how long."""
    started = time.monotonic()
    tty = out.isatty()
    last_line = 0.0
    while True:
        await asyncio.sleep(0.25)
        waiting = [name for name, h in host.servers.items() if h.state == "starting"]
        if not waiting:
            continue
        elapsed = time.monotonic() - started
        text = f"waiting for {', '.join(waiting)} ({elapsed:.1f} s)"
        if tty:
            out.write("\r\x1b[K" + text)
            out.flush()
        elif elapsed - last_line >= 2.0:
            last_line = elapsed
            out.write(text + "\n")
            out.flush()


async def _started_host(config: str, **options: Any) -> Any:
    from .host import MCPHost

    host = MCPHost(config, **options)
    err = sys.stderr
    ticker = asyncio.get_running_loop().create_task(_progress(host, err))
    try:
        await host.initialize()
    finally:
        ticker.cancel()
        if err.isatty():
            err.write("\r\x1b[K")
            err.flush()
    return host


async def _inspect(args: argparse.Namespace) -> int:
    host = await _started_host(args.config, request_timeout=args.request_timeout)
    try:
        caps = host.get_tools()
        if args.json:
            print(json.dumps(caps, indent=2, ensure_ascii=False))
        else:
            print(render_inspect(caps))
    finally:
        await host.shutdown()
    return 0


async def _call(args: argparse.Namespace) -> int:
    try:
        arguments = json.loads(args.arguments)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ConfigurationError("arguments must be a JSON object")
    # Only the server called (and what it depends on) is started.
    server = args.tool.partition(".")[0] if "." in args.tool else None
    host = await _started_host(args.config, servers=[server] if server else None)
    try:
        result = await host.call_tool(args.tool, arguments, timeout=args.timeout)
    finally:
        await host.shutdown()
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 1 if result.get("isError") else 0


def _type_of(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    t = schema.get("type")
    if isinstance(t, list):
        return "|".join(str(x) for x in t)
    if isinstance(t, str):
        if t == "array":
            return f"array[{_type_of(schema.get('items'))}]"
        return t
    if "enum" in schema:
        return "enum"
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            # dict.fromkeys: each alternative once, in order ("string|string" says nothing)
            return "|".join(dict.fromkeys(_type_of(s) for s in schema[key]))
    return "any"


def _params(tool: dict[str, Any]) -> str:
    schema = tool.get("inputSchema") or {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return "()"
    required = set(schema.get("required") or [])
    parts = []
    for name, sub in props.items():
        mark = "" if name in required else "?"
        parts.append(f"{name}{mark}: {_type_of(sub)}")
    return "(" + ", ".join(parts) + ")"


def _clean(text: Any) -> str:
    """What a server sent, safe to print: control and formatting characters (escape
    sequences that retitle the terminal or overwrite lines, bidi overrides) are shown as
    ``\\xNN`` escapes instead of acting."""
    text = text if isinstance(text, str) else str(text)
    return CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _short(text: Any, width: int = 70) -> str:
    if not isinstance(text, str):
        return ""
    line = _clean(" ".join(text.split()))
    return line if len(line) <= width else line[: width - 1] + "…"


def render_inspect(caps: dict[str, Any]) -> str:
    """The human-readable report of ``get_tools()``."""
    lines: list[str] = []
    for name, info in caps.items():
        server_info = info.get("serverInfo") or {}
        ident = f"{server_info.get('name', '?')} {server_info.get('version', '')}".strip()
        lines.append(
            f"== {name}  [{info['state']}]  protocol {_clean(info.get('protocolVersion') or '-')}  ({_clean(ident)})"
        )
        tools = info.get("tools") or []
        lines.append(f"  tools ({len(tools)}):")
        for tool in tools:
            lines.append(_clean(f"    {name}.{tool.get('name')}{_params(tool)}"))
            desc = _short(tool.get("description"))
            if desc:
                lines.append(f"        {desc}")
        prompts = info.get("prompts") or []
        if prompts:
            lines.append(f"  prompts ({len(prompts)}):")
            for prompt in prompts:
                args = ", ".join(
                    a.get("name", "?") + ("" if a.get("required") else "?")
                    for a in prompt.get("arguments") or []
                    if isinstance(a, dict)
                )
                lines.append(_clean(f"    {name}.{prompt.get('name')}({args})"))
        resources = info.get("resources") or []
        if resources:
            lines.append(f"  resources ({len(resources)}):")
            for res in resources[:50]:
                lines.append(f"    {_clean(res.get('uri'))}  {_short(res.get('name'), 40)}")
            if len(resources) > 50:
                lines.append(f"    … and {len(resources) - 50} more")
        templates = info.get("resourceTemplates") or []
        if templates:
            lines.append(f"  resource templates ({len(templates)}):")
            for tpl in templates:
                lines.append(f"    {_clean(tpl.get('uriTemplate'))}  {_short(tpl.get('name'), 40)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"

"""The commands that start servers: ``inspect`` (and ``--watch``), ``tools``, ``call``.

``inspect`` and ``tools`` serve what started (``--partial``, their default): a server that
fails is reported on stderr, once, with its reason and a hint when there is one, and is
listed as failed; the exit status says some failed (3). ``--require-all`` makes any failure
fail the command. ``call`` starts only the server it needs, accepts every name the docs
accept (``server.tool``, ``server__tool``, ``mcp__server__tool``) and suggests a close one
for a name it does not know; on a terminal a long call's progress is one line rewritten in
place (JSON lines with ``--log-format json``).
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
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError, MCPHostError, RoutingError, ServerStartupError
from ..logs import JSONFormatter
from . import inputs as cli_inputs
from .hints import hints
from .login import no_login, token_store
from .render import Style, render_inspect, render_metrics
from .report import print_error, print_notes
from .run import Interrupts, started_host, stop_host

__all__ = ["EXIT_PARTIAL", "Reported", "call", "inspect", "options_of", "tools"]

logger = logging.getLogger("mcphost.cli")

#: Some servers failed to start; the others were served.
EXIT_PARTIAL = 3


def options_of(args: argparse.Namespace) -> dict[str, Any]:
    """The MCPHost options of the command line (inputs, retries, bodies in the trace)."""
    from ..policy import RetryPolicy

    given = cli_inputs.parse_inputs(args.input)
    options: dict[str, Any] = {"inputs": cli_inputs.resolver(given, os.environ, cli_inputs.interactive_default())}
    if args.verbose >= 3:
        options["trace_bodies"] = True
    # A start that fails is shown at once: the command line does not try again unless
    # asked (--retries N, or the server's own "retry" in mcp.json).
    options["retry"] = RetryPolicy(retries=args.retries if args.retries is not None else 0)
    # Logins kept by `mcphost auth login` are used; one still to be made is not started
    # from here (its hint names the command). Servers with an "auth" entry get their
    # authorizer anyway; one without gets the OAuth flow only once some login is kept (a
    # 401 of a server that is not OAuth at all is then said as it came).
    store = token_store(args)
    options["token_store"] = store
    if store.servers():
        options["on_authorize"] = no_login
    return options


def config_path(args: argparse.Namespace, positional: str | None) -> str:
    if positional and args.config_option and positional != args.config_option:
        raise ConfigurationError(f"two configurations given: {positional!r} and --config {args.config_option!r}")
    return positional or args.config_option or "mcp.json"


def _missing_inputs(options: dict[str, Any]) -> None:
    missing = getattr(options["inputs"], "missing", [])
    if missing:
        raise cli_inputs.missing_error(missing)


class Reported(Exception):
    """A failure already told on stderr; ends the command with ``code``."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


async def start(interrupts: Interrupts, config: str, *, verbose: bool = False, **options: Any) -> Any:
    try:
        host = await started_host(interrupts, config, **options)
    except ConfigurationError:
        _missing_inputs(options)
        raise
    except ServerStartupError as exc:
        # All or nothing (call, --require-all): every failure, then what could help.
        host = interrupts.host
        failures = exc.failures or {exc.server or "": exc}
        print_error(exc, verbose, remote=remote_names(host))
        for name, err in failures.items():
            handle = host.servers.get(name)
            if handle is not None:
                for line in hints(name, err, handle.config, os.environ):
                    print(f"mcphost: hint: {line}", file=sys.stderr)
        only_config = bool(exc.failures) and all(isinstance(e, ConfigurationError) for e in exc.failures.values())
        raise Reported(2 if only_config else 1) from None
    print_notes(getattr(host.config, "notes", ()))
    return host


def remote_names(host: Any) -> frozenset[str]:
    return frozenset(n for n, h in host.servers.items() if getattr(h.config, "type", "stdio") != "stdio")


def report_failures(host: Any, verbose: bool, names: list[str] | None = None) -> tuple[int, int]:
    """Print why each failed server failed (and a hint); returns (failed, ready)."""
    failed = ready = 0
    for name, handle in host.servers.items():
        if names and name not in names:
            continue
        state = handle.state.value
        if state == "ready":
            ready += 1
        elif state in ("failed", "unavailable") and handle.error is not None:
            failed += 1
            print_error(handle.error, verbose, remote=remote_names(host))
            for line in hints(name, handle.error, handle.config, os.environ):
                print(f"mcphost: hint: {line}", file=sys.stderr)
    return failed, ready


def partial_status(failed: int, ready: int, only_config: bool) -> int:
    if not failed:
        return 0
    if ready:
        return EXIT_PARTIAL
    return 2 if only_config else 1


def _only_config_errors(host: Any) -> bool:
    errors = [h.error for h in host.servers.values() if h.state.value == "failed" and h.error is not None]
    return bool(errors) and all(isinstance(e, ConfigurationError) for e in errors)


async def inspect(args: argparse.Namespace, interrupts: Interrupts) -> int:
    options = options_of(args)
    config = config_path(args, args.config)
    host = await start(interrupts, config, verbose=bool(args.verbose), request_timeout=args.request_timeout, servers=args.server,
                       require_all=args.require_all, watch=args.watch, **options)
    try:
        failed, ready = report_failures(host, bool(args.verbose), args.server)
        status = partial_status(failed, ready, _only_config_errors(host))
        _print_listing(host, args)
        if args.watch:
            await _watch(host, args)
    finally:
        await stop_host(host, interrupts)
    return status


def _print_listing(host: Any, args: argparse.Namespace) -> None:
    caps = host.get_tools(include_unavailable=True)
    if args.server:
        caps = {name: caps[name] for name in args.server if name in caps}
    metrics = host.get_metrics()
    if args.json:
        print(json.dumps(caps, indent=2, ensure_ascii=False, default=str))
    else:
        tty = sys.stdout.isatty()
        style = Style(tty and "NO_COLOR" not in os.environ)
        width = shutil.get_terminal_size((100, 24)).columns if tty else 100
        print(render_inspect(caps, width=width, style=style, metrics=metrics), end="")
    if args.metrics:
        print(render_metrics(metrics), end="")
    sys.stdout.flush()


async def _watch(host: Any, args: argparse.Namespace) -> None:
    """Print the listing again after every change of the file, until Ctrl-C."""
    changed: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    def on_event(event: dict[str, Any]) -> None:
        if event.get("type") in ("config_reloaded", "config_reload_failed"):
            changed.put_nowait(event)

    host.on_event(on_event)
    print("mcphost: watching the configuration for changes (Ctrl-C to stop)", file=sys.stderr)
    while True:
        event = await changed.get()
        if event["type"] == "config_reload_failed":
            print(f"mcphost: error: configuration not reloaded: {event['data']}", file=sys.stderr)
            continue
        summary = event["data"]
        touched = [f"{key} {', '.join(summary[key])}" for key in ("added", "removed", "changed", "updated")
                   if summary.get(key)]
        print(f"mcphost: configuration reloaded: {'; '.join(touched) or 'nothing changed'}", file=sys.stderr)
        report_failures(host, bool(args.verbose), list(summary.get("failed") or ()) or None)
        _print_listing(host, args)


async def tools(args: argparse.Namespace, interrupts: Interrupts) -> int:
    """Start the servers and print their tools as a model API wants them."""
    host = await start(interrupts, config_path(args, args.config), verbose=bool(args.verbose), servers=args.server,
                       require_all=args.require_all, **options_of(args))
    try:
        failed, ready = report_failures(host, bool(args.verbose), args.server)
        mode = "search" if args.search else "all"
        listed = host.tools_for(args.format, mode=mode)
        if args.server and not args.search:
            listed = [t for server in args.server if host.servers[server].state.value == "ready"
                      for t in host.tools_for(args.format, server=server)]
    finally:
        await stop_host(host, interrupts)
    print(json.dumps(listed, indent=2, ensure_ascii=False))
    return partial_status(failed, ready, _only_config_errors(host))


def split_call_words(words: list[str]) -> tuple[str | None, str, str]:
    """``[CONFIG] TOOL [ARGUMENTS]`` -> (config, tool, arguments)."""
    if len(words) > 3:
        raise ConfigurationError("call takes [CONFIG] TOOL [ARGUMENTS] (one tool per call): too many arguments")
    if len(words) == 3:
        return words[0], words[1], words[2]
    if len(words) == 2 and not words[1].lstrip().startswith("{") and (
        words[0].endswith((".json", ".jsonc")) or Path(words[0]).is_file()
    ):
        return words[0], words[1], "{}"
    if len(words) == 2:
        return None, words[0], words[1]
    return None, words[0], "{}"


def arguments_of(raw: str) -> dict[str, Any]:
    try:
        arguments = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigurationError(f"arguments are not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        raise ConfigurationError("arguments must be a JSON object")
    return arguments


def server_of(tool: str, names: list[str] | None) -> str:
    """The server a tool name belongs to: ``server.tool``, ``server__tool`` or
    ``mcp__server__tool`` (docs/llm.md), checked against the configuration's servers."""
    if "." in tool and not tool.startswith("."):
        server = tool.partition(".")[0]
        if names is None or server in names or "__" not in server:
            _known(server, names)
            return server
    bare = tool[len("mcp__"):] if tool.startswith("mcp__") else tool
    if names is not None:
        # The longest server name the alias starts with (server names may hold "_").
        matching = sorted((n for n in names if bare.startswith(n + "__") or tool.startswith(n + "__")), key=len)
        if matching:
            return matching[-1]
        if "__" in bare:
            _known(bare.partition("__")[0], names)
    elif "__" in bare:
        return bare.partition("__")[0]
    raise ConfigurationError(
        f"tool {tool!r} must be qualified as server.tool (or server__tool, mcp__server__tool; see: mcphost tools)"
    )


def _known(server: str, names: list[str] | None) -> None:
    """An unknown server is rejected before anything starts, with a suggestion."""
    if names is not None and server not in names:
        close = difflib.get_close_matches(server, names, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        listed = ", ".join(names) or "none"
        raise RoutingError(f"unknown server {server!r} (servers: {listed}){hint}")


def server_names(config: str) -> list[str] | None:
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


def did_you_mean(host: Any, name: str, server: str) -> str:
    """A close known name (canonical or alias) for an unknown tool ``name``."""
    known = [f"{server}.{t['name']}" for t in host.get_tools(server).get(server, {}).get("tools", [])]
    known += [t["name"] for t in host.tools_for("anthropic", server=server)]
    known += ["mcp__" + t["name"] for t in host.tools_for("anthropic", server=server)]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


class Progress:
    """A call's progress: one line rewritten on a terminal, a JSON line in JSON mode, a
    line each with ``-v``; nothing otherwise (stdout stays the result only)."""

    def __init__(self, tool: str, json_mode: bool, verbose: bool) -> None:
        self.tool = tool
        self.tty = sys.stderr.isatty() and not json_mode
        self.json_mode = json_mode
        self.verbose = verbose
        self.shown = False

    @property
    def wanted(self) -> bool:
        return self.tty or self.json_mode or self.verbose

    def __call__(self, params: dict[str, Any]) -> None:
        progress, total, message = params.get("progress"), params.get("total"), params.get("message")
        amount = f"{progress}/{total}" if total else f"{progress}"
        message = message if isinstance(message, str) else None
        text = f"{self.tool}: progress {amount}" + (f": {message}" if message else "")
        if self.json_mode:
            # Shown at every verbosity: written as a record, not filtered by the log level.
            record = logger.makeRecord(logger.name, logging.INFO, "(cli)", 0, "%s", (text,), None)
            record.event, record.tool = "call_progress", self.tool
            print(JSONFormatter().format(record), file=sys.stderr, flush=True)
        elif self.tty:
            from .report import clean

            sys.stderr.write("\r\x1b[K" + clean(text)[: shutil.get_terminal_size((100, 24)).columns - 1])
            sys.stderr.flush()
            self.shown = True
        else:
            print(f"mcphost: {text}", file=sys.stderr)

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


async def call(args: argparse.Namespace, interrupts: Interrupts) -> int:
    positional, tool, raw = split_call_words(args.words)
    config = config_path(args, positional)
    arguments = arguments_of(raw)
    server = server_of(tool, server_names(config))
    options = options_of(args)
    # Only the server called (and what it depends on) is started.
    host = await start(interrupts, config, verbose=bool(args.verbose), servers=[server], **options)
    progress = Progress(tool, args.log_format == "json", bool(args.verbose))
    try:
        started = time.perf_counter()
        try:
            result = await host.call_tool(tool, arguments, timeout=args.timeout,
                                          progress=progress if progress.wanted else None)
        except RoutingError as exc:
            if "did you mean" not in str(exc) and exc.server in (None, server):
                hint = did_you_mean(host, tool, server)
                if hint:
                    raise RoutingError(f"{exc.message}{hint}", server=exc.server) from None
            raise
        finally:
            progress.done()
        if args.verbose:
            print(f"mcphost: {tool} answered in {(time.perf_counter() - started) * 1000:.1f} ms", file=sys.stderr)
    except MCPHostError:
        await stop_host(host, interrupts)
        raise
    await stop_host(host, interrupts)
    print(json.dumps(result, indent=2, ensure_ascii=False, default=str))
    return 1 if result.get("isError") else 0

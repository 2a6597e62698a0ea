"""Instructions per ``tools/call``: mcphost against the floor, counted, not timed.

Wall-clock ratios on a shared machine move by a tenth from one run to the next. This
counts what the client itself executes, which is the same on every run: each client is
run under ``valgrind --tool=callgrind`` twice (``--calls`` and three times as many), with
its server replaced by a stub in the client's own process that answers every request of a
loop turn in one chunk in the next turn (no pipe, no system call, no other process), and
the difference of the two totals is divided by the difference of the call counts. The
garbage collector is off (its cost depends on the heap, not the call path).

``--without`` prices one of mcphost's checks by turning it off: ``arguments`` (the
``inputSchema`` validation), ``messages`` (the result checks), ``histogram`` (the latency
metrics). ``--by-function`` runs no callgrind: it prints, for each client, the interpreter
steps per call of each Python function (where the instructions go; callgrind only sees the
interpreter's own functions). Run from the repository root, with valgrind on PATH::

    python benchmarks/call_cost.py [--case concurrent|sequential|concurrent+progress]
                                   [--calls 2000] [--without arguments ...] [--by-function]

It prints one line per client and the ratio. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import functools
import gc
import os
import re
import subprocess
import sys
import time
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import _benchutil
from _benchutil import ECHO_SERVER

_benchutil.ensure_repo_on_path()

_ID_AT = len(b'{"jsonrpc":"2.0","id":')
_WARM = 400


def _stub(deliver: Callable[[bytes], None], progress: bool) -> Callable[[bytes], None]:
    """A ``write`` whose requests are answered, in one chunk, in the next loop turn."""
    out: list[bytes] = []
    scheduled = [False]
    loop = asyncio.get_running_loop()

    def flush() -> None:
        scheduled[0] = False
        data = b"\n".join(out) + b"\n"
        out.clear()
        deliver(data)

    def write(data: bytes) -> None:
        for line in data.split(b"\n"):
            if not line.startswith(b'{"jsonrpc":"2.0","id":'):
                continue  # notifications
            rid = line[_ID_AT:line.index(b",", _ID_AT)]
            if progress:
                out.append(b'{"jsonrpc":"2.0","method":"notifications/progress",'
                           b'"params":{"progressToken":%s,"progress":1}}' % rid)
            out.append(b'{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}' % rid)
        if not scheduled[0]:
            scheduled[0] = True
            loop.call_soon(flush)

    return write


class _Writer:
    def __init__(self, write: Callable[[bytes], None]) -> None:
        self.write = write


async def _client(impl: str, case: str, without: list[str]) -> Callable[[dict[str, Any]], Any]:
    progress = "progress" in case
    args = [ECHO_SERVER, *(["--progress"] if progress else [])]
    if impl == "floor":
        from floor_client import FloorClient

        floor = FloorClient([sys.executable, *args], progress=progress)
        await floor.start()
        floor._stdin = _Writer(_stub(floor._feed, progress))
        return floor.call
    from mcphost import MCPHost

    if "histogram" in without:
        from collections import deque

        from mcphost.host.router import ToolRoute
        from mcphost.metrics.histogram import Histogram

        Histogram.record = lambda self, seconds: None  # type: ignore[method-assign]
        Histogram.record_ns = lambda self, ns: None  # type: ignore[method-assign]
        init = ToolRoute.__init__

        def no_histogram(self: ToolRoute, *args: Any) -> None:
            init(self, *args)
            self.pending = deque(maxlen=0)  # type: ignore[assignment]  # call_tool's append: kept nowhere

        ToolRoute.__init__ = no_histogram  # type: ignore[method-assign]
    host = MCPHost(
        {"mcpServers": {"echo": {"command": sys.executable, "args": args}}},
        validate_arguments="arguments" not in without,
        validate_messages="off" if "messages" in without else "lenient",
    )
    await host.initialize()
    transport = host.servers["echo"].session.peer.transport
    transport.process.write = _stub(transport._on_stdout, progress)
    noop: Callable[[Any], None] = lambda params: None  # noqa: E731
    if progress:
        return functools.partial(host.call_tool, "echo.echo", progress=noop)
    return functools.partial(host.call_tool, "echo.echo")


async def _run(impl: str, case: str, calls: int, without: list[str], by_function: bool = False) -> None:
    from bench_calls import run_concurrent, run_sequential

    call = await _client(impl, case, without)
    run = run_sequential if case == "sequential" else run_concurrent
    await run(call, _WARM)
    gc.disable()
    if by_function:
        await _steps_by_function(impl, run, call, calls)
    else:
        await run(call, calls)
    os._exit(0)  # what follows (shutdown) is not counted


async def _steps_by_function(impl: str, run: Any, call: Any, calls: int) -> None:
    """Interpreter steps per call, by function (``sys.settrace`` with ``f_trace_opcodes``):
    which Python function the instructions go to (callgrind sees only the interpreter's)."""
    steps: collections.Counter[tuple[str, str]] = collections.Counter()

    def step(frame: types.FrameType, event: str, arg: Any) -> Any:
        if event == "opcode":
            code = frame.f_code
            steps[(os.path.basename(code.co_filename), getattr(code, "co_qualname", code.co_name))] += 1
        return step

    def enter(frame: types.FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        return step

    sys.settrace(enter)
    try:
        await run(call, calls)
    finally:
        sys.settrace(None)
    print(f"{impl}: {sum(steps.values()) / calls:,.0f} interpreter steps per call")
    for (where, name), count in steps.most_common(30):
        print(f"{count / calls:8.1f}  {where}: {name}")


def _count(impl: str, case: str, calls: int, without: list[str]) -> int:
    argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable,
            __file__, "--child", impl, "--case", case, "--calls", str(calls)]
    for what in without:
        argv += ["--without", what]
    done = subprocess.run(argv, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", done.stderr)
    if found is None:
        raise SystemExit(f"callgrind printed no count:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--case", default="concurrent", choices=["concurrent", "sequential", "concurrent+progress"])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--without", action="append", default=[], choices=["arguments", "messages", "histogram"])
    parser.add_argument("--by-function", action="store_true",
                        help="no callgrind: interpreter steps per call by Python function, for each client")
    parser.add_argument("--child", choices=["floor", "mcphost"], help=argparse.SUPPRESS)
    parser.add_argument("--steps", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        asyncio.run(_run(opts.child, opts.case, opts.calls, opts.without, opts.steps))
        return 0
    if opts.by_function:
        for impl in ("floor", "mcphost"):
            argv_ = [sys.executable, __file__, "--child", impl, "--case", opts.case, "--calls", str(opts.calls)]
            subprocess.run([*argv_, *(f"--without={what}" for what in opts.without), "--steps"], check=False)
        return 0
    started = time.perf_counter()
    per_call = {}
    for impl in ("floor", "mcphost"):
        with ThreadPoolExecutor(2) as pool:  # the two counts side by side
            few, many = pool.map(functools.partial(_count, impl, opts.case, without=opts.without),
                                 (opts.calls, 3 * opts.calls))
        per_call[impl] = (many - few) / (2 * opts.calls)
        print(f"{impl:8s} {per_call[impl]:10,.0f} instructions per call", flush=True)
    print(f"ratio floor/mcphost {per_call['floor'] / per_call['mcphost']:.3f}; mcphost adds "
          f"{per_call['mcphost'] - per_call['floor']:,.0f} per call "
          f"({opts.case}{', without ' + ', '.join(opts.without) if opts.without else ''}; "
          f"{time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

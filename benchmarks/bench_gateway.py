"""The latency the gateway adds: one call through ``mcphost serve`` against the same call made
to the server directly (p50 and p99 of sequential calls).

Three paths to ``benchmarks/echo_server.py``, each measured with mcphost's own client:

- ``direct``: the client spawns the echo server itself (stdio);
- ``gateway stdio``: the client spawns ``mcphost serve --stdio``, which spawns the echo server;
- ``gateway http``: the client calls ``mcphost serve --http`` (in this process, on
  127.0.0.1), which spawns the echo server.

Run: ``python benchmarks/bench_gateway.py [--calls N]`` (1,000 by default). With
``--clients C`` it also runs C clients at once over HTTP, each making N calls, and prints the
errors (there should be none) and the latency of those calls. Figures are printed, never
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcphost import MCPHost  # noqa: E402
from mcphost.gateway.app import Gateway  # noqa: E402
from mcphost.gateway.http import HttpGateway  # noqa: E402

ECHO = {"command": sys.executable, "args": [str(ROOT / "benchmarks" / "echo_server.py")]}
ENV = {"PYTHONPATH": str(ROOT)}


async def timed(host: MCPHost, tool: str, calls: int) -> list[float]:
    for _ in range(50):  # warm-up
        await host.call_tool(tool, {"text": "x"})
    out = []
    for _ in range(calls):
        started = time.perf_counter()
        await host.call_tool(tool, {"text": "x"})
        out.append((time.perf_counter() - started) * 1e6)
    return out


def quantiles(samples: list[float]) -> tuple[float, float]:
    cuts = statistics.quantiles(samples, n=100)
    return cuts[49], cuts[98]


async def concurrent(clients: int, calls: int) -> None:
    """``clients`` mcphost clients at once over HTTP, ``calls`` calls each."""
    async with Gateway({"mcpServers": {"echo": ECHO}}, handle_signals=False) as gateway:
        front = HttpGateway(gateway)
        _, port = await front.start("127.0.0.1", 0)
        url = f"http://127.0.0.1:{port}/mcp"
        errors = 0
        samples: list[float] = []

        async def one() -> None:
            nonlocal errors
            async with MCPHost({"mcpServers": {"gw": {"type": "http", "url": url}}}, handle_signals=False) as host:
                for _ in range(calls):
                    started = time.perf_counter()
                    try:
                        await host.call_tool("gw.echo.echo", {"text": "x"})
                    except Exception:
                        errors += 1
                    samples.append((time.perf_counter() - started) * 1e6)

        began = time.perf_counter()
        try:
            await asyncio.gather(*(one() for _ in range(clients)))
        finally:
            await front.aclose()
        elapsed = time.perf_counter() - began
        p50, p99 = quantiles(samples)
        print(f"{clients} clients x {calls} calls over HTTP: {errors} errors, {len(samples) / elapsed:.0f} calls/s, "
              f"p50 {p50:.0f} us, p99 {p99:.0f} us")


async def main(calls: int, clients: int = 0) -> None:
    results: dict[str, tuple[float, float]] = {}
    async with MCPHost({"mcpServers": {"echo": ECHO}}, handle_signals=False) as host:
        results["direct"] = quantiles(await timed(host, "echo.echo", calls))
    config_path = ROOT / "benchmarks" / ".gateway-bench.json"
    import json

    config_path.write_text(json.dumps({"mcpServers": {"echo": ECHO}}))
    try:
        serve = {"command": sys.executable, "args": ["-m", "mcphost", "serve", "--stdio", str(config_path)],
                 "env": ENV}
        async with MCPHost({"mcpServers": {"gw": serve}}, handle_signals=False) as host:
            results["gateway stdio"] = quantiles(await timed(host, "gw.echo.echo", calls))
    finally:
        os.unlink(config_path)
    async with Gateway({"mcpServers": {"echo": ECHO}}, handle_signals=False) as gateway:
        front = HttpGateway(gateway)
        _, port = await front.start("127.0.0.1", 0)
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            async with MCPHost({"mcpServers": {"gw": {"type": "http", "url": url}}}, handle_signals=False) as host:
                results["gateway http"] = quantiles(await timed(host, "gw.echo.echo", calls))
        finally:
            await front.aclose()
    if clients:
        await concurrent(clients, calls)
    base50, base99 = results["direct"]
    print(f"{'path':<15} {'p50 us':>9} {'p99 us':>9} {'added p50':>10} {'added p99':>10}")
    for name, (p50, p99) in results.items():
        print(f"{name:<15} {p50:9.0f} {p99:9.0f} {p50 - base50:10.0f} {p99 - base99:10.0f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=0)
    args: Any = parser.parse_args()
    asyncio.run(main(args.calls, args.clients))

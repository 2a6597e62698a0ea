"""The gateway deployed for scale: uvicorn workers behind a sticky front, many clients at once,
beside fastmcp's proxy deployed the same way.

Processes (all on 127.0.0.1, any free ports):

- the downstream server: ``benchmarks/http_echo_server.py`` (Streamable HTTP, one ``echo``);
- W uvicorn workers (``benchmarks/gateway_worker.py``, 4 by default), each its own process on
  its own port, each a gateway with its own sessions;
- ``benchmarks/sticky_front.py`` in front of them: a new session to the next worker in turn,
  every later connection of a session to the worker that has it (by ``Mcp-Session-Id``).

C clients (mcphost's own, 100 by default, in this process) each open a session and make N
sequential calls of ``echo`` (100 by default), all clients at once. Three paths: ``direct``
(the clients call the echo server), ``mcphost`` (through the front and W workers running
``mcphost.gateway.asgi_app``), ``fastmcp`` (through the front and W workers running
``fastmcp.server.create_proxy``, a benchmark-only dependency). For each: errors, calls per
second, p50 and p99 of a call, and what the gateway adds to the direct p50 and p99.

Run: ``python benchmarks/bench_gateway_workers.py [--clients C] [--calls N] [--workers W]
[--only mcphost|fastmcp]``. Needs ``uvicorn`` (and ``fastmcp`` for its row). Figures are
printed, never asserted; every process started here is stopped here.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcphost import MCPHost  # noqa: E402

HERE = ROOT / "benchmarks"


async def _spawn(*args: str) -> tuple[asyncio.subprocess.Process, int]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, cwd=str(ROOT)
    )
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), 60)
    if not line.startswith(b"PORT "):
        proc.kill()
        raise SystemExit(f"{args[0]} did not start: {line!r}")
    return proc, int(line.split()[1])


async def _stop(proc: asyncio.subprocess.Process, *, term: bool = True) -> None:
    """Stop ``proc``: SIGTERM (uvicorn), or only the end of its stdin (the front, the echo server)."""
    if proc.returncode is None:
        if term:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()


@contextlib.asynccontextmanager
async def deployment(kind: str, downstream: str, workers: int) -> AsyncIterator[str]:
    """W workers of ``kind`` and the sticky front before them; yields the front's URL."""
    started = await asyncio.gather(*(_spawn(str(HERE / "gateway_worker.py"), kind, downstream)
                                     for _ in range(workers)))
    procs = [proc for proc, _ in started]
    front: asyncio.subprocess.Process | None = None
    try:
        backends = [arg for _, port in started for arg in ("--backend", f"127.0.0.1:{port}")]
        front, port = await _spawn(str(HERE / "sticky_front.py"), *backends)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        if front is not None:
            await _stop(front, term=False)
        await asyncio.gather(*(_stop(proc) for proc in procs))


async def clients_at_once(url: str, clients: int, calls: int) -> tuple[int, list[float], float, str]:
    """``clients`` sessions to ``url``, each making ``calls`` sequential calls, all at once."""
    entry = {"type": "http", "url": url, "timeout": 120, "requestTimeout": 120}
    hosts = [MCPHost({"mcpServers": {"gw": entry}}, handle_signals=False) for _ in range(clients)]
    errors = 0
    first_error = ""
    samples: list[float] = []
    try:
        for at in range(0, clients, 10):  # opened ten at a time (not measured)
            await asyncio.gather(*(host.initialize(require_all=True) for host in hosts[at:at + 10]))
        tool = "gw.echo"  # the same name on every path: pass-through naming, as fastmcp's proxy

        async def one(host: MCPHost) -> None:
            nonlocal errors, first_error
            for _ in range(5):  # warm-up: connections opened, caches filled
                await host.call_tool(tool, {"text": "x"})
            for _ in range(calls):
                began = time.perf_counter()
                try:
                    await host.call_tool(tool, {"text": "x"})
                except Exception as exc:
                    errors += 1
                    first_error = first_error or f"{type(exc).__name__}: {exc}"
                samples.append((time.perf_counter() - began) * 1e6)

        began = time.perf_counter()
        await asyncio.gather(*(one(host) for host in hosts))
        elapsed = time.perf_counter() - began
    finally:
        await asyncio.gather(*(host.close() for host in hosts), return_exceptions=True)
    return errors, samples, elapsed, first_error


async def main(clients: int, calls: int, workers: int, only: list[str]) -> None:
    echo, port = await _spawn(str(HERE / "http_echo_server.py"))
    downstream = f"http://127.0.0.1:{port}/mcp"
    rows: dict[str, tuple[int, float, float, float]] = {}
    try:
        for kind in ["direct", *only]:
            if kind == "direct":
                errors, samples, elapsed, first = await clients_at_once(downstream, clients, calls)
            else:
                async with deployment(kind, downstream, workers) as url:
                    errors, samples, elapsed, first = await clients_at_once(url, clients, calls)
            cuts = statistics.quantiles(samples, n=100)
            rate, p50, p99 = len(samples) / elapsed, cuts[49], cuts[98]
            rows[kind] = (errors, rate, p50, p99)
            if kind == "direct":
                print(f"{clients} clients x {calls} calls at once; gateways: {workers} uvicorn workers behind a "
                      "sticky front")
                print(f"{'path':<8} {'errors':>6} {'calls/s':>8} {'p50 us':>9} {'p99 us':>9} {'added p50':>10} "
                      f"{'added p99':>10}")
            base = rows["direct"]
            print(f"{kind:<8} {errors:6d} {rate:8.0f} {p50:9.0f} {p99:9.0f} {p50 - base[2]:10.0f} "
                  f"{p99 - base[3]:10.0f}", flush=True)
            if first:
                print(f"  first error: {first}", flush=True)
    finally:
        await _stop(echo, term=False)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--only", action="append", choices=["mcphost", "fastmcp"])
    args: Any = parser.parse_args()
    asyncio.run(main(args.clients, args.calls, args.workers, args.only or ["mcphost", "fastmcp"]))

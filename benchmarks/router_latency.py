"""The router's added latency: ``call_tool`` against calling each server directly, under load.

One host with 50 stdio servers (``echo_server.py``). A round starts 1,000 calls at once,
spread round robin over the servers (20 each), and times each one from its start to its
result. The same round is made two ways, alternately:

- **routed**: ``host.call_tool("eN.echo", {"i": k})``, everything the host does on a call
  (routing by name, argument validation, the tool's metrics, the result checks);
- **direct**: the same request on the server's own client session
  (``session.call("tools/call", {...})``): the session, the peer and the transport, without
  the host's layer.

Reported: p50 and p99 of each (all rounds' calls pooled), and the router's added latency:
the median over the rounds of the difference of the two at each quantile (judged: the
rounds run side by side, so it is the figure least moved by other load; the difference of
the pooled quantiles is shown too), printed beside the design card's bound, 10 ms. With 1,000 calls in flight a call's latency
is mostly the wait for the ones started before it, so the added latency is what the host's
layer costs 1,000 calls, not one. Nothing here is asserted.

Run from the repository root::

    python benchmarks/router_latency.py [--rounds 10] [--servers 50] [--calls 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import _benchutil
from _benchutil import ECHO_SERVER

_benchutil.ensure_repo_on_path()

BOUND_MS = 10.0


def quantile(values: list[int], q: float) -> float:
    """The nearest-rank quantile of nanosecond values, in milliseconds."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 1))
    return ordered[int(rank) - 1] / 1e6


async def _round(calls: list[Callable[[], Awaitable[Any]]]) -> list[int]:
    clock = time.perf_counter_ns
    out = [0] * len(calls)

    async def timed(k: int, call: Callable[[], Awaitable[Any]]) -> None:
        started = clock()
        await call()
        out[k] = clock() - started

    await asyncio.gather(*[timed(k, call) for k, call in enumerate(calls)])
    return out


async def main_async(rounds: int, servers: int, calls: int) -> int:
    from mcphost import MCPHost

    config = {"mcpServers": {f"e{i}": {"command": sys.executable, "args": [ECHO_SERVER]} for i in range(servers)}}
    started = time.perf_counter()
    async with MCPHost(config) as host:
        print(f"{servers} servers ready in {time.perf_counter() - started:.1f} s; {calls} calls in flight a round, "
              f"{rounds} rounds of each", flush=True)
        sessions = [host.servers[f"e{i}"].session for i in range(servers)]
        names = [f"e{i}.echo" for i in range(servers)]

        def routed() -> list[Callable[[], Awaitable[Any]]]:
            return [lambda k=k: host.call_tool(names[k % servers], {"i": k}) for k in range(calls)]

        def direct() -> list[Callable[[], Awaitable[Any]]]:
            return [lambda k=k: sessions[k % servers].call("tools/call", {"name": "echo", "arguments": {"i": k}})
                    for k in range(calls)]

        for make in (routed, direct):  # warm: validators compiled, every pipe busy once
            await _round(make())
        samples: dict[str, list[list[int]]] = {"routed": [], "direct": []}
        for r in range(rounds):
            order = [("routed", routed), ("direct", direct)]
            for name, make in order if r % 2 == 0 else order[::-1]:
                batch = make()
                gc.collect()
                samples[name].append(await _round(batch))
    print(f"{'':8s} {'p50 ms':>8s} {'p99 ms':>8s}")
    pooled = {name: [v for one in rounds_ for v in one] for name, rounds_ in samples.items()}
    for name in ("direct", "routed"):
        print(f"{name:8s} {quantile(pooled[name], 0.5):8.2f} {quantile(pooled[name], 0.99):8.2f}")
    for q, label in ((0.5, "p50"), (0.99, "p99")):
        added = quantile(pooled["routed"], q) - quantile(pooled["direct"], q)
        per_round = statistics.median(quantile(a, q) - quantile(b, q)
                                      for a, b in zip(samples["routed"], samples["direct"]))
        verdict = "PASS" if per_round <= BOUND_MS else "OVER BOUND"
        print(f"router's added latency {label}: {per_round:6.2f} ms (median of the rounds; pooled {added:6.2f} ms)"
              f"   bound: {BOUND_MS:g} ms  {verdict}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--calls", type=int, default=1000)
    opts = parser.parse_args(argv)
    return asyncio.run(main_async(opts.rounds, opts.servers, opts.calls))


if __name__ == "__main__":
    sys.exit(main())

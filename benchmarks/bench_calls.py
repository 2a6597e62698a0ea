"""Throughput of ``MCPHost.call_tool`` against the *floor* (the best plain asyncio client).

Both clients talk to the same stdlib echo server (``echo_server.py``), one process each,
started once before anything is measured. Five cases, each timed for mcphost and for the
floor side by side, and the start-up time:

=====================  =========================================================  ======
case                   workload                                                   target
=====================  =========================================================  ======
sequential             2000 calls, each awaited before the next                   ≥ 0.90
concurrent             5000 calls in batches of 200 ``asyncio.gather``-ed         ≥ 0.85
concurrent x10         10000 calls over 10 servers (round robin), batches of 200  ≥ 0.85
sequential+progress    as sequential; server sends one progress notification      ≥ 0.85
                       per call, dispatched to a callback (``progress=``)
concurrent+progress    as concurrent, with progress                               ≥ 0.70
start-up               one server: spawn, handshake, tools/list; ratio =          ≥ 0.67
                       floor seconds ÷ mcphost seconds (within 1.5x)
=====================  =========================================================  ======

The ratio is mcphost calls/s ÷ floor calls/s. Targets are reported, never asserted.

Run under pytest-benchmark::

    python -m pytest benchmarks/bench_calls.py --benchmark-only -s -p no:cacheprovider

or as a script (interleaves mcphost and floor runs, reports medians)::

    python benchmarks/bench_calls.py [--rounds 7]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, NamedTuple

import _benchutil
from _benchutil import CALL_RESULTS, ECHO_SERVER, calls_table

_benchutil.ensure_repo_on_path()

Call = Callable[[dict[str, Any]], Awaitable[Any]]

BATCH = 200


class Case(NamedTuple):
    concurrent: bool
    progress: bool
    n: int
    target: float
    servers: int = 1


CASES: dict[str, Case] = {
    "sequential": Case(concurrent=False, progress=False, n=2000, target=0.90),
    "concurrent": Case(concurrent=True, progress=False, n=5000, target=0.85),
    "concurrent x10": Case(concurrent=True, progress=False, n=10000, target=0.85, servers=10),
    "sequential+progress": Case(concurrent=False, progress=True, n=2000, target=0.85),
    "concurrent+progress": Case(concurrent=True, progress=True, n=5000, target=0.70),
}
#: Start-up: floor seconds / mcphost seconds must be at least this (within 1.5x).
STARTUP_TARGET = 1 / 1.5
MANY = 10
IMPLS = ("floor", "mcphost")


def _noop_progress(params: dict[str, Any]) -> None:
    return None


async def run_sequential(call: Call, n: int) -> None:
    for i in range(n):
        await call({"i": i})


async def run_concurrent(call: Call, n: int, batch: int = BATCH) -> None:
    gather = asyncio.gather
    for start in range(0, n, batch):
        await gather(*[call({"i": i}) for i in range(start, min(n, start + batch))])


class Bench:
    """One private event loop with an mcphost host and a floor client per server flavour.

    Everything is started once (``start``), so that start-up is never measured; ``run``
    executes one workload to completion on the loop.
    """

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.hosts: dict[bool, Any] = {}
        self.floors: dict[bool, Any] = {}
        self.many_host: Any = None
        self.many_floors: list[Any] = []
        self.calls: dict[tuple[str, bool], Call] = {}
        self.many_calls: dict[str, Call] = {}
        self.validation = "unknown"

    def start(self) -> None:
        self.loop.run_until_complete(self._start())

    async def _start(self) -> None:
        from floor_client import FloorClient, server_argv

        from mcphost import MCPHost

        for progress in (False, True):
            floor = FloorClient(server_argv(ECHO_SERVER, progress), progress=progress)
            await floor.start()
            self.floors[progress] = floor
            args = [ECHO_SERVER, *(["--progress"] if progress else [])]
            host = MCPHost({"mcpServers": {"echo": {"command": sys.executable, "args": args}}})
            await host.initialize()
            self.hosts[progress] = host

            self.calls["floor", progress] = floor.call
            # functools.partial, like the floor's bound method: no Python frame of the
            # bench's own between the workload and the client.
            if progress:
                self.calls["mcphost", progress] = functools.partial(
                    host.call_tool, "echo.echo", progress=_noop_progress
                )
            else:
                self.calls["mcphost", progress] = functools.partial(host.call_tool, "echo.echo")

        # Ten servers: one host with ten, ten floor clients; calls spread round robin.
        config = {"mcpServers": {f"echo{i}": {"command": sys.executable, "args": [ECHO_SERVER]}
                                 for i in range(MANY)}}
        self.many_host = MCPHost(config)
        await self.many_host.initialize()
        for _ in range(MANY):
            floor = FloorClient(server_argv(ECHO_SERVER))
            await floor.start()
            self.many_floors.append(floor)
        self.many_calls["floor"] = _round_robin([f.call for f in self.many_floors])
        names = [f"echo{i}.echo" for i in range(MANY)]
        self.many_calls["mcphost"] = _round_robin([functools.partial(self.many_host.call_tool, name) for name in names])

        # Both clients must really work (and agree) before anything is timed.
        checks = [*self.calls.items(), *((("x10-" + k, False), v) for k, v in self.many_calls.items())]
        for (impl, progress), call in checks:
            result = await call({"i": 7})
            text = result["content"][0]["text"]
            if text.replace(" ", "") != '{"i":7}':
                raise RuntimeError(f"{impl} (progress={progress}) got a wrong result: {result}")
        self.validation = self._validation_state()

    def _validation_state(self) -> str:
        host = self.hosts[False]
        if not host.validate_arguments:
            return "off"
        validators = getattr(host.servers["echo"], "validators", {})
        validator = validators.get("echo")
        if validator is None:
            return "on (validator not compiled?)"
        if validator is False:
            return "skipped (mcphost.schema not importable)"
        return "on"

    def workload(self, case: str, impl: str) -> Callable[[], Awaitable[None]]:
        spec = CASES[case]
        call = self.many_calls[impl] if spec.servers > 1 else self.calls[impl, spec.progress]
        if spec.concurrent:
            return lambda: run_concurrent(call, spec.n)
        return lambda: run_sequential(call, spec.n)

    def run(self, case: str, impl: str) -> None:
        self.loop.run_until_complete(self.workload(case, impl)())

    def timed(self, case: str, impl: str) -> tuple[float, float]:
        """Run one workload; return (wall seconds, CPU seconds of this process)."""
        make = self.workload(case, impl)
        run = self.loop.run_until_complete
        cpu = time.process_time()
        started = time.perf_counter()
        run(make())
        elapsed = time.perf_counter() - started
        return elapsed, time.process_time() - cpu

    def close(self) -> None:
        async def stop() -> None:
            for host in [*self.hosts.values(), self.many_host]:
                if host is not None:
                    await host.shutdown()
            for floor in [*self.floors.values(), *self.many_floors]:
                await floor.close()

        try:
            self.loop.run_until_complete(stop())
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()


def _round_robin(calls: list[Call]) -> Call:
    """One call function that spreads calls over ``calls`` in turn."""
    state = {"i": 0}
    size = len(calls)

    def call(args: dict[str, Any]) -> Awaitable[Any]:
        i = state["i"]
        state["i"] = i + 1
        return calls[i % size](args)

    return call


def startup_times(rounds: int) -> tuple[float, float]:
    """Median seconds from nothing to one ready server: (floor, mcphost). Each round runs
    in a fresh event loop; imports are warm (what is measured is the start, not Python's
    import of the package)."""
    from floor_client import FloorClient, server_argv

    from mcphost import MCPHost

    async def floor() -> float:
        started = time.perf_counter()
        client = FloorClient(server_argv(ECHO_SERVER))
        await client.start()
        await client.list_tools()
        elapsed = time.perf_counter() - started
        await client.close()
        return elapsed

    async def host() -> float:
        started = time.perf_counter()
        h = MCPHost({"mcpServers": {"echo": {"command": sys.executable, "args": [ECHO_SERVER]}}})
        await h.initialize()
        elapsed = time.perf_counter() - started
        await h.shutdown()
        return elapsed

    asyncio.run(host())  # warm: imports, compiled schemas
    floors, hosts = [], []
    for r in range(rounds):
        for impl in (("floor", "mcphost") if r % 2 == 0 else ("mcphost", "floor")):
            (floors if impl == "floor" else hosts).append(asyncio.run(floor() if impl == "floor" else host()))
    return statistics.median(floors), statistics.median(hosts)


def environment(bench: Bench) -> str:
    from mcphost._json import USING_ORJSON

    return (
        f"python {sys.version.split()[0]}, json codec: "
        f"{'orjson' if USING_ORJSON else 'stdlib json'}, argument validation: {bench.validation}, "
        f"message checks: {bench.hosts[False].validate_messages}, metrics: on, "
        f"logging: INFO to a handler; metrics cost {metrics_cost_us():.2f} us per call"
    )


def log_at_info() -> None:
    """Logging as an application runs it: the mcphost tree at INFO, to a real handler
    (a file, so a record per call would show in the figures)."""
    handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 - for the whole run
    logger = logging.getLogger("mcphost")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


def metrics_cost_us() -> float:
    """What recording one call's latency costs (the histogram of its tool), in µs."""
    import timeit

    from mcphost.metrics import Histogram

    record = Histogram().record
    n = 200_000
    return min(timeit.repeat(lambda: record(0.000123), number=n, repeat=5)) / n * 1e6


# -- pytest-benchmark -------------------------------------------------------------------

try:
    import pytest
except ImportError:  # pragma: no cover - the script does not need pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    ROUNDS = 7

    @pytest.fixture(scope="module")
    def bench() -> Iterator[Bench]:
        log_at_info()
        b = Bench()
        try:
            b.start()
            print(f"\n[bench_calls] {environment(b)}")
            yield b
        finally:
            b.close()

    @pytest.mark.parametrize(
        ("case", "impl"),
        [(case, impl) for case in CASES for impl in IMPLS],
        ids=[f"{case}-{impl}" for case in CASES for impl in IMPLS],
    )
    def test_calls(benchmark: Any, bench: Bench, case: str, impl: str) -> None:
        spec = CASES[case]
        benchmark.group = f"calls: {case} (n={spec.n})"
        # Each mcphost round is preceded by an (untimed by pytest-benchmark) floor round, so
        # that the ratio compares runs made under the same load: this machine is shared.
        paired_floor: list[float] = []

        def setup() -> None:
            if impl == "mcphost":
                paired_floor.append(bench.timed(case, "floor")[0])

        benchmark.pedantic(
            bench.run, args=(case, impl), setup=setup, rounds=ROUNDS, iterations=1, warmup_rounds=1
        )
        median = benchmark.stats.stats.median
        row = CALL_RESULTS.setdefault(case, {"n": spec.n, "target": spec.target})
        row[impl] = median
        benchmark.extra_info["calls_per_s"] = round(spec.n / median)
        benchmark.extra_info["n"] = spec.n
        if impl == "mcphost":
            _benchutil.record_paired(benchmark, row, paired_floor, ROUNDS, spec.target)
            benchmark.extra_info["floor_calls_per_s_paired"] = round(
                spec.n / statistics.median(paired_floor[-ROUNDS:])
            )


# -- script -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per case (7)")
    parser.add_argument(
        "--case", action="append", choices=list(CASES), help="run only this case (repeatable)"
    )
    opts = parser.parse_args(argv)
    cases = opts.case or list(CASES)

    log_at_info()
    bench = Bench()
    try:
        bench.start()
        print(environment(bench))
        results: dict[str, dict[str, Any]] = {}
        for case in cases:
            spec = CASES[case]
            for impl in IMPLS:  # warm-up, not counted
                bench.run(case, impl)
            walls: dict[str, list[float]] = {impl: [] for impl in IMPLS}
            cpus: dict[str, list[float]] = {impl: [] for impl in IMPLS}
            for r in range(opts.rounds):
                order = IMPLS if r % 2 == 0 else IMPLS[::-1]
                for impl in order:
                    wall, cpu = bench.timed(case, impl)
                    walls[impl].append(wall)
                    cpus[impl].append(cpu)
            row: dict[str, Any] = {"n": spec.n, "target": spec.target}
            for impl in IMPLS:
                row[impl] = statistics.median(walls[impl])
                row[f"cpu_{impl}"] = statistics.median(cpus[impl])
            # the ratio of each round's adjacent pair, which shrugs off slow drifts in load
            row["paired"] = statistics.median(
                f / m for f, m in zip(walls["floor"], walls["mcphost"])
            )
            results[case] = row
            print(
                f"  {case}: floor {spec.n / row['floor']:,.0f} calls/s, "
                f"mcphost {spec.n / row['mcphost']:,.0f} calls/s",
                flush=True,
            )
    finally:
        bench.close()
    floor_start, host_start = startup_times(max(opts.rounds, 5))
    start_ratio = floor_start / host_start
    print(
        f"  start-up of one server: floor {floor_start * 1000:.1f} ms, mcphost {host_start * 1000:.1f} ms, "
        f"ratio {start_ratio:.2f} (target >= {STARTUP_TARGET:.2f}: "
        f"{_benchutil.label(start_ratio, STARTUP_TARGET)})"
    )
    print()
    print(
        f"median of {opts.rounds} interleaved rounds; ratio = mcphost / floor calls/s "
        "(of the medians); paired = median of the per-round ratios; CPU = this process only "
        "(the client), per call"
    )
    for line in calls_table(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

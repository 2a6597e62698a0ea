"""Throughput of ``MCPHost.call_tool`` over Streamable HTTP against the *floor*.

Everything talks to one ``http_echo_server.py`` process (stdlib asyncio, keep-alive,
``Content-Length`` JSON answers, ``Mcp-Session-Id``), started before anything is measured,
so that the client's CPU is what is compared. Contenders, all in the same run, in
alternating order round by round:

- the **floor** (``http_floor.py``): the fastest of the plain stdlib clients measured in the
  same run (sequential: ``http.client`` keep-alive, a raw blocking socket, raw asyncio;
  concurrent: raw asyncio with 50 connections, 50 threads with ``http.client``, 50 threads
  with raw sockets);
- **mcphost**: ``MCPHost({"mcpServers": {"e": {"type": "http", "url": ...}}})`` with its
  defaults (a pool of ``max_connections=8``, argument validation, 60 s timeouts, metrics);
- for information, **mcphost max_connections=50** (the same host with a transport factory
  giving the pool 50 connections: does the pool size limit the concurrent case?);
- for information, the official **MCP Python SDK** client (``streamablehttp_client``, in
  SDK 2.x ``streamable_http_client``, + ``ClientSession``) in its own process
  (``sdk_http_worker.py``), with fewer calls (it is slow). Its interpreter: this one if it
  can import ``mcp`` (the ``test`` extra installs it), else ``$MCPHOST_BENCH_SDK_PYTHON``;
  skipped, with the reason printed, when none can (``MCPHOST_BENCH_SDK_PYTHON=none`` or
  ``--no-sdk`` leave it out).

==================  ================================================  ======
case                workload                                          target
==================  ================================================  ======
sequential          2000 calls, each awaited before the next          ≥ 0.85
concurrent x50      5000 calls, 50 callers each awaiting its share:   ≥ 0.85
                    50 calls in flight
==================  ================================================  ======

The ratio is mcphost calls/s ÷ floor calls/s; targets are reported, never asserted.

Run as a script (interleaves all contenders, reports medians and paired ratios)::

    python benchmarks/bench_http.py [--rounds 7] [--case sequential] [--no-sdk]

or under pytest-benchmark::

    python -m pytest benchmarks/bench_http.py --benchmark-only -s -p no:cacheprovider
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import http.client
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import _benchutil
from _benchutil import CALL_RESULTS, HERE, calls_table

_benchutil.ensure_repo_on_path()

HTTP_ECHO_SERVER = os.path.join(HERE, "http_echo_server.py")
SDK_WORKER = os.path.join(HERE, "sdk_http_worker.py")
HOST = "127.0.0.1"
WIDE_POOL = 50


class Case(NamedTuple):
    width: int  # calls in flight
    n: int
    target: float
    sdk_n: int  # the SDK's calls per round (it is an order of magnitude slower)
    floors: tuple[str, ...]


CASES: dict[str, Case] = {
    "sequential": Case(width=1, n=2000, target=0.85, sdk_n=500,
                       floors=("floor: socket", "floor: http.client", "floor: asyncio")),
    "concurrent x50": Case(width=50, n=5000, target=0.85, sdk_n=1000,
                           floors=("floor: asyncio x50", "floor: threads+socket", "floor: threads+http.client")),
}
MCPHOST = "mcphost"
MCPHOST_WIDE = f"mcphost max_connections={WIDE_POOL}"
SDK = "sdk"


class Sample(NamedTuple):
    n: int
    wall: float
    cpu: float  # the client's CPU seconds (its process)
    server_cpu: float  # the server's CPU seconds

    @property
    def rate(self) -> float:
        return self.n / self.wall


# -- the server ------------------------------------------------------------------------


class ServerProcess:
    """``http_echo_server.py`` in a child process (it exits when its stdin closes)."""

    def __init__(self) -> None:
        self._stats: http.client.HTTPConnection | None = None
        self.proc = subprocess.Popen(
            [sys.executable, HTTP_ECHO_SERVER, "--host", HOST, "--port", "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().decode()
        if not line.startswith("PORT "):
            self.close()
            raise RuntimeError(f"the HTTP echo server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://{HOST}:{self.port}/mcp"
        self._stats = http.client.HTTPConnection(HOST, self.port, timeout=10)

    def cpu(self) -> float:
        """The server's CPU seconds so far."""
        assert self._stats is not None
        self._stats.request("GET", "/stats")
        return float(json.loads(self._stats.getresponse().read())["cpu"])

    def close(self) -> None:
        if self._stats is not None:
            self._stats.close()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# -- the SDK contender -----------------------------------------------------------------


def sdk_python() -> tuple[str | None, str]:
    """An interpreter with the ``mcp`` package, or ``None`` and why there is none."""
    chosen = os.environ.get("MCPHOST_BENCH_SDK_PYTHON", "")
    if chosen.lower() == "none":
        return None, "left out (MCPHOST_BENCH_SDK_PYTHON=none)"
    candidates = [sys.executable, chosen]
    tried = []
    for python in candidates:
        if not python or python in tried:
            continue
        tried.append(python)
        if not os.path.exists(python):
            continue
        probe = subprocess.run([python, "-c", "import mcp.client.streamable_http"],
                               check=False, capture_output=True, timeout=120)
        if probe.returncode == 0:
            return python, ""
    return None, (f"no interpreter with the mcp package (tried {', '.join(tried)}; "
                  "install the test extra here (it has mcp), "
                  "or set MCPHOST_BENCH_SDK_PYTHON to an interpreter that has it)")


class SdkWorker:
    """``sdk_http_worker.py`` in a child process: it times its own runs."""

    def __init__(self, python: str, url: str) -> None:
        self.proc = subprocess.Popen([python, SDK_WORKER, url], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, bufsize=1)
        line = self._read()
        if not line.startswith("READY "):
            self.close()
            raise RuntimeError(line.strip() or "the SDK worker exited")
        self.version = line.split()[1]

    def _read(self) -> str:
        assert self.proc.stdout is not None
        return self.proc.stdout.readline()

    def run(self, width: int, n: int) -> tuple[float, float]:
        """(wall, CPU) seconds of ``n`` calls with ``width`` in flight."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"run {width} {n}\n")
        self.proc.stdin.flush()
        line = self._read()
        if not line.startswith("DONE "):
            raise RuntimeError(f"the SDK worker failed: {line.strip() or 'it exited'}")
        _, wall, cpu = line.split()
        return float(wall), float(cpu)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(10)
            except (OSError, subprocess.TimeoutExpired):  # pragma: no cover
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


# -- the bench ---------------------------------------------------------------------------


class HttpBench:
    """The server, every client (started and checked once), and the timed workloads."""

    def __init__(self, *, sdk: bool = True) -> None:
        self.want_sdk = sdk
        self.loop = asyncio.new_event_loop()
        self.server: ServerProcess | None = None
        self.hosts: dict[str, Any] = {}
        self.sdk: SdkWorker | None = None
        self.sdk_reason = "not wanted (--no-sdk)" if not sdk else ""
        self.closers: list[Callable[[], None]] = []
        self.items: dict[str, list[Any]] = {}
        self.args: dict[str, list[dict[str, Any]]] = {}
        self.validation = "unknown"

    # -- start ------------------------------------------------------------------------

    def start(self) -> None:
        from http_floor import (
            AsyncFloor,
            HttpClientFloor,
            SocketFloor,
            bodies,
            handshake,
            warm_pool,
        )

        self.server = ServerProcess()
        port = self.server.port
        sid = handshake(HOST, port)
        width = max(case.width for case in CASES.values())
        self.seq_socket = SocketFloor(HOST, port, sid)
        self.seq_httpclient = HttpClientFloor(HOST, port, sid)
        self.thr_socket = [SocketFloor(HOST, port, sid) for _ in range(width)]
        self.thr_httpclient = [HttpClientFloor(HOST, port, sid) for _ in range(width)]
        self.pool = warm_pool(width)
        clients: list[SocketFloor | HttpClientFloor] = [
            self.seq_socket, self.seq_httpclient, *self.thr_socket, *self.thr_httpclient]
        for client in clients:
            self.closers.append(client.close)
        self.closers.append(lambda: self.pool.shutdown(wait=True))
        self.async_floor = AsyncFloor(HOST, port, sid, width)
        self.loop.run_until_complete(self._start_async())
        self.closers.append(self.async_floor.close)
        for name, case in CASES.items():
            self.items[name] = bodies(case.n)
            self.args[name] = [{"i": i} for i in range(case.n)]
        # Every contender must really work (and agree) before anything is timed.
        for name in CASES:
            for contender in self.contenders(name):
                if contender != SDK:
                    self.runner(name, contender, n=7)()
        if self.want_sdk:
            python, self.sdk_reason = sdk_python()
            if python is not None:
                try:
                    self.sdk = SdkWorker(python, self.server.url)
                except RuntimeError as exc:
                    self.sdk_reason = f"the SDK client did not start: {exc}"

    async def _start_async(self) -> None:
        from mcphost import MCPHost
        from mcphost.transports.http import StreamableHttpTransport

        assert self.server is not None
        await self.async_floor.start()
        config = {"mcpServers": {"e": {"type": "http", "url": self.server.url}}}
        host = MCPHost(config)
        await host.initialize()
        self.hosts[MCPHOST] = host

        def wide(server_config: Any) -> StreamableHttpTransport:
            return StreamableHttpTransport(server_config.name, server_config.url or "",
                                           headers=server_config.headers.items(), max_connections=WIDE_POOL)

        wide_host = MCPHost(config, transport_factory=wide)
        await wide_host.initialize()
        self.hosts[MCPHOST_WIDE] = wide_host
        for h in self.hosts.values():
            result = await h.call_tool("e.echo", {"i": 7})
            text = result["content"][0]["text"]
            if text.replace(" ", "") != '{"i":7}' or result.get("isError"):
                raise RuntimeError(f"mcphost got a wrong result: {result}")
        self.validation = self._validation_state()

    def _validation_state(self) -> str:
        host = self.hosts[MCPHOST]
        if not host.validate_arguments:
            return "off"
        validator = getattr(host.servers["e"], "validators", {}).get("echo")
        if validator is None:
            return "on (validator not compiled?)"
        if validator is False:
            return "skipped (mcphost.schema not importable)"
        return "on"

    # -- workloads ----------------------------------------------------------------------

    def contenders(self, case: str) -> list[str]:
        out = [*CASES[case].floors, MCPHOST, MCPHOST_WIDE]
        if self.sdk is not None:
            out.append(SDK)
        return out

    def runner(self, case: str, contender: str, n: int | None = None) -> Callable[[], Any]:
        """A function running one workload of ``case`` for ``contender`` to its end."""
        from http_floor import run_threads, run_workers

        spec = CASES[case]
        width = spec.width
        items = self.items[case] if n is None else self.items[case][:n]
        args = self.args[case] if n is None else self.args[case][:n]
        run = self.loop.run_until_complete
        if contender == "floor: socket":
            return functools.partial(self.seq_socket.run, items)
        if contender == "floor: http.client":
            return functools.partial(self.seq_httpclient.run, items)
        if contender == "floor: threads+socket":
            return functools.partial(run_threads, self.pool, self.thr_socket[:width], items)
        if contender == "floor: threads+http.client":
            return functools.partial(run_threads, self.pool, self.thr_httpclient[:width], items)
        if contender in ("floor: asyncio", "floor: asyncio x50"):
            return lambda: run(run_workers(self.async_floor.call, items, width))
        if contender in self.hosts:
            call = functools.partial(self.hosts[contender].call_tool, "e.echo")
            return lambda: run(run_workers(call, args, width))
        if contender == SDK:
            assert self.sdk is not None
            sdk = self.sdk
            return functools.partial(sdk.run, width, spec.sdk_n if n is None else n)
        raise KeyError(contender)

    def run(self, case: str, contender: str) -> None:
        self.runner(case, contender)()

    def timed(self, case: str, contender: str) -> Sample:
        """Run one workload; its wall and CPU seconds, and the server's CPU seconds."""
        assert self.server is not None
        make = self.runner(case, contender)
        server_before = self.server.cpu()
        if contender == SDK:
            wall, cpu = make()
            n = CASES[case].sdk_n
        else:
            n = CASES[case].n
            cpu0 = time.process_time()
            started = time.perf_counter()
            make()
            wall = time.perf_counter() - started
            cpu = time.process_time() - cpu0
        return Sample(n, wall, cpu, self.server.cpu() - server_before)

    # -- end ----------------------------------------------------------------------------

    def close(self) -> None:
        async def stop() -> None:
            for host in self.hosts.values():
                await host.shutdown()

        try:
            if self.sdk is not None:
                self.sdk.close()
            self.loop.run_until_complete(stop())
            for closer in self.closers:
                closer()
            self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        finally:
            self.loop.close()
            if self.server is not None:
                self.server.close()

    def environment(self) -> str:
        from mcphost._json import USING_ORJSON

        sdk = f"sdk {self.sdk.version}" if self.sdk is not None else "sdk skipped"
        return (
            f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, json codec: "
            f"{'orjson' if USING_ORJSON else 'stdlib json'}, argument validation: {self.validation}, "
            f"mcphost pool: max_connections={pool_size(self.hosts[MCPHOST])}, {sdk}"
        )


def pool_size(host: Any) -> Any:
    """The connection bound of the host's HTTP transport (``?`` if it cannot be seen)."""
    pool = getattr(getattr(host.servers["e"], "transport", None), "pool", None)
    return getattr(pool, "max_connections", "?")


def log_at_info() -> None:
    """Logging as an application runs it: the mcphost tree at INFO, to a real handler
    (once: ``bench_calls`` may have set it up in the same session)."""
    logger = logging.getLogger("mcphost")
    if logger.handlers and logger.level == logging.INFO:
        return
    handler = logging.StreamHandler(open(os.devnull, "w"))  # noqa: SIM115 - for the whole run
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)


# -- reporting ---------------------------------------------------------------------------


def summarize(case: str, samples: dict[str, list[Sample]]) -> tuple[str, list[str], dict[str, Any]]:
    """The floor chosen (the best median), the lines of the case's table, and its
    ``CALL_RESULTS`` row (medians of wall seconds, paired ratio, CPU per run)."""
    spec = CASES[case]
    floor = max(spec.floors, key=lambda f: statistics.median(s.rate for s in samples[f]))
    floor_rates = [s.rate for s in samples[floor]]
    lines = [f"{'contender':<30} {'calls/s':>9} {'x floor':>8} {'paired':>7} "
             f"{'client CPU us/call':>19} {'server CPU us/call':>19}"]
    floor_median = statistics.median(floor_rates)
    for name, runs in samples.items():
        rate = statistics.median(s.rate for s in runs)
        paired = statistics.median(s.rate / f for s, f in zip(runs, floor_rates))
        cpu = statistics.median(s.cpu / s.n for s in runs) * 1e6
        server = statistics.median(s.server_cpu / s.n for s in runs) * 1e6
        mark = "  <- floor" if name == floor else ""
        if name == SDK:
            mark = f"  (n={spec.sdk_n}; info)"
        elif name == MCPHOST_WIDE:
            mark = "  (info)"
        lines.append(f"{name:<30} {rate:>9,.0f} {rate / floor_median:>8.2f} {paired:>7.2f} "
                     f"{cpu:>19.1f} {server:>19.1f}{mark}")
    # For information: against the floor of the same shape (asyncio, one call per
    # connection), and what that floor itself reaches against the blocking ones.
    same = next((f for f in spec.floors if f.startswith("floor: asyncio")), None)
    if same is not None and same != floor:
        same_rates = [s.rate for s in samples[same]]
        to_same = statistics.median(s.rate / f for s, f in zip(samples[MCPHOST], same_rates))
        ceiling = statistics.median(a / f for a, f in zip(same_rates, floor_rates))
        lines.append(f"mcphost / {same}: {to_same:.2f} (paired); {same} / {floor}: {ceiling:.2f} "
                     "(what an asyncio client reaches at best here)")
    cpu_ratio = statistics.median(s.cpu / s.n for s in samples[floor]) / statistics.median(
        s.cpu / s.n for s in samples[MCPHOST])
    lines.append(f"client CPU per call, floor / mcphost: {cpu_ratio:.2f}")
    row: dict[str, Any] = {
        "n": spec.n, "target": spec.target,
        "floor": statistics.median(s.wall for s in samples[floor]),
        "mcphost": statistics.median(s.wall for s in samples[MCPHOST]),
        "paired": statistics.median(s.rate / f for s, f in zip(samples[MCPHOST], floor_rates)),
        "cpu_floor": statistics.median(s.cpu for s in samples[floor]),
        "cpu_mcphost": statistics.median(s.cpu for s in samples[MCPHOST]),
    }
    return floor, lines, row


def measure(bench: HttpBench, case: str, rounds: int, contenders: list[str] | None = None) -> dict[str, list[Sample]]:
    """``rounds`` interleaved rounds of every contender (order reversed every other round),
    after one untimed warm-up run of each."""
    names = contenders or bench.contenders(case)
    for name in names:
        bench.run(case, name)
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            samples[name].append(bench.timed(case, name))
    return samples


# -- pytest-benchmark ---------------------------------------------------------------------

try:
    import pytest
except ImportError:  # pragma: no cover - the script does not need pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    ROUNDS = 7
    SDK_ROUNDS = 3
    CALIBRATION_ROUNDS = 3
    IMPLS = ("floor", MCPHOST, MCPHOST_WIDE, SDK)
    _INFO: dict[str, dict[str, Any]] = {}

    @pytest.fixture(scope="module")
    def hbench() -> Iterator[HttpBench]:
        log_at_info()
        b = HttpBench()
        try:
            b.start()
            print(f"\n[bench_http] {b.environment()}")
            # Which plain client is the floor of each case: the fastest in a short run.
            b.floor_of = {}  # type: ignore[attr-defined]
            for case, spec in CASES.items():
                samples = measure(b, case, CALIBRATION_ROUNDS, list(spec.floors))
                rates = {f: statistics.median(s.rate for s in samples[f]) for f in spec.floors}
                chosen = max(rates, key=lambda f: rates[f])
                b.floor_of[case] = chosen  # type: ignore[attr-defined]
                print(f"[bench_http] {case}: floor = {chosen} ("
                      + ", ".join(f"{f.removeprefix('floor: ')} {r:,.0f}/s" for f, r in rates.items()) + ")")
            yield b
        finally:
            b.close()
            for line in _info_lines():
                print(line)

    def _info_lines() -> list[str]:
        lines = []
        for case, info in _INFO.items():
            floor_rate = info.get("floor")
            for name in (MCPHOST_WIDE, SDK):
                if name in info and floor_rate:
                    lines.append(f"[bench_http] {case}: {name} {info[name]:,.0f} calls/s = "
                                 f"{info[name] / floor_rate:.2f} x floor ({floor_rate:,.0f}/s) (info, no target)")
        return lines

    @pytest.mark.parametrize(
        ("case", "impl"),
        [(case, impl) for case in CASES for impl in IMPLS],
        ids=[f"{case}-{impl}" for case in CASES for impl in IMPLS],
    )
    def test_http_calls(benchmark: Any, hbench: HttpBench, case: str, impl: str) -> None:
        spec = CASES[case]
        if impl == SDK and hbench.sdk is None:
            print(f"\n[bench_http] SDK contender skipped: {hbench.sdk_reason}")
            pytest.skip(f"SDK contender: {hbench.sdk_reason}")
        contender = hbench.floor_of[case] if impl == "floor" else impl  # type: ignore[attr-defined]
        n = spec.sdk_n if impl == SDK else spec.n
        benchmark.group = f"http calls: {case} (n={spec.n}; sdk n={spec.sdk_n})"
        # Each mcphost round is preceded by a floor round (timed here, not by
        # pytest-benchmark), so that the ratio compares runs made under the same load.
        paired_floor: list[float] = []

        def setup() -> None:
            if impl == MCPHOST:
                paired_floor.append(hbench.timed(case, hbench.floor_of[case]).wall)  # type: ignore[attr-defined]

        # The SDK is an order of magnitude slower: fewer rounds keep the session short.
        rounds = SDK_ROUNDS if impl == SDK else ROUNDS
        benchmark.pedantic(hbench.run, args=(case, contender), setup=setup, rounds=rounds, iterations=1,
                           warmup_rounds=1)
        median = benchmark.stats.stats.median
        benchmark.extra_info["contender"] = contender
        benchmark.extra_info["calls_per_s"] = round(n / median)
        benchmark.extra_info["n"] = n
        _INFO.setdefault(case, {})[impl] = n / median
        if impl in ("floor", MCPHOST):
            row = CALL_RESULTS.setdefault(f"http {case}", {"n": spec.n, "target": spec.target})
            row["floor" if impl == "floor" else "mcphost"] = median
        if impl == MCPHOST:
            _benchutil.record_paired(benchmark, row, paired_floor, ROUNDS, spec.target)
            benchmark.extra_info["floor"] = hbench.floor_of[case]  # type: ignore[attr-defined]


# -- script -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds per case (7)")
    parser.add_argument("--case", action="append", choices=list(CASES), help="run only this case (repeatable)")
    parser.add_argument("--no-sdk", action="store_true", help="leave the MCP SDK contender out")
    opts = parser.parse_args(argv)
    cases = opts.case or list(CASES)

    log_at_info()
    bench = HttpBench(sdk=not opts.no_sdk)
    results: dict[str, dict[str, Any]] = {}
    try:
        bench.start()
        print(bench.environment())
        if bench.sdk is None:
            print(f"SDK contender skipped: {bench.sdk_reason}")
        for case in cases:
            spec = CASES[case]
            samples = measure(bench, case, opts.rounds)
            floor, lines, row = summarize(case, samples)
            results[f"http {case}"] = row
            print(f"\n{case}: {spec.width} in flight, n={spec.n}; floor = {floor}")
            for line in lines:
                print("  " + line)
    finally:
        bench.close()
    print()
    print(
        f"median of {opts.rounds} interleaved rounds; x floor = ratio of the medians; paired = median "
        "of the per-round ratios (judged); CPU = the client's process, per call"
    )
    for line in calls_table(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

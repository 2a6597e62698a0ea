"""Memory of a client after 10,000 concurrent calls on one server: mcphost against the floor.

Each client runs in a fresh interpreter (the one running this script) with its own
``echo_server.py``: it starts, makes one call, then 10,000 calls gathered at once (all in
flight together), collects garbage, and reports its resident set (``VmRSS``, and the peak,
``VmHWM``, from ``/proc/self/status``; ``ru_maxrss`` elsewhere; and the RSS once started,
before the calls) and, under ``tracemalloc``
in a second run, what the calls left allocated (the Python heap after them minus before:
nothing should be kept per finished call). The floor is ``floor_client.FloorClient``, the
best plain asyncio client (see ``bench_calls.py``). Target: mcphost's RSS at most the
floor's + 6 MB. Nothing is asserted. Run from the repository root::

    python benchmarks/memory.py [--calls 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import json
import resource
import subprocess
import sys
import tracemalloc
from typing import Any

import _benchutil
from _benchutil import ECHO_SERVER

_benchutil.ensure_repo_on_path()

TARGET_MB = 6.0


def _status() -> dict[str, float]:
    """Resident and peak resident set of this process, in MB."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return {"rss": int(fields["VmRSS"].split()[0]) / 1024, "peak": int(fields["VmHWM"].split()[0]) / 1024}
    except OSError:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
        return {"rss": peak, "peak": peak}


async def _client(impl: str) -> tuple[Any, Any]:
    if impl == "floor":
        from floor_client import FloorClient, server_argv

        floor = FloorClient(server_argv(ECHO_SERVER))
        await floor.start()
        return floor.call, floor.close
    from mcphost import MCPHost

    host = MCPHost({"mcpServers": {"echo": {"command": sys.executable, "args": [ECHO_SERVER]}}})
    await host.initialize()
    return functools.partial(host.call_tool, "echo.echo"), host.shutdown


async def _child(impl: str, calls: int, traced: bool) -> dict[str, Any]:
    call, close = await _client(impl)
    await call({"i": -1})
    gc.collect()
    ready = _status()["rss"]
    if traced:
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
    results = await asyncio.gather(*[call({"i": i}) for i in range(calls)])
    if len(results) != calls:
        raise RuntimeError("calls lost")
    del results
    for _ in range(3):  # the loop's last callbacks of the calls run
        await asyncio.sleep(0)
    gc.collect()
    out: dict[str, Any] = {**_status(), "ready": ready}
    if traced:
        after = tracemalloc.take_snapshot()
        diff = [d for d in after.compare_to(before, "lineno") if d.size_diff > 0]
        out["kept_bytes"] = sum(d.size_diff for d in diff)
        out["top"] = [f"{d.traceback[0].filename.rsplit('/', 2)[-1]}:{d.traceback[0].lineno} "
                      f"+{d.size_diff} B ({d.count_diff:+d})" for d in sorted(diff, key=lambda d: -d.size_diff)[:5]]
        tracemalloc.stop()
    result = await close()
    del result
    return out


def _run(impl: str, calls: int, traced: bool) -> dict[str, Any]:
    argv = [sys.executable, __file__, "--child", impl, "--calls", str(calls), *(["--traced"] if traced else [])]
    done = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=600)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--child", choices=["floor", "mcphost"], help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    opts = parser.parse_args(argv)
    if opts.child:
        print(json.dumps(asyncio.run(_child(opts.child, opts.calls, opts.traced))))
        return 0
    rss = {}
    for impl in ("floor", "mcphost"):
        plain = _run(impl, opts.calls, False)
        traced = _run(impl, opts.calls, True)
        rss[impl] = plain["rss"]
        print(f"{impl:8s} RSS {plain['rss']:6.1f} MB (peak {plain['peak']:6.1f} MB; "
              f"{plain['ready']:5.1f} MB started, before the calls); "
              f"Python heap kept after the calls: {traced['kept_bytes'] / 1024:8.1f} KiB", flush=True)
        for line in traced["top"]:
            print(f"           {line}")
    extra = rss["mcphost"] - rss["floor"]
    verdict = "PASS" if extra <= TARGET_MB else "BELOW TARGET"
    print(f"mcphost RSS - floor RSS after {opts.calls} concurrent calls: {extra:+.1f} MB "
          f"(target: at most +{TARGET_MB:g} MB)  {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

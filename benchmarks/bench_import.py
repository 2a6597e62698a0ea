"""What ``import mcphost`` adds to interpreter start-up (target: ≤ 60 ms).

Each command runs as a fresh subprocess of this interpreter, about ten times, interleaved:

- ``python -c pass``: the bare interpreter;
- ``python -X importtime -c "import mcphost"``: the target measurement (wall time, and the
  cumulative ``-X importtime`` figure of the ``mcphost`` package);
- ``python -X importtime -c "from mcphost import MCPHost"``: for information, what the first
  use of the host costs (``mcphost`` loads ``MCPHost`` and asyncio lazily).

The added time is the difference of the median wall times. It is reported, never asserted.
The subprocesses use a bytecode cache (``PYTHONPYCACHEPREFIX`` in the temporary directory,
written by a warm-up run), as an installed package would; ``PYTHONDONTWRITEBYTECODE`` is
ignored for them.

Run under pytest-benchmark::

    python -m pytest benchmarks/bench_import.py --benchmark-only -s -p no:cacheprovider

or as a script::

    python benchmarks/bench_import.py [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import _benchutil
from _benchutil import IMPORT_RESULTS, REPO, import_table

COMMANDS: dict[str, list[str]] = {
    "bare": ["-c", "pass"],
    "import": ["-X", "importtime", "-c", "import mcphost"],
    "first_use": ["-X", "importtime", "-c", "from mcphost import MCPHost"],
}


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.pop("PYTHONPROFILEIMPORTTIME", None)
    # Measure what an installed package costs: bytecode cached (the warm-up run writes it),
    # in a private cache directory so that nothing is written into the checkout.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "mcphost-bench-pycache")
    return env


ENV = _env()


def mcphost_importtime_us(stderr: str) -> int:
    """Sum of the cumulative ``-X importtime`` figures of the top-level ``mcphost*`` imports.

    ``import mcphost`` is a single top-level entry; ``from mcphost import MCPHost`` adds a
    second one (``mcphost.host``, imported lazily after the package itself finished).
    """
    total = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:"):
            continue
        parts = line[len("import time:") :].split("|")
        if len(parts) != 3:
            continue
        name = parts[2].rstrip()
        # top level: exactly one space after the bar (nested imports are indented more)
        if name[:1] == " " and name[1:].startswith("mcphost"):
            try:
                total += int(parts[1])
            except ValueError:  # the header line
                continue
    return total


def run_once(kind: str, importtimes: list[int] | None = None) -> float:
    """Run one command as a subprocess; return its wall time in seconds."""
    argv = [sys.executable, *COMMANDS[kind]]
    started = time.perf_counter()
    proc = subprocess.run(argv, env=ENV, cwd=REPO, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(COMMANDS[kind])} failed:\n{proc.stderr[-2000:]}")
    if importtimes is not None:
        importtimes.append(mcphost_importtime_us(proc.stderr))
    return elapsed


def measure(runs: int = 10) -> dict[str, float]:
    """Interleaved runs of every command; medians of wall time and importtime."""
    for kind in COMMANDS:  # warm-up: bytecode caches, page cache
        run_once(kind)
    walls: dict[str, list[float]] = {kind: [] for kind in COMMANDS}
    importtimes: dict[str, list[int]] = {"import": [], "first_use": []}
    for _ in range(runs):
        for kind in COMMANDS:
            walls[kind].append(run_once(kind, importtimes.get(kind)))
    results = {kind: statistics.median(values) for kind, values in walls.items()}
    # differences between runs made next to each other (same load on the machine)
    results["added_paired"] = statistics.median(
        m - b for b, m in zip(walls["bare"], walls["import"])
    )
    results["first_use_added_paired"] = statistics.median(
        m - b for b, m in zip(walls["bare"], walls["first_use"])
    )
    results["importtime_us"] = statistics.median(importtimes["import"])
    results["first_use_importtime_us"] = statistics.median(importtimes["first_use"])
    return results


# -- pytest-benchmark -------------------------------------------------------------------

try:
    import pytest
except ImportError:  # pragma: no cover - the script does not need pytest
    pytest = None  # type: ignore[assignment]

if pytest is not None:
    ROUNDS = 10

    @pytest.mark.parametrize("kind", list(COMMANDS))
    def test_import(benchmark: Any, kind: str) -> None:
        benchmark.group = "import time (subprocess wall)"
        importtimes: list[int] = []
        # Each timed run is preceded by a bare run (not timed by pytest-benchmark): the
        # difference is taken between neighbours, which shrugs off load from elsewhere.
        paired_bare: list[float] = []

        def setup() -> None:
            if kind != "bare":
                paired_bare.append(run_once("bare"))

        benchmark.pedantic(
            run_once,
            args=(kind, importtimes),
            setup=setup,
            rounds=ROUNDS,
            iterations=1,
            warmup_rounds=1,
        )
        median = benchmark.stats.stats.median
        IMPORT_RESULTS[kind] = median
        benchmark.extra_info["command"] = " ".join(["python", *COMMANDS[kind]])
        if kind == "bare":
            return
        key = "importtime_us" if kind == "import" else "first_use_importtime_us"
        IMPORT_RESULTS[key] = statistics.median(importtimes[-ROUNDS:])
        benchmark.extra_info["importtime_cumulative_ms"] = IMPORT_RESULTS[key] / 1000
        added = statistics.median(
            m - b for b, m in zip(paired_bare[-ROUNDS:], benchmark.stats.stats.data[-ROUNDS:])
        )
        IMPORT_RESULTS["added_paired" if kind == "import" else "first_use_added_paired"] = added
        benchmark.extra_info["added_ms"] = round(added * 1000, 2)
        if kind == "import":
            benchmark.extra_info["target_ms"] = _benchutil.IMPORT_TARGET_MS
            benchmark.extra_info["result"] = _benchutil.label(
                added * 1000, _benchutil.IMPORT_TARGET_MS, higher_is_better=False
            )


# -- script -----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="runs of each command (10)")
    opts = parser.parse_args(argv)
    results = measure(opts.runs)
    print(f"python {sys.version.split()[0]}; medians of {opts.runs} interleaved runs")
    for line in import_table(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

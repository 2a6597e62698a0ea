"""Shared helpers of the benchmarks: paths, the results registry and the report tables.

Benchmarks *report* speed against targets; they never fail on it (a below-target result
prints ``BELOW TARGET``). The registry is filled by the pytest benchmark tests and printed
by ``conftest.py`` at the end of the session; the scripts print the same tables directly.
"""

from __future__ import annotations

import os
import statistics
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
ECHO_SERVER = os.path.join(HERE, "echo_server.py")


def ensure_repo_on_path() -> None:
    """Make the checkout's ``mcphost`` importable when run as a script or from elsewhere."""
    for path in (REPO, HERE):
        if path not in sys.path:
            sys.path.insert(0, path)


# case -> {"floor": seconds, "mcphost": seconds, "n": calls, "target": ratio}
CALL_RESULTS: dict[str, dict[str, Any]] = {}
# name -> seconds / microseconds; filled by bench_import
IMPORT_RESULTS: dict[str, float] = {}


def label(value: float, target: float, *, higher_is_better: bool = True) -> str:
    ok = value >= target if higher_is_better else value <= target
    return "PASS" if ok else "BELOW TARGET"


def calls_table(results: dict[str, dict[str, Any]]) -> list[str]:
    """Lines of the calls/s table: one row per case that has both a floor and an mcphost time.

    Optional row keys add columns: ``paired`` (median of the ratios of adjacent floor and
    mcphost runs; when present it is the figure judged against the target, being the one
    least disturbed by other load on the machine) and ``cpu_floor``/``cpu_mcphost`` (client
    CPU seconds per run).
    """
    rows = [row for row in results.values() if "floor" in row and "mcphost" in row]
    paired = any("paired" in row for row in rows)
    cpu = any("cpu_mcphost" in row for row in rows)
    head = f"{'case':<22} {'floor calls/s':>14} {'mcphost calls/s':>16} {'ratio':>7}"
    if paired:
        head += f" {'paired':>7}"
    if cpu:
        head += f" {'CPU us/call floor/mcphost':>26}"
    lines = [head + f" {'target':>7}  result"]
    for case, row in results.items():
        if row not in rows:
            continue
        n = row["n"]
        floor_cps = n / row["floor"]
        host_cps = n / row["mcphost"]
        ratio = host_cps / floor_cps
        line = f"{case:<22} {floor_cps:>14,.0f} {host_cps:>16,.0f} {ratio:>7.2f}"
        if paired:
            line += f" {row.get('paired', float('nan')):>7.2f}"
        if cpu:
            cpu_floor = row["cpu_floor"] / n * 1e6
            cpu_host = row["cpu_mcphost"] / n * 1e6
            line += f" {cpu_floor:>16.1f} / {cpu_host:>7.1f}"
        target = row["target"]
        judged = row.get("paired", ratio)
        line += f" {'>= ' + format(target, '.2f'):>7}  {label(judged, target)}"
        lines.append(line)
    return lines


IMPORT_TARGET_MS = 60.0


def import_table(results: dict[str, float]) -> list[str]:
    """Lines of the import-time report (wall times in seconds, importtime in microseconds).

    The added time is the median of paired differences (each run next to a bare run) when
    ``added_paired`` is known, else the difference of the medians.
    """
    lines: list[str] = []
    if "bare" in results and "import" in results:
        added = results.get("added_paired", results["import"] - results["bare"]) * 1000
        lines.append(f"python -c pass (median wall)             {results['bare'] * 1000:8.1f} ms")
        lines.append(
            f"python -X importtime -c 'import mcphost'  {results['import'] * 1000:8.1f} ms"
        )
        if "importtime_us" in results:
            lines.append(
                f"importtime cumulative for mcphost         "
                f"{results['importtime_us'] / 1000:8.1f} ms"
            )
        lines.append(
            f"added by import mcphost (wall)            {added:8.1f} ms   target <= "
            f"{IMPORT_TARGET_MS:.0f} ms  "
            f"{label(added, IMPORT_TARGET_MS, higher_is_better=False)}"
        )
    if "first_use" in results:
        added = results.get(
            "first_use_added_paired", results["first_use"] - results.get("bare", 0.0)
        )
        added *= 1000
        line = f"added by 'from mcphost import MCPHost'    {added:8.1f} ms   (info"
        if "first_use_importtime_us" in results:
            line += f"; importtime {results['first_use_importtime_us'] / 1000:.1f} ms"
        lines.append(line + ")")
    return lines


def record_paired(benchmark: Any, row: dict[str, Any], floor_times: list[float], rounds: int,
                  target: float) -> float:
    """The paired ratio of a pytest-benchmark run against the floor's rounds of the same
    case (the median of the per-round ratios): stored in ``row`` and the run's extra info."""
    mine = benchmark.stats.stats.data[-rounds:]
    paired = statistics.median(f / m for f, m in zip(floor_times[-rounds:], mine))
    row["paired"] = paired
    benchmark.extra_info["ratio_vs_floor"] = round(paired, 3)
    benchmark.extra_info["target"] = target
    benchmark.extra_info["result"] = label(paired, target)
    return paired

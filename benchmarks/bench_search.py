"""Tool search: how often the right tool comes first, and what the index costs.

Quality: the evaluation set ``tests/host/fixtures/search_queries.json`` (queries written from
what a user wants, each with the tools that would do it) over the real tool lists of
``tests/host/fixtures/servers/`` (13 servers, 134 tools). For each half of the set
(``tuning``: the ranker was tuned on it; ``held-out``: never looked at while tuning) it
prints top-1 (the first hit is a right tool), top-3 and MRR (mean of 1 / rank of the first
right tool; 0 when none is found), for the lexical ranker alone.

Speed: index build and query time for 10,000 tools (the real ones, repeated under 75
server names with their words shuffled a little so that the vocabulary grows as it would).
Targets: build < 1 s, query < 5 ms. Printed with the wall clock and the process's CPU
time (on a shared machine the two differ by the load), never asserted.

Run ``python benchmarks/bench_search.py`` (``--misses tuning`` lists the tuning half's
misses) or ``python -m pytest benchmarks/bench_search.py -s -p no:cacheprovider``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcphost.host.search import ToolIndex  # noqa: E402

FIXTURES = ROOT / "tests" / "host" / "fixtures"


def load_servers() -> dict[str, list[dict[str, Any]]]:
    return {json.loads(p.read_text(encoding="utf-8"))["server"]: json.loads(p.read_text(encoding="utf-8"))["tools"]
            for p in sorted((FIXTURES / "servers").glob("*.json"))}


def build(servers: dict[str, list[dict[str, Any]]]) -> ToolIndex:
    return ToolIndex((f"{s}.{t['name']}", s, t) for s, tools in servers.items() for t in tools)


def evaluate(index: ToolIndex, split: str) -> tuple[dict[str, float], list[tuple[str, list[str], list[str]]]]:
    queries = [q for q in json.loads((FIXTURES / "search_queries.json").read_text(encoding="utf-8"))
               if q["split"] == split]
    top1 = top3 = 0
    reciprocal = 0.0
    misses = []
    for q in queries:
        ranked = [index.names[i] for i, _ in index.ranked(q["query"])]
        rank = next((n for n, name in enumerate(ranked, start=1) if name in q["expected"]), None)
        top1 += rank == 1
        top3 += rank is not None and rank <= 3
        reciprocal += 1.0 / rank if rank else 0.0
        if rank != 1:
            misses.append((q["query"], q["expected"], ranked[:3]))
    n = len(queries)
    return {"queries": n, "top1": top1 / n, "top3": top3 / n, "mrr": reciprocal / n}, misses


def synthetic(servers: dict[str, list[dict[str, Any]]], count: int, seed: int = 7) -> list[tuple[str, str, dict[str, Any]]]:
    """``count`` tools: the real ones again and again, each with three more words of their
    vocabulary and one made-up word, so that the vocabulary grows as it would."""
    rng = random.Random(seed)
    base = [t for tools in servers.values() for t in tools]
    vocabulary = sorted({w for t in base for w in str(t.get("description") or "").split() if w.isalpha()})
    syllables = ["ka", "lo", "mi", "ter", "sun", "va", "rex", "po", "din", "qu", "el", "bor"]
    out = []
    for i in range(count):
        tool = dict(base[i % len(base)])
        made_up = "".join(rng.choice(syllables) for _ in range(rng.randrange(2, 5)))
        extra = " ".join([rng.choice(vocabulary) for _ in range(3)] + [made_up])
        tool["name"] = f"{tool['name']}_{made_up}"
        tool["description"] = f"{tool.get('description') or ''} {extra}"
        server = f"server{i % 75}"
        out.append((f"{server}.{tool['name']}", server, tool))
    return out


def speed(servers: dict[str, list[dict[str, Any]]], count: int = 10_000, rounds: int = 5) -> dict[str, float]:
    """Medians of wall-clock and CPU time (the process's own; on a shared machine the wall
    clock also counts the time other processes had the cores)."""
    entries = synthetic(servers, count)
    walls, cpus = [], []
    index = None
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        index = ToolIndex(entries)
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    assert index is not None
    queries = [q["query"] for q in json.loads((FIXTURES / "search_queries.json").read_text(encoding="utf-8"))]
    query_walls, query_cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        for q in queries:
            index.search(q, 5)
        query_cpus.append((time.process_time() - cpu) / len(queries))
        query_walls.append((time.perf_counter() - wall) / len(queries))
    return {"tools": count, "build_s": statistics.median(walls), "build_cpu_s": statistics.median(cpus),
            "query_ms": statistics.median(query_walls) * 1000, "query_cpu_ms": statistics.median(query_cpus) * 1000}


def report(misses_of: str | None = None, splits: tuple[str, ...] = ("tuning", "held-out"), timed: bool = True) -> None:
    servers = load_servers()
    index = build(servers)
    print(f"tool search over {len(index)} tools of {len(servers)} servers (lexical ranker alone)")
    for split in splits:
        result, misses = evaluate(index, split)
        print(f"  {split:>8}: {result['queries']} queries  top-1 {result['top1']:.1%}  "
              f"top-3 {result['top3']:.1%}  MRR {result['mrr']:.3f}")
        if split == misses_of:
            for query, want, got in misses:
                print(f"    {query!r}: want {want}, got {got}")
    if not timed:
        return
    timing = speed(servers)

    def verdict(value: float, target: float) -> str:
        return "PASS" if value < target else "BELOW TARGET"

    print(f"  {timing['tools']:,} tools: index build {timing['build_s'] * 1000:.0f} ms wall, "
          f"{timing['build_cpu_s'] * 1000:.0f} ms CPU (target < 1000 ms: {verdict(timing['build_cpu_s'], 1.0)} by CPU, "
          f"{verdict(timing['build_s'], 1.0)} by wall)")
    print(f"  {timing['tools']:,} tools: query {timing['query_ms']:.2f} ms wall, {timing['query_cpu_ms']:.2f} ms CPU "
          f"(target < 5 ms: {verdict(timing['query_cpu_ms'], 5.0)} by CPU, {verdict(timing['query_ms'], 5.0)} by wall)")


def test_search_quality_and_speed() -> None:
    report()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--misses", choices=["tuning"], help="list the misses of the tuning half")
    parser.add_argument("--tuning-only", action="store_true", help="only the tuning half, no timing")
    args = parser.parse_args()
    report(args.misses, ("tuning",) if args.tuning_only else ("tuning", "held-out"), not args.tuning_only)

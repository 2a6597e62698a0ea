"""Validation speed of mcphost.schema against fastjsonschema and jsonschema.

Every case of the required JSON-Schema-Test-Suite files (draft 2020-12 and draft-07, minus
refRemote/vocabulary) whose schema compiles is compiled once; then all of its instances are
validated many times. fastjsonschema only knows drafts 4/6/7, so the comparison uses:

* the draft-07 cases fastjsonschema compiles, and
* the 2020-12 cases fastjsonschema compiles when told they are draft-07 (their
  ``$schema`` removed). Its answers may differ there; only the speed is compared.

Cases with a ``$ref`` outside the schema are left out of the comparison, because
fastjsonschema would try to download them.

Run ``pytest benchmarks/bench_schema.py`` (pytest-benchmark) or
``python benchmarks/bench_schema.py`` for a plain report of validations per second.
mcphost is timed in two modes: ``is_valid`` (a bool, like the others' fast paths) and
``validate`` (raises a ValidationError with path and message on failure).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mcphost import schema as mschema  # noqa: E402
from mcphost.errors import MCPHostError  # noqa: E402

SUITE = ROOT / "tests" / "data" / "json-schema-test-suite" / "tests"
SKIP = {"refRemote.json", "vocabulary.json"}

try:
    import fastjsonschema
except ImportError:  # pragma: no cover
    fastjsonschema = None
try:
    import jsonschema
except ImportError:  # pragma: no cover
    jsonschema = None

Case = tuple[Any, list[Any]]  # (schema, instances)


def _external_ref(sch: Any) -> bool:
    if isinstance(sch, dict):
        for k, v in sch.items():
            if k in ("$ref", "$dynamicRef") and isinstance(v, str) and not v.startswith("#"):
                return True
            if k in ("$id", "$schema") and isinstance(v, str) and "localhost" in v:
                return True
            if _external_ref(v):
                return True
    elif isinstance(sch, list):
        return any(_external_ref(v) for v in sch)
    return False


def load_cases(draft: str) -> list[Case]:
    """All required cases of one draft directory."""
    cases = []
    for path in sorted((SUITE / draft).glob("*.json")):
        if path.name in SKIP:
            continue
        for case in json.loads(path.read_text(encoding="utf-8")):
            cases.append((case["schema"], [t["data"] for t in case["tests"]]))
    return cases


def _fjs_compile(sch: Any) -> Callable[[Any], Any] | None:
    if fastjsonschema is None or _external_ref(sch):
        return None
    if isinstance(sch, dict) and "2020-12" in str(sch.get("$schema", "")):
        sch = {k: v for k, v in sch.items() if k != "$schema"}
    try:
        fn: Callable[[Any], Any] = fastjsonschema.compile(sch)
    except Exception:  # any failure means "not comparable"
        return None
    return fn


def build() -> dict[str, Any]:
    """Compile everything once; returns the per-engine (fn, instance) pairs."""
    pairs: dict[str, list[tuple[Callable[[Any], Any], Any]]] = {
        "mcphost": [], "mcphost_validate": [], "fastjsonschema": [], "jsonschema": [],
        "mcphost_all": [], "mcphost_draft7": [], "fastjsonschema_draft7": [],
    }
    counts = {"draft7": 0, "draft2020-12": 0}
    for draft, dialect in (("draft7", "draft-07"), ("draft2020-12", "2020-12")):
        for sch, instances in load_cases(draft):
            try:
                v = mschema.compile(sch, default_dialect=dialect)
            except MCPHostError:
                continue
            pairs["mcphost_all"] += [(v.is_valid, i) for i in instances]
            fjs = _fjs_compile(sch)
            if fjs is None:
                continue
            usable = []
            for inst in instances:
                try:
                    fjs(inst)
                except fastjsonschema.JsonSchemaException:
                    pass
                except Exception:  # fastjsonschema crashed: skip
                    continue
                usable.append(inst)
            counts[draft] += len(usable)
            pairs["mcphost"] += [(v.is_valid, i) for i in usable]
            pairs["mcphost_validate"] += [(v.validate, i) for i in usable]
            pairs["fastjsonschema"] += [(fjs, i) for i in usable]
            if draft == "draft7":
                pairs["mcphost_draft7"] += [(v.is_valid, i) for i in usable]
                pairs["fastjsonschema_draft7"] += [(fjs, i) for i in usable]
            if jsonschema is not None:
                cls = jsonschema.Draft7Validator if draft == "draft7" else (
                    jsonschema.Draft202012Validator
                )
                jv = cls(sch)
                pairs["jsonschema"] += [(jv.is_valid, i) for i in usable]
    return {"pairs": pairs, "counts": counts}


def run_bool(pairs: list[tuple[Callable[[Any], Any], Any]]) -> None:
    """Validate every instance once (engines that return a bool)."""
    for fn, inst in pairs:
        fn(inst)


def run_raising(pairs: list[tuple[Callable[[Any], Any], Any]]) -> None:
    """Validate every instance once (engines that raise on invalid data)."""
    for fn, inst in pairs:
        try:
            fn(inst)
        except Exception:  # invalid instances raise by design
            pass


RUNNERS: dict[str, Callable[[list[tuple[Callable[[Any], Any], Any]]], None]] = {
    "mcphost": run_bool,
    "mcphost_all": run_bool,
    "mcphost_draft7": run_bool,
    "fastjsonschema_draft7": run_raising,
    "mcphost_validate": run_raising,
    "fastjsonschema": run_raising,
    "jsonschema": run_bool,
}


def measure(
    names: list[str], pairs: dict[str, list[tuple[Callable[[Any], Any], Any]]], seconds: float
) -> dict[str, float]:
    """Validations per second for each engine.

    Engines are timed in interleaved rounds and the best round counts, so a noisy machine
    (other processes, frequency scaling) skews every engine alike.
    """
    best = {name: float("inf") for name in names}
    for name in names:
        RUNNERS[name](pairs[name])  # warm up
    deadline = time.perf_counter() + seconds * len(names)
    rounds = 0
    while rounds < 5 or (time.perf_counter() < deadline and rounds < 200):
        rounds += 1
        for name in names:
            t0 = time.perf_counter()
            RUNNERS[name](pairs[name])
            best[name] = min(best[name], time.perf_counter() - t0)
    return {name: len(pairs[name]) / best[name] for name in names}


def report(seconds: float = 2.0) -> dict[str, float]:
    """Print validations/second and the ratios; returns the rates."""
    built = build()
    pairs, counts = built["pairs"], built["counts"]
    print(
        f"comparable instances: {len(pairs['mcphost'])} "
        f"(draft-07: {counts['draft7']}, 2020-12 compiled as draft-07 by fastjsonschema: "
        f"{counts['draft2020-12']}); all mcphost instances: {len(pairs['mcphost_all'])}"
    )
    names = [
        n
        for n in (
            "mcphost", "mcphost_validate", "fastjsonschema", "jsonschema", "mcphost_all",
            "mcphost_draft7", "fastjsonschema_draft7",
        )
        if pairs[n]
    ]
    rates = measure(names, pairs, seconds)
    for name in names:
        print(f"  {name:22} {rates[name]:>12,.0f} validations/s")
    if "fastjsonschema" in rates:
        fjs = rates["fastjsonschema"]
        print(f"mcphost is_valid / fastjsonschema: {rates['mcphost'] / fjs:.2f}x")
        print(f"mcphost validate / fastjsonschema: {rates['mcphost_validate'] / fjs:.2f}x")
        d7 = rates["mcphost_draft7"] / rates["fastjsonschema_draft7"]
        print(f"mcphost is_valid / fastjsonschema, draft-07 cases only: {d7:.2f}x")
    if "jsonschema" in rates:
        print(f"mcphost is_valid / jsonschema:     {rates['mcphost'] / rates['jsonschema']:.2f}x")
    return rates


# --- pytest-benchmark ----------------------------------------------------------------------

_BUILT: dict[str, Any] = {}


def _pairs(name: str) -> list[tuple[Callable[[Any], Any], Any]]:
    if not _BUILT:
        _BUILT.update(build())
    return _BUILT["pairs"][name]  # type: ignore[no-any-return]


def _bench(benchmark: Any, name: str) -> None:
    pairs = _pairs(name)
    if not pairs:
        import pytest

        pytest.skip(f"{name} is not installed")
    benchmark.extra_info["instances"] = len(pairs)
    benchmark(RUNNERS[name], pairs)


def test_mcphost_is_valid(benchmark: Any) -> None:
    _bench(benchmark, "mcphost")


def test_mcphost_validate(benchmark: Any) -> None:
    _bench(benchmark, "mcphost_validate")


def test_fastjsonschema(benchmark: Any) -> None:
    _bench(benchmark, "fastjsonschema")


def test_jsonschema(benchmark: Any) -> None:
    _bench(benchmark, "jsonschema")


def test_mcphost_whole_suite(benchmark: Any) -> None:
    _bench(benchmark, "mcphost_all")


def test_ratios() -> None:
    """Prints the ratios (run with -s to see them); speed is reported, not asserted."""
    report(seconds=0.5)


if __name__ == "__main__":
    report()

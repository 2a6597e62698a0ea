"""The official conformance suite's ``auth/*`` client scenarios, run against mcphost's OAuth flow.

Every ``auth/*`` client scenario of ``@0.1.16`` and of ``@0.2.0-alpha.12``, once per spec
version it is tagged with (``extension`` ones once, without a version), run by
``tests/conformance_auth.py`` (mcphost's public API, a headless ``on_authorize``). All runs
start together in a bounded pool when the first test asks for them; each test then asserts
one run: the runner's exit 0 and no ``FAILURE`` or ``WARNING`` check.

Not run, and why (``test_auth_scenario_lists_are_current`` keeps this list and the suite's
``list`` output equal):

- every scenario at ``2026-07-28`` while mcphost does not speak that wire
  (``mcphost.protocol.versions.MODERN_VERSIONS``): its mock speaks only the stateless wire.
  Once the modern era is there, they are run like the others (``AT_2026``).
"""

from __future__ import annotations

import json
import re
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_conformance import (
    V016,
    V020,
    Suite,
    describe,
    run_bounded,
    suite,  # noqa: F401 -- the session fixture
    tail,
)

from mcphost.protocol import versions

CLIENT = Path(__file__).resolve().parent / "conformance_auth.py"
#: Runs at once: the runner and its client are two processes each; the machine may have 2 cores.
POOL = 4
RUN_TIMEOUT = 120.0
#: Scenarios mcphost does not implement (none: every extension is run).
UNSUPPORTED: set[str] = set()
#: The wire mcphost does not speak yet.
NOT_YET_WIRE = "2026-07-28"

V016_RUNS = [
    (name, spec)
    for name, specs in {
        "auth/metadata-default": ["2025-11-25"], "auth/metadata-var1": ["2025-11-25"],
        "auth/metadata-var2": ["2025-11-25"], "auth/metadata-var3": ["2025-11-25"],
        "auth/basic-cimd": ["2025-11-25"], "auth/scope-from-www-authenticate": ["2025-11-25"],
        "auth/scope-from-scopes-supported": ["2025-11-25"], "auth/scope-omitted-when-undefined": ["2025-11-25"],
        "auth/scope-step-up": ["2025-11-25"], "auth/scope-retry-limit": ["2025-11-25"],
        "auth/token-endpoint-auth-basic": ["2025-06-18", "2025-11-25"],
        "auth/token-endpoint-auth-post": ["2025-06-18", "2025-11-25"],
        "auth/token-endpoint-auth-none": ["2025-06-18", "2025-11-25"],
        "auth/pre-registration": ["2025-11-25"],
        "auth/2025-03-26-oauth-metadata-backcompat": ["2025-03-26"],
        "auth/2025-03-26-oauth-endpoint-fallback": ["2025-03-26"],
        "auth/resource-mismatch": ["draft"], "auth/offline-access-scope": ["draft"],
        "auth/offline-access-not-supported": ["draft"], "auth/client-credentials-basic": ["extension"],
        "auth/client-credentials-jwt": ["extension"], "auth/cross-app-access-complete-flow": ["extension"],
    }.items()
    for spec in specs
]
V020_RUNS = [
    (name, spec)
    for name, specs in {
        "auth/metadata-default": ["2025-11-25"], "auth/metadata-var1": ["2025-11-25"],
        "auth/metadata-var2": ["2025-11-25"], "auth/metadata-var3": ["2025-11-25"],
        "auth/basic-cimd": ["2025-11-25"], "auth/scope-from-www-authenticate": ["2025-11-25"],
        "auth/scope-from-scopes-supported": ["2025-11-25"], "auth/scope-omitted-when-undefined": ["2025-11-25"],
        "auth/scope-step-up": ["2025-11-25"], "auth/scope-retry-limit": ["2025-11-25"],
        "auth/token-endpoint-auth-basic": ["2025-06-18", "2025-11-25"],
        "auth/token-endpoint-auth-post": ["2025-06-18", "2025-11-25"],
        "auth/token-endpoint-auth-none": ["2025-06-18", "2025-11-25"],
        "auth/pre-registration": ["2025-11-25"],
        "auth/2025-03-26-oauth-metadata-backcompat": ["2025-03-26"],
        "auth/2025-03-26-oauth-endpoint-fallback": ["2025-03-26"],
        "auth/client-credentials-basic": ["extension"], "auth/client-credentials-jwt": ["extension"],
        "auth/enterprise-managed-authorization": ["extension"], "auth/wif-jwt-bearer": ["extension"],
        "auth/dpop": ["extension"], "auth/dpop-nonce": ["extension"],
    }.items()
    for spec in specs
]
#: Every ``auth/*`` scenario 0.2.0-alpha.12 tags with 2026-07-28: run at that version once mcphost
#: speaks its wire (the modern era), which the conformance client's host finds by itself.
AT_2026 = [
    "auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3", "auth/basic-cimd",
    "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported", "auth/scope-omitted-when-undefined",
    "auth/scope-step-up", "auth/scope-retry-limit", "auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none", "auth/pre-registration", "auth/resource-mismatch", "auth/offline-access-scope",
    "auth/offline-access-not-supported", "auth/authorization-server-migration", "auth/iss-supported",
    "auth/iss-not-advertised", "auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected",
    "auth/iss-normalized", "auth/metadata-issuer-mismatch",
]
SPEAKS_2026 = NOT_YET_WIRE in getattr(versions, "MODERN_VERSIONS", ())
if SPEAKS_2026:
    V020_RUNS += [(name, NOT_YET_WIRE) for name in AT_2026]
RUNS = [(V016, name, spec) for name, spec in V016_RUNS] + [(V020, name, spec) for name, spec in V020_RUNS]

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(900)]


def _command() -> str:
    parts = [sys.executable, str(CLIENT)]
    assert not any(c.isspace() for p in parts for c in p), f"the runner splits --command on spaces: {parts}"
    return " ".join(parts)


def _one(runner: Suite, version: str, scenario: str, spec: str, out: Path) -> str | None:
    """Run one scenario; ``None`` if it passed, else what failed."""
    args = ["client", "--command", _command(), "--scenario", scenario, "-o", str(out)]
    # 0.1.16 tags some scenarios "draft" or "extension": it runs them without a version.
    if spec not in ("draft", "extension"):
        args += ["--spec-version", spec]
    proc = run_bounded([str(runner.node), str(runner.script(version)), *args], RUN_TIMEOUT, env=runner.env())
    results = sorted(out.rglob("checks.json"))
    runner = f"runner exit {proc.returncode}; its output:\n{tail(proc.stdout + proc.stderr)}"
    if len(results) != 1:
        return f"expected one checks.json, found {results}\n{runner}"
    checks: list[dict[str, Any]] = json.loads(results[0].read_text())
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    if proc.returncode != 0 or bad or not any(c.get("status") == "SUCCESS" for c in checks):
        client_err = (results[0].parent / "stderr.txt").read_text().strip()
        return "\n".join(describe(c) for c in bad) + f"\n  client stderr: {tail(client_err, 10)}\n{runner}"
    return None


@pytest.fixture(scope="module")
def outcomes(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], Future[str | None]]:
    runner: Suite = request.getfixturevalue("suite")
    base = tmp_path_factory.mktemp("conformance-auth")
    pool = ThreadPoolExecutor(POOL)
    futures = {
        run: pool.submit(_one, runner, run[0], run[1], run[2], base / f"{i}")
        for i, run in enumerate(RUNS)
    }
    yield futures  # type: ignore[misc]
    pool.shutdown(wait=True)


@pytest.mark.parametrize(("version", "scenario", "spec"), RUNS, ids=[f"{v}-{s}-{p}" for v, s, p in RUNS])
def test_auth_scenario(outcomes: dict[tuple[str, str, str], Future[str | None]], version: str, scenario: str,
                       spec: str) -> None:
    failure = outcomes[(version, scenario, spec)].result(timeout=RUN_TIMEOUT * len(RUNS) / POOL + 60)
    assert failure is None, f"{scenario} ({version}, {spec}): failing checks:\n{failure}"


def _listed(runner: Suite, version: str) -> list[tuple[str, str]]:
    listed = runner.run(version, "list", "--client", timeout=60)
    assert listed.returncode == 0, listed.stderr
    pairs = []
    for name, tags in re.findall(r"^\s+-\s+(auth/\S+)\s+\[([^\]]*)\]", listed.stdout, re.MULTILINE):
        pairs += [(name, tag.strip()) for tag in tags.split(",")]
    assert pairs, listed.stdout
    return pairs


def test_auth_scenario_lists_are_current(request: pytest.FixtureRequest) -> None:
    """Every (scenario, spec version) the suite lists is run above, or named as not run."""
    runner: Suite = request.getfixturevalue("suite")
    for version, runs in ((V016, V016_RUNS), (V020, V020_RUNS)):
        listed = _listed(runner, version)
        expected = sorted(pair for pair in listed if pair[0] not in UNSUPPORTED
                          and (SPEAKS_2026 or pair[1] != NOT_YET_WIRE))
        assert sorted(runs) == expected, version

"""The official MCP conformance suite (``@modelcontextprotocol/conformance``), client side.

The suite's runner starts a mock MCP server per scenario, runs ``tests/conformance_client.py``
(mcphost's public API, under this very Python, so the installed mcphost is what is tested)
with the server's URL, and grades what the mock saw into ``checks.json``. Each test asserts
the runner's exit code 0 and no ``FAILURE`` or ``WARNING`` check, and prints the failing
checks when there are some.

Every client scenario each suite version lists that needs no OAuth is run once per spec
version it is tagged with (``--scenario NAME --spec-version V``): 0.1.16 (npm ``latest``)
and 0.2.0-alpha.12, whose ``--spec-version 2026-07-28`` runs the stateless wire (the client
then configures ``protocol: "modern"``). The skills extension's scenarios (``sep-2640-*``) are
tagged ``extension``, which is no wire: they run without ``--spec-version`` (the runner's
default wire). ``test_scenario_lists_are_current`` checks the runs
against what each version's ``list --client`` prints. The runs go at once in a bounded pool
(a session fixture); one test per run asserts its outcome. The ``auth/*`` scenarios are run
one by one in tests/test_conformance_auth.py. ``test_requirement_set_passes`` runs 0.1.16's
``--suite all`` and each of 0.2.0's frozen requirement sets whole (``--requirements V``: the OAuth and the other scenarios
together, at that revision's wire, with one client command: conformance_client.py hands the
``auth/*`` ones to its OAuth client) and asserts the runner's verdict and its totals.

The suite needs Node >= 22 (the machine's Node 20 cannot run it): ``.ci/conformance-setup``
installs the npm package ``node@22`` and both suite versions into a cache folder,
``$MCPHOST_CONFORMANCE_CACHE`` or ``${XDG_CACHE_HOME:-~/.cache}/mcphost-conformance``. When
that folder lacks them the session fixture runs the script once; the tests are skipped only
when npm is missing or the install fails for lack of network.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / ".ci" / "conformance-setup"
CLIENT = Path(__file__).resolve().parent / "conformance_client.py"
CACHE_ENV = "MCPHOST_CONFORMANCE_CACHE"
NODE = Path("node22/node_modules/.bin/node")
SUITE_JS = Path("node_modules/@modelcontextprotocol/conformance/dist/index.js")

V016 = "0.1.16"
V020 = "0.2.0-alpha.12"
#: The tag of an extension's scenarios: no spec version, so no ``--spec-version``.
EXTENSION = "extension"
#: Every client scenario of each suite version that needs no OAuth, once per spec version it
#: is tagged with (``list --client``), as (scenario, spec version). 0.2.0's
#: ``--spec-version`` also sets the wire (2026-07-28: the stateless era), which the client
#: reads from ``MCP_CONFORMANCE_PROTOCOL_VERSION``; 0.1.16 only filters by it.
RUNS: dict[str, list[tuple[str, str]]] = {
    V016: [
        ("initialize", "2025-06-18"), ("initialize", "2025-11-25"),
        ("tools_call", "2025-06-18"), ("tools_call", "2025-11-25"),
        ("elicitation-sep1034-client-defaults", "2025-11-25"),
        ("sse-retry", "2025-11-25"),
    ],
    V020: [
        ("initialize", "2025-06-18"), ("initialize", "2025-11-25"),
        ("tools_call", "2025-06-18"), ("tools_call", "2025-11-25"), ("tools_call", "2026-07-28"),
        ("elicitation-sep1034-client-defaults", "2025-11-25"),
        ("sse-retry", "2025-11-25"),
        ("request-metadata", "2026-07-28"),
        ("sep-2322-client-request-state", "2026-07-28"),
        ("http-standard-headers", "2026-07-28"),
        ("http-custom-headers", "2026-07-28"),
        ("http-invalid-tool-headers", "2026-07-28"),
        ("json-schema-ref-no-deref", "2026-07-28"),
        ("json-schema-2020-12-preservation", "2025-11-25"), ("json-schema-2020-12-preservation", "2026-07-28"),
        ("sep-2640-client-no-prefetch", EXTENSION), ("sep-2640-client-verify-digest", EXTENSION),
        ("sep-2640-client-verify-size", EXTENSION), ("sep-2640-client-verify-frontmatter", EXTENSION),
    ],
}
#: Runs at once: each is a Node runner and a Python client, mostly waiting on each other.
POOL = 4

SETUP_TIMEOUT = 900.0
#: One scenario: the runner kills the client after 30 s; this bounds the runner itself.
RUN_TIMEOUT = 180.0

# The suite-wide pytest-timeout is too short for the first test, which may install the
# suite (SETUP_TIMEOUT) before running its scenario (RUN_TIMEOUT): both are bounded already.
pytestmark = [pytest.mark.conformance, pytest.mark.timeout(SETUP_TIMEOUT + RUN_TIMEOUT + 60)]
#: npm's words for a registry it could not reach.
NETWORK_ERROR = re.compile(
    r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|EHOSTUNREACH|"
    r"network request to .* failed|request to .* failed, reason",
)


@dataclass(frozen=True)
class Suite:
    cache: Path

    @property
    def node(self) -> Path:
        return self.cache / NODE

    def script(self, version: str) -> Path:
        return self.cache / f"conformance-{version}" / SUITE_JS

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MCP_CONFORMANCE_")}
        env["PATH"] = f"{self.node.parent}{os.pathsep}{env.get('PATH', '')}"
        # The client imports this checkout's mcphost, installed or not.
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
        return env

    def run(self, version: str, *args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
        return run_bounded([str(self.node), str(self.script(version)), *args], timeout, env=self.env())


def run_bounded(cmd: list[str], timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` in its own process group; past ``timeout`` the whole group is killed."""
    with subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        text=True, encoding="utf-8", errors="replace", start_new_session=True, **kwargs,
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def cache_dir() -> Path:
    given = os.environ.get(CACHE_ENV)
    if given:
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "mcphost-conformance"


def installed(suite: Suite) -> bool:
    return suite.node.is_file() and all(suite.script(v).is_file() for v in (V016, V020))


@pytest.fixture(scope="session")
def suite() -> Suite:
    found = Suite(cache_dir())
    if installed(found):
        return found
    if shutil.which("npm") is None or shutil.which("npx") is None:
        pytest.skip(f"conformance suite not installed in {found.cache} and npm/npx are missing to install it")
    try:
        setup = run_bounded(["bash", str(SETUP), str(found.cache)], SETUP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.skip(f".ci/conformance-setup {found.cache} timed out after {SETUP_TIMEOUT:.0f} s (no network?)")
    output = (setup.stderr + setup.stdout).strip()
    if setup.returncode != 0:
        if NETWORK_ERROR.search(output):
            first = next(line for line in output.splitlines() if NETWORK_ERROR.search(line))
            pytest.skip(f".ci/conformance-setup could not reach the npm registry: {first.strip()[:200]}")
        pytest.fail(f".ci/conformance-setup {found.cache} exited {setup.returncode}:\n{output[-3000:]}")
    assert installed(found), f".ci/conformance-setup succeeded but {found.cache} lacks the suite:\n{output}"
    return found


def client_command() -> str:
    # The runner splits --command on spaces: no quoting can survive it.
    parts = [sys.executable, str(CLIENT)]
    for part in parts:
        if any(c.isspace() for c in part):
            pytest.fail(f"the conformance runner splits its --command on spaces; this path has one: {part!r}")
    return " ".join(parts)


def describe(check: dict[str, Any]) -> str:
    text = f"  [{check.get('status')}] {check.get('id')}: {check.get('errorMessage') or check.get('description', '')}"
    if check.get("details") is not None:
        text += f"\n      details: {json.dumps(check['details'])[:1500]}"
    return text


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(ANSI.sub("", text).rstrip().splitlines()[-lines:])


def run_scenario(suite: Suite, version: str, scenario: str, spec: str, out: Path) -> str | None:
    """Run one scenario; ``None`` when it passed, else what failed."""
    wire = [] if spec == EXTENSION else ["--spec-version", spec]
    args = ["client", "--command", client_command(), "--scenario", scenario, *wire, "-o", str(out)]
    try:
        proc = suite.run(version, *args)
    except subprocess.TimeoutExpired:
        return f"{scenario} ({version}, {spec}): the runner did not end within {RUN_TIMEOUT:.0f} s"
    results = sorted(out.rglob("checks.json"))
    runner = f"runner exit {proc.returncode}; its output:\n{tail(proc.stdout + proc.stderr)}"
    if len(results) != 1:
        return f"{scenario}: expected one checks.json under {out}, found {results}\n{runner}"
    checks: list[dict[str, Any]] = json.loads(results[0].read_text())
    client_err = (results[0].parent / "stderr.txt").read_text().strip()
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    report = "\n".join(describe(c) for c in bad)
    if client_err:
        report += f"\n  client stderr: {tail(client_err, 10)}"
    if proc.returncode != 0 or bad:
        return f"{scenario} ({version}, {spec}): failing checks:\n{report}\n{runner}"
    if not any(c.get("status") == "SUCCESS" for c in checks):
        return f"{scenario} ({version}, {spec}): no check passed: {checks}\n{runner}"
    return None


@pytest.fixture(scope="session")
def outcomes(suite: Suite, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str, str], str | None]:
    """Every run of :data:`RUNS`, at most :data:`POOL` at once (each run uses its own port)."""
    root = tmp_path_factory.mktemp("conformance")
    runs = [(version, scenario, spec) for version, listed in RUNS.items() for scenario, spec in listed]
    with ThreadPoolExecutor(POOL) as pool:
        futures = {run: pool.submit(run_scenario, suite, *run[:2], run[2], root / "-".join(run))
                   for run in runs}
        return {run: future.result() for run, future in futures.items()}


@pytest.mark.parametrize(("version", "scenario", "spec"),
                         [(version, scenario, spec) for version, listed in RUNS.items() for scenario, spec in listed])
def test_conformance(outcomes: dict[tuple[str, str, str], str | None], version: str, scenario: str,
                     spec: str) -> None:
    problem = outcomes[(version, scenario, spec)]
    assert problem is None, problem


def test_scenario_lists_are_current(suite: Suite) -> None:
    """The runs above are every non-OAuth client scenario each version lists, once per tag."""
    for version, runs in RUNS.items():
        listed = suite.run(version, "list", "--client", timeout=60)
        assert listed.returncode == 0, listed.stderr
        tagged = re.findall(r"^\s+-\s+(\S+)\s+\[([^\]]*)\]", listed.stdout, re.MULTILINE)
        assert tagged, listed.stdout
        expected = [(name, spec) for name, tags in tagged for spec in tags.split(",")
                    if not name.startswith("auth/")]
        assert sorted(expected) == sorted(runs), listed.stdout


#: The runner's summary of a requirement run ("Total: 487 passed, 0 failed, 0 warnings").
TOTAL = re.compile(r"^Total: (\d+) passed, (\d+) failed, (\d+) warnings", re.MULTILINE)


@pytest.mark.parametrize(("version", "selection"), [(V016, ("--suite", "all")),
                                                    (V020, ("--requirements", "2025-11-25")),
                                                    (V020, ("--requirements", "2026-07-28"))])
def test_requirement_set_passes(suite: Suite, version: str, selection: tuple[str, str], tmp_path: Path) -> None:
    """0.1.16's whole suite and each of 0.2.0's frozen requirement sets, run whole as an SDK's CI
    would run them: every scenario passes, scored or not (extensions and later additions)."""
    proc = suite.run(version, "client", "--command", client_command(), *selection, "-o", str(tmp_path))
    output = ANSI.sub("", proc.stdout + proc.stderr)
    total = TOTAL.search(output)
    assert proc.returncode == 0 and total is not None, tail(output, 60)
    passed, failed, warnings = map(int, total.groups())
    assert (failed, warnings) == (0, 0) and passed > 0, tail(output, 60)
    assert not re.search(r"^\s*✗", output, re.MULTILINE), tail(output, 60)

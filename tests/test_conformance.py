"""The official MCP conformance suite (``@modelcontextprotocol/conformance``), client side.

The suite's runner starts a mock MCP server per scenario, runs ``tests/conformance_client.py``
(mcphost's public API, under this very Python, so the installed mcphost is what is tested)
with the server's URL, and grades what the mock saw into ``checks.json``. Each test asserts
the runner's exit code 0 and no ``FAILURE`` or ``WARNING`` check, and prints the failing
checks when there are some.

- 0.1.16 (npm ``latest``): the four client scenarios that need no OAuth.
- 0.2.0-alpha.12, the client scenarios of ``--requirements 2025-11-25`` that need no OAuth:
  the four scored ones and ``json-schema-2020-12-preservation`` (run by that requirement
  set, not scored). ``--requirements`` cannot be narrowed (it refuses ``--scenario``), so
  each is run alone with ``--scenario NAME --spec-version 2025-11-25``, which is what the
  requirement run does for it (the same wire, forced). ``test_scenario_lists_are_current``
  checks these lists against what each version's ``list`` prints. mcphost has no OAuth
  client and does not speak the 2026-07-28 wire, so the ``auth/*`` scenarios and the
  2026-07-28 set are not run.

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
#: 0.1.16's client scenarios that need no OAuth (everything else it lists is ``auth/*``).
SCENARIOS_016 = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
#: 0.2.0-alpha.12 ``list --client --requirements 2025-11-25``, less ``auth/*``: the scored
#: scenarios, then the one run but not scored (added after the release).
REQUIRED_2025_11_25 = ["initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"]
NOT_SCORED_2025_11_25 = ["json-schema-2020-12-preservation"]
SCENARIOS_020 = REQUIRED_2025_11_25 + NOT_SCORED_2025_11_25
REQUIREMENTS = "2025-11-25"

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


def run_scenario(suite: Suite, version: str, scenario: str, out: Path, *extra: str) -> None:
    args = ["client", "--command", client_command(), "--scenario", scenario, "-o", str(out), *extra]
    proc = suite.run(version, *args)
    results = sorted(out.rglob("checks.json"))
    runner = f"runner exit {proc.returncode}; its output:\n{tail(proc.stdout + proc.stderr)}"
    assert len(results) == 1, f"{scenario}: expected one checks.json under {out}, found {results}\n{runner}"
    checks: list[dict[str, Any]] = json.loads(results[0].read_text())
    client_err = (results[0].parent / "stderr.txt").read_text().strip()
    bad = [c for c in checks if c.get("status") in ("FAILURE", "WARNING")]
    report = "\n".join(describe(c) for c in bad)
    if client_err:
        report += f"\n  client stderr: {tail(client_err, 10)}"
    assert proc.returncode == 0 and not bad, f"{scenario} ({version}): failing checks:\n{report}\n{runner}"
    assert any(c.get("status") == "SUCCESS" for c in checks), f"{scenario}: no check passed: {checks}\n{runner}"


@pytest.mark.parametrize("scenario", SCENARIOS_016)
def test_conformance_0_1_16(suite: Suite, scenario: str, tmp_path: Path) -> None:
    run_scenario(suite, V016, scenario, tmp_path)


@pytest.mark.parametrize("scenario", SCENARIOS_020)
def test_conformance_0_2_0_requirements_2025_11_25(suite: Suite, scenario: str, tmp_path: Path) -> None:
    run_scenario(suite, V020, scenario, tmp_path, "--spec-version", REQUIREMENTS)


def listed_scenarios(text: str, heading: str) -> list[str]:
    """The ``  - name`` lines under ``heading`` (up to the next blank line), tags dropped."""
    names: list[str] = []
    lines = iter(text.splitlines())
    for line in lines:
        if line.strip().startswith(heading):
            break
    for line in lines:
        if not line.strip():
            break
        match = re.match(r"\s*-\s+(\S+)", line)
        if match:
            names.append(match.group(1))
    return names


def test_scenario_lists_are_current(suite: Suite) -> None:
    """The scenarios run above are all the non-OAuth client scenarios each version has."""
    listed = suite.run(V016, "list", "--client", timeout=60)
    assert listed.returncode == 0, listed.stderr
    names = listed_scenarios(listed.stdout, "Client scenarios")
    assert names, listed.stdout
    assert [n for n in names if not n.startswith("auth/")] == SCENARIOS_016, listed.stdout

    listed = suite.run(V020, "list", "--client", "--requirements", REQUIREMENTS, timeout=60)
    assert listed.returncode == 0, listed.stderr
    required = listed_scenarios(listed.stdout, "Client scenarios")
    assert [n for n in required if not n.startswith("auth/")] == REQUIRED_2025_11_25, listed.stdout
    not_scored = re.findall(r"^\s+-\s+(\S+)\s+\[client\]", listed.stdout, re.MULTILINE)
    assert [n for n in not_scored if not n.startswith("auth/")] == NOT_SCORED_2025_11_25, listed.stdout

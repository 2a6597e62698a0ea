"""The official conformance suite's *server* scenarios against ``mcphost serve --http
--pass-through`` fronting the fake server over stdio (``--script conformance``, the suite's
reference contract): the suite tests servers over HTTP only, and this is how a stdio server
is put in front of it. Every scenario of 0.1.16 must pass with no ``FAILURE`` and no
``WARNING``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from mcphost.testing import package_root
from tests.test_conformance import V016, V020, Suite, suite  # noqa: F401  (suite is a fixture)
from tests.testing.test_fake_conformance import (
    SERVER_016,
    SUITE_SKIPS,
    assert_all_pass,
    describe,
    results,
)

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(900 + 300)]


@contextmanager
def serve_pass_through(tmp_path: Path, *fake_args: str, **entry: str) -> Iterator[str]:
    """``mcphost serve --http 127.0.0.1:0 --pass-through`` in front of the fake server's
    reference contract over stdio; yields the endpoint's URL."""
    config = tmp_path / "mcp.json"
    env = {"PYTHONPATH": package_root()}
    config.write_text(json.dumps({"mcpServers": {"reference": {
        "command": sys.executable, "args": ["-m", "mcphost.testing", "--script", "conformance", *fake_args],
        "env": env, **entry}}}))
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcphost", "serve", "--http", "127.0.0.1:0", "--pass-through", str(config)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        env={**os.environ, **env}, start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "serving MCP on http://127.0.0.1:" in line, line + proc.stderr.read()
        yield line.rsplit(" ", 1)[1].strip()
        proc.send_signal(signal.SIGTERM)  # the gateway stops its server through the ladder
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)


def test_every_server_scenario_passes_through_the_gateway(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "results"
    with serve_pass_through(tmp_path) as url:
        run = suite.run(V016, "server", "--url", url, "--suite", "all", "-o", str(out))
    found = results(out)
    assert sorted(found) == sorted(SERVER_016), run.stdout[-3000:]
    assert len(found) == 32
    assert_all_pass(found, run)


#: The 2026-07-28 scenarios the gateway does not pass yet, each for a reason named here (the
#: suite exits non-zero while any scored one fails):
#: - the ``tasks-*`` scenarios (unscored: the tasks extension) — the gateway does not serve
#:   the tasks extension;
#: - the input keys: the gateway names its own ``inputRequests`` keys (the downstream server's
#:   keys do not reach it through the host's handlers), so a scenario that expects the
#:   server's key, or answers a first call with responses under those keys, fails.
KNOWN_GAPS_2026 = {
    "tasks-capability-negotiation", "tasks-dispatch-and-envelope", "tasks-lifecycle", "tasks-mrtr-composition",
    "tasks-mrtr-input", "tasks-request-headers", "tasks-request-state-removal", "tasks-required-task-error",
    "tasks-wire-fields",
    "input-required-result-basic-elicitation", "input-required-result-ignore-extra-params",
    "input-required-result-tampered-state", "input-required-result-validate-input",
}


def test_requirements_2026_07_28_through_the_gateway(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    """0.2.0-alpha.12's 2026-07-28 server set (50 played) against the gateway's stateless
    era, the fake server behind it in the same era: every scenario but :data:`KNOWN_GAPS_2026`
    passes (two of those, ignore-extra-params and validate-input, pass on some runs: the
    suite's first call sends responses under the downstream's keys, which the gateway cannot
    match, and the suite's wait for it can end first)."""
    out = tmp_path / "results"
    # The fake server in the same era behind it, so its tools ask for input (MRTR) and the
    # gateway relays each question upstream as its own inputRequests.
    with serve_pass_through(tmp_path, "--era", "modern", protocol="modern") as url:
        run = suite.run(V020, "server", "--url", url, "--requirements", "2026-07-28", "-o", str(out))
    found = results(out)
    assert len(found) == 50, run.stdout[-3000:]
    bad = {name for name, checks in found.items() if any(c.get("status") in ("FAILURE", "WARNING") for c in checks)}
    assert bad <= KNOWN_GAPS_2026, {n: [describe(c) for c in found[n] if c.get("status") != "SUCCESS"]
                                     for n in bad - KNOWN_GAPS_2026}
    passing = {n: c for n, c in found.items() if n not in KNOWN_GAPS_2026}
    assert len(passing) == 37
    bad_checks = {n: [describe(c) for c in checks if c.get("status") in ("FAILURE", "WARNING")]
                  for n, checks in passing.items()}
    assert not {k: v for k, v in bad_checks.items() if v}, bad_checks
    empty = {n for n, checks in passing.items() if not any(c.get("status") == "SUCCESS" for c in checks)}
    assert empty <= SUITE_SKIPS, empty

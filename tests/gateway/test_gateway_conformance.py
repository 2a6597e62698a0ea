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
from typing import Any

import pytest

from mcphost.testing import package_root
from tests.test_conformance import V016, V020, Suite, suite  # noqa: F401  (suite is a fixture)
from tests.testing.test_fake_conformance import (
    SERVER_016,
    assert_all_pass,
    listed_scenarios,
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



def scored_results(suite: Suite, tmp_path: Path, requirements: str, *fake_args: str,  # noqa: F811
                   **entry: str) -> tuple[list[str], dict[str, list[dict[str, Any]]], Any]:
    """0.2.0's frozen ``requirements`` server set through the gateway: the scenarios it
    scores (``list --requirements``), every scenario's checks, and the run."""
    listed = suite.run(V020, "list", "--server", "--requirements", requirements, timeout=60)
    assert listed.returncode == 0, listed.stderr
    required = listed_scenarios(listed.stdout, "Server scenarios")
    out = tmp_path / "results"
    with serve_pass_through(tmp_path, *fake_args, **entry) as url:
        # A scenario that fails waits out its requests (10 s each): 8 s per scenario bounds a
        # failing run; a passing scenario takes milliseconds (the tasks-* ones about a second).
        run = suite.run(V020, "server", "--url", url, "--requirements", requirements, "--timeout", "8000",
                        "-o", str(out))
    return required, results(out), run


def test_the_2026_07_28_server_set_passes_through_the_gateway(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    """Stateless, multi-round (the downstream server's own input keys), caching hints,
    headers: every one of the 37 scenarios 0.2.0-alpha.12 scores for 2026-07-28 passes
    against ``serve --http --pass-through`` with the fake server behind it in that era, and
    so do the 13 it plays unscored (the ten ``tasks-*`` of the tasks extension, three pending)."""
    required, found, run = scored_results(suite, tmp_path, "2026-07-28", "--era", "modern", protocol="modern")
    assert len(required) == 37, required
    assert set(required) <= set(found), run.stdout[-3000:]
    assert len(found) == 50, sorted(found)
    assert len([k for k in found if k.startswith("tasks-")]) == 10
    assert_all_pass(found, run)


def test_the_2025_11_25_server_set_passes_through_the_gateway(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    """The handshake era's 30 scored scenarios (and 3 unscored) against the same front, the
    fake server behind it speaking both eras."""
    required, found, run = scored_results(suite, tmp_path, "2025-11-25", "--era", "both")
    assert len(required) == 30, required
    assert set(required) <= set(found), run.stdout[-3000:]
    assert len(found) == 33, sorted(found)
    assert_all_pass(found, run)

"""The fake server over HTTP against the official conformance suite's *server* scenarios.

``python -m mcphost.testing --http 0 --script conformance`` serves the suite's reference
contract; the suite's ``server --suite all`` runs every server scenario against it, and each
scenario's checks must all pass (no ``FAILURE``, no ``WARNING``). The list of scenarios is
checked against what the suite version prints, so a new scenario is not silently skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mcphost.testing import http_server
from tests.test_conformance import (  # noqa: F401  (suite is a fixture)
    V016,
    V020,
    Suite,
    suite,
)

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(900 + 300)]

#: ``conformance list --server`` of 0.1.16.
SERVER_016 = [
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
    "tools-call-simple-text", "tools-call-image", "tools-call-audio",
    "tools-call-embedded-resource", "tools-call-mixed-content", "tools-call-with-logging",
    "tools-call-error", "tools-call-with-progress", "tools-call-sampling",
    "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults",
    "server-sse-polling", "server-sse-multiple-streams", "elicitation-sep1330-enums",
    "resources-list", "resources-read-text", "resources-read-binary",
    "resources-templates-read", "resources-subscribe", "resources-unsubscribe", "prompts-list",
    "prompts-get-simple", "prompts-get-with-args", "prompts-get-embedded-resource",
    "prompts-get-with-image", "dns-rebinding-protection",
]


#: Scenarios the suite itself always reports as one SKIPPED check (a placeholder:
#: 0.2.0-alpha.12's ``tasks-status-notifications`` waits for a rewrite of its harness).
SUITE_SKIPS = {"tasks-status-notifications"}


def fake_http(*args: str) -> Any:
    """The fake server over HTTP (``--script X --era Y``), through the public helper."""
    opts = dict(zip(args[::2], args[1::2]))
    return http_server(script=opts.get("--script"), era=opts.get("--era"))


def listed_scenarios(text: str, heading: str) -> list[str]:
    """The ``  - name [tags]`` lines under ``heading`` of ``conformance list``, names only."""
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


def describe(check: dict[str, Any]) -> str:
    return f"{check.get('id')} {check.get('status')}: {check.get('errorMessage') or ''}".strip()


def results(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each scenario's checks, from the ``<out>/server-<scenario>-<time>/checks.json`` files."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in out.glob("server-*/checks.json"):
        name = path.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        found[name] = json.loads(path.read_text(encoding="utf-8"))
    return found


def test_the_server_scenario_list_is_current(suite: Suite) -> None:  # noqa: F811
    listed = suite.run(V016, "list", "--server", timeout=60)
    assert listed.returncode == 0, listed.stderr
    assert listed_scenarios(listed.stdout, "Server scenarios") == SERVER_016, listed.stdout


def test_every_server_scenario_passes_0_1_16(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    with fake_http("--script", "conformance") as url:
        run = suite.run(V016, "server", "--url", url, "--suite", "all", "-o", str(tmp_path))
    found = results(tmp_path)
    assert sorted(found) == sorted(SERVER_016), run.stdout[-3000:]
    assert_all_pass(found, run)


def test_requirements_2025_11_25_pass_0_2_0(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    """0.2.0-alpha.12's frozen 2025-11-25 server set (30 scored, 3 run unscored), dual-era."""
    listed = suite.run(V020, "list", "--server", "--requirements", "2025-11-25", timeout=60)
    assert listed.returncode == 0, listed.stderr
    required = listed_scenarios(listed.stdout, "Server scenarios")
    assert len(required) == 30, listed.stdout
    with fake_http("--script", "conformance", "--era", "both") as url:
        run = suite.run(V020, "server", "--url", url, "--requirements", "2025-11-25",
                        "-o", str(tmp_path))
    found = results(tmp_path)
    assert set(required) <= set(found), run.stdout[-3000:]
    assert len(found) == 33, sorted(found)
    assert_all_pass(found, run)


def test_requirements_2026_07_28_pass_0_2_0(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    """0.2.0-alpha.12's frozen 2026-07-28 server set (37 scored), stateless and modern-only.

    The run also plays 13 unscored scenarios (the ten ``tasks-*`` of the tasks extension and
    three pending ones); they must pass too: 50 in all.
    """
    listed = suite.run(V020, "list", "--server", "--requirements", "2026-07-28", timeout=60)
    assert listed.returncode == 0, listed.stderr
    required = listed_scenarios(listed.stdout, "Server scenarios")
    assert len(required) == 37, listed.stdout
    with fake_http("--script", "conformance", "--era", "modern") as url:
        run = suite.run(V020, "server", "--url", url, "--requirements", "2026-07-28",
                        "-o", str(tmp_path))
    found = results(tmp_path)
    assert set(required) <= set(found), run.stdout[-3000:]
    assert len(found) == 50, sorted(found)
    assert len([k for k in found if k.startswith("tasks-")]) == 10
    assert_all_pass(found, run)


def assert_all_pass(found: dict[str, list[dict[str, Any]]], run: Any) -> None:
    bad = {
        name: [describe(c) for c in checks if c.get("status") in ("FAILURE", "WARNING")]
        for name, checks in found.items()
    }
    assert not {k: v for k, v in bad.items() if v}, bad
    empty = {n for n, checks in found.items() if not any(c.get("status") == "SUCCESS" for c in checks)}
    assert empty <= SUITE_SKIPS, empty
    for name in empty:
        assert {c.get("status") for c in found[name]} == {"SKIPPED"}, found[name]
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

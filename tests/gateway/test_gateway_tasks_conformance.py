"""The official suite's ``tasks-*`` server scenarios (0.2.0-alpha.12, the tasks extension of
2026-07-28) against ``mcphost serve --http --pass-through`` fronting the fake server's
reference contract in the 2026-07-28 era over stdio: the gateway passes each task-supporting
call to the server as a task (the host's ``TaskHandle``) and serves ``tasks/get``,
``tasks/update`` and ``tasks/cancel`` of its own. Every check must pass (the suite's own
placeholder, ``tasks-status-notifications``, is one SKIPPED check).

Scenarios that make the server ask the client something run one after another (the gateway
sends a server's question to the latest request in flight to that server); the others run
beside them, so the whole takes about the longest scenario's time, not their sum.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_gateway_conformance import serve_pass_through

from tests.test_conformance import V020, Suite, suite  # noqa: F401  (suite is a fixture)
from tests.testing.test_fake_conformance import assert_all_pass, results

pytestmark = [pytest.mark.conformance, pytest.mark.timeout(300)]

#: The scenarios whose server asks the client something, run in turn.
ASKING = ["tasks-mrtr-input", "tasks-dispatch-and-envelope", "tasks-mrtr-composition"]
#: The others, run beside them.
QUIET = ["tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
         "tasks-request-headers", "tasks-status-notifications", "tasks-required-task-error"]


class _Runs:
    """The runs' outcomes, gathered for one verdict."""

    def __init__(self) -> None:
        self.codes: list[int] = []
        self.tails: list[str] = []

    @property
    def returncode(self) -> int:
        return max(self.codes, default=0)

    @property
    def stdout(self) -> str:
        return "\n".join(self.tails)

    stderr = ""


def test_the_tasks_scenarios_pass_through_the_gateway(suite: Suite, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "results"
    runs = _Runs()

    def run(names: list[str], url: str) -> None:
        for name in names:
            done: Any = suite.run(V020, "server", "--url", url, "--scenario", name, "-o", str(out), timeout=120)
            runs.codes.append(done.returncode)
            runs.tails.append(f"{name}: {done.stdout[-1500:]}{done.stderr[-500:]}")

    with serve_pass_through(tmp_path, "--era", "modern", protocol="modern") as url, ThreadPoolExecutor(3) as pool:
        batches = [ASKING, QUIET[0::2], QUIET[1::2]]
        for future in [pool.submit(run, batch, url) for batch in batches]:
            future.result()
    found = results(out)
    assert sorted(found) == sorted(ASKING + QUIET), runs.stdout[-3000:]
    assert len(found) == 10
    assert_all_pass(found, runs)
    checks = sum(1 for checks in found.values() for c in checks if c.get("status") == "SUCCESS")
    assert checks == 44, checks

"""An application that exits without shutdown() leaves no server behind, stubborn or not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from helpers import ECHO_TOOL, fake, fake_config, group_alive, wait_for

ROOT = Path(__file__).resolve().parents[2]


async def test_exit_without_shutdown_kills_servers_that_ignore_sigterm(tmp_path: Path) -> None:
    cfg = fake_config(
        stubborn=fake({"tools": [ECHO_TOOL]}, ignoreSigterm=True, ignoreStdinEof=True),
        polite=fake({"tools": [ECHO_TOOL]}),
    )
    program = textwrap.dedent(
        f"""
        import asyncio, json
        from mcphost import MCPHost

        host = MCPHost(json.loads({json.dumps(json.dumps(cfg))}), shutdown_timeout=1.0)
        loop = asyncio.new_event_loop()
        loop.run_until_complete(host.initialize())
        print(json.dumps({{n: h.pid() for n, h in host.servers.items()}}), flush=True)
        # Returns without shutdown() and without closing the loop: only the exit hook is left.
        """
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr
    pids = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(pids) == {"stubborn", "polite"}
    for pid in pids.values():
        assert await wait_for(lambda pid=pid: not group_alive(pid), timeout=10)

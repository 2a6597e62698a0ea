"""Running the command line in a child process, as a user would, and its configurations."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent


def fake_servers() -> set[int]:
    """Fake servers of this worktree's tests (others may run their own at the same time)."""
    found = set()
    mine = f"PYTHONPATH={ROOT}".encode()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if b"mcphost.testing" in cmd and state not in ("Z", "X") and mine in _environ(entry):
                found.add(int(entry))
    return found


def _environ(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return b""


def write_config(tmp_path: Path, cfg: dict[str, Any], name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def cli_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def run_cli(*args: str, timeout: float = 60, env: dict[str, str] | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcphost", *args], capture_output=True, text=True,
                          timeout=timeout, env=env or cli_env(), check=False, input=stdin)


async def arun_cli(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """The same from a test's event loop (a remote server of the test is served meanwhile)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcphost", *args, env=env or cli_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


def errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("mcphost: error:")]

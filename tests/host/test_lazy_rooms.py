"""The host's optional rooms load on first use (issue 24: memory close to a bare client).

A host that starts a stdio server and calls its tools never loads the model-API room, tool
search, the skills, the Prometheus text, the reload room or hashlib: each costs resident
memory (its code objects; hashlib, OpenSSL's libcrypto) in every process that imports the
host, and most applications use none of them. Each loads, and works, the first time it is used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: The modules a plain host must not load (docs/design.md: host/lazy.py and where each is used).
OPTIONAL = (
    "mcphost.host.tools_api",
    "mcphost.host.providers",
    "mcphost.host.search",
    "mcphost.host.search_semantic",
    "mcphost.host.skills",
    "mcphost.host.reload",
    "mcphost.metrics.prometheus",
    "mcphost.metrics.exposition",
    # hashlib loads OpenSSL's libcrypto (over 1 MB resident): a stdio host needs no digest.
    "secrets",
    "hashlib",
    "hmac",
    # shutil (with bz2 and lzma) is for commands looked up on PATH; this one is given by its path.
    "shutil",
    # pathlib: the schemas and the configuration are read with os.path; roots given as paths load it.
    "pathlib",
    # urllib.parse (it imports ipaddress: ~0.4 MB of heap) is for URLs: an http server's, a
    # relative or %-escaped $ref's. A stdio server's configuration and protocol schemas need none.
    "urllib.parse",
    "ipaddress",
)

_CHILD = """
import asyncio, json, sys
from mcphost import MCPHost

OPTIONAL = {optional!r}

def loaded():
    return sorted(m for m in OPTIONAL if m in sys.modules)

async def main():
    config = {{"mcpServers": {{"fake": {{"command": sys.executable, "args": ["-m", "mcphost.testing"]}}}}}}
    out = {{}}
    async with MCPHost(config) as host:
        result = await host.call_tool("fake.echo", {{"text": "hi"}})
        out["called"] = result["content"][0]["text"]
        host.get_tools()
        host.get_metrics()
        out["plain"] = loaded()
        # Each room loads, and works, on first use.
        out["tools_for"] = [t["function"]["name"] for t in host.tools_for("openai")]
        out["dispatched"] = (await host.call_tool("mcp__fake__echo", {{"text": "ho"}}))["content"][0]["text"]
        out["metrics_text"] = "mcp_client_operation_duration_seconds" in host.metrics_text()
    out["used"] = loaded()
    return out

print(json.dumps(asyncio.run(main())))
"""


def test_a_plain_host_loads_no_optional_room() -> None:
    # A fresh interpreter: this one has loaded every room already (other tests).
    root = Path(__file__).resolve().parents[2]
    code = _CHILD.format(optional=OPTIONAL)
    # Outside coverage (CI's main run measures child Pythons): coverage itself loads hashlib
    # and pathlib into the interpreter before the host is imported.
    env = {k: v for k, v in os.environ.items() if k not in ("COVERAGE_PROCESS_CONFIG", "COVERAGE_PROCESS_START")}
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          timeout=60, check=False, env=env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert json.loads(out["called"]) == {"text": "hi"}
    assert out["plain"] == []  # started, called, listed, counted: no optional room loaded
    assert out["tools_for"] == ["fake__echo"]
    assert json.loads(out["dispatched"]) == {"text": "ho"}
    assert out["metrics_text"] is True
    assert {"mcphost.host.tools_api", "mcphost.host.providers", "mcphost.metrics.prometheus"} <= set(out["used"])

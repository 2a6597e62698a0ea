"""A scriptable fake MCP server (stdio or HTTP) for testing MCP hosts and the applications built on them.

This package owns the fake server and the helpers that put it in an ``mcp.json``. It imports
only the standard library (never the rest of ``mcphost``), so it starts fast and keeps
working while the host code is broken. Run it as ``python -m mcphost.testing --spec JSON``;
the spec keys are documented in ``docs/testing.md``. From Python::

    from mcphost.testing import config, server_config

    cfg = config({
        "ok": server_config({"tools": [{"name": "slow", "inputSchema": {"type": "object"},
                                        "behavior": {"delay": 5}}]}),
        "broken": server_config(exitAtStart=1, stderr="API key is required"),
    })

Over HTTP, ``with http_server(spec, era="both") as url:`` runs it in a child process.

The server's concerns, one module each: ``common`` (versions, codes, a call), ``core``
(state and output), ``stdio`` (process and pipes), ``dispatch`` (JSON-RPC lines, batches,
answers), ``methods`` (MCP requests), ``behaviours`` (what tools do), ``tasks``, ``modern``
(the 2026-07-28 era: discover, ``_meta``, MRTR, listen streams, caching hints) and
``tasks_ext`` (its tasks extension); ``server`` assembles them. Over HTTP: ``http`` (a stdlib
asyncio HTTP/1.1 server for Streamable HTTP in both eras) and ``http_session`` (a server per
session whose output goes to response streams). Built-in specs: ``scripts`` (``--script``)
and ``conformance`` (the official conformance suite's reference server contract).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

__all__ = ["config", "http_server", "package_root", "server_config"]

# Keyword arguments already spelled as spec keys are kept; snake_case ones are camelCased
# (``exit_at_start=1`` -> ``"exitAtStart": 1``), except ``pid_file`` which is a spec key.
_KEEP_AS_IS = frozenset({"pid_file"})


def package_root() -> str:
    """The directory that contains the ``mcphost`` package (computed at run time)."""
    here = os.path.dirname(os.path.abspath(__file__))  # .../mcphost/testing
    return os.path.dirname(os.path.dirname(here))


def _camel(key: str) -> str:
    if key in _KEEP_AS_IS or "_" not in key.strip("_"):
        return key
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), key)


def server_config(spec: dict[str, Any] | None = None, **faults: Any) -> dict[str, Any]:
    """An ``mcp.json`` server entry that runs the fake server with ``spec`` plus ``faults``.

    ``faults`` are merged into the spec as top-level keys (they win over ``spec``), e.g.
    ``server_config(exitAtStart=1, stderr="API key is required")``. The entry runs the
    current interpreter and sets ``PYTHONPATH`` so the child finds this ``mcphost`` from
    any working directory.
    """
    merged: dict[str, Any] = dict(spec or {})
    for key, value in faults.items():
        merged[_camel(key)] = value
    return {
        "command": sys.executable,
        "args": ["-m", "mcphost.testing", "--spec", json.dumps(merged, separators=(",", ":"))],
        "env": {"PYTHONPATH": package_root()},
    }


@contextlib.contextmanager
def http_server(
    spec: dict[str, Any] | None = None, *, era: str | None = None, script: str | None = None
) -> Iterator[str]:
    """Run the fake server over Streamable HTTP in a child process; yields its URL.

    ``era`` (``legacy``, ``modern``, ``both``) and ``script`` (e.g. ``"conformance"``) are the
    ``--era`` and ``--script`` options. The process (and its group) is killed on exit::

        with http_server({"era": "both"}) as url:   # http://127.0.0.1:PORT/mcp
            ...
    """
    args = [sys.executable, "-m", "mcphost.testing", "--http", "0",
            "--spec", json.dumps(spec or {}, separators=(",", ":"))]
    if era is not None:
        args += ["--era", era]
    if script is not None:
        args += ["--script", script]
    env = {**os.environ, "PYTHONPATH": package_root()}
    kwargs: dict[str, Any] = {"start_new_session": True} if os.name == "posix" else {}
    proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, text=True, **kwargs)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        if not url.startswith("http://"):
            err = proc.stderr.read() if proc.stderr is not None else ""
            raise RuntimeError(f"the fake HTTP server did not start: {err.strip()[-2000:]}")
        yield url
    finally:
        with contextlib.suppress(OSError):
            if os.name == "posix":
                os.killpg(proc.pid, signal.SIGKILL)
            else:  # pragma: no cover
                proc.kill()
        proc.communicate(timeout=30)


def config(servers: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """A whole ``mcp.json`` document: ``{"mcpServers": servers}``."""
    return {"mcpServers": dict(servers)}

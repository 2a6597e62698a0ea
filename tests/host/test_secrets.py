"""A secret given through ${...} appears nowhere the host writes: logs at DEBUG, errors,
get_tools(), get_metrics()."""

from __future__ import annotations

import json
import logging
import os
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake

from mcphost import MCPHost, MCPHostError
from mcphost.policy import Backoff, RetryPolicy

SECRET = "s3cr3t-Value-9f8e7d"
CMD_SECRET = "private-binary-0a1b2c"


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object"}, "behavior": behavior}


async def test_a_secret_appears_nowhere(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    # The secret reaches the server through its arguments (a key of the fake's spec, which
    # it ignores) and its env; the server then writes it to stderr, as careless ones do.
    good = fake({"tools": [ECHO_TOOL, tool("boom", error={"code": -32000, "message": "failed"}),
                           tool("die", exit=3, stderr=f"dying with --api-key={SECRET}")],
                 "apiKey": "${SECRET}"},
                stderr=f"starting with token {SECRET}")
    good["env"] = {**good["env"], "API_KEY": "${SECRET}"}
    cfg = {"mcpServers": {
        "good": good,
        "remote": {"type": "http", "url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer ${SECRET}"}},
        "missing": {"command": "${SECRET_CMD}", "args": ["${SECRET}"]},
    }}
    environ = {**os.environ, "SECRET": SECRET, "SECRET_CMD": CMD_SECRET}
    seen: list[str] = []
    # The remote's failed start is tried again (its retry lines are logged too), at once: the
    # default backoff would add some 6 s of waiting to the test and nothing to what it checks.
    retry = RetryPolicy(backoff=Backoff(initial=0))
    host = MCPHost(cfg, environ=environ, require_all=False, shutdown_timeout=2, retry=retry)
    host.on_event(lambda e: seen.append(json.dumps(e, default=str)))
    try:
        results = await host.initialize()
        seen.append(json.dumps(results))
        assert results["good"]["ok"] and not results["missing"]["ok"] and not results["remote"]["ok"]
        assert (await host.call_tool("good.echo", {"x": 1}))["content"]
        for name in ("good.boom", "good.die", "missing.x"):
            with pytest.raises(MCPHostError) as info:
                await host.call_tool(name, {})
            seen.append(str(info.value))
            seen.extend(getattr(info.value, "stderr_tail", []))
        seen.append(json.dumps(host.get_tools(include_unavailable=True), default=str))
        seen.append(json.dumps(host.get_metrics(), default=str))
    finally:
        await host.shutdown()
    seen.append(caplog.text)
    everything = "\n".join(seen)
    assert "dying with --api-key=***" in everything  # the stderr line is there, redacted
    assert SECRET not in everything
    assert CMD_SECRET not in everything


# -- TR10.3: no absolute path in what the application gets -----------------------------------


def _stack(project: str, home: str) -> list[str]:
    return [
        f"Error: cannot open {project}/data/db.sqlite",
        f"    at main ({home}/.npm/_npx/1234/node_modules/pkg/dist/index.js:12:5)",
        "    at load (/srv/app/node_modules/x/lib/loader.js:3:1)",
    ]


def _public(text: str, *roots: str) -> None:
    for root in roots:
        assert root not in text, text
    assert "/srv/app" not in text, text


async def test_errors_carry_no_absolute_path_but_logs_keep_them(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    home, project = tmp_path / "home", tmp_path / "home" / "proj"
    project.mkdir(parents=True)
    lines = _stack(str(project), str(home))
    servers = {
        "crash": fake(exitAtStart=1, stderr=lines),
        "later": fake({"tools": [tool("die", exit=3, stderr=lines)]}),
    }
    path = project / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    environ = {**os.environ, "HOME": str(home)}
    from mcphost.policy import NO_RETRY

    async with MCPHost(str(path), environ=environ, require_all=False, retry=NO_RETRY) as host:
        start_error = host.servers["crash"].error
        assert start_error is not None
        with pytest.raises(MCPHostError) as info:
            await host.call_tool("later.die", {})
        listed = host.get_tools(include_unavailable=True)
    for err in (start_error, info.value):
        text = "\n".join([str(err), *getattr(err, "stderr_tail", [])])
        _public(text, str(tmp_path))
        # Shown relative to the configuration's folder, to the home folder, or shortened.
        assert "data/db.sqlite" in text and "~/.npm/_npx/1234/node_modules/pkg/dist/index.js:12:5" in text
        assert ".../lib/loader.js:3:1" in text
    _public(json.dumps(listed), str(tmp_path))
    # The logs keep every detail (and still no secret: see above).
    assert "/srv/app/node_modules/x/lib/loader.js" in caplog.text
    assert f"{project}/data/db.sqlite" in caplog.text

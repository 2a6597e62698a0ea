"""Item 4: each message tells the truth, pinned to its wording; item 6: stderr is quiet,
prefixed, never twice the same line, and all JSON with ``--log-format json``."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_support import arun_cli, cli_env, errors, run_cli, write_config
from helpers import ECHO_TOOL, fake, fake_config
from remote_server import RemoteServer

HANG = {"name": "hang", "inputSchema": {"type": "object"}, "behavior": {"hang": True}}


def test_a_request_timeout_is_called_one(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [HANG]})))
    done = run_cli("call", str(path), "demo.hang", "{}", "--timeout", "0.5")
    assert done.returncode == 1
    assert done.stderr == "mcphost: error: demo: tools/call timed out after 0.5 s\n"  # one line, no "start-up"


async def test_sse_at_a_streamable_http_url_says_what_to_set(tmp_path: Path) -> None:
    async with RemoteServer() as server:
        path = write_config(tmp_path, {"mcpServers": {"api": {"type": "sse", "url": server.url}}})
        code, _, err = await arun_cli("inspect", str(path))
    assert code == 1
    assert len(errors(err)) == 1 and errors(err)[0].startswith("mcphost: error: api: ")
    assert ('mcphost: hint: api: "type" is "sse" (the legacy HTTP+SSE transport) but the URL ends in /mcp, like a '
            'Streamable HTTP endpoint: set "type": "http" (or leave "type" out to have it found)') in err


async def test_a_401_body_is_said_once_and_not_called_stderr(tmp_path: Path) -> None:
    body = b'{"error":"invalid_token","error_description":"the token expired"}'

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nWWW-Authenticate: Bearer\r\n"
                     b"Content-Length: %d\r\nConnection: close\r\n\r\n" % len(body) + body)
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(refuse, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    path = write_config(tmp_path, {"mcpServers": {"auth": {"url": f"http://127.0.0.1:{port}/mcp"}}})
    try:
        code, _, err = await arun_cli("inspect", str(path))
    finally:
        listener.close()
    assert code == 1
    assert err.count("the token expired") == 1, err
    assert "stderr" not in err
    assert all(line.startswith("mcphost: ") for line in err.splitlines()), err
    # The HTTP status as the transport said it (a TransportError), not a made-up JSON-RPC error.
    # (The first request of an http server is the server/discover probe: protocol "auto".)
    assert errors(err)[0].startswith("mcphost: error: auth: server/discover: HTTP 401 Unauthorized")


async def _until(stream: asyncio.StreamReader, needle: str, seen: list[str]) -> None:
    while not any(needle in line for line in seen):
        line = await asyncio.wait_for(stream.readline(), 30)
        assert line, f"{needle!r} never came: {seen}"
        seen.append(line.decode())


@pytest.mark.parametrize(("sig", "code", "said"), [
    (signal.SIGINT, 130, "interrupted"),
    (signal.SIGTERM, 143, "terminated (SIGTERM)"),
])
async def test_signals_count_what_they_stop(tmp_path: Path, sig: signal.Signals, code: int, said: str) -> None:
    async with RemoteServer() as server:
        cfg: dict[str, Any] = fake_config(local=fake({"tools": [ECHO_TOOL]}))
        cfg["mcpServers"]["remote"] = {"url": server.url}
        path = write_config(tmp_path, cfg)
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "mcphost", "inspect", str(path), "--watch", env=cli_env(),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        assert proc.stdout is not None and proc.stderr is not None
        try:
            await _until(proc.stderr, "watching the configuration", [])
            proc.send_signal(sig)
            _, err_bytes = await asyncio.wait_for(proc.communicate(), 30)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    err = err_bytes.decode()
    assert proc.returncode == code, err
    lines = err.splitlines()
    assert lines[0] == f"mcphost: {said}: stopping 2 server(s): local, remote" + (
        " (Ctrl-C again to kill them now)" if sig == signal.SIGINT else "")
    assert lines[-1] == f"mcphost: {said}; 2 server(s) stopped"
    if sig == signal.SIGTERM:
        assert "interrupted" not in err


def test_dropped_variables_are_named_when_a_child_fails(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(api=fake(exitAtStart=1, stderr="Error: MCPHOST_TEST_SERVICE_TOKEN is required")))
    done = run_cli("inspect", str(path), env=cli_env(MCPHOST_TEST_SERVICE_TOKEN="s3cret", UV_INDEX_URL="https://x"))
    assert done.returncode == 1
    assert ('mcphost: hint: api: set here but not passed to the server: MCPHOST_TEST_SERVICE_TOKEN; pass what it needs '
            'with "env": {"MCPHOST_TEST_SERVICE_TOKEN": "${MCPHOST_TEST_SERVICE_TOKEN}"} in its entry') in done.stderr
    assert "s3cret" not in done.stderr and "UV_INDEX_URL" not in done.stderr  # UV_* is passed


def test_stderr_is_prefixed_and_says_nothing_twice(tmp_path: Path) -> None:
    cfg = fake_config(good=fake({"tools": [HANG]}), broken=fake(exitAtStart=1, stderr="Error: boom"))
    cfg["mcpServer"] = {}  # a note
    path = write_config(tmp_path, cfg)
    done = run_cli("inspect", str(path))
    lines = done.stderr.splitlines()
    assert lines and all(line.startswith("mcphost: ") for line in lines), lines
    assert len(lines) == len(set(lines))
    timed = run_cli("call", str(path), "good.hang", "{}", "--timeout", "0.5")
    assert timed.stderr.splitlines() == [line for line in timed.stderr.splitlines() if line.startswith("mcphost: ")]
    assert len(timed.stderr.splitlines()) == len(set(timed.stderr.splitlines()))


def test_json_logs_are_all_json(tmp_path: Path) -> None:
    cfg = fake_config(good=fake({"tools": [ECHO_TOOL]}), broken=fake(exitAtStart=1, stderr="Error: boom"))
    cfg["mcpServer"] = {}
    done = run_cli("inspect", str(write_config(tmp_path, cfg)), "--log-format", "json")
    assert done.returncode == 3
    records = [json.loads(line) for line in done.stderr.splitlines()]  # every line parses
    kinds = {(r["event"], r["level"]) for r in records}
    assert ("cli_error", "ERROR") in kinds and ("cli_note", "WARNING") in kinds
    assert any(r["event"] == "cli_error" and r["message"].startswith("broken: server exited") for r in records)


def test_the_library_is_silent_unless_the_application_configures_logging(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [HANG]})))
    code = f"""
import asyncio
from mcphost import MCPHost, TimeoutError

async def main():
    async with MCPHost({str(path)!r}) as host:
        try:
            await host.call_tool("demo.hang", {{}}, timeout=0.3)
        except TimeoutError:
            print("timed out")

asyncio.run(main())
"""
    done = __import__("subprocess").run([sys.executable, "-c", code], capture_output=True, text=True,
                                        env=cli_env(), timeout=60, check=False)
    assert done.returncode == 0 and done.stdout == "timed out\n"
    assert done.stderr == ""  # the warning "a request timed out" went to the NullHandler


def test_call_tells_the_failed_start_once_with_its_hint(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(api=fake(exitAtStart=1, stderr="Error: MCPHOST_TEST_SERVICE_TOKEN is required")))
    done = run_cli("call", str(path), "api.echo", "{}", env=cli_env(MCPHOST_TEST_SERVICE_TOKEN="s3cret"))
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "mcphost: error: api: server exited during start-up with code 1 (stderr: Error: MCPHOST_TEST_SERVICE_TOKEN "
        "is required)",
        'mcphost: hint: api: set here but not passed to the server: MCPHOST_TEST_SERVICE_TOKEN; pass what it needs '
        'with "env": {"MCPHOST_TEST_SERVICE_TOKEN": "${MCPHOST_TEST_SERVICE_TOKEN}"} in its entry (docs/config.md, '
        '"The child\'s environment")',
    ]


def test_main_leaves_logging_and_stderr_as_it_found_them(tmp_path: Path) -> None:
    import logging

    from mcphost.cli import main

    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    logger = logging.getLogger("mcphost")
    before = (list(logger.handlers), logger.level, sys.stderr)
    for args in (["-v"], ["--log-format", "json"], ["-vv"]):
        assert main(["check", str(path), *args]) == 0
    assert (list(logger.handlers), logger.level, sys.stderr) == before
    assert any(isinstance(h, logging.NullHandler) for h in logger.handlers)


def test_a_request_timeout_during_the_start_is_not_called_the_start_up_timeout(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]}, answerLate=2)))
    done = run_cli("inspect", str(path), "--request-timeout", "1")
    assert done.returncode == 1
    (line,) = errors(done.stderr)
    assert line.startswith("mcphost: error: demo: start-up failed: ") and line.endswith(" timed out after 1 s")
    assert "start-up timeout" not in done.stderr

"""Item 2: ``mcphost check`` refuses what ``inspect`` would refuse at once, starts nothing,
and lists unset secrets as needed at run time (an error only with ``--strict``)."""

from __future__ import annotations

from pathlib import Path

from cli_support import errors, run_cli, write_config
from helpers import fake, fake_config


def test_what_cannot_start_is_an_error(tmp_path: Path) -> None:
    cfg = {"mcpServers": {
        "onpath": {"command": "no-such-binary-for-mcphost"},
        "absolute": {"command": "/nonexistent/bin/server"},
        "nowhere": {"command": "python3", "cwd": "missing-folder"},
        "fine": {"command": "python3", "args": ["-c", "pass"]},
        "remote": {"url": "https://example.invalid/mcp"},
    }}
    done = run_cli("check", str(write_config(tmp_path, cfg)))
    assert done.returncode == 2
    assert errors(done.stderr) == [
        "mcphost: error: onpath: command 'no-such-binary-for-mcphost' not found on PATH",
        "mcphost: error: absolute: command 'server' not found or not executable",
        "mcphost: error: nowhere: cwd 'missing-folder' does not exist (or is not a folder)",
    ]
    assert done.stdout == "mcphost: mcp.json has 3 problem(s) (5 server(s): onpath, absolute, nowhere, fine, remote)\n"


def test_a_url_that_does_not_parse_is_an_error(tmp_path: Path) -> None:
    done = run_cli("check", str(write_config(tmp_path, {"mcpServers": {"r": {"type": "http", "url": "not a url"}}})))
    assert done.returncode == 2
    assert errors(done.stderr) == [
        "mcphost: error: r: mcp.json:1: mcpServers.r.url: expected a http:// or https:// URL for a http server"]


def test_unset_secrets_are_needed_at_run_time_and_fail_only_when_strict(tmp_path: Path) -> None:
    pid_file = tmp_path / "started.pid"
    server = fake({"pid_file": str(pid_file)})
    server["env"] = {"TOKEN": "${MCPHOST_TEST_TOKEN_UNSET}", "OTHER": "${env:MCPHOST_TEST_OTHER_UNSET}"}
    path = write_config(tmp_path, fake_config(api=server))
    done = run_cli("check", str(path))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ("mcphost: note: api: needs MCPHOST_TEST_TOKEN_UNSET, MCPHOST_TEST_OTHER_UNSET at run time "
                           "(not set now)\n")
    assert done.stdout == "mcphost: mcp.json is valid (1 server(s): api)\n"
    strict = run_cli("check", str(path), "--strict")
    assert strict.returncode == 2
    assert errors(strict.stderr) == ["mcphost: error: api: needs MCPHOST_TEST_TOKEN_UNSET, "
                                     "MCPHOST_TEST_OTHER_UNSET at run time (not set now)"]
    assert not pid_file.exists()  # nothing was started

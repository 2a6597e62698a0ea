"""Item 3: ``mcphost call`` takes every name ``mcphost tools`` prints and docs/llm.md
accepts, and suggests a close one; item 7: a long call's progress; item 10: its usage."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import cli_env, errors, run_cli, write_config
from helpers import ECHO_TOOL, fake, fake_config

SLOW = {"name": "slow", "inputSchema": {"type": "object"},
        "behavior": {"progress": 3, "echo": True}}


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL, SLOW]})))


@pytest.mark.parametrize("name", ["demo.echo", "demo__echo", "mcp__demo__echo"])
def test_every_documented_name_is_accepted(config: Path, name: str) -> None:
    done = run_cli("call", str(config), name, '{"text": "hi"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout)["content"][0]["text"]) == {"text": "hi"}


def test_the_names_tools_prints_are_callable(config: Path) -> None:
    printed = json.loads(run_cli("tools", str(config), "--format", "openai").stdout)
    name = printed[0]["function"]["name"]
    assert run_cli("call", str(config), name, "{}").returncode == 0


def test_unknown_names_get_a_suggestion_and_exit_1(config: Path) -> None:
    done = run_cli("call", str(config), "demo__ecoh", "{}")
    assert done.returncode == 1
    assert errors(done.stderr)[0].endswith("did you mean 'demo__echo'?")
    done = run_cli("call", str(config), "mcp__dmeo__echo", "{}")
    assert done.returncode == 1
    assert errors(done.stderr) == ["mcphost: error: unknown server 'dmeo' (servers: demo); did you mean 'demo'?"]
    done = run_cli("call", str(config), "echo")
    assert done.returncode == 2
    assert errors(done.stderr) == ["mcphost: error: tool 'echo' must be qualified as server.tool (or server__tool, "
                                   "mcp__server__tool; see: mcphost tools)"]


def test_progress_as_json_lines(config: Path) -> None:
    done = run_cli("call", str(config), "demo.slow", "{}", "--log-format", "json")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines()]  # every line is JSON
    progress = [line["message"] for line in lines if line["event"] == "call_progress"]
    assert progress == [f"demo.slow: progress {i}/3: step {i} of 3" for i in (1, 2, 3)]


def test_progress_on_a_terminal_is_one_line_rewritten(config: Path) -> None:
    leader, follower = pty.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "mcphost", "call", str(config), "demo.slow", "{}"],
                              stdout=subprocess.PIPE, stderr=follower, env=cli_env(), timeout=60, check=False)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal's other end is closed: all was read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert done.returncode == 0
    text = seen.decode()
    assert "\r\x1b[Kdemo.slow: progress 1/3" in text and "\r\x1b[Kdemo.slow: progress 3/3" in text
    assert "\n" not in text.replace("\r\n", "\n").split("progress 1/3")[1].split("progress 3/3")[0]
    assert text.endswith("\r\x1b[K")  # the line is cleared before the result is printed


def test_usage_and_timeouts(config: Path) -> None:
    usage = run_cli("call", "--help").stdout
    assert "usage: mcphost call [options] [CONFIG] TOOL [ARGUMENTS]\n" in usage
    for bad in ("0", "-1", "nan", "soon"):
        done = run_cli("call", str(config), "demo.echo", "--timeout", bad)
        assert done.returncode == 2
        assert f"argument --timeout: expected a number of seconds above 0, not '{bad}'" in done.stderr
    assert "seconds each request" in run_cli("inspect", "--help").stdout  # --request-timeout is explained
    done = run_cli("call", str(config), "demo.echo", "{}", "extra")
    assert done.returncode == 2
    assert errors(done.stderr) == ["mcphost: error: call takes [CONFIG] TOOL [ARGUMENTS] (one tool per call): "
                                   "too many arguments"]


def test_a_line_break_in_an_env_value_is_noted(tmp_path: Path) -> None:
    server = fake({"tools": [ECHO_TOOL]})
    server["env"] = {"TOKEN": "abc\r\n"}
    path = write_config(tmp_path, fake_config(demo=server))
    done = run_cli("check", str(path))
    assert done.returncode == 0
    assert done.stderr == ("mcphost: note: mcp.json:1: mcpServers.demo.env.TOKEN: contains a line break (CR or LF); "
                           "is it meant to?\n")

"""The command line: inspect, call, errors, and signals shutting servers down."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_support import ROOT, run_cli, write_config
from helpers import ECHO_TOOL, descendants, fake, fake_config, group_alive, needs_npx

from mcphost.cli import main, render_inspect


def test_inspect_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = {"tools": [ECHO_TOOL], "prompts": [{"name": "p", "arguments": [{"name": "city", "required": True}], "messages": []}],
            "resources": [{"uri": "mem://r", "name": "r", "text": "x"}]}
    path = write_config(tmp_path, fake_config(demo=fake(spec)))
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "== demo  [ready]  protocol 2025-11-25" in out
    assert "demo.echo(text?: string)" in out
    assert "demo.p(city)" in out
    assert "mem://r" in out


def test_inspect_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    assert main(["inspect", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["demo"]["tools"][0]["name"] == "echo"


def test_call(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    assert main(["call", "--config", str(path), "demo.echo", '{"text": "hi"}']) == 0
    result = json.loads(capsys.readouterr().out)
    assert json.loads(result["content"][0]["text"]) == {"text": "hi"}


def test_call_starts_only_the_server_it_needs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # "broken" would fail to start: calling demo does not start it, so the call succeeds.
    cfg = fake_config(demo=fake({"tools": [ECHO_TOOL]}),
                      broken=fake(exitAtStart=1, stderr="Error: API key is required"))
    path = write_config(tmp_path, cfg)
    assert main(["call", "--config", str(path), "demo.echo", '{"text": "hi"}']) == 0
    assert json.loads(json.loads(capsys.readouterr().out)["content"][0]["text"]) == {"text": "hi"}
    assert main(["call", "--config", str(path), "nowhere.echo", "{}"]) == 1
    assert "unknown server 'nowhere' (servers: demo, broken)" in capsys.readouterr().err


def test_errors_are_one_line_and_non_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    assert main(["call", "--config", str(path), "demo.nope", "{}"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("mcphost: error: demo: unknown tool 'nope'")
    assert main(["call", "--config", str(path), "demo.echo", "not json"]) == 2
    assert "arguments are not valid JSON" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "missing.json")]) == 2
    assert "missing.json: configuration file not found" in capsys.readouterr().err
    bad = write_config(tmp_path, fake_config(brave=fake(exitAtStart=1, stderr="Error: API key is required")))
    assert main(["inspect", str(bad), "--retries", "0"]) == 1
    err = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("mcphost: hint:")]
    assert len(err) == 1
    assert "brave" in err[0] and "API key is required" in err[0]
    assert main([]) == 2


def test_render_handles_odd_schemas() -> None:
    caps = {"s": {"state": "ready", "protocolVersion": "2025-11-25", "serverInfo": None, "tools": [
        {"name": "t", "inputSchema": {"type": "object", "properties": {
            "a": {"type": ["string", "null"]}, "b": {"type": "array", "items": {"type": "integer"}},
            "c": {"anyOf": [{"type": "string"}, {"type": "number"}]}, "d": {"enum": [1, 2]}, "e": {},
            "f": {"anyOf": [{"type": "string", "enum": ["pd"]}, {"type": "string", "pattern": "x"}]}},
            "required": ["a"]}}], "prompts": [], "resources": [], "resourceTemplates": [
        {"uriTemplate": "x://{a}", "name": "tpl"}]}}
    out = render_inspect(caps)
    assert "s.t(a: string|null, b?: array[integer], c?: string|number, d?: enum, e?: any, f?: string)" in out
    assert "x://{a}" in out


def read_until(fd: int, needle: bytes, *, unless: int, timeout: float = 30.0) -> bytes:
    """Read ``fd`` until what was read holds ``needle``, waiting (bounded) on the descriptor
    itself; fail at once if ``unless`` (the CLI's stderr) becomes readable: it wrote an
    error or exited."""
    seen = b""
    deadline = time.monotonic() + timeout
    while needle not in seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"{needle!r} never came; got {seen[-500:]!r}"
        readable, _, _ = select.select([fd, unless], [], [], remaining)
        if unless in readable:
            raise AssertionError(f"the CLI exited early: {os.read(unless, 65536)!r}")
        if fd in readable:
            seen += os.read(fd, 65536)
    return seen


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_to_cli_shuts_servers_down(tmp_path: Path, sig: signal.Signals) -> None:
    pid_file = tmp_path / "server.pid"
    # The fake server records what it receives into a FIFO: the test reads it to know when
    # the call has reached the server. Opened read-write, so the pipe always has a writer
    # (no end of file between the server's writes) and the server never waits for a reader.
    record = tmp_path / "received.fifo"
    os.mkfifo(record)
    received = os.open(record, os.O_RDWR | os.O_NONBLOCK)
    spec = {"tools": [{"name": "hang", "inputSchema": {"type": "object"}, "behavior": {"hang": True}}],
            "pid_file": str(pid_file), "record": str(record)}
    path = write_config(tmp_path, fake_config(demo=fake(spec)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcphost", "call", "--config", str(path), "demo.hang", "{}"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        assert proc.stderr is not None
        read_until(received, b'"tools/call"', unless=proc.stderr.fileno())
        # The server wrote its pid file before it read anything.
        server_pid = int(pid_file.read_text().strip())
        proc.send_signal(sig)
        proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
        os.close(received)
    assert proc.returncode != 0
    assert not group_alive(server_pid)


def test_nothing_a_server_sends_can_drive_the_terminal() -> None:
    evil = "\x1b]0;pwned\x07\x1b[2J\u202e"
    caps = {"s": {"state": "ready", "protocolVersion": "2025-11-25" + evil,
                  "serverInfo": {"name": "srv" + evil, "version": evil},
                  "tools": [{"name": "t" + evil, "description": "d" + evil,
                             "inputSchema": {"type": "object", "properties": {"p" + evil: {"type": "string"}}}}],
                  "prompts": [{"name": "p" + evil, "arguments": [{"name": "a" + evil}]}],
                  "resources": [{"uri": "x://r" + evil, "name": "r" + evil}],
                  "resourceTemplates": [{"uriTemplate": "x://{a}" + evil, "name": "t" + evil}]}}
    out = render_inspect(caps)
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
    assert "\\x1b]0;pwned\\x07" in out  # shown, escaped, not acted on


NODE_CRASH = [
    "/srv/node_modules/some-server/dist/index.js:12",
    "    throw new Error('API_KEY environment variable is required');",
    "    ^",
    "",
    "Error: API_KEY environment variable is required",
    "    at Object.<anonymous> (/srv/node_modules/some-server/dist/index.js:12:11)",
    "    at Module._compile (node:internal/modules/cjs/loader:1364:14)",
    "",
    "Node.js v20.20.2",
]


def test_a_crash_at_start_shows_the_line_that_says_why(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(api=fake(exitAtStart=1, stderr=NODE_CRASH)))
    done = run_cli("inspect", str(path), "--retries", "1")
    assert done.returncode == 1 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    # The first failure is told at once, with its reason, and the start is tried again.
    why = "(stderr: Error: API_KEY environment variable is required)"
    assert lines[0].startswith("mcphost: api: server exited during start-up with code 1 " + why + "; trying again in ")
    assert lines[0].endswith("(try 2 of 2)")
    assert lines[-1] == f"mcphost: error: api: server exited during start-up with code 1 (tried 2 times) {why}"
    assert "Node.js v20" not in done.stderr
    assert run_cli("inspect", str(path), "--retries", "-1").returncode == 2
    verbose = run_cli("inspect", str(path), "-v", "--retries", "0")
    assert "Node.js v20.20.2" in verbose.stderr and "at Module._compile" in verbose.stderr


def test_start_errors_name_their_server(tmp_path: Path) -> None:
    # Two different commands: two identical definitions would add a warning of their own.
    cfg = {"mcpServers": {"one": {"command": "no-such-binary-here"}, "two": {"command": "no-such-binary-there"}}}
    done = run_cli("inspect", str(write_config(tmp_path, cfg)))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("mcphost: error: one:") and lines[1].startswith("mcphost: error: two:")
    assert all("not found on PATH" in line for line in lines)


def test_inputs_from_the_command_line_or_the_environment(tmp_path: Path) -> None:
    server = fake({"tools": [ECHO_TOOL]})
    server["env"] = {"TOKEN": "${input:api-token}"}
    cfg = {"inputs": [{"id": "api-token", "type": "promptString", "password": True}],
           "servers": {"demo": server}}
    path = write_config(tmp_path, cfg)
    missing = run_cli("call", str(path), "demo.echo", "{}")
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "api-token" in missing.stderr and "--input api-token=VALUE" in missing.stderr
    assert "MCPHOST_INPUT_API_TOKEN" in missing.stderr
    assert run_cli("call", str(path), "demo.echo", "{}", "--input", "api-token=s3cret").returncode == 0
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MCPHOST_INPUT_API_TOKEN": "s3cret"}
    done = subprocess.run([sys.executable, "-m", "mcphost", "call", "--config", str(path), "demo.echo"],
                          capture_output=True, text=True, timeout=60, env=env, check=False)
    assert done.returncode == 0, done.stderr


def test_config_notes_are_printed(tmp_path: Path) -> None:
    cfg = fake_config(demo=fake({"tools": [ECHO_TOOL]}))
    cfg["mcpServer"] = {}  # a typo of mcpServers
    done = run_cli("inspect", str(write_config(tmp_path, cfg)))
    assert done.returncode == 0
    assert "mcphost: note:" in done.stderr and "mcpServers" in done.stderr


def test_check_validates_without_starting(tmp_path: Path) -> None:
    good = write_config(tmp_path, fake_config(demo=fake(exitAtStart=1)))  # would fail to start
    done = run_cli("check", str(good))
    assert done.returncode == 0 and "is valid (1 server(s): demo)" in done.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": 5}}}', encoding="utf-8")
    done = run_cli("check", "--config", str(bad))
    assert done.returncode == 2 and "bad.json:1" in done.stderr and "Traceback" not in done.stderr


def test_call_takes_the_config_either_way_and_refuses_unqualified_names(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    done = run_cli("call", str(path), "demo.echo", '{"text": "hi"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout)["content"][0]["text"]) == {"text": "hi"}
    done = run_cli("call", str(path), "echo")
    assert done.returncode == 2 and "must be qualified as server.tool" in done.stderr
    done = run_cli("call", "--config", str(path), "dmeo.echo")
    assert done.returncode == 1 and "did you mean 'demo'?" in done.stderr


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL] * 1 + [
        {"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(300)]})))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcphost", "inspect", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    proc.stdout.readline()
    proc.stdout.close()  # as `| head -1` does
    _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err and b"BrokenPipe" not in err


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


@pytest.mark.interop
@needs_npx
def test_two_ctrl_c_during_an_npx_start_leave_nothing_behind(tmp_path: Path) -> None:
    cfg = {"mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", str(tmp_path)],
                       "timeout": 120},
        # Never answers: the host is still starting when the signals come.
        "mute": {**fake(neverAnswer=True), "timeout": 120},
    }}
    path = write_config(tmp_path, cfg)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcphost", "inspect", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    tree: set[int] = set()
    try:
        deadline = time.monotonic() + 90
        while not any("server-filesystem" in _cmdline(p) for p in tree):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the npx server never started"
            tree |= set(descendants(proc.pid))
            time.sleep(0.05)  # polling the process table (nothing to wait on), bounded
        tree |= set(descendants(proc.pid))
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    text = err.decode()
    assert proc.returncode == 130, text
    assert "Traceback" not in text and "CancelledError" not in text
    assert "interrupted" in text
    for pid in tree:  # npx, npm exec, node and the fake: none of the tree survives
        alive = Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split(")")[-1][:3]
        assert not alive, (pid, _cmdline(pid))


def test_call_is_isolated_from_other_broken_servers(tmp_path: Path) -> None:
    cfg = fake_config(good=fake({"tools": [ECHO_TOOL]}))
    cfg["mcpServers"]["bad"] = {"command": "no-such-binary", "env": {"KEY": "${UNSET_VARIABLE_FOR_TEST}"}}
    cfg["mcpServers"]["worse"] = {"command": 5}
    done = run_cli("call", "--config", str(write_config(tmp_path, cfg)), "good.echo", '{"text": "hi"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout)["content"][0]["text"]) == {"text": "hi"}


def test_inspect_shows_start_times_details_and_one_server(tmp_path: Path) -> None:
    tool = {"name": "pick", "description": "Pick a colour for the thing.", "inputSchema": {
        "type": "object", "required": ["colour"], "properties": {
            "colour": {"type": "string", "enum": ["red", "green"], "description": "The colour."},
            "shade": {"type": "integer", "default": 3}}}}
    path = write_config(tmp_path, fake_config(one=fake({"tools": [tool]}), two=fake({"tools": [ECHO_TOOL]})))
    done = run_cli("inspect", str(path), "--server", "one")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "== one" in out and "== two" not in out and "started in" in out
    assert "one.pick(colour: string, shade?: integer)" in out
    assert '- colour: one of "red", "green"; The colour.' in out and "- shade?: default 3" in out
    assert "\x1b[" not in out  # no colour when not on a terminal
    done = run_cli("call", str(path), "one.pikc", '{"colour": "red"}')
    assert done.returncode == 1 and "did you mean 'pick'?" in done.stderr


def test_a_second_ctrl_c_kills_a_stubborn_server_at_once(tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    spec = {"tools": [{"name": "hang", "inputSchema": {"type": "object"}, "behavior": {"hang": True}}],
            "pid_file": str(pid_file)}
    path = write_config(tmp_path, fake_config(stubborn=fake(spec, ignoreSigterm=True, ignoreStdinEof=True)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "mcphost", "call", str(path), "stubborn.hang"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.01)  # polling a file the server writes, bounded
        server = int(pid_file.read_text())
        proc.send_signal(signal.SIGINT)
        first = proc.stderr.readline().decode()  # the first press is answered ...
        assert "interrupted: stopping 1 server(s): stubborn" in first
        proc.send_signal(signal.SIGINT)  # ... and the second kills at once,
        _, err = proc.communicate(timeout=8)  # long before the 10 s ladder would
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    text = err.decode()
    assert proc.returncode == 130 and "Traceback" not in text
    assert "killing stubborn now" in text and "0 server(s) stopped, 1 killed" in text
    assert not group_alive(server)


def test_check_reports_unreadable_files_without_a_traceback(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"mcpServers": {"a": {"command": "\xff\xfe"}}}')
    done = run_cli("check", str(bad))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == "mcphost: error: bad.json:1: not valid UTF-8 (byte 0xff); save the file as UTF-8"
    folder = tmp_path / "dir.json"
    folder.mkdir()
    done = run_cli("check", str(folder))
    assert done.returncode == 2 and "is a directory" in done.stderr and str(tmp_path) not in done.stderr


def test_metrics_json_logs_and_the_call_time(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    done = run_cli("inspect", str(path), "--metrics")
    assert done.returncode == 0
    table = done.stdout[done.stdout.index("metrics:"):].splitlines()
    assert table[1].split() == ["server", "state", "start", "calls", "errors", "p50", "p95"]
    assert table[2].split()[:2] == ["demo", "ready"]
    logged = run_cli("call", str(path), "demo.echo", '{"text": "hi"}', "-vv", "--log-format", "json")
    assert logged.returncode == 0
    lines = [json.loads(line) for line in logged.stderr.splitlines()]  # every line is JSON
    events = {line["event"] for line in lines}
    assert {"server_ready", "wire", "request_completed", "server_stopped"} <= events
    assert any(line["message"].startswith("demo.echo answered in ") for line in lines)
    # Bodies only at -vvv.
    assert not any('"text"' in line["message"] for line in lines if line["event"] == "wire")
    bodies = run_cli("call", str(path), "demo.echo", '{"text": "hi"}', "-vvv", "--log-format", "json")
    assert any('\\"text\\":\\"hi\\"' in line or '"text":"hi"' in line for line in bodies.stderr.splitlines())


def test_tools_in_a_model_api_format(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    done = run_cli("tools", str(path), "--format", "anthropic")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"name": "demo__echo", "description": ECHO_TOOL["description"],
                                        "input_schema": ECHO_TOOL["inputSchema"]}]
    search = json.loads(run_cli("tools", str(path), "--format", "openai", "--search").stdout)
    assert [t["function"]["name"] for t in search] == ["search_tools", "describe_tool", "call_tool"]
    assert run_cli("tools", str(path), "--format", "cohere").returncode == 2

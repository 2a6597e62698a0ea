"""Item 9: ``inspect --watch`` shows the listing again when the file changes; ``mcphost
shell`` keeps the servers up and takes one call per line, driven here through stdin."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

from cli_support import cli_env, errors, run_cli, write_config
from helpers import ECHO_TOOL, fake, fake_config

from mcphost.cli.shell import parse_line


async def _until(stream: asyncio.StreamReader, needle: str, seen: list[str]) -> None:
    while not any(needle in line for line in seen):
        line = await asyncio.wait_for(stream.readline(), 30)
        assert line, f"{needle!r} never came: {seen}"
        seen.append(line.decode())


async def test_watch_prints_the_listing_again_after_a_change(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(one=fake({"tools": [ECHO_TOOL]})))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mcphost", "inspect", str(path), "--watch", env=cli_env(),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    out: list[str] = []
    try:
        await _until(proc.stdout, "one.echo", out)
        await _until(proc.stderr, "watching the configuration for changes (Ctrl-C to stop)", [])
        write_config(tmp_path, fake_config(one=fake({"tools": [ECHO_TOOL]}), two=fake({"tools": [ECHO_TOOL]})))
        err: list[str] = []
        await _until(proc.stderr, "configuration reloaded", err)
        assert err[-1] == "mcphost: configuration reloaded: added two\n"
        await _until(proc.stdout, "two.echo", out)
        proc.send_signal(signal.SIGINT)
        await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 130
    assert sum(line.startswith("== one  [ready]") for line in out) == 2


def test_shell_lines() -> None:
    assert parse_line('demo.echo {"text": "hi"}') == ("demo.echo", {"text": "hi"})
    assert parse_line("demo.echo text=hi n=3 flag=true 'words=a b'") == (
        "demo.echo", {"text": "hi", "n": 3, "flag": True, "words": "a b"})
    assert parse_line("demo.echo") == ("demo.echo", {})


def test_shell_calls_lists_reloads_and_quits(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL], "resources": [
        {"uri": "mem://notes", "name": "notes", "text": "x"}]})))
    script = "\n".join([
        ":tools",
        ":resources",
        'demo.echo {"text": "one"}',
        "demo__echo text=two",
        "demo.ecoh text=three",
        "demo.echo {not json",
        ":nonsense",
        ":reload",
        ":quit",
        "demo.echo text=never",
    ]) + "\n"
    done = run_cli("shell", str(path), stdin=script)
    assert done.returncode == 1, done.stderr  # one call failed
    out = done.stdout
    assert out.startswith("demo.echo  Echo the arguments back\nmem://notes  notes\n")
    texts = [json.loads(block["content"][0]["text"]) for block in _json_blocks(out)]
    assert texts == [{"text": "one"}, {"text": "two"}]
    assert errors(done.stderr) == [
        "mcphost: error: demo: unknown tool 'ecoh' (tools of demo: echo); did you mean 'echo'?",
        "mcphost: error: arguments are not valid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
        "mcphost: error: unknown command ':nonsense' (commands: :tools, :resources, :reload, :help, :quit)",
    ]
    assert 'mcphost: reloaded: {"unchanged": ["demo"]}' in done.stderr
    assert "never" not in out


def test_shell_ends_at_end_of_input(tmp_path: Path) -> None:
    path = write_config(tmp_path, fake_config(demo=fake({"tools": [ECHO_TOOL]})))
    done = run_cli("shell", str(path), stdin="demo.echo text=hi\n")
    assert done.returncode == 0, done.stderr
    assert json.loads(json.loads(done.stdout)["content"][0]["text"]) == {"text": "hi"}


def _json_blocks(text: str) -> list[dict[str, object]]:
    decoder = json.JSONDecoder()
    blocks, index = [], text.find("{")
    while index != -1:
        value, end = decoder.raw_decode(text, index)
        blocks.append(value)
        index = text.find("{", end)
    return blocks

"""The stdio transport on its own: what only stdio can say (noise, oversized, exit)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import pytest
from helpers import wait_for

from mcphost.errors import ConfigurationError
from mcphost.transports.base import Gone
from mcphost.transports.stdio import StdioTransport

pytestmark = pytest.mark.usefixtures("no_leftovers")


class Sink:
    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.lost: list[tuple[Any, str]] = []
        self.gone: list[Gone] = []

    def on_messages(self, messages: list[Any]) -> None:
        self.messages.extend(messages)

    def on_undeliverable(self, request_id: Any, reason: str) -> None:
        self.lost.append((request_id, reason))

    def on_gone(self, gone: Gone) -> None:
        self.gone.append(gone)


def transport(code: str, **kwargs: Any) -> StdioTransport:
    return StdioTransport("t", sys.executable, ["-c", code], env=dict(os.environ), **kwargs)


async def test_lines_are_decoded_noise_skipped_and_the_exit_reported(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, "mcphost.transports.stdio")
    code = (
        "import sys\n"
        "sys.stdout.write('banner v1\\n{\"a\": 1}\\n   \\nmore noise\\n[2]\\n'); sys.stdout.flush()\n"
        "sys.stderr.write('dying now\\n'); sys.exit(4)"
    )
    t = transport(code)
    sink = Sink()
    t.set_receiver(sink)
    await t.start()
    assert await wait_for(lambda: len(sink.gone) == 1, timeout=10)
    assert sink.messages == [{"a": 1}, [2]]
    stats = t.statistics()
    assert stats["noise_lines"] == 2 and stats["messages_in"] == 2 and stats["pid"] > 0
    noise_logs = [r for r in caplog.records if "non-JSON output on stdout" in r.getMessage()]
    assert len(noise_logs) == 1 and "banner v1" in noise_logs[0].getMessage()
    gone = sink.gone[0]
    assert gone.exit_code == 4
    # The tail is data beside the reason, never glued to it.
    assert gone.reason == "server exited with code 4" and gone.stderr_tail == ["dying now"]
    await t.aclose(2)
    assert len(sink.gone) == 1  # told once


async def test_oversized_lines_name_their_call_when_they_can() -> None:
    code = (
        "import sys\n"
        "big = 'x' * 5000\n"
        "sys.stdout.write('{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":\"' + big + '\"}\\n')\n"
        "sys.stdout.write('{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":\"' + big + '\"}\\n')\n"
        "sys.stdout.write('[\"' + big + '\"]\\n')\n"
        "sys.stdout.write('{\"ok\":1}\\n'); sys.stdout.flush()\n"
        "sys.stdin.read()"
    )
    t = transport(code, max_message_size=1000)
    sink = Sink()
    await t.start()
    assert await wait_for(lambda: t.statistics()["oversized"] == 3, timeout=10)
    t.set_receiver(sink)  # what came before the receiver is handed over
    assert sink.messages == [{"ok": 1}]
    assert [rid for rid, _ in sink.lost] == [7, None]
    assert "message of 5036 bytes (limit 1000 bytes)" in sink.lost[0][1]
    assert "cannot be identified" in sink.lost[1][1]
    gone = await t.aclose(2)
    assert gone.reason == "server was shut down"
    assert sink.gone == []  # closed by us: no on_gone


async def test_writes_of_one_turn_go_out_together() -> None:
    code = "import sys\nfor line in sys.stdin: sys.stdout.write(line); sys.stdout.flush()"
    t = transport(code)
    sink = Sink()
    t.set_receiver(sink)
    await t.start()
    for i in range(5):
        t.send(b'{"n":%d}' % i)
    assert await wait_for(lambda: len(sink.messages) == 5, timeout=10)
    assert [m["n"] for m in sink.messages] == list(range(5))
    stats = t.statistics()
    assert stats["messages_out"] == 5 and stats["bytes_out"] == sum(len(b'{"n":0}\n') for _ in range(5))
    await t.aclose(2)


async def test_a_missing_command_is_a_configuration_error() -> None:
    t = StdioTransport("t", "no-such-command-anywhere", [], env={"PATH": os.environ["PATH"]})
    with pytest.raises(ConfigurationError, match="no-such-command-anywhere"):
        await t.start()


async def test_a_missing_working_directory_is_named(tmp_path: Any) -> None:
    t = StdioTransport("t", sys.executable, ["-c", "pass"], env=dict(os.environ), cwd=str(tmp_path / "gone"))
    with pytest.raises(ConfigurationError, match=r"working directory 'gone' \(cwd\) does not exist") as info:
        await t.start()
    assert str(tmp_path) not in str(info.value)  # no absolute path in what the application gets


async def test_arguments_written_inside_command_are_named_as_such() -> None:
    t = StdioTransport("t", f"{sys.executable} -m mcphost.testing", [], env=dict(os.environ))
    with pytest.raises(ConfigurationError, match=r'is followed by its arguments in "command": put them in "args"'):
        await t.start()

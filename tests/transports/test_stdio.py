"""The stdio transport on its own: what only stdio can say (noise, oversized, exit)."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import pytest
from helpers import wait_for
from sink import Sink

from mcphost.errors import ConfigurationError
from mcphost.transports.stdio import StdioTransport

pytestmark = pytest.mark.usefixtures("no_leftovers")


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


async def test_a_cancelled_aclose_raises_cancelled_error_to_its_caller() -> None:
    # aclose() cancels the task that collects the exit and waits for it; a cancellation of
    # aclose's own caller meanwhile must reach that caller, not be swallowed with the child's.
    import asyncio

    t = transport("import time\ntime.sleep(30)")
    await t.start()
    told, release = asyncio.Event(), asyncio.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            told.set()
            await release.wait()  # still collecting the exit when it is cancelled
            raise

    t._eof_task = asyncio.ensure_future(slow_to_stop())
    closing = asyncio.ensure_future(t.aclose(5))
    await asyncio.wait_for(told.wait(), 20)  # the ladder is done; aclose waits for the child
    closing.cancel()
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(closing, 10)
    assert t.process.ended and t.process.returncode is not None


async def test_kill_now_kills_the_tree_at_once_and_says_it_had_to() -> None:
    # Ignores EOF and SIGTERM: only a kill ends it. kill_now() does, synchronously, and the
    # shutdown under way still finishes, reporting that the process was forced.
    import asyncio
    import signal

    code = ("import signal, sys, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "sys.stdout.write('ready\\n'); sys.stdout.flush()\ntime.sleep(60)")
    t = transport(code, cpu_limit=600)  # a CPU limit: the SIGKILL is still not blamed on it
    sink = Sink()
    t.set_receiver(sink)
    await t.start()
    assert await wait_for(lambda: sink.messages == [] and t.statistics()["noise_lines"] == 1)
    assert t.vitals().pid == t.process.pid and t.vitals().noise_lines == 1
    closing = asyncio.ensure_future(t.aclose(60))
    assert await wait_for(lambda: t.process._shutdown_task is not None)
    assert t.kill_now()
    gone = await asyncio.wait_for(closing, 20)
    assert gone.process is not None and gone.process.forced and gone.process.limit is None
    assert gone.exit_code == -signal.SIGKILL
    assert not t.kill_now()  # nothing left to kill


async def test_a_process_that_died_of_its_cpu_limit_says_which_limit() -> None:
    t = transport("while True: pass", cpu_limit=1)
    sink = Sink()
    t.set_receiver(sink)
    await t.start()
    assert await wait_for(lambda: sink.gone != [], timeout=30)
    end = sink.gone[0].process
    assert end is not None and end.limit == "cpu" and not end.forced
    await t.aclose(2)

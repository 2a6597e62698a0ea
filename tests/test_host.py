"""The host end to end over real subprocesses running the fake server."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, group_alive, wait_for

import mcphost
from mcphost import MCPHost
from mcphost.errors import (
    ConfigurationError,
    PermissionDeniedError,
    ProtocolError,
    RoutingError,
    ServerError,
    ServerStartupError,
    ServerUnavailableError,
    TimeoutError,
)

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


async def test_start_discover_call_and_shutdown() -> None:
    cfg = fake_config(
        a=fake({"tools": [ECHO_TOOL], "prompts": [
            {"name": "greet", "arguments": [{"name": "city", "required": True}],
             "messages": [{"role": "user", "content": {"type": "text", "text": "Hi {city}"}}]}
        ], "resources": [{"uri": "mem://a/readme", "name": "readme", "mimeType": "text/plain", "text": "hello"}],
            "resourceTemplates": [{"uriTemplate": "file:///{+path}", "name": "files", "text": "content for {path}"}],
            "instructions": "be nice"}),
        b=fake({"tools": [tool("dotted.name")]}),
    )
    async with MCPHost(cfg) as host:
        caps = host.get_tools()
        assert set(caps) == {"a", "b"}
        a = caps["a"]
        assert a["state"] == "ready"
        assert a["protocolVersion"] == "2025-11-25"
        assert a["instructions"] == "be nice"
        assert [t["name"] for t in a["tools"]] == ["echo"]
        assert a["prompts"][0]["name"] == "greet"
        assert a["resources"][0]["uri"] == "mem://a/readme"
        assert a["resourceTemplates"][0]["uriTemplate"] == "file:///{+path}"
        result = await host.call_tool("a.echo", {"text": "hi"})
        assert json.loads(result["content"][0]["text"]) == {"text": "hi"}
        # Tool names may contain dots: split on the first one only.
        result = await host.call_tool("b.dotted.name", {})
        assert result["content"][0]["type"] == "text"
        prompt = await host.get_prompt("a.greet", {"city": "Paris"})
        assert prompt["messages"][0]["content"]["text"] == "Hi Paris"
        res = await host.get_resource("mem://a/readme")
        assert res["contents"][0]["text"] == "hello"
        res = await host.get_resource("file:///tmp/x.txt")
        assert res["contents"][0]["text"] == "content for tmp/x.txt"
        metrics = host.get_metrics()
        assert metrics["a"]["tools"]["echo"]["calls"] == 1
        pids = {name: h.pid() for name, h in host.servers.items()}
    for pid in pids.values():
        assert pid is not None and not group_alive(pid)
    assert host.get_tools()["a"]["state"] == "stopped"


async def test_routing_errors_list_what_exists() -> None:
    async with MCPHost(fake_config(a=fake({"tools": [ECHO_TOOL]}))) as host:
        with pytest.raises(RoutingError, match=r"unknown server 'zz' \(servers: a\)"):
            await host.call_tool("zz.echo", {})
        with pytest.raises(RoutingError, match=r"unknown tool 'nope' \(tools of a: echo\)"):
            await host.call_tool("a.nope", {})
        with pytest.raises(RoutingError, match="must be qualified"):
            await host.call_tool("echo", {})
        with pytest.raises(RoutingError, match="unknown prompt"):
            await host.get_prompt("a.nothing")
        with pytest.raises(RoutingError, match="no server offers resource"):
            await host.get_resource("mem://nowhere")


async def test_ambiguous_resource_needs_server_argument() -> None:
    res = {"resources": [{"uri": "mem://same", "name": "x", "text": "from-{n}"}]}
    cfg = fake_config(a=fake(res), b=fake(res))
    async with MCPHost(cfg) as host:
        with pytest.raises(RoutingError, match="several servers"):
            await host.get_resource("mem://same")
        out = await host.get_resource("mem://same", server="b")
        assert out["contents"][0]["uri"] == "mem://same"


async def test_is_error_is_a_result_and_server_error_raises() -> None:
    cfg = fake_config(a=fake({"tools": [tool("bad", isError="it broke"), tool(
        "rpc", error={"code": -32000, "message": "nope", "data": {"x": 1}})]}))
    async with MCPHost(cfg) as host:
        result = await host.call_tool("a.bad", {})
        assert result["isError"] is True
        assert result["content"][0]["text"] == "it broke"
        with pytest.raises(ServerError) as info:
            await host.call_tool("a.rpc", {})
        assert info.value.code == -32000
        assert info.value.data == {"x": 1}
        assert info.value.server == "a"
        assert host.get_metrics()["a"]["tools"]["bad"]["isError"] == 1


async def test_exit_at_start_reports_stderr() -> None:
    cfg = fake_config(brave=fake(exitAtStart=1, stderr="Error: API key is required"))
    with pytest.raises(ServerStartupError) as info:
        async with MCPHost(cfg):
            pass
    err = info.value
    assert "brave" in str(err)
    assert "API key is required" in str(err)
    assert err.failures["brave"].stderr_tail[-1] == "Error: API key is required"


async def test_all_or_nothing_start_names_every_failure() -> None:
    cfg = fake_config(
        good=fake({"tools": [ECHO_TOOL]}),
        bad1=fake(exitAtStart=2, stderr="first failure"),
        bad2=fake(exitAtStart=3, stderr="second failure"),
    )
    host = MCPHost(cfg)
    with pytest.raises(ServerStartupError) as info:
        await host.initialize()
    assert set(info.value.failures) == {"bad1", "bad2"}
    assert "first failure" in str(info.value) and "second failure" in str(info.value)
    good_pid = host.servers["good"].pid()
    assert good_pid is not None and not group_alive(good_pid)
    assert host.get_tools()["good"]["state"] == "stopped"


async def test_start_timeout_when_server_never_answers() -> None:
    server = fake(neverAnswer=True)
    cfg = {"mcpServers": {"mute": {**server, "timeout": 0.5}}}
    with pytest.raises(ServerStartupError, match="start-up timeout of 0.5 s"):
        async with MCPHost(cfg, shutdown_timeout=2):
            pass


async def test_parallel_start_overlaps() -> None:
    # Each server delays its initialize answer; all must be starting at the same time.
    n = 5
    cfg = fake_config(**{f"s{i}": fake({"tools": [ECHO_TOOL]}, initializeDelay=0.3) for i in range(n)})
    moves: list[str] = []
    host = MCPHost(cfg)
    host.on_event(lambda e: moves.append(e["data"]["to"]) if e["type"] == "state_changed" else None)
    await host.initialize()
    try:
        # Every server entered STARTING before any became READY: a sequential start (one
        # server's handshake after another's) would interleave them.
        assert moves == ["starting"] * n + ["ready"] * n
    finally:
        await host.shutdown()


async def test_crash_during_call_fails_pending_calls_at_once() -> None:
    cfg = fake_config(a=fake({"tools": [tool("slow", delay=30), tool("boom")]}, exitOnCall=3))
    async with MCPHost(cfg, request_timeout=60) as host:
        slow1 = asyncio.ensure_future(host.call_tool("a.slow", {}))
        slow2 = asyncio.ensure_future(host.call_tool("a.slow", {}))
        await asyncio.sleep(0)
        with pytest.raises(ServerUnavailableError) as info:
            await asyncio.wait_for(host.call_tool("a.boom", {}), 10)
        assert info.value.exit_code == 3
        assert any("crashing on call 3" in line for line in info.value.stderr_tail)
        for fut in (slow1, slow2):
            with pytest.raises(ServerUnavailableError):
                await asyncio.wait_for(fut, 10)
        # Later calls fail at once, naming the exit.
        with pytest.raises(ServerUnavailableError, match="exited with code 3"):
            await host.call_tool("a.boom", {})
        assert host.get_tools()["a"]["state"] == "unavailable"


async def test_request_timeout_sends_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True)], "record": str(record)}))
    async with MCPHost(cfg) as host:
        with pytest.raises(TimeoutError) as info:
            await host.call_tool("a.hang", {}, timeout=0.2)
        assert isinstance(info.value, builtins_timeout())
        assert "timed out after 0.2 s" in str(info.value)

        def cancelled_seen() -> bool:
            lines = record.read_text().splitlines() if record.exists() else []
            return any('"notifications/cancelled"' in line for line in lines)

        assert await wait_for(cancelled_seen)
        assert host.get_metrics()["a"]["tools"]["hang"]["timeouts"] == 1


async def test_default_timeout_fires_in_sending_order_among_other_timeouts() -> None:
    # Calls on the connection's default timeout are watched in sending order; calls
    # without a timeout, or with their own, are stepped over, and an answered call does
    # not hold the watch back.
    cfg = fake_config(a=fake({"tools": [tool("hang", hang=True), ECHO_TOOL]}))
    async with MCPHost(cfg, request_timeout=0.4) as host:
        loop = asyncio.get_running_loop()
        forever = loop.create_task(host.call_tool("a.hang", {}, timeout=0))
        own = loop.create_task(host.call_tool("a.hang", {}, timeout=30))
        await host.call_tool("a.echo", {"text": "answered"})
        started = time.monotonic()
        defaults = [loop.create_task(host.call_tool("a.hang", {})) for _ in range(3)]
        done, _ = await asyncio.wait(defaults, timeout=10)
        assert len(done) == 3
        for task in defaults:
            exc = task.exception()
            assert isinstance(exc, TimeoutError)
            assert "timed out after 0.4 s" in str(exc)
        assert time.monotonic() - started >= 0.35
        assert not forever.done() and not own.done()
        # The watch starts again for the next default-timeout call after a quiet spell.
        await asyncio.sleep(0.5)
        with pytest.raises(TimeoutError, match="timed out after 0.4 s"):
            await host.call_tool("a.hang", {})
        # A shorter timeout sent after a default one still fires first.
        slow = loop.create_task(host.call_tool("a.hang", {}))
        with pytest.raises(TimeoutError, match="timed out after 0.1 s"):
            await host.call_tool("a.hang", {}, timeout=0.1)
        assert not slow.done()
        with pytest.raises(TimeoutError, match="timed out after 0.4 s"):
            await slow
        assert not forever.done() and not own.done()
        conn = host.servers["a"].session
        assert conn is not None and conn.pending == 2
        forever.cancel()
        own.cancel()
        await asyncio.gather(forever, own, return_exceptions=True)
        assert conn.pending == 0
        assert host.get_metrics()["a"]["tools"]["hang"]["timeouts"] == 6


def builtins_timeout() -> type:
    import builtins

    return builtins.TimeoutError


async def test_caller_cancellation_sends_cancelled(tmp_path: Path) -> None:
    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [tool("wait", waitCancelled=True)], "record": str(record)}))
    async with MCPHost(cfg) as host:
        task = asyncio.ensure_future(host.call_tool("a.wait", {}))
        assert await wait_for(lambda: host.servers["a"].session.pending == 1)  # type: ignore[union-attr]
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        def seen() -> bool:
            text = record.read_text() if record.exists() else ""
            return '"event": "cancelled"' in text or '"event":"cancelled"' in text

        assert await wait_for(seen)
        assert host.servers["a"].session.pending == 0  # type: ignore[union-attr]


async def test_garbage_lines_are_skipped_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL], "garbage": ["banner v1", "not json {"],
                              "garbageEvery": "log line"}))
    async with MCPHost(cfg) as host:
        for _ in range(3):
            await host.call_tool("a.echo", {})
        noise = host.get_metrics()["a"]["connection"]["noise_lines"]
        assert noise >= 5
    warnings = [r for r in caplog.records if "non-JSON" in r.getMessage()]
    assert len(warnings) == 1
    assert "banner v1" in warnings[0].getMessage()


@pytest.mark.parametrize("validate_messages", ["off", "lenient"])
async def test_blank_lines_and_unhashable_ids_leave_the_reader_running(
    validate_messages: str,
) -> None:
    # Lines of blanks are neither messages nor noise. Ids, tokens and request ids that no
    # dict can hold (arrays, objects) are the server's protocol errors: they must not
    # escape the reader as TypeError and take the connection down.
    garbage = [
        "   ",
        "\t",
        {"jsonrpc": "2.0", "id": [1], "result": {}},
        {"jsonrpc": "2.0", "method": "notifications/progress",
         "params": {"progressToken": [1], "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": {"a": 1}}},
    ]
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL], "garbage": garbage}))
    async with MCPHost(cfg, validate_messages=validate_messages) as host:
        for i in range(3):
            result = await host.call_tool("a.echo", {"i": i}, progress=lambda params: None)
            assert json.loads(result["content"][0]["text"]) == {"i": i}
        stats = host.get_metrics()["a"]["connection"]
        assert stats["noise_lines"] == 0
        assert stats["protocol_errors"] >= 1  # the array id
        assert host.servers["a"].state == "ready"


async def test_fifty_megabyte_message() -> None:
    size = 50_000_000
    cfg = fake_config(a=fake({"tools": [tool("big", huge=size)]}))
    async with MCPHost(cfg) as host:
        result = await host.call_tool("a.big", {}, timeout=120)
        assert len(result["content"][0]["text"]) == size


async def test_message_over_limit_is_a_protocol_error_not_a_crash() -> None:
    cfg = fake_config(a=fake({"tools": [tool("big", huge=300_000), ECHO_TOOL]}))
    async with MCPHost(cfg, max_message_size=100_000) as host:
        with pytest.raises(ProtocolError, match="bytes"):
            await host.call_tool("a.big", {})
        # The connection survives.
        result = await host.call_tool("a.echo", {"text": "still here"})
        assert "still here" in result["content"][0]["text"]


async def test_huge_message_at_start_is_skipped() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, hugeMessageOnStart=200_000))
    async with MCPHost(cfg, max_message_size=100_000) as host:
        assert (await host.call_tool("a.echo", {}))["content"]


async def test_thousand_concurrent_calls_resolve_to_their_callers() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}))
    async with MCPHost(cfg) as host:
        results = await asyncio.gather(
            *(host.call_tool("a.echo", {"text": str(i)}) for i in range(1000))
        )
        for i, result in enumerate(results):
            assert json.loads(result["content"][0]["text"]) == {"text": str(i)}


async def test_shutdown_escalates_for_server_ignoring_eof_and_sigterm() -> None:
    cfg = fake_config(
        stubborn=fake({"tools": [ECHO_TOOL]}, ignoreStdinEof=True, ignoreSigterm=True),
        polite=fake({"tools": [ECHO_TOOL]}),
    )
    host = MCPHost(cfg, shutdown_timeout=0.6)
    await host.initialize()
    pid = host.servers["stubborn"].pid()
    await host.shutdown()
    assert pid is not None and not group_alive(pid)
    assert host.servers["stubborn"].last_gone.exit_code == -signal.SIGKILL  # type: ignore[union-attr]
    # Idempotent.
    await host.shutdown()


async def test_shutdown_kills_grandchildren(tmp_path: Path) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, spawnChild=True))
    host = MCPHost(cfg)
    await host.initialize()
    pid = host.servers["a"].pid()
    assert pid is not None
    assert await wait_for(lambda: any("child pid" in line for line in host.servers["a"].transport.process.stderr_lines()))  # type: ignore[union-attr]
    await host.shutdown()
    assert not group_alive(pid)


async def test_shutdown_survives_cancellation() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, ignoreStdinEof=True))
    host = MCPHost(cfg, shutdown_timeout=0.5)
    await host.initialize()
    pid = host.servers["a"].pid()
    task = asyncio.ensure_future(host.shutdown())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert pid is not None and not group_alive(pid)


async def test_notification_flood_does_not_block_calls() -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL]}, notificationFlood=5000))
    async with MCPHost(cfg) as host:
        assert (await host.call_tool("a.echo", {}))["content"]
        assert await wait_for(lambda: host.get_metrics()["a"]["connection"]["notifications"] >= 5000)


async def test_version_mismatch_is_a_clear_startup_error() -> None:
    cfg = fake_config(old=fake({"protocolVersion": "2023-01-01"}))
    with pytest.raises(ServerStartupError, match=r"'2023-01-01'.*'2025-11-25'"):
        async with MCPHost(cfg):
            pass


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_each_version_negotiates(version: str) -> None:
    cfg = fake_config(a=fake({"tools": [ECHO_TOOL], "protocolVersion": version}))
    async with MCPHost(cfg) as host:
        assert host.get_tools()["a"]["protocolVersion"] == version
        assert (await host.call_tool("a.echo", {}))["content"]


async def test_roots_list_is_answered(tmp_path: Path) -> None:
    cfg = fake_config(a=fake({"tools": [tool("roots", request={"method": "roots/list"})]}))
    async with MCPHost(cfg, roots=[str(tmp_path)]) as host:
        result = await host.call_tool("a.roots", {})
        roots = result["structuredContent"]["response"]["roots"]
        assert roots == [{"uri": tmp_path.as_uri(), "name": tmp_path.name}]


async def test_unknown_server_request_gets_method_not_found() -> None:
    cfg = fake_config(a=fake({"tools": [tool("ask", request={"method": "sampling/createMessage",
                                                              "params": {"messages": [], "maxTokens": 5}})]}))
    async with MCPHost(cfg) as host:
        result = await host.call_tool("a.ask", {})
        error = result["structuredContent"]["error"]
        assert error["code"] == -32601
        assert "did not declare" in error["message"]


async def test_generic_callback_answers_and_errors() -> None:
    cfg = fake_config(a=fake({"tools": [tool("ask", request={"method": "custom/thing", "params": {"q": 1}})]}))
    seen: list[Any] = []

    async def cb(server: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        seen.append((server, method, params))
        if params.get("q") == 1:
            return {"answer": 42}
        raise ValueError("bad question")

    async with MCPHost(cfg) as host:
        host.register_callback(cb)
        result = await host.call_tool("a.ask", {})
        assert result["structuredContent"]["response"] == {"answer": 42}
        assert seen == [("a", "custom/thing", {"q": 1})]


async def test_pagination_and_repeated_cursor_guard() -> None:
    tools = [tool(f"t{i}") for i in range(25)]
    cfg = fake_config(paged=fake({"tools": tools, "pageSize": 4}),
                      loop=fake({"tools": tools, "pageSize": 4, "cursorLoop": True}))
    async with MCPHost(cfg) as host:
        caps = host.get_tools()
        assert [t["name"] for t in caps["paged"]["tools"]] == [f"t{i}" for i in range(25)]
        assert 0 < len(caps["loop"]["tools"]) < 25 * 3


async def test_tool_filter_denies(tmp_path: Path) -> None:
    server = fake({"tools": [ECHO_TOOL, tool("secret")]})
    cfg = {"mcpServers": {"a": {**server, "tools": {"deny": ["sec*"]}}}}
    async with MCPHost(cfg) as host:
        assert [t["name"] for t in host.get_tools()["a"]["tools"]] == ["echo"]
        with pytest.raises(PermissionDeniedError):
            await host.call_tool("a.secret", {})


async def test_missing_command_is_a_configuration_error() -> None:
    cfg = {"mcpServers": {"x": {"command": "definitely-not-a-command-mcphost"}}}
    with pytest.raises(ConfigurationError, match="definitely-not-a-command-mcphost"):
        async with MCPHost(cfg):
            pass


async def test_config_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="nope.json: configuration file not found"):
        await MCPHost(tmp_path / "nope.json").initialize()


async def test_disabled_server_is_listed_not_started() -> None:
    server = fake({"tools": [ECHO_TOOL]})
    cfg = {"mcpServers": {"on": server, "off": {**server, "enabled": False}}}
    async with MCPHost(cfg) as host:
        assert host.get_tools()["off"]["state"] == "disabled"
        with pytest.raises(ServerUnavailableError, match="disabled"):
            await host.call_tool("off.echo", {})


async def test_child_environment_is_allow_listed() -> None:
    cfg = fake_config(a=fake({"tools": [tool("env", echoEnv=True)]}))
    env = {**os.environ, "MCPHOST_SECRET_TEST": "s3cret"}
    async with MCPHost(cfg, environ=env) as host:
        assert host.servers["a"].transport is not None
        proc_env = _environ_of(host.servers["a"].pid())
        assert "MCPHOST_SECRET_TEST" not in proc_env
        assert "PATH" in proc_env and "PYTHONPATH" in proc_env


def _environ_of(pid: int | None) -> dict[str, str]:
    assert pid is not None
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def test_import_is_light() -> None:
    # The facade is loaded lazily; importing the package does not import asyncio.
    import subprocess

    code = "import sys, mcphost; print('asyncio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    assert mcphost.MCPHost is MCPHost


INPUT_SCHEMA = {
    "type": "object",
    "properties": {"path": {"type": "string"}, "count": {"type": "integer", "maximum": 20}},
    "required": ["path"],
    "additionalProperties": False,
}


async def test_arguments_are_validated_before_sending(tmp_path: Path) -> None:
    from mcphost.errors import ValidationError

    record = tmp_path / "rec.jsonl"
    cfg = fake_config(a=fake({"tools": [{"name": "read", "inputSchema": INPUT_SCHEMA}], "record": str(record)}))
    async with MCPHost(cfg) as host:
        assert (await host.call_tool("a.read", {"path": "x", "count": 3}))["content"]
        with pytest.raises(ValidationError) as info:
            await host.call_tool("a.read", {"count": 3})
        assert info.value.server == "a"
        assert "read" in str(info.value) and "path" in str(info.value)
        with pytest.raises(ValidationError) as info:
            await host.call_tool("a.read", {"path": "x", "count": 50})
        assert info.value.path == "$.count"
        assert info.value.keyword == "maximum"
        calls = [line for line in record.read_text().splitlines() if '"tools/call"' in line]
        assert len(calls) == 1  # the invalid calls were never sent
    async with MCPHost(cfg, validate_arguments=False) as host:
        assert (await host.call_tool("a.read", {"count": "not validated"}))["content"]


async def test_structured_content_checked_against_output_schema(caplog: pytest.LogCaptureFixture) -> None:
    from mcphost.errors import ValidationError

    out_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tools = [
        {"name": "good", "inputSchema": OBJ, "outputSchema": out_schema,
         "behavior": {"result": {"content": [], "structuredContent": {"n": 1}}}},
        {"name": "bad", "inputSchema": OBJ, "outputSchema": out_schema,
         "behavior": {"result": {"content": [], "structuredContent": {"n": "one"}}}},
        {"name": "none", "inputSchema": OBJ, "outputSchema": out_schema,
         "behavior": {"result": {"content": []}}},
    ]
    cfg = fake_config(a=fake({"tools": tools}))
    async with MCPHost(cfg) as host:
        assert (await host.call_tool("a.good", {}))["structuredContent"] == {"n": 1}
        with pytest.raises(ValidationError, match="does not match its outputSchema") as info:
            await host.call_tool("a.bad", {})
        assert info.value.path == "$.n"
        with pytest.raises(ValidationError, match="no structuredContent"):
            await host.call_tool("a.none", {})
    async with MCPHost(cfg, validate_output="warn") as host:
        assert (await host.call_tool("a.bad", {}))["structuredContent"] == {"n": "one"}
    assert any("does not match its outputSchema" in r.getMessage() for r in caplog.records)
    with pytest.raises(ConfigurationError, match="validate_output"):
        MCPHost(cfg, validate_output="maybe")


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs /proc to tell zombies apart")
def test_a_group_of_zombies_counts_as_gone() -> None:
    import subprocess

    from mcphost.process import _group_has_live_member

    # Our own unreaped child is a zombie: signal 0 still reaches its group, yet nothing in
    # it is alive, so the shutdown ladder must not wait for it.
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    try:
        assert wait_for_sync(lambda: _proc_state(child.pid) == "Z")
        os.killpg(child.pid, 0)  # the group "exists"...
        assert not _group_has_live_member(child.pid)  # ...but only as a zombie
    finally:
        child.wait()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                               start_new_session=True)
    try:
        assert _group_has_live_member(sleeper.pid)
    finally:
        os.killpg(sleeper.pid, signal.SIGKILL)
        sleeper.wait()


def _proc_state(pid: int) -> str:
    stat = Path(f"/proc/{pid}/stat").read_bytes()
    return stat[stat.rfind(b")") + 2 :].split()[0].decode()


def wait_for_sync(predicate: Any, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


async def test_start_only_some_servers_and_their_dependencies() -> None:
    server = fake({"tools": [ECHO_TOOL]})
    cfg = {"mcpServers": {
        "base": server,
        "app": {**server, "dependencies": ["base"]},
        "other": fake(exitAtStart=1),  # would fail the whole start if it were started
    }}
    async with MCPHost(cfg, servers=["app"]) as host:
        states = {name: info["state"] for name, info in host.get_tools().items()}
        assert states == {"base": "ready", "app": "ready", "other": "disabled"}
        assert (await host.call_tool("app.echo", {"text": "x"}))["content"]
    with pytest.raises(RoutingError, match="unknown server 'nope'"):
        async with MCPHost(cfg, servers=["nope"]):
            pass

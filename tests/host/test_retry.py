"""Retries and restarts (mcphost.policy, host/recovery.py), on an injected clock.

The servers are scripted over the in-memory transport; the supervisor's ``sleep`` records
the backoff it was asked for and returns at once, and ``random`` is fixed, so every delay is
exact and no test waits for real time.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from helpers import HostEvents, clocked, wait_for
from scripted import MethodError, Script, scripted_host

from mcphost import MCPHost, ServerError, ServerStartupError, ServerUnavailableError, TimeoutError
from mcphost.policy import Backoff, RestartPolicy, RetryPolicy, is_transient, retry_safe_tool

READ_ONLY = {"readOnlyHint": True}


class Flaky(Script):
    """Dies at ``initialize`` on its first ``dies`` connections, like a server that exits."""

    def __init__(self, dies: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dies = dies
        self.connections = 0

    def connect(self) -> Any:
        self.connections += 1
        return super().connect()

    def on_messages(self, messages: list[Any]) -> None:
        for msg in messages:
            if msg.get("method") == "initialize" and self.connections <= self.dies:
                self.received.append(msg)
                assert self.end is not None
                self.end.peer_gone("server exited")
                return
        super().on_messages(messages)


def events(host: MCPHost) -> HostEvents:
    return HostEvents(host)


def states(seen: list[dict[str, Any]]) -> list[str]:
    return [e["data"]["to"] for e in seen if e["type"] == "state_changed"]


# -- the policies themselves ----------------------------------------------------------------


def test_backoff_is_exponential_capped_and_jittered() -> None:
    backoff = Backoff()  # the host specification's: initial 1 s, maximum 30 s
    assert [backoff.delay(n, 0.0) for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert backoff.delay(3, 0.999) == pytest.approx(4 * (1 - 0.5 * 0.999))
    assert Backoff(jitter=1.0).delay(2, 0.5) == 1.0
    assert RetryPolicy().retries == 3
    assert RetryPolicy(backoff=lambda retry, rnd: 0.25 * retry).delay(2) == 0.5
    for bad in ({"initial": -1}, {"maximum": float("nan")}, {"jitter": 2}, {"multiplier": True}):
        with pytest.raises(ValueError):
            Backoff(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="retries must be an integer"):
        RetryPolicy(retries=-1)
    with pytest.raises(ValueError, match="'never' or 'on-failure'"):
        RestartPolicy(policy="always")


def test_what_is_transient_and_what_is_safe_to_send_twice() -> None:
    assert is_transient(TimeoutError("late")) and is_transient(ServerUnavailableError("gone"))
    assert not is_transient(ServerError("no", code=-32602))
    assert retry_safe_tool({"name": "t", "annotations": {"readOnlyHint": True}})
    assert retry_safe_tool({"name": "t", "annotations": {"idempotentHint": True}})
    assert not retry_safe_tool({"name": "t", "annotations": {"readOnlyHint": "yes"}})
    assert not retry_safe_tool({"name": "t"})


# -- start-up -------------------------------------------------------------------------------


async def test_a_start_that_fails_twice_succeeds_on_the_third_try() -> None:
    script = Flaky(2, methods={"tools/list": lambda p: {"tools": []}})
    host = scripted_host({"a": script})
    delays = clocked(host)
    seen = events(host)
    async with host:
        assert host.servers["a"].state.value == "ready"
    assert script.connections == 3
    assert delays == [1.0, 2.0]
    assert states(seen)[:6] == ["starting", "failed", "starting", "failed", "starting", "ready"]
    retrying = [e["data"] for e in seen if e["type"] == "server_retrying"]
    assert [(r["attempt"], r["attempts"], r["delay"]) for r in retrying] == [(2, 4, 1.0), (3, 4, 2.0)]
    assert all("exited" in r["error"] for r in retrying)


async def test_a_start_fails_after_exactly_the_configured_tries_with_every_error() -> None:
    script = Flaky(99)
    host = MCPHost({"mcpServers": {"a": {"command": "never-run", "retry": {
        "retries": 2, "backoff": {"initial": 0.5, "max": 0.75}}}}},
        transport_factory=lambda config: script.connect())
    delays = clocked(host)
    with pytest.raises(ServerStartupError) as info:
        await host.initialize()
    assert script.connections == 3
    assert delays == [0.5, 0.75]
    err = info.value.failures["a"]
    assert isinstance(err, ServerStartupError) and "(tried 3 times)" in str(err).splitlines()[0]
    assert len(err.attempts) == 3 and all("exited during start-up" in str(e) for e in err.attempts)
    assert host.servers["a"].state.value == "failed"


async def test_a_server_that_answers_wrongly_at_start_is_not_tried_again() -> None:
    script = Script({"tools/list": lambda p: {"tools": "not a list"}})
    host = scripted_host({"a": script}, validate_messages="strict")
    delays = clocked(host)
    with pytest.raises(ServerStartupError) as info:
        await host.initialize()
    assert delays == [] and len(script.requests("initialize")) == 1
    err = info.value.failures["a"]
    assert isinstance(err, ServerStartupError) and not err.transient


async def test_a_command_that_cannot_run_is_not_tried_again() -> None:
    host = MCPHost({"mcpServers": {"a": {"command": "no-such-command-anywhere"}}})
    delays = clocked(host)
    with pytest.raises(Exception, match="not found on PATH"):
        await host.initialize()
    assert delays == []


async def test_a_shutdown_cancels_the_retries_of_a_start() -> None:
    script = Flaky(99)
    host = scripted_host({"a": script}, require_all=False)
    waiting = asyncio.Event()

    async def sleep(seconds: float) -> None:
        waiting.set()
        await asyncio.sleep(3600)

    host.supervisor.sleep = sleep
    start = asyncio.get_running_loop().create_task(host.initialize())
    await asyncio.wait_for(waiting.wait(), 10)
    await asyncio.wait_for(host.shutdown(), 10)
    results = await asyncio.wait_for(start, 10)
    assert not results["a"]["ok"] and "start was cancelled" in results["a"]["error"]
    assert script.connections == 1
    assert host.servers["a"].state.value in ("stopped", "failed")


# -- requests -------------------------------------------------------------------------------


def answer_late_once(result: dict[str, Any]) -> Any:
    """A handler that never answers its first request and answers the next at once."""
    calls = {"n": 0}

    async def handler(params: dict[str, Any]) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            await asyncio.sleep(3600)
        return result

    return handler


async def test_a_read_that_timed_out_is_cancelled_then_tried_again() -> None:
    script = Script({
        "resources/list": lambda p: {"resources": [{"uri": "mem://a", "name": "a"}]},
        "resources/templates/list": lambda p: {"resourceTemplates": []},
        "resources/read": answer_late_once({"contents": [{"uri": "mem://a", "text": "hello"}]}),
    }, capabilities={"resources": {}})
    host = scripted_host({"a": script}, unavailable_after_timeouts=2)
    delays = clocked(host)
    seen = events(host)
    async with host:
        result = await host.get_resource("mem://a", timeout=0.2)
        assert result["contents"][0]["text"] == "hello"
    reads = script.requests("resources/read")
    assert len(reads) == 2 and delays == [1.0]
    # The old request was cancelled before the new one was sent.
    methods = [m.get("method") for m in script.received]
    cancel = methods.index("notifications/cancelled")
    assert script.received[cancel]["params"]["requestId"] == reads[0]["id"]
    assert cancel < script.received.index(reads[1])
    assert [e["data"]["request"] for e in seen if e["type"] == "request_retrying"] == ["resources/read"]


async def test_an_answer_of_the_server_is_not_tried_again() -> None:
    def fail(params: dict[str, Any]) -> Any:
        raise MethodError(-32602, "no such prompt")

    script = Script({"prompts/list": lambda p: {"prompts": [{"name": "p"}]}, "prompts/get": fail},
                    capabilities={"prompts": {}})
    host = scripted_host({"a": script})
    delays = clocked(host)
    async with host:
        with pytest.raises(ServerError, match="no such prompt"):
            await host.get_prompt("a.p")
    assert len(script.requests("prompts/get")) == 1 and delays == []


def tool_server(annotations: dict[str, Any] | None) -> Script:
    tool: dict[str, Any] = {"name": "t", "inputSchema": {"type": "object"}}
    if annotations is not None:
        tool["annotations"] = annotations
    return Script({
        "tools/list": lambda p: {"tools": [tool]},
        "tools/call": answer_late_once({"content": [{"type": "text", "text": "done"}]}),
    })


@pytest.mark.parametrize("annotations", [READ_ONLY, {"idempotentHint": True}])
async def test_a_read_only_or_idempotent_tool_is_tried_again(annotations: dict[str, Any]) -> None:
    script = tool_server(annotations)
    host = scripted_host({"a": script}, unavailable_after_timeouts=2)
    clocked(host)
    async with host:
        result = await host.call_tool("a.t", {}, timeout=0.2)
    assert result["content"][0]["text"] == "done"
    assert len(script.requests("tools/call")) == 2


@pytest.mark.parametrize("annotations", [None, {"readOnlyHint": False, "destructiveHint": True}])
async def test_any_other_tool_is_never_sent_twice(annotations: dict[str, Any] | None) -> None:
    script = tool_server(annotations)
    host = scripted_host({"a": script}, unavailable_after_timeouts=2)
    delays = clocked(host)
    async with host:
        with pytest.raises(TimeoutError):
            await host.call_tool("a.t", {}, timeout=0.2)
    assert len(script.requests("tools/call")) == 1 and delays == []


async def test_an_unavailable_server_with_no_restart_coming_fails_at_once() -> None:
    script = tool_server(READ_ONLY)
    host = scripted_host({"a": script})  # one time-out makes it unavailable
    delays = clocked(host)
    async with host:
        with pytest.raises(TimeoutError):
            await host.call_tool("a.t", {}, timeout=0.2)
        assert host.servers["a"].state.value == "unavailable"
    assert len(script.requests("tools/call")) == 1 and delays == []


async def test_no_retries_when_the_policy_says_none() -> None:
    script = tool_server(READ_ONLY)
    host = scripted_host({"a": script}, unavailable_after_timeouts=2, retry=RetryPolicy(retries=0))
    async with host:
        with pytest.raises(TimeoutError):
            await host.call_tool("a.t", {}, timeout=0.2)
    assert len(script.requests("tools/call")) == 1


# -- restarts -------------------------------------------------------------------------------


def restarting(scripts: dict[str, Script], **restart: Any) -> MCPHost:
    cfg = {"mcpServers": {name: {"command": "never-run", "restart": {"policy": "on-failure", **restart}}
                          for name in scripts}}
    return MCPHost(cfg, transport_factory=lambda config: scripts[config.name].connect())


async def wait_for_state(host: MCPHost, name: str, state: str) -> None:
    assert await wait_for(lambda: host.servers[name].state.value == state), f"{name} never {state}"


async def test_a_server_that_dies_is_restarted_by_its_policy() -> None:
    script = Script({"tools/list": lambda p: {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
                     "tools/call": lambda p: {"content": []}})
    host = restarting({"a": script})
    delays = clocked(host)
    seen = events(host)
    async with host:
        first = host.servers["a"].session
        assert script.end is not None
        script.end.peer_gone("server exited")
        # Ready twice: at the start, then after the restart (each with a new session).
        await seen.until(lambda e: states(seen).count("ready") == 2)
        assert host.servers["a"].session is not first
        assert host.servers["a"].state.value == "ready"
        assert (await host.call_tool("a.t", {}))["content"] == []
        assert host.servers["a"].restarts == 1
    assert delays == [1.0]
    assert [e["data"]["attempt"] for e in seen if e["type"] == "server_restarting"] == [1]
    assert "unavailable" in states(seen)


async def test_restarts_stop_after_max_attempts_and_the_server_is_left_failed() -> None:
    script = Flaky(0, methods={"tools/list": lambda p: {"tools": []}})
    host = restarting({"a": script}, maxAttempts=2, backoff={"initial": 0.5})
    delays = clocked(host)
    seen = events(host)
    async with host:
        script.dies = 99  # every later start dies
        assert script.end is not None
        script.end.peer_gone("server exited")
        await wait_for_state(host, "a", "failed")
        await seen.until(lambda e: e["type"] == "server_gave_up")
        err = host.servers["a"].error
        assert err is not None and err.message.startswith("gave up after 2 restart(s) in a row: server exited")
    assert delays == [0.5, 1.0]
    assert script.connections == 3


async def test_a_retry_waits_for_the_restart_under_way() -> None:
    calls = {"n": 0}

    def call(params: dict[str, Any]) -> Any:
        calls["n"] += 1
        if calls["n"] == 1:
            assert script.end is not None
            script.end.peer_gone("server exited")  # dies while answering the first call
            return None
        return {"content": [{"type": "text", "text": "after restart"}]}

    tool = {"name": "t", "inputSchema": {"type": "object"}, "annotations": READ_ONLY}
    script = Script({"tools/list": lambda p: {"tools": [tool]}, "tools/call": call})
    host = restarting({"a": script})
    clocked(host)
    async with host:
        result = await asyncio.wait_for(host.call_tool("a.t", {}), 10)
        assert result["content"][0]["text"] == "after restart"
        assert host.servers["a"].restarts == 1


async def test_stop_and_restart_by_hand_cancel_a_planned_restart() -> None:
    script = Script({"tools/list": lambda p: {"tools": []}})
    host = restarting({"a": script})
    blocked = asyncio.Event()

    async def sleep(seconds: float) -> None:
        blocked.set()
        await asyncio.sleep(3600)

    host.supervisor.sleep = sleep
    async with host:
        assert script.end is not None
        script.end.peer_gone("server exited")
        await asyncio.wait_for(blocked.wait(), 10)
        await asyncio.wait_for(host.restart_server("a"), 10)
        assert host.servers["a"].state.value == "ready"
        assert host.supervisor.recovery.pending("a") is None


# -- a timed-out request is tried again before the server is marked unavailable -------------


def late_reads(handler: Any) -> Script:
    return Script({
        "resources/list": lambda p: {"resources": [{"uri": "mem://a", "name": "a"}]},
        "resources/templates/list": lambda p: {"resourceTemplates": []},
        "resources/read": handler,
    }, capabilities={"resources": {}})


async def test_under_the_defaults_a_timed_out_read_is_tried_again_and_the_server_stays_ready() -> None:
    # FR7.1 and FR6.3 together: the default unavailable_after_timeouts=1 no longer stops the
    # retry, because the timeout of a request that is tried again counts only if the retry
    # times out too.
    script = late_reads(answer_late_once({"contents": [{"uri": "mem://a", "text": "hello"}]}))
    host = scripted_host({"a": script})
    delays = clocked(host)
    seen = events(host)
    async with host:
        result = await host.get_resource("mem://a", timeout=0.2, cache=False)
        assert result["contents"][0]["text"] == "hello"
        assert host.servers["a"].state.value == "ready"
        assert host.servers["a"].timeout_grace is None  # the answer settled it
    assert len(script.requests("resources/read")) == 2 and delays == [1.0]
    assert "unavailable" not in states(seen)


async def test_a_read_whose_retry_times_out_too_marks_the_server_unavailable() -> None:
    async def never(params: dict[str, Any]) -> Any:
        await asyncio.sleep(3600)

    script = late_reads(never)
    host = scripted_host({"a": script})
    clocked(host)
    seen = events(host)
    async with host:
        with pytest.raises(TimeoutError):
            await host.get_resource("mem://a", timeout=0.2, cache=False)
        assert host.servers["a"].state.value == "unavailable"  # FR6.3, after the retry
    assert len(script.requests("resources/read")) == 2
    assert states(seen).count("unavailable") == 1


async def test_without_retries_the_first_timeout_marks_the_server_unavailable() -> None:
    script = late_reads(answer_late_once({"contents": []}))
    host = scripted_host({"a": script}, retry=RetryPolicy(retries=0))
    clocked(host)
    async with host:
        with pytest.raises(TimeoutError):
            await host.get_resource("mem://a", timeout=0.2, cache=False)
        assert host.servers["a"].state.value == "unavailable"
    assert len(script.requests("resources/read")) == 1


# -- the start budget (TR9.3) ---------------------------------------------------------------


class Hung(Script):
    """Never answers ``initialize``: a server that hangs at start."""

    def __init__(self) -> None:
        super().__init__()
        self.connections = 0

    def connect(self) -> Any:
        self.connections += 1
        return super().connect()

    def on_messages(self, messages: list[Any]) -> None:
        self.received.extend(messages)


def hung_host(script: Hung, timeout: float, policy: RetryPolicy) -> MCPHost:
    cfg = {"mcpServers": {"a": {"command": "never-run", "timeout": timeout}}}
    return MCPHost(cfg, transport_factory=lambda config: script.connect(), retry=policy)


async def test_retries_of_a_hung_start_stop_when_the_start_budget_is_spent() -> None:
    script = Hung()
    host = hung_host(script, 0.1, RetryPolicy(retries=50, backoff=Backoff(initial=0), start_budget=0.35))
    with pytest.raises(ServerStartupError) as info:
        await host.initialize()
    err = info.value.failures["a"]
    assert isinstance(err, ServerStartupError)
    # Not the 51 tries the policy allows: the budget ended them, and the error says so.
    assert 2 <= script.connections < 10 and len(err.attempts) == script.connections
    assert "start budget of 0.35 s is spent" in str(err).splitlines()[0]
    await host.shutdown()


async def test_the_first_try_always_has_its_whole_start_timeout() -> None:
    script = Hung()
    host = hung_host(script, 0.3, RetryPolicy(retries=5, backoff=Backoff(initial=0), start_budget=0.1))
    with pytest.raises(ServerStartupError) as info:
        await host.initialize()
    err = info.value.failures["a"]
    assert "not ready within its start-up timeout of 0.3 s" in str(err)
    assert script.connections == 1 and "start budget of 0.1 s is spent" in str(err)
    await host.shutdown()


def test_the_default_start_budget_is_60_seconds_and_can_be_lifted() -> None:
    assert RetryPolicy().start_budget == 60.0  # TR9.3: "within 60 seconds (configurable)"
    assert RetryPolicy(start_budget=None).start_budget is None

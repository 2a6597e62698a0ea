"""Interop tests of the remote transports against MCP servers written in Python.

Two peers, each a script under ``tests/peers/`` run as a subprocess (``sys.executable``) on
127.0.0.1 and a free port:

- ``sdk-http``: the official Python SDK (PyPI ``mcp``; ``MCPServer``, called ``FastMCP``
  before mcp 2) over Streamable HTTP, ``{"type": "http", "url": ".../mcp"}``;
- ``fastmcp-sse``: ``fastmcp`` over the legacy HTTP+SSE transport,
  ``{"type": "sse", "url": ".../sse"}``.

Both offer the same tools, resources and prompts (see the scripts), so one suite runs over
each. The packages are test-only dependencies (the ``test`` extra), never the package's: the
module is skipped without ``mcp``, the ``fastmcp-sse`` half without ``fastmcp``. No npx is
needed, so these tests are not marked ``interop``.

Each peer is started once per module; features without state share one host (its handlers
delegate to a per-test :class:`Recorder`); what changes state (validation modes, shutdown,
the peer going away) gets a host, or a peer, of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from helpers import accepts, descendants, free_port, group_alive, wait_for
from recorder import Recorder

from mcphost import MCPHost
from mcphost.errors import (
    MCPHostError,
    OutputValidationError,
    ProtocolError,
    ServerError,
    ServerUnavailableError,
    TimeoutError,
    ValidationError,
)
from mcphost.policy import NO_RETRY

pytest.importorskip(
    "mcp", reason="the MCP Python SDK (PyPI 'mcp', in the 'test' extra) is not installed"
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

PEERS_DIR = Path(__file__).resolve().parents[1] / "peers"
SERVER = "s"
#: Bound on a peer's start (a cold start imports pydantic, starlette, uvicorn...).
STARTUP_TIMEOUT = 60.0


@dataclass(frozen=True)
class PeerSpec:
    id: str
    script: str
    type: str  # mcphost's transport type
    path: str  # the URL path served
    module: str  # the package the script needs
    server_name: str  # its serverInfo.name


SDK_HTTP = PeerSpec("sdk-http", "sdk_http_server.py", "http", "/mcp", "mcp", "sdk-peer")
FASTMCP_SSE = PeerSpec("fastmcp-sse", "fastmcp_sse_server.py", "sse", "/sse", "fastmcp", "fastmcp-peer")
SPECS = [SDK_HTTP, FASTMCP_SSE]


@dataclass
class Peer:
    spec: PeerSpec
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.spec.path}"

    def config(self) -> dict[str, Any]:
        # The handshake era: these peers' sampling and elicitation are server-to-client
        # requests, which the 2026-07-28 era (test_modern_peer.py) does not have.
        return {"mcpServers": {SERVER: {"type": self.spec.type, "url": self.url, "protocol": "legacy"}}}


# -- the peer processes ---------------------------------------------------------------------


def _wait_listening(proc: subprocess.Popen[bytes], port: int, timeout: float) -> bool:
    """Until the port accepts connections (True) or the process exits / time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if accepts(port):
            return True
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.05)  # the pause between tries ends early if the process exits
    return False


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the peer's process group and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def start_peer(spec: PeerSpec, log_dir: Path, *args: str, port: int | None = None) -> Peer:
    """Start ``spec``'s script (on ``port``, or a free one); wait (bounded) until it listens."""
    for attempt in range(3):  # a free port taken between the probe and the bind: another one
        chosen = port or free_port()
        log = log_dir / f"{spec.id}-{chosen}-{attempt}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, str(PEERS_DIR / spec.script), str(chosen), *args],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        if _wait_listening(proc, chosen, STARTUP_TIMEOUT):
            return Peer(spec, proc, chosen, log)
        _kill(proc)
        text = log.read_text(errors="replace")
        if port is not None or "address already in use" not in text.lower():
            pytest.fail(f"peer {spec.id} did not start on port {chosen} "
                        f"(exit {proc.returncode}):\n{text[-4000:]}")
    pytest.fail(f"peer {spec.id}: no free port after 3 attempts")


def stop_peer(peer: Peer) -> None:
    _kill(peer.proc)
    assert not group_alive(peer.proc.pid), f"peer {peer.spec.id} left processes behind"


def _needs(spec: PeerSpec) -> None:
    if spec.module == "fastmcp":
        pytest.importorskip(
            "fastmcp", reason="fastmcp (PyPI 'fastmcp', in the 'test' extra) is not installed"
        )


@pytest.fixture(scope="module", params=SPECS, ids=[s.id for s in SPECS])
def peer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Peer]:
    spec: PeerSpec = request.param
    _needs(spec)
    started = start_peer(spec, tmp_path_factory.mktemp(spec.id))
    try:
        yield started
    finally:
        stop_peer(started)


# -- the shared host ------------------------------------------------------------------------


def new_host(peer: Peer, recorder: Recorder | None = None, **options: Any) -> MCPHost:
    options.setdefault("retry", NO_RETRY)  # a failed start fails the test at once
    host = MCPHost(peer.config(), **options)
    if recorder is not None:
        host.on_sampling(recorder.on_sampling)
        host.on_elicitation(recorder.on_elicitation)
        host.on_log(recorder.on_log)
        host.on_progress(recorder.on_progress)
        host.on_event(recorder.events.append)
    return host


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_host(peer: Peer) -> AsyncIterator[tuple[MCPHost, Recorder]]:
    recorder = Recorder()
    # One test times a call out on purpose: that must not make the server unavailable.
    host = new_host(peer, recorder, unavailable_after_timeouts=0)
    async with host:
        yield host, recorder


@pytest.fixture
def shared(shared_host: tuple[MCPHost, Recorder]) -> Iterator[tuple[MCPHost, Recorder]]:
    host, recorder = shared_host
    recorder.reset()
    yield host, recorder


def texts(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"] if block.get("type") == "text"]


def tool(host: MCPHost, name: str) -> dict[str, Any]:
    tools = {t["name"]: t for t in host.get_tools()[SERVER]["tools"]}
    assert name in tools, f"{name} not offered; tools: {sorted(tools)}"
    return tools[name]


def log_text(params: dict[str, Any]) -> str:
    """The text of a log notification: the SDK sends a string, fastmcp ``{"msg", "extra"}``."""
    data = params.get("data")
    if isinstance(data, dict) and "msg" in data:
        return str(data["msg"])
    return data if isinstance(data, str) else json.dumps(data)


# -- handshake and listings -----------------------------------------------------------------


async def test_handshake_and_listings(peer: Peer, shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    info = host.get_tools()[SERVER]
    assert info["state"] == "ready"
    assert info["serverInfo"]["name"] == peer.spec.server_name
    assert info["protocolVersion"] == "2025-11-25"
    assert info["instructions"].startswith("A test peer")
    assert {"tools", "resources", "prompts"} <= set(info["capabilities"])

    names = {t["name"] for t in info["tools"]}
    assert names == {"stats", "bad_output", "count", "cancellations", "chatty", "ask_llm",
                     "ask_user", "toggle_extra"}
    schema = tool(host, "stats")["inputSchema"]
    assert schema["type"] == "object"
    assert schema["required"] == ["values"]
    assert schema["properties"]["values"]["type"] == "array"
    assert schema["properties"]["values"]["items"]["type"] == "number"
    assert schema["properties"]["label"]["type"] == "string"
    assert schema["properties"]["label"]["default"] == "stats"

    [resource] = info["resources"]
    assert resource["uri"] == "info://server"
    assert resource["name"] == "info"
    assert resource["mimeType"] == "text/plain"
    [template] = info["resourceTemplates"]
    assert template["uriTemplate"] == "greeting://{name}"
    assert template["name"] == "greeting"

    [prompt] = info["prompts"]
    assert prompt["name"] == "review"
    args = {a["name"]: a.get("required", False) for a in prompt["arguments"]}
    assert args == {"code": True, "language": False}


# -- tools ----------------------------------------------------------------------------------


async def test_structured_output_matches_its_schema(shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    output = tool(host, "stats")["outputSchema"]
    assert output["type"] == "object"
    assert set(output["required"]) == {"label", "count", "total", "mean"}
    assert output["properties"]["count"]["type"] == "integer"
    result = await host.call_tool(f"{SERVER}.stats", {"values": [1, 2, 3, 4.5], "label": "four"})
    assert not result.get("isError")
    assert result["structuredContent"] == {"label": "four", "count": 4, "total": 10.5,
                                           "mean": 2.625}
    # The text block carries the same data for clients without structured content.
    assert json.loads(texts(result)[0]) == result["structuredContent"]
    # A default argument is the server's.
    default = await host.call_tool(f"{SERVER}.stats", {"values": []})
    assert default["structuredContent"] == {"label": "stats", "count": 0, "total": 0.0,
                                            "mean": 0.0}


async def test_arguments_are_checked_before_sending(shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    sent = host.get_metrics()[SERVER]["connection"]["requests"]
    with pytest.raises(ValidationError) as caught:
        await host.call_tool(f"{SERVER}.stats", {"values": ["one"]})
    assert caught.value.path == "$.values[0]" and caught.value.keyword == "type"
    with pytest.raises(ValidationError, match="values"):
        await host.call_tool(f"{SERVER}.stats", {"label": "no values"})
    assert host.get_metrics()[SERVER]["connection"]["requests"] == sent  # nothing was sent


async def test_output_not_matching_its_schema_is_an_error(shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    assert tool(host, "bad_output")["outputSchema"]["properties"]["count"] == {"type": "integer"}
    with pytest.raises(OutputValidationError) as caught:  # the server's fault, not the caller's
        await host.call_tool(f"{SERVER}.bad_output", {})
    assert isinstance(caught.value, ProtocolError) and not isinstance(caught.value, ValidationError)
    assert caught.value.server == SERVER
    assert caught.value.keyword == "type"
    assert caught.value.path == "$.count"
    assert "bad_output" in str(caught.value) and "outputSchema" in str(caught.value)
    stats = host.get_metrics()[SERVER]["tools"]["bad_output"]
    assert stats["errorsByKind"]["validation"] >= 1
    assert "does not match its outputSchema" in stats["lastError"]


async def test_output_validation_modes(peer: Peer, caplog: pytest.LogCaptureFixture) -> None:
    async with new_host(peer, validate_output="warn") as host:
        with caplog.at_level(logging.WARNING, logger="mcphost"):
            result = await host.call_tool(f"{SERVER}.bad_output", {})
        assert result["structuredContent"] == {"count": "three"}
        assert any("bad_output" in r.getMessage() and "outputSchema" in r.getMessage()
                   for r in caplog.records)
    async with new_host(peer, validate_output="off") as host:
        result = await host.call_tool(f"{SERVER}.bad_output", {})
        assert result["structuredContent"] == {"count": "three"}


async def test_concurrent_calls(shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    results = await asyncio.gather(*(
        host.call_tool(f"{SERVER}.stats", {"values": [n, n], "label": f"n{n}"}) for n in range(20)
    ))
    assert [r["structuredContent"]["label"] for r in results] == [f"n{n}" for n in range(20)]
    assert [r["structuredContent"]["total"] for r in results] == [2.0 * n for n in range(20)]


async def test_progress(shared: tuple[MCPHost, Recorder]) -> None:
    host, rec = shared
    seen: list[dict[str, Any]] = []
    result = await host.call_tool(f"{SERVER}.count", {"steps": 5}, progress=seen.append)
    assert texts(result) == ["counted to 5"]
    # Every notification precedes the response: the callback has seen them all.
    assert [p["progress"] for p in seen] == [1, 2, 3, 4, 5]
    assert {p["total"] for p in seen} == {5}
    assert [p.get("message") for p in seen] == [f"step {i} of 5" for i in range(1, 6)]
    token = seen[0]["progressToken"]
    assert {p["progressToken"] for p in seen} == {token}
    # The host-wide handler saw them too, with the server's name.
    mine = [(s, p) for s, p in rec.progress if p.get("progressToken") == token]
    assert [p["progress"] for _, p in mine] == [1, 2, 3, 4, 5]
    assert {s for s, _ in mine} == {SERVER}


async def test_progress_renews_the_timeout(shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    seen: list[float] = []
    # 12 steps 0.25 s apart (3 s of work) under a 2.5 s timeout renewed by each notification.
    # Each gap has over 2 s to spare: a busy machine (CI runs two suites at once, under
    # coverage) once stretched one past the 1.3 s it had with 10 steps under 1.5 s.
    result = await host.call_tool(f"{SERVER}.count", {"steps": 12, "delay": 0.25}, timeout=2.5,
                                  reset_timeout_on_progress=True,
                                  progress=lambda p: seen.append(p["progress"]))
    assert texts(result) == ["counted to 12"]
    assert seen == list(range(1, 13))


async def cancellations(host: MCPHost) -> int:
    return int(texts(await host.call_tool(f"{SERVER}.cancellations", {}))[0])


async def test_timeout_cancels_the_call_on_the_server(shared: tuple[MCPHost, Recorder]) -> None:
    # The shared host keeps a server whose request timed out (unavailable_after_timeouts=0).
    host, _ = shared
    before = await cancellations(host)
    seen: list[float] = []
    with pytest.raises(TimeoutError):  # the same 2 s of work, without the renewal
        await host.call_tool(f"{SERVER}.count", {"steps": 10, "delay": 0.2}, timeout=1.5,
                             progress=lambda p: seen.append(p["progress"]))
    assert len(seen) < 10
    assert host.get_tools()[SERVER]["state"] == "ready"
    # notifications/cancelled reached the server: the tool was cancelled there.
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while await cancellations(host) == before and loop.time() < deadline:
        await asyncio.sleep(0.05)
    assert await cancellations(host) == before + 1
    # Nothing of the cancelled call reaches the caller later; the next calls are answered.
    done = len(seen)
    assert texts(await host.call_tool(f"{SERVER}.count", {"steps": 2})) == ["counted to 2"]
    assert len(seen) == done


async def test_log_notifications_reach_the_host(shared: tuple[MCPHost, Recorder]) -> None:
    host, rec = shared
    result = await host.call_tool(f"{SERVER}.chatty", {"message": "hello"})
    assert texts(result) == ["logged 4 messages"]
    # Sent before the response (on its stream, or on the SSE stream): in that order.
    assert await wait_for(lambda: len(rec.logs) >= 4)
    got = [(server, params["level"], log_text(params)) for server, params in rec.logs]
    assert got == [(SERVER, level, f"{level}: hello") for level in ("debug", "info", "warning", "error")]


async def test_log_level(peer: Peer) -> None:
    # A host of its own: the level is the session's.
    logs: list[tuple[str, str]] = []
    async with new_host(peer) as host:
        host.on_log(lambda server, params: logs.append((params["level"], log_text(params))))
        if "logging" not in host.get_tools()[SERVER]["capabilities"]:
            # mcp 2's MCPServer sends log messages but does not declare ``logging``: the host
            # does not send logging/setLevel to a server that did not declare it.
            assert peer.spec.id == "sdk-http"
            with pytest.raises(MCPHostError, match="logging"):
                await host.set_log_level(SERVER, "warning")
            return
        await host.set_log_level(SERVER, "warning")
        await host.call_tool(f"{SERVER}.chatty", {"message": "filtered"})
        assert await wait_for(lambda: len(logs) >= 2)
        await host.call_tool(f"{SERVER}.stats", {"values": []})  # a round trip later ...
        assert logs == [("warning", "warning: filtered"), ("error", "error: filtered")]


async def test_sampling(shared: tuple[MCPHost, Recorder]) -> None:
    host, rec = shared
    rec.sampling_reply = {"role": "assistant", "model": "test-model-7", "stopReason": "endTurn",
                          "content": {"type": "text", "text": "Paris."}}
    result = await host.call_tool(f"{SERVER}.ask_llm", {"question": "Capital of France?"})
    assert not result.get("isError"), result
    assert texts(result) == ["test-model-7 says: Paris."]
    [(server, params)] = rec.sampling
    assert server == SERVER
    assert params["maxTokens"] == 64
    assert params["systemPrompt"] == "You are a test."
    assert params["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Capital of France?"}}]


async def test_concurrent_sampling(shared: tuple[MCPHost, Recorder]) -> None:
    # Several calls each waiting for its own sampling answer at once.
    host, rec = shared

    def answer(params: dict[str, Any]) -> dict[str, Any]:
        question = params["messages"][0]["content"]["text"]
        return {"role": "assistant", "model": "m", "content": {"type": "text", "text": question.upper()}}

    rec.sampling_reply = answer
    questions = [f"question {n}" for n in range(8)]
    results = await asyncio.gather(*(
        host.call_tool(f"{SERVER}.ask_llm", {"question": q}) for q in questions))
    assert [texts(r) for r in results] == [[f"m says: {q.upper()}"] for q in questions]
    assert sorted(p["messages"][0]["content"]["text"] for _, p in rec.sampling) == sorted(questions)


async def test_sampling_handler_failure_reaches_the_tool(shared: tuple[MCPHost, Recorder]) -> None:
    host, rec = shared
    rec.sampling_reply = {"no": "role, content or model"}  # not a CreateMessageResult
    # The host does not send an invalid answer: the server gets a JSON-RPC error, which the
    # SDK passes on as the tool call's error, and fastmcp as an isError result.
    try:
        result = await host.call_tool(f"{SERVER}.ask_llm", {"question": "?"})
    except ServerError as exc:
        assert exc.server == SERVER
        assert "missing required property 'role'" in exc.message, exc
    else:
        assert result.get("isError") is True, result
        assert "missing required property 'role'" in texts(result)[0], result
    assert len(rec.sampling) == 1
    # The host (and the server) still serve.
    rec.sampling_reply = {"role": "assistant", "model": "m", "content": {"type": "text", "text": "ok"}}
    assert texts(await host.call_tool(f"{SERVER}.ask_llm", {"question": "?"})) == ["m says: ok"]


async def test_elicitation_accept(shared: tuple[MCPHost, Recorder]) -> None:
    host, rec = shared
    rec.elicitation_reply = {"action": "accept", "content": {"name": "Ada", "age": 36}}
    result = await host.call_tool(f"{SERVER}.ask_user", {"topic": "tests"})
    assert texts(result) == ["Ada is 36"]
    [(server, params)] = rec.elicitation
    assert server == SERVER
    assert params["message"] == "Tell me about you (tests)"
    assert params.get("mode", "form") == "form"
    schema = params["requestedSchema"]
    assert schema["type"] == "object"
    assert set(schema["required"]) == {"name", "age"}
    assert schema["properties"]["name"]["type"] == "string"
    assert schema["properties"]["age"]["type"] == "integer"
    assert schema["properties"]["name"]["description"] == "Your name"


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_elicitation_decline_and_cancel(shared: tuple[MCPHost, Recorder], action: str) -> None:
    host, rec = shared
    rec.elicitation_reply = {"action": action}
    result = await host.call_tool(f"{SERVER}.ask_user", {"topic": "x"})
    assert texts(result) == [f"no answer: {action}"]
    assert len(rec.elicitation) == 1


async def test_tools_list_changed(peer: Peer, shared: tuple[MCPHost, Recorder]) -> None:
    # The server adds a tool and says so outside of any request: on Streamable HTTP that
    # notification comes on the standalone GET stream the host opened, on SSE on the stream.
    host, rec = shared

    def names() -> set[str]:
        return {t["name"] for t in host.get_tools()[SERVER]["tools"]}

    def changed() -> list[dict[str, Any]]:
        return [e for e in rec.events if e["type"] == "capabilities_changed"]

    assert "extra" not in names()
    assert texts(await host.call_tool(f"{SERVER}.toggle_extra", {})) == ["added"]
    assert await wait_for(lambda: "extra" in names()), names()
    assert changed()[0] == {"type": "capabilities_changed", "server": SERVER, "data": ["tools"]}
    assert texts(await host.call_tool(f"{SERVER}.extra", {})) == ["extra!"]
    assert texts(await host.call_tool(f"{SERVER}.toggle_extra", {})) == ["removed"]
    assert await wait_for(lambda: "extra" not in names()), names()
    assert len(changed()) == 2


# -- bounds ---------------------------------------------------------------------------------

#: A small ``max_message_size`` for the bound tests, and a payload over it.
SMALL_BOUND = 256 * 1024
OVER_IT = "x" * (2 * SMALL_BOUND)


async def test_oversized_result_fails_only_its_call(peer: Peer) -> None:
    # docs/reliability.md, Bounds: one message over max_message_size is "discarded as it
    # streams; its call fails with ProtocolError" -- the server goes on serving.
    async with new_host(peer, max_message_size=SMALL_BOUND) as host:
        with pytest.raises(ProtocolError) as caught:
            await host.call_tool(f"{SERVER}.stats", {"values": [1], "label": OVER_IT})
        assert caught.value.server == SERVER
        assert host.get_tools(include_unavailable=True)[SERVER]["state"] == "ready"
        result = await host.call_tool(f"{SERVER}.stats", {"values": [1], "label": "small"})
        assert result["structuredContent"]["label"] == "small"


async def test_oversized_notification_is_dropped(peer: Peer) -> None:
    # A notification over the bound has no call to fail: it is dropped (docs/design.md,
    # "Framing and bad output": "A notification over the limit is only logged").
    logs: list[dict[str, Any]] = []
    async with new_host(peer, max_message_size=SMALL_BOUND) as host:
        host.on_log(lambda server, params: logs.append(params))
        result = await host.call_tool(f"{SERVER}.chatty", {"message": OVER_IT})
        assert texts(result) == ["logged 4 messages"]
        assert logs == []
        assert host.get_tools(include_unavailable=True)[SERVER]["state"] == "ready"


# -- resources and prompts ------------------------------------------------------------------


async def test_resources(peer: Peer, shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    read = await host.get_resource("info://server")
    [content] = read["contents"]
    assert content["uri"] == "info://server"
    assert content["mimeType"] == "text/plain"
    assert content["text"] == f"{peer.spec.server_name}: a test peer"
    # No listed resource has this URI: the template routes it.
    greeting = await host.get_resource("greeting://world", cache=False)
    [content] = greeting["contents"]
    assert content["uri"] == "greeting://world"
    assert content["text"] == "Hello, world!"
    assert host.route_resource("greeting://ada").name == SERVER


async def test_prompts(shared: tuple[MCPHost, Recorder]) -> None:
    host, _ = shared
    got = await host.get_prompt(f"{SERVER}.review", {"code": "x = 1", "language": "go"},
                                cache=False)
    assert got["messages"] == [{"role": "user", "content": {
        "type": "text", "text": "Please review this go code:\nx = 1"}}]
    default = await host.get_prompt(f"{SERVER}.review", {"code": "pass"}, cache=False)
    assert default["messages"][0]["content"]["text"] == "Please review this python code:\npass"


# -- shutdown and the peer going away -------------------------------------------------------


def _connections_to(port: int) -> list[str]:
    """This process's TCP connections to 127.0.0.1:``port`` (any state but LISTEN/TIME_WAIT)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            link = os.readlink(f"/proc/self/fd/{fd}")
            if link.startswith("socket:["):
                inodes.add(link[8:-1])
    found = []
    with open("/proc/net/tcp") as table:
        next(table)
        for line in table:
            fields = line.split()
            remote, state, inode = fields[2], fields[3], fields[9]
            if inode in inodes and int(remote.split(":")[1], 16) == port and state not in ("0A", "06"):
                found.append(f"{fields[1]}->{remote} state {state}")
    return found


async def test_shutdown_is_clean(peer: Peer) -> None:
    before = set(descendants(os.getpid()))
    # The shared host (of the other tests) may hold connections to the peer: not this one's.
    others = set(_connections_to(peer.port))
    events: list[dict[str, Any]] = []
    host = new_host(peer)
    host.on_event(events.append)
    await host.initialize()
    try:
        assert host.get_tools()[SERVER]["state"] == "ready"
        result = await host.call_tool(f"{SERVER}.stats", {"values": [1]})
        assert result["structuredContent"]["count"] == 1
        assert set(_connections_to(peer.port)) - others, "no connection to the peer while ready"
    finally:
        await host.shutdown()
    assert host.get_tools()[SERVER]["state"] == "stopped"
    changes = [(e["data"]["from"], e["data"]["to"]) for e in events if e["type"] == "state_changed"]
    assert changes[-2:] == [("ready", "stopping"), ("stopping", "stopped")]
    # A remote server is not the host's to stop: the peer runs on, and no process was left.
    assert peer.proc.poll() is None
    assert set(descendants(os.getpid())) - before == set()
    # Every connection of this host to the peer is closed (the streams too).
    assert await wait_for(lambda: not set(_connections_to(peer.port)) - others, timeout=5), (
        set(_connections_to(peer.port)) - others)
    await host.shutdown()  # idempotent
    assert host.get_tools()[SERVER]["state"] == "stopped"


async def test_stop_and_start_server_again(peer: Peer) -> None:
    async with new_host(peer) as host:
        await host.stop_server(SERVER)
        assert host.get_tools()[SERVER]["state"] == "stopped"
        assert host.get_tools()[SERVER]["tools"] == []
        await host.start_server(SERVER)
        assert host.get_tools()[SERVER]["state"] == "ready"
        result = await host.call_tool(f"{SERVER}.stats", {"values": [2, 4]})
        assert result["structuredContent"]["mean"] == 3.0


async def test_peer_going_away_makes_the_server_unavailable(
    peer: Peer, tmp_path: Path,
) -> None:
    # A peer of its own: this one is killed under the host.
    mortal = start_peer(peer.spec, tmp_path)
    try:
        events: list[dict[str, Any]] = []
        async with new_host(mortal) as host:
            host.on_event(events.append)
            assert (await host.call_tool(f"{SERVER}.count", {"steps": 1}))["content"]
            _kill(mortal.proc)
            # Streamable HTTP notices on its next request (the loss of its GET stream alone is
            # no proof: the server may end it); the end of the SSE stream is the end.
            with pytest.raises(ServerUnavailableError):
                await host.call_tool(f"{SERVER}.count", {"steps": 1}, timeout=10)
            assert host.get_tools(include_unavailable=True)[SERVER]["state"] == "unavailable"
            with pytest.raises(ServerUnavailableError):
                await host.call_tool(f"{SERVER}.count", {"steps": 1})
            # A remote server that went away is reported like a process that exited.
            [gone] = [e for e in events if e["type"] in ("server_exited", "server_unavailable")]
            assert gone["server"] == SERVER
            assert "connect" in gone["data"] or "stream" in gone["data"], gone
        assert host.get_tools()[SERVER]["state"] == "stopped"
    finally:
        stop_peer(mortal)


async def test_peer_restarted_on_the_same_port(peer: Peer, tmp_path: Path) -> None:
    """Streamable HTTP: the old session is unknown (404), a new one is made on the next call.
    HTTP+SSE: the stream's end makes the server unavailable; ``restart_server`` reconnects."""
    first = start_peer(peer.spec, tmp_path)
    second: Peer | None = None
    try:
        async with new_host(first) as host:
            assert texts(await host.call_tool(f"{SERVER}.count", {"steps": 1})) == ["counted to 1"]
            _kill(first.proc)
            second = start_peer(peer.spec, tmp_path, port=first.port)
            if peer.spec.type == "http":
                result = await host.call_tool(f"{SERVER}.count", {"steps": 2})
                assert texts(result) == ["counted to 2"]
                assert host.get_tools()[SERVER]["state"] == "ready"
            else:
                assert await wait_for(lambda: host.get_tools(include_unavailable=True)[SERVER]["state"]
                                      == "unavailable")
                await host.restart_server(SERVER)
                assert host.get_tools()[SERVER]["state"] == "ready"
                assert texts(await host.call_tool(f"{SERVER}.count", {"steps": 2})) == ["counted to 2"]
        assert host.get_tools()[SERVER]["state"] == "stopped"
    finally:
        stop_peer(first)
        if second is not None:
            stop_peer(second)


@pytest.mark.parametrize("mode", [["--json"], ["--stateless"], ["--json", "--stateless"]],
                         ids=["json", "stateless", "stateless-json"])
async def test_sdk_http_response_modes(tmp_path: Path, mode: list[str]) -> None:
    """The SDK's other Streamable HTTP modes: answers in one JSON body; no session id."""
    other = start_peer(SDK_HTTP, tmp_path, *mode)
    try:
        rec = Recorder()
        async with new_host(other, rec, unavailable_after_timeouts=0) as host:
            assert host.get_tools()[SERVER]["state"] == "ready"
            result = await host.call_tool(f"{SERVER}.stats", {"values": [1, 2]})
            assert result["structuredContent"]["mean"] == 1.5
            results = await asyncio.gather(*(
                host.call_tool(f"{SERVER}.stats", {"values": [n]}) for n in range(10)))
            assert [r["structuredContent"]["total"] for r in results] == [float(n) for n in range(10)]
            with pytest.raises(OutputValidationError):
                await host.call_tool(f"{SERVER}.bad_output", {})
            read = await host.get_resource("greeting://json")
            assert read["contents"][0]["text"] == "Hello, json!"
            prompt = await host.get_prompt(f"{SERVER}.review", {"code": "1"})
            assert prompt["messages"][0]["content"]["text"].endswith("code:\n1")
            # Without a stream for it (or a session) the server has no way to ask the client:
            # mcp 2 fails the tool at once ("no back-channel", no handler called); mcp 1 loses
            # the request or the answer (the call times out). The host still serves.
            with pytest.raises((ServerError, TimeoutError)) as caught:
                await host.call_tool(f"{SERVER}.ask_llm", {"question": "?"}, timeout=5)
            if isinstance(caught.value, ServerError):
                assert "back-channel" in caught.value.message
                assert rec.sampling == []
            assert host.get_tools()[SERVER]["state"] == "ready"
            assert texts(await host.call_tool(f"{SERVER}.count", {"steps": 2})) == ["counted to 2"]
        assert host.get_tools()[SERVER]["state"] == "stopped"
    finally:
        stop_peer(other)

"""The host checks what servers send against the MCP schemas: strict, lenient and off.

Each test drives a fake server that sends one malformed message of one kind (a result of a
request the host made, a request of the server, a notification) and shows what the
application sees in each mode.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config

from mcphost import MCPHost
from mcphost.errors import ProtocolError, ServerStartupError, UsageError

OBJ = {"type": "object"}
# A text block without its text: invalid in every protocol version.
BAD_RESULT_TOOL = {"name": "bad", "inputSchema": OBJ,
                   "behavior": {"result": {"content": [{"type": "text"}]}}}
BAD_SAMPLING_TOOL = {
    "name": "ask", "inputSchema": OBJ,
    "behavior": {"request": {"method": "sampling/createMessage",
                             "params": {"messages": [], "maxTokens": "many"}}},
}
BAD_LOG_TOOL = {
    "name": "shout", "inputSchema": OBJ,
    "behavior": {"notify": [{"method": "notifications/message",
                             "params": {"level": "loud", "data": "hello"}}],
                 "echo": True},
}
SPEC = {"tools": [ECHO_TOOL, BAD_RESULT_TOOL, BAD_SAMPLING_TOOL, BAD_LOG_TOOL]}


def host_for(mode: str, spec: dict[str, Any] = SPEC) -> MCPHost:
    return MCPHost(fake_config(a=fake(spec)), validate_messages=mode)


def warnings_about(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno == logging.WARNING and text in r.getMessage()]


async def test_strict_result_raises_naming_the_field() -> None:
    async with host_for("strict") as host:
        with pytest.raises(ProtocolError) as caught:
            await host.call_tool("a.bad", {})
        assert caught.value.server == "a"
        message = str(caught.value)
        assert "tools/call result" in message and "$.content[0]" in message
        assert "text" in message
        # The connection stays usable, and counts the fault.
        assert (await host.call_tool("a.echo", {"x": 1}))["content"]
        assert host.get_metrics()["a"]["connection"]["protocol_errors"] == 1


async def test_lenient_result_is_returned_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with host_for("lenient") as host:
        for _ in range(3):
            result = await host.call_tool("a.bad", {})
            assert result["content"] == [{"type": "text"}]
    found = warnings_about(caplog, "tools/call result")
    assert len(found) == 1, found
    assert "a:" in found[0] and "$.content[0]" in found[0]


async def test_off_checks_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with host_for("off") as host:
        assert host.servers["a"].session is not None
        assert host.servers["a"].session.checker is None
        assert (await host.call_tool("a.bad", {}))["content"] == [{"type": "text"}]
    assert not warnings_about(caplog, "tools/call result")


def sampler(asked: list[dict[str, Any]]) -> Any:
    def sampling(server: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}

    return sampling


async def test_strict_refuses_a_malformed_server_request() -> None:
    asked: list[dict[str, Any]] = []
    host = host_for("strict")
    host.on_sampling(sampler(asked))
    async with host:
        result = await host.call_tool("a.ask", {})
    answer = result["structuredContent"]
    assert "error" in answer, answer
    assert answer["error"]["code"] == -32602
    assert "sampling/createMessage" in answer["error"]["message"]
    assert "maxTokens" in answer["error"]["message"]
    assert asked == []  # the application never saw it


async def test_lenient_passes_a_malformed_server_request_on(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    asked: list[dict[str, Any]] = []
    host = host_for("lenient")
    host.on_sampling(sampler(asked))
    async with host:
        result = await host.call_tool("a.ask", {})
    assert "response" in result["structuredContent"]
    assert len(asked) == 1
    assert warnings_about(caplog, "sampling/createMessage")


@pytest.mark.parametrize("mode, delivered", [("strict", False), ("lenient", True), ("off", True)])
async def test_malformed_notification(mode: str, delivered: bool) -> None:
    logs: list[dict[str, Any]] = []
    host = host_for(mode)
    host.on_log(lambda server, params: logs.append(params))
    async with host:
        await host.call_tool("a.shout", {})
        await host.call_tool("a.echo", {})  # the notification was read before this answer
        protocol_errors = host.get_metrics()["a"]["connection"]["protocol_errors"]
    assert bool(logs) is delivered
    assert protocol_errors == (1 if mode == "strict" else 0)


async def test_malformed_tool_list_fails_start_in_strict_only(caplog: pytest.LogCaptureFixture) -> None:
    spec = {"tools": [ECHO_TOOL, {"name": "noschema"}]}  # inputSchema is required
    with pytest.raises(ServerStartupError) as caught:
        async with host_for("strict", spec):
            pass
    assert "tools/list result" in str(caught.value)
    assert "inputSchema" in str(caught.value)

    caplog.set_level(logging.WARNING)
    async with host_for("lenient", spec) as host:
        names = [t["name"] for t in host.get_tools()["a"]["tools"]]
        assert names == ["echo", "noschema"]
    assert warnings_about(caplog, "tools/list result")


def test_unknown_mode_is_a_usage_error_of_the_constructor() -> None:
    # One class for every bad option (it was a ConfigurationError here, a UsageError elsewhere).
    with pytest.raises(UsageError, match="validate_messages"):
        MCPHost(fake_config(a=fake(SPEC)), validate_messages="loose")


GOOD_SAMPLING_TOOL = {
    "name": "ask_ok", "inputSchema": OBJ,
    "behavior": {"request": {"method": "sampling/createMessage",
                             "params": {"messages": [], "maxTokens": 5}}},
}


@pytest.mark.parametrize("mode", ["strict", "lenient"])
async def test_a_malformed_answer_from_the_application_is_never_sent(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    host = host_for(mode, {"tools": [GOOD_SAMPLING_TOOL]})
    host.on_sampling(lambda server, params: {"role": "assistant", "model": "m"})  # no content
    async with host:
        result = await host.call_tool("a.ask_ok", {})
    error = result["structuredContent"]["error"]
    assert error["code"] == -32603
    assert "sampling/createMessage result" in error["message"] and "content" in error["message"]
    assert any(r.levelno == logging.ERROR and "not valid MCP" in r.getMessage()
               for r in caplog.records)


async def test_off_sends_the_applications_answer_as_it_is() -> None:
    host = host_for("off", {"tools": [GOOD_SAMPLING_TOOL]})
    host.on_sampling(lambda server, params: {"role": "assistant", "model": "m"})
    async with host:
        result = await host.call_tool("a.ask_ok", {})
    assert result["structuredContent"]["response"] == {"role": "assistant", "model": "m"}

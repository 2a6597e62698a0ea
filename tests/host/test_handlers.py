"""What the host answers when a server asks the client: roots, undeclared methods, the
generic callback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import fake, fake_config

from mcphost import MCPHost

pytestmark = pytest.mark.usefixtures("no_leftovers")

OBJ: dict[str, Any] = {"type": "object"}


def tool(name: str, **behavior: Any) -> dict[str, Any]:
    return {"name": name, "inputSchema": OBJ, "behavior": behavior}


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


async def test_a_plain_callback_serves_sampling() -> None:
    # FR5.3: sampling requests of servers reach the registered callback.
    request = {"method": "sampling/createMessage",
               "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}}
    cfg = fake_config(a=fake({"tools": [tool("ask", request=request)]}))
    seen: list[Any] = []

    def cb(server: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
        seen.append((server, method, params["maxTokens"]))
        return {"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}

    host = MCPHost(cfg)
    host.register_callback(cb)
    async with host:
        result = await host.call_tool("a.ask", {})
        assert result["structuredContent"]["response"]["content"]["text"] == "hello"
        assert seen == [("a", "sampling/createMessage", 5)]


async def test_a_callback_can_decline_sampling() -> None:
    request = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}
    cfg = fake_config(a=fake({"tools": [tool("ask", request=request)]}))
    host = MCPHost(cfg)
    host.register_callback(lambda server, method, params: {}, sampling=False)
    async with host:
        result = await host.call_tool("a.ask", {})
        assert result["structuredContent"]["error"]["code"] == -32601

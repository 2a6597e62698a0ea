"""Host names the socket layer cannot encode are refused as configuration errors (never a
raw UnicodeError), and credentials in URLs are found and masked."""

from __future__ import annotations

import os
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake

from mcphost import ConfigurationError, MCPHost
from mcphost.config.load import config_from_data
from mcphost.config.urls import hide_credentials, host_problem, url_secrets
from mcphost.policy import NO_RETRY
from mcphost.transports.factory import make_transport
from mcphost.transports.http_auto import HttpTransport
from mcphost.transports.websocket import WebSocketTransport

LONG = "a" * 64  # one character over RFC 1035's 63


def test_host_problems() -> None:
    assert host_problem(f"{LONG}.example.com") == "the host name has a label of 64 characters (at most 63)"
    assert host_problem("a" * 63 + ".example.com") is None
    assert host_problem("x..example.com") == "the host name has an empty label"
    assert host_problem(".".join(["a" * 60] * 5)) == "the host name has 304 characters (at most 253)"
    for fine in ("example.com", "example.com.", "127.0.0.1", "::1", "bücher.example", "localhost"):
        assert host_problem(fine) is None, fine


@pytest.mark.parametrize("url", [f"http://{LONG}.example.com/mcp", f"ws://{LONG}.example.com/mcp"])
def test_a_64_character_label_is_refused_at_load_naming_the_field(url: str) -> None:
    with pytest.raises(ConfigurationError) as info:
        config_from_data({"mcpServers": {"bad": {"url": url}}}, environ={})
    assert "mcpServers.bad.url" in str(info.value) and "label of 64 characters" in str(info.value)


async def test_initialize_raises_a_configuration_error_not_unicode_error() -> None:
    cfg = {"mcpServers": {"bad": {"url": f"https://{LONG}.example.com/mcp"}, "good": fake({"tools": [ECHO_TOOL]})}}
    with pytest.raises(ConfigurationError, match="label of 64 characters"):
        await MCPHost(cfg, retry=NO_RETRY).initialize(require_all=False)


@pytest.mark.parametrize("transport", [HttpTransport, WebSocketTransport])
def test_transports_refuse_the_host_name_as_configuration(transport: Any) -> None:
    scheme = "ws" if transport is WebSocketTransport else "http"
    with pytest.raises(ConfigurationError, match="label of 64 characters"):
        transport("bad", f"{scheme}://{LONG}.example.com/mcp")


async def test_with_require_all_false_the_healthy_server_beside_it_starts() -> None:
    # A server whose transport is built in code with such a URL (no file to validate):
    # that server fails with a ConfigurationError, the other starts.
    def factory(config: Any) -> Any:
        if config.name == "bad":
            return HttpTransport(config.name, f"http://{LONG}.example.com/mcp")
        return make_transport(config, environ=os.environ, max_message_size=1 << 20)

    cfg = {"mcpServers": {"bad": {"url": "http://127.0.0.1:9/mcp"}, "good": fake({"tools": [ECHO_TOOL]})}}
    host = MCPHost(cfg, retry=NO_RETRY, transport_factory=factory)
    try:
        results = await host.initialize(require_all=False)
        assert results["good"]["ok"] and not results["bad"]["ok"]
        assert "label of 64 characters" in (results["bad"]["error"] or "")
        assert (await host.call_tool("good.echo", {"text": "hi"}))["content"]
    finally:
        await host.shutdown()


def test_hide_credentials_in_any_text() -> None:
    text = ("GET https://bob:hunter22@h.example/x?access_token=T1&page=2&X-Amz-Signature=S2;"
            " then wss://ghp_abcdef@h/y?api_key=K3#frag and key=plain-words")
    assert hide_credentials(text) == (
        "GET https://bob:***@h.example/x?access_token=***&page=2&X-Amz-Signature=***;"
        " then wss://***@h/y?api_key=***#frag and key=plain-words")


def test_url_secrets() -> None:
    assert url_secrets("https://bob:p%40ss@h/x?token=a%2Fb&page=1&sig=zz") == ["p%40ss", "p@ss", "a/b", "a%2Fb", "zz"]
    assert url_secrets("https://tok3n@h/") == ["tok3n", "tok3n"]

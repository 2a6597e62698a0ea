"""What a stdio server runs: package runners recognised (their first start may download)."""

from __future__ import annotations

import pytest

from mcphost.config import ServerConfig
from mcphost.transports.factory import may_install_first
from mcphost.transports.stdio.command import is_package_runner


@pytest.mark.parametrize(("command", "args", "runner"), [
    ("npx", ["-y", "@modelcontextprotocol/server-everything"], True),
    ("/usr/local/bin/uvx", ["mcp-server-time"], True),
    ("npx.cmd", [], True),
    ("pipx", ["run", "pkg"], True),
    ("npm", ["exec", "pkg"], True),
    ("npm", ["start"], False),
    ("node", ["server.js"], False),
    ("python", ["-m", "server"], False),
    (None, [], False),
])
def test_package_runners_are_recognised(command: str | None, args: list[str], runner: bool) -> None:
    assert is_package_runner(command, args) is runner


def test_only_a_stdio_server_may_install_on_its_first_start() -> None:
    assert may_install_first(ServerConfig(name="a", type="stdio", command="npx", args=("-y", "pkg")))
    assert not may_install_first(ServerConfig(name="a", type="stdio", command="node", args=("s.js",)))
    assert not may_install_first(ServerConfig(name="a", type="http", url="https://example.com/mcp"))

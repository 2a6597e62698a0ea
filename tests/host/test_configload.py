"""Reading the configuration file: errors name the file by its base name and a line."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from mcphost import ConfigurationError, MCPHost
from mcphost.config import parse_config


async def test_invalid_utf8_is_reported_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_bytes(b'{\n  "mcpServers": {\n    "a": {"command": "\xff"}\n  }\n}\n')
    with pytest.raises(ConfigurationError) as info:
        await MCPHost(str(path)).initialize()
    assert str(info.value) == "mcp.json:3: not valid UTF-8 (byte 0xff); save the file as UTF-8"
    assert info.value.line == 3


async def test_a_directory_is_named_without_its_path(tmp_path: Path) -> None:
    folder = tmp_path / "mcp.json"
    folder.mkdir()
    with pytest.raises(ConfigurationError) as info:
        await MCPHost(str(folder)).initialize()
    assert str(info.value) == "mcp.json: is a directory, not a configuration file"
    assert str(tmp_path) not in str(info.value)


def test_a_malformed_pick_list_is_a_configuration_error() -> None:
    text = '{"inputs": [{"type": "pickString", "id": "m", "options": "x"}], "servers": {}}'
    with pytest.raises(ConfigurationError, match=r"mcp.json:1: inputs\[0\].options: expected array, got string"):
        parse_config(text, path="/somewhere/mcp.json", environ={})


async def test_identical_servers_under_two_names_are_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    # Host specification, "Host interface": duplicate servers are told at load. A warning
    # (docs/config.md says why not an error); the configuration still loads.
    from mcphost.host.configload import load_config

    same = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}
    cfg = {"mcpServers": {"files": dict(same), "files2": {**same, "priority": 3}, "other": {"command": "npx"}}}
    with caplog.at_level(logging.WARNING, logger="mcphost.host.configload"):
        loaded = await load_config(cfg, environ={}, inputs=None)
    assert loaded.duplicates == (("files", "files2"),)
    warned = [r for r in caplog.records if getattr(r, "event", None) == "config_duplicate_servers"]
    assert len(warned) == 1 and "files, files2" in warned[0].getMessage()
    assert any("mcpServers.files2: the same server as 'files'" in note for note in loaded.notes)
    # Different environments, or one of them disabled: two servers, no warning.
    cfg = {"mcpServers": {"a": {**same, "env": {"ROOT": "1"}}, "b": dict(same), "c": {**same, "enabled": False}}}
    assert (await load_config(cfg, environ={}, inputs=None)).duplicates == ()

"""Reading the configuration file: errors name the file by its base name and a line."""

from __future__ import annotations

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

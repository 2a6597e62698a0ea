"""docs/config.md is true: every field of the schema is documented, its configurations
load as it says, and each error it shows is the message mcphost gives, word for word."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcphost.config import parse_config, required_inputs
from mcphost.config.model import HostConfig
from mcphost.errors import ConfigurationError

ROOT = Path(__file__).resolve().parent.parent.parent
DOC = (ROOT / "docs" / "config.md").read_text(encoding="utf-8")
SCHEMA = json.loads((ROOT / "schemas" / "mcp.json.schema.json").read_text(encoding="utf-8"))
BLOCKS = re.findall(r"```(\w*)\n(.*?)\n```", DOC, re.S)
ENV = {"PATH": "/usr/bin", "HOME": "/home/u", "EXAMPLE_TOKEN": "t0k"}


def _load(text: str, inputs: dict[str, str] | None = None) -> HostConfig:
    return parse_config(text, path="/project/.vscode/mcp.json", environ=ENV, inputs=inputs or {},
                        read_text=lambda path: "")


def _block(language: str, containing: str) -> str:
    [text] = [str(body) for lang, body in BLOCKS if lang == language and containing in body]
    return text


@pytest.mark.parametrize("field", sorted(SCHEMA["$defs"]["server"]["properties"]))
def test_every_server_field_is_documented(field: str) -> None:
    assert f"`{field}`" in DOC


@pytest.mark.parametrize("field", sorted(SCHEMA["properties"]))
def test_every_top_level_field_is_documented(field: str) -> None:
    assert f"`{field}`" in DOC or f'`"{field}"`' in DOC


def test_the_file_shown_loads_as_described() -> None:
    text = _block("jsonc", "VS Code dialect")
    [spec] = required_inputs(text, path="/project/.vscode/mcp.json")
    assert spec.id == "brave-key" and spec.password
    config = _load(text, {"brave-key": "k3y"})
    servers = config.servers
    assert servers["filesystem"].type == "stdio" and servers["filesystem"].args[-1] == "/project"
    assert servers["brave"].env["BRAVE_API_KEY"] == "k3y" and not servers["brave"].tools.permits("brave_local_x")
    assert servers["remote"].type == "http" and servers["remote"].headers["Authorization"] == "Bearer t0k"
    assert config.start_order() == [["filesystem", "brave"], ["remote"]]


def test_the_inputs_shown_are_read() -> None:
    fragment = _block("json", '"inputs"')
    text = ("{" + fragment + ', "servers": {"s": {"command": "x", "env": '
            '{"KEY": "${input:api-key}", "REGION": "${input:region}", "MODE": "${input:mode}"}}}}')
    specs = required_inputs(text, path="mcp.json")
    assert [(s.id, s.type, s.password) for s in specs] == [
        ("api-key", "promptString", True), ("region", "promptString", False), ("mode", "pickString", False)]
    assert specs[1].default == "eu" and specs[2].options == ("fast", "slow")
    env = _load(text, {"api-key": "k", "region": "us", "mode": "slow"}).servers["s"].env
    assert env == {"KEY": "k", "REGION": "us", "MODE": "slow"}


#: What makes each error the documented block shows (a file of that text, named mcp.json).
ERROR_SOURCES = [
    '{\n  "mcpServers": {\n    "fs": {"command": "x" "args": []}\n  }\n}',
    '{\n  "servers": {\n    "fs": {\n      "command": "a"\n    },\n    "x": {"command": "b"},\n'
    '    "y": {"command": "c"},\n    "z": {"command": "d"},\n    "fs": {"command": "e"}\n  }\n}',
    '{\n  "servers": {\n    "brave-search": {\n      "command": "npx",\n      "args": [\n'
    '        "-y",\n        7\n      ]\n    }\n  }\n}',
    '{\n  "mcpServers": {"fs": {"comand": "x"}}\n}',
    '{\n  "servers": {\n    "web": {\n      "url": "https://x",\n      "type": "grpc"\n    }\n  }\n}',
    '{\n "servers": {\n  "fs": {\n   "command": "x",\n' + "\n" * 6 + '   "timeout": 0\n  }\n }\n}',
    '{\n "servers": {\n  "a": {"command": "x", "dependencies": ["b"]},\n'
    '  "b": {"command": "x", "dependencies": ["c"]},\n  "c": {"command": "x", "dependencies": ["a"]}\n }\n}',
]


def test_each_error_shown_is_the_message_given() -> None:
    shown = [line.split("  (")[0].rstrip() for line in _block("", "invalid JSON").splitlines()]
    given = []
    for source in ERROR_SOURCES:
        with pytest.raises(ConfigurationError) as info:
            _load(source)
        given.append(str(info.value).replace("/project/.vscode/", "").splitlines()[0])
    assert given == shown

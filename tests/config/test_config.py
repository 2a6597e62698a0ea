"""Tests for mcphost.config: parsing, expansion and validation of mcp.json."""

from __future__ import annotations

import dataclasses
import json
import os
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from mcphost.config import (
    DEFAULT_TIMEOUT,
    SERVER_NAME_PATTERN,
    HostConfig,
    InputSpec,
    Limits,
    ServerConfig,
    ToolFilter,
    config_from_data,
    parse_config,
    parse_memory,
    required_inputs,
)
from mcphost.config.jsonpos import loads
from mcphost.errors import ConfigurationError, MCPHostError

CONFIG_PATH = "/home/alice/projects/app/mcp.json"
SECRET = "sk-live-0123456789abcdef"
ENV = {"HOME": "/home/alice", "TOKEN": SECRET, "EMPTY": "", "REGION": "eu"}


def load(text: str, **kwargs: Any) -> HostConfig:
    kwargs.setdefault("path", CONFIG_PATH)
    kwargs.setdefault("environ", ENV)
    return parse_config(textwrap.dedent(text), **kwargs)


def error(text: str, **kwargs: Any) -> ConfigurationError:
    with pytest.raises(ConfigurationError) as info:
        load(text, **kwargs)
    err = info.value
    # Never a secret value, never the directories of the file.
    assert SECRET not in str(err)
    assert "/home/alice" not in str(err)
    return err


def one(text: str, name: str = "s", **kwargs: Any) -> ServerConfig:
    return load(text, **kwargs).servers[name]


def server_json(fields: Mapping[str, Any], top: str = "mcpServers") -> str:
    return json.dumps({top: {"s": dict(fields)}}, indent=2)


def fake_files(files: Mapping[str, str]) -> Callable[[str], str]:
    def read_text(path: str) -> str:
        try:
            return files[path]
        except KeyError:
            raise FileNotFoundError(path) from None

    return read_text


# ---------------------------------------------------------------------------------------
# Dialects
# ---------------------------------------------------------------------------------------

VSCODE = """\
{
  // VS Code .vscode/mcp.json
  "inputs": [
    {"type": "promptString", "id": "brave-key", "description": "Brave API key", "password": true}
  ],
  "servers": {
    "filesystem": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}"]
    },
    "brave": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@brave/brave-search-mcp-server"],
      "env": {"BRAVE_API_KEY": "${input:brave-key}"}
    },
    "remote": {
      "type": "http",
      "url": "https://mcp.example.com/mcp",
      "headers": {"Authorization": "Bearer ${env:TOKEN}"},
    },
    "legacy": {"type": "sse", "url": "http://localhost:8080/sse"},
  },
}
"""


def test_vscode_dialect() -> None:
    config = load(VSCODE, path="/home/alice/app/.vscode/mcp.json", inputs={"brave-key": "k"})
    assert list(config.servers) == ["filesystem", "brave", "remote", "legacy"]
    fs = config.servers["filesystem"]
    assert fs.type == "stdio"
    assert fs.command == "npx"
    # ${workspaceFolder} defaults to the folder above .vscode
    assert fs.args == ("-y", "@modelcontextprotocol/server-filesystem", "/home/alice/app")
    assert fs.line == 7
    assert config.servers["brave"].env == {"BRAVE_API_KEY": "k"}
    remote = config.servers["remote"]
    assert remote.type == "http"
    assert remote.url == "https://mcp.example.com/mcp"
    assert remote.headers == {"Authorization": f"Bearer {SECRET}"}
    assert config.servers["legacy"].type == "sse"
    assert config.inputs == (InputSpec(id="brave-key", description="Brave API key", password=True),)
    assert config.path == "/home/alice/app/.vscode/mcp.json"
    assert config.notes == ()


CLAUDE = """\
{
  "mcpServers": {
    "fs": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
      "env": {"DEBUG": "1"}
    },
    "web": {"url": "https://example.com/mcp"},
    "events": {"url": "https://example.com/v1/sse/"},
    "sock": {"url": "wss://example.com/ws"},
    "plain-ws": {"url": "ws://localhost:9000"}
  }
}
"""


def test_claude_dialect_infers_types() -> None:
    config = load(CLAUDE)
    kinds = {name: s.type for name, s in config.servers.items()}
    assert kinds == {
        "fs": "stdio",
        "web": "http",
        "events": "sse",
        "sock": "websocket",
        "plain-ws": "websocket",
    }
    fs = config.servers["fs"]
    assert fs.env == {"DEBUG": "1"}
    assert fs.timeout == DEFAULT_TIMEOUT == 30.0
    assert fs.enabled is True
    assert fs.tools == ToolFilter()
    assert fs.limits is None
    assert fs.line == 3


@pytest.mark.parametrize(
    ("given", "kind"),
    [
        ("stdio", "stdio"),
        ("http", "http"),
        ("streamable-http", "http"),
        ("streamableHttp", "http"),
        ("streamable_http", "http"),
        ("sse", "sse"),
        ("websocket", "websocket"),
        ("ws", "websocket"),
        ("HTTP", "http"),
    ],
)
def test_type_aliases(given: str, kind: str) -> None:
    fields: dict[str, Any] = {"type": given}
    if kind == "stdio":
        fields["command"] = "x"
    else:
        fields["url"] = "wss://h/x" if kind == "websocket" else "https://h/x"
    assert one(server_json(fields)).type == kind


def test_both_top_level_keys_are_merged_in_file_order() -> None:
    config = load('{"servers": {"a": {"command": "x"}}, "mcpServers": {"b": {"command": "y"}}}')
    assert list(config.servers) == ["a", "b"]


def test_same_server_in_both_dialects_is_an_error() -> None:
    err = error(
        """\
        {
          "servers": {
            "fs": {"command": "x"}
          },
          "mcpServers": {
            "fs": {"command": "y"}
          }
        }
        """
    )
    assert (
        str(err) == 'mcp.json:6: mcpServers.fs: server "fs" is also defined in "servers" (line 3)'
    )
    assert err.server == "fs"


def test_duplicate_server_name_in_one_object() -> None:
    err = error(
        """\
        {
          "mcpServers": {
            "fs": {"command": "a"},
            "other": {"command": "b"},
            "fs": {"command": "c"}
          }
        }
        """
    )
    assert str(err) == "mcp.json:5: mcpServers.fs: duplicate key (first defined on line 3)"


def test_duplicate_top_level_key() -> None:
    err = error('{\n "mcpServers": {},\n "mcpServers": {}\n}')
    assert str(err) == "mcp.json:3: mcpServers: duplicate key (first defined on line 2)"


def test_no_servers_key() -> None:
    err = error('{\n  "server": {}\n}')
    assert str(err) == (
        'mcp.json:1: no servers: expected a "servers" object (VS Code) or an "mcpServers" '
        "object (Claude Desktop, Cursor, Claude Code)"
    )


def test_empty_server_map_is_fine() -> None:
    assert load('{"mcpServers": {}}').servers == {}
    assert load('{"mcpServers": {}}').start_order() == []


def test_top_level_must_be_an_object() -> None:
    assert str(error("[1, 2]")) == "mcp.json:1: expected a JSON object at the top level, got array"


def test_servers_must_be_an_object() -> None:
    assert str(error('{\n"servers": []\n}')) == "mcp.json:2: servers: expected object, got array"


def test_unknown_top_level_keys_are_noted() -> None:
    config = load('{\n "mcpServers": {},\n "mcp.settings": 1,\n "severs": {}\n}')
    assert config.notes == (
        'mcp.json:3: ["mcp.settings"]: unknown top-level key ignored',
        'mcp.json:4: severs: unknown top-level key ignored (did you mean "servers"?)',
    )


def test_invalid_json_is_a_configuration_error() -> None:
    err = error('{\n  "mcpServers": {\n    "a": {"command": "x" "args": []}\n  }\n}')
    assert str(err) == "mcp.json:3:26: invalid JSON: expected ',' or '}'"
    assert err.line == 3
    assert err.path == CONFIG_PATH
    assert isinstance(err, MCPHostError)


def test_comments_and_trailing_commas() -> None:
    config = load(
        """\
        /* settings for the team */
        {
          "mcpServers": {
            // the file system
            "fs": {
              "command": "npx", /* runs node */
              "args": ["-y", "pkg",],
            },
          },
        }
        """
    )
    assert config.servers["fs"].args == ("-y", "pkg")
    assert config.servers["fs"].line == 5


# ---------------------------------------------------------------------------------------
# Names and fields
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["my.server", "1fs", "_fs", "fs server", "", "fs/x", "é"])
def test_invalid_server_names(name: str) -> None:
    err = error(json.dumps({"mcpServers": {name: {"command": "x"}}}))
    assert "invalid server name" in str(err)
    assert 'no dots: the host routes "server.tool" on the first dot' in str(err)
    assert err.server == name


def test_invalid_server_name_message() -> None:
    err = error('{\n"mcpServers": {\n  "fs.local": {"command": "x"}\n}}')
    assert str(err) == (
        'mcp.json:3: mcpServers["fs.local"]: invalid server name: a name starts '
        'with a letter and has only letters, digits, "_" and "-" (no dots: the host routes '
        '"server.tool" on the first dot)'
    )


@pytest.mark.parametrize("name", ["a", "fs", "Brave-Search", "x_1", "A-b_C-9"])
def test_valid_server_names(name: str) -> None:
    assert name in load(json.dumps({"servers": {name: {"command": "x"}}})).servers


def test_server_entry_must_be_an_object() -> None:
    assert str(error('{"mcpServers": {\n"fs": "npx"}}')) == (
        "mcp.json:2: mcpServers.fs: expected object, got string"
    )


def test_unknown_field_with_suggestion() -> None:
    err = error('{"mcpServers": {"fs": {\n  "comand": "npx"\n}}}')
    assert str(err) == 'mcp.json:2: mcpServers.fs.comand: unknown field (did you mean "command"?)'
    assert err.field == "mcpServers.fs.comand"
    assert err.line == 2
    assert err.server == "fs"


@pytest.mark.parametrize(
    ("field", "suggestion"),
    [
        ("request_timeout", "requestTimeout"),
        ("Command", "command"),
        ("env_file", "envFile"),
        ("header", "headers"),
        ("dependsOn", "dependencies"),
        ("xyzzy", None),
    ],
)
def test_unknown_field_suggestions(field: str, suggestion: str | None) -> None:
    err = error(server_json({"command": "x", field: 1}))
    if suggestion is None:
        assert str(err).endswith(f"mcpServers.s.{field}: unknown field")
    else:
        assert str(err).endswith(f'unknown field (did you mean "{suggestion}"?)')


def test_foreign_fields_are_accepted_and_noted() -> None:
    text = server_json(
        {
            "command": "x",
            "description": "d",
            "autoApprove": ["a"],
            "alwaysAllow": [],
            "gallery": True,
            "version": "1",
            "dev": {"watch": "src/**"},
            "sandbox": {},
        }
    )
    config = load(text)
    assert config.servers["s"].command == "x"
    assert len(config.notes) == 7
    assert config.notes[0] == (
        "mcp.json:5: mcpServers.s.description: ignored (a field of another MCP client)"
    )


def test_disabled_maps_to_enabled_false() -> None:
    assert one(server_json({"command": "x", "disabled": True})).enabled is False
    assert one(server_json({"command": "x", "disabled": False})).enabled is True
    assert one(server_json({"command": "x", "enabled": False})).enabled is False
    err = error(server_json({"command": "x", "enabled": True, "disabled": True}))
    assert str(err).endswith('mcpServers.s.disabled: contradicts "enabled"')
    err = error(server_json({"command": "x", "enabled": "no"}))
    assert str(err).endswith("mcpServers.s.enabled: expected boolean, got string")


def test_transport_type_is_used_when_type_is_absent() -> None:
    assert one(server_json({"url": "https://h/x", "transportType": "sse"})).type == "sse"
    assert one(server_json({"url": "https://h/x", "transport": "streamable-http"})).type == "http"
    # "type" wins over Cline's transportType
    assert one(
        server_json({"type": "http", "url": "https://h/x", "transportType": "sse"})
    ).type == ("http")
    err = error(server_json({"type": "http", "url": "https://h/x", "transport": "sse"}))
    assert str(err).endswith('mcpServers.s.transport: contradicts "type" (http)')


def test_unknown_type() -> None:
    err = error('{"servers": {"s": {\n "type": "grpc",\n "url": "https://x"}}}')
    assert str(err) == (
        'mcp.json:2: servers.s.type: expected stdio, http, sse or websocket, got "grpc"'
    )


def test_type_must_be_a_string() -> None:
    assert str(error(server_json({"type": 1, "command": "x"}))).endswith(
        "mcpServers.s.type: expected string, got number"
    )


def test_missing_command() -> None:
    err = error('{"servers": {\n  "s": {"type": "stdio", "args": []}\n}}')
    assert str(err) == 'mcp.json:2: servers.s: a stdio server needs "command"'


def test_missing_url() -> None:
    err = error('{"servers": {\n  "s": {"type": "sse"}\n}}')
    assert str(err) == 'mcp.json:2: servers.s: a "sse" server needs "url"'


@pytest.mark.parametrize("command", ["", "   "])
def test_empty_command(command: str) -> None:
    err = error(server_json({"command": command}))
    assert str(err).endswith("mcpServers.s.command: must not be empty")


def test_neither_command_nor_url() -> None:
    err = error('{"mcpServers": {\n"s": {"args": ["x"]}}}')
    assert str(err) == (
        'mcp.json:2: mcpServers.s: needs "command" (a stdio server) or "url" (an http, sse or '
        "websocket server)"
    )


def test_command_and_url_without_type() -> None:
    err = error(server_json({"command": "x", "url": "https://h"}))
    assert str(err).endswith(
        'has both "command" and "url": set "type" to say which transport to use'
    )


def test_stdio_with_url_is_an_error() -> None:
    err = error(server_json({"type": "stdio", "command": "x", "url": "https://h"}))
    assert str(err) == (
        "mcp.json:6: mcpServers.s.url: only applies to http, sse and websocket servers"
    )


@pytest.mark.parametrize("field", ["command", "args", "env", "envFile", "cwd", "limits"])
def test_remote_with_stdio_fields_is_an_error(field: str) -> None:
    err = error(server_json({"type": "http", "url": "https://h", field: []}))
    assert str(err).endswith(
        f'mcpServers.s.{field}: only applies to stdio servers (this one is "http")'
    )


@pytest.mark.parametrize(
    ("kind", "url", "expected"),
    [
        ("http", "ftp://h/x", "expected a http:// or https:// URL for a http server"),
        ("http", "wss://h/x", "expected a http:// or https:// URL for a http server"),
        ("sse", "h/x", "expected a http:// or https:// URL for a sse server"),
        ("websocket", "https://h/x", "expected a ws:// or wss:// URL for a websocket server"),
        ("http", "https://", "expected a http:// or https:// URL for a http server"),
    ],
)
def test_url_scheme_must_match_type(kind: str, url: str, expected: str) -> None:
    err = error(server_json({"type": kind, "url": url}))
    assert str(err).endswith(f"mcpServers.s.url: {expected}")


# ---------------------------------------------------------------------------------------
# Field types
# ---------------------------------------------------------------------------------------


def test_args_item_of_wrong_type_names_index_and_line() -> None:
    err = error(
        """\
        {
          "mcpServers": {
            "brave-search": {
              "command": "npx",
              "args": [
                "-y",
                8080
              ]
            }
          }
        }
        """
    )
    assert str(err) == "mcp.json:7: mcpServers.brave-search.args[1]: expected string, got number"
    assert err.line == 7
    assert err.field == "mcpServers.brave-search.args[1]"
    assert err.server == "brave-search"
    assert err.path == CONFIG_PATH


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"command": "x", "args": "-y pkg"}, "args: expected array of strings, got string"),
        ({"command": "x", "args": [None]}, "args[0]: expected string, got null"),
        ({"command": ["npx", 1]}, "command: expected string, got array"),
        ({"command": "x", "env": []}, "env: expected object, got array"),
        (
            {"command": "x", "env": {"P": 8080}},
            "env.P: expected string, got number (write it in quotes)",
        ),
        (
            {"command": "x", "env": {"P": True}},
            "env.P: expected string, got boolean (write it in quotes)",
        ),
        ({"command": "x", "env": {"P": None}}, "env.P: expected string, got null"),
        ({"command": "x", "env": {"A=B": "1"}}, 'env["A=B"]: invalid environment variable name'),
        ({"command": "x", "cwd": 1}, "cwd: expected string, got number"),
        ({"command": "x", "envFile": 1}, "envFile: expected string, got number"),
        (
            {"url": "https://h", "headers": {"X": 1}},
            "headers.X: expected string, got number (write it in quotes)",
        ),
        (
            {"url": "https://h", "headers": {"Bad Name": "v"}},
            'headers["Bad Name"]: invalid HTTP header name',
        ),
        ({"url": 5}, "url: expected string, got number"),
        (
            {"command": "x", "timeout": "30"},
            "timeout: expected a number of seconds greater than 0, got string",
        ),
        (
            {"command": "x", "timeout": True},
            "timeout: expected a number of seconds greater than 0, got boolean",
        ),
        ({"command": "x", "timeout": 0}, "timeout: expected a number of seconds greater than 0"),
        ({"command": "x", "timeout": -1}, "timeout: expected a number of seconds greater than 0"),
        (
            {"command": "x", "requestTimeout": 0},
            "requestTimeout: expected a number of seconds greater than 0, or null",
        ),
        (
            {"command": "x", "shutdownTimeout": -1},
            "shutdownTimeout: expected a number of seconds (0 or more), or null",
        ),
        (
            {"command": "x", "dependencies": "a"},
            "dependencies: expected array of strings, got string",
        ),
        ({"command": "x", "priority": 1.5}, "priority: expected integer, got number"),
        ({"command": "x", "priority": True}, "priority: expected integer, got boolean"),
        ({"command": "x", "domains": [""]}, "domains[0]: must not be empty"),
        ({"command": "x", "domains": "web"}, "domains: expected array of strings, got string"),
        ({"command": "x", "roots": [1]}, "roots[0]: expected string, got number"),
        ({"command": "x", "tools": []}, "tools: expected object or null, got array"),
        (
            {"command": "x", "tools": {"allow": "read_*"}},
            "tools.allow: expected array of strings, got string",
        ),
        (
            {"command": "x", "tools": {"alow": []}},
            'tools.alow: unknown field (did you mean "allow"?)',
        ),
        ({"command": "x", "limits": 5}, "limits: expected object or null, got number"),
    ],
)
def test_bad_field_types(fields: dict[str, Any], message: str) -> None:
    err = error(server_json(fields))
    assert str(err).endswith(f"mcpServers.s.{message}")
    assert str(err).startswith("mcp.json:")
    assert err.line is not None


def test_timeouts() -> None:
    s = one(
        server_json({"command": "x", "timeout": 120, "requestTimeout": 2.5, "shutdownTimeout": 0})
    )
    assert (s.timeout, s.request_timeout, s.shutdown_timeout) == (120.0, 2.5, 0.0)
    assert isinstance(s.timeout, float)
    s = one(server_json({"command": "x", "requestTimeout": None}))
    assert s.request_timeout is None
    assert s.shutdown_timeout is None


def test_timeout_that_looks_like_milliseconds_is_noted() -> None:
    config = load(server_json({"command": "x", "timeout": 60000}))
    assert config.servers["s"].timeout == 60000.0
    assert config.notes == (
        "mcp.json:5: mcpServers.s.timeout: is in seconds; this value looks like milliseconds",
    )


def test_command_with_spaces_and_no_args_is_noted() -> None:
    config = load(server_json({"command": "npx -y @scope/pkg"}))
    assert config.notes[0].endswith(
        'mcpServers.s.command: contains spaces and there are no "args": commands run without '
        'a shell, so put the arguments in "args"'
    )


def test_priority_domains_roots() -> None:
    s = one(
        server_json(
            {
                "command": "x",
                "priority": -3,
                "domains": ["web", "search"],
                "roots": [
                    "file:///data",
                    "/srv/x y",
                    "sub/dir",
                    "${workspaceFolder}/docs",
                    "~/notes",
                ],
            }
        )
    )
    assert s.priority == -3
    assert s.domains == ("web", "search")
    assert s.roots == (
        "file:///data",
        "file:///srv/x%20y",
        "file:///home/alice/projects/app/sub/dir",
        "file:///home/alice/projects/app/docs",
        "file:///home/alice/notes",
    )


def test_roots_must_be_file_uris() -> None:
    err = error(server_json({"command": "x", "roots": ["https://example.com/"]}))
    assert str(err).endswith("mcpServers.s.roots[0]: roots must be file:// URIs or paths")


def test_cwd_is_resolved_against_the_config_directory() -> None:
    assert (
        one(server_json({"command": "x", "cwd": "tools"})).cwd == "/home/alice/projects/app/tools"
    )
    assert one(server_json({"command": "x", "cwd": "/abs"})).cwd == "/abs"
    assert one(server_json({"command": "x", "cwd": "~/w"})).cwd == "/home/alice/w"
    assert one(server_json({"command": "x", "cwd": "${userHome}/w"})).cwd == "/home/alice/w"
    assert one(server_json({"command": "x", "cwd": "C:\\w"})).cwd == "C:\\w"
    # Without a config path, a relative cwd stays relative.
    assert one(server_json({"command": "x", "cwd": "tools"}), path=None).cwd == "tools"


def test_headers() -> None:
    s = one(server_json({"url": "https://h/mcp", "headers": {"X-Api-Key": "${TOKEN}"}}))
    assert s.headers == {"X-Api-Key": SECRET}
    err = error(server_json({"url": "https://h/mcp", "headers": {"X": "a\r\nInjected: 1"}}))
    assert str(err).endswith("headers.X: header value contains a line break or NUL character")


# ---------------------------------------------------------------------------------------
# Expansion
# ---------------------------------------------------------------------------------------


def expand(value: str, **kwargs: Any) -> str:
    return one(server_json({"command": "x", "args": [value]}), **kwargs).args[0]


@pytest.mark.parametrize(
    ("value", "result"),
    [
        ("${REGION}", "eu"),
        ("${env:REGION}", "eu"),
        ("x-${REGION}-y-${REGION}", "x-eu-y-eu"),
        ("${MISSING:-fallback}", "fallback"),
        ("${MISSING:-}", ""),
        ("${REGION:-fallback}", "eu"),
        ("${EMPTY:-fallback}", "fallback"),  # ":-" also applies to an empty value
        ("${EMPTY}", ""),
        ("${env:MISSING:-d}", "d"),
        ("${MISSING:-a b:c/d}", "a b:c/d"),
        ("$REGION", "$REGION"),
        ("$$", "$$"),
        ("$$REGION", "$$REGION"),
        ("$${REGION}", "${REGION}"),
        ("cost: $5", "cost: $5"),
        ("${workspaceFolder}", "/home/alice/projects/app"),
        ("${workspaceFolderBasename}", "app"),
        ("${userHome}/x", "/home/alice/x"),
        ("a${pathSeparator}b", f"a{os.sep}b"),
        ("no references", "no references"),
        ("{REGION}", "{REGION}"),
    ],
)
def test_expansion(value: str, result: str) -> None:
    assert expand(value) == result


def test_expanded_values_are_not_expanded_again() -> None:
    assert expand("${NESTED}", environ={"NESTED": "${REGION}"}) == "${REGION}"


def test_explicit_workspace_folder_and_user_home() -> None:
    assert expand("${workspaceFolder}", workspace_folder="/ws") == "/ws"
    assert expand("${userHome}", user_home="/u") == "/u"
    assert expand("${userHome}", environ={"USERPROFILE": "C:\\Users\\a"}) == "C:\\Users\\a"


def test_workspace_folder_for_vscode_and_cursor_directories() -> None:
    text = server_json({"command": "x", "args": ["${workspaceFolder}"]})
    assert one(text, path="/w/.vscode/mcp.json").args == ("/w",)
    assert one(text, path="/w/.cursor/mcp.json").args == ("/w",)
    assert one(text, path="/w/conf/mcp.json").args == ("/w/conf",)
    assert one(text, path="mcp.json").args == (".",)


def test_workspace_folder_unknown_without_path() -> None:
    err = error(server_json({"command": "x", "args": ["${workspaceFolder}"]}), path=None)
    assert str(err) == (
        "<config>:6: mcpServers.s.args[0]: ${workspaceFolder} is not available "
        "(no workspace folder was given)"
    )


def test_user_home_unknown() -> None:
    err = error(server_json({"command": "x", "args": ["${userHome}"]}), environ={})
    assert str(err).endswith("${userHome} is not available (no home directory was given)")


def test_unset_variable_names_field_and_variable() -> None:
    err = error(
        """\
        {
          "servers": {
            "brave": {
              "command": "npx",
              "env": {
                "BRAVE_API_KEY": "${BRAVE_API_KEY}"
              }
            }
          }
        }
        """
    )
    assert str(err) == (
        "mcp.json:6: servers.brave.env.BRAVE_API_KEY: environment variable BRAVE_API_KEY is "
        "not set (use ${BRAVE_API_KEY:-default} for a default)"
    )
    assert err.field == "servers.brave.env.BRAVE_API_KEY"
    assert err.line == 6
    assert err.server == "brave"


def test_unset_env_colon_variable() -> None:
    err = error(server_json({"url": "https://h/${env:HOSTLESS}"}))
    assert str(err).endswith(
        "mcpServers.s.url: environment variable HOSTLESS is not set "
        "(use ${env:HOSTLESS:-default} for a default)"
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "${A:-${B}}",
            'malformed "${" reference (unterminated or nested; write "$${" for a literal "${")',
        ),
        ("${UNTERMINATED", 'malformed "${" reference'),
        ("${command:workbench.action}", 'unsupported reference "${command:workbench.action}"'),
        ("${config:editor.tabSize}", 'unsupported reference "${config:editor.tabSize}"'),
        ("${1BAD}", 'unsupported reference "${1BAD}"'),
        ("${}", 'unsupported reference "${}"'),
        ("${env:}", 'unsupported reference "${env:}"'),
        ("${input:}", 'empty input id in "${input:}"'),
    ],
)
def test_malformed_references(value: str, message: str) -> None:
    err = error(server_json({"command": "x", "args": [value]}))
    assert f"mcpServers.s.args[0]: {message}" in str(err)


@pytest.mark.parametrize("field", ["command", "cwd", "envFile"])
def test_expansion_in_path_fields(field: str) -> None:
    fields: dict[str, Any] = {"command": "x", field: "${MISSING_VAR}"}
    err = error(server_json(fields), read_text=fake_files({}))
    assert str(err).endswith(
        f"mcpServers.s.{field}: environment variable MISSING_VAR is not set "
        "(use ${MISSING_VAR:-default} for a default)"
    )


def test_every_expandable_field_is_expanded() -> None:
    s = one(
        server_json(
            {
                "command": "${REGION}-cmd",
                "args": ["${REGION}"],
                "env": {"R": "${REGION}"},
                "cwd": "/x/${REGION}",
            }
        )
    )
    assert (s.command, s.args, s.env["R"], s.cwd) == ("eu-cmd", ("eu",), "eu", "/x/eu")
    r = one(server_json({"url": "https://${REGION}.h/mcp", "headers": {"H": "${REGION}"}}))
    assert (r.url, r.headers["H"]) == ("https://eu.h/mcp", "eu")


def test_websocket_url_from_variable_is_inferred_after_expansion_check() -> None:
    s = one(server_json({"type": "websocket", "url": "${WS_URL}"}), environ={"WS_URL": "wss://h"})
    assert s.url == "wss://h"


# -- secrets never in messages ------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"url": "${TOKEN}"},
        {"type": "websocket", "url": "https://h/${TOKEN}"},
        {"url": "https://h", "headers": {"A": "${TOKEN}\n"}},
        {"command": "x", "env": {"K": "${TOKEN}", "BAD": "${UNSET_${TOKEN}}"}},
        {"command": "x", "args": ["${TOKEN}", 3]},
        {"command": "x", "envFile": ".env"},
    ],
)
def test_secret_values_never_appear_in_messages(fields: dict[str, Any]) -> None:
    read_text = fake_files({"/home/alice/projects/app/.env": f"TOKEN {SECRET}\n"})
    err = error(server_json(fields), environ={**ENV, "CR": "\r"}, read_text=read_text)
    assert SECRET not in repr(err.args)


def test_server_config_repr_hides_env_and_header_values() -> None:
    s = one(server_json({"command": "x", "env": {"TOKEN": "${TOKEN}"}}))
    assert SECRET not in repr(s)
    assert "'TOKEN': '***'" in repr(s)
    r = one(server_json({"url": "https://h", "headers": {"Authorization": "Bearer ${TOKEN}"}}))
    assert SECRET not in repr(r)
    assert r.headers["Authorization"] == f"Bearer {SECRET}"


def test_messages_never_carry_absolute_paths() -> None:
    err = error(server_json({"command": 1}), path="/very/private/place/mcp.json")
    assert str(err) == "mcp.json:4: mcpServers.s.command: expected string, got number"
    assert err.path == "/very/private/place/mcp.json"


# -- inputs --------------------------------------------------------------------------------

INPUTS = """\
{
  "inputs": [
    {"type": "promptString", "id": "api-key", "description": "API key", "password": true},
    {"type": "promptString", "id": "region", "description": "Region", "default": "eu"},
    {"type": "pickString", "id": "mode", "options": ["fast", {"label": "Slow", "value": "slow"}]},
    {"type": "promptString", "id": "unused"}
  ],
  "servers": {
    "a": {
      "command": "x",
      "args": ["--mode", "${input:mode}", "--region=${input:region}"],
      "env": {
        "KEY": "${input:api-key}"
      }
    },
    "b": {"url": "https://h/${input:path}", "headers": {"K": "${input:api-key}"}},
    "off": {"command": "${input:never-asked}", "enabled": false}
  }
}
"""


def test_required_inputs() -> None:
    specs = required_inputs(INPUTS)
    assert [s.id for s in specs] == ["mode", "region", "api-key", "path"]
    assert specs[0] == InputSpec(id="mode", type="pickString", options=("fast", "slow"))
    assert specs[1] == InputSpec(id="region", description="Region", default="eu")
    assert specs[2] == InputSpec(id="api-key", description="API key", password=True)
    # Referenced but not declared: treated as a secret.
    assert specs[3] == InputSpec(id="path", password=True)


def test_required_inputs_from_data_and_without_inputs() -> None:
    data = json.loads(server_json({"command": "${input:tok}", "env": {"A": "${UNSET}"}}))
    assert required_inputs(data) == [InputSpec(id="tok", password=True)]
    assert required_inputs('{"mcpServers": {"a": {"command": "x"}}}') == []


def test_required_inputs_reports_invalid_json() -> None:
    with pytest.raises(ConfigurationError) as info:
        required_inputs("{", path="/x/mcp.json")
    assert str(info.value).startswith("mcp.json:1:2: invalid JSON")


def test_inputs_are_substituted() -> None:
    config = load(INPUTS, inputs={"api-key": SECRET, "mode": "fast", "path": "mcp"})
    a = config.servers["a"]
    assert a.args == ("--mode", "fast", "--region=eu")  # region: the declared default
    assert a.env == {"KEY": SECRET}
    assert config.servers["b"].url == "https://h/mcp"
    assert config.servers["off"].command == "${input:never-asked}"
    assert [spec.id for spec in config.inputs] == ["api-key", "region", "mode", "unused"]


def test_missing_input_names_field_and_id() -> None:
    err = error(INPUTS, inputs={"mode": "fast", "path": "p"})
    assert str(err) == (
        'mcp.json:13: servers.a.env.KEY: input "api-key" has no value: the application must '
        "supply it (see mcphost.config.required_inputs)"
    )
    assert err.server == "a"


def test_missing_undeclared_input() -> None:
    err = error(INPUTS, inputs={"mode": "fast", "api-key": "k"})
    assert str(err) == (
        'mcp.json:16: servers.b.url: input "path" has no value (it is not declared in "inputs"): '
        "the application must supply it (see mcphost.config.required_inputs)"
    )


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ("{}", "mcp.json:2: inputs: expected array of objects, got object"),
        ("[1]", "mcp.json:2: inputs[0]: expected object, got number"),
        ('[{"type": "promptString"}]', 'mcp.json:2: inputs[0]: missing "id"'),
        ('[{"id": ""}]', "mcp.json:2: inputs[0].id: expected a non-empty string"),
        ('[{"id": "a"}, {"id": "a"}]', 'mcp.json:2: inputs[1].id: input "a" is declared twice'),
        (
            '[{"id": "a", "type": "command"}]',
            'mcp.json:2: inputs[0].type: expected promptString or pickString, got "command"',
        ),
        (
            '[{"id": "a", "password": "yes"}]',
            "mcp.json:2: inputs[0].password: expected boolean, got string",
        ),
        (
            '[{"id": "a", "descripton": "x"}]',
            'mcp.json:2: inputs[0].descripton: unknown field (did you mean "description"?)',
        ),
        (
            '[{"id": "a", "options": [1]}]',
            'mcp.json:2: inputs[0].options[0]: expected string or {"value": string}, got number',
        ),
    ],
)
def test_bad_inputs(inputs: str, message: str) -> None:
    assert str(error('{"servers": {},\n"inputs": ' + inputs + "}")) == message


# -- envFile -----------------------------------------------------------------------------

ENV_FILE = """\
# comment
export FROM_FILE=one
QUOTED="two words # not a comment"
SINGLE='$literal \\n'
ESCAPES="a\\nb\\"c"
INLINE=value # trailing comment
EMPTY=
SPACED = padded
OVERRIDDEN=file
"""


def test_env_file() -> None:
    read_text = fake_files({"/home/alice/projects/app/conf/.env": ENV_FILE})
    s = one(
        server_json({"command": "x", "envFile": "conf/.env", "env": {"OVERRIDDEN": "env"}}),
        read_text=read_text,
    )
    assert dict(s.env) == {
        "FROM_FILE": "one",
        "QUOTED": "two words # not a comment",
        "SINGLE": "$literal \\n",
        "ESCAPES": 'a\nb"c',
        "INLINE": "value",
        "EMPTY": "",
        "SPACED": "padded",
        "OVERRIDDEN": "env",
    }


def test_env_file_path_is_expanded() -> None:
    read_text = fake_files({"/home/alice/projects/app/.env": "A=1", "/home/alice/.env": "B=2"})
    s = one(
        server_json({"command": "x", "envFile": "${workspaceFolder}/.env"}), read_text=read_text
    )
    assert s.env == {"A": "1"}
    s = one(server_json({"command": "x", "envFile": "~/.env"}), read_text=read_text)
    assert s.env == {"B": "2"}


def test_env_file_bad_line_does_not_quote_it() -> None:
    read_text = fake_files({"/home/alice/projects/app/.env": f"OK=1\n\n{SECRET}\n"})
    err = error(server_json({"command": "x", "envFile": ".env"}), read_text=read_text)
    assert str(err) == "mcp.json:5: mcpServers.s.envFile: .env:3: expected KEY=VALUE"


def test_env_file_unterminated_quote() -> None:
    read_text = fake_files({"/home/alice/projects/app/.env": 'A="open'})
    err = error(server_json({"command": "x", "envFile": ".env"}), read_text=read_text)
    assert str(err).endswith("envFile: .env:1: unterminated or malformed quoted value")


def test_env_file_missing() -> None:
    err = error(
        server_json({"command": "x", "envFile": "/etc/secret/app.env"}), read_text=fake_files({})
    )
    assert str(err) == "mcp.json:5: mcpServers.s.envFile: cannot read app.env (FileNotFoundError)"


def test_env_file_without_read_text() -> None:
    err = error(server_json({"command": "x", "envFile": ".env"}))
    assert str(err).endswith("envFile: cannot read the envFile: no read_text function was given")


def test_disabled_server_is_not_expanded_strictly() -> None:
    s = one(
        server_json(
            {
                "command": "x",
                "enabled": False,
                "envFile": "missing.env",
                "env": {"K": "${NOT_SET}", "I": "${input:nope}"},
                "args": ["${workspaceFolder}"],
            }
        ),
        path=None,
    )
    assert s.enabled is False
    assert s.env == {"K": "${NOT_SET}", "I": "${input:nope}"}
    assert s.args == ("${workspaceFolder}",)
    # Structure is still checked.
    err = error(server_json({"command": "x", "enabled": False, "args": [1]}))
    assert str(err).endswith("args[0]: expected string, got number")


# ---------------------------------------------------------------------------------------
# Dependencies and start order
# ---------------------------------------------------------------------------------------


def deps(graph: Mapping[str, list[str]], disabled: tuple[str, ...] = ()) -> str:
    servers = {
        name: {
            "command": "x",
            "dependencies": d,
            **({"enabled": False} if name in disabled else {}),
        }
        for name, d in graph.items()
    }
    return json.dumps({"mcpServers": servers}, indent=2)


def test_start_order_layers() -> None:
    config = load(
        deps({"app": ["db", "cache"], "db": [], "cache": ["db"], "web": [], "ui": ["app", "web"]})
    )
    assert config.start_order() == [["db", "web"], ["cache"], ["app"], ["ui"]]
    assert config.servers["app"].dependencies == ("db", "cache")


def test_start_order_skips_disabled_servers() -> None:
    config = load(deps({"a": [], "b": ["c"], "c": []}, disabled=("b",)))
    assert config.start_order() == [["a", "c"]]


def test_duplicate_dependencies_are_collapsed() -> None:
    assert load(deps({"a": ["b", "b"], "b": []})).servers["a"].dependencies == ("b",)


def test_unknown_dependency() -> None:
    err = error(deps({"app": ["databse"], "database": []}))
    assert str(err) == (
        'mcp.json:6: mcpServers.app.dependencies[0]: unknown server "databse" '
        '(did you mean "database"?)'
    )


def test_self_dependency() -> None:
    err = error(deps({"a": ["a"]}))
    assert str(err) == "mcp.json:6: mcpServers.a.dependencies[0]: a server cannot depend on itself"


def test_dependency_cycle_names_the_cycle() -> None:
    err = error(deps({"a": ["b"], "b": ["c"], "c": ["a"], "d": []}))
    assert str(err).endswith("mcpServers.c.dependencies[0]: dependency cycle: a -> b -> c -> a")
    assert err.server == "c"
    assert err.line is not None


def test_cycle_not_through_the_first_server() -> None:
    err = error(deps({"a": ["b"], "b": ["c"], "c": ["b"]}))
    assert str(err).endswith("dependency cycle: b -> c -> b")


def test_dependency_on_a_disabled_server() -> None:
    err = error(deps({"a": ["b"], "b": []}, disabled=("b",)))
    assert str(err).endswith('mcpServers.a.dependencies[0]: depends on "b", which is disabled')


def test_start_order_of_a_hand_built_cycle() -> None:
    config = HostConfig(
        servers={
            "a": ServerConfig(name="a", type="stdio", command="x", dependencies=("b",)),
            "b": ServerConfig(name="b", type="stdio", command="x", dependencies=("a",)),
        }
    )
    with pytest.raises(
        ConfigurationError,
        match="a dependency cycle, or a dependency that is unknown or disabled.: a, b",
    ):
        config.start_order()


# ---------------------------------------------------------------------------------------
# Limits and tool filters
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("memory", "size"),
    [
        (1048576, 1048576),
        ("512M", 512 * 1024**2),
        ("512m", 512 * 1024**2),
        ("512MiB", 512 * 1024**2),
        ("512MB", 512 * 1024**2),
        ("2G", 2 * 1024**3),
        ("1.5G", 3 * 1024**3 // 2),
        ("64K", 65536),
        ("1T", 1024**4),
        ("100", 100),
        (" 2 g ", 2 * 1024**3),
    ],
)
def test_parse_memory(memory: int | str, size: int) -> None:
    assert parse_memory(memory) == size


def test_limits() -> None:
    s = one(server_json({"command": "x", "limits": {"memory": "512M", "cpuSeconds": 60}}))
    assert s.limits == Limits(memory_bytes=512 * 1024**2, cpu_seconds=60)
    assert one(server_json({"command": "x", "limits": {"memory": 1000}})).limits == Limits(
        1000, None
    )
    assert one(server_json({"command": "x", "limits": {}})).limits is None
    assert one(server_json({"command": "x", "limits": None})).limits is None


MEMORY_RULE = (
    'expected a size greater than 0: bytes (536870912) or a string like "512M" or "2G" '
    "(units K, M, G, T)"
)


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"memory": "lots"}, f"limits.memory: {MEMORY_RULE}"),
        ({"memory": "12X"}, f"limits.memory: {MEMORY_RULE}"),
        ({"memory": 0}, f"limits.memory: {MEMORY_RULE}"),
        ({"memory": "0M"}, "limits.memory: must be greater than 0"),  # the size, after parsing
        ({"memory": 1.5}, f"limits.memory: {MEMORY_RULE}, got number"),
        ({"memory": True}, f"limits.memory: {MEMORY_RULE}, got boolean"),
        ({"cpuSeconds": 0}, "limits.cpuSeconds: must be greater than 0"),
        ({"cpuSeconds": "60"}, "limits.cpuSeconds: expected integer or null, got string"),
        ({"cpu": 1}, 'limits.cpu: unknown field (did you mean "cpuSeconds"?)'),
    ],
)
def test_bad_limits(limits: dict[str, Any], message: str) -> None:
    assert str(error(server_json({"command": "x", "limits": limits}))).endswith(
        f"mcpServers.s.{message}"
    )


def test_tool_filter_from_config() -> None:
    s = one(
        server_json(
            {"command": "x", "tools": {"allow": ["read_*", "list"], "deny": ["read_secret*"]}}
        )
    )
    assert s.tools == ToolFilter(allow=("read_*", "list"), deny=("read_secret*",))
    assert s.tools.permits("read_file")
    assert s.tools.permits("list")
    assert not s.tools.permits("read_secret_key")
    assert not s.tools.permits("write_file")
    assert not s.tools.permits("listing")


def test_tool_filter_semantics() -> None:
    everything = ToolFilter()
    assert everything.permits("anything")
    deny_only = ToolFilter(deny=("delete_*", "drop?"))
    assert not deny_only.permits("delete_file")
    assert not deny_only.permits("drops")
    assert deny_only.permits("drop")
    assert deny_only.permits("read")
    case = ToolFilter(allow=("Read*",))
    assert case.permits("ReadFile")
    assert not case.permits("readfile")  # case-sensitive on every platform
    dotted = ToolFilter(allow=("ns.[ab]*",))
    assert dotted.permits("ns.alpha")
    assert not dotted.permits("nsxalpha")
    assert not dotted.permits("ns.cat")


# ---------------------------------------------------------------------------------------
# Values and data
# ---------------------------------------------------------------------------------------


def test_configs_are_frozen_and_hashable() -> None:
    config = load(VSCODE, inputs={"brave-key": "k"})
    s = config.servers["brave"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.command = "y"  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.env["X"] = "1"  # type: ignore[index]
    with pytest.raises(TypeError):
        config.servers["x"] = s  # type: ignore[index]
    assert hash(s) == hash(dataclasses.replace(s, line=99))
    assert s == dataclasses.replace(s, line=99)
    assert hash(config) == hash(load(VSCODE, inputs={"brave-key": "k"}))
    assert s != dataclasses.replace(s, env={"BRAVE_API_KEY": "other"})


def test_server_config_built_in_code_gets_immutable_mappings() -> None:
    env = {"A": "1"}
    s = ServerConfig(name="a", type="stdio", command="x", env=env)
    env["A"] = "2"
    assert s.env == {"A": "1"}
    assert hash(s) == hash(ServerConfig(name="a", type="stdio", command="x", env={"A": "1"}))


def test_config_from_data() -> None:
    config = config_from_data(
        {"mcpServers": {"fs": {"command": "npx", "args": ("-y", "${REGION}")}}}, environ=ENV
    )
    s = config.servers["fs"]
    assert s.args == ("-y", "eu")
    assert s.line is None
    assert config.path is None


def test_config_from_data_messages_have_no_line() -> None:
    with pytest.raises(ConfigurationError) as info:
        config_from_data({"mcpServers": {"fs": {"command": "x", "args": ["a", 2]}}}, environ={})
    assert str(info.value) == "mcpServers.fs.args[1]: expected string, got number"
    assert info.value.line is None
    with pytest.raises(ConfigurationError) as info:
        config_from_data(
            {"mcpServers": {"fs": {"command": "x", "args": [2]}}}, environ={}, path="/a/mcp.json"
        )
    assert str(info.value) == "mcp.json: mcpServers.fs.args[0]: expected string, got number"


def test_config_file_of_five_megabytes() -> None:
    servers = {
        f"server{i}": {
            "command": "npx",
            "args": ["-y", f"@scope/package-{i}", "--root", "${workspaceFolder}"],
            "env": {"API_KEY": "${TOKEN}", "PADDING": "p" * 60},
            "timeout": 45,
            "tools": {"deny": ["delete_*"]},
        }
        for i in range(16_000)
    }
    text = json.dumps({"mcpServers": servers}, indent=2)
    assert len(text) > 5_000_000
    config = parse_config(text, path=CONFIG_PATH, environ=ENV)
    assert len(config.servers) == 16_000
    last = config.servers["server15999"]
    assert last.env["API_KEY"] == SECRET
    assert last.args[-1] == "/home/alice/projects/app"


def test_deeply_nested_config_gives_a_clear_error() -> None:
    text = '{"mcpServers": {"a": {"command": "x", "description": ' + "[" * 5000 + "]" * 5000 + "}}}"
    err = error(text)
    assert "invalid JSON: nesting deeper than 256 levels is not accepted" in str(err)


# ---------------------------------------------------------------------------------------
# The JSON Schema (schemas/mcp.json.schema.json)
# ---------------------------------------------------------------------------------------

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "schemas" / "mcp.json.schema.json"

VALID_CONFIGS = [
    VSCODE,
    CLAUDE,
    INPUTS,
    server_json({"command": "x", "env": {"A": "1"}, "envFile": ".env", "cwd": "w"}),
    server_json(
        {
            "type": "stdio",
            "command": "x",
            "args": ["a"],
            "timeout": 10,
            "requestTimeout": 5.5,
            "shutdownTimeout": 0,
            "dependencies": [],
            "enabled": True,
            "limits": {"memory": "512M", "cpuSeconds": 10},
            "tools": {"allow": ["a*"], "deny": ["ab"]},
            "priority": 2,
            "domains": ["x"],
            "roots": ["file:///x"],
        }
    ),
    server_json({"url": "https://h/mcp", "headers": {"A": "b"}, "disabled": True}),
    server_json({"type": "websocket", "url": "wss://h/ws"}),
    server_json({"type": "streamable-http", "url": "${BASE_URL}"}, top="servers"),
    '{"servers": {}, "mcpServers": {}, "other": {"anything": 1}}',
    server_json({"type": "HTTP", "url": "https://h/mcp"}),
    server_json({"type": "StreamableHttp", "url": "https://h/mcp"}),
    server_json({"transportType": "sse", "url": "https://h/x"}),
    server_json({"transport": "stdio", "command": "x"}),
    server_json({"command": "x", "limits": {"memory": None, "cpuSeconds": None}, "tools": None}),
    server_json({"command": "x", "requestTimeout": None, "shutdownTimeout": None}),
]

INVALID_CONFIGS = [
    "[]",
    '{"inputs": []}',
    '{"mcpServers": {"a.b": {"command": "x"}}}',
    server_json({"comand": "x"}),
    server_json({"command": "x", "args": ["a", 1]}),
    server_json({"command": "x", "env": {"P": 1}}),
    server_json({"type": "grpc", "url": "https://h"}),
    server_json({"type": "stdio", "url": "https://h"}),
    server_json({"type": "http", "command": "x", "url": "https://h"}),
    server_json({"args": []}),
    server_json({"command": "x", "timeout": 0}),
    server_json({"command": "x", "limits": {"memory": "lots"}}),
    server_json({"command": "x", "tools": {"alow": []}}),
    server_json({"command": "x", "priority": 1.5}),
    server_json({"command": "   "}),
    server_json({"command": "x", "url": "https://h"}),
    server_json({"command": "x", "env": {"A=B": "1"}}),
    server_json({"url": "https://h", "headers": {"Bad Name": "v"}}),
    server_json({"url": "ftp://h"}),
    server_json({"type": "sse", "url": "wss://h/x"}),
    server_json({"type": "websocket", "url": "https://h/x"}),
    server_json({"url": "https://h", "args": []}),
    server_json({"command": "x", "dependencies": ["a.b"]}),
    server_json({"command": "x", "transport": 1}),
    server_json({"command": "x", "requestTimeout": 0}),
    server_json({"command": "x", "shutdownTimeout": -0.5}),
    server_json({"command": "x", "limits": {"memory": 0}}),
    server_json({"command": "x", "tools": {"deny": [""]}}),
    '{"inputs": [{"id": "a", "type": "command"}], "servers": {}}',
    '{"inputs": [{"id": "a", "options": [{"label": "x"}]}], "servers": {}}',
]


def test_schema_file_is_valid_json_with_id() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == "https://mcphost.dev/schemas/mcp.json.schema.json"


def test_schema_mentions_every_server_config_field() -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    properties = schema["$defs"]["server"]["properties"]
    spelled = {
        "request_timeout": "requestTimeout",
        "shutdown_timeout": "shutdownTimeout",
        "inherit_env": "inheritEnv",
        "cache_ttl": "cacheTtl",
        "log_level": "logLevel",
        "declared_capabilities": "capabilities",
    }
    for f in dataclasses.fields(ServerConfig):
        if f.name == "name":  # the key: described by propertyNames
            assert schema["$defs"]["serverMap"]["propertyNames"] == {"$ref": "#/$defs/serverName"}
            assert schema["$defs"]["serverName"]["pattern"] == SERVER_NAME_PATTERN
            continue
        if f.name == "line":  # where the entry is, not a field of the file
            continue
        key = spelled.get(f.name, f.name)
        assert key in properties, key
        assert properties[key].get("description"), key
    assert "envFile" in properties
    assert set(schema["properties"]) == {"servers", "mcpServers", "inputs", "cache", "logLevel", "failFast",
                                         "enableLogging"}


def _data(text: str) -> Any:
    return loads(text).value


def test_every_valid_config_loads_and_invalid_ones_do_not() -> None:
    environ = {**ENV, "BASE_URL": "https://h/mcp"}
    read_text = fake_files({"/home/alice/projects/app/.env": "A=1"})
    all_inputs = {"brave-key": "k", "api-key": "k", "mode": "fast", "path": "p"}
    for text in VALID_CONFIGS:
        parse_config(
            text, path=CONFIG_PATH, environ=environ, inputs=all_inputs, read_text=read_text
        )
    for text in INVALID_CONFIGS:
        with pytest.raises(ConfigurationError):
            parse_config(text, path=CONFIG_PATH, environ=environ, read_text=read_text)


def test_schema_agrees_with_mcphost_schema_validator() -> None:
    schema_module = pytest.importorskip(
        "mcphost.schema", reason="mcphost.schema (the JSON Schema validator) is not built yet"
    )
    compile_schema = getattr(schema_module, "compile", None)
    if compile_schema is None:
        pytest.skip("mcphost.schema has no compile() yet")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = compile_schema(schema)

    def is_valid(instance: Any) -> bool:
        if hasattr(validator, "is_valid"):
            return bool(validator.is_valid(instance))
        check = validator.validate if hasattr(validator, "validate") else validator
        try:
            check(instance)
        except MCPHostError:
            return False
        return True

    for text in VALID_CONFIGS:
        assert is_valid(_data(text)), text
    for text in INVALID_CONFIGS:
        assert not is_valid(_data(text)), text


def test_schema_agrees_with_reference_validator() -> None:
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema (bench extra) not installed")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    for text in VALID_CONFIGS:
        errors = list(validator.iter_errors(_data(text)))
        assert not errors, (text, errors)
    for text in INVALID_CONFIGS:
        assert not validator.is_valid(_data(text)), text


# ---------------------------------------------------------------------------------------
# Schema-derived errors: the loader validates against schemas/mcp.json.schema.json
# ---------------------------------------------------------------------------------------

SCHEMA_DOC = """\
{
  "inputs": [
    {"id": "key", "description": "API key", "password": true}
  ],
  "servers": {
    "fs": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "pkg"],
      "env": {"DEBUG": "1"},
      "timeout": 45,
      "limits": {"memory": "512M", "cpuSeconds": 60},
      "tools": {"allow": ["read_*"]}
    },
    "web": {
      "type": "http",
      "url": "https://example.com/mcp",
      "headers": {"Authorization": "Bearer ${input:key}"},
      "requestTimeout": 10
    }
  }
}
"""


def broken(old: str, new: str) -> str:
    """SCHEMA_DOC with one line changed (the line number stays the same)."""
    assert SCHEMA_DOC.count(old) == 1, old
    return SCHEMA_DOC.replace(old, new)


def test_schema_doc_is_valid() -> None:
    config = load(SCHEMA_DOC, inputs={"key": "k"})
    assert list(config.servers) == ["fs", "web"]


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        # wrong types nested in args, env, headers
        (
            '"args": ["-y", "pkg"]',
            '"args": ["-y", 8080]',
            "mcp.json:9: servers.fs.args[1]: expected string, got number",
        ),
        (
            '"env": {"DEBUG": "1"}',
            '"env": {"DEBUG": 1}',
            "mcp.json:10: servers.fs.env.DEBUG: expected string, got number (write it in quotes)",
        ),
        (
            '"headers": {"Authorization": "Bearer ${input:key}"}',
            '"headers": {"Authorization": ["Bearer"]}',
            "mcp.json:18: servers.web.headers.Authorization: expected string, got array",
        ),
        (
            '"headers": {"Authorization": "Bearer ${input:key}"}',
            '"headers": {"Auth orization": "x"}',
            'mcp.json:18: servers.web.headers["Auth orization"]: invalid HTTP header name',
        ),
        # the transport keyword
        (
            '"type": "http"',
            '"type": "grpc"',
            'mcp.json:16: servers.web.type: expected stdio, http, sse or websocket, got "grpc"',
        ),
        (
            '"type": "http"',
            '"type": true',
            "mcp.json:16: servers.web.type: expected string, got boolean",
        ),
        # unknown fields, at every level the schema closes
        (
            '"timeout": 45',
            '"timeot": 45',
            'mcp.json:11: servers.fs.timeot: unknown field (did you mean "timeout"?)',
        ),
        (
            '"cpuSeconds": 60',
            '"cpu_seconds": 60',
            'mcp.json:12: servers.fs.limits.cpu_seconds: unknown field (did you mean "cpuSeconds"?)',
        ),
        (
            '"tools": {"allow": ["read_*"]}',
            '"tools": {"allowed": ["read_*"]}',
            'mcp.json:13: servers.fs.tools.allowed: unknown field (did you mean "allow"?)',
        ),
        (
            '"password": true',
            '"passwd": true',
            'mcp.json:3: inputs[0].passwd: unknown field (did you mean "password"?)',
        ),
        # server names
        (
            '"fs": {',
            '"fs.local": {',
            'mcp.json:6: servers["fs.local"]: invalid server name: a name starts with a letter '
            'and has only letters, digits, "_" and "-" (no dots: the host routes "server.tool" '
            "on the first dot)",
        ),
        # missing fields: the line of the entry that lacks them
        (
            '"command": "npx",',
            '"commmand": "npx",',
            'mcp.json:8: servers.fs.commmand: unknown field (did you mean "command"?)',
        ),
        ('"command": "npx",', "", 'mcp.json:6: servers.fs: a stdio server needs "command"'),
        (
            '"url": "https://example.com/mcp",',
            "",
            'mcp.json:15: servers.web: a "http" server needs "url"',
        ),
        (
            '"id": "key", ',
            "",
            'mcp.json:3: inputs[0]: missing "id"',
        ),
        # numbers out of range
        (
            '"timeout": 45',
            '"timeout": 0',
            "mcp.json:11: servers.fs.timeout: expected a number of seconds greater than 0",
        ),
        (
            '"requestTimeout": 10',
            '"requestTimeout": -10',
            "mcp.json:19: servers.web.requestTimeout: expected a number of seconds greater than "
            "0, or null",
        ),
        (
            '"cpuSeconds": 60',
            '"cpuSeconds": 0',
            "mcp.json:12: servers.fs.limits.cpuSeconds: must be greater than 0",
        ),
        (
            '"memory": "512M"',
            '"memory": "512 potatoes"',
            f"mcp.json:12: servers.fs.limits.memory: {MEMORY_RULE}",
        ),
        # fields of the other kind of server
        (
            '"requestTimeout": 10',
            '"cwd": "/srv"',
            'mcp.json:19: servers.web.cwd: only applies to stdio servers (this one is "http")',
        ),
        (
            '"url": "https://example.com/mcp",',
            '"url": "wss://example.com/mcp",',
            "mcp.json:17: servers.web.url: expected a http:// or https:// URL for a http server",
        ),
    ],
)
def test_schema_errors_name_line_and_field(old: str, new: str, message: str) -> None:
    err = error(broken(old, new), inputs={"key": "k"})
    assert str(err) == message
    assert err.line == int(message.split(":")[1])
    assert err.field == message.split(": ")[1]
    assert err.path == CONFIG_PATH
    if ".fs" in message or '["fs.' in message:
        assert err.server in ("fs", "fs.local")
    elif ".web" in message:
        assert err.server == "web"
    else:
        assert err.server is None


def test_first_schema_error_in_document_order() -> None:
    # The schema finds args[0] (under "properties") before cwd (under "allOf"), and the
    # second server before the first would not matter either: the file's order decides.
    text = """\
    {
      "mcpServers": {
        "a": {"command": "x", "timeout": "soon"},
        "b": {
          "type": "http",
          "url": "https://h/mcp",
          "cwd": "/srv",
          "args": [1]
        }
      }
    }
    """
    assert str(error(text)) == (
        "mcp.json:3: mcpServers.a.timeout: expected a number of seconds greater than 0, got string"
    )
    err = error(text.replace('"timeout": "soon"', '"timeout": 5'))
    assert str(err) == (
        'mcp.json:7: mcpServers.b.cwd: only applies to stdio servers (this one is "http")'
    )


def test_unknown_field_is_reported_before_the_missing_one() -> None:
    # "comand" explains why "command" is missing: the typo is the error shown.
    err = error('{"mcpServers": {"s": {\n  "type": "stdio",\n  "comand": "npx"\n}}}')
    assert str(err) == 'mcp.json:3: mcpServers.s.comand: unknown field (did you mean "command"?)'


def test_a_field_that_does_not_belong_is_reported_before_its_value() -> None:
    err = error(server_json({"type": "stdio", "command": "x", "headers": {"A": 1}}))
    assert str(err).endswith(
        "mcpServers.s.headers: only applies to http, sse and websocket servers"
    )


def test_odd_keys_in_schema_error_paths() -> None:
    text = '{"mcpServers": {"s": {"command": "x",\n"env": {"it\'s \\\\ \\"odd\\"": 1}}}}'
    err = error(text)
    assert str(err) == (
        'mcp.json:2: mcpServers.s.env["it\'s \\\\ \\"odd\\""]: expected string, got number '
        "(write it in quotes)"
    )


def test_schema_messages_never_quote_values() -> None:
    for fields in (
        {"type": "http", "url": f"ftp://user:{SECRET}@h"},
        {"command": "x", "env": {"KEY": [SECRET]}},
        {"command": "x", "headers": {"Authorization": SECRET}},
        {"url": "https://h", "headers": {"Authorization": SECRET + "\n"}},
        {"command": "x", "args": [SECRET], "domains": [SECRET, ""]},
    ):
        assert SECRET not in str(error(server_json(fields)))


def test_type_aliases_agree_with_the_schema() -> None:
    from mcphost.config.entry import _TYPE_ALIASES

    for alias in _TYPE_ALIASES:
        for spelling in (alias, alias.upper(), alias.capitalize()):
            fields: dict[str, Any] = {"type": spelling}
            if _TYPE_ALIASES[alias] == "stdio":
                fields["command"] = "x"
            else:
                scheme = "wss" if _TYPE_ALIASES[alias] == "websocket" else "https"
                fields["url"] = f"{scheme}://h/x"
            assert one(server_json(fields)).type == _TYPE_ALIASES[alias]


@pytest.mark.parametrize(
    ("with_type", "with_transport"),
    [
        ({"type": "sse", "command": "x"}, {"transportType": "sse", "command": "x"}),
        ({"type": "stdio", "url": "https://h"}, {"transport": "stdio", "url": "https://h"}),
        ({"type": "stdio"}, {"transport": "stdio"}),
        ({"type": "websocket"}, {"transportType": "ws"}),
        ({"command": "x", "url": "https://h"}, {"transportType": "?", "command": "x", "url": "h"}),
        ({"url": "https://h", "env": {}}, {"transportType": "?", "url": "https://h", "env": {}}),
        ({"args": []}, {"transportType": "?"}),
    ],
)
def test_transport_spellings_get_the_schema_rules_and_messages(
    with_type: dict[str, Any], with_transport: dict[str, Any]
) -> None:
    # The schema judges entries with "type" or with no type at all; the loader applies the
    # same rules, with the same words, to a type given by "transport" or "transportType".
    by_schema = str(error(server_json(with_type))).split(": ", 1)[1]
    by_loader = str(error(server_json(with_transport))).split(": ", 1)[1]
    assert by_loader == by_schema


def test_the_loader_uses_the_schema_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from mcphost.config import schema_errors as config_mod

    original = Path(config_mod._schema_file())
    assert original == SCHEMA_PATH  # a source checkout: <repo>/schemas
    schema = json.loads(original.read_text(encoding="utf-8"))
    # A rule and a message that exist only in this copy of the file.
    schema["$defs"]["serverName"]["maxLength"] = 3
    schema["$defs"]["serverName"]["errorMessage"] = "names have at most 3 characters here"
    changed = tmp_path / "mcp.json.schema.json"
    changed.write_text(json.dumps(schema), encoding="utf-8")
    monkeypatch.setattr(config_mod, "_schema_file", lambda: changed)
    monkeypatch.setattr(config_mod, "_held", config_mod._nothing)  # the one the tests hold
    try:
        err = error('{"servers": {\n"abcd": {"command": "x"}}}')
        assert str(err) == "mcp.json:2: servers.abcd: names have at most 3 characters here"
        assert list(load('{"servers": {"abc": {"command": "x"}}}').servers) == ["abc"]
    finally:
        monkeypatch.undo()
    assert list(load('{"servers": {"abcd": {"command": "x"}}}').servers) == ["abcd"]


def test_schema_is_compiled_once_while_held() -> None:
    from mcphost.config import schema_errors as config_mod

    first = config_mod.config_schema()
    load(SCHEMA_DOC, inputs={"key": "k"})
    config_from_data({"mcpServers": {}}, environ={})
    assert config_mod.config_schema() is first


def test_the_compiled_schema_is_dropped_after_a_load(monkeypatch: pytest.MonkeyPatch) -> None:
    # Issue 24: its validators and JSON (some 650 KiB) are not kept for the whole process,
    # neither by the loader nor by the schema package's cache; a later load (a reload)
    # compiles it again and validates as well.
    import gc
    import weakref

    from mcphost import schema as json_schema
    from mcphost.config import schema_errors as config_mod

    monkeypatch.setattr(config_mod, "_held", config_mod._nothing)  # the one the tests hold
    cached = dict(json_schema._cache)
    load(SCHEMA_DOC, inputs={"key": "k"})
    gc.collect()
    assert config_mod._held() is None  # the load let it go
    check = config_mod.config_schema()
    dropped = weakref.ref(check)
    del check
    gc.collect()
    assert dropped() is None
    assert json_schema._cache == cached  # nothing of it entered the schema cache
    err = error('{"servers": {"a b": {"command": "x"}}}')
    assert "invalid server name" in str(err)
    assert list(load('{"servers": {"ab": {"command": "x"}}}').servers) == ["ab"]


def test_schema_only_rules() -> None:
    # No Python code checks these: the schema does.
    err = error('{"inputs": [{"id": "a", "options": [{"label": 1, "value": "x"}]}], "servers": {}}')
    assert str(err) == "mcp.json:1: inputs[0].options[0].label: expected string, got number"
    err = error(server_json({"command": "x", "env": {"A=B": "1"}}))
    assert str(err).endswith('mcpServers.s.env["A=B"]: invalid environment variable name')


def test_required_inputs_validates_against_the_schema() -> None:
    with pytest.raises(ConfigurationError) as info:
        required_inputs('{"mcpServers": {"s": {\n"command": 1}}}', path="/x/mcp.json")
    assert str(info.value) == "mcp.json:2: mcpServers.s.command: expected string, got number"


def test_config_from_data_accepts_any_mapping_and_sequence() -> None:
    from types import MappingProxyType

    data = MappingProxyType({"mcpServers": {"s": {"command": "x", "args": ("a", "b")}}})
    assert config_from_data(data, environ={}).servers["s"].args == ("a", "b")
    with pytest.raises(ConfigurationError, match="expected a finite number of seconds"):
        config_from_data(
            {"mcpServers": {"s": {"command": "x", "timeout": float("inf")}}}, environ={}
        )


def test_integral_floats_are_integers() -> None:
    s = one(
        server_json(
            {"command": "x", "priority": 2.0, "limits": {"memory": 1024.0, "cpuSeconds": 5.0}}
        )
    )
    assert s.priority == 2 and isinstance(s.priority, int)
    assert s.limits == Limits(memory_bytes=1024, cpu_seconds=5)
    assert isinstance(s.limits.cpu_seconds, int)


def test_host_config_servers_stay_read_only_and_hash_by_content() -> None:
    cfg = config_from_data(
        {"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}}}, environ={}
    )
    reordered = dataclasses.replace(cfg, servers=dict(reversed(list(cfg.servers.items()))))
    assert not isinstance(reordered.servers, dict)  # still read-only
    with pytest.raises(TypeError):
        reordered.servers["c"] = cfg.servers["a"]  # type: ignore[index]
    assert reordered == cfg and hash(reordered) == hash(cfg)
    assert list(reordered.servers) == ["b", "a"]  # the order given is kept

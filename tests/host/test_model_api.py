"""Tools for model APIs: names each API accepts (stable, unique, invertible), the shapes of
OpenAI, Anthropic and Gemini, dispatch of their tool calls, and tool search."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from helpers import ECHO_TOOL, fake, fake_config, needs_npx

from mcphost import MCPHost, RoutingError, UsageError
from mcphost.host.providers import aliases, gemini_schema
from mcphost.host.search import ToolIndex

HERE = Path(__file__).parent
NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")  # OpenAI, Anthropic
GEMINI_NAME_RULE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$")  # FunctionDeclaration.name
LONG = "list_all_the_pull_requests_waiting_for_review_in_every_repository_of_the_org"

CANONICAL = [
    f"github-enterprise-production.{LONG}",
    f"github-enterprise-production.{LONG}_v2",
    "fs.read.file", "fs.read_file", "fs.read-file", "fs.read file",  # differ only by replaced characters
    "fs.échanger", "a.b", "memory.create_entities",
]


def test_aliases_are_valid_unique_stable_and_invertible() -> None:
    table = aliases(CANONICAL)
    assert set(table) == set(CANONICAL)
    assert all(NAME_RULE.match(alias) and GEMINI_NAME_RULE.match(alias) for alias in table.values())
    assert len(set(table.values())) == len(CANONICAL)
    assert table == aliases(reversed(CANONICAL))  # the order they come in does not matter
    assert table["memory.create_entities"] == "memory__create_entities"  # short and alone: readable
    # A tool named like another's hashed alias keeps its plain name; the hashed one grows.
    tricky = aliases(["s.a b", "s.a_b", "s.a_b_aa5ea697"])
    assert len(set(tricky.values())) == 3 and tricky["s.a_b_aa5ea697"] == "s__a_b_aa5ea697"
    golden = json.loads((HERE / "fixtures" / "golden_aliases.json").read_text(encoding="utf-8"))
    assert table == golden  # the same on every run and machine


def tool(name: str, schema: dict[str, Any] | None = None, **behavior: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "description": f"the {name} tool",
                           "inputSchema": schema or {"type": "object", "properties": {"text": {"type": "string"}}}}
    if behavior:
        out["behavior"] = behavior
    return out


SERVERS = fake_config(docs=fake({"tools": [ECHO_TOOL, tool("get.page"), tool("broken", isError="no such page"),
                                           tool("image", result={"content": [
                                               {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                                               {"type": "text", "text": "a logo"}]})]}))


async def test_the_shapes_of_each_provider() -> None:
    async with MCPHost(SERVERS) as host:
        openai = host.tools_for("openai")
        assert openai[0] == {"type": "function", "function": {
            "name": "docs__echo", "description": ECHO_TOOL["description"], "parameters": ECHO_TOOL["inputSchema"]}}
        assert {t["function"]["name"] for t in openai} == {"docs__echo", "docs__get_page", "docs__broken", "docs__image"}
        responses = host.tools_for("openai-responses")[1]
        assert responses == {"type": "function", "name": "docs__get_page", "description": "the get.page tool",
                             "parameters": tool("get.page")["inputSchema"]}
        assert host.tools_for("anthropic")[0]["input_schema"] == ECHO_TOOL["inputSchema"]
        assert host.tools_for("gemini")[0]["parameters"] == {"type": "object", "properties": {
            "text": {"type": "string"}}}
        assert host.tools_for("generic")[1]["name"] == "docs.get.page"
        assert host.tools_for("mcp")[0] == {**ECHO_TOOL, "name": "docs.echo"}
        assert [t["name"] for t in host.tools_for("anthropic", mode="search")] == [
            "search_tools", "describe_tool", "call_tool"]
        with pytest.raises(UsageError, match="unknown provider"):
            host.tools_for("cohere")


def test_gemini_gets_the_schema_subset_it_accepts() -> None:
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
              "additionalProperties": False, "$defs": {"when": {"type": ["string", "null"], "format": "date-time"}},
              "properties": {"mode": {"const": "fast"}, "at": {"$ref": "#/$defs/when"},
                             "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}}},
              "required": ["mode"]}
    assert gemini_schema(schema) == {"type": "object", "required": ["mode"], "properties": {
        "mode": {"type": "string", "enum": ["fast"]}, "at": {"type": "string", "nullable": True, "format": "date-time"},
        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}}}}


# What Gemini answers 400 INVALID_ARGUMENT to, for the whole request (each one reported by
# users of other clients): unknown keys, an object with empty "properties", "required"
# naming an undefined property, an array without "items", an enum that is not of strings,
# a format Gemini does not know, "properties" on a non-object.
GEMINI_KEYS = {"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems", "properties",
               "required", "minProperties", "maxProperties", "minLength", "maxLength", "pattern", "example",
               "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum"}
GEMINI_FORMATS = {"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"}}


def gemini_problems(schema: Any, path: str = "parameters") -> list[str]:
    if not isinstance(schema, dict):
        return [f"{path}: not an object"]
    found = [f"{path}: unknown key {key}" for key in schema if key not in GEMINI_KEYS]
    kind = schema.get("type")
    if kind is None and "anyOf" not in schema:
        found.append(f"{path}: no type")
    if kind == "object" and "properties" in schema and not schema["properties"]:
        found.append(f"{path}: empty properties")
    if kind != "object" and ("properties" in schema or "required" in schema):
        found.append(f"{path}: properties on a {kind}")
    found += [f"{path}: required {r} undefined" for r in schema.get("required", []) if r not in schema["properties"]]
    if kind == "array" and "items" not in schema:
        found.append(f"{path}: array without items")
    if "enum" in schema and (kind != "string" or not all(isinstance(v, str) for v in schema["enum"])):
        found.append(f"{path}: enum of a {kind}")
    if "format" in schema and schema["format"] not in GEMINI_FORMATS.get(kind, ()):
        found.append(f"{path}: format {schema['format']}")
    for key, sub in (schema.get("properties") or {}).items():
        found += gemini_problems(sub, f"{path}.{key}")
    if "items" in schema:
        found += gemini_problems(schema["items"], f"{path}[]")
    for i, sub in enumerate(schema.get("anyOf", [])):
        found += gemini_problems(sub, f"{path}|{i}")
    return found


def test_gemini_accepts_every_declaration_of_the_real_servers() -> None:
    lists = json.loads((HERE / "fixtures" / "tool_lists.json").read_text(encoding="utf-8"))
    from mcphost.host.providers import tool_shape

    problems = []
    for server, tools in lists.items():
        for t in tools:
            declaration = tool_shape("gemini", f"{server}__{t['name']}", t)
            assert declaration["parameters"]["type"] == "object"
            problems += [f"{server}.{t['name']} {p}" for p in gemini_problems(declaration["parameters"])]
    assert problems == []
    # A tool without parameters: an object without "properties" (empty ones are refused).
    no_args = next(t for t in lists["memory"] if t["name"] == "read_graph")
    assert tool_shape("gemini", "m", no_args)["parameters"] == {"type": "object"}


def test_gemini_repairs_what_it_would_refuse() -> None:
    schema = {
        "type": "object", "required": ["id", "ghost"],
        "$defs": {"node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}},
        "properties": {
            "id": {"type": "integer", "format": "int64", "exclusiveMinimum": 0},
            "url": {"type": "string", "format": "uri"},
            "level": {"type": "integer", "enum": [1, 2, 3], "description": "how loud"},
            "kind": {"enum": ["a", "b"]},
            "either": {"oneOf": [{"type": "string"}, {"type": "number"}]},
            "maybe": {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}], "description": "or nothing"},
            "several": {"type": ["string", "integer", "null"]},
            "merged": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                                 {"properties": {"b": {"type": "boolean"}}}]},
            "free": {"type": "object", "additionalProperties": {"type": "string"}},
            "list": {"type": "array"},
            "pair": {"type": "array", "items": [{"type": "number"}, {"type": "number"}]},
            "tree": {"$ref": "#/$defs/node", "description": "a tree"},
            "opaque": {"description": "anything", "not": {"type": "null"}},
        },
    }
    converted = gemini_schema(schema)
    props = converted["properties"]
    assert converted["required"] == ["id"]  # "ghost" has no property
    assert props["id"] == {"type": "integer", "format": "int64"}
    assert props["url"] == {"type": "string"}  # only enum and date-time are string formats Gemini knows
    assert props["level"] == {"type": "integer", "description": "how loud (one of: 1, 2, 3)"}
    assert props["kind"] == {"type": "string", "enum": ["a", "b"]}
    assert props["either"] == {"anyOf": [{"type": "string"}, {"type": "number"}]}
    assert props["maybe"] == {"type": "string", "minLength": 1, "description": "or nothing", "nullable": True}
    assert props["several"] == {"nullable": True, "anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["merged"] == {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "boolean"}},
                               "required": ["a"]}
    assert props["free"] == {"type": "object"}
    assert props["list"] == {"type": "array", "items": {"type": "string"}}
    assert props["pair"] == {"type": "array", "items": {"type": "number"}}
    assert props["tree"]["description"] == "a tree"
    depth, node = 0, props["tree"]
    while "properties" in node:  # the recursion is inlined a bounded number of times
        node, depth = node["properties"]["child"], depth + 1
    assert node == {"type": "object"} and depth <= 8
    assert props["opaque"] == {"type": "string", "description": "anything"}  # Gemini requires a type
    assert gemini_problems(converted) == []


async def test_tools_for_gives_copies() -> None:
    async with MCPHost(SERVERS) as host:
        before = json.dumps(host.get_tools())
        for provider in ("openai", "openai-responses", "anthropic", "generic", "mcp", "gemini"):
            for shaped in host.tools_for(provider):
                schema = shaped.get("function", shaped)
                schema = schema.get("parameters") or schema.get("input_schema") or schema.get("inputSchema")
                schema["additionalProperties"] = False  # what an application adds for OpenAI's strict mode
                schema.setdefault("properties", {})["added"] = {"type": "string"}
        assert json.dumps(host.get_tools()) == before
        assert (await host.call_tool("docs.echo", {"text": "still"}))["content"]


async def test_dispatch_round_trips_for_every_provider() -> None:
    async with MCPHost(SERVERS) as host:
        name = host.tools_for("openai")[0]["function"]["name"]
        reply = await host.dispatch({"id": "c1", "type": "function",
                                     "function": {"name": name, "arguments": '{"text": "hi"}'}})
        assert reply == {"role": "tool", "tool_call_id": "c1", "content": '{"text":"hi"}'}
        reply = await host.dispatch({"type": "function_call", "call_id": "c2", "name": "docs__get_page",
                                     "arguments": "{}"})
        assert reply == {"type": "function_call_output", "call_id": "c2", "output": "{}"}
        reply = await host.dispatch({"type": "tool_use", "id": "t1", "name": "docs__image", "input": {}})
        assert reply["type"] == "tool_result" and reply["tool_use_id"] == "t1"
        assert reply["content"][0] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                   "data": "iVBORw0KGgo="}}
        reply = await host.dispatch({"type": "tool_use", "id": "t2", "name": "docs__broken", "input": {}})
        assert reply["is_error"] is True and reply["content"] == [{"type": "text", "text": "no such page"}]
        reply = await host.dispatch({"functionCall": {"name": "docs__echo", "args": {"text": "g"}}})
        assert reply == {"functionResponse": {"name": "docs__echo", "response": {"result": '{"text":"g"}'}}}
        # Mistakes become error results the model can read; raise_errors=True raises them.
        bad = await host.dispatch({"id": "c3", "function": {"name": "docs__nope", "arguments": "{}"}})
        assert bad["content"].startswith("Error: unknown tool")
        bad = await host.dispatch({"id": "c4", "function": {"name": name, "arguments": "{not json"}})
        assert "not JSON" in bad["content"]
        with pytest.raises(UsageError):
            await host.dispatch({"id": "c4", "function": {"name": name, "arguments": "{not json"}}, raise_errors=True)
        # call_tool takes the alias and mcp__server__tool as well as server.tool.
        assert (await host.call_tool("docs__get_page", {}))["content"]
        assert (await host.call_tool("mcp__docs__get.page", {}))["content"]


MIXED = fake_config(docs=fake({"tools": [
    ECHO_TOOL,
    tool("get.page"),
    tool("mixed", result={"content": [
        {"type": "text", "text": ""},  # Anthropic refuses empty text blocks
        {"type": "text", "text": "see the file"},
        {"type": "resource", "resource": {"uri": "file:///notes.txt", "mimeType": "text/plain", "text": "the notes"}},
        {"type": "resource_link", "uri": "file:///big.csv", "name": "big.csv"},
        {"type": "image", "data": "PHN2Zz4=", "mimeType": "image/svg+xml"},  # not an image type Anthropic takes
        {"type": "image", "data": "R0lGODlh", "mimeType": "image/gif"}]}),
    tool("nothing", result={"content": []}),
    tool("structured", result={"content": [], "structuredContent": {"sum": 3}}),
]}), mcp=fake({"tools": [tool("x")]}))


async def test_results_keep_what_each_provider_takes() -> None:
    async with MCPHost(MIXED) as host:
        reply = await host.dispatch({"type": "tool_use", "id": "a", "name": "docs__mixed", "input": {}})
        assert reply["content"] == [
            {"type": "text", "text": "see the file"},
            {"type": "text", "text": "the notes"},
            {"type": "text", "text": "[resource_link big.csv file:///big.csv]"},
            {"type": "text", "text": "[image image/svg+xml]"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lGODlh"}}]
        chat = await host.dispatch({"id": "c", "type": "function", "function": {"name": "docs__mixed", "arguments": ""}})
        assert chat["content"].splitlines() == ["see the file", "the notes", "[resource_link big.csv file:///big.csv]",
                                                "[image image/svg+xml]", "[image image/gif]"]
        empty = await host.dispatch({"type": "tool_use", "id": "e", "name": "docs__nothing", "input": {}})
        assert empty["content"] == [{"type": "text", "text": "(no content)"}]
        structured = await host.dispatch({"functionCall": {"id": "g1", "name": "docs__structured", "args": {}}})
        assert structured == {"functionResponse": {"id": "g1", "name": "docs__structured",
                                                   "response": {"result": {"sum": 3}}}}
        bare = await host.dispatch({"name": "docs__echo", "args": {"text": "b"}})  # Gemini's call without wrapper
        assert bare == {"functionResponse": {"name": "docs__echo", "response": {"result": '{"text":"b"}'}}}


async def test_names_resolve_whatever_form_they_come_in() -> None:
    async with MCPHost(MIXED) as host:
        assert host.resolve_tool_name("docs.get.page") == "docs.get.page"
        assert host.resolve_tool_name("docs__get_page") == "docs.get.page"
        assert host.resolve_tool_name("mcp__docs__get.page") == "docs.get.page"
        assert host.resolve_tool_name("mcp__docs__get_page") == "docs.get.page"  # Claude Code's sanitized name
        assert host.resolve_tool_name("mcp__x") == "mcp.x"  # a server named "mcp": its alias wins
        assert (await host.call_tool("mcp__x", {}))["content"]
        assert (await host.call_tool("mcp__docs__get_page", {}))["content"]
        with pytest.raises(RoutingError):
            host.resolve_tool_name("docs__nope")
        with pytest.raises(UsageError, match="unknown provider"):
            await host.dispatch({"name": "docs__echo", "arguments": "{}"}, provider="cohere")
        with pytest.raises(UsageError, match="not a tool call"):
            await host.dispatch({"hello": "world"})


async def test_meta_call_tool_takes_arguments_as_a_json_string() -> None:
    async with MCPHost(SERVERS) as host:
        called = await host.dispatch({"id": "m", "type": "function", "function": {
            "name": "call_tool", "arguments": json.dumps({"name": "docs__echo", "arguments": '{"text": "s"}'})}})
        assert called == {"role": "tool", "tool_call_id": "m", "content": '{"text":"s"}'}
        bad = await host.dispatch({"type": "tool_use", "id": "n", "name": "call_tool",
                                   "input": {"name": "docs.echo", "arguments": "{oops"}})
        assert bad["is_error"] is True and "not JSON" in bad["content"][0]["text"]


async def test_the_search_mode_serves_its_meta_tools() -> None:
    async with MCPHost(SERVERS) as host:
        found = json.loads((await host.dispatch({"type": "tool_use", "id": "1", "name": "search_tools",
                                                 "input": {"query": "echo the arguments"}}))["content"][0]["text"])
        assert found[0]["name"] == "docs.echo"
        described = await host.dispatch({"type": "tool_use", "id": "2", "name": "describe_tool",
                                         "input": {"name": "docs.echo"}})
        assert json.loads(described["content"][0]["text"])["inputSchema"] == ECHO_TOOL["inputSchema"]
        called = await host.dispatch({"type": "tool_use", "id": "3", "name": "call_tool",
                                      "input": {"name": "docs.echo", "arguments": {"text": "x"}}})
        assert called["content"] == [{"type": "text", "text": '{"text":"x"}'}]


QUERIES = [
    ("read the contents of a text file", "filesystem.read_text_file"),
    ("write a new file to disk", "filesystem.write_file"),
    ("make a new folder", "filesystem.create_directory"),
    ("list files in a directory", "filesystem.list_directory"),
    ("rename a file", "filesystem.move_file"),
    ("find files matching a glob pattern", "filesystem.search_files"),
    ("file size and modification time metadata", "filesystem.get_file_info"),
    ("show the directory tree recursively", "filesystem.directory_tree"),
    ("replace lines in a text file", "filesystem.edit_file"),
    ("read several files at once", "filesystem.read_multiple_files"),
    ("which directories may the server access", "filesystem.list_allowed_directories"),
    ("add two numbers", "everything.get-sum"),
    ("environment variables", "everything.get-env"),
    ("compress a file with gzip", "everything.gzip-file-as-resource"),
    ("long running operation with progress", "everything.trigger-long-running-operation"),
    ("create entities in the knowledge graph", "memory.create_entities"),
    ("delete relations between entities", "memory.delete_relations"),
    ("search the knowledge graph nodes", "memory.search_nodes"),
    ("add observations to an entity", "memory.add_observations"),
    ("read the whole knowledge graph", "memory.read_graph"),
]


def test_search_finds_the_right_tool_in_the_top_three() -> None:
    lists = json.loads((HERE / "fixtures" / "tool_lists.json").read_text(encoding="utf-8"))
    index = ToolIndex((f"{server}.{t['name']}", server, t) for server, tools in lists.items() for t in tools)
    misses = [(query, want, [hit["name"] for hit in index.search(query, 3)])
              for query, want in QUERIES if want not in [hit["name"] for hit in index.search(query, 3)]]
    assert misses == []


def test_search_mode_saves_context() -> None:
    lists = json.loads((HERE / "fixtures" / "tool_lists.json").read_text(encoding="utf-8"))
    from mcphost.host.providers import tool_shape
    from mcphost.host.tools_api import META_TOOLS

    table = aliases(f"{s}.{t['name']}" for s, tools in lists.items() for t in tools)
    full = [tool_shape("anthropic", table[f"{s}.{t['name']}"], t) for s, tools in lists.items() for t in tools]
    meta = [tool_shape("anthropic", t["name"], t) for t in META_TOOLS]
    full_tokens, meta_tokens = len(json.dumps(full)) // 4, len(json.dumps(meta)) // 4
    print(f"\nfull tool list: ~{full_tokens} tokens; search mode: ~{meta_tokens} tokens")
    assert meta_tokens * 10 < full_tokens


@pytest.mark.interop
@needs_npx
async def test_dispatch_against_the_real_filesystem_server(tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello from disk", encoding="utf-8")
    cfg = {"mcpServers": {"filesystem": {"command": "npx", "timeout": 180,
                                         "args": ["-y", "@modelcontextprotocol/server-filesystem", str(tmp_path)]}}}
    async with MCPHost(cfg) as host:
        names = {t["name"] for t in host.tools_for("anthropic")}
        assert "filesystem__read_text_file" in names
        reply = await host.dispatch({"type": "tool_use", "id": "r", "name": "filesystem__read_text_file",
                                     "input": {"path": str(tmp_path / "hello.txt")}})
        assert reply["content"][0]["text"] == "hello from disk" and "is_error" not in reply
        gemini = await host.dispatch({"functionCall": {"name": "filesystem__list_allowed_directories", "args": {}}})
        assert str(tmp_path) in json.dumps(gemini["functionResponse"]["response"]["result"])
        path = json.dumps({"path": str(tmp_path / "hello.txt")})
        chat = await host.dispatch({"id": "c", "type": "function",
                                    "function": {"name": "filesystem__read_text_file", "arguments": path}})
        assert chat == {"role": "tool", "tool_call_id": "c", "content": "hello from disk"}
        responses = await host.dispatch({"type": "function_call", "call_id": "r2", "name": "filesystem__read_text_file",
                                         "arguments": path})
        assert responses == {"type": "function_call_output", "call_id": "r2", "output": "hello from disk"}

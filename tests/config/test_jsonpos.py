"""Tests for mcphost.config.jsonpos: the line-aware JSON(C) reader."""

from __future__ import annotations

import json
import random

import pytest

from mcphost.config.jsonpos import DEFAULT_MAX_DEPTH, display_name, format_path, loads
from mcphost.errors import ConfigurationError


def syntax_error(text: str, **kwargs: object) -> str:
    with pytest.raises(ConfigurationError) as info:
        loads(text, path="/home/someone/project/mcp.json", **kwargs)  # type: ignore[arg-type]
    return str(info.value)


# -- values -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "{}",
        "[]",
        "0",
        "-0.5e-3",
        "1E+2",
        '"x"',
        "true",
        "false",
        "null",
        '{"a": [1, 2, {"b": [true, false, null]}], "c": "d"}',
        '["\\u00e9\\ud83d\\ude00", "tab\\tnew\\nline", "\\"q\\" \\\\ \\/"]',
        "123456789012345678901234567890",
        '  \n\t{"nested": {"deeper": {"deepest": [[[]]]}}}\r\n ',
        '{"": "empty key", "k": {}}',
    ],
)
def test_values_match_json_loads(text: str) -> None:
    assert loads(text).value == json.loads(text)


def test_random_documents_match_json_loads() -> None:
    rng = random.Random(7)

    def make(depth: int) -> object:
        kind = rng.randrange(7 if depth < 5 else 5)
        if kind == 0:
            return rng.randint(-(10**12), 10**12)
        if kind == 1:
            return rng.random() * 1e6
        if kind == 2:
            return "".join(rng.choice('ab"\\\n\u00e9 /*x*/ //') for _ in range(rng.randrange(8)))
        if kind == 3:
            return rng.choice([True, False, None])
        if kind == 4:
            return ""
        if kind == 5:
            return [make(depth + 1) for _ in range(rng.randrange(4))]
        return {f"k{i}": make(depth + 1) for i in range(rng.randrange(4))}

    for _ in range(200):
        value = make(0)
        for indent in (None, 2):
            text = json.dumps(value, indent=indent)
            assert loads(text).value == value


def test_object_key_order_is_kept() -> None:
    assert list(loads('{"z": 1, "a": 2, "m": 3}').value) == ["z", "a", "m"]


# -- positions ---------------------------------------------------------------------------


def test_positions_of_keys_elements_and_root() -> None:
    text = '\n{\n  "a": [\n    1,\n    {"b": null}\n  ],\n  "c": true\n}'
    doc = loads(text)
    assert doc.location(()) == (2, 1)
    assert doc.location(("a",)) == (3, 3)
    assert doc.location(("a", 0)) == (4, 5)
    assert doc.location(("a", 1)) == (5, 5)
    assert doc.location(("a", 1, "b")) == (5, 6)
    assert doc.location(("c",)) == (7, 3)
    assert doc.line(("c",)) == 7


def test_missing_path_falls_back_to_nearest_ancestor() -> None:
    doc = loads('{\n "a": {\n  "b": 1\n }\n}')
    assert doc.line(("a", "missing", "deeper")) == 2
    assert doc.line(("a", "missing"), exact=True) is None
    assert doc.location(("nothing",)) == (1, 1)


def test_paths_in_document_order() -> None:
    doc = loads('{"a": [1, 2], "b": {"c": 3}}')
    assert list(doc.paths()) == [(), ("a",), ("a", 0), ("a", 1), ("b",), ("b", "c")]


def test_columns_count_characters_not_bytes() -> None:
    doc = loads('{"\u00e9\u00e9": 1, "x": 2}')
    assert doc.location(("x",)) == (1, 11)  # é counts as one column


def test_crlf_line_endings() -> None:
    doc = loads('{\r\n  "a": 1,\r\n  "b": 2\r\n}')
    assert doc.location(("b",)) == (3, 3)


# -- comments and trailing commas ------------------------------------------------------------


def test_comments_are_skipped_and_positions_kept() -> None:
    text = (
        "// leading comment\n"
        "{\n"
        '  /* block\n     comment */ "a": 1, // trailing\n'
        '  "url": "http://example.com/*not a comment*/",\n'
        '  "b": /* inline */ [1, /* x */ 2]\n'
        "}\n"
        "/* final */"
    )
    doc = loads(text)
    assert doc.value == {"a": 1, "url": "http://example.com/*not a comment*/", "b": [1, 2]}
    assert doc.location(("a",)) == (4, 17)
    assert doc.line(("url",)) == 5
    assert doc.location(("b", 1)) == (6, 33)


def test_trailing_commas_accepted() -> None:
    assert loads('{"a": [1, 2,], "b": {"c": 1,},}').value == {"a": [1, 2], "b": {"c": 1}}


def test_strict_mode_refuses_comments_and_trailing_commas() -> None:
    assert syntax_error('{"a": 1 // x\n}', comments=False) == (
        "mcp.json:1:9: invalid JSON: comments are not allowed"
    )
    assert syntax_error('{"a": 1,\n}', trailing_commas=False) == (
        "mcp.json:1:8: invalid JSON: trailing comma is not allowed"
    )


def test_lone_comma_is_not_a_trailing_comma() -> None:
    assert syntax_error("[,]") == "mcp.json:1:2: invalid JSON: expected a value"
    assert syntax_error("{,}") == (
        "mcp.json:1:2: invalid JSON: expected a property name in double quotes or '}'"
    )
    assert syntax_error("[1,,]") == "mcp.json:1:4: invalid JSON: expected a value"


def test_byte_order_mark_is_accepted() -> None:
    doc = loads('\ufeff{"a": 1}')
    assert doc.value == {"a": 1}


# -- errors ----------------------------------------------------------------------------------


def test_invalid_json_reports_line_and_column() -> None:
    text = '{\n  "a": 1,\n  "b": 2 "c": 3\n}'
    with pytest.raises(ConfigurationError) as info:
        loads(text, path="/home/someone/project/mcp.json")
    err = info.value
    assert str(err) == "mcp.json:3:10: invalid JSON: expected ',' or '}'"
    assert err.line == 3
    assert err.path == "/home/someone/project/mcp.json"
    assert "/home/someone" not in str(err)


@pytest.mark.parametrize(
    ("text", "where", "what"),
    [
        ("", "1:1", "empty document, expected a JSON value"),
        ("  // only a comment\n", "2:1", "empty document, expected a JSON value"),
        ("[1, 2", "1:6", "expected ',' or ']', found the end of the document"),
        ("[1 2]", "1:4", "expected ',' or ']'"),
        ('{"a" 1}', "1:6", "expected ':' after a property name"),
        (
            "{'a': 1}",
            "1:2",
            "expected a property name in double quotes or '}' (strings use double quotes)",
        ),
        ("[\"a\", 'b']", "1:7", "expected a value (strings use double quotes)"),
        ("{a: 1}", "1:2", "expected a property name in double quotes or '}'"),
        ('{"a": 1, b: 2}', "1:10", "expected a property name in double quotes"),
        ("[NaN]", "1:2", "expected a value"),
        ("[Infinity]", "1:2", "expected a value"),
        ("[01]", "1:3", "expected ',' or ']'"),
        ("[-]", "1:2", "invalid number"),
        ("[1] [2]", "1:5", "unexpected data after the JSON value"),
        ('\n\n  "abc', "3:3", "unterminated string"),
        ('["a\\qb"]', "1:4", "invalid escape in a string"),
        ('["\\u12x4"]', "1:4", "invalid \\u escape in a string"),
        ('["a\tb"]', "1:4", "control character in a string (escape it, e.g. \\n)"),
        ("[1, /* open", "1:5", "unterminated /* comment"),
        ("[tru]", "1:2", "expected a value"),
    ],
)
def test_syntax_error_messages(text: str, where: str, what: str) -> None:
    assert syntax_error(text) == f"mcp.json:{where}: invalid JSON: {what}"


def test_duplicate_key_names_both_lines() -> None:
    text = '{\n  "servers": {\n    "fs": {"command": "a"},\n    "x": 1,\n    "fs": {}\n  }\n}'
    with pytest.raises(ConfigurationError) as info:
        loads(text, path="mcp.json")
    err = info.value
    assert str(err) == "mcp.json:5: servers.fs: duplicate key (first defined on line 3)"
    assert err.line == 5
    assert err.field == "servers.fs"


def test_duplicate_top_level_key() -> None:
    assert syntax_error('{"servers": {},\n"servers": {}}') == (
        "mcp.json:2: servers: duplicate key (first defined on line 1)"
    )


def test_duplicate_key_in_array_element() -> None:
    assert syntax_error('[{"a": 1}, {"a": 1, "a": 2}]') == (
        "mcp.json:1: [1].a: duplicate key (first defined on line 1)"
    )


def test_same_key_in_different_objects_is_fine() -> None:
    assert loads('{"a": {"x": 1}, "b": {"x": 2}}').value == {"a": {"x": 1}, "b": {"x": 2}}


def test_deep_nesting_gives_a_clear_error_not_recursion_error() -> None:
    for text in ("[" * 100_000, '{"a":' * 100_000):
        message = syntax_error(text)
        assert message.startswith("mcp.json:1:")
        assert f"nesting deeper than {DEFAULT_MAX_DEPTH} levels" in message


def test_nesting_up_to_the_limit_is_accepted() -> None:
    depth = DEFAULT_MAX_DEPTH
    value = loads("[" * depth + "]" * depth).value
    for _ in range(depth - 1):
        value = value[0]
    assert value == []
    assert "nesting deeper than 3" in syntax_error("[[[[]]]]", max_depth=3)


def test_huge_number_is_an_error_not_a_crash() -> None:
    text = "[" + "9" * 50_000 + "]"
    try:
        value = loads(text).value
    except ConfigurationError as exc:  # Python 3.11+: int() digit limit
        assert str(exc) == "<config>:1:2: invalid JSON: number too large"
    else:
        assert value == [int("9" * 50_000)]


def test_big_document_parses() -> None:
    # About 5 MB; no timing assertion (speed lives in benchmarks/), only that it works.
    servers = {
        f"server{i}": {
            "command": "npx",
            "args": ["-y", f"@scope/package-{i}", "--flag", "value"],
            "env": {"API_KEY": "x" * 40, "OTHER": "y" * 20},
            "timeout": 30.5,
            "enabled": True,
        }
        for i in range(20_000)
    }
    text = json.dumps({"mcpServers": servers}, indent=2)
    assert len(text) > 5_000_000
    doc = loads(text)
    assert doc.value == {"mcpServers": servers}
    assert doc.line(("mcpServers", "server19999", "enabled")) == text.count("\n") - 2


# -- helpers ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "shown"),
    [
        (("servers", "fs", "args", 1), "servers.fs.args[1]"),
        (("servers", "brave-search", "env", "API_KEY"), "servers.brave-search.env.API_KEY"),
        (("servers", "my.server"), 'servers["my.server"]'),
        (("servers", "1x"), 'servers["1x"]'),
        ((0, "a"), "[0].a"),
        (("a b",), '["a b"]'),
        ((), ""),
    ],
)
def test_format_path(path: tuple[str | int, ...], shown: str) -> None:
    assert format_path(path) == shown


def test_display_name_hides_directories() -> None:
    assert display_name("/home/someone/.vscode/mcp.json") == "mcp.json"
    assert display_name("C:\\Users\\x\\mcp.json".replace("\\", "/")) == "mcp.json"
    assert display_name(None) == "<config>"
    assert display_name("") == "<config>"

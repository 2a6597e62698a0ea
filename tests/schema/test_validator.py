"""Behaviour of mcphost.schema beyond the official suite: errors, options, safety."""

from __future__ import annotations

import builtins
import collections
import enum
import logging
import socket
import urllib.request
from typing import Any

import pytest

from mcphost import schema
from mcphost.errors import MCPHostError, SchemaError, ValidationError

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"

READ_TEXT_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "head": {"type": "number"},
        "tail": {"type": "number"},
    },
    "required": ["path"],
    "additionalProperties": False,
    "$schema": DRAFT7,
}

EDIT_FILE = {
    "$schema": DRAFT2020,
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {"type": "array", "items": {"$ref": "#/$defs/edit"}},
        "dryRun": {"type": "boolean", "default": False},
    },
    "required": ["path", "edits"],
    "additionalProperties": False,
    "$defs": {
        "edit": {
            "type": "object",
            "properties": {"oldText": {"type": "string"}, "newText": {"type": "string"}},
            "required": ["oldText", "newText"],
            "additionalProperties": False,
        }
    },
}


def error_of(sch: Any, instance: Any, **options: Any) -> ValidationError:
    with pytest.raises(ValidationError) as info:
        schema.compile(sch, **options).validate(instance)
    return info.value


# --- error shape ---------------------------------------------------------------------------


def test_nested_type_error_has_path_keyword_schema_path_and_message() -> None:
    sch = {
        "type": "object",
        "properties": {
            "items": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
            }
        },
    }
    err = error_of(sch, {"items": [{}, {}, {"name": "x"}, {"name": 5}]})
    assert err.path == "$.items[3].name"
    assert err.keyword == "type"
    assert err.schema_path == "/properties/items/items/properties/name/type"
    assert err.value == 5
    assert str(err) == "$.items[3].name: expected string, got integer 5"
    assert err.errors == [err]
    assert isinstance(err, MCPHostError)


def test_required_message() -> None:
    err = error_of(READ_TEXT_FILE, {"head": 3})
    assert str(err) == "$: missing required property 'path'"
    assert err.keyword == "required"
    assert err.schema_path == "/required"
    assert err.path == "$"


def test_maximum_message() -> None:
    err = error_of({"properties": {"count": {"type": "integer", "maximum": 20}}}, {"count": 150})
    assert str(err) == "$.count: 150 is greater than the maximum 20"
    assert err.schema_path == "/properties/count/maximum"


def test_non_identifier_keys_are_bracketed() -> None:
    err = error_of({"properties": {"a b": {"properties": {"it's": {"type": "null"}}}}},
                   {"a b": {"it's": 0}})
    assert err.path == "$['a b']['it\\'s']"
    assert err.schema_path == "/properties/a b/properties/it's/type"


def test_additional_property_is_named() -> None:
    err = error_of(READ_TEXT_FILE, {"path": "a", "encoding": "utf8"})
    assert err.keyword == "additionalProperties"
    assert "'encoding'" in str(err)
    assert err.schema_path == "/additionalProperties"


def test_error_through_ref_records_the_evaluation_path() -> None:
    err = error_of(EDIT_FILE, {"path": "a", "edits": [{"oldText": "a", "newText": "b"},
                                                     {"oldText": "a", "newText": 7}]})
    assert err.path == "$.edits[1].newText"
    assert err.schema_path == "/properties/edits/items/$ref/properties/newText/type"


@pytest.mark.parametrize(
    ("sch", "instance", "keyword", "fragment"),
    [
        ({"minLength": 3}, "ab", "minLength", "shorter than 3"),
        ({"maxItems": 1}, [1, 2], "maxItems", "at most 1"),
        ({"enum": ["a", "b"]}, "c", "enum", "is not one of"),
        ({"const": 1}, 2, "const", "constant"),
        ({"pattern": "^x"}, "y", "pattern", "does not match the pattern"),
        ({"multipleOf": 2}, 3, "multipleOf", "not a multiple of 2"),
        ({"uniqueItems": True}, [1, 1.0], "uniqueItems", "items 0 and 1 are equal"),
        ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1, "anyOf", "alternatives"),
        ({"oneOf": [{"type": "integer"}, {"minimum": 0}]}, 1, "oneOf", "more than one"),
        ({"not": {"type": "integer"}}, 1, "not", "must not match"),
        ({"contains": {"type": "string"}}, [1], "contains", "does not contain"),
        ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, "dependentRequired", "'b' is required"),
        ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, "propertyNames", "'abc'"),
        ({"exclusiveMinimum": 1}, 1, "exclusiveMinimum", "exclusive minimum 1"),
        ({"unevaluatedProperties": False}, {"a": 1}, "unevaluatedProperties", "'a'"),
        ({"prefixItems": [{}], "items": False}, [1, 2], "items", "at most 1"),
        ({"properties": {"a": False}}, {"a": 1}, "false", "no value is allowed"),
    ],
)
def test_keyword_messages(sch: Any, instance: Any, keyword: str, fragment: str) -> None:
    err = error_of(sch, instance)
    assert err.keyword == keyword
    assert fragment in str(err)


def test_all_errors_mode_collects_everything_first_error_is_main() -> None:
    v = schema.compile(EDIT_FILE)
    bad = {"edits": [{"oldText": 1, "newText": "x"}], "extra": True}
    with pytest.raises(ValidationError) as info:
        v.validate(bad, all_errors=True)
    err = info.value
    messages = [str(e) for e in err.errors]
    assert err.errors[0] is err
    assert len(err.errors) == 3
    assert "$: missing required property 'path'" in messages
    assert any(e.path == "$.edits[0].oldText" for e in err.errors)
    assert any(e.keyword == "additionalProperties" for e in err.errors)
    # default mode stops at the first
    with pytest.raises(ValidationError) as first:
        v.validate(bad)
    assert len(first.value.errors) == 1
    assert v.iter_errors(bad)[0].message == err.message
    assert v.iter_errors({"path": "p", "edits": []}) == []


def test_module_level_validate_accepts_options() -> None:
    schema.validate({"path": "x"}, READ_TEXT_FILE)
    with pytest.raises(ValidationError) as info:
        schema.validate({"path": 1, "x": 1}, READ_TEXT_FILE, all_errors=True)
    assert len(info.value.errors) == 2


# --- MCP tool schemas ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("instance", "valid"),
    [
        ({"path": "README.md"}, True),
        ({"path": "README.md", "head": 10}, True),
        ({"path": "README.md", "tail": 2.5}, True),
        ({"head": 10}, False),
        ({"path": 1}, False),
        ({"path": "a", "head": "10"}, False),
        ({"path": "a", "head": True}, False),
        ({"path": "a", "other": 1}, False),
        (["path"], False),
        (None, False),
    ],
)
def test_filesystem_read_text_file_schema(instance: Any, valid: bool) -> None:
    assert schema.compile(READ_TEXT_FILE).is_valid(instance) is valid


def test_2020_schema_with_defs() -> None:
    v = schema.compile(EDIT_FILE)
    assert v.is_valid({"path": "a", "edits": [{"oldText": "a", "newText": "b"}], "dryRun": True})
    assert not v.is_valid({"path": "a", "edits": [{"oldText": "a"}]})
    assert not v.is_valid({"path": "a", "edits": [{"oldText": "a", "newText": "b", "x": 1}]})


# --- types and equality --------------------------------------------------------------------


def test_integers_floats_and_booleans() -> None:
    integer = schema.compile({"type": "integer"})
    assert integer.is_valid(1) and integer.is_valid(1.0) and integer.is_valid(10**40)
    assert not integer.is_valid(1.5) and not integer.is_valid(True)
    number = schema.compile({"type": "number"})
    assert not number.is_valid(False) and number.is_valid(2.5)
    assert not schema.compile({"minimum": 0}).is_valid(-1)
    assert schema.compile({"minimum": 0}).is_valid(True)  # not a number: minimum ignores it


def test_json_equality() -> None:
    unique = schema.compile({"uniqueItems": True})
    assert not unique.is_valid([1, 1.0])
    assert unique.is_valid([True, 1])
    assert unique.is_valid([[True], [1]])
    assert not unique.is_valid([{"a": [1]}, {"a": [1.0]}])
    enum_ = schema.compile({"enum": [1, "a", None, [0]]})
    assert enum_.is_valid(1.0) and not enum_.is_valid(True)
    assert enum_.is_valid([0.0]) and not enum_.is_valid([False])
    assert not schema.compile({"const": False}).is_valid(0)


def test_python_subclasses_and_tuples() -> None:
    class Color(enum.IntEnum):
        RED = 1

    v = schema.compile({"type": "object", "properties": {"c": {"type": "integer", "enum": [1]},
                                                          "l": {"type": "array", "maxItems": 2}}})
    assert v.is_valid(collections.OrderedDict(c=Color.RED, l=(1, 2)))
    assert not v.is_valid({"l": (1, 2, 3)})


@pytest.mark.parametrize("additional", [None, True, False])
def test_bare_type_properties_take_the_fast_path_with_the_same_answers(
    additional: bool | None,
) -> None:
    # A property whose schema is only a type is accepted by its exact Python type; every
    # other value still gets the full check (1.0 is an integer, True is not, subclasses).
    class Color(enum.IntEnum):
        RED = 1

    class Name(str):
        pass

    sch: dict[str, Any] = {"type": "object", "properties": {
        "i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"},
        "b": {"type": "boolean"}, "z": {"type": "null"}, "o": {"type": "object"},
        "a": {"type": "array"}, "u": {"type": ["string", "null"]},
        "m": {"type": "integer", "minimum": 0},
    }}
    if additional is not None:
        sch["additionalProperties"] = additional
    v = schema.compile(sch)
    good = {"i": 1, "n": 2.5, "s": "x", "b": False, "z": None, "o": {}, "a": [], "u": None, "m": 0}
    assert v.is_valid(good)
    assert v.is_valid({**good, "i": 1.0, "n": 3, "s": Name("x"), "a": (1,), "m": Color.RED})
    for key, bad in [("i", 1.5), ("i", True), ("n", "1"), ("s", 1), ("b", 0), ("z", 0),
                     ("o", []), ("a", {}), ("u", 1), ("m", -1)]:
        assert not v.is_valid({**good, key: bad}), (key, bad)
        assert v.iter_errors({**good, key: bad})[0].path == f"$.{key}"
    assert v.is_valid({**good, "extra": 1}) is (additional is not False)


def test_string_length_counts_code_points() -> None:
    assert schema.compile({"maxLength": 1}).is_valid("\U0001f600")


# --- options -------------------------------------------------------------------------------


def test_default_dialect_selects_draft7_semantics() -> None:
    sch = {"dependencies": {"a": ["b"]}, "items": [{"type": "string"}], "additionalItems": False}
    old = schema.compile(sch, default_dialect="draft-07")
    new = schema.compile(sch)
    assert not old.is_valid({"a": 1})
    assert new.is_valid({"a": 1})  # "dependencies" is not a 2020-12 keyword
    assert not old.is_valid(["x", "y"])
    # an explicit $schema wins over the default
    assert not schema.compile({**sch, "$schema": DRAFT7}).is_valid({"a": 1})
    with pytest.raises(ValueError, match="default_dialect"):
        schema.compile({}, default_dialect="draft-03")


def test_draft7_ref_siblings_are_ignored() -> None:
    sch = {"definitions": {"s": {"type": "string"}}, "$ref": "#/definitions/s", "maxLength": 1}
    assert schema.compile(sch, default_dialect="draft-07").is_valid("long")
    assert not schema.compile(sch).is_valid("long")


def test_format_is_an_annotation_unless_asserted() -> None:
    sch = {"type": "string", "format": "date-time"}
    assert schema.compile(sch).is_valid("yesterday")
    strict_formats = schema.compile(sch, format_assert=True)
    assert not strict_formats.is_valid("yesterday")
    assert strict_formats.is_valid("2024-02-29T12:00:00Z")
    assert error_of(sch, "nope", format_assert=True).keyword == "format"
    assert schema.compile({"format": "made-up"}, format_assert=True).is_valid("x")


def test_compile_is_cached_by_canonical_json_and_options() -> None:
    a = schema.compile({"type": "object", "required": ["x"], "properties": {"x": {}}})
    b = schema.compile({"properties": {"x": {}}, "required": ["x"], "type": "object"})
    assert a is b
    assert schema.compile({"type": "object", "required": ["x"], "properties": {"x": {}}},
                          format_assert=True) is not a
    assert schema.compile({"const": 1}) is not schema.compile({"const": 1.0})
    assert schema.compile({"const": 1}) is not schema.compile({"const": True})


def test_compiled_schema_is_a_private_copy() -> None:
    sch: dict[str, Any] = {"type": "string"}
    v = schema.compile(sch)
    sch["type"] = "integer"
    assert v.is_valid("still a string")
    assert v.schema == {"type": "string"}


# --- schema errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sch", "fragment"),
    [
        ({"type": 5}, "#/type"),
        ({"type": "strin"}, "#/type"),
        ({"properties": {"a": {"minimum": "x"}}}, "#/properties/a/minimum"),
        ({"items": {"pattern": "("}}, "#/items/pattern"),
        ({"$ref": "#/definitions/missing"}, "$ref"),
        ({"$ref": "#nowhere"}, "$ref"),
        ({"required": "name"}, "#/required"),
        ({"minLength": -1}, "#/minLength"),
        ({"multipleOf": 0}, "#/multipleOf"),
        ({"allOf": []}, "#/allOf"),
        ({"properties": {"a": 3}}, "#/properties/a"),
        ({"enum": "a"}, "#/enum"),
        ({"pattern": "\\p{Script=Greek}"}, "#/pattern"),
        ({"x": {1, 2}}, "not JSON"),
    ],
)
def test_invalid_schemas_raise_schema_error_naming_the_location(sch: Any, fragment: str) -> None:
    with pytest.raises(SchemaError) as info:
        schema.compile(sch)
    assert fragment in str(info.value)


def test_metaschema_refs_resolve_locally() -> None:
    meta2020 = schema.compile({"$ref": DRAFT2020})
    assert meta2020.is_valid({"type": "string", "$defs": {"a": {"minimum": 1}}})
    assert not meta2020.is_valid({"$defs": {"a": {"type": 1}}})
    meta7 = schema.compile({"$ref": DRAFT7}, default_dialect="draft-07")
    assert meta7.is_valid({"definitions": {"a": {"type": "integer"}}})
    assert not meta7.is_valid({"minLength": -1})


def test_resources_option_supplies_documents_without_fetching() -> None:
    other = {"$defs": {"name": {"type": "string", "minLength": 1}}}
    sch = {"properties": {"n": {"$ref": "https://example.com/other.json#/$defs/name"}}}
    v = schema.compile(sch, resources={"https://example.com/other.json": other}, strict=True)
    assert v.is_valid({"n": "x"}) and not v.is_valid({"n": ""})


# --- no I/O --------------------------------------------------------------------------------


REMOTE_SCHEMAS = [
    {"$ref": "https://example.com/schemas/thing.json"},
    {"properties": {"a": {"$ref": "http://example.com/a.json#/definitions/x"}}},
    {"$ref": "file:///etc/passwd"},
    {"$id": "https://example.com/root.json", "items": {"$ref": "other.json"}},
    {"$dynamicRef": "https://example.com/dyn.json#meta"},
]


def test_remote_refs_never_touch_network_or_files(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    touched: list[str] = []

    def forbidden(*args: Any, **kwargs: Any) -> Any:
        touched.append(repr(args)[:80])
        raise AssertionError("I/O attempted")

    schema.clear_cache()
    caplog.set_level(logging.DEBUG, logger="mcphost.schema")
    monkeypatch.setattr(socket.socket, "connect", forbidden)
    monkeypatch.setattr(socket, "create_connection", forbidden)
    monkeypatch.setattr(urllib.request, "urlopen", forbidden)
    monkeypatch.setattr(builtins, "open", forbidden)
    for sch in REMOTE_SCHEMAS:
        v = schema.compile(sch)
        assert v.is_valid({"a": 1}) and v.is_valid([1, "x"])  # a remote ref counts as true
        with pytest.raises(SchemaError, match="never fetched"):
            schema.compile(sch, strict=True)
    assert not schema.compile({"$ref": DRAFT2020}).is_valid({"type": 12})
    monkeypatch.undo()
    assert touched == []
    logged = [r.getMessage() for r in caplog.records if "not fetched" in r.getMessage()]
    assert len(logged) == len(REMOTE_SCHEMAS)


# --- safety --------------------------------------------------------------------------------


def _nested_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def test_deep_instances_hit_a_clear_depth_error() -> None:
    v = schema.compile({"type": "array", "items": {"$ref": "#"}})
    deep = _nested_list(100_000)
    assert v.is_valid(_nested_list(50))
    assert v.is_valid(deep) is False
    with pytest.raises(ValidationError) as info:
        v.validate(deep)
    assert info.value.keyword == "maxDepth"
    assert "nested too deeply" in str(info.value)
    assert v.iter_errors(deep)[0].keyword == "maxDepth"


def test_max_depth_is_configurable() -> None:
    v = schema.compile({"items": {"$ref": "#"}}, max_depth=10)
    assert v.is_valid(_nested_list(9))
    assert not v.is_valid(_nested_list(20))
    with pytest.raises(ValidationError, match="max_depth 10"):
        v.validate(_nested_list(20))


def test_deep_schema_is_a_schema_error() -> None:
    sch: Any = {"type": "string"}
    for _ in range(5000):
        sch = {"not": sch}
    with pytest.raises(SchemaError, match="deep"):
        schema.compile(sch)
    shallow: Any = {"type": "string"}
    for _ in range(40):
        shallow = {"allOf": [shallow]}
    with pytest.raises(SchemaError, match="max_depth"):
        schema.compile(shallow, max_depth=20)


@pytest.mark.parametrize(
    "sch",
    [
        {"$ref": "#"},
        {"anyOf": [{"type": "string"}, {"$ref": "#"}]},
        {"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
         "$ref": "#/$defs/a"},
        {"definitions": {"a": {"$ref": "#"}}, "not": {"$ref": "#/definitions/a"}},
    ],
)
def test_ref_cycles_that_never_consume_input_are_refused(sch: Any) -> None:
    with pytest.raises(SchemaError, match="never end"):
        schema.compile(sch)


def test_pathological_pattern_runs_in_linear_time() -> None:
    # (a+)+$ backtracks exponentially in re; mcphost matches it with an NFA instead.
    v = schema.compile({"type": "string", "pattern": "^(a+)+$"})
    assert v.is_valid("a" * 30)
    assert not v.is_valid("a" * 5000 + "!")
    props = schema.compile({"patternProperties": {"^(x|y+)*z$": {"type": "null"}}})
    assert not props.is_valid({"yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyz": 1})
    assert props.is_valid({"y" * 40 + "!": 1})


def test_strict_mode_refuses_nested_quantifiers_and_long_patterns() -> None:
    with pytest.raises(SchemaError, match="nested quantifiers"):
        schema.compile({"pattern": "^(a+)+$"}, strict=True)
    schema.compile({"pattern": "^[a-z]+(-[a-z]+)?$"}, strict=True)  # bounded: accepted
    with pytest.raises(SchemaError, match="longer than"):
        schema.compile({"pattern": "a" * 5000})
    # Nested quantifiers with look-around: matched by the linear engine (under a step
    # budget), refused in strict mode.
    v = schema.compile({"pattern": "^(a+)+(?=b)"})
    assert v.is_valid("aaab") and not v.is_valid("a" * 3000 + "!")
    with pytest.raises(SchemaError, match="nested quantifiers"):
        schema.compile({"pattern": "^(a+)+(?=b)"}, strict=True)
    with pytest.raises(SchemaError, match="step budget"):
        schema.compile({"pattern": "(a)\\1"}, strict=True)


def test_ecma_regex_semantics() -> None:
    assert not schema.compile({"pattern": "^\\d+$"}).is_valid("\u0663")  # ASCII digits only
    assert not schema.compile({"pattern": "^\\w$"}).is_valid("\u00e9")
    assert not schema.compile({"pattern": "^abc$"}).is_valid("abc\n")  # no trailing \n
    assert schema.compile({"pattern": "^\\p{Letter}+$"}).is_valid("\u00e9t\u00e9")
    assert schema.compile({"pattern": "^\\s$"}).is_valid("\ufeff")
    assert not schema.compile({"pattern": "^.$"}).is_valid("\u2028")
    assert schema.compile({"pattern": "(?<y>\\d{4})-\\k<y>"}).is_valid("2024-2024")


def test_unevaluated_properties_through_applicators() -> None:
    sch = {
        "$schema": DRAFT2020,
        "properties": {"kind": {"enum": ["a", "b"]}},
        "if": {"properties": {"kind": {"const": "a"}}},
        "then": {"properties": {"a": {"type": "integer"}}},
        "else": {"$ref": "#/$defs/b"},
        "$defs": {"b": {"properties": {"b": {"type": "string"}}}},
        "unevaluatedProperties": False,
    }
    v = schema.compile(sch)
    assert v.is_valid({"kind": "a", "a": 1})
    assert v.is_valid({"kind": "b", "b": "x"})
    assert not v.is_valid({"kind": "a", "b": "x"})
    err = error_of(sch, {"kind": "b", "a": 1})
    assert err.keyword == "unevaluatedProperties" and "'a'" in str(err)


def test_the_regex_engine_loads_with_the_first_pattern_only() -> None:
    # A fresh interpreter: the MCP message checks (schemas without patterns) and a schema
    # without one leave the ECMA-262 engine unloaded; the first pattern loads it, and it works.
    import subprocess
    import sys

    code = """
import sys
from mcphost import schema
from mcphost.protocol.messages import MessageChecker
checker = MessageChecker("s", "2025-11-25", "strict", None)
checker.result("tools/call", {"content": [{"type": "text", "text": "ok", "annotations": {"priority": 0.5}}]})
schema.compile({"properties": {"a": {"format": "email"}}}, format_assert=True).is_valid({"a": "x@y.z"})
print("mcphost.schema.regex" in sys.modules)
v = schema.compile({"type": "string", "pattern": "^a+$"})
print("mcphost.schema.regex" in sys.modules, v.is_valid("aaa"), v.is_valid("ab"))
v = schema.compile({"type": "string", "format": "regex"}, format_assert=True)
print(v.is_valid("a("), v.is_valid("a+"))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split() == ["False", "True", "True", "False", "False", "True"], done.stderr


@pytest.mark.parametrize(
    ("base", "ref"),
    [
        ("https://mcphost.dev/schemas/mcp/2025-06-18.json", "common.json#/$defs/Tool"),
        ("https://mcphost.dev/schemas/mcp/2025-06-18.json#/$defs/A", "common.json"),
        ("https://host", "a.json#/x"),
        ("https://host/", "a.json"),
        ("http://u@host:80/dir/", "b.json#frag"),
        # Not a plain sibling: urljoin's answer, whatever its rules (dot segments, queries,
        # empty segments, parameters, another scheme, an empty fragment, whitespace).
        ("https://host/a/../b/c.json", "d.json"),
        ("https://host/a/./c.json", "d.json"),
        ("https://host//a/c.json", "d.json"),
        ("https://host/a/c.json?q=1", "d.json"),
        ("https://host/a;p/c.json", "d.json"),
        ("HTTPS://host/a/c.json", "d.json"),
        ("ftp://host/a/c.json", "d.json"),
        ("https://host/a/c.json", "d.json#"),
        ("https://host/a/c.json", "../d.json"),
        ("https://host/a/c.json", "./d.json"),
        ("https://host/a/c.json", "sub/d.json"),
        ("https://host/a/c.json", "d.json?x"),
        ("https://host/a/c.json", "d.json#a\tb"),
        ("https://host/a/c.json", "%64.json"),
    ],
)
def test_relative_refs_resolve_as_urljoin_does(base: str, ref: str) -> None:
    # A file name beside the base is joined without urllib.parse (issue 24: it costs a stdio
    # host ~0.4 MB); the result must be urljoin's, to the character.
    from urllib.parse import urljoin

    from mcphost.schema.refs import join_uri

    assert join_uri(base, ref) == urljoin(base, ref)

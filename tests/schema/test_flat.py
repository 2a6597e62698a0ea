"""The fast path of flat object schemas of scalars: used for them, never for others, and
always the same answer as the full compiled check."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from mcphost.schema import compile as compile_schema

FLAT: list[Any] = [
    {"type": "object", "properties": {"i": {"type": "integer"}}, "additionalProperties": True},
    {"type": "object", "properties": {"i": {"type": "integer"}}},
    {"type": "object"},
    {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "number"}}},
    {"type": "object", "properties": {"a": {"type": "string", "description": "x"}}, "required": ["a"]},
    {"type": "object", "properties": {"a": {"type": ["string", "null"]}, "b": {"type": "boolean"}},
     "required": ["a", "b"], "additionalProperties": False},
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}, "c": True}, "required": ["b", "z"]},
    {"properties": {"a": {"type": "integer"}, "b": {"type": "object"}, "c": {"type": "array"}},
     "additionalProperties": False, "title": "t"},
    {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
     "properties": {"n": {"type": "number"}, "s": {"type": "string"}, "k": {"type": "integer"}}},
]
NOT_FLAT: list[Any] = [
    {"type": "object", "properties": {"a": {"type": "string", "minLength": 2}}},
    {"type": "object", "properties": {"a": {"enum": [1, 2]}}},
    {"type": "object", "additionalProperties": {"type": "string"}},
    {"type": "object", "properties": {"a": False}},
    {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
    {"type": "array"},
    {"type": "object", "properties": {"a": {"type": "string", "format": "email"}}},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
]
VALUES: list[Any] = [0, 1, -3, 2**70, 1.0, 1.5, float("inf"), True, False, None, "", "s", [], [1], {}, {"a": 1}]


class _Str(str):
    pass


class _Dict(dict):  # type: ignore[type-arg]
    pass


def _instances() -> list[Any]:
    out: list[Any] = [None, 1, "x", [], _Dict(a="x", b=True), {"z": 1}, {"a": _Str("x"), "b": True}]
    for a, b in itertools.product([*VALUES, "absent"], repeat=2):
        inst = {}
        if a != "absent":
            inst["a"] = a
        if b != "absent":
            inst["b"] = b
        out.append(inst)
        out.append({**inst, "i": 3, "n": 2.5, "s": "t", "k": 4.0})
        out.append({**inst, "i": 3.0, "extra": None})
        out.append({"i": a, "n": b, "k": a, "s": b, "z": 0})
    return out


@pytest.mark.parametrize("schema", FLAT)
def test_flat_schemas_take_the_fast_path_and_answer_exactly(schema: Any) -> None:
    v = compile_schema(schema, default_dialect="draft-07")
    assert v.is_valid is not v._check  # specialised
    for inst in _instances():
        assert v.is_valid(inst) is v._check(inst), (schema, inst)
        assert (v.iter_errors(inst) == []) is v.is_valid(inst)


@pytest.mark.parametrize("schema", NOT_FLAT)
def test_other_schemas_keep_the_full_check(schema: Any) -> None:
    v = compile_schema(schema)
    assert v.is_valid is v._check


def test_the_typical_tool_input() -> None:
    v = compile_schema({"type": "object", "properties": {"path": {"type": "string"}, "n": {"type": "integer"}},
                        "required": ["path"]})
    assert v.is_valid({"path": "a.txt"}) and v.is_valid({"path": "a", "n": 2, "other": [1]})
    assert v.is_valid({"path": "a", "n": 2.0})  # 1.0 is an integer: the full check says so
    assert not v.is_valid({"n": 2}) and not v.is_valid({"path": 1}) and not v.is_valid({"path": "a", "n": True})
    assert not v.is_valid(["path"])

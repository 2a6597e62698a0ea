"""Hostile numbers, depths and sizes end as ValidationError or SchemaError, never anything else.

Schemas and data both come from servers. Whatever they hold, validation raises only
:class:`~mcphost.errors.ValidationError` (the data is wrong) or
:class:`~mcphost.errors.SchemaError` (the schema is wrong, or asks for too much): never
OverflowError, RecursionError or a stall.
"""

from __future__ import annotations

import gc
import math
from typing import Any

import pytest

from mcphost import schema
from mcphost.errors import SchemaError, ValidationError
from mcphost.schema import compile_cost
from mcphost.schema.bounds import DEFAULT_MAX_NODES, gc_paused
from mcphost.schema.equality import freeze, nesting
from mcphost.schema.nodes import DepthExceeded
from mcphost.schema.numbers import is_count, multiple_of


def _verdict(v: schema.Validator, instance: Any) -> bool:
    """is_valid, checked against validate and iter_errors, which must agree."""
    ok = v.is_valid(instance)
    errors = v.iter_errors(instance)
    assert (not errors) == ok
    if ok:
        v.validate(instance)
    else:
        with pytest.raises(ValidationError):
            v.validate(instance, all_errors=True)
    return ok


# --- numbers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("m", "x", "expected"),
    [
        (0.1, 10**400, True),  # the review: OverflowError before
        (0.1, -(10**400), True),
        (0.3, 10**400, False),  # 10**401 / 3 is not an integer
        (0.3, 3 * 10**399, True),
        (0.1, 1e308, True),
        (0.3, 1e308, False),
        (1e-300, 1e-299, True),
        (1e-300, 1.5e-300, False),
        (10**400, 10**401, True),
        (10**400, 5.0, False),  # was True: the quotient underflowed to 0.0
        (10**400, 0, True),
        (1e308, 1e308, True),
        (0.0001, 0.0075, True),  # binary floats disagree, the decimals do not
        (0.1, 0.3, True),
        (1.5, 4.5, True),
        (2, 10**5000, True),
        (7, 10**400 + 1, False),
        (0.5, float("inf"), False),  # not JSON, but Python callers can pass it
        (0.5, float("nan"), False),
    ],
    ids=lambda v: f"int{v.bit_length()}bits" if isinstance(v, int) else repr(v),
)
def test_multiple_of_is_exact_and_never_overflows(m: Any, x: Any, expected: bool) -> None:
    assert multiple_of(x, m) is expected
    assert _verdict(schema.compile({"multipleOf": m}), x) is expected


def test_numbers_beyond_float_range_everywhere() -> None:
    huge = 10**400
    for sch in (
        {"minimum": 0.1}, {"maximum": 1e308}, {"exclusiveMinimum": -1e308},
        {"exclusiveMaximum": huge}, {"type": "integer"}, {"enum": [1e308, huge]},
        {"const": huge}, {"multipleOf": 1e-320},
    ):
        v = schema.compile(sch)
        for x in (huge, -huge, 10**5000, 1e308, -1e308, 5e-324, math.inf, math.nan):
            _verdict(v, x)
    with pytest.raises(ValidationError, match="integer of about 5001 digits"):
        schema.validate(10**5000, {"maximum": 0})  # messages do not repr() 5000 digits


@pytest.mark.parametrize("key", ["minLength", "maxLength", "minItems", "maxItems",
                                 "minProperties", "maxProperties", "minContains"])
@pytest.mark.parametrize("value", [10**400, 1e308, 2.0], ids=["10**400", "1e308", "2.0"])
def test_huge_counts_compile(key: str, value: Any) -> None:
    v = schema.compile({key: value, "contains": True} if key == "minContains" else {key: value})
    _verdict(v, "ab")
    _verdict(v, [1, 2])
    _verdict(v, {"a": 1})
    assert is_count(value) and not is_count(-1) and not is_count(1.5) and not is_count(True)


def test_schemas_with_non_json_numbers_are_schema_errors() -> None:
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(SchemaError, match="not JSON"):
            schema.compile({"multipleOf": bad})
    with pytest.raises(SchemaError, match="not JSON"):
        schema.compile({"minimum": 10**5000})  # more digits than Python converts


# --- depth -------------------------------------------------------------------------------


def _deep_list(depth: int) -> Any:
    value: Any = []
    for _ in range(depth):
        value = [value]
    return value


def _deep_dict(depth: int) -> Any:
    value: Any = {}
    for _ in range(depth):
        value = {"a": value}
    return value


DEEP_SCHEMAS = [
    {"items": {"$ref": "#"}},
    {"additionalProperties": {"$ref": "#"}},
    {"uniqueItems": True},
    {"enum": [1, [1], {"a": 1}]},
    {"const": [[1]]},
    {"contains": {"const": [1]}},
    {"not": {"enum": [[[[]]]]}},
    {"items": {"uniqueItems": True}},
    {"type": "array", "items": {"anyOf": [{"type": "array"}, {"$ref": "#"}]}},
    {"$defs": {"a": {"items": {"$ref": "#/$defs/b"}}, "b": {"items": {"$ref": "#/$defs/a"}}},
     "$ref": "#/$defs/a"},
]


@pytest.mark.parametrize("sch", DEEP_SCHEMAS, ids=[str(s)[:40] for s in DEEP_SCHEMAS])
def test_instances_nested_5000_deep_are_validation_errors(sch: Any) -> None:
    v = schema.compile(sch)
    for instance in (
        _deep_list(5000), _deep_dict(5000), [_deep_list(5000), _deep_list(5000)],
        {"k": _deep_dict(5000), "j": _deep_dict(5000)}, [_deep_dict(5000)] * 2,
    ):
        try:
            ok = _verdict(v, instance)
        except RecursionError:  # pragma: no cover - the bug this test is about
            pytest.fail("RecursionError escaped")
        if not ok:
            errors = v.iter_errors(instance)
            assert all(isinstance(e, ValidationError) for e in errors)


def test_the_depth_error_names_where_the_instance_is_too_deep() -> None:
    v = schema.compile({"items": {"$ref": "#"}}, max_depth=10)
    with pytest.raises(ValidationError) as info:
        v.validate([[], _deep_list(30)])
    err = info.value
    assert err.keyword == "maxDepth"
    assert err.path.startswith("$[1][0][0]") and err.path.count("[") == 11
    assert "max_depth 10" in str(err)
    unique = schema.compile({"uniqueItems": True})
    with pytest.raises(ValidationError) as info:
        unique.validate([_deep_dict(600), _deep_dict(600)])
    assert info.value.keyword == "maxDepth"
    assert info.value.path.startswith("$[0].a.a")
    assert len(str(info.value)) < 200  # the path is shortened in the message


def test_deep_schema_without_cycles_and_a_deep_instance() -> None:
    # 200 nested "items" (no $ref): checking an instance as deep recurses through every
    # level; if Python's stack runs out first, that too is a maxDepth ValidationError.
    sch: Any = {"type": "array"}
    for _ in range(200):
        sch = {"items": sch}
    v = schema.compile(sch)
    assert _verdict(v, _deep_list(10))
    for instance in (_deep_list(210), _deep_list(5000)):
        if not _verdict(v, instance):
            assert v.iter_errors(instance)[0].keyword in ("maxDepth", "type")


def test_enum_of_shallow_values_never_walks_a_deep_instance() -> None:
    v = schema.compile({"enum": [[1], {"a": [2]}]})
    assert not v.is_valid(_deep_list(100_000))
    assert v.is_valid([1]) and v.is_valid({"a": [2.0]}) and not v.is_valid([True])


def test_freeze_is_iterative_and_bounded() -> None:
    assert freeze([1, {"a": [True, None]}]) == freeze([1.0, {"a": [True, None]}])
    assert freeze([True]) != freeze([1])
    assert freeze({"a": 1, "b": 2}) == freeze({"b": 2, "a": 1})
    assert nesting(_deep_list(100_000)) == 100_001 and nesting(5) == 0 and nesting([]) == 1
    with pytest.raises(DepthExceeded):
        freeze(_deep_list(100_000), 512)
    assert freeze(_deep_list(400), 512) == freeze(_deep_list(400), 512)


def test_deep_schemas_and_ref_cycles_are_schema_errors() -> None:
    deep: Any = {"type": "string"}
    for _ in range(5000):
        deep = {"properties": {"a": deep}}
    with pytest.raises(SchemaError):
        schema.compile(deep, max_nodes=10**6)
    chain = {"$defs": {f"d{i}": {"items": {"$ref": f"#/$defs/d{i + 1}"}} for i in range(3000)}}
    chain["$defs"]["d3000"] = {"type": "string"}
    chain["$ref"] = "#/$defs/d0"
    with pytest.raises(SchemaError, match="deep"):
        schema.compile(chain)
    with pytest.raises(SchemaError, match="never end"):
        schema.compile({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
                        "$ref": "#/$defs/a"})


# --- size --------------------------------------------------------------------------------


def test_compile_cost_counts_json_values_and_weighs_patterns() -> None:
    assert compile_cost(True) == 1
    assert compile_cost({}) == 1
    assert compile_cost({"type": "string"}) == 2
    assert compile_cost({"enum": [1, 2, 3]}) == 5
    assert compile_cost({"pattern": "^a+$"}) == 2 + 16 + 2
    assert compile_cost({"patternProperties": {"x" * 80: {}}}) == 3 + 16 + 40
    assert compile_cost({"pattern": "^\\p{L}+\\P{Lu}$"}) == 2 + 16 + 7 + 2 * 512
    assert compile_cost({"a": _deep_dict(100_000)}) == 100_002  # iterative: no recursion


def test_max_nodes_refuses_large_schemas_before_compiling() -> None:
    big = {"enum": list(range(DEFAULT_MAX_NODES))}
    assert compile_cost(big) > DEFAULT_MAX_NODES
    with pytest.raises(SchemaError, match="too large to compile"):
        schema.compile(big)
    assert schema.compile(big, max_nodes=2 * DEFAULT_MAX_NODES).is_valid(5)
    props = {"properties": {f"p{i}": {"type": "string"} for i in range(100)}}
    with pytest.raises(SchemaError, match="max_nodes 150"):
        schema.compile(props, max_nodes=150)
    schema.compile(props, max_nodes=250)
    with pytest.raises(SchemaError, match="too large"):
        schema.compile({"$ref": "urn:x"}, resources={"urn:x": big})


def test_dynamic_scopes_cannot_multiply_compilation() -> None:
    # 16 generations of 2 resources, each binding its own dynamic anchor: every path
    # through them is a distinct dynamic scope, 2**16 of them for a 3 kB schema.
    defs = {}
    for i in range(16):
        for j in range(2):
            nxt = [{"$ref": f"urn:r:{i + 1}:{k}"} for k in range(2)] if i < 15 else [True]
            defs[f"r{i}_{j}"] = {"$id": f"urn:r:{i}:{j}", "$dynamicAnchor": f"n{i}",
                                 "properties": {"x": {"anyOf": nxt}}}
    sch = {"$defs": defs, "anyOf": [{"$ref": "urn:r:0:0"}, {"$ref": "urn:r:0:1"}]}
    assert compile_cost(sch) < 400
    with pytest.raises(SchemaError, match="dynamicRef scopes"):
        schema.compile(sch)


def test_compilation_pauses_the_garbage_collector_and_restores_it() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(SchemaError):
        schema.compile({"minimum": "x"})
    assert gc.isenabled()
    gc.disable()
    try:
        schema.clear_cache()
        schema.compile({"type": "string"})
        assert not gc.isenabled()  # the caller's choice is kept
    finally:
        gc.enable()

"""Local copies of the JSON Schema meta-schemas (draft 2020-12 and draft-07).

A ``$ref`` to a meta-schema (``https://json-schema.org/draft/2020-12/schema``,
``http://json-schema.org/draft-07/schema#``) must resolve without any network access, so
the meta-schemas ship here as Python data, written from the published specifications.
They are reduced to what validation needs: titles, descriptions, ``default`` values and
deprecated keywords are left out. :func:`lookup` returns a fresh deep copy, because the
compiler indexes schema objects by identity.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["DRAFT7", "DRAFT202012", "lookup"]

DRAFT202012 = "https://json-schema.org/draft/2020-12/schema"
DRAFT7 = "http://json-schema.org/draft-07/schema"

_B = "https://json-schema.org/draft/2020-12/"


def _vocab_doc(name: str, props: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "$schema": DRAFT202012,
        "$id": f"{_B}meta/{name}",
        "$dynamicAnchor": "meta",
        "type": ["object", "boolean"],
        "properties": props,
        **extra,
    }


_SCHEMA_ARRAY = {"type": "array", "minItems": 1, "items": {"$dynamicRef": "#meta"}}

_META_2020: dict[str, Any] = {
    DRAFT202012: {
        "$schema": DRAFT202012,
        "$id": DRAFT202012,
        "$dynamicAnchor": "meta",
        "allOf": [
            {"$ref": "meta/core"},
            {"$ref": "meta/applicator"},
            {"$ref": "meta/unevaluated"},
            {"$ref": "meta/validation"},
            {"$ref": "meta/meta-data"},
            {"$ref": "meta/format-annotation"},
            {"$ref": "meta/content"},
        ],
        "type": ["object", "boolean"],
        "properties": {
            "definitions": {"type": "object", "additionalProperties": {"$dynamicRef": "#meta"}},
            "dependencies": {
                "type": "object",
                "additionalProperties": {
                    "anyOf": [{"$dynamicRef": "#meta"}, {"$ref": "meta/validation#/$defs/stringArray"}]
                },
            },
            "$recursiveAnchor": {"$ref": "meta/core#/$defs/anchorString"},
            "$recursiveRef": {"$ref": "meta/core#/$defs/uriReferenceString"},
        },
    },
    f"{_B}meta/core": _vocab_doc(
        "core",
        {
            "$id": {
                "$ref": "#/$defs/uriReferenceString",
                "$comment": "Non-empty fragments not allowed.",
                "pattern": "^[^#]*#?$",
            },
            "$schema": {"$ref": "#/$defs/uriString"},
            "$ref": {"$ref": "#/$defs/uriReferenceString"},
            "$anchor": {"$ref": "#/$defs/anchorString"},
            "$dynamicRef": {"$ref": "#/$defs/uriReferenceString"},
            "$dynamicAnchor": {"$ref": "#/$defs/anchorString"},
            "$vocabulary": {
                "type": "object",
                "propertyNames": {"$ref": "#/$defs/uriString"},
                "additionalProperties": {"type": "boolean"},
            },
            "$comment": {"type": "string"},
            "$defs": {"type": "object", "additionalProperties": {"$dynamicRef": "#meta"}},
        },
        **{
            "$defs": {
                "anchorString": {"type": "string", "pattern": "^[A-Za-z_][-A-Za-z0-9._]*$"},
                "uriString": {"type": "string", "format": "uri"},
                "uriReferenceString": {"type": "string", "format": "uri-reference"},
            }
        },
    ),
    f"{_B}meta/applicator": _vocab_doc(
        "applicator",
        {
            "prefixItems": {"$ref": "#/$defs/schemaArray"},
            "items": {"$dynamicRef": "#meta"},
            "contains": {"$dynamicRef": "#meta"},
            "additionalProperties": {"$dynamicRef": "#meta"},
            "properties": {
                "type": "object",
                "additionalProperties": {"$dynamicRef": "#meta"},
                "default": {},
            },
            "patternProperties": {
                "type": "object",
                "additionalProperties": {"$dynamicRef": "#meta"},
                "propertyNames": {"format": "regex"},
            },
            "dependentSchemas": {"type": "object", "additionalProperties": {"$dynamicRef": "#meta"}},
            "propertyNames": {"$dynamicRef": "#meta"},
            "if": {"$dynamicRef": "#meta"},
            "then": {"$dynamicRef": "#meta"},
            "else": {"$dynamicRef": "#meta"},
            "allOf": {"$ref": "#/$defs/schemaArray"},
            "anyOf": {"$ref": "#/$defs/schemaArray"},
            "oneOf": {"$ref": "#/$defs/schemaArray"},
            "not": {"$dynamicRef": "#meta"},
        },
        **{"$defs": {"schemaArray": _SCHEMA_ARRAY}},
    ),
    f"{_B}meta/unevaluated": _vocab_doc(
        "unevaluated",
        {
            "unevaluatedItems": {"$dynamicRef": "#meta"},
            "unevaluatedProperties": {"$dynamicRef": "#meta"},
        },
    ),
    f"{_B}meta/validation": _vocab_doc(
        "validation",
        {
            "type": {
                "anyOf": [
                    {"$ref": "#/$defs/simpleTypes"},
                    {
                        "type": "array",
                        "items": {"$ref": "#/$defs/simpleTypes"},
                        "minItems": 1,
                        "uniqueItems": True,
                    },
                ]
            },
            "const": True,
            "enum": {"type": "array", "items": True},
            "multipleOf": {"type": "number", "exclusiveMinimum": 0},
            "maximum": {"type": "number"},
            "exclusiveMaximum": {"type": "number"},
            "minimum": {"type": "number"},
            "exclusiveMinimum": {"type": "number"},
            "maxLength": {"$ref": "#/$defs/nonNegativeInteger"},
            "minLength": {"$ref": "#/$defs/nonNegativeIntegerDefault0"},
            "pattern": {"type": "string", "format": "regex"},
            "maxItems": {"$ref": "#/$defs/nonNegativeInteger"},
            "minItems": {"$ref": "#/$defs/nonNegativeIntegerDefault0"},
            "uniqueItems": {"type": "boolean"},
            "maxContains": {"$ref": "#/$defs/nonNegativeInteger"},
            "minContains": {"$ref": "#/$defs/nonNegativeInteger"},
            "maxProperties": {"$ref": "#/$defs/nonNegativeInteger"},
            "minProperties": {"$ref": "#/$defs/nonNegativeIntegerDefault0"},
            "required": {"$ref": "#/$defs/stringArray"},
            "dependentRequired": {
                "type": "object",
                "additionalProperties": {"$ref": "#/$defs/stringArray"},
            },
        },
        **{
            "$defs": {
                "nonNegativeInteger": {"type": "integer", "minimum": 0},
                "nonNegativeIntegerDefault0": {"$ref": "#/$defs/nonNegativeInteger"},
                "simpleTypes": {
                    "enum": ["array", "boolean", "integer", "null", "number", "object", "string"]
                },
                "stringArray": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            }
        },
    ),
    f"{_B}meta/meta-data": _vocab_doc(
        "meta-data",
        {
            "title": {"type": "string"},
            "description": {"type": "string"},
            "default": True,
            "deprecated": {"type": "boolean"},
            "readOnly": {"type": "boolean"},
            "writeOnly": {"type": "boolean"},
            "examples": {"type": "array", "items": True},
        },
    ),
    f"{_B}meta/format-annotation": _vocab_doc("format-annotation", {"format": {"type": "string"}}),
    f"{_B}meta/content": _vocab_doc(
        "content",
        {
            "contentEncoding": {"type": "string"},
            "contentMediaType": {"type": "string"},
            "contentSchema": {"$dynamicRef": "#meta"},
        },
    ),
}

_META_DRAFT7: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "$id": "http://json-schema.org/draft-07/schema#",
    "definitions": {
        "schemaArray": {"type": "array", "minItems": 1, "items": {"$ref": "#"}},
        "nonNegativeInteger": {"type": "integer", "minimum": 0},
        "nonNegativeIntegerDefault0": {"allOf": [{"$ref": "#/definitions/nonNegativeInteger"}]},
        "simpleTypes": {
            "enum": ["array", "boolean", "integer", "null", "number", "object", "string"]
        },
        "stringArray": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "type": ["object", "boolean"],
    "properties": {
        "$id": {"type": "string", "format": "uri-reference"},
        "$schema": {"type": "string", "format": "uri"},
        "$ref": {"type": "string", "format": "uri-reference"},
        "$comment": {"type": "string"},
        "title": {"type": "string"},
        "description": {"type": "string"},
        "default": True,
        "readOnly": {"type": "boolean"},
        "writeOnly": {"type": "boolean"},
        "examples": {"type": "array", "items": True},
        "multipleOf": {"type": "number", "exclusiveMinimum": 0},
        "maximum": {"type": "number"},
        "exclusiveMaximum": {"type": "number"},
        "minimum": {"type": "number"},
        "exclusiveMinimum": {"type": "number"},
        "maxLength": {"$ref": "#/definitions/nonNegativeInteger"},
        "minLength": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "pattern": {"type": "string", "format": "regex"},
        "additionalItems": {"$ref": "#"},
        "items": {"anyOf": [{"$ref": "#"}, {"$ref": "#/definitions/schemaArray"}]},
        "maxItems": {"$ref": "#/definitions/nonNegativeInteger"},
        "minItems": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "uniqueItems": {"type": "boolean"},
        "contains": {"$ref": "#"},
        "maxProperties": {"$ref": "#/definitions/nonNegativeInteger"},
        "minProperties": {"$ref": "#/definitions/nonNegativeIntegerDefault0"},
        "required": {"$ref": "#/definitions/stringArray"},
        "additionalProperties": {"$ref": "#"},
        "definitions": {"type": "object", "additionalProperties": {"$ref": "#"}},
        "properties": {"type": "object", "additionalProperties": {"$ref": "#"}},
        "patternProperties": {
            "type": "object",
            "additionalProperties": {"$ref": "#"},
            "propertyNames": {"format": "regex"},
        },
        "dependencies": {
            "type": "object",
            "additionalProperties": {
                "anyOf": [{"$ref": "#"}, {"$ref": "#/definitions/stringArray"}]
            },
        },
        "propertyNames": {"$ref": "#"},
        "const": True,
        "enum": {"type": "array", "items": True},
        "type": {
            "anyOf": [
                {"$ref": "#/definitions/simpleTypes"},
                {
                    "type": "array",
                    "items": {"$ref": "#/definitions/simpleTypes"},
                    "minItems": 1,
                    "uniqueItems": True,
                },
            ]
        },
        "format": {"type": "string"},
        "contentMediaType": {"type": "string"},
        "contentEncoding": {"type": "string"},
        "if": {"$ref": "#"},
        "then": {"$ref": "#"},
        "else": {"$ref": "#"},
        "allOf": {"$ref": "#/definitions/schemaArray"},
        "anyOf": {"$ref": "#/definitions/schemaArray"},
        "oneOf": {"$ref": "#/definitions/schemaArray"},
        "not": {"$ref": "#"},
    },
}

_ALIASES = {
    "https://json-schema.org/draft/2020-12/schema#": DRAFT202012,
    "http://json-schema.org/draft/2020-12/schema": DRAFT202012,
    "http://json-schema.org/draft-07/schema#": DRAFT7,
    "https://json-schema.org/draft-07/schema": DRAFT7,
    "https://json-schema.org/draft-07/schema#": DRAFT7,
}


def lookup(uri: str) -> Any | None:
    """A fresh copy of the meta-schema document at ``uri`` (no fragment), or ``None``."""
    uri = _ALIASES.get(uri, uri)
    if uri == DRAFT7:
        return copy.deepcopy(_META_DRAFT7)
    doc = _META_2020.get(uri)
    return copy.deepcopy(doc) if doc is not None else None

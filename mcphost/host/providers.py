"""Tools in the shapes of the model APIs, names those APIs accept, and their tool calls back.

Layer 4 (pure functions; :class:`~mcphost.host.tools_api.ModelAPI` is the part of
``MCPHost`` built on them).

**Names.** Canonical names stay ``server.tool``. OpenAI, Anthropic and Gemini require tool
names of at most 64 characters from ``[a-zA-Z0-9_-]`` (Gemini also allows ``.``, and a name
must start with a letter or ``_``; server names start with a letter). The alias of a tool is
``server__tool`` with every other character replaced by ``_``; when that is longer than 64
or shared by two tools, it is cut and ends with ``_`` and the first hex digits of the SHA-256
of the canonical name. The aliases are computed over every tool in sorted canonical order, so
they are the same on every run and machine, unique, and the table maps each back.
``call_tool`` accepts the canonical name, the alias, and ``mcp__server__tool``.

**Formats.** ``tools_for(provider)``: ``"openai"`` (Chat Completions function tools),
``"openai-responses"``, ``"anthropic"``, ``"gemini"`` (function declarations, their schema
reduced to the OpenAPI subset Gemini accepts), ``"mcp"`` (the tool objects as listed, with
canonical names) and ``"generic"`` (``{"name": "server.tool", "description", "parameters"}``).

**Dispatch.** ``dispatch(tool_call)`` takes a provider's tool call (OpenAI
``{"id", "function": {"name", "arguments": "<json>"}}``, Responses ``{"type":
"function_call", "call_id", "name", "arguments"}``, Anthropic ``{"type": "tool_use", "id",
"name", "input"}``, Gemini ``{"functionCall": {"name", "args"}}``), calls the tool, and
returns that provider's tool-result message; a failure (unknown tool, arguments that are not
JSON, invalid arguments, a time-out...) is an error result the model can read, unless
``raise_errors=True``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["PROVIDERS", "aliases", "call_parts", "gemini_schema", "provider_of", "tool_result", "tool_shape"]

PROVIDERS: Final = ("openai", "openai-responses", "anthropic", "gemini", "mcp", "generic")
MAX_NAME: Final = 64
_OUTSIDE: Final = re.compile(r"[^A-Za-z0-9_-]")
_HASH: Final = 8


def _digest(canonical: str, n: int) -> str:
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:n]


def aliases(canonical_names: Iterable[str]) -> dict[str, str]:
    """``{canonical: alias}`` for every tool (see the module's docstring)."""
    names = sorted(set(canonical_names))
    base: dict[str, str] = {}
    for name in names:
        server, _, tool = name.partition(".")
        base[name] = _OUTSIDE.sub("_", f"{server}__{tool}")
    counts: dict[str, int] = {}
    for b in base.values():
        counts[b] = counts.get(b, 0) + 1
    # Plain aliases first, all of them: a hashed alias must never take one (a tool named
    # like another's hashed alias keeps its plain name; the hashed one grows instead).
    out = {name: base[name] for name in names if len(base[name]) <= MAX_NAME and counts[base[name]] == 1}
    taken = set(out.values())
    for name in names:
        if name in out:
            continue
        b = base[name]
        n = _HASH
        while True:
            alias = f"{b[:MAX_NAME - n - 1]}_{_digest(name, n)}"
            if alias not in taken:
                break
            n += 4  # taken (same first hex digits, or a plain alias): a longer digest
        taken.add(alias)
        out[name] = alias
    return {name: out[name] for name in names}


# -- Gemini's schema subset -----------------------------------------------------------------

# The fields of Gemini's ``Schema`` object (ai.google.dev/api/caching#Schema) kept as they are;
# ``type``, ``format``, ``enum``, ``properties``, ``required``, ``items`` and ``anyOf`` are
# written by the converter itself. Any other key fails the whole request ("Unknown name").
_GEMINI_KEEP: Final = frozenset({"description", "title", "nullable", "minimum", "maximum", "minItems", "maxItems",
                                 "minLength", "maxLength", "pattern", "default", "minProperties", "maxProperties",
                                 "propertyOrdering", "example"})
# Gemini's Schema.format: "for NUMBER type: float, double; for INTEGER type: int32, int64;
# for STRING type: enum, date-time" -- any other format is a 400 for the whole request.
_GEMINI_FORMATS: Final = {"string": ("enum", "date-time"), "number": ("float", "double"), "integer": ("int32", "int64")}
_GEMINI_TYPES: Final = frozenset({"string", "number", "integer", "boolean", "array", "object"})
_MAX_DEPTH: Final = 32
_MAX_REFS: Final = 8


def _merge_all_of(schema: Mapping[str, Any]) -> dict[str, Any]:
    """``allOf`` folded into one schema (properties and required joined, first value wins)."""
    merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in schema.get("allOf") or ():
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                merged["properties"] = {**value, **(merged.get("properties") or {})}
            elif key == "required" and isinstance(value, list):
                merged["required"] = list(dict.fromkeys([*(merged.get("required") or []), *value]))
            else:
                merged.setdefault(key, value)
    return merged


def gemini_schema(schema: Any, root: Any = None, depth: int = 0, refs: int = 0) -> dict[str, Any]:
    """``schema`` as the OpenAPI-3 subset Gemini's function declarations accept.

    Kept: the fields of Gemini's ``Schema`` (``_GEMINI_KEEP`` and ``type``, ``format``,
    ``enum``, ``properties``, ``required``, ``items``, ``anyOf``). Converted: local
    ``$ref`` inlined (at most 8 deep: a recursive schema ends in a bare ``{"type":
    "object"}``), ``allOf`` merged, ``oneOf`` read as ``anyOf``, a ``null`` branch or type
    as ``nullable``, a type list as ``anyOf``, ``const`` as a one-value ``enum``, a missing
    ``type`` inferred (``properties`` -> object, ``items`` -> array, ``enum`` -> string).
    Repaired, because Gemini rejects the whole request otherwise: a schema with no type
    (nor ``anyOf``) becomes a string, ``enum`` only on strings
    (values as strings; a number or boolean enum moves into the description), ``format``
    only where Gemini knows it, ``properties`` never empty (an object without properties is
    a bare ``{"type": "object"}``), ``required`` only for properties that exist, an array
    always with ``items`` (``{"type": "string"}`` when the schema says nothing).
    Dropped: ``$schema``, ``$id``, ``$defs``/``definitions``, ``additionalProperties``,
    ``patternProperties``, ``not``, ``if``/``then``/``else``, ``exclusiveMinimum``/
    ``exclusiveMaximum``, ``multipleOf``, ``uniqueItems``, ``examples`` and every other
    keyword the model cannot be told through Gemini.
    """
    root = schema if root is None else root
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return {"type": "string"}  # ``true``, or too deep: any value, which a model writes as text
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if refs >= _MAX_REFS or not ref.startswith("#"):
            return {"type": "object"}
        target: Any = root
        for part in ref[2:].split("/") if ref != "#" else ():
            part = part.replace("~1", "/").replace("~0", "~")  # RFC 6901 escapes
            target = target.get(part) if isinstance(target, Mapping) else None
        if not isinstance(target, Mapping):
            return {"type": "object"}
        # Keywords beside "$ref" (a description, most often) apply too (2020-12, 10.2.2.1).
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
        refs += 1
    if "allOf" in schema:
        schema = _merge_all_of(schema)
    out: dict[str, Any] = {}
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null" and k in _GEMINI_TYPES]
        if "null" in kind:
            out["nullable"] = True
        if len(kinds) > 1:
            rest = {k: v for k, v in schema.items() if k != "type"}
            out["anyOf"] = [gemini_schema({**rest, "type": k}, root, depth + 1, refs) for k in kinds]
            if isinstance(schema.get("description"), str):
                out["description"] = schema["description"]
            return out
        kind = kinds[0] if kinds else None
    elif kind == "null":
        out["nullable"] = True
        kind = None
    elif kind not in _GEMINI_TYPES:
        kind = None
    branches = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(branches, list):
        kept = [b for b in branches if isinstance(b, Mapping) and b.get("type") != "null"]
        if len(kept) < len(branches):
            out["nullable"] = True
        if len(kept) == 1 and kind is None:
            inner = gemini_schema({**{k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}, **kept[0]},
                                  root, depth + 1, refs)
            return {**inner, **({"nullable": True} if out.get("nullable") else {})}
        if kept:
            out["anyOf"] = [gemini_schema(b, root, depth + 1, refs) for b in kept]
    values = [schema["const"]] if "const" in schema else schema.get("enum")
    if kind is None and "anyOf" not in out:
        if isinstance(schema.get("properties"), Mapping):
            kind = "object"
        elif "items" in schema:
            kind = "array"
        elif isinstance(values, list) and values and all(isinstance(v, str) for v in values):
            kind = "string"
    if kind is None and "anyOf" not in out:
        # "type: must be specified when not using one_of, any_of or all_of fields": a schema
        # that says nothing of its type takes any value, which a model can write as text.
        kind = "string"
    if kind is not None:
        out["type"] = kind
    for key, value in schema.items():
        if key in _GEMINI_KEEP:
            out[key] = value
    if isinstance(values, list) and values:
        if kind in ("string", None) and all(isinstance(v, (str, int, float)) and not isinstance(v, bool)
                                            for v in values):
            out["type"] = "string"
            out["enum"] = [str(v) for v in values]
        else:  # Gemini's enum is for strings only: the model still reads the values
            allowed = ", ".join(json.dumps(v) for v in values[:50])
            described = out.get("description")
            out["description"] = f"{described} (one of: {allowed})" if isinstance(described, str) else f"one of: {allowed}"
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _GEMINI_FORMATS.get(out.get("type", ""), ()):
        out["format"] = fmt
    if out.get("type") == "object":
        properties = schema.get("properties")
        if isinstance(properties, Mapping) and properties:
            out["properties"] = {str(k): gemini_schema(v, root, depth + 1, refs) for k, v in properties.items()}
            required = schema.get("required")
            if isinstance(required, list):
                defined = [r for r in required if r in out["properties"]]
                if defined:
                    out["required"] = defined
    elif out.get("type") == "array":
        items = schema.get("items")
        if isinstance(items, list):  # draft-4 tuple form: the first position speaks for all
            items = items[0] if items else None
        converted = gemini_schema(items, root, depth + 1, refs) if isinstance(items, Mapping) else {}
        out["items"] = converted if "type" in converted or "anyOf" in converted else {"type": "string"}
    return out


# -- shapes ---------------------------------------------------------------------------------


def tool_shape(provider: str, name: str, tool: Mapping[str, Any]) -> dict[str, Any]:
    """One tool in ``provider``'s shape, named ``name`` (its alias, or canonical name).

    The result shares nothing with ``tool`` (a deep copy): an application may add
    ``strict``, rewrite a schema or cache the list without touching the host's tools."""
    description = tool.get("description") if isinstance(tool.get("description"), str) else ""
    schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), Mapping) else {"type": "object"}
    if provider == "openai":
        shape: dict[str, Any] = {"type": "function",
                                 "function": {"name": name, "description": description, "parameters": schema}}
    elif provider == "openai-responses":
        shape = {"type": "function", "name": name, "description": description, "parameters": schema}
    elif provider == "anthropic":
        shape = {"name": name, "description": description, "input_schema": schema}
    elif provider == "gemini":
        parameters = gemini_schema(schema)
        if parameters.get("type") != "object":  # declarations take an object (MCP's inputSchema is one)
            parameters = {"type": "object"}
        shape = {"name": name, "description": description, "parameters": parameters}
    elif provider == "generic":
        shape = {"name": name, "description": description, "parameters": schema}
    else:  # mcp
        shape = {**tool, "name": name}
    return copy.deepcopy(shape)


def provider_of(call: Mapping[str, Any]) -> str:
    """Which provider a tool call comes from, by its shape."""
    if "functionCall" in call or ("args" in call and "name" in call):
        return "gemini"
    if call.get("type") == "tool_use" or "input" in call:
        return "anthropic"
    if call.get("type") == "function_call" or "call_id" in call:
        return "openai-responses"
    if isinstance(call.get("function"), Mapping):
        return "openai"
    if "name" in call and "arguments" in call:
        return "generic"
    raise ValueError("not a tool call of a known provider (OpenAI, Anthropic, Gemini)")


def call_parts(provider: str, call: Mapping[str, Any]) -> tuple[str, Any, Any]:
    """``(name, arguments, call id)`` of a provider's tool call (arguments as given)."""
    if provider == "gemini":
        inner = call.get("functionCall", call)
        return str(inner.get("name")), inner.get("args") or {}, inner.get("id")
    if provider == "anthropic":
        return str(call.get("name")), call.get("input") or {}, call.get("id")
    if provider == "openai-responses":
        return str(call.get("name")), call.get("arguments") or "{}", call.get("call_id")
    if provider == "openai":
        fn = call["function"]
        return str(fn.get("name")), fn.get("arguments") or "{}", call.get("id")
    return str(call.get("name")), call.get("arguments") or {}, call.get("id")


# Anthropic takes base64 images of these types only (any other is a 400 for the request).
_ANTHROPIC_IMAGES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
#: What a result with no content at all says (Anthropic rejects empty text blocks).
EMPTY: Final = "(no content)"


def _block_text(block: Mapping[str, Any]) -> str:
    """One MCP content block as text for a model that cannot take it as it is."""
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "resource" and isinstance(block.get("resource"), Mapping):
        resource = block["resource"]
        if isinstance(resource.get("text"), str):
            return str(resource["text"])
        return f"[resource {resource.get('uri', '')} {resource.get('mimeType', '')}]".replace(" ]", "]")
    if kind == "resource_link":
        return f"[resource_link {block.get('name', '')} {block.get('uri', '')}]"
    return f"[{kind} {block.get('mimeType', '')}]".replace(" ]", "]")


def _blocks(result: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = result.get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _text(result: Mapping[str, Any]) -> str:
    parts = [_block_text(b) for b in _blocks(result)]
    parts = [p for p in parts if p]
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts)


def tool_result(provider: str, name: str, call_id: Any, result: Mapping[str, Any]) -> dict[str, Any]:
    """The provider's tool-result message for an MCP ``CallToolResult``: text for the model,
    images kept where the provider takes them (Anthropic), structured content where it takes
    JSON (Gemini), ``isError`` marked the provider's way."""
    is_error = result.get("isError") is True
    text = _text(result)
    if provider == "anthropic":
        content: list[dict[str, Any]] = []
        for block in _blocks(result):
            if block.get("type") == "image" and block.get("mimeType") in _ANTHROPIC_IMAGES:
                content.append({"type": "image", "source": {"type": "base64", "media_type": block["mimeType"],
                                                             "data": block.get("data")}})
            else:
                piece = _block_text(block)
                if piece:  # "text content blocks must be non-empty"
                    content.append({"type": "text", "text": piece})
        if not content:
            content = [{"type": "text", "text": text or EMPTY}]
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if is_error:
            out["is_error"] = True
        return out
    if provider == "gemini":
        response: dict[str, Any] = {"error": text} if is_error else {"result": text}
        if not is_error and isinstance(result.get("structuredContent"), Mapping):
            response["result"] = result["structuredContent"]
        reply: dict[str, Any] = {"name": name, "response": response}
        if call_id is not None:  # Gemini pairs a response with its call by id when the call had one
            reply["id"] = call_id
        return {"functionResponse": reply}
    if provider == "openai-responses":
        return {"type": "function_call_output", "call_id": call_id, "output": f"Error: {text}" if is_error else text}
    if provider == "openai":
        return {"role": "tool", "tool_call_id": call_id, "content": f"Error: {text}" if is_error else text}
    return {"name": name, "isError": is_error, "content": text}

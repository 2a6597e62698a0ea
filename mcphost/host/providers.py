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
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in names:
        b = base[name]
        if len(b) <= MAX_NAME and counts[b] == 1:
            alias = b
        else:
            n = _HASH
            while True:
                alias = f"{b[:MAX_NAME - n - 1]}_{_digest(name, n)}"
                if alias not in taken:
                    break
                n += 4  # two canonical names with the same first hex digits: longer ones
        taken.add(alias)
        out[name] = alias
    return out


# -- Gemini's schema subset -----------------------------------------------------------------

_GEMINI_KEEP: Final = frozenset({"type", "description", "enum", "format", "items", "properties", "required",
                                 "nullable", "minimum", "maximum", "minItems", "maxItems", "minLength",
                                 "maxLength", "pattern", "title", "default", "anyOf", "propertyOrdering"})
_MAX_DEPTH: Final = 32


def gemini_schema(schema: Any, root: Any = None, depth: int = 0) -> Any:
    """``schema`` reduced to what Gemini's function declarations take: local ``$ref``s
    inlined (bounded), ``const`` as a one-value ``enum``, a type list with ``null`` as
    ``nullable``; ``$schema``, ``$defs``, ``additionalProperties``, ``patternProperties``,
    ``oneOf``/``allOf``/``not`` and other keywords dropped (the model cannot be told them)."""
    root = schema if root is None else root
    if not isinstance(schema, Mapping) or depth > _MAX_DEPTH:
        return {}
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part) if isinstance(target, Mapping) else None
        return gemini_schema(target, root, depth + 1)
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "const":
            out["enum"] = [value]
        elif key == "type" and isinstance(value, list):
            kinds = [k for k in value if k != "null"]
            out["type"] = kinds[0] if kinds else "string"
            if "null" in value:
                out["nullable"] = True
        elif key == "properties" and isinstance(value, Mapping):
            out["properties"] = {k: gemini_schema(v, root, depth + 1) for k, v in value.items()}
        elif key == "items":
            out["items"] = gemini_schema(value, root, depth + 1)
        elif key == "anyOf" and isinstance(value, list):
            out["anyOf"] = [gemini_schema(v, root, depth + 1) for v in value]
        elif key in _GEMINI_KEEP:
            out[key] = value
    if out.get("type") == "object" and "properties" not in out:
        out["properties"] = {}
    return out


# -- shapes ---------------------------------------------------------------------------------


def tool_shape(provider: str, name: str, tool: Mapping[str, Any]) -> dict[str, Any]:
    """One tool in ``provider``'s shape, named ``name`` (its alias, or canonical name)."""
    description = tool.get("description") if isinstance(tool.get("description"), str) else ""
    schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), Mapping) else {"type": "object"}
    if provider == "openai":
        return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}
    if provider == "openai-responses":
        return {"type": "function", "name": name, "description": description, "parameters": schema}
    if provider == "anthropic":
        return {"name": name, "description": description, "input_schema": schema}
    if provider == "gemini":
        return {"name": name, "description": description, "parameters": gemini_schema(schema)}
    if provider == "generic":
        return {"name": name, "description": description, "parameters": schema}
    return {**tool, "name": name}  # mcp


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


def _text(result: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for block in result.get("content") or []:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        elif block.get("type") == "resource" and isinstance(block.get("resource"), Mapping):
            parts.append(str(block["resource"].get("text", "")))
        elif block.get("type") in ("image", "audio"):
            parts.append(f"[{block.get('type')} {block.get('mimeType', '')}]")
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts)


def tool_result(provider: str, name: str, call_id: Any, result: Mapping[str, Any]) -> dict[str, Any]:
    """The provider's tool-result message for an MCP ``CallToolResult``."""
    is_error = result.get("isError") is True
    text = _text(result)
    if provider == "anthropic":
        content: list[dict[str, Any]] = []
        for block in result.get("content") or []:
            if isinstance(block, Mapping) and block.get("type") == "image":
                content.append({"type": "image", "source": {"type": "base64", "media_type": block.get("mimeType"),
                                                             "data": block.get("data")}})
            elif isinstance(block, Mapping) and block.get("type") == "text":
                content.append({"type": "text", "text": block.get("text", "")})
        if not content:
            content = [{"type": "text", "text": text}]
        out: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
        if is_error:
            out["is_error"] = True
        return out
    if provider == "gemini":
        response: dict[str, Any] = {"error": text} if is_error else {"result": text}
        if not is_error and isinstance(result.get("structuredContent"), Mapping):
            response["result"] = result["structuredContent"]
        return {"functionResponse": {"name": name, "response": response}}
    if provider == "openai-responses":
        return {"type": "function_call_output", "call_id": call_id, "output": f"Error: {text}" if is_error else text}
    if provider == "openai":
        return {"role": "tool", "tool_call_id": call_id, "content": f"Error: {text}" if is_error else text}
    return {"name": name, "isError": is_error, "content": text}


"""The MCP methods of the fake server: lifecycle, lists with pages, prompts, resources,
completion and ``tools/call`` (whose behaviours are in :mod:`.behaviours`).
"""

from __future__ import annotations

import base64
import json
import re
import urllib.parse

from .common import (
    INVALID_PARAMS,
    JSON,
    LATEST_VERSION,
    LOG_LEVELS,
    METHOD_NOT_FOUND,
    MISSING_CAPABILITY,
    PRIVATE_PROMPT_KEYS,
    PRIVATE_RESOURCE_KEYS,
    PRIVATE_TOOL_KEYS,
    RESOURCE_NOT_FOUND,
    SUPPORTED_VERSIONS,
    TASKS_EXTENSION,
    Call,
    Msg,
    RpcError,
    dumps,
)
from .core import ServerCore


class Methods(ServerCore):
    """One ``m_*`` method per MCP request (see ``dispatch.ROUTES``)."""

    def m_initialize(self, call: Call) -> Msg:
        p = call.params
        spec = self.spec
        requested = p.get("protocolVersion")
        if spec.get("protocolVersion") is not None:
            version = spec["protocolVersion"]
        elif requested in SUPPORTED_VERSIONS:
            version = requested
        else:
            version = LATEST_VERSION
        with self._cond:
            if self.era == "both":
                self.connection_era = "legacy"
            self.protocol_version = version
            self.client_capabilities = p.get("capabilities") or {}
            self.client_info = p.get("clientInfo") or {}
        self.record({"event": "initialize", "capabilities": self.client_capabilities})
        info: Msg = {"name": spec.get("name", "fake-mcp"), "version": spec.get("version", "1.0.0")}
        result: Msg = {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": info,
        }
        if spec.get("instructions") is not None:
            result["instructions"] = spec["instructions"]
        return result

    def capabilities(self) -> Msg:
        spec = self.spec
        if spec.get("capabilities") is not None:
            caps: Msg = spec["capabilities"]
            return caps
        caps = {"logging": {}}
        if self.tools or "tools" not in spec:
            caps["tools"] = {"listChanged": True}
        if "prompts" in spec:
            caps["prompts"] = {"listChanged": True}
        if "resources" in spec or "resourceTemplates" in spec:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if "completions" in spec:
            caps["completions"] = {}
        if self._tasks_enabled():
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return caps

    def _tasks_enabled(self) -> bool:
        if self.spec.get("tasks"):
            return True
        return any(
            (t.get("execution") or {}).get("taskSupport") in ("optional", "required")
            for t in self.tools
        )

    def m_ping(self, call: Call) -> Msg:
        return {}

    def m_set_level(self, call: Call) -> Msg:
        level = call.params.get("level")
        if level not in LOG_LEVELS:
            raise RpcError(INVALID_PARAMS, f"Invalid log level: {level!r}")
        with self._cond:
            self.log_level = str(level)
        return {}

    def _paginate(self, call: Call, items: list[Msg], key: str) -> Msg:
        spec = self.spec
        size = spec.get("pageSize")
        cursor = call.params.get("cursor")
        if cursor is not None and spec.get("invalidCursorError"):
            raise RpcError(INVALID_PARAMS, "Invalid cursor")
        start = 0
        if cursor is not None:
            start = _decode_cursor(cursor, key)
        if not size:
            return {key: items[start:]}
        size = int(size)
        result: Msg = {key: items[start : start + size]}
        if spec.get("cursorLoop"):
            result["nextCursor"] = _encode_cursor(key, size)
        elif start + size < len(items):
            result["nextCursor"] = _encode_cursor(key, start + size)
        return result

    def _list(self, call: Call, items: list[Msg], private: frozenset[str], key: str) -> Msg:
        """One page of ``items`` under ``key``, without the fake's private fields."""
        with self._cond:
            public = [_public(item, private) for item in items]
        return self._paginate(call, public, key)

    def m_tools_list(self, call: Call) -> Msg:
        return self._list(call, self.tools, PRIVATE_TOOL_KEYS, "tools")

    def m_prompts_list(self, call: Call) -> Msg:
        return self._list(call, self.prompts, PRIVATE_PROMPT_KEYS, "prompts")

    def m_resources_list(self, call: Call) -> Msg:
        return self._list(call, self.resources, PRIVATE_RESOURCE_KEYS, "resources")

    def m_templates_list(self, call: Call) -> Msg:
        return self._list(call, self.templates, PRIVATE_RESOURCE_KEYS, "resourceTemplates")

    def m_prompts_get(self, call: Call) -> Msg:
        name = call.params.get("name")
        args = call.params.get("arguments") or {}
        with self._cond:
            prompt = next((p for p in self.prompts if p.get("name") == name), None)
        if prompt is None:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name}")
        for a in prompt.get("arguments") or []:
            if a.get("required") and a.get("name") not in args:
                raise RpcError(
                    INVALID_PARAMS, "Missing required argument: {}".format(a.get("name"))
                )
        values = {str(k): str(v) for k, v in args.items()}
        messages = prompt.get("messages")
        if messages is None:
            messages = [{"role": "user", "content": f"Prompt {name}"}]
        out = []
        for original in messages:
            msg = dict(original)
            content = msg.get("content")
            if isinstance(content, str):
                content = {"type": "text", "text": content}
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                content = dict(content, text=_substitute(content["text"], values))
            msg["content"] = content
            out.append(msg)
        result: Msg = {"messages": out}
        if prompt.get("description") is not None:
            result["description"] = prompt["description"]
        return result

    def m_resources_read(self, call: Call) -> Msg:
        uri = call.params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, "uri is required")
        with self._cond:
            resources = list(self.resources)
            templates = list(self.templates)
        for r in resources:
            if r.get("uri") == uri:
                return {"contents": [_content(uri, r, {})]}
        for t in templates:
            pattern, names = _template_regex(str(t.get("uriTemplate", "")))
            m = pattern.match(uri)
            if m:
                values = {
                    name: (g if reserved else urllib.parse.unquote(g))
                    for (name, reserved), g in zip(names, m.groups(), strict=False)
                }
                return {"contents": [_content(uri, t, values)]}
        # 2026-07-28 forbids -32002 and uses -32602 (spec A.7).
        code = INVALID_PARAMS if call.modern else RESOURCE_NOT_FOUND
        raise RpcError(code, "Resource not found", {"uri": uri})

    def m_subscribe(self, call: Call) -> Msg:
        uri = call.params.get("uri")
        with self._cond:
            self.subscriptions.add(str(uri))
        self.record({"event": "subscribe", "uri": uri})
        return {}

    def m_unsubscribe(self, call: Call) -> Msg:
        uri = call.params.get("uri")
        with self._cond:
            self.subscriptions.discard(str(uri))
        self.record({"event": "unsubscribe", "uri": uri})
        return {}

    def m_complete(self, call: Call) -> Msg:
        ref = call.params.get("ref") or {}
        arg = call.params.get("argument") or {}
        key = ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri")
        table = (self.spec.get("completions") or {}).get(key) or {}
        candidates = table.get(arg.get("name")) or []
        prefix = str(arg.get("value") or "")
        values = [str(v) for v in candidates if str(v).startswith(prefix)]
        return {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }

    # ------------------------------------------------------------------- tools

    def m_tools_call(self, call: Call) -> Msg | None:
        spec = self.spec
        name = call.params.get("name")
        with self._cond:
            tool = next((t for t in self.tools if t.get("name") == name), None)
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}")
        support = (tool.get("execution") or {}).get("taskSupport")
        wants_task = isinstance(call.params.get("task"), dict)
        if call.modern:
            # 2026-07-28 tasks extension: the server decides, if the client opted in.
            opted = TASKS_EXTENSION in (call.caps.get("extensions") or {})
            if support == "required" and not opted:
                raise RpcError(
                    MISSING_CAPABILITY,
                    f"Tool {name} runs only as a task",
                    {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
                )
            if opted and support in ("optional", "required"):
                return self._start_modern_task(call, tool)
        elif self._tasks_enabled():
            if support == "required" and not wants_task:
                # 2025-11-25 tasks: a non-task call of a task-required tool gets -32601.
                raise RpcError(METHOD_NOT_FOUND, f"Tool {name} must be called as a task")
            if wants_task and support == "forbidden":
                raise RpcError(METHOD_NOT_FOUND, f"Tool {name} does not support tasks")
            if wants_task:
                return self._start_task(call, tool)
        if self._batch_mode() and spec.get("batchNotifications"):
            call.buffer = []
        outcome = self.run_tool(call, tool)
        if outcome is None:
            return None
        kind, payload = outcome
        if kind == "error":
            raise RpcError(
                int(payload.get("code", -32000)),
                str(payload.get("message", "")),
                payload.get("data"),
            )
        forced = (tool.get("behavior") or {}).get("resultType")
        if call.modern and forced is not None and payload.get("resultType") is None:
            payload = {**payload, "resultType": forced}
        return payload


def _template_regex(template: str) -> tuple[re.Pattern[str], list[tuple[str, bool]]]:
    """Compile a simple RFC 6570 template: ``{var}`` is one path segment, ``{+var}`` anything."""
    parts: list[str] = []
    names: list[tuple[str, bool]] = []
    pos = 0
    for m in re.finditer(r"\{(\+?)([A-Za-z0-9_.]+)\}", template):
        parts.append(re.escape(template[pos : m.start()]))
        reserved = m.group(1) == "+"
        parts.append("(.+)" if reserved else "([^/?#]+)")
        names.append((m.group(2), reserved))
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts) + r"\Z", re.DOTALL), names


def _substitute(text: str, values: dict[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(2)
        return values[name] if name in values else m.group(0)

    return re.sub(r"\{(\+?)([A-Za-z0-9_.\-]+)\}", repl, text)


def _public(entry: Msg, private: frozenset[str]) -> Msg:
    return {k: v for k, v in entry.items() if k not in private}


def _content(uri: str, entry: Msg, values: dict[str, str]) -> Msg:
    out: Msg = {"uri": uri}
    if entry.get("mimeType") is not None:
        out["mimeType"] = entry["mimeType"]
    if entry.get("blob") is not None:
        out["blob"] = _substitute(str(entry["blob"]), values)
    else:
        out["text"] = _substitute(str(entry.get("text", "")), values)
    return out


def _encode_cursor(key: str, offset: int) -> str:
    return base64.urlsafe_b64encode(dumps({"k": key, "o": offset})).decode("ascii")


def _decode_cursor(cursor: JSON, key: str) -> int:
    try:
        data = json.loads(base64.urlsafe_b64decode(str(cursor).encode("ascii")))
        if data["k"] == key and isinstance(data["o"], int) and data["o"] >= 0:
            return int(data["o"])
    except (ValueError, KeyError, TypeError):
        pass
    raise RpcError(INVALID_PARAMS, "Invalid cursor")

"""The model-API part of ``MCPHost``: ``tools_for``, ``dispatch``, ``search_tools``.

Layer 4. :class:`ModelAPI` is mixed into :class:`~mcphost.host.facade.MCPHost`; the shapes,
names and results are :mod:`~mcphost.host.providers`, the ranking
:mod:`~mcphost.host.search`. The alias table and the search index are rebuilt when a tool
list, a server's state or the permissions change (a version key of the servers' route
generations), never on the call path.

``tools_for(provider, mode="search")`` gives, instead of every tool, three meta-tools —
``search_tools`` (words in, the best tools out), ``describe_tool`` (a tool's description
and schema) and ``call_tool`` (a tool by name, with its arguments) — for tool sets too large
for the context window; ``dispatch`` serves them like any tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import MCPHostError, RoutingError, UsageError
from .providers import PROVIDERS, aliases, call_parts, provider_of, tool_result, tool_shape
from .search import ToolIndex

if TYPE_CHECKING:
    from .handle import ServerHandle
    from .router import Router

__all__ = ["META_TOOLS", "ModelAPI", "split_mcp_name"]

#: The client-manager naming of a tool: ``mcp__{server}__{tool}``.
PREFIX = "mcp__"


def split_mcp_name(name: str) -> tuple[str, str]:
    """``mcp__{server}__{tool}`` -> ``(server, tool)`` (the tool may contain ``__``)."""
    if not isinstance(name, str) or not name.startswith(PREFIX) or "__" not in name[len(PREFIX):]:
        raise UsageError(f"{name!r} is not an MCP tool name of the form mcp__server__tool")
    server, _, tool = name[len(PREFIX):].partition("__")
    if not server or not tool:
        raise UsageError(f"{name!r} is not an MCP tool name of the form mcp__server__tool")
    return server, tool

#: The meta-tools of the search mode (MCP tool objects).
META_TOOLS: list[dict[str, Any]] = [
    {"name": "search_tools", "description": "Find the tools that can do something: describe the task in a few words.",
     "inputSchema": {"type": "object", "properties": {
         "query": {"type": "string", "description": "what the tool should do"},
         "limit": {"type": "integer", "description": "how many tools at most (default 5)"}}, "required": ["query"]}},
    {"name": "describe_tool", "description": "The description and input schema of one tool found by search_tools.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    {"name": "call_tool", "description": "Call one tool found by search_tools with its arguments.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                     "required": ["name"]}},
]
_META = {t["name"] for t in META_TOOLS}


class _Tables:
    def __init__(self, tools: dict[str, tuple[str, dict[str, Any]]]) -> None:
        self.tools = tools  # canonical -> (server, tool)
        self.alias = aliases(tools)
        self.canonical = {a: c for c, a in self.alias.items()}
        self.index: ToolIndex | None = None


class ModelAPI:
    """``tools_for``, ``dispatch``, ``search_tools``, ``resolve_tool_name``."""

    _servers: dict[str, ServerHandle]
    _router: Router
    _model_tables: tuple[Any, _Tables] | None = None

    if TYPE_CHECKING:
        def get_tools(self, server: str | None = None, *, include_unavailable: bool = False) -> dict[str, Any]: ...

    def _tables(self) -> _Tables:
        key = (tuple((n, h.route_generation) for n, h in self._servers.items()), id(self._router.permissions))
        cached = self._model_tables
        if cached is not None and cached[0] == key:
            return cached[1]
        tools: dict[str, tuple[str, dict[str, Any]]] = {}
        for server, info in self.get_tools().items():
            for tool in info["tools"]:
                tools[f"{server}.{tool['name']}"] = (server, tool)
        tables = _Tables(tools)
        self._model_tables = (key, tables)
        return tables

    def resolve_tool_name(self, name: str) -> str:
        """The canonical ``server.tool`` of ``name``: canonical, an alias given by
        :meth:`tools_for`, or Claude Code's ``mcp__server__tool`` (with the tool's name as
        listed, or as its alias spells it); ``RoutingError`` when none matches."""
        if not isinstance(name, str):
            raise RoutingError(f"a tool name is a string, not {type(name).__name__}")
        tables = self._tables()
        if name in tables.tools:
            return name
        canonical = tables.canonical.get(name)  # before mcp__: a server may be named "mcp"
        if canonical is not None:
            return canonical
        if name.startswith(PREFIX):
            canonical = tables.canonical.get(name[len(PREFIX):])  # mcp__server__tool_with_replaced_chars
            if canonical is not None:
                return canonical
            try:
                server, tool = split_mcp_name(name)
            except UsageError:
                pass
            else:
                return f"{server}.{tool}"
        raise RoutingError(f"unknown tool {name!r} (neither server.tool nor a name given by tools_for())")

    def tools_for(self, provider: str = "openai", *, mode: str = "all", server: str | None = None) -> list[dict[str, Any]]:
        """The tools of the ready servers (or of ``server``) in ``provider``'s shape
        (``openai``, ``openai-responses``, ``anthropic``, ``gemini``, ``mcp``, ``generic``),
        named as that API accepts; ``mode="search"``: the three meta-tools instead."""
        if provider not in PROVIDERS:
            raise UsageError(f"unknown provider {provider!r} (one of {', '.join(PROVIDERS)})")
        if mode == "search":
            return [tool_shape(provider, t["name"], t) for t in META_TOOLS]
        if mode != "all":
            raise UsageError(f"mode must be 'all' or 'search', not {mode!r}")
        tables = self._tables()
        out = []
        for canonical, (owner, tool) in tables.tools.items():
            if server is not None and owner != server:
                continue
            named = canonical if provider in ("mcp", "generic") else tables.alias[canonical]
            out.append(tool_shape(provider, named, tool))
        return out

    def search_tools(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """The ``limit`` tools that best match ``query`` (BM25 over names, descriptions and
        parameters): ``[{"name": "server.tool", "score", "description"}]``."""
        if not isinstance(query, str):
            raise UsageError("search_tools(query): query must be a string")
        tables = self._tables()
        if tables.index is None:
            tables.index = ToolIndex((c, s, t) for c, (s, t) in tables.tools.items())
        return tables.index.search(query, max(1, min(int(limit), 50)))

    async def dispatch(self, tool_call: Mapping[str, Any], *, provider: str | None = None,
                       raise_errors: bool = False) -> dict[str, Any]:
        """Run a provider's tool call and return that provider's tool-result message (see
        :mod:`mcphost.host.providers`). A failure is an error result for the model, unless
        ``raise_errors``."""
        if not isinstance(tool_call, Mapping):
            raise UsageError(f"dispatch() takes a provider's tool call (a mapping), not {type(tool_call).__name__}")
        if provider is not None and provider not in PROVIDERS:
            raise UsageError(f"unknown provider {provider!r} (one of {', '.join(PROVIDERS)})")
        try:
            provider = provider or provider_of(tool_call)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        name, arguments, call_id = call_parts(provider, tool_call)
        try:
            if isinstance(arguments, str):
                try:
                    arguments = json.loads(arguments or "{}")
                except ValueError as exc:
                    raise UsageError(f"the arguments of {name!r} are not JSON: {exc}") from None
            if not isinstance(arguments, Mapping):
                raise UsageError(f"the arguments of {name!r} must be a JSON object")
            result = await self._run(name, dict(arguments))
        except MCPHostError as exc:
            if raise_errors:
                raise
            result = {"content": [{"type": "text", "text": str(exc)}], "isError": True}
        return tool_result(provider, name, call_id, result)

    async def _run(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        host = cast(Any, self)
        if name in _META:
            if name == "search_tools":
                found = self.search_tools(str(arguments.get("query", "")), limit=int(arguments.get("limit") or 5))
                return {"content": [{"type": "text", "text": json.dumps(found, ensure_ascii=False)}]}
            target = self.resolve_tool_name(str(arguments.get("name", "")))
            if name == "describe_tool":
                found_tool = self._tables().tools.get(target)
                if found_tool is None:
                    raise RoutingError(f"unknown tool {target!r}")
                tool = found_tool[1]
                text = json.dumps({"name": target, "description": tool.get("description", ""),
                                   "inputSchema": tool.get("inputSchema", {})}, ensure_ascii=False)
                return {"content": [{"type": "text", "text": text}]}
            inner = arguments.get("arguments") or {}
            if isinstance(inner, str):  # models often pass the arguments as a JSON string
                try:
                    inner = json.loads(inner or "{}")
                except ValueError as exc:
                    raise UsageError(f"call_tool: the arguments of {target!r} are not JSON: {exc}") from None
            if not isinstance(inner, Mapping):
                raise UsageError("call_tool: arguments must be an object")
            return cast(dict[str, Any], await host.call_tool(target, dict(inner)))
        return cast(dict[str, Any], await host.call_tool(self.resolve_tool_name(name), arguments))

    def _resolve_alias(self, name: str) -> str | None:
        """For the router: the canonical name of an alias, or None."""
        try:
            canonical = self.resolve_tool_name(name)
        except (RoutingError, UsageError):
            return None
        return canonical if canonical != name else None

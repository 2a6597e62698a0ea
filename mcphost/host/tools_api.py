"""The model-API part of ``MCPHost``: ``tools_for``, ``dispatch``, ``search_tools``.

Layer 4. :class:`ModelAPI` is one of the collaborators :class:`~mcphost.host.facade.MCPHost`
delegates to; the shapes,
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
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..errors import MCPHostError, RoutingError, UsageError
from .providers import PROVIDERS, aliases, call_parts, provider_of, tool_result, tool_shape
from .search_semantic import SEMANTIC_DEPTH, Embedder, SemanticIndex, is_async

if TYPE_CHECKING:
    from .handle import ServerHandle
    from .router import Router
    from .search import ToolIndex

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
    {"name": "search_tools",
     "description": "Find the tools that can do a task. Describe the task in a few plain words: the action and "
                    "the thing it acts on, and where if it matters (\"read a text file\", \"create a GitHub issue\", "
                    "\"search the web for news\"). Use the words a tool would use, not the whole request; search "
                    "again with other words if nothing fits. Answers the best tools, best first.",
     "inputSchema": {"type": "object", "properties": {
         "query": {"type": "string", "description": "the task in a few words: action, object, and the service if known"},
         "limit": {"type": "integer", "description": "how many tools at most (default 5, at most 50)"}},
         "required": ["query"]}},
    {"name": "describe_tool", "description": "The description and input schema of one tool found by search_tools.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
    {"name": "call_tool", "description": "Call one tool found by search_tools with its arguments.",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
                     "required": ["name"]}},
]
_META = {t["name"] for t in META_TOOLS}


def _limit(value: object) -> int:
    """A model's ``limit``: an integer, or a string or float of one; 5 when absent."""
    if value is None or value == "":
        return 5
    try:
        return int(str(value)) if not isinstance(value, (int, float)) else int(value)
    except (TypeError, ValueError, OverflowError):
        raise UsageError(f"search_tools: limit must be an integer, not {value!r}") from None


class _Tables:
    def __init__(self, tools: dict[str, tuple[str, dict[str, Any]]]) -> None:
        self.tools = tools  # canonical -> (server, tool)
        self.alias = aliases(tools)
        self.canonical = {a: c for c, a in self.alias.items()}
        self.index: ToolIndex | None = None
        self.domains: dict[str, tuple[str, ...]] = {}
        self.semantic: SemanticIndex | None = None


class ModelAPI:
    """``tools_for``, ``dispatch``, ``search_tools``, ``resolve_tool_name``.

    Args:
        servers: the host's handles by name.
        router: the host's router (its permissions are part of the tables' version).
        get_tools: the host's ``get_tools()`` (what the ready servers offer, permitted).
        call_tool: the host's ``call_tool(name, arguments)``.
        tool_search: the application's embedding function, or None (lexical search only).
    """

    def __init__(
        self,
        servers: Mapping[str, ServerHandle],
        router: Router,
        get_tools: Callable[[], Mapping[str, Any]],
        call_tool: Callable[[str, dict[str, Any]], Awaitable[Any]],
        tool_search: Embedder | None = None,
    ) -> None:
        self._servers = servers
        self._router = router
        self._get_tools = get_tools
        self._call_tool = call_tool
        self._model_tables: tuple[Any, _Tables] | None = None
        self._tool_search = tool_search

    def _tables(self) -> _Tables:
        key = (tuple((n, h.route_generation) for n, h in self._servers.items()), id(self._router.permissions))
        cached = self._model_tables
        if cached is not None and cached[0] == key:
            return cached[1]
        tools: dict[str, tuple[str, dict[str, Any]]] = {}
        for server, info in self._get_tools().items():
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
        """The ``limit`` tools that best match ``query`` (field-weighted BM25 over names,
        descriptions, parameters, server names and ``domains``; fused with the
        ``tool_search`` embeddings when given, which must then be sync):
        ``[{"name": "server.tool", "score", "description"}]``."""
        index, limit = self._search_index(query, limit)
        if self._tool_search is None:
            return index.search(query, limit)
        if is_async(self._tool_search):
            raise UsageError("tool_search is async: use await host.search_tools_async(...)")
        lexical = index.ranked(query, SEMANTIC_DEPTH)
        semantic = self._semantic_index(index).rank_sync(query)
        from .search import fuse

        return [index.hit(i, score) for i, score in fuse([i for i, _ in lexical], semantic)[:limit]]

    async def search_tools_async(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """:meth:`search_tools` for any ``tool_search`` (sync or async); what the
        ``search_tools`` meta-tool runs."""
        index, limit = self._search_index(query, limit)
        if self._tool_search is None:
            return index.search(query, limit)
        lexical = index.ranked(query, SEMANTIC_DEPTH)
        semantic = await self._semantic_index(index).rank(query)
        from .search import fuse

        return [index.hit(i, score) for i, score in fuse([i for i, _ in lexical], semantic)[:limit]]

    def _search_index(self, query: object, limit: object) -> tuple[ToolIndex, int]:
        if not isinstance(query, str):
            raise UsageError(f"search_tools(query): query must be a string, not {type(query).__name__}")
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise UsageError(f"search_tools(limit): limit must be an integer, not {type(limit).__name__}")
        # The search room (its word tables) loads with the first search: a host that only
        # calls tools never pays for it.
        from .search import ToolIndex

        tables = self._tables()
        domains = {name: tuple(handle.config.domains) for name, handle in self._servers.items()}
        if tables.index is None or tables.domains != domains:  # domains change in place on reload
            tables.index = ToolIndex(((c, s, t) for c, (s, t) in tables.tools.items()), domains)
            tables.domains = domains
            tables.semantic = None
        return tables.index, max(1, min(limit, 50))

    def _semantic_index(self, index: ToolIndex) -> SemanticIndex:
        tables = self._tables()
        if tables.semantic is None:
            assert self._tool_search is not None
            from .search import tool_text

            tables.semantic = SemanticIndex(self._tool_search, [tool_text(*tables.tools[name]) for name in index.names])
        return tables.semantic

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
        if name in _META:
            if name == "search_tools":
                found = await self.search_tools_async(str(arguments.get("query", "")), limit=_limit(arguments.get("limit")))
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
            return cast(dict[str, Any], await self._call_tool(target, dict(inner)))
        return cast(dict[str, Any], await self._call_tool(self.resolve_tool_name(name), arguments))

    def resolve_alias(self, name: str) -> str | None:
        """For the router: the canonical name of an alias, or None."""
        try:
            canonical = self.resolve_tool_name(name)
        except (RoutingError, UsageError):
            return None
        return canonical if canonical != name else None

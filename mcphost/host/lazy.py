"""The host's optional rooms, built on first use: memory close to a bare client.

Layer 4. A host that only starts servers and calls tools never loads the model-API room
(:mod:`~mcphost.host.tools_api`, with :mod:`~mcphost.host.providers` and
:mod:`~mcphost.host.search_semantic`): :class:`LazyModelAPI` holds what
:class:`~mcphost.host.tools_api.ModelAPI` is built from, builds it the first time
``tools_for``, ``dispatch``, ``search_tools`` or an alias needs it, and hands each call to it.
(The skills, the Prometheus text and the reload room load the same way, each where it is
used; ``tests/host/test_lazy_rooms.py`` keeps them unloaded by a plain host.)
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..types import Embedder
    from .handle import ServerHandle
    from .router import Router
    from .tools_api import ModelAPI

__all__ = ["LazyModelAPI"]


class LazyModelAPI:
    """A host's :class:`~mcphost.host.tools_api.ModelAPI`, built on first use, then kept."""

    __slots__ = ("_api", "_parts")

    def __init__(
        self,
        servers: Mapping[str, ServerHandle],
        router: Router,
        get_tools: Callable[[], Mapping[str, Any]],
        call_tool: Callable[[str, dict[str, Any]], Awaitable[Any]],
        tool_search: Embedder | None,
    ) -> None:
        self._parts: tuple[Any, ...] = (servers, router, get_tools, call_tool, tool_search)
        self._api: ModelAPI | None = None

    @property
    def api(self) -> ModelAPI:
        """The ModelAPI itself (built now if this is its first use)."""
        api = self._api
        if api is None:
            from .tools_api import ModelAPI

            servers, router, get_tools, call_tool, tool_search = self._parts
            api = self._api = ModelAPI(servers, router, get_tools, call_tool, tool_search=tool_search)
        return api

    def tools_for(self, provider: str = "openai", *, mode: str = "all",
                  server: str | None = None) -> list[dict[str, Any]]:
        """:meth:`ModelAPI.tools_for <mcphost.host.tools_api.ModelAPI.tools_for>`."""
        return self.api.tools_for(provider, mode=mode, server=server)

    def search_tools(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """:meth:`ModelAPI.search_tools <mcphost.host.tools_api.ModelAPI.search_tools>`."""
        return self.api.search_tools(query, limit=limit)

    async def search_tools_async(self, query: str, *, limit: int = 5) -> list[dict[str, Any]]:
        """:meth:`ModelAPI.search_tools_async <mcphost.host.tools_api.ModelAPI.search_tools_async>`."""
        return await self.api.search_tools_async(query, limit=limit)

    async def dispatch(self, tool_call: Mapping[str, Any], *, provider: str | None = None,
                       raise_errors: bool = False) -> dict[str, Any]:
        """:meth:`ModelAPI.dispatch <mcphost.host.tools_api.ModelAPI.dispatch>`."""
        return await self.api.dispatch(tool_call, provider=provider, raise_errors=raise_errors)

    def resolve_tool_name(self, name: str) -> str:
        """:meth:`ModelAPI.resolve_tool_name <mcphost.host.tools_api.ModelAPI.resolve_tool_name>`."""
        return self.api.resolve_tool_name(name)

    def resolve_alias(self, name: str) -> str | None:
        """The router's resolver of names that are not ``server.tool`` (a model's alias,
        ``mcp__server__tool``): :meth:`ModelAPI.resolve_alias <mcphost.host.tools_api.ModelAPI.resolve_alias>`."""
        return self.api.resolve_alias(name)

"""How the gateway names what its servers offer, and how it reads those names back.

Layer 5. Four modes (``mcphost serve --naming``):

- ``dot`` (default): the host's own names, ``server.tool`` and ``server.prompt``;
- ``underscore``: ``server__tool``, for clients that refuse dots in tool names;
- ``pass-through``: one server only, its names unchanged (the gateway is transparent: what
  a client sees is what the server offers, so the server's own tests run against it);
- ``search``: tools/list gives the host's three search meta-tools (``search_tools``,
  ``describe_tool``, ``call_tool``) instead of every tool, for very large tool sets;
  prompts are named as in ``dot``.

Resource URIs are never renamed: the host routes a read by its URI.
"""

from __future__ import annotations

from typing import Final

from ..errors import RoutingError, UsageError

__all__ = ["MODES", "Naming"]

MODES: Final = ("dot", "underscore", "pass-through", "search")


class Naming:
    """One naming mode; ``only`` is the one server of ``pass-through``."""

    __slots__ = ("mode", "only")

    def __init__(self, mode: str = "dot", only: str | None = None) -> None:
        if mode not in MODES:
            raise UsageError(f"naming must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.only = only

    def bind(self, servers: list[str]) -> None:
        """Learn the configured servers: ``pass-through`` needs exactly one."""
        if self.mode == "pass-through" and self.only is None:
            if len(servers) != 1:
                raise UsageError(f"naming 'pass-through' serves exactly one server; the configuration has "
                                 f"{len(servers)}")
            self.only = servers[0]

    def outward(self, server: str, name: str) -> str:
        """The name a client sees of ``server``'s ``name``."""
        if self.mode == "pass-through":
            return name
        if self.mode == "underscore":
            return f"{server}__{name}"
        return f"{server}.{name}"

    def inward(self, name: str) -> tuple[str, str]:
        """``(server, name)`` of a name a client gave (``RoutingError``: not one of ours)."""
        if self.only is not None:
            return self.only, name
        sep = "__" if self.mode == "underscore" else "."
        server, found, inner = name.partition(sep)
        if not found or not server or not inner:
            example = f"server{sep}name"
            raise RoutingError(f"unknown name {name[:100]!r}: names here are {example}")
        return server, inner

    def serves(self, server: str) -> bool:
        """Does a client see ``server`` at all?"""
        return self.mode != "pass-through" or server == self.only

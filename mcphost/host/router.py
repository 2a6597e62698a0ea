"""Which server a name or URI goes to: qualified names, resource URIs, the route cache.

Layer 4. Qualified names are ``server.name``, split on the first dot (tool names may
contain dots; server names may not). A resource URI goes to the one server listing it
exactly, else to the one whose RFC 6570 template matches; several is ambiguous. Tool routes
are cached: a :class:`ToolRoute` holds what ``call_tool`` needs, valid while its server's
route generation is unchanged (same tools, same state, same session).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ..bounds import clip
from ..errors import PermissionDeniedError, RoutingError, UsageError
from ..policy import retry_safe_tool
from ..protocol.uritemplate import compile_template
from .handle import ServerHandle
from .observe import refused
from .permissions import Permissions, resource_name

if TYPE_CHECKING:
    from ..client.session import ClientSession

__all__ = ["Router", "ToolRoute"]

_ROUTE_CACHE: Final = 4096
#: Names listed in an error message, at most (the rest are counted).
_LISTED: Final = 20


def _listing(names: Iterable[str]) -> str:
    """Sorted names for an error message: at most 20, the rest counted."""
    ordered = sorted(names)
    if not ordered:
        return "none"
    shown = ", ".join(clip(n, 100) for n in ordered[:_LISTED])
    more = len(ordered) - _LISTED
    return f"{shown} and {more} more" if more > 0 else shown


logger = logging.getLogger("mcphost.host.router")

class ToolRoute:
    """What ``call_tool`` needs of one tool, worked out once per tool list of its server."""

    __slots__ = ("generation", "handle", "has_output", "histogram", "name", "pending", "plain", "retry_safe",
                 "session", "stats", "task_support", "tool", "valid")

    def __init__(self, handle: ServerHandle, session: ClientSession, name: str, tool: dict[str, Any]) -> None:
        self.handle = handle
        self.generation = handle.route_generation
        self.session = session
        self.name = name
        self.tool = tool
        #: The input validator's ``is_valid``, found on first use; False when there is none.
        self.valid: Any = None
        self.has_output = "outputSchema" in tool
        execution = tool.get("execution")
        self.task_support = execution.get("taskSupport") if isinstance(execution, dict) else None
        self.stats = handle.metrics.tool(name)
        #: The tool's latency histogram and its list of pending values: ``call_tool``
        #: appends each latency (integer nanoseconds) and folds at ``PENDING``, no call.
        self.histogram = self.stats.histogram
        self.pending = self.histogram.pending
        #: Neither an outputSchema to check nor a task it must run as.
        self.plain = not self.has_output and self.task_support != "required"
        #: Annotated read-only or idempotent: a transient failure may be tried again.
        self.retry_safe = retry_safe_tool(tool)


class Router:
    """Routes over the host's servers (``servers``: name -> handle, shared with the host)."""

    def __init__(self, servers: Mapping[str, ServerHandle]) -> None:
        self.servers = servers
        self.routes: dict[str, ToolRoute] = {}
        #: The application's permissions (None: every tool is allowed).
        self.permissions: Permissions | None = None
        #: Aliases of tools for model APIs -> canonical names (set by the host).
        self.resolve: Callable[[str], str | None] | None = None

    def set_permissions(self, permissions: Permissions | None) -> None:
        """New permissions: cached routes were checked against the old ones."""
        if permissions is not None and not isinstance(permissions, Permissions):
            raise UsageError(f"permissions must be a mcphost Permissions (CapabilitySet), not {type(permissions).__name__}")
        self.permissions = permissions
        self.routes.clear()

    def visible_tools(self, handle: ServerHandle, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``tools`` of ``handle`` without those the permissions deny."""
        permissions = self.permissions
        if permissions is None:
            return list(tools)
        return [t for t in tools if permissions.allows(handle.name, str(t.get("name")))]

    def handle(self, server: str) -> ServerHandle:
        handle = self.servers.get(server) if isinstance(server, str) else None
        if handle is None:
            shown = clip(server, 100) if isinstance(server, str) else server
            raise refused(RoutingError(f"unknown server {shown!r} (servers: {_listing(self.servers)})"))
        return handle

    def split(self, qualified: str, what: str) -> tuple[ServerHandle, str]:
        if not isinstance(qualified, str) or "." not in qualified:
            shown = clip(qualified, 100) if isinstance(qualified, str) else qualified
            raise refused(RoutingError(f"{what} name {shown!r} must be qualified as 'server.{what}'"))
        server, _, name = qualified.partition(".")
        if not name:
            raise refused(RoutingError(f"{what} name {qualified!r} has nothing after 'server.'"))
        return self.handle(server), name

    def tool(self, name: str) -> ToolRoute:
        """Resolve ``server.tool`` (the slow path, raising the routing errors) and cache it;
        a name given by ``tools_for()`` or ``mcp__server__tool`` is resolved first."""
        resolve = self.resolve
        if resolve is not None and isinstance(name, str) and name.partition(".")[0] not in self.servers:
            canonical = resolve(name)
            if canonical is not None:
                route = self.tool(canonical)
                self.routes[name] = route  # the alias is cached like the name it stands for
                return route
        handle, tool_name = self.split(name, "tool")
        session = handle.require_ready()  # a server that is not running says so first
        tool = handle.tool_index.get(tool_name)
        if tool is None:
            if tool_name in handle.hidden_tools:
                raise refused(PermissionDeniedError(
                    f"tool {tool_name!r} is denied by the server's tools filter", server=handle.name
                ))
            # Bounded: a suggestion is worth a few milliseconds, not a stall of the loop.
            import difflib  # only a mistyped name pays for loading it

            close = difflib.get_close_matches(tool_name[:200], list(handle.tool_index)[:2000], n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise refused(RoutingError(
                f"unknown tool {clip(tool_name, 100)!r} (tools of {handle.name}: "
                f"{_listing(handle.tool_index)}){hint}",
                server=handle.name,
            ))
        permissions = self.permissions
        if permissions is not None and not permissions.allows(handle.name, tool_name):
            logger.warning("%s: calling tool %r is not permitted", handle.name, clip(tool_name, 100),
                           extra={"event": "permission_denied", "server": handle.name, "tool": tool_name})
            raise refused(PermissionDeniedError(
                f"calling tool {clip(tool_name, 100)!r} is not permitted (no execute right on "
                f"{clip(resource_name(handle.name, tool_name), 200)!r})", server=handle.name))
        route = ToolRoute(handle, session, tool_name, tool)
        if len(self.routes) >= _ROUTE_CACHE:
            self.routes.clear()
        self.routes[name] = route
        return route

    def prompt(self, name: str) -> tuple[ServerHandle, str]:
        handle, prompt_name = self.split(name, "prompt")
        handle.require_ready()
        known = {str(p.get("name")) for p in handle.prompts}
        if prompt_name not in known:
            raise refused(RoutingError(
                f"unknown prompt {clip(prompt_name, 100)!r} (prompts of {handle.name}: {_listing(known)})",
                server=handle.name,
            ))
        return handle, prompt_name

    def resource(self, uri: str, server: str | None = None, *, quiet: bool = False) -> ServerHandle:
        """The server that serves ``uri``: exact URIs first, then templates (``quiet``: a
        lookup, not a request: a routing error is not logged as a refused request)."""
        try:
            return self.serving(uri, server)
        except RoutingError as exc:
            raise (exc if quiet else refused(exc)) from None

    def serving(self, uri: str, server: str | None = None) -> ServerHandle:
        """:meth:`resource` without its log record."""
        if server is not None:
            if not isinstance(server, str) or server not in self.servers:
                raise RoutingError(f"unknown server {clip(server, 100) if isinstance(server, str) else server!r} "
                                   f"(servers: {_listing(self.servers)})")
            return self.servers[server]
        exact = _first_by_priority([h for h in self.servers.values() if any(r.get("uri") == uri for r in h.resources)])
        if len(exact) == 1:
            return exact[0]
        if len(exact) > 1:
            names = ", ".join(h.name for h in exact)
            raise RoutingError(f"resource {uri!r} is offered by several servers of the same priority ({names}); "
                               "pass server= or give them different priorities")
        matched = []
        for h in self.servers.values():
            for tpl in h.resourceTemplates:
                text = tpl.get("uriTemplate")
                if not isinstance(text, str):
                    continue
                try:
                    if compile_template(text).match(uri) is not None:
                        matched.append(h)
                        break
                except ValueError:
                    continue
        matched = _first_by_priority(matched)
        if len(matched) == 1:
            return matched[0]
        if len(matched) > 1:
            names = ", ".join(h.name for h in matched)
            raise RoutingError(f"resource {uri!r} matches templates of several servers of the same priority "
                               f"({names}); pass server= or give them different priorities")
        raise RoutingError(f"no server offers resource {clip(str(uri), 200)!r} (no exact URI or template matches)")

    def template(self, uri: str) -> ServerHandle:
        """The server of a resource template given by its text (completion refs)."""
        matched = [h for h in self.servers.values() if any(
            t.get("uriTemplate") == uri for t in h.resourceTemplates)]
        if len(matched) == 1:
            return matched[0]
        return self.resource(uri)


def _first_by_priority(handles: list[ServerHandle]) -> list[ServerHandle]:
    """The servers of the best (lowest) ``priority`` among ``handles``: one when it decides."""
    if len(handles) < 2:
        return handles
    best = min(h.config.priority for h in handles)
    return [h for h in handles if h.config.priority == best]

"""Which tools the application lets the host call: rights on ``mcp:{server}:{tool}``.

Layer 4 (pure). A :class:`Permissions` (also importable as ``CapabilitySet``, the name the
client-manager API uses) holds grants and denials of rights (``execute`` is the one the
host checks) on resources named ``mcp:{server}:{tool}``; a resource pattern may use shell
globs (``mcp:fs:read_*``, ``mcp:github:*``). Denials win over grants; what is not granted
is denied. ``MCPHost(permissions=...)`` (or ``host.permissions = ...`` later) turns it on:
every call is checked before anything is sent (``PermissionDeniedError``, logged as
``permission_denied``), and denied tools are absent from ``get_tools()`` and everything
built on it. Without one, every tool is allowed. A server's own ``tools`` allow/deny filter
in ``mcp.json`` is read into the same rules (:meth:`Permissions.from_tool_filter`) and
applies as well: a tool must pass both.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable

from ..config.model import ToolFilter
from ..errors import UsageError

__all__ = ["CapabilitySet", "Permissions", "resource_name"]

EXECUTE = "execute"


def resource_name(server: str, tool: str) -> str:
    """The resource a tool call needs a right on."""
    return f"mcp:{server}:{tool}"


class Permissions:
    """Grants and denials of rights on resources (globs allowed); denials win."""

    def __init__(self, grants: Iterable[str] | None = None) -> None:
        self._grants: dict[str, list[re.Pattern[str]]] = {}
        self._denials: dict[str, list[re.Pattern[str]]] = {}
        for pattern in grants or ():
            self.grant(pattern)

    @staticmethod
    def _compile(pattern: str) -> re.Pattern[str]:
        if not isinstance(pattern, str) or not pattern:
            raise UsageError(f"a permission names a resource such as 'mcp:server:tool', not {pattern!r}")
        return re.compile(fnmatch.translate(pattern))

    def grant(self, resource: str, *rights: str) -> Permissions:
        """Allow ``rights`` (default ``execute``) on ``resource`` (a pattern); returns self."""
        compiled = self._compile(resource)
        for right in _rights(rights):
            self._grants.setdefault(right, []).append(compiled)
        return self

    def deny(self, resource: str, *rights: str) -> Permissions:
        """Refuse ``rights`` (default ``execute``) on ``resource``, whatever is granted."""
        compiled = self._compile(resource)
        for right in _rights(rights):
            self._denials.setdefault(right, []).append(compiled)
        return self

    def has(self, resource: str, right: str = EXECUTE) -> bool:
        """Whether ``right`` on ``resource`` is granted and not denied."""
        if not isinstance(resource, str) or not isinstance(right, str):
            raise UsageError(f"Permissions.has(resource, right) takes strings, not {type(resource).__name__} "
                             f"and {type(right).__name__}")
        if any(p.match(resource) for p in self._denials.get(right, ())):
            return False
        return any(p.match(resource) for p in self._grants.get(right, ()))

    def allows(self, server: str, tool: str, right: str = EXECUTE) -> bool:
        return self.has(resource_name(server, tool), right)

    @classmethod
    def from_tool_filter(cls, server: str, tools: ToolFilter) -> Permissions:
        """The rules of a server's ``tools`` filter in ``mcp.json``: its ``allow`` globs
        granted (every tool when there are none), its ``deny`` globs denied."""
        if not isinstance(server, str) or not isinstance(tools, ToolFilter):
            raise UsageError("Permissions.from_tool_filter(server, tools) takes a server name and a ToolFilter")
        rules = cls()
        for pattern in tools.allow or ("*",):
            rules.grant(resource_name(server, pattern))
        for pattern in tools.deny:
            rules.deny(resource_name(server, pattern))
        return rules


def _rights(rights: tuple[str, ...]) -> tuple[str, ...]:
    if not all(isinstance(right, str) for right in rights):
        raise UsageError(f"rights are strings such as {EXECUTE!r}, not {rights!r}")
    return rights or (EXECUTE,)


#: The client-manager API's name for the same thing.
CapabilitySet = Permissions

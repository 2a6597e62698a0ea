"""What each server offers: discovery, paging, and the refresh on ``list_changed``.

Layer 4. :func:`list_all` is the one paging helper (every list, tasks included): it follows
``nextCursor`` up to a page cap and stops on a repeated cursor. :class:`Registry` lists
every kind a server declares when it starts, publishes the lists whole, and re-lists a kind
when the server says it changed: a short window coalesces a burst of ``list_changed`` into
one refresh, and a change during a refresh causes exactly one more.

A name listed twice (two tools called ``search``) is the server's mistake: with
``validate_messages="strict"`` it refuses the listing (a ``ProtocolError``: which of the two
would be called?); otherwise the first definition is kept, the others dropped, and one
WARNING says so once per server and kind -- a server is not lost over a duplicate.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from ..bounds import CONTROL, NAME_RULE, Bounds, clip
from ..errors import MCPHostError, ProtocolError, ServerError
from ..protocol.jsonrpc import METHOD_NOT_FOUND
from ..protocol.lifecycle import ServerState
from .handle import ServerHandle
from .permissions import Permissions

if TYPE_CHECKING:
    from ..client.session import ClientSession

__all__ = ["LIST_KINDS", "Registry", "list_all"]

logger = logging.getLogger("mcphost.host.registry")

# kind -> (method, result key, capability)
LIST_KINDS: Final = {
    "tools": ("tools/list", "tools", "tools"),
    "prompts": ("prompts/list", "prompts", "prompts"),
    "resources": ("resources/list", "resources", "resources"),
    "resourceTemplates": ("resources/templates/list", "resourceTemplates", "resources"),
}
#: notification -> the kinds it makes stale.
CHANGED: Final = {
    "notifications/tools/list_changed": ("tools",),
    "notifications/prompts/list_changed": ("prompts",),
    "notifications/resources/list_changed": ("resources", "resourceTemplates"),
}


async def list_all(
    session: ClientSession, method: str, key: str, max_pages: int, max_items: int = 10_000
) -> list[Any]:
    """Every item of a paginated list: ``method`` pages, items under ``key``.

    Spec: keep fetching "until nextCursor is absent" — but a server repeating a cursor
    would loop forever, and one that never stops would exhaust memory: a repeated cursor
    ends the listing, and so does ``max_pages`` (each with a warning); more than
    ``max_items`` items is the server's ``ProtocolError``.
    """
    name = session.name
    session.max_list_items = max_items  # a page over the bound is refused before it is checked
    items: list[Any] = []
    seen: set[str] = set()
    cursor: Any = None
    for _page in range(max_pages):
        params = {"cursor": cursor} if cursor is not None else None
        result = await session.request(method, params)
        if not isinstance(result, dict):
            raise ProtocolError(f"{method} result is not an object", server=name)
        page = result.get(key)
        if not isinstance(page, list):
            raise ProtocolError(f"{method} result has no {key!r} array", server=name)
        if len(items) + len(page) > max_items:
            raise ProtocolError(
                f"{method} lists more than {max_items} items (the bound is max_list_items)", server=name
            )
        items.extend(page)
        cursor = result.get("nextCursor")
        if cursor is None:
            return items
        marker = repr(cursor)
        if marker in seen:
            logger.warning("%s: %s repeated cursor %r; stopping", name, method, cursor)
            return items
        seen.add(marker)
    logger.warning("%s: %s exceeded %d pages; stopping", name, method, max_pages)
    return items


class Registry:
    """Discovers and refreshes what servers offer."""

    def __init__(
        self,
        *,
        bounds: Bounds,
        on_listed: Callable[[ServerHandle, tuple[str, ...]], None],
        refresh_delay: float = 0.02,
    ) -> None:
        self.bounds = bounds
        self.max_pages = bounds.max_pages
        self._on_listed = on_listed
        self._refresh_delay = refresh_delay
        #: (server, kind) whose duplicate names were told already (told once).
        self._told_duplicates: set[tuple[str, str]] = set()

    async def discover(self, handle: ServerHandle, session: ClientSession) -> None:
        """List every kind the server declares, then publish them together."""
        kinds = [k for k, (_, _, cap) in LIST_KINDS.items() if session.has_capability(cap)]
        lists = await asyncio.gather(*(self._list(session, k) for k in kinds))
        strict = session.validate_messages == "strict"
        checked = [self.check(handle.name, k, items, strict) for k, items in zip(kinds, lists)]
        for kind, items in zip(kinds, checked):
            self.publish(handle, kind, items)
        handle.listening = True
        if handle.dirty:
            self._schedule(handle)

    async def _list(self, session: ClientSession, kind: str) -> list[dict[str, Any]]:
        method, key, _ = LIST_KINDS[kind]
        try:
            items = await list_all(session, method, key, self.max_pages, self.bounds.max_list_items)
        except ServerError as exc:
            if exc.code != METHOD_NOT_FOUND:
                raise
            # A capability declared but a list not served (older servers answer
            # resources/templates/list so): an empty list, one warning, counted; the
            # official SDK carries on the same way.
            logger.warning("%s: %s is not served (%s); listed as empty", session.name, method, exc.message)
            session.peer.stats.unserved_lists += 1
            return []
        return [item for item in items if isinstance(item, dict)]

    def check(
        self, server: str, kind: str, items: list[dict[str, Any]], strict: bool = False
    ) -> list[dict[str, Any]]:
        """Items with a usable name, descriptions bounded. A name listed twice is the
        server's ``ProtocolError`` when ``strict`` (which of the two would be called?);
        otherwise its first definition is kept and the duplicates are told once."""
        bounds = self.bounds
        field = "uri" if kind == "resources" else "uriTemplate" if kind == "resourceTemplates" else "name"
        method = LIST_KINDS[kind][0]
        kept: list[dict[str, Any]] = []
        seen: set[str] = set()
        dropped: list[str] = []
        off_rule: list[str] = []
        duplicates: list[str] = []
        for item in items:
            name = item.get(field)
            if not isinstance(name, str) or not name or len(name) > bounds.max_name_length or (
                kind in ("tools", "prompts") and CONTROL.search(name)
            ):
                dropped.append(repr(name)[:60] if isinstance(name, str) else type(name).__name__)
                continue
            if name in seen:
                if strict:
                    raise ProtocolError(f"{method} lists {field} {clip(name, 100)!r} twice", server=server)
                duplicates.append(name)
                continue
            seen.add(name)
            if kind == "tools" and not NAME_RULE.fullmatch(name):
                off_rule.append(name)
            description = item.get("description")
            if isinstance(description, str) and len(description) > bounds.max_description_length:
                item = {**item, "description": clip(description, bounds.max_description_length)}
            kept.append(item)
        if duplicates and (server, kind) not in self._told_duplicates:
            self._told_duplicates.add((server, kind))
            logger.warning(
                "%s: %s lists %d %s(s) more than once; the first definition of each is kept: %s",
                server, method, len(duplicates), field, clip(", ".join(repr(n) for n in dict.fromkeys(duplicates)), 300),
            )
        if dropped:
            logger.warning(
                "%s: %s: %d item(s) without a usable %s dropped: %s",
                server, method, len(dropped), field, clip(", ".join(dropped), 300),
            )
        if off_rule:
            # SEP-986: names SHOULD be [A-Za-z0-9._-]{1,128}; others are kept, and told.
            logger.warning(
                "%s: %d tool name(s) outside [A-Za-z0-9._-]{1,128}: %s",
                server, len(off_rule), clip(", ".join(repr(n) for n in off_rule), 300),
            )
        return kept

    def publish(self, handle: ServerHandle, kind: str, items: list[dict[str, Any]]) -> None:
        if kind != "tools":
            setattr(handle, kind, items)
            return
        rules = Permissions.from_tool_filter(handle.name, handle.config.tools)  # the config's filter
        visible = []
        hidden = set()
        for tool in items:
            name = tool.get("name")
            if not isinstance(name, str):
                continue
            if rules.allows(handle.name, name):
                visible.append(tool)
            else:
                hidden.add(name)
        handle.tools = visible
        handle.tool_index = {t["name"]: t for t in visible}
        handle.hidden_tools = hidden
        # Validators are compiled per tool on first use, and again after a change.
        handle.validators = {}
        handle.output_validators = {}
        handle.route_generation += 1

    # -- refresh on list_changed ----------------------------------------------------------

    def changed(self, handle: ServerHandle, method: str) -> bool:
        """``method`` is a notification; if it says a list changed, schedule a refresh."""
        kinds = CHANGED.get(method)
        if kinds is None:
            return False
        handle.dirty.update(kinds)
        if handle.listening:
            self._schedule(handle)
        return True

    def renewed(self, handle: ServerHandle) -> None:
        """The server's session was renewed: every list may have changed (refreshed as on
        ``list_changed``, the ``capabilities_changed`` event follows)."""
        handle.dirty.update(LIST_KINDS)
        if handle.listening:
            self._schedule(handle)

    def _schedule(self, handle: ServerHandle) -> None:
        if handle.refresher is None or handle.refresher.done():
            handle.refresher = asyncio.get_running_loop().create_task(
                self._refresh(handle), name=f"mcphost-refresh-{handle.name}"
            )

    async def _refresh(self, handle: ServerHandle) -> None:
        await asyncio.sleep(self._refresh_delay)
        while handle.dirty and handle.state is ServerState.READY and handle.session is not None:
            session = handle.session
            kinds = tuple(k for k in LIST_KINDS if k in handle.dirty)
            handle.dirty.clear()
            wanted = [k for k in kinds if session.has_capability(LIST_KINDS[k][2])]
            try:
                lists = await asyncio.gather(*(self._list(session, k) for k in wanted))
                strict = session.validate_messages == "strict"
                lists = [self.check(handle.name, k, items, strict) for k, items in zip(wanted, lists)]
            except MCPHostError as exc:
                logger.warning("%s: refresh of %s failed: %s", handle.name, ", ".join(wanted), exc)
                return
            for kind, items in zip(wanted, lists):
                self.publish(handle, kind, items)
            self._on_listed(handle, tuple(wanted))

    async def stop(self, handle: ServerHandle) -> None:
        """Stop refreshing ``handle`` (its server is stopping)."""
        handle.listening = False
        handle.dirty.clear()
        refresher = handle.refresher
        handle.refresher = None
        if refresher is not None and not refresher.done():
            refresher.cancel()
            # Waited for, not awaited: the refresher's cancellation (or failure) ends here,
            # while our caller's own cancellation goes through.
            await asyncio.wait({refresher})
            if not refresher.cancelled() and refresher.exception() is not None:
                logger.warning("%s: refresh failed: %r", handle.name, refresher.exception())

"""Hot reload: apply a new configuration to a running host, touching only what changed.

Layer 4. The new file is loaded and validated in full first (the caller does that: an
invalid file changes nothing). Then, compared server by server with the running
configuration (frozen values compare by every field):

- removed servers are stopped and forgotten;
- changed servers (any field of the process or connection: command, args, env, url,
  timeouts, tools, dependencies...) are stopped and started again with the new values, and
  so is every server that depends on one of them, after it;
- servers whose only changes are settings the host reads as it goes (``priority``,
  ``domains``, ``cacheTtl``, ``logLevel``, ``capabilities``, ``retry``, ``restart``) are
  updated in place: same process, like an unchanged one;
- added servers are started;
- unchanged servers are not touched: same process, calls in flight unaffected.

Stops run dependents first, starts in the new dependency layers. A reload during another
waits for it (one lock); a :class:`Watcher` polls the file (mtime, size, then a content
hash: no dependency) and reloads when the content really changed, so a burst of edits gives
one coherent result.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ..config.model import SERVER_NAME_PATTERN, ServerConfig
from ..errors import MCPHostError, UsageError
from .handle import ServerHandle
from .supervisor import Supervisor

if TYPE_CHECKING:
    from .facade import MCPHost

__all__ = ["Watcher", "add_server", "apply", "dependents_of", "plan", "remove_server"]

logger = logging.getLogger("mcphost.host.reload")


#: Server fields the host reads when it needs them, never when it starts the process or
#: connects: a change of these alone updates the server in place.
SETTINGS: Final = ("priority", "domains", "cache_ttl", "log_level", "declared_capabilities", "retry", "restart")


def _settings_only(old: ServerConfig, new: ServerConfig) -> bool:
    """``old`` and ``new`` differ in :data:`SETTINGS` fields only."""
    return dataclasses.replace(old, **{name: getattr(new, name) for name in SETTINGS}) == new


def plan(old: Any, new: Any) -> dict[str, list[str]]:
    """What a reload from ``old`` to ``new`` (``HostConfig`` values) does, by server name."""
    before, after = old.servers, new.servers
    removed = [n for n in before if n not in after]
    added = [n for n in after if n not in before]
    different = {n for n in after if n in before and after[n] != before[n]}
    settled = {n for n in different if _settings_only(before[n], after[n])}
    changed = different - settled
    # A server that depends on a changed or removed one restarts after it.
    moved = changed | set(removed)
    grew = True
    while grew:
        grew = False
        for name, cfg in after.items():
            if name in before and name not in changed and any(dep in moved for dep in cfg.dependencies):
                changed.add(name)
                moved.add(name)
                grew = True
    ordered_changed = [n for n in after if n in changed]
    updated = [n for n in after if n in settled and n not in changed]
    unchanged = [n for n in after if n in before and n not in different and n not in changed]
    return {"added": added, "removed": removed, "changed": ordered_changed, "updated": updated,
            "unchanged": unchanged}


def dependents_of(config: Any, name: str) -> list[str]:
    """The servers that depend on ``name``, directly or not, in start order."""
    found = {name}
    grew = True
    while grew:
        grew = False
        for other, server in config.servers.items():
            if other not in found and any(dep in found for dep in server.dependencies):
                found.add(other)
                grew = True
    return [n for layer in config.start_order() for n in layer if n in found and n != name]


async def apply(
    supervisor: Supervisor,
    servers: dict[str, ServerHandle],
    old: Any,
    new: Any,
    make_handle: Callable[[Any], ServerHandle],
) -> dict[str, Any]:
    """Move the running host from ``old`` to ``new``; returns the plan and the failures."""
    steps = plan(old, new)
    leaving = set(steps["removed"]) | set(steps["changed"])
    # Stop dependents first: the old start layers, reversed.
    for layer in reversed(old.start_order()):
        handles = [servers[n] for n in layer if n in leaving and n in servers]
        await asyncio.gather(*(supervisor.stop(h) for h in handles), return_exceptions=True)
    for name in leaving:
        handle = servers.get(name)
        if handle is not None and handle.state.value not in ("stopped", "disabled", "failed"):
            await supervisor.stop(handle)
    for name in steps["removed"]:
        servers.pop(name, None)
    for name in steps["updated"]:
        servers[name].config = new.servers[name]  # read where used: no restart
    for name in steps["changed"]:
        previous = servers.get(name)
        fresh = make_handle(new.servers[name])
        if previous is not None:
            fresh.metrics = previous.metrics
            fresh.restarts = previous.restarts + 1
        servers[name] = fresh
    for name in steps["added"]:
        servers[name] = make_handle(new.servers[name])
    # Start what is new or changed, in the new dependency layers.
    starting = set(steps["added"]) | set(steps["changed"])
    layers = [[n for n in layer if n in starting] for layer in new.start_order()]
    results = await supervisor.start_all([layer for layer in layers if layer], require_all=False)
    supervisor.layers = new.start_order()
    failed = {name: r["error"] for name, r in results.items() if not r["ok"]}
    return {**steps, "failed": failed}


async def add_server(host: MCPHost, name: str, entry: Mapping[str, Any] | ServerConfig, *,
                     start: bool = True) -> None:
    """Add server ``name`` to the running host: ``entry`` is its ``mcp.json`` entry (any
    dialect; ``${...}`` expanded as in a file) or a ``ServerConfig``. It joins the
    configuration (``host.config``) and starts now, unless ``start=False``.

    Raises:
        UsageError: the host is not running, or ``name`` is taken or not a server name.
        ConfigurationError: the entry is invalid (naming its field).
        ServerStartupError: it did not start (it stays listed, ``failed``, with its error:
            ``start_server`` tries again, ``remove_server`` forgets it).
    """
    host._require_running("add_server")
    if not isinstance(name, str) or not re.match(SERVER_NAME_PATTERN, name):
        raise UsageError(f"add_server(): {name!r} is not a server name ({SERVER_NAME_PATTERN})")
    if name in host._servers or name in host._supervisor.local:
        raise UsageError(f"add_server(): a server named {name!r} exists already")
    if isinstance(entry, ServerConfig):
        config = dataclasses.replace(entry, name=name)
    elif isinstance(entry, Mapping):
        from ..config import config_from_data

        home = host._environ.get("HOME") or os.path.expanduser("~")
        loaded = config_from_data({"mcpServers": {name: dict(entry)}}, environ=host._environ, user_home=home,
                                  workspace_folder=os.getcwd())
        host._supervisor.redactor.add_config(loaded)
        config = loaded.servers[name]
    else:
        raise UsageError(f"add_server(): the entry of {name!r} is a mapping (an mcp.json entry), "
                         f"not {type(entry).__name__}")
    host.config = dataclasses.replace(host.config, servers={**host.config.servers, name: config})
    host._servers[name] = host._new_handle(config)
    logger.info("%s: added", name)
    if start and config.enabled:
        await host.start_server(name)


async def remove_server(host: MCPHost, name: str) -> None:
    """Stop server ``name`` and forget it: it leaves ``get_tools()``, the metrics and the
    configuration (``RoutingError``: no such server)."""
    host._require_running("remove_server")
    handle = host._router.handle(name)
    await host._supervisor.stop(handle)
    host._servers.pop(name, None)
    host._supervisor.local.pop(name, None)
    if name in host.config.servers:
        host.config = dataclasses.replace(
            host.config, servers={n: c for n, c in host.config.servers.items() if n != name})
    logger.info("%s: removed", name)


class Watcher:
    """Polls one configuration file and calls ``reload()`` when its content changed."""

    def __init__(self, path: str, reload: Callable[[], Awaitable[Any]], interval: float = 1.0) -> None:
        self.path = path
        self.interval = interval
        self._reload = reload
        self._stat = self._signature()
        self._digest = self._hash()
        self._task: asyncio.Task[None] | None = None

    def _signature(self) -> tuple[float, int] | None:
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        return (st.st_mtime, st.st_size)

    def _hash(self) -> str | None:
        try:
            with open(self.path, "rb") as f:
                return hashlib.sha256(f.read()).hexdigest()
        except OSError:
            return None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="mcphost-watch")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            signature = self._signature()
            if signature == self._stat:
                continue
            self._stat = signature
            digest = self._hash()
            if digest is None or digest == self._digest:
                continue  # touched, not changed (or gone for now: wait for it)
            self._digest = digest
            try:
                await self._reload()
            except MCPHostError as exc:
                # Reported by reload() (event and log); the running servers are untouched.
                logger.debug("%s: reload failed: %s", self.path, exc)

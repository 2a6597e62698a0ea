"""The host's lifecycle and its commands: initialize, reload, shutdown; start, stop and
restart of one server; the application's own tools served as a server.

Layer 4. :class:`HostLifecycle` is the one writer of the host's :class:`HostState` (the
table is :data:`~mcphost.protocol.lifecycle.HOST_TRANSITIONS`); every other part of the host
asks it (:meth:`HostLifecycle.require_running`, :attr:`HostLifecycle.state`) instead of
keeping a state of its own. The servers' own lifecycles stay with the
:class:`~mcphost.host.supervisor.Supervisor`; configuration is read by
:mod:`~mcphost.host.configload`, applied again by :mod:`~mcphost.host.reload`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..config.model import SERVER_NAME_PATTERN, ServerConfig
from ..errors import ConfigurationError, MCPHostError, ServerStartupError, UsageError
from ..protocol.lifecycle import HOST_TRANSITIONS, HostState, ServerState, move
from . import observe
from .configload import fail_fast, load_config, select
from .handle import ServerHandle
from .local import LocalServer, ToolHandler, check_tools

if TYPE_CHECKING:
    from .handlers import Handlers
    from .readcache import ReadCache
    from .reload import Watcher
    from .router import Router
    from .secrets import Redactor
    from .supervisor import Supervisor

__all__ = ["HostLifecycle", "HostState"]

logger = logging.getLogger("mcphost.host")

ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | None


class HostLifecycle:
    """The host's state and the commands that change it or its servers.

    Args:
        servers: the host's handles by name (shared, filled here).
        supervisor, router, handlers: the collaborators the commands drive.
        source: the configuration given to the constructor (a path, a dict, or ``None``).
        environ, inputs, only: how configuration is read (see ``MCPHost``).
        new_handle: makes the handle of one server's configuration.
        log_level, require_all, watch: the constructor's options.
    """

    def __init__(
        self,
        servers: dict[str, ServerHandle],
        *,
        supervisor: Supervisor,
        router: Router,
        handlers: Handlers,
        source: ConfigSource,
        environ: dict[str, str],
        inputs: Any,
        only: tuple[str, ...] | None,
        new_handle: Callable[[Any], ServerHandle],
        log_level: str | int | None,
        require_all: bool | None,
        watch: bool,
        redactor: Redactor,
        reads: ReadCache,
        local: dict[str, LocalServer],
    ) -> None:
        self.servers = servers
        self.supervisor = supervisor
        self.router = router
        self.handlers = handlers
        self.source = source
        self.environ = environ
        self.inputs = inputs
        self.only = only
        self.new_handle = new_handle
        self.log_level = log_level
        self.require_all = require_all
        self.watch = watch
        #: The configuration in force (a ``HostConfig``), once loaded.
        self.config: Any = None
        self.redactor = redactor
        self.reads = reads
        self.local = local
        #: Logger levels the configuration changed, as they were (given back at shutdown).
        self.saved_levels: dict[str, int] = {}
        self._state = HostState.NEW
        self._watcher: Watcher | None = None
        self._reload_lock = asyncio.Lock()

    # -- the host's state ----------------------------------------------------------------

    @property
    def state(self) -> HostState:
        return self._state

    def _move(self, new: HostState) -> None:
        move(HOST_TRANSITIONS, self._state, new, "host")
        logger.debug("host: %s -> %s", self._state.value, new.value)
        self._state = new

    def require_running(self, what: str) -> None:
        """``UsageError`` unless the host is ready (``what``: the method asked)."""
        if self._state is not HostState.READY:
            raise UsageError(f"{what}() needs a running host (this one is {self._state.value})")

    def warn_if_started(self, what: str) -> None:
        """A capability registered after ``initialize()`` reaches only later servers."""
        if self._state is not HostState.NEW:
            logger.warning(
                "%s registered after initialize(): servers already started were not told "
                "of the capability", what,
            )

    def _path(self) -> str | os.PathLike[str] | Mapping[str, Any]:
        return self.source if self.source is not None else "mcp.json"

    # -- the host ------------------------------------------------------------------------

    async def initialize(self, config: ConfigSource, require_all: bool | None) -> dict[str, dict[str, Any]]:
        """See :meth:`MCPHost.initialize <mcphost.host.facade.MCPHost.initialize>`."""
        state = self._state
        if state is not HostState.NEW:
            raise UsageError(f"initialize() called on a host that is {state.value}")
        self._move(HostState.STARTING)
        if config is not None:
            self.source = config
        supervisor = self.supervisor
        try:
            loaded = await load_config(self._path(), environ=self.environ, inputs=self.inputs, only=self.only,
                                       defer_unset=True)
            strict = fail_fast(loaded, require_all, self.require_all)
            if strict and loaded.unresolved:
                raise next(iter(loaded.unresolved.values()))  # all or nothing: an error of the file
            self.config = select(loaded, self.only)
            observe.apply_settings(self.reads, self.saved_levels, self.config, self.log_level)
            self.redactor.add_config(loaded)
            self.redactor.install()
            for name, cfg in self.config.servers.items():
                if name in self.local:
                    raise ConfigurationError(f"server {name!r} of the configuration has the name of registered tools")
                self.servers[name] = self.new_handle(cfg)
            supervisor.not_started(loaded.unresolved)  # require_all=False: an unset ${VAR}
            local = [name for name in self.local if name in self.servers]
            results = await supervisor.start_all([*self.config.start_order(), local], strict)
        except BaseException:
            await self.shutdown()
            raise
        if self._state is not HostState.STARTING:
            return results  # shutdown() ran meanwhile: what was tried is told, nothing runs
        self._move(HostState.READY)
        if self.watch and isinstance(self.source, (str, os.PathLike)):
            # The reload room loads with its first use (watch, reload, restart), not with every host.
            from .reload import Watcher

            self._watcher = Watcher(os.fspath(self.source), self.reload)
            self._watcher.start()
        return results

    async def reload(self) -> dict[str, Any]:
        """See :meth:`MCPHost.reload <mcphost.host.facade.MCPHost.reload>`."""
        self.require_running("reload")
        async with self._reload_lock:
            try:
                loaded = await load_config(self._path(), environ=self.environ, inputs=self.inputs, only=self.only)
                new = select(loaded, self.only)
            except MCPHostError as exc:
                logger.error("configuration not reloaded: %s", exc, extra={"event": "config_reload_failed"})
                self.handlers.emit({"type": "config_reload_failed", "server": None, "data": str(exc)})
                raise
            self.redactor.add_config(new)
            observe.apply_settings(self.reads, self.saved_levels, new, self.log_level)
            from .reload import apply

            summary = await apply(self.supervisor, self.servers, self.config, new, self.new_handle)
            self.config = new
            logger.info("configuration reloaded: %s", summary, extra={"event": "config_reloaded"})
            self.handlers.emit({"type": "config_reloaded", "server": None, "data": summary})
            return summary

    async def shutdown(self) -> None:
        """See :meth:`MCPHost.shutdown <mcphost.host.facade.MCPHost.shutdown>`."""
        if self._watcher is not None:
            watcher, self._watcher = self._watcher, None
            await watcher.stop()
        if self._state is not HostState.STOPPED and self._state is not HostState.STOPPING:
            self._move(HostState.STOPPING)
        await self.supervisor.shutdown_once()
        observe.restore_levels(self.saved_levels)
        await self.handlers.running.aclose()  # the application's async handlers still running
        if self._state is HostState.STOPPING:
            self._move(HostState.STOPPED)

    # -- one server ----------------------------------------------------------------------

    async def start_server(self, name: str) -> None:
        """See :meth:`MCPHost.start_server <mcphost.host.facade.MCPHost.start_server>`."""
        self.require_running("start_server")
        handle = self.router.handle(name)
        if name in getattr(self.config, "left_out", ()):
            # Left out by servers=: read (expanded, validated) now that it is wanted.
            loaded = await load_config(self._path(), environ=self.environ, inputs=self.inputs, only=(name,))
            self.redactor.add_config(loaded)
            handle = self.servers[name] = self.new_handle(loaded.servers[name])
        self._require_dependencies(handle)
        await self.supervisor.start(handle)

    def _require_dependencies(self, handle: ServerHandle) -> None:
        """A server starts only when what it depends on is ready (FR10)."""
        blocked = [d for d in handle.config.dependencies
                   if (h := self.servers.get(d)) is None or h.state is not ServerState.READY]
        if blocked:
            raise ServerStartupError(f"not started: it depends on {', '.join(blocked)}, which is not ready",
                                     server=handle.name)

    async def stop_server(self, name: str) -> None:
        """See :meth:`MCPHost.stop_server <mcphost.host.facade.MCPHost.stop_server>`."""
        self.require_running("stop_server")
        await self.supervisor.stop(self.router.handle(name))

    async def restart_server(self, name: str) -> None:
        """See :meth:`MCPHost.restart_server <mcphost.host.facade.MCPHost.restart_server>`."""
        self.require_running("restart_server")
        handle = self.router.handle(name)
        self._require_dependencies(handle)
        await self.supervisor.restart(handle)
        # What depends on it was using the old process: restarted after it, in start order.
        from .reload import dependents_of

        for dependent in dependents_of(self.config, name):
            if (other := self.servers.get(dependent)) is not None and other.state is ServerState.READY:
                await self.supervisor.restart(other)

    async def add_server(self, name: str, entry: Mapping[str, Any] | ServerConfig, *, start: bool = True) -> None:
        """Add server ``name`` to the running host: ``entry`` is its ``mcp.json`` entry (any
        dialect; ``${...}`` expanded as in a file) or a ``ServerConfig``. It joins the
        configuration (``host.config``) and starts now, unless ``start=False``.

        Raises:
            UsageError: the host is not running, or ``name`` is taken or not a server name.
            ConfigurationError: the entry is invalid (naming its field).
            ServerStartupError: it did not start (it stays listed, ``failed``, with its error:
                ``start_server`` tries again, ``remove_server`` forgets it).
        """
        self.require_running("add_server")
        if not isinstance(name, str) or not re.match(SERVER_NAME_PATTERN, name):
            raise UsageError(f"add_server(): {name!r} is not a server name ({SERVER_NAME_PATTERN})")
        if name in self.servers or name in self.local:
            raise UsageError(f"add_server(): a server named {name!r} exists already")
        if isinstance(entry, ServerConfig):
            config = dataclasses.replace(entry, name=name)
        elif isinstance(entry, Mapping):
            from ..config import config_from_data

            home = self.environ.get("HOME") or os.path.expanduser("~")
            loaded = config_from_data({"mcpServers": {name: dict(entry)}}, environ=self.environ, user_home=home,
                                      workspace_folder=os.getcwd())
            self.redactor.add_config(loaded)
            config = loaded.servers[name]
        else:
            raise UsageError(f"add_server(): the entry of {name!r} is a mapping (an mcp.json entry), "
                             f"not {type(entry).__name__}")
        self.config = dataclasses.replace(self.config, servers={**self.config.servers, name: config})
        self.servers[name] = self.new_handle(config)
        logger.info("%s: added", name)
        if start and config.enabled:
            await self.start_server(name)

    async def remove_server(self, name: str) -> None:
        """Stop server ``name`` and forget it: it leaves ``get_tools()``, the metrics and the
        configuration (``RoutingError``: no such server)."""
        self.require_running("remove_server")
        handle = self.router.handle(name)
        await self.supervisor.stop(handle)
        self.servers.pop(name, None)
        self.local.pop(name, None)
        if name in self.config.servers:
            self.config = dataclasses.replace(
                self.config, servers={n: c for n, c in self.config.servers.items() if n != name})
        logger.info("%s: removed", name)

    async def register_tools(self, server: str, tools: Sequence[Mapping[str, Any]], handler: ToolHandler) -> None:
        """See :meth:`MCPHost.register_tools <mcphost.host.facade.MCPHost.register_tools>`."""
        if not isinstance(server, str) or not re.match(SERVER_NAME_PATTERN, server) or server in self.servers:
            raise UsageError(f"register_tools(): {server!r} is not a free server name ({SERVER_NAME_PATTERN})")
        if not callable(handler):
            raise UsageError("register_tools(): handler must be callable as handler(name, arguments)")
        self.local[server] = LocalServer(server, check_tools(tools), handler)
        handle = self.servers[server] = self.new_handle(ServerConfig(name=server, type="local"))
        if self._state is HostState.READY:
            await self.supervisor.start(handle)

"""One start's connection: the transport built, the session wired to the host, discovery run.

Layer 4, beside :mod:`.supervisor`. The supervisor decides *when* a server starts, how often
it is tried and what state it is in; the :class:`Connector` knows *how* a start connects:
it builds the server's transport (through the factory: it never names one; the
application's own tools are always served in process), starts it, makes a new
:class:`~mcphost.client.session.ClientSession` wired to the host's handlers, registry and
read cache, opens it in the era remembered for its origin (:mod:`.eras`), opens a modern
server's ``subscriptions/listen`` stream and runs discovery. What the session later tells of
its own end or of a time-out goes to the two callbacks the supervisor gives it, which own
the states that follow.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._json import MAX_TOKENS
from ..client.renewal import RenewalPolicy
from ..client.session import ClientSession
from ..errors import MCPHostError
from . import eras
from .handle import ServerHandle
from .handlers import Handlers
from .local import LocalServer
from .readcache import ReadCache
from .registry import Registry
from .renewal import session_renewed
from .secrets import Redactor

if TYPE_CHECKING:
    from ..config import ServerConfig
    from ..transports.base import AuthHooks, Transport

__all__ = ["Connector", "OnClosed", "OnTimeout"]

#: The session's transport went away by itself: ``(handle, session, error)``.
OnClosed = Callable[[ServerHandle, ClientSession, MCPHostError], None]
#: A request of the session timed out: ``(handle, session, method)``.
OnTimeout = Callable[[ServerHandle, ClientSession, str], None]


class Connector:
    """Connects one start of a server: everything it needs is given here, once."""

    def __init__(
        self,
        *,
        handlers: Handlers,
        registry: Registry,
        reads: ReadCache,
        redactor: Redactor,
        transport_factory: Callable[[ServerConfig], Transport] | None,
        environ: Mapping[str, str],
        max_message_size: int,
        max_message_tokens: int = MAX_TOKENS,
        inherit_env: bool = False,
        client_info: dict[str, Any],
        validate_messages: str,
        local: dict[str, LocalServer],
        trace_bodies: bool = False,
        auth: AuthHooks | None = None,
        on_closed: OnClosed,
        on_timeout: OnTimeout,
    ) -> None:
        self.handlers = handlers
        self.registry = registry
        #: The host's cache of reads and prompts: told of the notifications of every session.
        self.reads = reads
        self.redactor = redactor
        self.transport_factory = transport_factory
        self.environ = environ
        self.max_message_size = max_message_size
        self.max_message_tokens = max_message_tokens  # of a message over 1 MiB (Bounds)
        self.inherit_env = inherit_env
        self.client_info = client_info
        self.validate_messages = validate_messages
        #: The host's servers of the application's own tools (register_tools), by name.
        self.local = local
        #: The wire trace (mcphost.wire.<name> at DEBUG) includes message bodies.
        self.trace_bodies = trace_bodies
        #: What remote servers' authorizers need of the host (on_authorize, the token store).
        self.auth = auth
        self.eras = eras.EraMemory()  # the era of each http origin, once probed
        #: How a session an HTTP server dropped is renewed (delays and bounds).
        self.renewal = RenewalPolicy()
        self.on_closed = on_closed
        self.on_timeout = on_timeout

    def make_transport(self, handle: ServerHandle) -> Transport:
        """The server's transport, not started: the application's factory's, or the default."""
        config = handle.config
        # The application's own tools are always served in process, whatever the factory.
        if self.transport_factory is not None and config.name not in self.local:
            return self.transport_factory(config)
        from ..transports.factory import make_transport

        return make_transport(
            config, environ=self.environ, max_message_size=self.max_message_size,
            max_message_tokens=self.max_message_tokens, inherit_env=self.inherit_env, redact=self.redactor.text,
            shutdown_timeout=handle.shutdown_timeout, auth=self.auth,
            in_process={name: local.serve for name, local in self.local.items()},
        )

    async def connect(self, handle: ServerHandle) -> None:
        """Transport, session, handshake (or discover) and discovery; the transport and the
        session are on ``handle`` as soon as they exist, so that a failure can close them."""
        transport = self.make_transport(handle)
        trace = transport.trace
        if trace is not None:
            trace.bodies = self.trace_bodies
        handle.transport = transport
        handle.live = True
        await transport.start()
        name = handle.name
        handlers = self.handlers
        transport.watch_stream(handlers.stream_events(name))

        async def on_request(method: str, params: dict[str, Any]) -> Any:
            return await handlers.answer(name, method, params)

        def on_notification(method: str, params: dict[str, Any]) -> None:
            self.reads.notified(name, method, params)
            if not self.registry.changed(handle, method):
                handlers.notified(name, method, params)

        session = ClientSession(
            name,
            transport,
            client_info=self.client_info,
            capabilities_for=handlers.capabilities_for,
            request_timeout=handle.request_timeout,
            validate_messages=self.validate_messages,
            on_request=on_request,
            on_notification=on_notification,
            on_closed=lambda err: self.on_closed(handle, session, err),
            on_timeout=lambda method: self.on_timeout(handle, session, method),
            protocol=self.eras.setting(handle.config),
        )
        session.forward_progress = bool(handlers.progress)
        session.request_limits.update(handlers.limits)  # the handlers' concurrency= (on_sampling...)
        session.renewal_policy = self.renewal
        session.on_renewed = lambda summary: session_renewed(
            handle, session, summary, registry=self.registry, handlers=handlers)
        handle.session = session
        handle.timeouts = 0
        self.redactor.install()  # the server's own logger exists now
        await self.eras.open(handle.config, session)
        # A modern server tells of changes on a subscriptions/listen stream: opened now, with
        # the subscriptions the application has (a restarted server's stream names them again).
        session.listen(handle.subscriptions)
        await self.registry.discover(handle, session)

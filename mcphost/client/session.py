"""The MCP client session with one server, over one JSON-RPC peer.

Layer 3. A :class:`ClientSession` stands between the host and the
:class:`~mcphost.rpc.peer.Peer`: every message to and from the server passes through it,
and it owns what MCP adds to JSON-RPC:

- the era (``protocol``: ``legacy``, ``modern`` or ``auto``, see :mod:`.era`): the
  modern era's ``server/discover`` (the sans-I/O :class:`~mcphost.protocol.modern.ModernSession`,
  then :class:`~.era.ModernRules` adds ``_meta`` and headers to each request and runs the
  multi-round-trip requests), or the handshake (``initialize``, the negotiated version and
  capabilities, then ``notifications/initialized``), through the sans-I/O
  :class:`~mcphost.protocol.legacy.Session`; either is ``handshake``, asked the same
  questions; and the handshake's renewal when the transport loses its own session (:mod:`.renewal`), after which the
  owner is told (``on_renewed``) so that it re-applies what the old session was told;
- progress: the token of a call is its request id, put in ``params._meta.progressToken``;
  ``notifications/progress`` reaches the call's callback (and restarts its clock when
  asked), then the host when it listens;
- cancellation: a call given up (timeout, cancelled caller) is followed by
  ``notifications/cancelled`` — never for ``initialize`` (spec: "The client MUST NOT cancel
  initialize"); a server's ``notifications/cancelled`` stops the handler serving it;
- the server's requests: handed to :class:`~.serving.ServerRequests` (``ping`` answered at
  once, admission by the declared capabilities, the served tasks, the host's handler behind
  bounded gates, the answer checked);
- message checks (:class:`~mcphost.protocol.messages.MessageChecker`) on what the server
  sends and on what the application answers; a listing's items are counted against
  ``max_list_items`` before any of them is checked (a million-tool page is refused, not
  checked for seconds first);
- the tasks it starts for the server (async progress callbacks): held in its
  :class:`~mcphost.rpc.taskset.TaskSet` and cancelled when the session closes.

Every request to the server, ``tools/call`` included, takes one path: :meth:`ClientSession.call`
-> :meth:`Peer.start_request <mcphost.rpc.peer.Peer.start_request>` -> the transport, then
:meth:`Peer.wait <mcphost.rpc.peer.Peer.wait>` (``tools/call`` awaits the call's future
itself, and gives the call up if cancelled: one coroutine less per call in flight).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..errors import MCPHostError, ProtocolError, ServerError
from ..protocol.legacy import Session
from ..protocol.modern import DEFAULT_MAX_ROUNDS, ModernSession
from ..protocol.versions import SUPPORTED_VERSIONS, Version, protocol_choice
from ..rpc.calls import CallOptions
from ..rpc.peer import TIMED_OUT, Call, Peer
from ..rpc.taskset import TaskSet
from ..transports.base import Gone, Transport
from .era import PROBE_TIMEOUT, ModernRules, negotiate
from .renewal import RenewalPolicy, SessionRenewal
from .served_tasks import ClientTasks
from .serving import REQUEST_LIMITS, REQUEST_QUEUE, ServerRequests

if TYPE_CHECKING:
    from ..protocol.messages import MessageChecker
    from ..rpc.deadlines import Scheduler

__all__ = ["ClientSession"]

logger = logging.getLogger("mcphost.client")

_PROGRESS: Final = "notifications/progress"
#: Listing methods -> the member that holds their items (counted before any check).
_LISTS: Final = {"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources",
                 "resources/templates/list": "resourceTemplates", "tasks/list": "tasks"}
_NO_TIMEOUT: Final = CallOptions(timeout=0)

RequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
NotificationHandler = Callable[[str, dict[str, Any]], None]


class _Start(Protocol):
    def __call__(self, method: str, params: dict[str, Any] | None = None,
                 progress: Callable[[Any], Any] | None = None, options: CallOptions | None = None,
                 owned: bool = False) -> Call: ...


def _tag_progress(params: dict[str, Any] | None, token: Any, owned: bool) -> dict[str, Any]:
    """Put ``token`` in ``params._meta.progressToken`` (into ``params`` itself when the
    caller gave it away, else into a copy: the caller's dicts are not touched)."""
    old_meta = params.get("_meta") if params else None
    meta = {**old_meta, "progressToken": token} if old_meta else {"progressToken": token}
    if owned and params is not None:
        params["_meta"] = meta
        return params
    return {**params, "_meta": meta} if params else {"_meta": meta}


class ClientSession:
    """One MCP session with the server ``name`` over ``transport`` (already started)."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        client_info: Mapping[str, Any],
        capabilities_for: Callable[[str], dict[str, Any]] | None = None,
        request_timeout: float = 60.0,
        validate_messages: str = "lenient",
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_closed: Callable[[MCPHostError], None] | None = None,
        on_timeout: Callable[[str], None] | None = None,
        scheduler: Scheduler | None = None,
        versions: tuple[str, ...] = SUPPORTED_VERSIONS,
        protocol: str = "legacy",
        probe_timeout: float = PROBE_TIMEOUT,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
    ) -> None:
        self.name = name
        self.client_info = dict(client_info)
        self.capabilities_for = capabilities_for
        #: ``auto``, ``legacy`` or ``modern``, and the versions of each era it may speak.
        self.mode, legacy_versions, self.modern_versions = protocol_choice(protocol)
        if protocol == "legacy":
            legacy_versions = versions
        self.probe_timeout = probe_timeout
        #: Rounds of one multi-round-trip request at most (modern era).
        self.max_rounds = max_rounds
        self.handshake: Session | ModernSession = Session(
            client_info=client_info, capabilities_for=capabilities_for, versions=legacy_versions or versions
        )
        #: The modern era's work on requests and results (``None``: the handshake era).
        self.modern: ModernRules | None = None
        self.validate_messages = validate_messages
        self.on_request = on_request
        self.on_notification = on_notification
        self.on_closed = on_closed
        #: Told the method of each request whose deadline passed (the host's health).
        self.on_timeout = on_timeout
        #: What the server asks of the client (its requests: admitted, bounded, answered).
        self.requests = ServerRequests(self)
        self.peer = Peer(
            name,
            transport,
            request_timeout=request_timeout,
            scheduler=scheduler,
            on_request=self.requests.on_request,
            on_notification=self._on_notification,
            on_closed=self._on_closed,
            on_abandoned=self._on_abandoned,
            tag_progress=_tag_progress,
        )
        #: :meth:`call` in two steps, for a caller that wants the request's record (its id):
        #: send now (``start(method, params, progress, options, owned)``), then ``await
        #: session.wait(call)``. The handshake era adds nothing to a request: this is the
        #: peer's own ``start_request`` (no frame of the session's per call); the modern era's
        #: follows each request it sends.
        self.start: _Start = self.peer.start_request
        self._progress_calls = self.peer.progress_calls
        self.peer.notification_handlers[_PROGRESS] = self._on_progress
        #: The checker's quick test of a progress notification (set with the checker).
        self._plain_progress: Callable[[Any], bool] | None = None
        #: Tasks this server asked the client to run (task-augmented sampling/elicitation).
        self.served = ClientTasks(name, self.notify)
        #: Checks what the server sends against the schemas of the negotiated version.
        self.checker: MessageChecker | None = None
        #: Pass progress notifications on to ``on_notification`` too (the host sets this
        #: while the application has ``on_progress`` handlers; per-call callbacks are
        #: called either way).
        self.forward_progress = False
        #: Server requests the application may serve at once, per method (``*``: any
        #: other); beyond, they wait, and past ``request_queue`` waiting they are refused.
        self.request_limits: dict[str, int] = dict(REQUEST_LIMITS)
        self.request_queue = REQUEST_QUEUE
        #: Items one page of a listing may hold: more is refused before any item is checked
        #: (the host's ``Bounds.max_list_items``, which counts all pages, sets it).
        self.max_list_items = 10_000
        #: The tasks this session started (async progress callbacks): cancelled with it.
        self.tasks = TaskSet(name)
        #: How a session the transport lost is renewed, and who is told after each renewal.
        self.renewal_policy = RenewalPolicy()
        self.on_renewed: Callable[[dict[str, Any]], None] | None = None
        self.renewal: SessionRenewal | None = None

    # -- the handshake --------------------------------------------------------------------

    async def open(self) -> None:
        """Receive from the transport, run the handshake, and turn the checks on.

        Raises:
            ProtocolError: the server answered with a version or shape the client refuses.
            ServerError, ServerUnavailableError: the server refused or went away.
        """
        peer = self.peer
        peer.start()
        if self.mode != "legacy":
            found = ModernSession(client_info=self.client_info, capabilities_for=self.capabilities_for,
                                  versions=self.modern_versions)
            rules = ModernRules(self, found, self.max_rounds)
            peer.prepare = rules.prepare  # the probe goes as a modern request does
            if await negotiate(self, found, self.mode, self.probe_timeout):
                self.handshake = found
                self.modern = rules
                self.start = self._start_modern
                self._check_messages(str(found.protocol_version))
                return
            peer.prepare = None
        handshake = self.handshake
        assert isinstance(handshake, Session)
        params = handshake.initialize_params()
        # No timeout of its own: the start-up timeout bounds the handshake.
        result = await self.call("initialize", params, None, _NO_TIMEOUT)
        try:
            handshake.accept_initialize_result(result)
        except ProtocolError as exc:
            raise ProtocolError(exc.message, server=self.name) from None
        if (checker := self._check_messages(str(handshake.protocol_version))) is not None:
            checker.result("initialize", result)
        # An HTTP transport sends the version in a header on every later request (spec
        # 2025-06-18 "Protocol Version Header") and may open its server-to-client stream.
        version = str(handshake.protocol_version)
        transport = peer.transport
        transport.negotiated(version)
        self.renewal = SessionRenewal(self.name, peer, transport, params, version, policy=self.renewal_policy,
                                      on_renewed=self._renewed)
        self.notify("notifications/initialized")

    def _check_messages(self, version: str) -> MessageChecker | None:
        """Check what the server sends against the schemas of ``version`` (unless ``off``)."""
        if self.validate_messages == "off":
            return None
        # Imported here: the schemas cost nothing to a host that never checks messages.
        from ..protocol.messages import MessageChecker

        checker = self.checker = MessageChecker(self.name, version, self.validate_messages, logger)
        self._plain_progress = checker.plain_notifications.get(_PROGRESS)
        plain = dict(checker.plain_results)
        for method, key in _LISTS.items():  # a listing is counted before it is checked
            plain[method] = functools.partial(self._counted_plain, key, plain.get(method))
        self.peer.plain_results = plain
        self.peer.result_check = self._check_result
        return checker

    def _renewed(self, summary: dict[str, Any]) -> None:
        if self.on_renewed is not None:
            self.on_renewed(summary)

    # -- what the negotiation decided -----------------------------------------------------

    @property
    def era(self) -> str:
        """``modern`` (2026-07-28, stateless) or ``legacy`` (the handshake)."""
        return "modern" if self.modern is not None else "legacy"

    @property
    def protocol_version(self) -> str | None:
        return self.handshake.protocol_version

    @property
    def version(self) -> Version:
        """The negotiated version's row of the versions table."""
        return self.handshake.version

    @property
    def server_capabilities(self) -> dict[str, Any]:
        return self.handshake.server_capabilities

    @property
    def server_info(self) -> dict[str, Any] | None:
        return self.handshake.server_info

    @property
    def instructions(self) -> str | None:
        return self.handshake.instructions

    @property
    def client_caps(self) -> dict[str, Any]:
        return self.handshake.client_caps

    def has_capability(self, name: str, sub: str | None = None) -> bool:
        return self.handshake.has_capability(name, sub)

    def listen(self, resources: Iterable[str]) -> bool:
        """Modern era: (re)open the ``subscriptions/listen`` stream for ``resources`` and the
        list changes (True; False: the handshake era, or nothing to listen to)."""
        return self.modern is not None and self.modern.listener.listen(resources)

    def log_level_in_meta(self, level: str) -> bool:
        """Modern era: every later request carries ``level`` (``io.modelcontextprotocol/logLevel``)
        and True; the handshake era: False (``logging/setLevel`` is the caller's to send)."""
        handshake = self.handshake
        if not isinstance(handshake, ModernSession):
            return False
        handshake.set_log_level(level)
        return True

    def supports_completions(self) -> bool:
        return self.handshake.supports_completions()

    # -- state of the connection ----------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.peer.closed

    @property
    def pending(self) -> int:
        return self.peer.pending

    @property
    def gone(self) -> Gone | None:
        return self.peer.gone

    async def aclose(self, timeout: float, reason: str = "server was shut down") -> Gone:
        """Stop the served tasks, close the transport, fail what is pending (``reason``)."""
        self.served.close()
        self.tasks.close()
        if self.renewal is not None:
            await self.renewal.aclose()
        gone = await self.peer.aclose(timeout, reason)
        self.handshake.close()
        return gone

    # -- requests and notifications to the server -----------------------------------------

    async def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        progress: Callable[[Any], Any] | None = None,
        options: CallOptions | None = None,
        owned: bool = False,
    ) -> Any:
        """Send ``method`` and return its result: the one path of every request.

        Args:
            method, params: the request (``params`` is not mutated unless ``owned``).
            progress: called with the params of each progress notification for this call.
            options: a deadline of its own, a clock restarted by progress, a hard maximum, a
                task-augmented result (:class:`~mcphost.rpc.calls.CallOptions`; ``None``:
                the defaults).
            owned: the caller gives ``params`` away (the progress token may be written
                into it).

        Raises:
            ServerError, TimeoutError, ServerUnavailableError, ProtocolError, UsageError.
        """
        peer = self.peer
        modern = self.modern
        if modern is None:
            return await peer.wait(peer.start_request(method, params, progress, options, owned))
        try:
            result = await peer.wait(peer.start_request(method, params, progress, options, owned))
            return await modern.finish(method, result, (params, progress, options))
        except ServerError as exc:  # -32021 is the application's to fix (others as they came)
            raise modern.refused(method, exc) from None

    def _start_modern(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        progress: Callable[[Any], Any] | None = None,
        options: CallOptions | None = None,
        owned: bool = False,
    ) -> Call:
        """``start`` in the modern era: the request is sent, then followed by the era's rules."""
        call = self.peer.start_request(method, params, progress, options, owned)
        assert self.modern is not None
        self.modern.started(call, params, progress, options)
        return call

    def wait(self, call: Call) -> Awaitable[Any]:
        """The result of ``call`` (from :meth:`start`), to be awaited: its deadline bounds
        the whole wait. Mostly the call's future itself (no coroutine per call): a caller
        cancelled while awaiting it gives the call up with :meth:`abandon` (harmless twice)."""
        if self.modern is not None:
            return self.modern.wait(call)
        return self.peer.wait(call) if self.peer.needs_drain else call.future

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[Any], Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None,
    ) -> Any:
        """:meth:`call` with the options as keywords. A request that carries ``task`` is
        task-augmented: its result is a ``CreateTaskResult``."""
        augmented = params is not None and "task" in params
        options = CallOptions.of(timeout, reset_timeout_on_progress, max_timeout, augmented)
        return await self.call(method, params, progress, options)

    def abandon(self, call: Call) -> None:
        self.peer.abandon(call)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        self.peer.notify(method, params)

    def _on_abandoned(self, call: Call, reason: str) -> None:
        # Spec: "The client MUST NOT cancel initialize." Nor the probe: a legacy server has
        # no session to hear it in yet.
        modern = self.modern
        if modern is not None:
            modern.forget(call.rid)
        # 2026-07-28 over HTTP: closing the request's stream (forget, below) is the cancellation.
        if call.method not in ("initialize", "server/discover") and not (
                modern is not None and self.peer.transport.request_streams):
            self.peer.notify("notifications/cancelled", {"requestId": call.rid, "reason": reason})
        self.peer.transport.forget(call.rid)  # its answer is not wanted (its stream is closed)
        if reason is TIMED_OUT and self.on_timeout is not None:
            self.on_timeout(call.method)

    def _too_many(self, key: str, result: Any) -> bool:
        items = result.get(key) if type(result) is dict else None
        return type(items) is list and len(items) > self.max_list_items

    def _counted_plain(self, key: str, plain: Callable[[Any], bool] | None, result: Any) -> bool:
        # Too many items: not plain, so the full check below refuses them, uncounted.
        return not self._too_many(key, result) and plain is not None and plain(result)

    def _check_result(self, method: str, result: Any, augmented: bool) -> None:
        key = _LISTS.get(method)
        if key is not None and not augmented and self._too_many(key, result):
            raise ProtocolError(
                f"{method} lists more than {self.max_list_items} items (the bound is max_list_items)",
                server=self.name,
            )
        checker = self.checker
        if checker is not None:
            checker.result(method, result, task=augmented)

    # -- what the server sends ------------------------------------------------------------

    def _on_notification(self, method: str, params: Any) -> None:
        # (Progress never comes here: the peer hands it to _on_progress directly.)
        if self.checker is not None and not self._notification_passes(method, params):
            return
        if type(params) is not dict:
            params = {}
        if method == "notifications/cancelled":
            self.peer.cancel_served(params.get("requestId"))
        self._tell_host(method, params)

    def _on_progress(self, params: Any) -> None:
        # The peer's handler of progress notifications (one may come with every call).
        if self.checker is not None:
            plain = self._plain_progress
            if (plain is None or not plain(params)) and not self._notification_passes(_PROGRESS, params):
                return
        if type(params) is not dict:
            params = {}
        try:
            call = self._progress_calls.get(params.get("progressToken"))
        except TypeError:  # an unhashable token names no call
            call = None
        if call is not None:
            if call.reset:
                self.peer.deadlines.progressed(call)
            callback = call.progress
            if callback is not None:
                try:
                    outcome = callback(params)
                    if outcome is not None and inspect.isawaitable(outcome):
                        self.tasks.start(outcome, "progress callback")
                except Exception:
                    logger.exception("%s: progress callback failed", self.name)
        if self.forward_progress:
            self._tell_host(_PROGRESS, params)

    def _notification_passes(self, method: str, params: Any) -> bool:
        """The checker's full look at a notification; False if it is to be dropped."""
        assert self.checker is not None
        try:
            self.checker.notification(method, params)
        except ProtocolError as exc:  # strict mode: the notification is not acted on
            stats = self.peer.stats
            stats.protocol_errors += 1
            if stats.protocol_errors <= 5 or stats.protocol_errors % 1000 == 0:  # a flood is not logged whole
                logger.warning("%s: dropped (#%d): %s", self.name, stats.protocol_errors, exc.message)
            return False
        return True

    def _tell_host(self, method: str, params: dict[str, Any]) -> None:
        handler = self.on_notification
        if handler is not None:
            try:
                handler(method, params)
            except Exception:
                logger.exception("%s: notification handler failed for %s", self.name, method)

    async def answer_input(self, method: str, params: dict[str, Any]) -> Any:
        """The application's answer to a modern server's input request (``roots/list``,
        ``sampling/createMessage``, ``elicitation/create``): the same handlers, limits and
        checks as the legacy server's request of that method."""
        return await self.requests.answer(method, params)

    def _on_closed(self, err: MCPHostError) -> None:
        self.served.close()
        self.tasks.close()
        if self.on_closed is not None:
            self.on_closed(err)


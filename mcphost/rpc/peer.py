"""A role-neutral JSON-RPC 2.0 peer over one transport: correlation, deadlines, serving.

Layer 3. A :class:`Peer` is its transport's receiver: what the other side sends is
dispatched as soon as it is read, in the same loop turn (no reader task to wake).
Responses complete the caller's future (no task per response); notifications go to the owner's
``on_notification``, or to a handler of their method in ``notification_handlers`` (the frequent
ones); requests go to the owner's ``on_request``, which answers through the peer's
:class:`~mcphost.rpc.serving.Responder` (its ``respond``, ``respond_error``, ``serve`` and
``cancel_served`` are the peer's): at once, or from a handler run as a task of its own.

It knows no method by name. What a protocol on top decides is given to it as callables:
``on_abandoned`` (a call was given up: the owner tells the other side, or not),
``tag_progress`` (where a request carries the token that progress notifications will
name), ``prepare`` (what else a request carries), ``result_check`` and ``plain_results`` (checks of results, with a fast path).

Nothing is left hanging:

- every request has a deadline (:mod:`~mcphost.rpc.deadlines`); when it passes the caller
  gets :class:`~mcphost.errors.TimeoutError`;
- a caller that cancels its ``await`` gives the call up (``on_abandoned``);
- a message the transport could not read fails the call it answered, or every call when
  which one is unknown;
- when the transport is gone every pending call fails at once with
  :class:`~mcphost.errors.ServerUnavailableError` carrying the transport's reason.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import math
from collections.abc import Callable
from typing import Any, Final

from .._json import dumps, encode_unchecked, nonfinite
from ..errors import (
    MCPHostError,
    ProtocolError,
    ServerError,
    ServerUnavailableError,
    TimeoutError,
    TransportError,
    UsageError,
)
from ..protocol import jsonrpc
from ..protocol.machine import PEER_TRANSITIONS, PeerState, move
from ..transports.base import NOTIFICATION, REQUEST, Gone, Transport
from .calls import Call, CallOptions, PeerStats, Prepare, TimedCall
from .deadlines import Deadlines, Scheduler
from .serving import Responder

__all__ = ["TIMED_OUT", "Call", "CallOptions", "Peer", "PeerStats", "TimedCall"]

logger = logging.getLogger("mcphost.rpc")

_INF: Final = math.inf
_Future: Final = asyncio.Future
_CLOSED: Final = PeerState.CLOSED
_GONE: Final = PeerState.GONE
#: The reason ``on_abandoned`` is given for a call whose deadline passed.
TIMED_OUT: Final = "request timed out"


class Peer:
    """JSON-RPC over one transport, for the other side named ``name``."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        request_timeout: float = 60.0,
        scheduler: Scheduler | None = None,
        on_request: Callable[[Any, str, Any], None] | None = None,
        on_notification: Callable[[str, Any], None] | None = None,
        on_closed: Callable[[MCPHostError], None] | None = None,
        on_abandoned: Callable[[Call, str], None] | None = None,
        tag_progress: Callable[[dict[str, Any] | None, Any, bool], dict[str, Any]] | None = None,
    ) -> None:
        self.name = name
        self.transport = transport
        self.on_request = on_request
        self.on_notification = on_notification
        #: Told once when the transport goes away by itself (not after aclose()).
        self.on_closed = on_closed
        self.on_abandoned = on_abandoned
        self.tag_progress = tag_progress
        self.prepare: Prepare | None = None  # what else every request carries (see Prepare)
        #: Checks a result before the caller gets it: ``(method, result, augmented)``,
        #: raising ``ProtocolError``; ``None``: nothing is checked.
        self.result_check: Callable[[str, Any, bool], None] | None = None
        #: method -> a quick test that accepts a result without the full check.
        self.plain_results: dict[str, Callable[[Any], bool]] = {}
        self.stats = PeerStats()
        self._calls: jsonrpc.Correlator[Call] = jsonrpc.Correlator()
        self._pending = self._calls.pending
        self._ids = self._calls.ids
        #: Pending calls by progress token (a call's token is its id).
        self.progress_calls: dict[Any, Call] = {}
        #: method -> handler of its params: notifications dispatched without
        #: ``on_notification`` (the session's progress, one per call in flight).
        self.notification_handlers: dict[str, Callable[[Any], None]] = {}
        self._loop = asyncio.get_running_loop()
        #: Answers to the other side's requests (:class:`~.serving.Responder`): its
        #: ``respond``, ``respond_error``, ``serve`` and ``cancel_served`` are the peer's.
        self.responder = Responder(transport, lambda: self._refusal is not None)
        self.respond = self.responder.respond
        self.respond_error = self.responder.respond_error
        self.serve = self.responder.serve
        self.cancel_served = self.responder.cancel_served
        self.deadlines = Deadlines(
            scheduler if scheduler is not None else self._loop,
            self._pending,
            request_timeout,
            self._on_expired,
        )
        #: The transport holds more than it wants: ``await drain()`` before sending more
        #: (an attribute the transport keeps current through ``on_write_paused``).
        self.needs_drain = False
        self._state = PeerState.OPEN
        #: What a request gets once the peer is closing, closed or gone (``None``: open).
        self._refusal: MCPHostError | None = None
        self._done = asyncio.Event()
        #: How the transport ended (``None`` while it is up).
        self.gone: Gone | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Receive from the transport (already started)."""
        self.transport.set_receiver(self)

    @property
    def state(self) -> PeerState:
        return self._state

    def _move(self, new: PeerState) -> None:
        # The peer's one writer of its state (protocol/lifecycle.py: PEER_TRANSITIONS).
        move(PEER_TRANSITIONS, self._state, new, "peer")
        self._state = new

    @property
    def request_timeout(self) -> float:
        """Seconds a request waits by default (``0`` or ``math.inf``: no timeout)."""
        return self.deadlines.default

    @property
    def closed(self) -> bool:
        """No request can be sent any more (closing, closed, or gone)."""
        return self._refusal is not None

    @property
    def pending(self) -> int:
        return len(self._calls)

    async def drain(self) -> None:
        await self.transport.drain()

    async def wait_closed(self) -> None:
        await self._done.wait()

    async def aclose(self, timeout: float = 10.0, reason: str = "server was shut down") -> Gone:
        """Close the transport and fail whatever is still pending (with ``reason``)."""
        if self._state is PeerState.OPEN:
            self._move(PeerState.CLOSING)
            self._refusal = ServerUnavailableError(reason, server=self.name)
        gone = await self.transport.aclose(timeout)
        if self._state is PeerState.CLOSING:
            self._move(PeerState.CLOSED)
        self._fail_all(lambda: ServerUnavailableError(reason, server=self.name))
        self._done.set()
        if self.gone is None:
            self.gone = gone
        return gone

    # -- outgoing -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: Callable[[Any], Any] | None = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None,
        augmented: bool = False,
    ) -> Any:
        """Send a request and return its ``result``: :meth:`start_request` then :meth:`wait`
        (the options are those of :class:`~mcphost.rpc.calls.CallOptions`).

        Raises:
            ServerError: the other side answered with a JSON-RPC error.
            TimeoutError: no answer in time.
            ServerUnavailableError: the transport is gone or went away meanwhile.
            UsageError: ``params`` cannot be encoded as JSON; a bad option.
        """
        options = CallOptions.of(timeout, reset_timeout_on_progress, max_timeout, augmented)
        return await self.wait(self.start_request(method, params, progress, options))

    def start_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        progress: Callable[[Any], Any] | None = None,
        options: CallOptions | None = None,
        owned: bool = False,
    ) -> Call:
        """Send a request now and return its pending call; :meth:`wait` gives its result.

        The one sending path of the peer: every request, the commonest included, is built,
        encoded, sent and given its deadline here. ``progress`` is called with the params of
        each progress notification naming this call. ``options`` (``None``: the defaults)
        asks for another deadline or a result of the alternate shape. With ``owned`` the
        caller gives ``params`` away (a dict it built for this request): ``tag_progress``
        may write into it rather than into a copy.

        Raises:
            ServerUnavailableError: the peer is closed or gone (its reason).
            UsageError: ``params`` cannot be encoded as JSON; a bad option.
        """
        if self._refusal is not None:
            raise self._unavailable()
        rid = next(self._ids)
        if options is None:
            # The default deadline, Deadlines.watch_default's rule written out on the hottest
            # path (no frame). (asyncio.Future(loop=...) is what the loop's create_future()
            # returns, without that method's frame.)
            deadlines = self.deadlines
            seconds = deadlines.default
            expires = deadlines.now() + seconds if 0 < seconds < _INF else _INF
            call = Call(_Future(loop=self._loop), method, rid, progress, expires)
            if expires < deadlines.watchdog_at:
                deadlines.arm(expires)
        else:
            call = TimedCall.made_with(options, _Future(loop=self._loop), method, rid, progress)
            progress = call.progress
        if progress is not None and self.tag_progress is not None:
            params = self.tag_progress(params, rid, owned)
        params, headers = (params, ()) if (prepare := self.prepare) is None else prepare(method, params, owned)
        if params is None:
            msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        else:
            msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        try:
            data = encode_unchecked(msg)
            # NaN and infinities are not JSON (orjson would write null): refused the same way
            # by both codecs; only a message with a null can hold one (rfind: on bytes, half
            # the cost of ``in``).
            if data.rfind(b"null") >= 0 and nonfinite(msg):
                raise ValueError("NaN and Infinity are not JSON")
        except (TypeError, ValueError, RecursionError) as exc:
            # (RecursionError: the standard library's encoder on params nested too deep.)
            what = "nested too deep" if isinstance(exc, RecursionError) else str(exc)
            raise UsageError(f"{method}: params are not JSON-serialisable: {what}", server=self.name) from None
        pending = self._pending
        pending[rid] = call
        if progress is not None:
            self.progress_calls[rid] = call
        # Alone in flight (a sequential caller): written at once. Otherwise the transport
        # gathers this loop turn's requests into one write.
        self.transport.send(data, REQUEST, method, len(pending) == 1, headers)
        self.stats.requests += 1
        if options is not None:
            self.deadlines.watch(call, options.timeout, call.reset, options.max_timeout)
        return call

    async def wait(self, call: Call) -> Any:
        """The result of ``call`` (sent by :meth:`start_request`): the one place a caller waits.

        The call's deadline bounds the whole wait, the wait for a full write buffer (a
        server that stops reading) included. A caller cancelled while waiting gives the call
        up (``on_abandoned`` is told) and is cancelled: its cancellation is never swallowed.
        """
        try:
            if self.needs_drain:
                await self._drain_within(call.future)
            return await call.future
        except asyncio.CancelledError:
            self.abandon(call)
            raise

    async def _drain_within(self, future: asyncio.Future[Any]) -> None:
        """Wait until the transport takes more, or ``future`` is done (its deadline passed,
        the transport went away), whichever comes first."""
        drain = self._loop.create_task(self.transport.drain())
        try:
            await asyncio.wait((drain, future), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not drain.done():
                drain.cancel()
            elif not drain.cancelled() and drain.exception() is not None:
                # The transport failed while we waited: the call fails with the reason the
                # transport gives the peer (on_gone), not with the drain's.
                logger.debug("%s: drain failed: %r", self.name, drain.exception())

    def abandon(self, call: Call) -> None:
        """The caller of ``call`` was cancelled: stop waiting (``on_abandoned`` is told)."""
        future = call.future
        if not future.done() or future.cancelled():
            self.give_up(call.rid, "request cancelled by the client")

    def give_up(self, rid: Any, reason: str) -> None:
        """Stop waiting for our request ``rid`` (its caller's await is cancelled)."""
        call = self._calls.abandon(rid)
        if call is None:
            return
        self._forget(call)
        self.stats.cancelled += 1
        if self.on_abandoned is not None:
            self.on_abandoned(call, reason)
        if not call.future.done():
            call.future.cancel()

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (dropped if the peer is closed)."""
        if self._refusal is not None:
            return
        self.transport.send(dumps(jsonrpc.notification(method, params)), NOTIFICATION, method)

    def _forget(self, call: Call) -> None:
        if call.timer is not None:
            call.timer.cancel()
        if call.progress is not None:
            self.progress_calls.pop(call.rid, None)

    def _on_expired(self, rid: Any) -> None:
        call = self._calls.abandon(rid)
        if call is None:
            return
        self._forget(call)
        self.stats.timeouts += 1
        if self.on_abandoned is not None:
            self.on_abandoned(call, TIMED_OUT)
        if not call.future.done():
            if self.deadlines.hard_maximum_reached(call):
                what = "reached its hard maximum time"
            else:
                what = f"timed out after {call.timeout or self.deadlines.default:g} s"
            call.future.set_exception(TimeoutError(f"{call.method} {what}", server=self.name))

    # -- the transport's receiver ---------------------------------------------------------

    def on_messages(self, messages: list[Any]) -> None:
        """The transport read ``messages``: act on them now, in order."""
        state = self._state
        if state is _CLOSED or state is _GONE:
            return  # the transport is gone: anything read now is ignored
        try:
            self._dispatch(messages)
        except Exception as exc:  # pragma: no cover - a bug here must not hang callers
            logger.exception("%s: dispatch failed", self.name)
            self.on_gone(Gone(f"reader failed: {exc}"))

    def _dispatch(self, messages: list[Any]) -> None:
        # The common cases (a successful response to a pending call, a notification) are
        # handled here, inline: this loop runs once per message and each step in it shows
        # in the throughput. Anything unusual takes the full path through _handle.
        pending = self._pending
        checked = self.result_check is not None
        plain_results = self.plain_results
        notification_handlers = self.notification_handlers
        for decoded in messages:
            if type(decoded) is not dict:
                self._on_batch(decoded)
                continue
            if decoded.get("jsonrpc") == "2.0":
                if "method" not in decoded:
                    # Three members with "result" among them: an id and no "error".
                    if "result" in decoded and (len(decoded) == 3 or "error" not in decoded):
                        rid: Any = decoded.get("id")
                        # Our ids are ints; anything else (true, an array...) goes the
                        # long way, where it is found out.
                        call = pending.pop(rid, None) if type(rid) is int else None
                        if call is not None:
                            if call.progress is not None:
                                del self.progress_calls[rid]
                            if call.timer is not None:
                                call.timer.cancel()
                            future = call.future
                            if not future.done():
                                result = decoded["result"]
                                if not checked:
                                    future.set_result(result)
                                else:
                                    plain = None if call.augmented else plain_results.get(call.method)
                                    if plain is not None and plain(result):
                                        future.set_result(result)
                                    else:
                                        self._resolve_checked(call, result)
                            continue
                elif "id" not in decoded:
                    method = decoded["method"]
                    if type(method) is str:
                        self.stats.notifications += 1
                        direct = notification_handlers.get(method)
                        if direct is not None:
                            direct(decoded.get("params"))
                            continue
                        handler = self.on_notification
                        if handler is not None:
                            handler(method, decoded.get("params"))
                        continue
            self._handle(decoded)

    def _on_batch(self, decoded: Any) -> None:
        """A message that is not an object: a batch (its objects take the same path as
        single messages), or an error."""
        try:
            messages = jsonrpc.split_batch(decoded)
        except ProtocolError as exc:
            self._protocol_error(exc)
            return
        for msg in messages:
            if type(msg) is dict:
                self._dispatch([msg])
            else:
                self._handle(msg)  # a nested array or a scalar: refused, saying what it is

    def _handle(self, msg: Any) -> None:
        """Anything :meth:`_dispatch` does not take inline: a checked result, an error
        response, a request of the other side, or a message that breaks the rules."""
        try:
            kind = jsonrpc.classify(msg)
            if kind == jsonrpc.RESPONSE:
                call = self._calls.pop(msg["id"])
                if call is not None:
                    self._forget(call)
                    self._resolve_checked(call, msg["result"])
            elif kind == jsonrpc.ERROR:
                call = self._calls.pop(msg["id"])
                if call is not None:
                    self._forget(call)
                    self.stats.errors += 1
                    if not call.future.done():
                        code, message, data = jsonrpc.error_from_object(msg["error"])
                        call.future.set_exception(
                            ServerError(
                                f"{call.method} failed: {message} (code {code})",
                                server=self.name,
                                code=code,
                                data=data,
                            )
                        )
            elif kind == jsonrpc.REQUEST:
                # (A valid notification never comes here: _dispatch took it.)
                self.stats.server_requests += 1
                if self.on_request is None:
                    self.respond_error(
                        msg["id"], jsonrpc.METHOD_NOT_FOUND, f"method {msg['method']!r} is not supported"
                    )
                else:
                    self.on_request(msg["id"], msg["method"], msg.get("params"))
        except ProtocolError as exc:  # a request refused for its params waits for an answer
            self._protocol_error(exc, jsonrpc.refusable_id(msg))

    def _resolve_checked(self, call: Call, result: Any) -> None:
        """Complete ``call`` with ``result`` once the check (if any) has seen it."""
        future = call.future
        if future.done():
            return
        check = self.result_check
        if check is not None:
            try:
                check(call.method, result, call.augmented)
            except ProtocolError as exc:  # the caller gets the reason
                self.stats.protocol_errors += 1
                future.set_exception(exc)
                return
        future.set_result(result)

    def protocol_error(self, message: str) -> None:
        """Count and log (bounded) a message of the other side that broke the rules."""
        self._protocol_error(ProtocolError(message, server=self.name))

    def _protocol_error(self, exc: ProtocolError, answer: Any = None) -> None:
        if answer is not None:  # the id of a request refused for its params alone: -32602
            self.respond_error(answer, jsonrpc.INVALID_PARAMS, f"{exc.message}: params must be an object")
        self.stats.protocol_errors += 1
        count = self.stats.protocol_errors
        if count <= 5 or count % 1000 == 0:
            logger.warning("%s: protocol error from server (#%d): %s", self.name, count, exc.message)

    def on_write_paused(self, paused: bool) -> None:
        """The transport's write buffer went over (True) or back under (False) its mark."""
        self.needs_drain = paused

    def on_undeliverable(self, request_id: Any, reason: str) -> None:
        """A message could not be read: fail the call it answered, or all of them."""
        self.stats.protocol_errors += 1
        call = self._calls.abandon(request_id) if request_id is not None else None
        if call is not None:
            self._forget(call)
            if not call.future.done():
                call.future.set_exception(ProtocolError(f"{call.method}: {reason}", server=self.name))
        elif request_id is None:
            # Which call it answered is unknown: fail them all rather than let one hang.
            self._fail_all(lambda: ProtocolError(reason, server=self.name))

    def on_failed(self, request_id: Any, error: TransportError) -> None:
        """The transport failed the exchange of a request on its way: that call (``None``:
        every call waiting) fails with the transport's error, as it is."""
        call = self._calls.abandon(request_id) if request_id is not None else None
        if call is not None:
            self._forget(call)
            if not call.future.done():
                call.future.set_exception(error)
        elif request_id is None:
            self._fail_all(lambda: copy.copy(error))

    def on_gone(self, gone: Gone) -> None:
        """The transport is gone: every pending call fails with its reason."""
        before = self._state
        if before is _CLOSED or before is _GONE:
            return
        self._move(PeerState.GONE)
        self.gone = gone

        def error() -> MCPHostError:
            return ServerUnavailableError(
                gone.reason, server=self.name, exit_code=gone.exit_code, stderr_tail=gone.stderr_tail
            )

        exc = error()
        if self._refusal is None:
            self._refusal = exc
        self._fail_all(error)
        self._done.set()
        if self.on_closed is not None and before is PeerState.OPEN:
            self.on_closed(exc)

    def _unavailable(self) -> MCPHostError:
        closed = self._refusal
        assert closed is not None
        if isinstance(closed, ServerUnavailableError):
            return ServerUnavailableError(
                closed.message, server=self.name, exit_code=closed.exit_code, stderr_tail=closed.stderr_tail
            )
        return closed

    def _fail_all(self, make_error: Callable[[], MCPHostError]) -> None:
        if self._refusal is not None:
            self.deadlines.close()
        for call in self._calls.drain():
            self._forget(call)
            if not call.future.done():
                call.future.set_exception(make_error())
        self.responder.cancel_all()


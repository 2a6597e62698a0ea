"""One server connection: a transport bound to JSON-RPC correlation, timeouts, cancellation.

Layer 3. A :class:`Connection` is the transport's receiver: everything a server sends is
dispatched as soon as it is read, in the same loop turn (no reader task to wake):
responses complete the caller's future (no task per response),
notifications go to the host's handler, and each server request runs in its own task so a
slow one (sampling) never blocks another (ping). The connection guarantees that no call is
left hanging:

- every request has a deadline (a timer handle, not a task); when it fires the caller gets
  :class:`~mcphost.errors.TimeoutError` and the server gets ``notifications/cancelled``
  ("SHOULD ... send notifications/cancelled and stop waiting", spec §A.5);
- a caller that cancels its ``await`` also sends ``notifications/cancelled``;
- progress notifications can push the deadline back, up to a hard maximum (spec: "MAY reset
  the clock on progress but SHOULD enforce a hard maximum");
- when the stream ends every pending call fails at once with
  :class:`~mcphost.errors.ServerUnavailableError` carrying the exit code and stderr tail.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import inspect
import logging
import math
import re
from collections.abc import Awaitable, Callable
from time import monotonic as _monotonic
from typing import Any, Final

from .errors import (
    MCPHostError,
    ProtocolError,
    ServerError,
    ServerUnavailableError,
    TimeoutError,
)
from .protocol import jsonrpc
from .protocol.jsonrpc import dumps, loads
from .transports.base import ExitInfo, Transport
from .wire.framing import Oversized

__all__ = ["Connection", "ConnectionStats", "RequestHandler", "NotificationHandler"]

logger = logging.getLogger("mcphost.connection")

RequestHandler = Callable[[str, dict[str, Any]], Awaitable[Any]]
NotificationHandler = Callable[[str, dict[str, Any]], None]
ProgressCallback = Callable[[dict[str, Any]], Any]

_EXIT_WAIT: Final = 2.0
_INF: Final = math.inf
_OVERSIZED_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
)
_OVERSIZED_METHOD = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:')


class ConnectionStats:
    """Counters of one connection (plain ints, read by the host's metrics)."""

    __slots__ = (
        "cancelled",
        "errors",
        "noise_lines",
        "notifications",
        "protocol_errors",
        "requests",
        "server_requests",
        "timeouts",
    )

    def __init__(self) -> None:
        self.requests = 0
        self.errors = 0
        self.timeouts = 0
        self.cancelled = 0
        self.notifications = 0
        self.server_requests = 0
        self.noise_lines = 0
        self.protocol_errors = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class _Call:
    """A request waiting for its response. Its progress token is its request id."""

    # Slots, every one set here: reading a slot costs a third of reading a class default,
    # and the reader looks at several per response.
    __slots__ = (
        "deadline", "expires", "future", "method", "progress", "reset", "rid", "task",
        "timeout", "timer",
    )

    def __init__(
        self, future: asyncio.Future[Any], method: str, rid: int | str, progress: ProgressCallback | None
    ) -> None:
        self.future = future
        self.method = method
        self.rid = rid
        self.progress = progress
        #: Task-augmented: answered with a ``CreateTaskResult``.
        self.task = False
        #: ``time.monotonic()`` at which a call on the connection's default timeout
        #: expires; such calls are watched in sending order (``Connection._on_watchdog``).
        self.expires = _INF
        #: Seconds of a timeout other than the connection's default (0: the default).
        self.timeout = 0.0
        #: Own timer, for calls whose clock restarts on progress or that have a hard maximum.
        self.timer: asyncio.TimerHandle | None = None
        self.reset = False
        #: Loop time of the hard maximum.
        self.deadline = _INF


class Connection:
    """JSON-RPC over one transport, for one server named ``name``."""

    def __init__(
        self,
        name: str,
        transport: Transport,
        *,
        request_timeout: float = 60.0,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        on_closed: Callable[[MCPHostError], None] | None = None,
    ) -> None:
        self.name = name
        self.transport = transport
        # Fixed for the connection's life: calls on it expire in sending order only while
        # it does not change (read-only below).
        self._request_timeout = request_timeout
        self.on_request = on_request
        self.on_notification = on_notification
        self.on_closed = on_closed
        self.stats = ConnectionStats()
        self._calls: jsonrpc.Correlator[_Call] = jsonrpc.Correlator()
        self._pending = self._calls.pending
        self._ids = self._calls.ids
        self._progress: dict[int | str, _Call] = {}
        self._serving: dict[int | str, asyncio.Task[None]] = {}
        self._ended = False  # the transport's stream has ended (or the reading failed)
        self._eof_task: asyncio.Task[None] | None = None
        self._closed: MCPHostError | None = None
        self._closing = False
        self._done = asyncio.Event()
        self._noise_logged = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.exit: ExitInfo | None = None
        # Plain timeouts share one watchdog timer; a timer handle per request costs more
        # than the rest of the request path. Calls on the default timeout expire in sending
        # order, so the watchdog reads them from the pending calls themselves (insertion
        # order); any other timeout value has a queue of (deadline, id) in sending order.
        self._deadlines: dict[float, collections.deque[tuple[float, int | str]]] = {}
        self._watchdog: asyncio.TimerHandle | None = None
        self._watchdog_at = math.inf
        #: Checks what the server sends against the MCP schemas of the negotiated version
        #: (a :class:`~mcphost.protocol.messages.MessageChecker`); ``None``: nothing is checked.
        self.checker: Any = None
        #: Pass progress notifications on to ``on_notification`` too (the host sets this
        #: while the application has ``on_progress`` handlers; per-call callbacks are
        #: called by the connection either way).
        self.forward_progress = True

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        """Receive from the transport (already started): what it reads is dispatched at
        once, in the same loop turn."""
        self._loop = asyncio.get_running_loop()
        self.transport.set_receiver(self._on_frames, self._on_end)

    @property
    def request_timeout(self) -> float:
        """Seconds a request waits by default (``0`` or ``math.inf``: no timeout)."""
        return self._request_timeout

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @property
    def pending(self) -> int:
        return len(self._calls)

    async def wait_closed(self) -> None:
        await self._done.wait()

    async def aclose(self, timeout: float = 10.0) -> ExitInfo:
        """Shut the peer down (transport's ladder) and fail whatever is still pending."""
        self._closing = True
        if self._closed is None:
            self._closed = ServerUnavailableError("server was shut down", server=self.name)
        info = await self.transport.aclose(timeout)
        self._ended = True  # anything read from now on is ignored
        ending = self._eof_task
        if ending is not None and not ending.done():
            # The stream had ended before: let its clean-up finish (it is bounded).
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(ending), _EXIT_WAIT)
        self._fail_all(lambda: ServerUnavailableError("server was shut down", server=self.name))
        self._done.set()
        if self.exit is None:
            self.exit = info
        return info

    # -- outgoing -------------------------------------------------------------------------

    async def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None,
    ) -> Any:
        """Send a request and return its ``result``.

        Args:
            method: the JSON-RPC method.
            params: its params (not mutated).
            timeout: seconds before giving up (``None``: the connection default;
                ``0`` or ``math.inf``: no timeout).
            progress: called with each ``notifications/progress`` params; asks the server
                for progress by putting ``_meta.progressToken`` on the request.
            reset_timeout_on_progress: each progress notification restarts the timeout.
            max_timeout: hard maximum in seconds, even with progress resets.

        Raises:
            ServerError: the server answered with a JSON-RPC error.
            TimeoutError: no answer in time (``notifications/cancelled`` was sent).
            ServerUnavailableError: the server is gone or went away meanwhile.
        """
        call = self.start_request(
            method,
            params,
            timeout=timeout,
            progress=progress,
            reset_timeout_on_progress=reset_timeout_on_progress,
            max_timeout=max_timeout,
        )
        future = call.future
        try:
            if self.transport.needs_drain:
                await self.transport.drain()
            return await future
        except asyncio.CancelledError:
            self.abandon(call)
            raise

    def abandon(self, call: _Call) -> None:
        """The caller of ``call`` was cancelled: stop waiting and tell the server."""
        future = call.future
        if not future.done() or future.cancelled():
            self._give_up(call.rid, "request cancelled by the client")

    def start_request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        timeout: float | None = None,
        progress: ProgressCallback | None = None,
        reset_timeout_on_progress: bool = False,
        max_timeout: float | None = None,
        params_owned: bool = False,
    ) -> _Call:
        """Send a request now and return its pending call; the caller awaits ``.future``.

        This is :meth:`request` without the ``await``, for hot paths that wait themselves
        (one coroutine frame less per call). A caller that stops waiting must call
        :meth:`abandon`, and should await ``transport.drain()`` first when
        ``transport.needs_drain`` says so. With ``params_owned`` the caller gives
        ``params`` away (a dict it built for this request): the progress token is put into
        it rather than into a copy.
        """
        if self._closed is not None:
            raise self._unavailable()
        loop = self._loop or asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        rid = next(self._ids)
        call = self._pending[rid] = _Call(future, method, rid, progress)
        if params is not None and "task" in params and self.checker is not None:
            call.task = True  # its result is a CreateTaskResult
        if progress is not None:
            # The token goes into _meta; the caller's dicts are not touched unless given.
            old_meta = params.get("_meta") if params else None
            meta = {**old_meta, "progressToken": rid} if old_meta else {"progressToken": rid}
            if params_owned and params is not None:
                params["_meta"] = meta
            else:
                params = {**params, "_meta": meta} if params else {"_meta": meta}
            self._progress[rid] = call
        if params is None:
            msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        else:
            msg = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
        try:
            data = dumps(msg)
        except (TypeError, ValueError) as exc:
            self._calls.abandon(rid)
            self._progress.pop(rid, None)
            raise ProtocolError(f"{method}: params are not JSON-serialisable: {exc}") from None
        # Alone in flight (a sequential caller): write at once. Otherwise let the transport
        # gather this loop turn's requests into one write.
        self.transport.send(data, len(self._pending) == 1)
        self.stats.requests += 1
        reset = reset_timeout_on_progress and progress is not None
        if (
            (timeout is None or timeout == self._request_timeout)
            and not reset
            and (max_timeout is None or max_timeout <= 0)
        ):
            # The connection's default: watched in sending order, no timer of its own.
            seconds = self._request_timeout
            if 0 < seconds < _INF:
                expires = call.expires = _monotonic() + seconds
                if expires < self._watchdog_at:
                    self._arm_watchdog(loop, expires)
        else:
            self._set_timeout(loop, call, timeout, reset, max_timeout)
        return call

    def _set_timeout(
        self,
        loop: asyncio.AbstractEventLoop,
        call: _Call,
        timeout: float | None,
        reset: bool,
        max_timeout: float | None,
    ) -> None:
        """Any timeout but the plain default: own timer (resets on progress, hard maximum)
        or the queue of its value."""
        seconds = self._request_timeout if timeout is None else timeout
        rid = call.rid
        if 0 < seconds < math.inf:
            call.timeout = seconds
            if max_timeout is not None and max_timeout > 0:
                call.deadline = loop.time() + max_timeout
                seconds = min(seconds, max_timeout)
                call.timer = loop.call_later(seconds, self._on_timeout, rid)
            elif reset:
                call.timer = loop.call_later(seconds, self._on_timeout, rid)
            else:
                self._add_deadline(loop, seconds, rid)
            call.reset = reset
        elif max_timeout is not None and max_timeout > 0:
            call.deadline = loop.time() + max_timeout
            call.timer = loop.call_later(max_timeout, self._on_timeout, rid)

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        """Send a notification (silently dropped if the connection is closed)."""
        if self._closed is not None:
            return
        self.transport.send(dumps(jsonrpc.notification(method, params)))

    def cancel_request(self, request_id: int | str, reason: str) -> None:
        """Give up on our request ``request_id`` and tell the server."""
        self._give_up(request_id, reason)

    def _give_up(self, rid: int | str, reason: str) -> None:
        call = self._calls.abandon(rid)
        if call is not None:
            self._forget(call)
            self.stats.cancelled += 1
        if call is not None and call.method != "initialize":
            # Spec: "The client MUST NOT cancel initialize."
            self.notify("notifications/cancelled", {"requestId": rid, "reason": reason})
        if call is not None and not call.future.done():
            call.future.cancel()

    def _forget(self, call: _Call) -> None:
        if call.timer is not None:
            call.timer.cancel()
            call.timer = None
        if call.progress is not None:
            self._progress.pop(call.rid, None)

    def _add_deadline(self, loop: asyncio.AbstractEventLoop, seconds: float, rid: int | str) -> None:
        queue = self._deadlines.get(seconds)
        if queue is None:
            queue = self._deadlines[seconds] = collections.deque()
        else:
            pending = self._calls.pending
            while queue and queue[0][1] not in pending:
                queue.popleft()  # answered already: drop from the head, amortised O(1)
        deadline = _monotonic() + seconds
        queue.append((deadline, rid))
        if deadline < self._watchdog_at:
            self._arm_watchdog(loop, deadline)

    def _arm_watchdog(self, loop: asyncio.AbstractEventLoop, when: float) -> None:
        """Run the watchdog at ``when`` (``time.monotonic()`` time, as every plain deadline:
        it costs less per request than ``loop.time()``)."""
        if self._watchdog is not None:
            self._watchdog.cancel()
        self._watchdog_at = when
        self._watchdog = loop.call_later(max(when - _monotonic(), 0.0), self._on_watchdog)

    def _on_watchdog(self) -> None:
        loop = self._loop
        assert loop is not None
        self._watchdog = None
        self._watchdog_at = math.inf
        now = _monotonic()
        pending = self._pending
        earliest = math.inf
        # Calls on the default timeout, oldest first: their deadlines only grow, so the
        # first one not yet due ends the walk. Calls watched otherwise (expires = inf) are
        # stepped over.
        expired = []
        for rid, call in pending.items():
            expires = call.expires
            if expires <= now:
                expired.append(rid)
            elif expires < math.inf:
                earliest = expires
                break
        for rid in expired:
            self._on_timeout(rid)
        for seconds, queue in list(self._deadlines.items()):
            while queue:
                deadline, rid = queue[0]
                if rid not in pending:
                    queue.popleft()
                elif deadline <= now:
                    queue.popleft()
                    self._on_timeout(rid)
                else:
                    earliest = min(earliest, deadline)
                    break
            if not queue:
                del self._deadlines[seconds]
        if earliest < math.inf and not self._closed:
            self._arm_watchdog(loop, earliest)

    def _on_timeout(self, rid: int | str) -> None:
        call = self._calls.abandon(rid)
        if call is None:
            return
        self._forget(call)
        self.stats.timeouts += 1
        loop = self._loop
        hard = loop is not None and loop.time() >= call.deadline - 1e-3
        if call.method != "initialize":
            self.notify(
                "notifications/cancelled", {"requestId": rid, "reason": "request timed out"}
            )
        if not call.future.done():
            if hard and call.deadline < math.inf:
                what = "reached its hard maximum time"
            else:
                what = f"timed out after {call.timeout or self._request_timeout:g} s"
            call.future.set_exception(
                TimeoutError(f"{call.method} {what}", server=self.name)
            )

    # -- incoming -------------------------------------------------------------------------

    def _on_frames(self, frames: list[bytes]) -> None:
        """The transport read ``frames``: act on them now."""
        if self._ended:
            return
        try:
            self._dispatch(frames)
            if self.transport.oversized:
                self._on_oversized(self.transport.oversized)
        except Exception as exc:  # pragma: no cover - a bug here must not hang callers
            logger.exception("%s: reader failed", self.name)
            self._end(f"reader failed: {exc}")

    def _on_end(self) -> None:
        """The transport's stream ended."""
        self._end(None)

    def _end(self, cause: str | None) -> None:
        if self._ended:
            return
        self._ended = True
        if not self._closing:
            loop = self._loop or asyncio.get_running_loop()
            self._eof_task = loop.create_task(self._on_eof(cause), name=f"mcphost-eof-{self.name}")

    async def _on_eof(self, cause: str | None) -> None:
        info = await self.transport.exit_info(_EXIT_WAIT)
        self.exit = info
        if info.exit_code is None:
            what = cause or "server closed its output"
        elif info.exit_code < 0:
            what = f"server was killed by signal {-info.exit_code}"
        else:
            what = f"server exited with code {info.exit_code}"
        tail = info.stderr_tail

        def error() -> MCPHostError:
            return ServerUnavailableError(
                _with_tail(what, tail), server=self.name, exit_code=info.exit_code, stderr_tail=tail
            )

        exc = error()
        if self._closed is None:
            self._closed = exc
        logger.debug("! %s: %s", self.name, what)
        self._fail_all(error)
        self._done.set()
        if self.on_closed is not None and not self._closing:
            self.on_closed(exc)

    def _unavailable(self) -> MCPHostError:
        closed = self._closed
        assert closed is not None
        if isinstance(closed, ServerUnavailableError):
            return ServerUnavailableError(
                closed.message,
                server=self.name,
                exit_code=closed.exit_code,
                stderr_tail=closed.stderr_tail,
            )
        return closed

    def _fail_all(self, make_error: Callable[[], MCPHostError]) -> None:
        if self._closed is not None and self._watchdog is not None:
            self._watchdog.cancel()
            self._watchdog = None
            self._watchdog_at = math.inf
            self._deadlines.clear()
        for call in self._calls.drain():
            self._forget(call)
            if not call.future.done():
                call.future.set_exception(make_error())
        for task in list(self._serving.values()):
            task.cancel()

    def _dispatch(self, frames: list[bytes]) -> None:
        """Act on each message of ``frames``, in order.

        The common cases (a successful response to a pending call, a notification) are
        handled here, inline: this loop runs once per message and each step in it shows in
        the throughput. Anything unusual takes the full path through :meth:`_handle`.
        """
        pending = self._pending
        for frame in frames:
            try:
                decoded = loads(frame)
            except ValueError:
                if not frame.isspace():  # a line of blanks is no message, and no noise either
                    self._on_noise(frame)
                continue
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
                                del self._progress[rid]
                            if call.timer is not None:
                                call.timer.cancel()
                            future = call.future
                            if not future.done():
                                result = decoded["result"]
                                checker = self.checker
                                if checker is None:
                                    future.set_result(result)
                                else:
                                    plain = None if call.task else checker.plain_results.get(call.method)
                                    if plain is not None and plain(result):
                                        future.set_result(result)
                                    else:
                                        self._resolve_checked(call, result)
                            continue
                elif "id" not in decoded:
                    method = decoded["method"]
                    if method == "notifications/progress":
                        self._on_progress(decoded.get("params"))
                        continue
                    if type(method) is str:
                        self._on_notification(method, decoded.get("params"))
                        continue
            self._handle(decoded)

    def _on_batch(self, decoded: Any) -> None:
        """A line that decoded to something other than an object: a batch, or an error."""
        try:
            messages = jsonrpc.split_batch(decoded)
        except ProtocolError as exc:
            self._protocol_error(exc)
            return
        for msg in messages:
            self._handle(msg)

    def _handle(self, msg: Any) -> None:
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
            elif kind == jsonrpc.NOTIFICATION:
                self._on_notification(msg["method"], msg.get("params"))
            else:
                self._on_request(msg)
        except ProtocolError as exc:
            self._protocol_error(exc)

    def _resolve_checked(self, call: _Call, result: Any) -> None:
        """Complete ``call`` with ``result`` once the checker (if any) has seen it."""
        future = call.future
        if future.done():
            return
        checker = self.checker
        if checker is not None:
            try:
                checker.result(call.method, result, task=call.task)
            except ProtocolError as exc:  # strict mode: the caller gets the reason
                self.stats.protocol_errors += 1
                future.set_exception(exc)
                return
        future.set_result(result)

    def _protocol_error(self, exc: ProtocolError) -> None:
        self.stats.protocol_errors += 1
        count = self.stats.protocol_errors
        if count <= 5 or count % 1000 == 0:
            logger.warning("%s: protocol error from server (#%d): %s", self.name, count, exc.message)

    def _on_noise(self, frame: bytes) -> None:
        self.stats.noise_lines += 1
        if not self._noise_logged:
            self._noise_logged = True
            text = frame[:200].decode("utf-8", "replace")
            logger.warning(
                "%s: skipping non-JSON output on stdout (logged once; counted in metrics): %r",
                self.name,
                text,
            )

    def _on_oversized(self, items: list[Oversized]) -> None:
        batch = list(items)
        items.clear()
        for item in batch:
            self.stats.protocol_errors += 1
            limit = getattr(self.transport, "_framer", None)
            limit_text = f" (limit {limit.max_size} bytes)" if limit is not None else ""
            message = f"server sent a message of {item.size} bytes{limit_text}"
            logger.error("%s: %s; discarded", self.name, message)
            if _OVERSIZED_METHOD.match(item.head):
                continue  # a notification or request from the server: no call waits for it
            match = _OVERSIZED_ID.match(item.head)
            rid: Any = None
            if match:
                with contextlib.suppress(ValueError):
                    rid = loads(match.group(1))
            call = self._calls.abandon(rid) if rid is not None else None
            if call is not None:
                self._forget(call)
                if not call.future.done():
                    call.future.set_exception(
                        ProtocolError(f"{call.method}: {message}", server=self.name)
                    )
            elif rid is None:
                # Which call it answered is unknown: fail them all rather than let one hang.
                self._fail_all(
                    lambda m=message: ProtocolError(  # type: ignore[misc]
                        f"{m}; the call it answered cannot be identified", server=self.name
                    )
                )

    def _on_notification(self, method: str, params: Any) -> None:
        if method == "notifications/progress":
            self._on_progress(params)
            return
        self.stats.notifications += 1
        if self.checker is not None and not self._notification_passes(method, params):
            return
        if type(params) is not dict:
            params = {}
        if method == "notifications/cancelled":
            try:
                task = self._serving.get(params.get("requestId"))
            except TypeError:  # not a valid request id (the checker, if on, has said so)
                task = None
            if task is not None:
                task.cancel()
        self._notify_handler(method, params)

    def _on_progress(self, params: Any) -> None:
        """``notifications/progress``: to the call's callback, then (maybe) the host."""
        self.stats.notifications += 1
        checker = self.checker
        if checker is not None:
            plain = checker.plain_notifications.get("notifications/progress")
            if (plain is None or not plain(params)) and not self._notification_passes(
                "notifications/progress", params
            ):
                return
        if type(params) is not dict:
            params = {}
        try:
            call = self._progress.get(params.get("progressToken"))
        except TypeError:  # not a valid token (the checker, if on, has said so)
            call = None
        if call is not None:
            if call.reset:
                self._push_deadline(call)
            callback = call.progress
            if callback is not None:
                try:
                    outcome = callback(params)
                    if outcome is not None and inspect.isawaitable(outcome):
                        asyncio.get_running_loop().create_task(_swallow(outcome, self.name))
                except Exception:
                    logger.exception("%s: progress callback failed", self.name)
        if self.forward_progress:
            self._notify_handler("notifications/progress", params)

    def _notification_passes(self, method: str, params: Any) -> bool:
        """The checker's full look at a notification; False if it is to be dropped."""
        try:
            self.checker.notification(method, params)
        except ProtocolError as exc:  # strict mode: the notification is not acted on
            self.stats.protocol_errors += 1
            logger.warning("%s: dropped: %s", self.name, exc.message)
            return False
        return True

    def _notify_handler(self, method: str, params: dict[str, Any]) -> None:
        handler = self.on_notification
        if handler is not None:
            try:
                handler(method, params)
            except Exception:
                logger.exception("%s: notification handler failed for %s", self.name, method)

    def _push_deadline(self, call: _Call) -> None:
        """Progress arrived on a call that resets its timeout: restart the clock, capped by
        the call's hard maximum."""
        loop = self._loop
        if call.timer is not None and loop is not None:
            call.timer.cancel()
            delay = min(call.timeout, call.deadline - loop.time())
            call.timer = loop.call_later(max(delay, 0.0), self._on_timeout, call.rid)

    def _on_request(self, msg: dict[str, Any]) -> None:
        self.stats.server_requests += 1
        rid = msg["id"]
        method = msg["method"]
        if method == "ping":
            # Answered here, at once: liveness must not wait behind application handlers.
            self.transport.send(dumps(jsonrpc.response(rid, {})))
            return
        params = msg.get("params")
        if self.checker is not None:
            try:
                self.checker.request(method, params)
            except ProtocolError as exc:  # strict mode: refused, the reason in the reply
                self.stats.protocol_errors += 1
                self._reply_error(rid, jsonrpc.INVALID_PARAMS, exc.message)
                return
        if type(params) is not dict:
            params = {}
        if self.on_request is None:
            self._reply_error(rid, jsonrpc.METHOD_NOT_FOUND, f"method {method!r} is not supported")
            return
        loop = self._loop or asyncio.get_running_loop()
        task = loop.create_task(self._serve(rid, method, params))
        self._serving[rid] = task

    async def _serve(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        assert self.on_request is not None
        try:
            result = await self.on_request(method, params)
        except asyncio.CancelledError:
            # Cancelled by the server's notifications/cancelled or by close: the spec says
            # the receiver should not respond to a cancelled request.
            return
        except Exception as exc:
            code = getattr(exc, "code", None)
            if not isinstance(code, int) or isinstance(code, bool):
                code = jsonrpc.INTERNAL_ERROR
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            self._reply_error(rid, code, str(message), getattr(exc, "data", None))
            return
        finally:
            self._serving.pop(rid, None)
        checker = self.checker
        if checker is not None:
            as_task = isinstance(params.get("task"), dict) and isinstance(result, dict) and "task" in result
            problem = checker.reply(method, result, task=as_task)
            if problem is not None:
                # Never send a malformed answer: the server gets an error saying why, the
                # application's developer gets the same in the log.
                logger.error("%s: not sent, the answer is not valid MCP: %s", self.name, problem)
                self._reply_error(
                    rid, jsonrpc.INTERNAL_ERROR, f"the client's answer was invalid: {problem}"
                )
                return
        if self._closed is None:
            try:
                self.transport.send(dumps(jsonrpc.response(rid, result)))
            except (TypeError, ValueError) as exc:
                self._reply_error(rid, jsonrpc.INTERNAL_ERROR, f"result not serialisable: {exc}")

    def _reply_error(self, rid: Any, code: int, message: str, data: Any = None) -> None:
        if self._closed is None:
            self.transport.send(dumps(jsonrpc.error_response(rid, code, message, data)))


async def _swallow(awaitable: Awaitable[Any], name: str) -> None:
    try:
        await awaitable
    except Exception:
        logger.exception("%s: progress callback failed", name)


def _with_tail(message: str, tail: list[str]) -> str:
    if not tail:
        return message
    shown = tail[-10:]
    return message + "; last stderr lines:\n  " + "\n  ".join(shown)

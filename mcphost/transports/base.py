"""The contract every transport implements: move JSON-RPC messages, know no MCP.

Layer 2. A transport carries whole messages in both directions. It is told a little about
each message it sends (its kind and method: an HTTP transport answers a notification with
202, opens a session on the first request...) and pushes what it receives to one
:class:`Receiver` as soon as it is read, already decoded — no reader task, no loop turn
between the read and the dispatch. What is transport-specific stays in the transport:
stdio says "non-JSON output on stdout" and "exited with code 1" (its stderr tail beside it, as
data); an HTTP transport says "HTTP 503". The layers above see these events only::

    on_messages(list of decoded JSON values)   each a message object or a batch array
    on_undeliverable(request id or None, why)  a message was received but cannot be read
                                               (too large...); None: whose it was is unknown
    on_failed(request id or None, error)       the exchange of that request failed on its way
                                               (an HTTP status, a lost connection): a
                                               ``TransportError``, never a made-up JSON-RPC error
    on_gone(Gone)                              the peer is gone; nothing more will arrive
    on_write_paused(bool)                      what is sent piles up (flow control)

``on_gone`` is pushed exactly once, and never after :meth:`Transport.aclose` was called.

A transport whose connection carries a session of its own (Streamable HTTP's
``Mcp-Session-Id``) can lose that session while the server is still there. It never starts
a new one by itself (that is the MCP handshake, the client session's): it holds what it
is sent and tells the listener given to :meth:`Transport.watch_session` once
(:class:`SessionLost`). The client session then sends its handshake inside
:meth:`Transport.session_opening`, and calls :meth:`Transport.release_held`; or gives up
with :meth:`Transport.give_up`. A transport whose server-to-client messages travel apart
(Streamable HTTP's GET stream) tells the listener given to :meth:`Transport.watch_stream`
when that way keeps failing and when it is back. What the layers above need of a transport is a member of
this contract, with a default in :class:`BaseTransport`: nobody reaches a transport's
features by ``getattr``.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol

from .._json import loads
from ..errors import TransportError

if TYPE_CHECKING:
    from ..auth.dpop import DPoPSession
    from ..auth.store import TokenStore
    from .trace import WireTrace

__all__ = [
    "AuthHooks",
    "OnAuthorize",
    "BaseTransport",
    "GoneOnce",
    "SessionLost",
    "StreamListener",
    "REQUEST",
    "NOTIFICATION",
    "RESPONSE",
    "Gone",
    "ProcessEnd",
    "Receiver",
    "Transport",
    "Vitals",
]

# What is sent (the transport's "little metadata"): a request expects an answer; a
# notification and a response do not.
REQUEST: Final = 1
NOTIFICATION: Final = 2
RESPONSE: Final = 3


class ProcessEnd:
    """How a local server process ended: only a transport that runs one reports it.

    Attributes:
        exit_code: the exit code (negative: killed by that signal), ``None`` if unknown.
        limit: the configured resource limit it most likely died of (``"memory"``,
            ``"cpu"``, ``"files"``, ``"processes"``), else ``None``; the host words it.
        forced: it did not stop when asked and had to be killed.
    """

    __slots__ = ("exit_code", "forced", "limit")

    def __init__(self, exit_code: int | None, *, limit: str | None = None, forced: bool = False) -> None:
        self.exit_code = exit_code
        self.limit = limit
        self.forced = forced

    def __repr__(self) -> str:
        return f"ProcessEnd({self.exit_code!r}, limit={self.limit!r}, forced={self.forced!r})"


class Gone:
    """Why a transport's peer went away, in the transport's own terms.

    Attributes:
        reason: one line for people, e.g. ``server exited with code 1``.
        stderr_tail: the last diagnostic lines the peer wrote or the transport noted
            (stderr for a process, failed exchanges for a remote server).
        process: how the local process ended, for a transport that runs one; ``None``
            for the others (nothing is made up for them).
    """

    __slots__ = ("process", "reason", "stderr_tail")

    def __init__(
        self, reason: str, *, stderr_tail: list[str] | None = None, process: ProcessEnd | None = None
    ) -> None:
        self.reason = reason
        self.stderr_tail = list(stderr_tail or [])
        self.process = process

    @property
    def exit_code(self) -> int | None:
        """The process's exit code, when a process ended (else ``None``)."""
        return self.process.exit_code if self.process is not None else None

    def __repr__(self) -> str:
        return f"Gone({self.reason!r}, process={self.process!r})"


class Vitals(NamedTuple):
    """What the host shows of any transport beside its counters.

    Attributes:
        pid: the local process serving the connection, ``None`` when there is none (a
            remote or in-process server) or it has not started.
        noise_lines: input read that was not a message, skipped (a server printing its
            logs where messages go).
    """

    pid: int | None = None
    noise_lines: int = 0


class SessionLost:
    """The transport's session ended while the server is still reachable (Streamable HTTP:
    HTTP 404 to a message carrying ``Mcp-Session-Id``).

    Attributes:
        reason: one line for people, e.g. ``session expired (HTTP 404)``.
        used: a request was answered on the lost session (a session lost before any answer
            is a sign that renewing it again may be pointless).
        held: how many messages the transport holds for the next session.
    """

    __slots__ = ("held", "reason", "used")

    def __init__(self, reason: str, *, used: bool, held: int) -> None:
        self.reason = reason
        self.used = used
        self.held = held

    def __repr__(self) -> str:
        return f"SessionLost({self.reason!r}, used={self.used!r}, held={self.held!r})"


SessionListener = Callable[[SessionLost], None]
#: Told ``(False, why)`` when the stream the server's own requests and notifications come
#: on keeps failing (they may be lost until it is back), ``(True, why)`` when it is back.
StreamListener = Callable[[bool, str], None]


class Receiver(Protocol):
    """Where a transport pushes what it reads (the JSON-RPC peer)."""

    def on_messages(self, messages: list[Any]) -> None: ...

    def on_undeliverable(self, request_id: int | str | None, reason: str) -> None: ...

    def on_failed(self, request_id: int | str | None, error: TransportError) -> None:
        """The exchange of request ``request_id`` failed on its way (``None``: of every
        request waiting); its caller gets ``error``."""

    def on_gone(self, gone: Gone) -> None: ...

    def on_write_paused(self, paused: bool) -> None:
        """Writes are piling up (True: senders should ``await drain()``) or not (False)."""


class Transport(Protocol):
    """One connection to one server."""

    #: The sender should ``await drain()`` before sending more (an attribute: it is read
    #: once per request).
    needs_drain: bool
    #: Each request has a response stream of its own (Streamable HTTP): ``forget`` closes it,
    #: which is how the stateless era cancels a request (no notification is sent).
    request_streams: bool

    async def start(self) -> None:
        """Connect (spawn the process, open the socket). If it cannot: a ``TransportError``
        naming the socket error or HTTP status (``transient`` when another try may work), or
        a ``ConfigurationError`` (the command cannot run). Never the host's
        ``ServerStartupError``: the supervisor maps what a transport raises, once."""

    def set_receiver(self, receiver: Receiver) -> None:
        """Where messages go from now on (any read earlier are handed over at once)."""

    def send(self, data: bytes, kind: int = REQUEST, method: str | None = None, now: bool = False,
             headers: Sequence[tuple[str, str]] = ()) -> None:
        """Queue one encoded message. Messages queued in one event-loop turn may go out
        together; ``now=True`` asks for this one (and any queued before it) to go at once.
        ``headers``: what the protocol above asks to be said beside this message where the
        binding has headers (HTTP); other transports ignore them. Never raises once the peer is gone: the receiver hears ``on_gone`` instead."""

    async def drain(self) -> None:
        """Wait until what was sent is handed to the operating system (bounded buffers)."""

    async def aclose(self, timeout: float) -> Gone:
        """Close the connection (for a process: the shutdown ladder within ``timeout``)."""

    def tail(self) -> list[str]:
        """The last diagnostic lines of the peer so far (stderr for a process; may be empty)."""

    def statistics(self) -> dict[str, Any]:
        """Counters: ``bytes_in``, ``bytes_out``, ``messages_in``, ``messages_out``, and
        transport-specific ones (shown as they are, never read by the host)."""

    def vitals(self) -> Vitals:
        """The transport-neutral facts the host shows: a local process's pid, noise."""

    def kill_now(self) -> bool:
        """Synchronously end at once whatever this transport runs locally, without the
        graceful steps of :meth:`aclose` (a second Ctrl-C); ``aclose`` still finishes.
        False: nothing was running (always, for a transport that runs no process)."""

    @property
    def trace(self) -> WireTrace | None:
        """The wire trace of what goes through (``None``: the transport keeps none)."""

    def negotiated(self, version: str) -> None:
        """The session agreed on protocol ``version`` (an HTTP transport says it in a header
        on every later request and may open its server-to-client stream)."""

    def forget(self, request_id: Any) -> None:
        """The caller gave up the request ``request_id``: its answer is not wanted any more
        (an HTTP transport closes its response stream; a held message is not sent)."""

    def watch_session(self, listener: SessionListener | None) -> None:
        """Who is told when the transport's own session is lost (``None``: nobody; the
        transport then treats a lost session as the server gone)."""

    def watch_stream(self, listener: StreamListener | None) -> None:
        """Who is told when the server's own messages cannot reach the host for a while
        though calls still work (Streamable HTTP: the GET stream keeps failing) and when
        they can again (``None``: nobody)."""

    def session_opening(self) -> contextlib.AbstractContextManager[None]:
        """A block whose sends open a new session: they go out at once, ahead of what the
        transport holds since the session was lost."""

    def release_held(self) -> None:
        """The new session is open: send what was held (in order) on it."""

    def give_up(self, reason: str) -> None:
        """The session cannot go on: the connection ends, the receiver hears ``on_gone``
        with ``reason`` (unless the transport is already gone or closing)."""


class BaseTransport:
    """The defaults of the contract's optional members, for transports without a session
    of their own, a wire trace or a process."""

    trace: WireTrace | None = None
    request_streams: bool = False

    def vitals(self) -> Vitals:
        return Vitals()  # no local process, no noise

    def kill_now(self) -> bool:
        return False  # nothing runs locally

    def negotiated(self, version: str) -> None:
        return None

    def forget(self, request_id: Any) -> None:
        return None

    def watch_session(self, listener: SessionListener | None) -> None:
        return None  # no session of its own: never lost

    def watch_stream(self, listener: StreamListener | None) -> None:
        return None  # the server's messages come with everything else: never apart

    @contextlib.contextmanager
    def session_opening(self) -> Iterator[None]:
        yield

    def release_held(self) -> None:
        return None

    def give_up(self, reason: str) -> None:
        return None


class GoneOnce(BaseTransport):
    """What every transport does the same way: tell its receiver ``on_gone`` exactly once,
    and never after :meth:`Transport.aclose` began (``_closing``). A ``Gone`` that comes
    before there is a receiver is kept for it (``_gone_told`` stays false), and so are the
    messages read before it (:meth:`_hand_over`)."""

    _gone: Gone | None
    _gone_told: bool
    _closing: bool
    _receiver: Receiver | None
    #: Messages read before there was a receiver (handed over by ``set_receiver``).
    _early: list[Any]

    def set_receiver(self, receiver: Receiver) -> None:
        self._receiver = receiver
        if self._early:
            early, self._early = self._early, []
            receiver.on_messages(early)
        if self._gone is not None and not self._gone_told:
            self._gone_told = True
            receiver.on_gone(self._gone)

    def _hand_over(self, messages: list[Any]) -> None:
        """Give decoded messages to the receiver, or keep them for it until it is set."""
        receiver = self._receiver
        if receiver is None:
            self._early.extend(messages)
        else:
            receiver.on_messages(messages)

    def _tell_gone(self, gone: Gone) -> None:
        if self._gone is not None or self._closing:
            return
        self._gone = gone
        receiver = self._receiver
        if receiver is not None:
            self._gone_told = True
            receiver.on_gone(gone)


# What a discarded message was, from its first bytes (as encoded by ordinary servers).
_OVERSIZED_ID: Final = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")'
)
_OVERSIZED_METHOD: Final = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"method"\s*:')


def oversized_target(head: bytes) -> tuple[bool, Any]:
    """What a message discarded for its size was, from its first bytes: whether it is the
    server's own request or notification (no call waits for it), and the id of the
    response it would have been (``None``: not told)."""
    if _OVERSIZED_METHOD.match(head):
        return True, None
    match = _OVERSIZED_ID.match(head)
    if match:
        try:
            return False, loads(match.group(1))
        except ValueError:
            pass
    return False, None


# The host's OAuth hooks live here rather than in ``oauth`` (which re-exports them): the host
# builds them at construction, and a host whose servers never log in never loads the OAuth
# flow, its cryptography and its discovery.
OnAuthorize = Callable[[str], Awaitable[str]]


@dataclass(frozen=True)
class AuthHooks:
    """What the host gives every server's authorizer: the application's ``on_authorize``, the
    token store, the redactor's ``add``, and ``on_user_step(server, active)``, told when a
    server's ``on_authorize`` begins and ends (the host stops that server's start-up clock)."""

    on_authorize: OnAuthorize | None = None
    store: TokenStore | None = None
    add_secrets: Callable[[Iterable[str]], None] | None = None
    #: Each server's DPoP key and nonces: a restarted transport's tokens stay usable.
    dpop: dict[str, DPoPSession] = field(default_factory=dict)
    on_user_step: Callable[[str, bool], None] | None = None

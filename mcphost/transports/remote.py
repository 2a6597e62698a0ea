"""What the two HTTP transports share: the receiver, the POST of a message, HTTP failures.

Layer 2, over :mod:`.httpconn`. :class:`RemoteTransport` holds what Streamable HTTP
(:mod:`.http`) and the legacy HTTP+SSE transport (:mod:`.sse`) do alike:

- ``start()`` opens a first connection: a server that is not there fails the start at once
  ("cannot connect to 127.0.0.1:8123: connection refused"), worth another try;
- every message is one POST (:class:`PostExchange`); the configuration's ``headers`` go on
  every request;
- a request the server answers with an HTTP error fails at once: the receiver hears
  ``on_failed`` with a :class:`~mcphost.errors.TransportError` naming the status
  ("HTTP 503 Service Unavailable: <the body, clipped>", ``.http_status`` 503), or gets the
  server's own JSON-RPC error when the body is one for that id. No JSON-RPC error is ever
  made up: a ``ServerError`` means the server sent one. Redirects are not followed (a POST
  is not replayed elsewhere);
- with an authorizer (``authorizer=``, :mod:`.oauth`), every request carries its
  ``Authorization`` header, and a 401 (or a 403 ``insufficient_scope``) is handed to it: the
  message is sent again once it has a token, or its caller gets why there is none;
- a connection that cannot be made once the server was up means the server is gone;
- ``tail()`` holds the last HTTP failures, as stdio's holds the last stderr lines.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import deque
from collections.abc import Iterable, Sequence
from typing import Any, Final

from .._json import MAX_TOKENS, loads
from ..auth.errors import OAuthError
from ..errors import ConfigurationError, TransportError
from ..version import __version__
from ..wire.framing import DEFAULT_MAX_SIZE, Oversized
from ..wire.http11 import DEFAULT_MAX_HEADER_SIZE, HttpProtocolError, build_request
from .base import REQUEST, Gone, GoneOnce, Receiver, StreamListener, oversized_target
from .counted import Decode, InOrder, Raw, head_of
from .http_pool import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    ConnectionPool,
)
from .httpconn import clip, parse_url
from .oauth import MAX_AUTHORIZATIONS, Authorizer
from .proxy import Proxy
from .remote_post import PostExchange, answers, request_id, status_text
from .throttle import Throttle
from .trace import WireTrace

__all__ = ["NOT_JSON", "PostExchange", "RemoteTransport", "answers", "request_id"]

logger = logging.getLogger("mcphost.transports.http")

_TAIL: Final = 20
_USER_AGENT: Final = f"mcphost/{__version__}"
# Headers the transport owns: the configuration may not set them.
_RESERVED: Final = frozenset({"host", "content-length", "transfer-encoding", "connection", "mcp-session-id",
                              "last-event-id"})
#: What :meth:`RemoteTransport.decode` returns for a message that is not JSON.
NOT_JSON: Final = object()


class RemoteTransport(GoneOnce):
    """The base of the HTTP transports: one origin, its pool, the receiver, the tail."""

    def __init__(
        self,
        name: str,
        url: str,
        *,
        headers: Iterable[tuple[str, str]] = (),
        max_message_size: int = DEFAULT_MAX_SIZE,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        ssl_context: ssl.SSLContext | None = None,
        proxy: Proxy | None = None,
        authorizer: Authorizer | None = None,
        max_message_tokens: int = MAX_TOKENS,
    ) -> None:
        self.name = name
        #: Gives the ``Authorization`` header and answers 401/403 challenges (``auth``).
        self.authorizer = authorizer
        self._auth_tasks: set[Any] = set()
        self.url = url
        self.origin, target = parse_url(url, name)
        self.headers = _check_headers(headers, name)
        self._header_names = {key.lower() for key, _ in self.headers}
        self.max_message_size = max_message_size
        self.pool = ConnectionPool(
            self.origin, ssl_context=ssl_context, max_connections=max_connections,
            connect_timeout=connect_timeout, max_header_size=max_header_size, proxy=proxy, idle_timeout=idle_timeout,
        )
        #: The request target of the URL (the whole URL when a proxy forwards it).
        self.target = self.request_target(target)
        self.pool.on_write_paused = self._on_write_paused
        #: Senders should ``await drain()``: a request body is not going out.
        self.needs_drain = False
        #: The wire trace (``mcphost.wire.<name>`` at DEBUG).
        self.trace: WireTrace = WireTrace(name)
        self._receiver: Receiver | None = None
        self._early: list[Any] = []
        self._gone: Gone | None = None
        self._gone_told = False
        self._closing = False
        self._tail: deque[str] = deque(maxlen=_TAIL)
        self._not_json = Throttle()
        #: The head of a POST without headers of its own: ((target, state, authorization),
        #: the head's bytes up to its Content-Length line), built once per key.
        self.post_head: tuple[Any, bytes] | None = None
        self._stream_listener: StreamListener | None = None
        self.messages_in = 0
        self.messages_out = 0
        self.http_errors = 0
        self.reconnects = 0
        self.oversized_messages = 0
        #: What is received, in order: a message over 1 MiB has its JSON tokens counted
        #: first (a slice per loop turn), and is refused past ``max_message_tokens``.
        self.in_order = InOrder[Raw](name, self._deliver_raw, self._too_many_tokens, max_message_tokens, loads)

    # -- the contract -----------------------------------------------------------------------

    async def start(self) -> None:
        if self.authorizer is not None:
            await self.authorizer.prepare()
        try:
            await self.pool.warm()
        except OSError as exc:
            self._tail.append(str(exc))  # the host reports the failed start: not logged here
            # The server may be starting: worth another try (transient).
            raise TransportError(str(exc), server=self.name, os_error=exc.strerror or str(exc),
                                 transient=True) from None

    async def drain(self) -> None:
        await self.pool.drain()

    def tail(self) -> list[str]:
        return list(self._tail)

    def statistics(self) -> dict[str, Any]:
        pool = self.pool
        return {
            "bytes_in": pool.bytes_in, "bytes_out": pool.bytes_out,
            "messages_in": self.messages_in, "messages_out": self.messages_out,
            "http_requests": pool.requests, "http_errors": self.http_errors,
            "connections": pool.connections, "reconnects": self.reconnects, "answers_dropped": pool.dropped,
            "oversized": self.oversized_messages, "not_json": self._not_json.count,
            "too_many_tokens": self.in_order.refused,
        }

    def _on_write_paused(self, paused: bool) -> None:
        self.needs_drain = paused
        if self._receiver is not None:
            self._receiver.on_write_paused(paused)

    # -- what the exchanges call ------------------------------------------------------------

    def request_target(self, target: str) -> str:
        """``target`` (path and query) as the request line names it."""
        if self.pool.absolute_form:
            return f"{self.origin.scheme}://{self.origin.host_header}{target}"
        return target

    @property
    def live(self) -> bool:
        """Neither gone nor closing: what is read is still delivered."""
        return self._gone is None and not self._closing

    def base_headers(self, method: str | None = None) -> list[tuple[str, str]]:
        """The transport's own headers; ``method``: of a request to the endpoint itself (a
        GET or DELETE: its DPoP proof too, when the token is bound to one)."""
        ours = [("Host", self.origin.host_header), ("User-Agent", _USER_AGENT)]
        proxy = self.pool.proxy
        if proxy is not None and proxy.authorization is not None and self.pool.absolute_form:
            ours.append(("Proxy-Authorization", proxy.authorization))
        if self.authorizer is not None:
            value = self.authorizer.header()
            if value is not None:
                ours.append(("Authorization", value))
            proof = self.authorizer.proof(method, self.url) if method is not None else None
            if proof is not None:
                ours.append(("DPoP", proof))
        return ours

    def _proof_line(self, target: str) -> bytes:
        """The ``DPoP`` header line of a POST to ``target`` (empty without a bound token)."""
        if self.authorizer is None:
            return b""
        url = target if "://" in target else f"{self.origin.scheme}://{self.origin.host_header}{target}"
        proof = self.authorizer.proof("POST", url)
        return b"" if proof is None else b"DPoP: %s\r\n" % proof.encode("ascii")

    def merged(self, ours: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``ours`` and then the configuration's headers, which replace ours of the same name."""
        names = self._header_names
        if names:
            ours = [(k, v) for k, v in ours if k.lower() not in names]
        return [*ours, *self.headers]

    def post_headers(self, state: Any = None) -> list[tuple[str, str]]:
        """The headers of a POST (``state``: what they depend on, the session for
        Streamable HTTP)."""
        return self.merged([*self.base_headers(), ("Content-Type", "application/json")])

    def post_request(self, target: str, data: bytes, state: Any = None,
                     extra: Sequence[tuple[str, str]] = ()) -> bytes:
        """The bytes of a POST of ``data``. The head is built and checked once per target
        and ``state``, then only the length changes; ``extra`` headers of this message
        alone (before the configuration's) make a head of its own."""
        if extra:
            ours = self.post_headers(state)
            names = self._header_names
            head = build_request("POST", target, [*ours[:len(ours) - len(self.headers)],
                                                  *((k, v) for k, v in extra if k.lower() not in names),
                                                  *self.headers])
            return b"%s%sContent-Length: %d\r\n\r\n%s" % (head[:-2], self._proof_line(target), len(data), data)
        authorizer = self.authorizer
        key = (target, state, authorizer.header() if authorizer is not None else None)
        cached = self.post_head
        if cached is None or cached[0] != key:
            head = build_request("POST", target, self.post_headers(state))  # ends with a blank line
            cached = self.post_head = (key, head[:-2])
        if authorizer is None:  # (no DPoP proof line)
            return b"%sContent-Length: %d\r\n\r\n%s" % (cached[1], len(data), data)
        return b"%s%sContent-Length: %d\r\n\r\n%s" % (cached[1], self._proof_line(target), len(data), data)

    def decode(self, raw: bytes | str, decode: Decode = loads) -> Any:
        """One received message decoded (traced), or ``NOT_JSON`` if it is not JSON."""
        trace = self.trace
        if trace.maybe(10, True) and trace.enabled():
            trace.messages(False, [raw.encode("utf-8") if isinstance(raw, str) else raw])
        try:
            return decode(raw)  # text (an SSE event's data) is decoded as it is, not encoded first
        except ValueError:
            # The server controls how many: the first few are logged, then one in 1000.
            if self._not_json.tick():
                self.note(f"the server sent a message that is not JSON: {clip(head_of(raw, 200), 100)}"
                          f"{self._not_json.suffix()}")
            return NOT_JSON

    def deliver(self, messages: list[Any]) -> None:
        if self._gone is not None or self._closing:  # (not live: inline, once per message)
            return
        self.messages_in += len(messages)
        receiver = self._receiver
        if receiver is None:
            self._early.extend(messages)
        else:
            receiver.on_messages(messages)

    def deliver_raw(self, raw: bytes | str) -> None:
        """Decode and deliver one message, in its turn (:attr:`in_order`)."""
        self.in_order.push([raw])

    def _deliver_raw(self, raws: list[Raw], decode: Decode) -> None:
        messages = [msg for msg in map(self.decode, raws, [decode] * len(raws)) if msg is not NOT_JSON]
        if messages:
            self.deliver(messages)

    def _too_many_tokens(self, data: Raw, reason: str) -> None:
        self.discarded(head_of(data), reason)

    def oversized(self, item: Oversized, stream_rid: Any = None) -> None:
        """A message over ``max_message_size`` was discarded as it streamed."""
        self.oversized_messages += 1
        self.discarded(item.head, f"the server sent a message of {item.size} bytes "
                                  f"(limit {self.max_message_size} bytes)", stream_rid)

    def discarded(self, head: bytes, reason: str, stream_rid: Any = None) -> None:
        """A message was discarded unread (``head``: its first bytes): fail the call it
        answered (``stream_rid``: the request whose stream carried it, when the message does
        not say), or only log it if it was the server's own request or notification."""
        from_server, rid = oversized_target(head)
        if from_server:
            self.note(f"{reason}; discarded (a request or notification of the server)")
            return
        if rid is None:
            rid = stream_rid
        if rid is None:
            reason += "; the call it answered cannot be identified"
        self.response_lost(rid)
        self.undeliverable(rid, reason)

    def response_lost(self, rid: Any) -> None:
        """The response to ``rid`` will not be delivered (subclasses forget the request)."""

    def fail_request(self, rid: Any, message: str, *, status: int | None = None, os_error: str | None = None,
                     what: str | None = None) -> None:
        """The exchange of request ``rid`` failed on its way: its caller gets a
        ``TransportError`` at once (``None``: whose it was is unknown, every caller does)."""
        logger.debug("%s: request %r fails: %s", self.name, rid, message)
        receiver = self._receiver
        if self.live and receiver is not None:
            text = f"{what}: {message}" if what else message
            receiver.on_failed(rid, TransportError(text, server=self.name, http_status=status, os_error=os_error))

    def broke_binding(self, rid: Any, message: str) -> None:
        """The server answered request ``rid`` in a way the HTTP binding does not allow (a
        2xx without the response, a content type it may not use): its fault, a
        ``ProtocolError`` for that call."""
        self.note(message)
        receiver = self._receiver
        if self.live and receiver is not None:
            receiver.on_undeliverable(rid, message)

    def undeliverable(self, rid: Any, reason: str) -> None:
        self.note(reason)
        receiver = self._receiver
        if self.live and receiver is not None:
            receiver.on_undeliverable(rid, reason)

    def note(self, line: str, quiet: bool = False) -> None:
        """A diagnostic line for ``tail()`` (and the log: INFO when ``quiet``, else WARNING)."""
        self._tail.append(line)
        if self.live:
            logger.log(logging.INFO if quiet else logging.WARNING, "%s: %s", self.name, line)

    def gone(self, reason: str) -> None:
        """The server is gone: tell the receiver once, drop every connection."""
        if not self.live:
            return
        self.note(reason)
        # No stderr here: the HTTP failures that led to it stay in tail() and the log.
        self._tell_gone(Gone(reason))
        self.stop()

    def give_up(self, reason: str) -> None:
        self.gone(reason)

    def watch_stream(self, listener: StreamListener | None) -> None:
        self._stream_listener = listener

    def tell_stream(self, back: bool, why: str) -> None:
        """The way the server's own messages come failed for a while (``back``: it is back,
        which is logged here; the failure was noted by the caller)."""
        if back:
            logger.warning("%s: %s", self.name, why)
        if self._stream_listener is not None and self.live:
            self._stream_listener(back, why)

    def stop(self) -> None:
        """Drop the connections (subclasses also stop their timers)."""
        self.in_order.close()
        self.pool.close_now()
        for task in self._auth_tasks:
            task.cancel()
        if self.authorizer is not None:
            self.authorizer.close()

    def resend(self, exchange: PostExchange) -> PostExchange | None:
        """Send ``exchange``'s message again, now that the authorization changed (``None``: this
        transport cannot)."""
        return None

    def _authorize(self, exchange: PostExchange) -> None:
        """A 401/403 the authorizer answers: authorize, then send the message again."""
        authorizer = self.authorizer
        assert authorizer is not None
        status = exchange.status

        async def run() -> None:
            try:
                if exchange.authorizations >= MAX_AUTHORIZATIONS:
                    raise OAuthError(f"still refused after {MAX_AUTHORIZATIONS} authorizations")
                await authorizer.authorize(status, exchange.challenges, exchange.auth_generation)
            except OAuthError as exc:
                message = f"{status_text(status, exchange.reason)}: authorization failed: {exc}"
                self.note(f"{message} (POST {exchange.rpc_method or 'a message'})")
                if exchange.kind == REQUEST:
                    self.fail_request(exchange.rid, message, status=status, what=exchange.rpc_method)
                return
            if self.live and not exchange.cancelled:
                again = self.resend(exchange)
                if again is None:
                    if exchange.kind == REQUEST:
                        self.fail_request(exchange.rid, "authorized; send it again", status=status,
                                          what=exchange.rpc_method)
                    return
                again.authorizations = exchange.authorizations + 1

        task = asyncio.get_running_loop().create_task(run())
        self._auth_tasks.add(task)
        task.add_done_callback(self._auth_tasks.discard)

    def refused_first(self, post: PostExchange) -> bool:
        """The first message sent got 400, 404 or 405 (``post.status``) with a body that is
        not the server's JSON-RPC answer to it: true if a subclass takes it from here (the
        spec's probe for a legacy server, :mod:`.http_auto`)."""
        return False

    def http_failed(self, exchange: PostExchange, body: bytes) -> None:
        """A POST was answered with an HTTP error (``exchange.status`` >= 300)."""
        if exchange.probing and not answers(body, exchange.rid) and self.refused_first(exchange):
            return
        # A refusal of a message sent with headers of its own (the stateless era's) is the
        # caller's to judge, neither logged as a warning nor counted as an HTTP error: the
        # probe's "not this era", a method the server does not serve.
        quiet = bool(exchange.headers) and exchange.status in (400, 404, 405)
        if not quiet:
            self.http_errors += 1
        authorizer = self.authorizer
        if (exchange.status in (401, 403) and authorizer is not None and self.live
                and authorizer.handles(exchange.status, exchange.challenges)):
            self._authorize(exchange)
            return
        status = status_text(exchange.status, exchange.reason)
        what = exchange.rpc_method or "a message"
        rid = exchange.rid
        detail = clip(body) if body.strip() else ""
        if 300 <= exchange.status < 400:
            detail = f"redirects are not followed (Location: {clip(exchange.location or '-', 100)})"
        elif body.strip():
            try:
                decoded = loads(body)
            except ValueError:
                decoded = None
            error = decoded.get("error") if isinstance(decoded, dict) else None
            if isinstance(error, dict):
                if rid is not None and decoded.get("id") == rid and exchange.kind == REQUEST and self.live:
                    # The server's own JSON-RPC error for this request: delivered as it is.
                    self.note(f"{status} for {what}: {clip(str(error.get('message')))}", quiet)
                    self.deliver([decoded])
                    return
                if isinstance(error.get("message"), str):
                    detail = clip(error["message"])
        if exchange.status == 401 and self.authorizer is None:
            detail = (detail + "; " if detail else "") + (
                'the server requires authorization: give it an "auth" in the configuration '
                "(or the host an on_authorize hook)")
        message = f"{status}: {detail}" if detail else status
        self.note(f"{message} (POST {what})", quiet)
        if exchange.kind == REQUEST:
            self.fail_request(rid, message, status=exchange.status, what=exchange.rpc_method)

    def lost(self, exchange: PostExchange, why: str) -> None:
        """A POST's connection failed before its answer was complete."""
        if exchange.kind == REQUEST and not exchange.done:
            exchange.finish()
            self.fail_request(exchange.rid, f"HTTP connection lost before the response: {why}", os_error=why,
                              what=exchange.rpc_method)
        else:
            self.note(f"HTTP connection lost while sending {exchange.rpc_method or 'a message'}: {why}")


def _check_headers(headers: Iterable[tuple[str, str]], name: str) -> list[tuple[str, str]]:
    out = []
    for key, value in headers:
        if key.lower() in _RESERVED:
            raise ConfigurationError(f"header {key!r} is set by the transport, not by the configuration", server=name)
        out.append((key, value))
    try:  # a name or value HTTP cannot carry is the configuration's mistake, said now
        build_request("GET", "/", [("Host", "x"), *out])
    except HttpProtocolError as exc:
        raise ConfigurationError(f"headers: {exc}", server=name) from None
    return out

"""The gateway over Streamable HTTP on a stdlib asyncio HTTP/1.1 server
(``mcphost serve --http 127.0.0.1:8808 mcp.json``).

Layer 5. One endpoint (``/mcp`` by default) speaks the 2025-11-25 Streamable HTTP binding:
POST carries messages (a request's answers come on an SSE stream of that POST, or as one
JSON body when the client accepts only JSON; notifications and responses get 202), GET
opens the session's standalone SSE stream (resumed with ``Last-Event-ID``), DELETE ends the
session. ``initialize`` opens a session, named in ``Mcp-Session-Id``; an unknown session is
404 (the client starts a new one). Beside it: ``/healthz`` (the servers' states, no
authentication) and ``/metrics`` (the host's Prometheus text).

In front of everything, in this order: the ``Host`` and ``Origin`` checks (DNS rebinding:
spec 2025-11-25, Transports, "Servers MUST validate the Origin header on all incoming
connections"; bound to a loopback address, only loopback names are accepted unless
``allowed_hosts`` says otherwise; a bad one is 403), then the bearer token when one is set
(401 with ``WWW-Authenticate: Bearer``), or the OAuth resource-server check
(:mod:`~mcphost.gateway.oauth`: tokens introspected at the issuer, Protected Resource
Metadata served). Every bound is an :class:`HttpOptions` field with a
default (docs/serve.md lists them): connections, header and body bytes, sessions, streams
per session, idle sessions' lifetime, bytes a slow reader may leave unread.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import json
import logging
import secrets
from typing import TYPE_CHECKING, Any, Final

from .._json import dumps, loads
from ..errors import UsageError
from ..protocol import jsonrpc
from ..protocol import versions as _versions
from ..protocol.modern import HEADER_MISMATCH, META_VERSION, UNSUPPORTED_VERSION
from ..protocol.modern_server import (
    header_mismatch,
    http_status,
    meta_problem,
    param_header_mismatch,
)
from ..server.modern import MODERN_METHODS, RoundStore
from .httpwire import HttpFailure, Request, StreamWire, Wire, read_request
from .oauth import OAuthOptions, ResourceServer
from .streams import HttpSession, Stream
from .tasks import principal

if TYPE_CHECKING:
    from ..server.session import ServerSession
    from .app import Gateway

__all__ = ["HttpGateway", "HttpOptions"]

logger = logging.getLogger("mcphost.gateway")

_LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})


class HttpOptions:
    """The HTTP front's settings and bounds (each documented in docs/serve.md)."""

    def __init__(self, *, path: str = "/mcp", token: str | None = None, oauth: OAuthOptions | None = None,
                 allowed_hosts: list[str] | None = None,
                 max_connections: int = 256, max_header: int = 16 * 1024, max_body: int = 4 * 1024 * 1024,
                 max_sessions: int = 256, max_streams: int = 32, session_idle: float = 1800.0,
                 replay: int = 256, retry_ms: int = 1000, max_buffer: int = 4 * 1024 * 1024,
                 state_key: str | bytes | None = None) -> None:
        if not path.startswith("/"):
            raise UsageError(f"the endpoint path must start with '/', not {path!r}")
        for name, value in (("max_connections", max_connections), ("max_header", max_header),
                            ("max_body", max_body), ("max_sessions", max_sessions), ("max_streams", max_streams),
                            ("replay", replay), ("retry_ms", retry_ms), ("max_buffer", max_buffer)):
            if type(value) is not int or value < 1:
                raise UsageError(f"{name} must be a whole number of 1 or more, not {value!r}")
        if type(session_idle) not in (int, float) or not session_idle > 0:
            raise UsageError(f"session_idle must be a number of seconds above 0, not {session_idle!r}")
        if token is not None and oauth is not None:
            raise UsageError("give a static token or an OAuth issuer, not both")
        key = state_key.encode("utf-8") if isinstance(state_key, str) else state_key
        if key is not None and (type(key) is not bytes or len(key) < 32):
            raise UsageError("state_key must be a secret of at least 32 bytes (or None: a random key per process)")
        #: What 2026-07-28 ``requestState`` is sealed with: shared by the workers of a
        #: deployment, each verifies what another made (``None``: a random key of this process).
        self.state_key = key
        self.path = path
        self.token = token
        self.oauth = oauth
        self.allowed_hosts = None if allowed_hosts is None else {h.lower().strip("[]") for h in allowed_hosts}
        self.max_connections = max_connections
        self.max_header = max_header
        self.max_body = max_body
        self.max_sessions = max_sessions
        self.max_streams = max_streams
        self.session_idle = float(session_idle)
        self.replay = replay
        self.retry_ms = retry_ms
        self.max_buffer = max_buffer


def _hostname(value: str) -> str:
    """``host[:port]`` or ``[v6][:port]`` -> the host, lower-cased, without brackets."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1:].partition("]")[0]
    return value.rpartition(":")[0] if value.count(":") == 1 else value


class HttpGateway:
    """The HTTP front of a :class:`~mcphost.gateway.app.Gateway` (see the module docstring)."""

    def __init__(self, gateway: Gateway, options: HttpOptions | None = None) -> None:
        self.gateway = gateway
        self.options = options or HttpOptions()
        self.sessions: dict[str, tuple[HttpSession, ServerSession]] = {}
        #: The 2026-07-28 multi-round requests waiting for their retry (any request's session).
        self.rounds = RoundStore(key=self.options.state_key)
        self.connections = 0
        self._server: asyncio.base_events.Server | None = None
        self._allowed: set[str] | None = self.options.allowed_hosts
        oauth = self.options.oauth
        self.oauth = None if oauth is None else ResourceServer(oauth, self.options.path)
        self._handlers: set[asyncio.Task[Any]] = set()
        self._writers: set[asyncio.StreamWriter] = set()
        self._reaper: asyncio.Task[None] | None = None
        self.address: tuple[str, int] = ("", 0)

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> tuple[str, int]:
        """Listen on ``host:port`` (0: any free port); the address bound."""
        if self._allowed is None:
            try:
                loopback = ipaddress.ip_address(host).is_loopback
            except ValueError:
                loopback = host == "localhost"
            self._allowed = set(_LOOPBACK_NAMES) if loopback else None
        self._server = await asyncio.start_server(self._connection, host, port, limit=self.options.max_header)
        sock = self._server.sockets[0].getsockname()
        self.address = (str(sock[0]), int(sock[1]))
        self._reaper = asyncio.get_running_loop().create_task(self._reap())
        return self.address

    async def open(self) -> None:
        """Serve without a listening socket of its own (an ASGI server's connections call
        :meth:`handle`); the Host/Origin check applies only when ``allowed_hosts`` is given."""
        self._reaper = asyncio.get_running_loop().create_task(self._reap())

    async def aclose(self) -> None:
        """Stop listening, end every session and connection."""
        if self._reaper is not None:
            self._reaper.cancel()
        if self._server is not None:
            self._server.close()
        for transport, _session in list(self.sessions.values()):
            transport.end("the gateway stopped")
        self.sessions.clear()
        # Closing a connection ends its handler (its read sees the end); a task cancelled
        # instead would be reported by asyncio's stream callback as an error.
        for writer in list(self._writers):
            writer.close()
        if self._handlers:
            _done, late = await asyncio.wait(list(self._handlers), timeout=5.0)
            for task in late:
                task.cancel()
        if self._server is not None:
            await self._server.wait_closed()

    # -- one connection ----------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self._writers.add(writer)
        self.connections += 1
        wire = StreamWire(reader, writer)
        try:
            if self.connections > self.options.max_connections:
                wire.respond(503, _error_body("too many connections"), close=True)
                return
            keep = True
            while keep:
                try:
                    request = await read_request(reader, self.options.max_header, self.options.max_body,
                                                 wire.take_pending())
                except HttpFailure as exc:
                    wire.respond(exc.status, _error_body(exc.message), close=True)
                    return
                if request is None:
                    return
                keep = await self.handle(request, wire)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        except Exception:
            logger.exception("HTTP connection failed")
            if not writer.is_closing():
                wire.respond(500, _error_body("internal error"), close=True)
        finally:
            self.connections -= 1
            if task is not None:
                self._handlers.discard(task)
            self._writers.discard(writer)
            writer.close()

    async def handle(self, request: Request, wire: Wire) -> bool:
        """Answer one request; whether the connection may carry another."""
        refusal = self._refuse(request)
        oauth = self.oauth
        if refusal is None and oauth is not None and request.path != "/healthz":
            if request.path in oauth.metadata_paths:  # Protected Resource Metadata: no token needed
                wire.respond(200, oauth.metadata())
                return True
            refusal = await oauth.refuse(request.headers.get("authorization"))
        if refusal is not None:
            status, message, headers = refusal
            wire.respond(status, _error_body(message), headers=headers, close=True)
            return False
        if request.path == "/healthz":
            states = {name: info.get("state") for name, info in self.gateway.host.get_tools().items()}
            wire.respond(200, dumps({"status": "ok", "servers": states, "sessions": len(self.sessions)}))
            return True
        if request.path == "/metrics":
            wire.respond(200, self.gateway.host.metrics_text().encode(), content_type="text/plain; version=0.0.4")
            return True
        if request.path != self.options.path:
            wire.respond(404, _error_body(f"not found: the MCP endpoint is {self.options.path}"))
            return True
        if request.method == "POST":
            return await self._post(request, wire)
        if request.method == "GET":
            return await self._get(request, wire)
        if request.method == "DELETE":
            found = self._session(request, wire)
            if found is not None:
                found[0].end("the client ended the session")
                wire.respond(200)
            return True
        wire.respond(405, _error_body(f"method {request.method} is not allowed"), headers={"Allow": "GET, POST, DELETE"})
        return True

    def _refuse(self, request: Request) -> tuple[int, str, dict[str, str] | None] | None:
        allowed = self._allowed
        if allowed is not None:
            host = _hostname(request.headers.get("host", ""))
            if host not in allowed:
                return 403, "Host not allowed (DNS rebinding protection)", None
            origin = request.headers.get("origin")
            if origin is not None and _hostname(origin.partition("://")[2].partition("/")[0]) not in allowed:
                return 403, "Origin not allowed (DNS rebinding protection)", None
        token = self.options.token
        if token is not None and request.path != "/healthz":
            given = request.headers.get("authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return 401, "a valid bearer token is required", {"WWW-Authenticate": 'Bearer realm="mcphost"'}
        return None

    def _session(self, request: Request, wire: Wire) -> tuple[HttpSession, ServerSession] | None:
        sid = request.headers.get("mcp-session-id")
        if sid is None:
            wire.respond(400, _error_body("Mcp-Session-Id header required (send initialize first)"))
            return None
        found = self.sessions.get(sid)
        if found is None or found[0].closed:
            wire.respond(404, _error_body("unknown or expired session (start a new one with initialize)"))
            return None
        found[0].last_seen = asyncio.get_running_loop().time()
        return found

    async def _post(self, request: Request, wire: Wire) -> bool:
        if "application/json" not in request.headers.get("content-type", ""):
            wire.respond(415, _error_body("Content-Type must be application/json"))
            return True
        try:
            decoded = loads(request.body)
        except (ValueError, RecursionError):
            wire.respond(400, dumps(jsonrpc.error_response(None, jsonrpc.PARSE_ERROR, "parse error: the body "
                                                                                         "is not JSON")))
            return True
        messages = decoded if isinstance(decoded, list) else [decoded]
        if not messages or not all(isinstance(m, dict) for m in messages):
            wire.respond(400, dumps(jsonrpc.error_response(None, jsonrpc.INVALID_REQUEST,
                                                              "the body must be a JSON-RPC message or a batch")))
            return True
        requests = [m.get("id") for m in messages if "method" in m and "id" in m]
        initializing = any(m.get("method") == "initialize" for m in messages)
        version = request.headers.get("mcp-protocol-version")
        if request.headers.get("mcp-session-id") is None and _modern(version, messages) and (
                not initializing or version in _versions.MODERN_VERSIONS):
            return await self._stateless(request, wire, decoded)
        if version is not None and not _versions.is_supported(version):
            wire.respond(400, _error_body(f"unsupported MCP-Protocol-Version {version[:40]!r}"))
            return True
        found: tuple[HttpSession, ServerSession] | None
        if initializing:
            if len(self.sessions) >= self.options.max_sessions:
                self._reap_now()
                if len(self.sessions) >= self.options.max_sessions:
                    wire.respond(503, _error_body(f"too many sessions (at most {self.options.max_sessions})"))
                    return True
            found = self._new_session()
        else:
            found = self._session(request, wire)
            if found is None:
                return True
        transport = found[0]
        headers = {"Mcp-Session-Id": transport.session_id}
        if not requests:
            transport.deliver(messages, len(request.body))
            wire.respond(202, headers=headers)
            return True
        json_mode = not request.accepts("text/event-stream")
        stream = transport.open_stream(requests, json_mode)
        if stream is None:
            wire.respond(503, _error_body(f"too many streams (at most {self.options.max_streams} per session)"))
            return True
        if json_mode:
            transport.deliver(messages, len(request.body))
            if not await self._answered(stream, wire):
                return False
            bodies = [data for _seq, data in stream.events]
            body = bodies[0] if len(bodies) == 1 and not isinstance(decoded, list) else b"[" + b",".join(bodies) + b"]"
            wire.respond(200, body, headers=headers)
            return True
        wire.start_sse(headers)
        stream.prime(wire)
        transport.deliver(messages, len(request.body))
        return await self._hold(stream, wire)

    async def _stateless(self, request: Request, wire: Wire, decoded: Any) -> bool:
        """A 2026-07-28 request: no session; its headers must repeat its body. It is served
        by a session of its own that ends with the answer (multi-round requests wait for
        their retry in the gateway's shared :class:`~mcphost.server.modern.RoundStore`)."""
        if not isinstance(decoded, dict):
            wire.respond(400, dumps(jsonrpc.error_response(None, jsonrpc.INVALID_REQUEST,
                                                              "a 2026-07-28 request is one message, not a batch")))
            return True
        method = decoded.get("method")
        params = decoded.get("params")
        rid = decoded.get("id")
        if "id" not in decoded or not isinstance(method, str):
            wire.respond(202)  # a notification (or a response) has nothing to act on without a session
            return True
        if type(params) is not dict:
            params = {}
        if method not in MODERN_METHODS:  # initialize, ping...: not methods of this era
            wire.respond(404, dumps(jsonrpc.error_response(rid, jsonrpc.METHOD_NOT_FOUND,
                                                          f"method {method[:60]!r} is not a 2026-07-28 request")))
            return True
        problem = meta_problem(params, _ALL_VERSIONS)
        if problem is None or problem[0] == UNSUPPORTED_VERSION:
            # The headers are judged before the version (a mismatch is -32020 whatever the version).
            mismatch = header_mismatch(method, params, request.headers)
            if mismatch is None and method == "tools/call" and problem is None:
                schema = self.gateway.backend.tool_schema(str(params.get("name")))
                mismatch = param_header_mismatch(str(params["_meta"][META_VERSION]), params, schema, request.headers)
            if mismatch is not None:
                problem = (HEADER_MISMATCH, mismatch, None)
        if problem is not None:
            code, message, data = problem
            wire.respond(http_status(code), dumps(jsonrpc.error_response(rid, code, message, data)))
            return True
        options = self.options
        transport = HttpSession("", replay=options.replay, retry_ms=options.retry_ms, max_buffer=options.max_buffer,
                                max_streams=1)
        session = self.gateway.connect(transport, self.rounds)
        session.task_owner = principal(request.headers.get("authorization"))  # tasks: gateway/tasks.py
        try:
            # SSE when the client takes it and something may come before the answer (progress,
            # the listen stream); else one JSON body, whose status can tell a modern error.
            meta = params.get("_meta")
            streamed = method == "subscriptions/listen" or (isinstance(meta, dict) and "progressToken" in meta)
            json_mode = not streamed or not request.accepts("text/event-stream")
            stream = transport.open_stream([rid], json_mode)
            assert stream is not None  # the session's first stream
            if json_mode:
                transport.deliver([decoded], len(request.body))
                if not await self._answered(stream, wire):
                    return False  # the client left (a multi-round request still waits for its retry)
                body = stream.events[-1][1] if stream.events else b"{}"
                answer = loads(body)
                error = answer.get("error") if isinstance(answer, dict) else None
                failed = error.get("code") if isinstance(error, dict) else None
                status = http_status(failed) if type(failed) is int else 200
                wire.respond(status, body)
                return True
            wire.start_sse({})
            stream.prime(wire)
            transport.deliver([decoded], len(request.body))
            return await self._hold(stream, wire)
        finally:
            transport.end("the request was answered")
            self.gateway.forget(session)

    async def _get(self, request: Request, wire: Wire) -> bool:
        if not request.accepts("text/event-stream"):
            wire.respond(406, _error_body("GET opens an SSE stream: Accept must include text/event-stream"))
            return True
        found = self._session(request, wire)
        if found is None:
            return True
        transport = found[0]
        last = request.headers.get("last-event-id")
        headers = {"Mcp-Session-Id": transport.session_id}
        if last is not None:
            sid, _, number = last.partition("-")
            stream = transport.streams.get(sid)
            if stream is None or not number.isdigit():
                wire.respond(404, _error_body("unknown Last-Event-ID (the stream is gone)"))
                return True
            if stream.writer is not None:
                # The client resumes: the connection it left (which we may not have seen
                # close yet) gives the stream up to this one.
                old = stream.writer
                stream.detach()
                old.close()
            wire.start_sse(headers)
            stream.replay_after(int(number), wire)
        else:
            stream = transport.standalone
            if stream.writer is not None:  # a reconnection: the newest connection has the stream
                old = stream.writer
                stream.detach()
                old.close()
            wire.start_sse(headers)
            stream.prime(wire)
        return await self._hold(stream, wire)

    async def _answered(self, stream: Stream, wire: Wire) -> bool:
        """Wait for the answers of a JSON-mode POST: True when they are all there, False when
        the client left first (nothing is written to it then)."""
        if stream.finished:
            return True
        gone = asyncio.ensure_future(wire.client_gone())
        done = asyncio.ensure_future(stream.done.wait())
        try:
            await asyncio.wait((gone, done), return_when=asyncio.FIRST_COMPLETED)
        finally:
            gone.cancel()
            done.cancel()
            await asyncio.wait((gone, done))
        return stream.finished

    async def _hold(self, stream: Stream, wire: Wire) -> bool:
        """Keep the stream's connection until the stream ends (then the connection may carry
        another request: True) or the client leaves (False)."""
        left = False
        if not stream.finished:
            gone = asyncio.ensure_future(wire.client_gone())
            done = asyncio.ensure_future(stream.done.wait())
            try:
                await asyncio.wait((gone, done), return_when=asyncio.FIRST_COMPLETED)
            finally:
                left = gone.done() and not gone.cancelled()
                gone.cancel()
                done.cancel()
                # The watch must be over before the connection is read again.
                await asyncio.wait((gone, done))
                if not gone.cancelled() and gone.exception() is not None:
                    left = True  # the connection failed under the watch
        if stream.writer is wire:
            stream.detach()
        if left or wire.is_closing():
            return False
        wire.end_stream()
        try:
            await wire.drain()
        except ConnectionError:
            return False
        return True

    # -- sessions ------------------------------------------------------------------------------

    def _new_session(self) -> tuple[HttpSession, ServerSession]:
        options = self.options
        sid = secrets.token_urlsafe(24)
        transport = HttpSession(sid, replay=options.replay, retry_ms=options.retry_ms, max_buffer=options.max_buffer,
                                max_streams=options.max_streams)
        transport.last_seen = asyncio.get_running_loop().time()
        session = self.gateway.connect(transport)
        self.sessions[sid] = (transport, session)
        return transport, session

    def _reap_now(self) -> None:
        now = asyncio.get_running_loop().time()
        for sid, (transport, session) in list(self.sessions.items()):
            idle = now - transport.last_seen > self.options.session_idle and not transport.busy()
            if transport.closed or session.closed or idle:
                transport.end("the session expired")
                self.gateway.forget(session)
                del self.sessions[sid]

    async def _reap(self) -> None:
        interval = min(60.0, self.options.session_idle / 4)
        while True:
            await asyncio.sleep(interval)
            self._reap_now()


_ALL_VERSIONS: Final = _versions.MODERN_VERSIONS + _versions.SUPPORTED_VERSIONS


def _modern(version: str | None, messages: list[Any]) -> bool:
    """Is this POST of the 2026-07-28 era (its header, or the ``_meta`` of its message)?"""
    if version is not None and (version in _versions.MODERN_VERSIONS or _versions.is_supported(version)):
        return version in _versions.MODERN_VERSIONS
    if len(messages) != 1:
        return False
    params = messages[0].get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return messages[0].get("method") == "server/discover" or (isinstance(meta, dict) and META_VERSION in meta)


def _error_body(message: str) -> bytes:
    return json.dumps({"error": message}).encode()

"""The 2026-07-28 era of the server session: stateless requests judged on their own ``_meta``.

Layer 3. A :class:`ModernServer` serves, on a :class:`~mcphost.server.session.ServerSession`'s
peer and backend, every request the session hands it (``server/discover``, and any request
whose ``_meta`` names a protocol version). The rules are :mod:`mcphost.protocol.modern`'s:

- ``_meta`` is required with the version and the client's capabilities (-32602); a version
  not served is -32022 with ``data.supported`` (spec 2026-07-28, "Base Protocol").
- ``server/discover`` answers the versions (the handshake ones the session also speaks
  included), the capabilities and ``serverInfo`` in ``_meta``; every result carries
  ``resultType`` and ``serverInfo``.
- The client's capabilities are per request: a backend that asks the client something
  (a downstream server's sampling, elicitation or roots, relayed) asks it as a multi-round-trip
  request (MRTR): the upstream ``tools/call``, ``prompts/get`` or ``resources/read`` is
  answered ``input_required`` with ``inputRequests`` and a ``requestState`` sealed with a
  key of this session (HMAC: a client cannot forge or alter it), and the retried request's
  ``inputResponses`` answer the questions while the backend's work goes on. A question keeps
  the key the backend gives it (a downstream server's own ``inputRequests`` key) when that
  key is short and not already waiting in this request, else it is named here
  (``elicitation-2``); the first request's own ``inputResponses`` answer the questions of
  those keys at once; a retry that leaves questions unanswered is asked them again. The
  state carries what the request asks (a hash) and, while small (:data:`MAX_CARRIED`), the
  answers so far: a genuine state whose request is not waiting here (ended, expired, or
  begun by another process sealing with the same key) runs the request again with them. A
  question the request's capabilities do not allow ends it with -32021. Rounds of one request are bounded
  (:data:`~mcphost.protocol.modern.DEFAULT_MAX_ROUNDS`), as are the requests waiting for a
  retry (``ServerLimits.max_in_flight``) and how long one waits (``request_timeout``).
- ``subscriptions/listen`` stays open until the client cancels it: it is acknowledged with
  what is honoured (the lists whose capability has ``listChanged``; resources when
  ``subscribe`` is offered, at most ``ServerLimits.max_subscriptions``), then every
  ``list_changed`` and ``resources/updated`` it asked for is sent on it, marked with its
  ``subscriptionId``. Streams of one client are bounded (:data:`MAX_LISTENS`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
from typing import TYPE_CHECKING, Any, Final

from ..errors import RpcError
from ..protocol import jsonrpc
from ..protocol.modern import (
    DEFAULT_MAX_ROUNDS,
    INPUT_REQUIRED,
    MAX_INPUT_REQUESTS,
    META_CAPABILITIES,
    META_LOG_LEVEL,
    MISSING_CAPABILITY,
    MULTI_ROUND_METHODS,
)
from ..protocol.modern_server import (
    complete_result,
    discover_result,
    meta_problem,
    open_state,
    seal_state,
)
from ..protocol.versions import MODERN_VERSIONS, SUPPORTED_VERSIONS
from .context import LOG_LEVELS, RequestContext, level_rank
from .tasks import advertise

if TYPE_CHECKING:
    from .session import ServerSession

__all__ = ["MAX_KEY", "MAX_LISTENS", "META_SUBSCRIPTION", "ModernContext", "ModernServer", "MODERN_METHODS",
           "RoundStore"]

#: The requests of the 2026-07-28 era this session serves.
MODERN_METHODS: Final = frozenset({
    "server/discover", "tools/list", "tools/call", "prompts/list", "prompts/get", "resources/list",
    "resources/templates/list", "resources/read", "completion/complete", "subscriptions/listen",
    "tasks/get", "tasks/update", "tasks/cancel",  # the tasks extension (server/tasks.py)
})
#: ``subscriptions/listen`` streams of one client at once.
MAX_LISTENS: Final = 16
#: Characters of a question's own key kept at most (a longer one is named here).
MAX_KEY: Final = 128
#: Bytes of answers (JSON) a ``requestState`` carries at most; past it the state names its
#: request only, which the process holding it alone can continue.
MAX_CARRIED: Final = 2048
META_SUBSCRIPTION: Final = "io.modelcontextprotocol/subscriptionId"
#: Filter key of ``subscriptions/listen`` → (its notification, the capability that offers it).
_LISTEN_KEYS: Final = {"toolsListChanged": ("notifications/tools/list_changed", "tools"),
                       "promptsListChanged": ("notifications/prompts/list_changed", "prompts"),
                       "resourcesListChanged": ("notifications/resources/list_changed", "resources")}
_UPDATED: Final = "notifications/resources/updated"
#: "Resource not found" before 2026-07-28 (a downstream server of an older era may send it).
_NOT_FOUND_BEFORE: Final = -32002
#: Every version the session speaks, the modern ones first.
_ALL_VERSIONS: Final = MODERN_VERSIONS + SUPPORTED_VERSIONS
#: The client capability an input request needs.
_NEEDS: Final = {"sampling/createMessage": "sampling", "elicitation/create": "elicitation", "roots/list": "roots"}


class _Exchange:
    """One multi-round request: the backend's work and the questions it waits on."""

    __slots__ = ("answered", "asked", "asks", "digest", "expiry", "failure", "given", "ident", "method", "number",
                 "ready", "rounds", "task")

    def __init__(self, ident: str, method: str, digest: str, given: dict[str, dict[str, Any]] | None = None) -> None:
        self.ident = ident
        self.method = method
        self.task: asyncio.Task[Any] | None = None
        #: key → (method, params, the future its answer resolves), not answered yet.
        self.asks: dict[str, tuple[str, dict[str, Any], asyncio.Future[Any]]] = {}
        self.asked: set[str] = set()
        self.ready = asyncio.Event()
        self.failure: RpcError | None = None
        self.rounds = 0
        self.number = 0
        self.expiry: asyncio.TimerHandle | None = None
        #: Answers the first request brought (``inputResponses`` without a state), by key.
        self.given = given or {}
        #: Every answer the backend got so far, by key (sealed into the state while small,
        #: so another process sharing the key can run the request again with them).
        self.answered: dict[str, dict[str, Any]] = {}
        #: What the request asks (its method and parameters but ``_meta`` and the rounds').
        self.digest = digest


class RoundStore:
    """The multi-round requests waiting for a retry, and the key their states are sealed
    with: one per session, or one shared by the stateless sessions of an HTTP front (each
    request a session of its own, the retry on another).

    Args:
        max_waiting: requests waiting for a retry at most (past it a new one is refused).
        key: the key states are sealed with (``None``: a random one). Processes given the same
            key (the workers of one deployment) each know a state another one made for what
            it is, though only the process that holds its request can continue it.
    """

    def __init__(self, max_waiting: int = 1024, key: bytes | None = None) -> None:
        self.key = secrets.token_bytes(32) if key is None else key
        self.max_waiting = max_waiting
        self.exchanges: dict[str, _Exchange] = {}


class ModernContext(RequestContext):
    """A request of the 2026-07-28 era: its own capabilities and log level; asking the
    client is MRTR."""

    __slots__ = ("capabilities", "exchange")

    modern = True

    def __init__(self, session: ServerSession, rid: Any, method: str, params: dict[str, Any],
                 exchange: _Exchange | None) -> None:
        super().__init__(session, rid, method, params)
        meta = params["_meta"]
        caps = meta[META_CAPABILITIES]
        self.capabilities: dict[str, Any] = caps if type(caps) is dict else {}
        self.exchange = exchange
        level = meta.get(META_LOG_LEVEL)
        #: ``_meta`` logLevel: the least severe log message sent on this request's stream
        #: (``None``: none is; spec 2026-07-28, with no level set the server must not log).
        self.log_level = level if level in LOG_LEVELS else None

    def declared(self, method: str) -> bool:
        need = _NEEDS.get(method)
        return need is None or need in self.capabilities

    def logs(self, level: str) -> bool:
        return self.log_level is not None and level_rank(level) >= level_rank(self.log_level)

    @property
    def reachable(self) -> bool:
        # A multi-round request outlives the session of its first round (stateless HTTP):
        # the questions go in the answer to the retry, on whatever session it comes.
        return self.exchange is not None or not self.session.closed

    def can_ask(self, method: str) -> bool:
        # Asked anyway when not declared: the request then ends with -32021 (see request()).
        return self.exchange is not None and method in _NEEDS

    async def request(self, method: str, params: dict[str, Any] | None = None, *,
                      timeout: float | None = None, key: str | None = None) -> Any:
        exchange = self.exchange
        need = _NEEDS.get(method)
        if exchange is None or need is None:
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"{method}: the client cannot be asked during {self.method}")
        if need not in self.capabilities:
            exchange.failure = RpcError(
                MISSING_CAPABILITY, f"{self.method} needs the client capability {need!r} "
                                    f"(to answer {method}), which the request did not declare",
                {"requiredCapabilities": {need: {}}})
            exchange.ready.set()
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"{method}: the client did not declare {need!r}")
        if len(exchange.asks) >= MAX_INPUT_REQUESTS:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"{method}: too many questions waiting for the client")
        if type(key) is str and 0 < len(key) <= MAX_KEY and key not in exchange.asks:
            given = exchange.given.pop(key, None)
            if given is not None:
                exchange.answered[key] = given
                return given  # answered by the request itself
        else:
            # No key, a long one, or one already waiting (one downstream round never repeats
            # a key; a hostile backend cannot take or overwrite another question's place).
            key = f"{need}-{exchange.number + 1}"
            while key in exchange.asks:
                exchange.number += 1
                key = f"{need}-{exchange.number + 1}"
        exchange.number += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        exchange.asks[key] = (method, dict(params or {}), future)
        exchange.ready.set()
        if timeout is None:
            return await future
        return await asyncio.wait_for(future, timeout)


class ModernServer:
    """The 2026-07-28 requests of one session (see the module docstring)."""

    def __init__(self, session: ServerSession, rounds: RoundStore | None = None) -> None:
        self.session = session
        #: The session's own store ends with it; a shared one outlives it.
        self._owned = rounds is None
        self.rounds = rounds if rounds is not None else RoundStore(session.limits.max_in_flight)
        self._key = self.rounds.key
        self._exchanges = self.rounds.exchanges
        #: Open ``subscriptions/listen`` streams: request id → what is honoured on it.
        self._listens: dict[Any, dict[str, Any]] = {}
        #: The backend was told of this session (``opened``) by a listen stream.
        self.opened = False

    @property
    def listening(self) -> bool:
        return bool(self._listens)

    def tell(self, method: str, params: dict[str, Any] | None) -> None:
        """Send a change on every listen stream that asked for it."""
        uri = (params or {}).get("uri")
        for rid, honoured in list(self._listens.items()):
            if method == _UPDATED:
                if uri not in honoured.get("resourceSubscriptions", ()):
                    continue
            elif not any(honoured.get(key) and note == method for key, (note, _cap) in _LISTEN_KEYS.items()):
                continue
            out = dict(params or {})
            out["_meta"] = {META_SUBSCRIPTION: rid}
            self.session.peer_notify(method, out, related=rid)

    def handle(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        session = self.session
        peer = session.peer
        if method not in MODERN_METHODS:
            peer.respond_error(rid, jsonrpc.METHOD_NOT_FOUND, f"method {method!r} is not a 2026-07-28 request")
            return
        problem = meta_problem(params, MODERN_VERSIONS)
        if problem is not None:
            if problem[2] is not None:
                problem = (problem[0], problem[1], {**problem[2], "supported": list(_ALL_VERSIONS)})
            peer.respond_error(rid, *problem)
            return
        if method == "server/discover":
            peer.respond(rid, discover_result(_ALL_VERSIONS, self.capabilities(), session.backend.server_info(),
                                              session.backend.instructions()))
            return
        if method == "subscriptions/listen":
            self._listen(rid, params)
            return
        handler = session.handler_for(method)
        if handler is None:
            peer.respond_error(rid, jsonrpc.METHOD_NOT_FOUND, f"method {method!r} is not supported")
            return
        if method in MULTI_ROUND_METHODS and "inputResponses" in params and type(params["inputResponses"]) is not dict:
            peer.respond_error(rid, jsonrpc.INVALID_PARAMS, f"{method}: inputResponses must be an object")
            return
        if method in MULTI_ROUND_METHODS and params.get("requestState") is not None:
            self._retry(rid, method, params)
            return
        if not session.admit(rid, method):
            return
        if method not in MULTI_ROUND_METHODS:
            ctx = ModernContext(session, rid, method, params, None)
            peer.serve(rid, self._plain(method, session.run_handler(handler, ctx, params)))
            return
        self._begin(rid, method, params, _given(params.get("inputResponses")), 0)

    def _begin(self, rid: Any, method: str, params: dict[str, Any], given: dict[str, dict[str, Any]],
               rounds: int) -> None:
        """Run a multi-round request (counted in ``in_flight`` already) as a new exchange."""
        session = self.session
        handler = session.handler_for(method)
        assert handler is not None
        if len(self._exchanges) >= self.rounds.max_waiting:
            session.in_flight -= 1
            session.peer.respond_error(rid, -32000, f"{method}: too many requests waiting for a retry")
            return
        exchange = _Exchange(secrets.token_hex(12), method, _digest(method, params), given)
        exchange.rounds = rounds
        ctx = ModernContext(session, rid, method, params, exchange)
        self._exchanges[exchange.ident] = exchange
        exchange.task = asyncio.get_running_loop().create_task(session.run_handler(handler, ctx, params))
        session.peer.serve(rid, self._step(exchange))

    def capabilities(self) -> dict[str, Any]:
        """The backend's capabilities, ``logging`` added."""
        caps = advertise(dict(self.session.backend.capabilities()), self.session, True)
        caps["logging"] = {}
        return caps

    def _listen(self, rid: Any, params: dict[str, Any]) -> None:
        session = self.session
        wanted = params.get("notifications")
        if type(wanted) is not dict:
            session.peer.respond_error(rid, jsonrpc.INVALID_PARAMS, "subscriptions/listen: params.notifications "
                                                                    "must be an object")
            return
        if len(self._listens) >= MAX_LISTENS:
            session.peer.respond_error(rid, jsonrpc.INVALID_PARAMS, f"subscriptions/listen: at most {MAX_LISTENS} "
                                                                    "open streams per client")
            return
        caps = self.capabilities()
        honoured: dict[str, Any] = {}
        for key, (_note, cap) in _LISTEN_KEYS.items():
            offered = caps.get(cap)
            if wanted.get(key) is True and isinstance(offered, dict) and offered.get("listChanged"):
                honoured[key] = True
        uris = wanted.get("resourceSubscriptions")
        resources = caps.get("resources")
        if isinstance(uris, list) and isinstance(resources, dict) and resources.get("subscribe"):
            limit = session.limits.max_subscriptions
            picked = list(dict.fromkeys(u for u in uris[:limit] if isinstance(u, str) and u))
            honoured["resourceSubscriptions"] = picked
        ctx = ModernContext(session, rid, "subscriptions/listen", params, None)
        self._listens[rid] = honoured
        if not session.initialized and not self.opened:
            self.opened = True
            session.backend.opened(session)
        session.peer.serve(rid, self._stream(rid, honoured, ctx))

    async def _stream(self, rid: Any, honoured: dict[str, Any], ctx: ModernContext) -> Any:
        session = self.session
        subscribed: list[str] = []
        try:
            for uri in honoured.get("resourceSubscriptions", ()):
                await session.backend.subscribe(uri, True, ctx)
                subscribed.append(uri)
                session.subscriptions.add(uri)
            session.peer_notify("notifications/subscriptions/acknowledged",
                                {"_meta": {META_SUBSCRIPTION: rid}, "notifications": honoured}, related=rid)
            await asyncio.get_running_loop().create_future()  # until the client cancels the stream
        finally:
            self._listens.pop(rid, None)
            still = {u for other in self._listens.values() for u in other.get("resourceSubscriptions", ())}
            for uri in subscribed:
                if uri not in still:
                    session.subscriptions.discard(uri)
                    if not session.closed:
                        await session.backend.subscribe(uri, False, ctx)
        return {}

    def close(self) -> None:
        """The session ended: every request waiting for a retry on it is given up (those of
        a shared store wait for their retry, each until ``request_timeout``)."""
        if not self._owned:
            return
        for exchange in list(self._exchanges.values()):
            self._drop(exchange)

    async def _plain(self, method: str, work: Any) -> Any:
        return complete_result(await work, self.session.backend.server_info(), method)

    def _retry(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        session = self.session
        peer = session.peer
        payload = open_state(self._key, params.get("requestState"))
        exchange = self._exchanges.get(str(payload.get("x"))) if payload is not None else None
        if payload is not None and exchange is None:
            # A genuine state whose request is not waiting here (it ended or expired, or
            # another process sharing the key began it): run the request again, answered
            # with what the state carries and the retry brings (spec 2026-07-28, MRTR: the
            # state is how any server instance continues a request).
            answers = payload.get("a")
            rounds = payload.get("r")
            if type(answers) is not dict or payload.get("d") != _digest(method, params) or type(rounds) is not int:
                peer.respond_error(rid, jsonrpc.INVALID_PARAMS, f"{method}: the request of this requestState is not "
                                                                "waiting here (it expired, or another process of this "
                                                                "server holds it)")
                return
            if not session.admit(rid, method):
                return
            self._begin(rid, method, params, {**answers, **_given(params.get("inputResponses"))}, rounds + 1)
            return
        if payload is None or exchange is None or payload.get("r") != exchange.rounds or exchange.method != method:
            peer.respond_error(rid, jsonrpc.INVALID_PARAMS, f"{method}: requestState is not one this server gave "
                                                            "for this request (altered, replayed or expired)")
            return
        responses = params.get("inputResponses")
        if responses is None:
            responses = {}
        if type(responses) is not dict:
            peer.respond_error(rid, jsonrpc.INVALID_PARAMS, f"{method}: inputResponses must be an object")
            return
        for key in exchange.asked:
            answer = responses.get(key)
            if type(answer) is dict and key in exchange.asks:
                _method, _params, future = exchange.asks.pop(key)
                exchange.answered[key] = answer
                if not future.done():
                    future.set_result(answer)
        exchange.asked = set()
        exchange.rounds += 1  # a state is good for one retry
        if exchange.asks:
            exchange.ready.set()  # what the retry left unanswered is asked again (SEP-2322)
        peer.serve(rid, self._step(exchange))

    async def _step(self, exchange: _Exchange) -> Any:
        """Wait until the backend's work ends or asks the client something; answer so."""
        if exchange.expiry is not None:
            exchange.expiry.cancel()
            exchange.expiry = None
        task = exchange.task
        assert task is not None
        try:
            while not task.done():
                waiter = asyncio.ensure_future(exchange.ready.wait())
                try:
                    await asyncio.wait((task, waiter), return_when=asyncio.FIRST_COMPLETED)
                finally:
                    waiter.cancel()
                if exchange.failure is not None:
                    raise exchange.failure
                if task.done():
                    break
                exchange.ready.clear()
                if exchange.asks:
                    return self._interim(exchange)
            if exchange.failure is not None:
                raise exchange.failure
        except BaseException:
            self._drop(exchange)
            raise
        self._drop(exchange)
        try:
            result = task.result()
        except RpcError as exc:
            if exc.code == _NOT_FOUND_BEFORE:  # SEP-2164: a resource not found is -32602 now
                raise RpcError(jsonrpc.INVALID_PARAMS, exc.message, exc.data) from None
            raise
        return complete_result(result, self.session.backend.server_info(), exchange.method)

    def _interim(self, exchange: _Exchange) -> dict[str, Any]:
        if exchange.rounds + 1 >= DEFAULT_MAX_ROUNDS:
            raise RpcError(jsonrpc.INTERNAL_ERROR, f"{exchange.method}: the client was asked "
                                                   f"{DEFAULT_MAX_ROUNDS} rounds of questions; giving up")
        exchange.asked = set(exchange.asks)
        requests = {key: {"method": m, "params": p} for key, (m, p, _f) in exchange.asks.items()}
        sealed: dict[str, Any] = {"x": exchange.ident, "r": exchange.rounds, "d": exchange.digest}
        if len(json.dumps(exchange.answered)) <= MAX_CARRIED:
            sealed["a"] = exchange.answered
        state = seal_state(self._key, sealed)
        timeout = self.session.limits.request_timeout
        if timeout:
            exchange.expiry = asyncio.get_running_loop().call_later(timeout, self._drop, exchange)
        result = {"resultType": INPUT_REQUIRED, "inputRequests": requests, "requestState": state}
        return complete_result(result, self.session.backend.server_info())

    def _drop(self, exchange: _Exchange) -> None:
        self._exchanges.pop(exchange.ident, None)
        if exchange.expiry is not None:
            exchange.expiry.cancel()
            exchange.expiry = None
        task = exchange.task
        if task is not None and not task.done():
            task.cancel()
        elif task is not None and not task.cancelled():
            task.exception()  # retrieved: its outcome was answered, or the request given up
        for _method, _params, future in exchange.asks.values():
            if not future.done():
                future.cancel()
        exchange.asks.clear()


def _given(responses: Any) -> dict[str, dict[str, Any]]:
    """The answers a first request brought with it, by key (objects only, at most
    :data:`MAX_INPUT_REQUESTS` of them)."""
    if type(responses) is not dict:
        return {}
    found = [(k, v) for k, v in responses.items() if type(k) is str and len(k) <= MAX_KEY and type(v) is dict]
    return dict(found[:MAX_INPUT_REQUESTS])


def _digest(method: str, params: dict[str, Any]) -> str:
    """What a multi-round request asks, as a short hash: its method and parameters, but its
    ``_meta`` and what the rounds add (a state is good only for the request it was made for)."""
    kept = {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}
    text = json.dumps([method, kept], sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:32]

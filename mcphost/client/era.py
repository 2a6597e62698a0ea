"""The era of a client session: the probe that chooses it, and the modern era's own work.

Layer 3, beside :mod:`.session`, over the sans-I/O rules of :mod:`mcphost.protocol.modern`.

The ``protocol`` setting of a server (:func:`~mcphost.protocol.versions.protocol_choice`)
says which era the session speaks: ``legacy`` (the ``initialize`` handshake), ``modern``
(2026-07-28, stateless), or ``auto``. :func:`negotiate` runs the spec's probe ("Talking to
both eras"): ``server/discover`` at the newest modern version;

- a ``DiscoverResult``: the server is modern;
- ``-32022`` (unsupported version): the server is modern; the probe is sent once more at
  the newest version of ``data.supported`` the client speaks, and never falls back after
  that (a connection that answered ``server/discover`` is never sent ``initialize``);
- another recognised modern error (``-32020``, ``-32021``): the server is modern, the
  error is the caller's;
- any other error, a timeout (``probe_timeout``), or over HTTP a 400/404/405 whose body is
  not the server's JSON-RPC answer: the handshake era (``auto``), or a clear error naming
  what the server answered (``modern``).

Once modern, :class:`ModernRules` is the session's: every request takes the one path
(:meth:`ClientSession.start <mcphost.client.session.ClientSession.start>` →
:meth:`Peer.start_request <mcphost.rpc.peer.Peer.start_request>`), where its ``prepare``
adds the ``_meta`` members and the HTTP headers (``MCP-Protocol-Version``, ``Mcp-Method``,
``Mcp-Name``, ``Mcp-Param-*``). Its :meth:`ModernRules.finish` then judges each result's
``resultType`` and runs the multi-round-trip loop: the input requests of a round are
answered by the application's own handlers (the very ones a legacy server's requests reach,
at once, concurrently), then the request is sent again with a new id, ``inputResponses``
and the ``requestState`` as received; at most ``max_rounds`` rounds. Each call keeps its
own rounds: two calls in parallel never see each other's answers or state. While a handler
answers one input request, :data:`INPUT_KEY` holds that request's key in ``inputRequests``
(the host hands it to handlers that ask for it). Tools listed with an invalid
``x-mcp-header`` annotation are dropped, one warning each.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from ..errors import (
    MCPHostError,
    ProtocolError,
    ServerError,
    TimeoutError,
    TransportError,
    UsageError,
)
from ..protocol import modern as rules
from ..protocol.modern import INPUT_REQUIRED, ModernSession
from ..protocol.versions import SUPPORTED_VERSIONS
from ..rpc.calls import CallOptions
from ..rpc.peer import Call
from .listen import Listener

if TYPE_CHECKING:
    from .session import ClientSession

__all__ = ["INPUT_KEY", "PROBE_TIMEOUT", "ModernRules", "negotiate"]

logger = logging.getLogger("mcphost.client")

#: Seconds the ``auto`` probe waits for ``server/discover`` before the handshake era (a
#: legacy server may never answer a method it does not know before ``initialize``).
PROBE_TIMEOUT: Final = 10.0
#: The key (in the server's ``inputRequests``) of the input request a handler is answering;
#: ``None`` outside one (a legacy server's request has none). Set in the answer's own task.
INPUT_KEY: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar("mcphost_input_key", default=None)
_DISCOVER: Final = "server/discover"
#: The ``_meta`` key of a result that took input rounds (``mcphost.host.readcache.ROUNDS``),
#: on the results the host's cache keeps.
_ROUNDS: Final = "mcphost/rounds"
_CACHED: Final = frozenset({"resources/read", "prompts/get"})
#: Seconds between two ``tasks/get`` of a task whose server gives no ``pollIntervalMs``, and
#: the bounds of what a server may ask.
_POLL: Final = 1.0
#: The application's handler that makes the host declare each client capability.
_HANDLERS: Final = {"sampling": "on_sampling()", "elicitation": "on_elicitation()", "roots": "on_roots()"}
_MIN_POLL: Final = 0.01
_MAX_POLL: Final = 30.0
#: HTTP statuses that, without the server's JSON-RPC answer, mean a legacy server.
_LEGACY_STATUSES: Final = frozenset({400, 404, 405})


async def negotiate(session: ClientSession, modern: ModernSession, mode: str, probe_timeout: float) -> bool:
    """Run the probe (sent with the modern era's ``_meta`` and headers): True once
    ``modern`` holds what the server answered to ``server/discover``; False: the server
    speaks the handshake era (only when ``mode`` is ``auto``).

    Raises:
        ProtocolError: ``modern`` was asked and the server is not; the server answered with
            a version or shape the client refuses.
        ServerError: a modern server refused the probe for a reason of its own.
        ServerUnavailableError, TransportError: the server went away, or cannot be reached.
    """
    versions = modern.versions
    auto = mode == "auto"
    options = CallOptions(timeout=probe_timeout) if auto else CallOptions(timeout=0)
    params = modern.discover_params()
    try:
        result = await session.call(_DISCOVER, params, None, options)
    except ServerError as exc:
        if exc.code == rules.UNSUPPORTED_VERSION:
            supported = rules.unsupported_versions(exc.data) or ()
            version = rules.pick_version(supported, versions)
            if version is None:
                raise ProtocolError(
                    f"the server supports protocol {', '.join(supported[:8]) or 'no version it names'}; "
                    f"mcphost speaks {', '.join(versions)} (server/discover answered -32022)",
                    server=session.name) from None
            logger.info("%s: server/discover: the server asks for protocol %s; asking again", session.name, version)
            # Modern for sure now: whatever the second answer, no fallback.
            result = await session.call(_DISCOVER, modern.discover_params(version), None, options)
        elif exc.code in rules.MODERN_ERRORS or not auto:
            raise _not_modern(session, mode, f"it answered server/discover with {exc.code}: {exc.message}",
                              exc) from None
        else:
            _legacy(session, f"server/discover answered {exc.code}")
            return False
    except TimeoutError as exc:
        if not auto:
            raise _not_modern(session, mode, "it did not answer server/discover", exc) from None
        _legacy(session, f"no answer to server/discover within {probe_timeout:g} s")
        return False
    except TransportError as exc:
        if exc.http_status not in _LEGACY_STATUSES:
            raise
        if not auto:
            raise _not_modern(session, mode, f"it answered server/discover with HTTP {exc.http_status}",
                              exc) from None
        _legacy(session, f"server/discover answered HTTP {exc.http_status}")
        return False
    if auto and _legacy_advertised(result, versions):
        # A server that answers discover but lists only handshake versions says so itself.
        _legacy(session, "server/discover lists only handshake versions")
        return False
    try:
        modern.accept_discover_result(result)
    except ProtocolError as exc:
        raise ProtocolError(exc.message, server=session.name) from None
    logger.info("%s: protocol %s (modern era)", session.name, modern.protocol_version)
    return True


_RELATED_TASK: Final = "io.modelcontextprotocol/related-task"


def _marked(params: dict[str, Any], task_id: Any) -> dict[str, Any]:
    meta = params.get("_meta")
    return {**params, "_meta": {**(meta if type(meta) is dict else {}), _RELATED_TASK: {"taskId": task_id}}}


async def _quietly(call: Any) -> None:
    try:
        await call
    except MCPHostError as exc:
        logger.debug("tasks/cancel failed: %s", exc)


def _legacy(session: ClientSession, why: str) -> None:
    logger.info("%s: %s: the handshake era (initialize)", session.name, why)


def _not_modern(session: ClientSession, mode: str, what: str, cause: MCPHostError) -> ProtocolError:
    setting = "modern" if mode == "modern" else f"{mode!r}"
    return ProtocolError(f"protocol {setting} is configured but the server does not speak the 2026-07-28 "
                         f"era: {what} (set protocol to \"auto\" or \"legacy\")", server=session.name)


def _legacy_advertised(result: Any, versions: tuple[str, ...]) -> bool:
    listed = result.get("supportedVersions") if isinstance(result, dict) else None
    if not isinstance(listed, list):
        return False
    return not any(v in versions for v in listed) and any(v in SUPPORTED_VERSIONS for v in listed)


class ModernRules:
    """What a modern session adds to each request and does with each result."""

    def __init__(self, session: ClientSession, handshake: ModernSession, max_rounds: int) -> None:
        self.session = session
        self.handshake = handshake
        self.max_rounds = max_rounds
        #: The ``x-mcp-header`` annotations of each tool listed, by tool name.
        self.tool_headers: dict[str, dict[tuple[str, ...], str]] = {}
        #: What a multi-round request was sent with, until its caller waits for it.
        self.sent: dict[Any, tuple[dict[str, Any] | None, Callable[[Any], Any] | None, CallOptions | None]] = {}
        #: The ``subscriptions/listen`` stream (list changes, resource updates).
        self.listener = Listener(session)
        #: Tools dropped for their header annotations (counted; each told once).
        self.dropped_tools = 0
        self._told: set[str] = set()

    def prepare(self, method: str, params: dict[str, Any] | None,
                owned: bool) -> tuple[dict[str, Any] | None, Sequence[tuple[str, str]]]:
        """The peer's hook: the ``_meta`` of the era, the request's HTTP headers."""
        handshake = self.handshake
        params = rules.with_meta(params, handshake.meta, owned)
        tool = self.tool_headers.get(params.get("name")) if method == "tools/call" else None  # type: ignore[arg-type]
        return params, rules.request_headers(str(handshake.protocol_version), method, params, tool)

    def started(self, call: Call, params: dict[str, Any] | None, progress: Callable[[Any], Any] | None,
                options: CallOptions | None) -> None:
        if call.method in rules.MULTI_ROUND_METHODS:
            self.sent[call.rid] = (params, progress, options)

    def forget(self, rid: Any) -> None:
        self.sent.pop(rid, None)

    async def wait(self, call: Call) -> Any:
        """The result of ``call``, after as many rounds as it takes."""
        sent = self.sent.pop(call.rid, None)
        try:
            result = await self.session.peer.wait(call)
            return await self.finish(call.method, result, sent)
        except ServerError as exc:
            raise self.refused(call.method, exc) from None

    def refused(self, method: str, exc: ServerError) -> MCPHostError:
        """A request's error as the caller gets it: ``-32021`` (the request needs a client
        capability the host did not declare) is the application's to fix, a
        :class:`UsageError` naming the capabilities and the handler that declares each;
        any other is ``exc`` itself."""
        if exc.code != rules.MISSING_CAPABILITY:
            return exc
        names = rules.required_capabilities(exc.data)
        hints = [f"register {_HANDLERS[name]}" for name in names if name in _HANDLERS]
        listed = ", ".join(repr(name) for name in names) or "(not named)"
        return UsageError(f"{method} needs the client capabilities {listed}, which this host did not declare"
                          + (f" ({'; '.join(hints)})" if hints else ""), server=self.session.name)

    async def finish(self, method: str, result: Any,
                     sent: tuple[dict[str, Any] | None, Callable[[Any], Any] | None, CallOptions | None] | None,
                     ) -> Any:
        session = self.session
        rounds = 1
        tasks = rules.TASKS_EXTENSION in (self.handshake.client_caps.get("extensions") or {})
        while (kind := rules.result_type(method, result, tasks)) == INPUT_REQUIRED:
            if sent is None:
                raise ProtocolError(f"{method} answered input_required", server=session.name)
            if rounds >= self.max_rounds:
                raise ProtocolError(f"{method} still asks for input after {rounds} rounds "
                                    f"(max_rounds is {self.max_rounds})", server=session.name)
            try:
                round_ = rules.input_round(result, self.handshake.client_caps)
            except ProtocolError as exc:
                raise ProtocolError(f"{method}: {exc.message}", server=session.name) from None
            responses = await self._answer(method, round_)
            params, progress, options = sent
            params = rules.retry_params(params, responses, round_.state)
            sent = (params, progress, options)
            peer = session.peer
            result = await peer.wait(peer.start_request(method, params, progress, options, False))
            rounds += 1
        if kind == rules.TASK:
            if sent is not None and sent[2] is not None and sent[2].augmented:
                return result  # the caller asked for the task itself (a TaskHandle follows it)
            result = await self.follow_task(method, result)
            rounds += 1  # (its result is not cached either)
        if method == "tools/list" and type(result) is dict:
            self._tools_listed(result)
        elif rounds > 1 and type(result) is dict and method in _CACHED:
            # Spec: a result of a retry that carried input is never cached (the host's cache
            # reads this mark).
            meta = result.get("_meta")
            result["_meta"] = {**(meta if type(meta) is dict else {}), _ROUNDS: rounds}
        return result

    async def follow_task(self, method: str, task: dict[str, Any],
                          seen: Callable[[dict[str, Any]], Any] | None = None) -> Any:
        """A task the server made of the request (tasks extension): poll ``tasks/get`` at its
        ``pollIntervalMs`` until it ends, answering its input requests with ``tasks/update``;
        its ``result`` is the request's (its ``error``, the request's error). A caller that
        gives up cancels it (``tasks/cancel``). ``seen`` is told each state of the task."""
        session = self.session
        task_id = task["taskId"]
        answered: set[str] = set()
        try:
            while True:
                if seen is not None:
                    seen(task)
                status = task.get("status")
                if status == "completed":
                    return task.get("result")
                if status in rules.TERMINAL:
                    found = task.get("error")
                    error: dict[str, Any] = found if isinstance(found, dict) else {}
                    code = error.get("code")
                    raise ServerError(f"{method} failed as task {task_id[:60]!r} ({status}): "
                                      f"{str(error.get('message', task.get('statusMessage', '')))[:300]}",
                                      server=session.name, code=code if type(code) is int else 0,
                                      data=error.get("data"))
                fresh: dict[str, tuple[str, dict[str, Any]]] = {}
                if status == INPUT_REQUIRED and task.get("inputRequests"):
                    round_ = rules.input_round(task, self.handshake.client_caps)
                    # Marked with the task, as a 2025-11-25 server marks a task's requests: the
                    # application (a gateway) can tell which task asks.
                    fresh = {k: (m, _marked(p, task_id)) for k, (m, p) in round_.requests.items() if k not in answered}
                if fresh:
                    responses = await self._answer(method, rules.InputRound(fresh, None))
                    answered.update(responses)
                    await session.call("tasks/update", {"taskId": task_id, "inputResponses": responses})
                else:
                    interval = task.get("pollIntervalMs")
                    delay = interval / 1000 if isinstance(interval, (int, float)) and interval > 0 else _POLL
                    await asyncio.sleep(min(max(delay, _MIN_POLL), _MAX_POLL))
                task = await session.call("tasks/get", {"taskId": task_id})
                if type(task) is not dict:
                    raise ProtocolError(f"tasks/get of {task_id[:60]!r} answered no task", server=session.name)
        except asyncio.CancelledError:
            if not session.tasks.closed:  # (a closed session has no one to tell, and no call to make)
                session.tasks.start(_quietly(session.call("tasks/cancel", {"taskId": task_id})), "tasks/cancel")
            raise

    async def _answer(self, method: str, round_: rules.InputRound) -> dict[str, Any]:
        keys = list(round_.requests)
        session = self.session
        try:
            answers = await asyncio.gather(*(_keyed(key, session.answer_input, m, p)
                                             for key, (m, p) in round_.requests.items()))
        except MCPHostError:
            raise
        except Exception as exc:
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            raise ProtocolError(f"{method}: an input request the server made could not be answered: {message}",
                                server=session.name) from None
        return dict(zip(keys, answers))

    def _tools_listed(self, result: dict[str, Any]) -> None:
        tools = result.get("tools")
        if type(tools) is not list:
            return
        kept = []
        for tool in tools:
            if type(tool) is not dict:
                kept.append(tool)
                continue
            name = tool.get("name")
            problem = rules.header_problem(tool.get("inputSchema"))
            if problem is not None:
                self.dropped_tools += 1
                key = str(name)[:100]
                if key not in self._told and len(self._told) < 1000:
                    self._told.add(key)
                    logger.warning("%s: tool %r is not offered: invalid x-mcp-header (%s)",
                                   self.session.name, key, problem)
                if isinstance(name, str):
                    self.tool_headers.pop(name, None)
                continue
            if isinstance(name, str):
                found = rules.header_map(tool.get("inputSchema"))
                if found:
                    self.tool_headers[name] = found
                else:
                    self.tool_headers.pop(name, None)
            kept.append(tool)
        if len(kept) != len(tools):
            result["tools"] = kept


async def _keyed(key: str, answer: Callable[[str, dict[str, Any]], Awaitable[Any]], method: str,
                 params: dict[str, Any]) -> Any:
    """``answer(method, params)`` with :data:`INPUT_KEY` set to ``key`` (in this task only:
    gather gives each answer a task of its own)."""
    INPUT_KEY.set(key)
    return await answer(method, params)

"""What a server asks of the client: its requests, admitted, bounded and answered.

Layer 3. The :class:`~.session.ClientSession` owns the connection; this module owns the
other direction, the requests the server sends to the client:

- ``ping`` is answered at once, here: liveness must not wait behind application handlers;
- a server that does not read what it is sent gets no answers (they would only grow the
  write buffer without bound): its requests are dropped and counted;
- requests are checked (:class:`~mcphost.protocol.messages.MessageChecker`) and admitted only
  for the capabilities the client declared;
- task methods and task-augmented requests go to the served tasks; the rest to the host's
  handler, at most a few of one method at once and a bounded queue behind them (spec: clients
  SHOULD rate-limit sampling);
- the application's answer is checked before it is sent: a malformed one never leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, Final

from ..errors import ProtocolError, RpcError
from ..protocol import jsonrpc
from .served_tasks import TASK_METHODS

if TYPE_CHECKING:
    from .session import ClientSession

__all__ = ["REQUEST_LIMITS", "REQUEST_QUEUE", "ServerRequests"]

logger = logging.getLogger("mcphost.client.serving")

# Server requests the client can run as client-side tasks (2025-11-25).
_TASK_CAPABLE: Final = frozenset({"sampling/createMessage", "elicitation/create"})

#: How many requests of one kind a server may have the application serve at once.
REQUEST_LIMITS: Final = {"sampling/createMessage": 4, "elicitation/create": 4, "*": 16}
#: How many more may wait for a slot before the next is refused.
REQUEST_QUEUE: Final = 64


class ServerRequests:
    """The requests the server of ``session`` sends (the peer's ``on_request``)."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session
        self._gates: dict[str, _Gate] = {}

    def on_request(self, rid: Any, method: str, params: Any) -> None:
        session = self.session
        peer = session.peer
        if peer.needs_drain:
            # The server does not read what it is sent (the write buffer is over its mark):
            # answering its requests would only grow the buffer without bound. Dropped and
            # counted; its own requests go on once it reads again.
            peer.stats.dropped_requests += 1
            if peer.stats.dropped_requests in (1, 1000) or peer.stats.dropped_requests % 100_000 == 0:
                logger.warning(
                    "%s: does not read its input; %d of its requests dropped unanswered",
                    session.name, peer.stats.dropped_requests,
                )
            return
        if method == "ping":
            # Answered here, at once: liveness must not wait behind application handlers.
            peer.respond(rid, {})
            return
        if session.checker is not None:
            try:
                session.checker.request(method, params)
            except ProtocolError as exc:  # strict mode: refused, the reason in the reply
                peer.stats.protocol_errors += 1
                peer.respond_error(rid, jsonrpc.INVALID_PARAMS, exc.message)
                return
        if type(params) is not dict:
            params = {}
        handshake = session.handshake
        if not handshake.accepts_server_request(method):
            peer.respond_error(
                rid,
                jsonrpc.METHOD_NOT_FOUND,
                f"{method} is not available: the client did not declare that capability "
                f"(protocol {handshake.protocol_version})",
            )
            return
        peer.serve(rid, self.answer(method, params))

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        """The application's answer to ``method``, checked (served tasks for task methods
        and task-augmented requests)."""
        session = self.session
        served = session.served
        as_task = False
        if method in TASK_METHODS:
            result = await served.handle(method, params)
        elif (
            isinstance(params.get("task"), dict)
            and method in _TASK_CAPABLE
            and "tasks" in session.handshake.client_caps
        ):
            # Run as a task the server follows: answered now, the handler runs on.
            result = served.create(method, params, lambda: self._ask_host(method, params))
            as_task = True
        else:
            result = await self._ask_host(method, params)
        checker = session.checker
        if checker is not None:
            problem = checker.reply(method, result, task=as_task)
            if problem is not None:
                # Never send a malformed answer: the server gets an error saying why, the
                # application's developer gets the same in the log.
                logger.error("%s: not sent, the answer is not valid MCP: %s", session.name, problem)
                raise RpcError(jsonrpc.INTERNAL_ERROR, f"the client's answer was invalid: {problem}")
        return result

    async def _ask_host(self, method: str, params: dict[str, Any]) -> Any:
        session = self.session
        handler = session.on_request
        if handler is None:
            raise RpcError(jsonrpc.METHOD_NOT_FOUND, f"the host has no handler for {method!r}")
        # Spec: clients SHOULD rate-limit sampling. A server cannot make the application run
        # more than a few of its handlers at once, nor queue work without bound.
        gate = self._gates.get(method)
        if gate is None:
            limits = session.request_limits
            gate = self._gates[method] = _Gate(limits.get(method, limits.get("*", 16)), session.request_queue)
        async with gate.slot(method):
            return await handler(method, params)


class _Gate:
    """At most ``limit`` holders at once, at most ``queue`` waiting; more: refused."""

    def __init__(self, limit: int, queue: int) -> None:
        self._free = asyncio.Semaphore(max(1, limit))
        self._queue = queue
        self._waiting = 0

    @contextlib.asynccontextmanager
    async def slot(self, method: str) -> AsyncIterator[None]:
        if self._free.locked():
            if self._waiting >= self._queue:
                raise RpcError(
                    jsonrpc.INTERNAL_ERROR,
                    f"too many {method} requests at once; refused (retry later)",
                )
            self._waiting += 1
            try:
                await self._free.acquire()
            finally:
                self._waiting -= 1
        else:
            await self._free.acquire()
        try:
            yield
        finally:
            self._free.release()

"""Answering the other side's requests over one peer: at once, or from a task of its own.

Layer 3. The :class:`~mcphost.rpc.peer.Peer` correlates its own requests with their answers;
a :class:`Responder` answers the requests the other side sends (which the peer's owner
routes: see ``Peer.on_request``). An answer is sent at once (:meth:`Responder.respond`,
:meth:`Responder.respond_error`) or comes from a handler run as a task of its own
(:meth:`Responder.serve`), so a slow handler never blocks another and the other side can
cancel it (:meth:`Responder.cancel_served`). Nothing is sent once the peer is closed.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from .._json import dumps
from ..protocol import jsonrpc
from ..transports.base import RESPONSE, Transport

__all__ = ["Responder"]


class Responder:
    """The answers of one peer (``closed()``: True once nothing may be sent any more)."""

    def __init__(self, transport: Transport, closed: Callable[[], bool]) -> None:
        self.transport = transport
        self._closed = closed
        self._serving: dict[Any, asyncio.Task[None]] = {}
        self._loop = asyncio.get_running_loop()

    def respond(self, rid: Any, result: Any) -> None:
        """Answer request ``rid`` with ``result`` (an unencodable one: -32603 instead)."""
        if self._closed():
            return
        try:
            data = dumps(jsonrpc.response(rid, result))
        except (TypeError, ValueError) as exc:
            self.respond_error(rid, jsonrpc.INTERNAL_ERROR, f"result not serialisable: {exc}")
            return
        self.transport.send(data, RESPONSE)

    def respond_error(self, rid: Any, code: int, message: str, data: Any = None) -> None:
        if not self._closed():
            self.transport.send(dumps(jsonrpc.error_response(rid, code, message, data)), RESPONSE)

    def serve(self, rid: Any, answer: Awaitable[Any]) -> None:
        """Answer request ``rid`` with what ``answer`` returns, in a task of its own.

        An exception becomes an error response: its ``code`` (an int attribute) or -32603,
        its ``message`` or text, its ``data``. A cancelled answer sends nothing (spec: the
        receiver of a cancelled request should not respond).
        """
        task = self._serving[rid] = self._loop.create_task(self._serve(rid, answer))
        if inspect.iscoroutine(answer):
            # Cancelled before its first step (a notifications/cancelled right behind the
            # request), the task never starts the answer: close it, or it is never awaited.
            coroutine = answer

            def close(_task: asyncio.Task[None]) -> None:
                coroutine.close()

            task.add_done_callback(close)

    async def _serve(self, rid: Any, answer: Awaitable[Any]) -> None:
        try:
            result = await answer
        except asyncio.CancelledError:
            return
        except Exception as exc:
            code = getattr(exc, "code", None)
            if not isinstance(code, int) or isinstance(code, bool):
                code = jsonrpc.INTERNAL_ERROR
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            self.respond_error(rid, code, str(message), getattr(exc, "data", None))
            return
        finally:
            self._serving.pop(rid, None)
        self.respond(rid, result)

    def cancel_served(self, rid: Any) -> None:
        """The other side cancelled its request ``rid``: stop serving it."""
        try:
            task = self._serving.get(rid)
        except TypeError:  # not a valid request id
            return
        if task is not None:
            task.cancel()

    def cancel_all(self) -> None:
        """The peer is closed or gone: every handler still running is cancelled."""
        for task in list(self._serving.values()):
            task.cancel()

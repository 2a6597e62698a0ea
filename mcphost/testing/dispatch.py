"""From a line to a handled request: JSON-RPC parsing, batches, responses, notifications.

Every request runs on its own thread and is answered through :meth:`Dispatcher._deliver`,
which also applies the faults of the answer (late, never, garbage before it) and gathers
batch responses into one array line (2025-03-26).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import cast

from .common import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    JSON,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    BatchCollector,
    Call,
    Msg,
    RpcError,
    dumps,
    raw_lines,
)
from .core import ServerCore

Handler = Callable[[Call], "Msg | None"]

#: Method -> the name of the server's method that answers it.
ROUTES = {
    "initialize": "m_initialize",
    "ping": "m_ping",
    "logging/setLevel": "m_set_level",
    "tools/list": "m_tools_list",
    "tools/call": "m_tools_call",
    "prompts/list": "m_prompts_list",
    "prompts/get": "m_prompts_get",
    "resources/list": "m_resources_list",
    "resources/templates/list": "m_templates_list",
    "resources/read": "m_resources_read",
    "resources/subscribe": "m_subscribe",
    "resources/unsubscribe": "m_unsubscribe",
    "completion/complete": "m_complete",
    "tasks/get": "m_tasks_get",
    "tasks/result": "m_tasks_result",
    "tasks/list": "m_tasks_list",
    "tasks/cancel": "m_tasks_cancel",
}


class Dispatcher(ServerCore):
    """Reads messages, starts a handler per request, delivers the answers."""

    def _on_line(self, line: bytes) -> None:
        text = line.strip()
        if not text:
            return
        try:
            msg = json.loads(text)
        except ValueError as exc:
            self.record({"event": "invalid", "line": text[:1000].decode("utf-8", "replace")})
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": PARSE_ERROR, "message": f"Parse error: {exc}"},
                }
            )
            return
        if isinstance(msg, list):
            self._on_batch(msg)
        else:
            self.record(msg)
            self._dispatch(msg, None)

    def _on_batch(self, items: list[JSON]) -> None:
        # Spec A.4: 2025-03-26 implementations MUST accept batches; we accept them always.
        self.record({"event": "batch", "size": len(items)})
        requests = [m for m in items if isinstance(m, dict) and "method" in m and "id" in m]
        collector: BatchCollector | None = None
        if self._batch_mode() and requests:
            collector = BatchCollector(len(requests))
        if not items:
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": INVALID_REQUEST, "message": "Empty batch"},
                }
            )
            return
        for m in items:
            self.record(m)
            self._dispatch(m, collector)

    def _batch_mode(self) -> bool:
        with self._cond:
            version = self.protocol_version
        return bool(self.spec.get("batch")) and version == "2025-03-26"

    def _dispatch(self, msg: JSON, collector: BatchCollector | None) -> None:
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            rid = msg.get("id") if isinstance(msg, dict) else None
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": rid,
                    "error": {"code": INVALID_REQUEST, "message": "Invalid Request"},
                }
            )
            return
        method = msg.get("method")
        if method is None:
            self._on_response(msg)
            return
        params = msg.get("params")
        if not isinstance(params, dict):
            params = {}
        if "id" not in msg:
            self._on_notification(str(method), params)
            return
        if self.spec.get("neverAnswer"):
            return
        rid = msg["id"]
        if rid is None or isinstance(rid, (bool, list, dict)):
            # Spec A.4: a request id is a string or an integer, never null.
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": INVALID_REQUEST, "message": "Invalid request id"},
                }
            )
            return
        if method == "tools/call" and self.spec.get("exitOnCall") is not None:
            # Counted here, on the reader thread, so "the N-th call" is the N-th to arrive.
            self._tool_calls += 1
            if self._tool_calls == int(self.spec["exitOnCall"]):
                self._stderr_write(f"crashing on call {self._tool_calls}")
                self._exit_now(3)
        call = Call(rid, str(method), params)
        with self._cond:
            self.calls[call.id] = call
        t = threading.Thread(
            target=self._handle, args=(call, collector), name=f"fake-mcp-{method}", daemon=True
        )
        with self._cond:
            self._handlers.add(t)
        t.start()

    def _on_response(self, msg: Msg) -> None:
        rid = msg.get("id")
        with self._cond:
            if isinstance(rid, int) and rid in self.pending and self.pending[rid] is None:
                self.pending[rid] = msg
                self._cond.notify_all()
            else:
                self._log("response to unknown id %r", rid)

    def _on_notification(self, method: str, params: Msg) -> None:
        if method == "notifications/cancelled":
            rid = params.get("requestId")
            with self._cond:
                call = self.calls.get(rid)
                if call is not None:
                    call.cancelled = True
                    call.reason = params.get("reason")
                    self._cond.notify_all()
            self.record(
                {
                    "event": "cancelled",
                    "requestId": rid,
                    "known": call is not None,
                    "reason": params.get("reason"),
                }
            )
        elif method == "notifications/initialized" and (
            self.spec.get("onInitialized") or self.spec.get("notifyOnInitialized")
        ):
            threading.Thread(target=self._on_initialized, daemon=True).start()
        # Every other notification (roots/list_changed, unknown ones) is ignored.

    def _on_initialized(self) -> None:
        for n in self.spec.get("notifyOnInitialized") or []:
            self.notify(str(n["method"]), n.get("params"))
        reqs = self.spec.get("onInitialized") or []
        if reqs:
            answers = self.request_client(reqs, None)
            for req, ans in zip(reqs, answers, strict=False):
                self.record({"event": "answer", "method": req.get("method"), **(ans or {})})

    # ----------------------------------------------------------------- handling

    def _handle(self, call: Call, collector: BatchCollector | None) -> None:
        response: Msg | None
        try:
            try:
                result = self._route(call)
            except RpcError as exc:
                response = {"jsonrpc": "2.0", "id": call.id, "error": exc.error}
            except Exception as exc:
                response = {
                    "jsonrpc": "2.0",
                    "id": call.id,
                    "error": {"code": INTERNAL_ERROR, "message": f"{type(exc).__name__}: {exc}"},
                }
            else:
                response = (
                    None if result is None else {"jsonrpc": "2.0", "id": call.id, "result": result}
                )
            self._deliver(call, response, collector)
            if response is not None and "result" in response:
                self._after_response(call)
            if call.after is not None:
                call.after()
        finally:
            with self._cond:
                if self.calls.get(call.id) is call:
                    del self.calls[call.id]
                self._handlers.discard(threading.current_thread())
                self._cond.notify_all()

    def _deliver(self, call: Call, response: Msg | None, collector: BatchCollector | None) -> None:
        spec = self.spec
        late = float(spec.get("answerLate") or 0)
        if call.method == "initialize":
            late += float(spec.get("initializeDelay") or 0)
        if late > 0 and response is not None and self.wait_cancelled(call, late):
            response = None  # cancelled while we were being late: no response (spec A.9)
        msgs: list[Msg] = list(call.buffer or [])
        if response is not None:
            if call.cancelled and call.method != "initialize" and not self.closing:
                response = None
            else:
                msgs.append(response)
        garbage = spec.get("garbageEvery")
        if collector is not None:
            with self._cond:
                collector.messages.extend(msgs)
                collector.expected -= 1
                done = collector.expected == 0
                out = list(collector.messages)
            if done and out:
                lines = [] if garbage is None else list(raw_lines(garbage))
                self.write_raw([*lines, dumps(out)], call)
            return
        if not msgs:
            return
        lines = [] if garbage is None or response is None else list(raw_lines(garbage))
        if call.buffer is not None and len(msgs) > 1:
            lines.append(dumps(msgs))
        else:
            lines.extend(dumps(m) for m in msgs)
        self.write_raw(lines, call)

    def _after_response(self, call: Call) -> None:
        if call.method == "initialize" and self.spec.get("invalidJsonRpc"):
            self.write_raw(raw_lines(self.spec["invalidJsonRpc"]))
        elif call.method == "resources/subscribe" and self.spec.get("updateOnSubscribe"):
            self.notify("notifications/resources/updated", {"uri": call.params.get("uri")})

    def _route(self, call: Call) -> Msg | None:
        m = call.method
        if m in (self.spec.get("neverAnswerMethods") or ()):
            return None  # e.g. a legacy server that ignores server/discover: the probe times out
        if self._is_modern(call):
            return self.route_modern(call)
        name = ROUTES.get(m)
        if name is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {m}")
        handler = cast(Handler, getattr(self, name))
        return handler(call)

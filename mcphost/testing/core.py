"""The fake server's state and its output: what every behaviour reads, and how it writes.

Concurrency model: one daemon thread reads the input and dispatches messages; every client
request is handled on its own thread, so a slow tool never blocks a ``ping``. All shared
state is guarded by one :class:`threading.Condition` (``_cond``) which is notified on every
change (a response from the client, a cancellation, a task transition, end of input), so
every wait is a ``wait_for`` on a predicate and never a sleep-and-poll. Writes are
serialised by a separate lock and are never made while ``_cond`` is held (a blocked pipe must
not stop the reader from delivering the client's messages).

The server is assembled from one mixin per concern (``stdio``, ``dispatch``, ``methods``,
``behaviours``, ``tasks``); the methods one concern calls on another are declared here.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import TYPE_CHECKING, Any

from .common import DEFAULT_TOOLS, JSON, RELATED_TASK, Call, Msg, dumps

if TYPE_CHECKING:
    from collections.abc import Iterable

    from .tasks import Task
    from .tasks_ext import ModernTask


class ServerCore:
    """State, output and the cross-concern declarations of the fake server."""

    def __init__(
        self,
        spec: Msg,
        stdin_fd: int | None = None,
        stdout: Any = None,
        stderr: Any = None,
        era: str | None = None,
    ) -> None:
        self.spec = spec
        # "legacy" (initialize), "modern" (2026-07-28, stateless) or "both" (dual-era).
        self.era: str = era or str(spec.get("era") or "legacy")
        self._stdin_fd = sys.stdin.fileno() if stdin_fd is None else stdin_fd
        self._out = stdout if stdout is not None else sys.stdout.buffer
        self._err = stderr if stderr is not None else sys.stderr
        self._cond = threading.Condition()
        # Re-entrant: the SIGTERM handler runs on the main thread, which may hold one of them.
        self._write_lock = threading.RLock()
        self._record_lock = threading.RLock()
        self._stdout_dead = False

        tools = spec.get("tools")
        self.tools: list[Msg] = list(DEFAULT_TOOLS if tools is None else tools)
        self.prompts: list[Msg] = list(spec.get("prompts") or [])
        self.resources: list[Msg] = list(spec.get("resources") or [])
        self.templates: list[Msg] = list(spec.get("resourceTemplates") or [])

        # Session state, all guarded by _cond.
        self.protocol_version: str | None = None
        self.client_capabilities: Msg = {}
        self.client_info: Msg = {}
        self.log_level: str | None = None
        self.subscriptions: set[str] = set()
        self.calls: dict[Any, Call] = {}  # in-flight client requests, by id
        self.pending: dict[int, Msg | None] = {}  # our requests to the client, by id
        self.tasks: dict[str, Task] = {}
        # Dual-era: "legacy" once initialize was answered, "modern" once server/discover was.
        self.connection_era: str | None = None
        self.listeners: dict[Any, tuple[Call, Msg]] = {}  # open subscriptions/listen, by id
        self.modern_tasks: dict[str, ModernTask] = {}
        self._version_rejections = 0
        self.closing = False
        self._next_id = 0
        self._tool_calls = 0
        self._handlers: set[threading.Thread] = set()
        self._exit_code: int | None = None
        self._exit_event = threading.Event()

    # ------------------------------------------------------------------ output

    def _log(self, fmt: str, *args: object) -> None:
        if self.spec.get("verbose"):
            self._stderr_write("[fake-mcp] " + (fmt % args if args else fmt))

    def _stderr_write(self, text: str | list[str]) -> None:
        lines = text if isinstance(text, list) else [text]
        try:
            for line in lines:
                self._err.write(str(line).rstrip("\n") + "\n")
            self._err.flush()
        except (OSError, ValueError):
            pass

    def write_raw(self, lines: Iterable[bytes], call: Call | None = None) -> None:
        """Write whole lines to stdout, atomically with respect to other writers.

        ``call`` is the request the lines belong to (None: unrelated to any request); stdio
        ignores it, the HTTP front routes the lines to that request's stream.
        """
        with self._write_lock:
            if self._stdout_dead:
                return
            try:
                for line in lines:
                    self._out.write(line + b"\n")
                self._out.flush()
            except (OSError, ValueError):
                self._stdout_dead = True

    def send(self, msg: JSON, call: Call | None = None) -> None:
        self.write_raw([dumps(msg)], call)

    def notify(self, method: str, params: Msg | None = None, call: Call | None = None) -> None:
        """Send a notification, held back in ``call.buffer`` when batching notifications."""
        msg: Msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            if call is not None and call.task_id is not None and method != "notifications/progress":
                params = dict(params)
                meta = dict(params.get("_meta") or {})
                meta[RELATED_TASK] = {"taskId": call.task_id}
                params["_meta"] = meta
            msg["params"] = params
        if call is not None and call.buffer is not None:
            call.buffer.append(msg)
        else:
            self.send(msg, call)

    def record(self, entry: JSON) -> None:
        path = self.spec.get("record")
        if not path:
            return
        line = dumps(entry).decode("utf-8") + "\n"
        with self._record_lock, open(path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()

    def _log_msg(self, level: str, data: JSON) -> Msg:
        return {
            "jsonrpc": "2.0",
            "method": "notifications/message",
            "params": {"level": level, "logger": "fake", "data": data},
        }

    def _flush_all(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._err.flush()
        with self._write_lock, contextlib.suppress(OSError, ValueError):
            self._out.flush()

    def _exit_now(self, code: int) -> None:
        self._flush_all()
        os._exit(code)

    def close_stream(self, call: Call) -> None:
        """End the response stream of ``call`` before its answer (HTTP only; stdio has none)."""

    def wait_cancelled(self, call: Call, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever); True if the call was cancelled."""
        with self._cond:
            return self._cond.wait_for(lambda: call.cancelled or self.closing, timeout)

    if TYPE_CHECKING:  # provided by the other concerns
        def _on_line(self, line: bytes) -> None: ...
        def _batch_mode(self) -> bool: ...
        def _finish(self, code: int) -> None: ...
        def _paginate(self, call: Call, items: list[Msg], key: str) -> Msg: ...
        def _tasks_enabled(self) -> bool: ...
        def _start_task(self, call: Call, tool: Msg) -> Msg: ...
        def run_tool(self, call: Call, tool: Msg) -> tuple[str, Msg] | None: ...
        def request_client(self, reqs: list[Msg], call: Call | None) -> list[Msg]: ...
        def _is_modern(self, call: Call) -> bool: ...
        def route_modern(self, call: Call) -> Msg | None: ...
        def input_round(
            self, call: Call, rounds: list[Msg], owner: str, optional: bool = False
        ) -> tuple[Msg | None, Msg]: ...
        def changed(self, method: str, params: Msg | None, call: Call | None) -> None: ...
        def modern_capabilities(self) -> Msg: ...
        def capabilities(self) -> Msg: ...
        def _start_modern_task(self, call: Call, tool: Msg) -> Msg: ...

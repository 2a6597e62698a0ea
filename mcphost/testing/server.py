"""The scriptable fake MCP server itself: stdio framing, dispatch, behaviours and faults.

This module owns the running fake server. It is a standalone program that imports only the
standard library (never the rest of ``mcphost``), so it starts fast and cannot be broken by
the host code it is used to test.

Concurrency model: one daemon thread reads stdin as bytes and dispatches messages; every
client request is handled on its own thread, so a slow tool never blocks a ``ping``. All
shared state is guarded by one :class:`threading.Condition` (``_cond``) which is notified on
every change (a response from the client, a cancellation, a task transition, stdin EOF), so
every wait is a ``wait_for`` on a predicate and never a sleep-and-poll. Writes to stdout are
serialised by a separate lock and are never made while ``_cond`` is held (a blocked pipe must
not stop the reader from delivering the client's messages). The main thread only waits for
the exit decision, which keeps it free to run the SIGTERM handler.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterable
from typing import Any

JSON = Any
Msg = dict[str, Any]

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"

# Syslog severities as used by MCP logging, lowest first (spec "logging").
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002

RELATED_TASK = "io.modelcontextprotocol/related-task"
TERMINAL = frozenset({"completed", "failed", "cancelled"})

DEFAULT_TOOLS: list[Msg] = [
    {
        "name": "echo",
        "description": "Echo the arguments back as JSON text.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
        "behavior": {"echo": True},
    }
]

# Keys of a spec entry that describe the fake server's behaviour and are not advertised.
_PRIVATE_TOOL_KEYS = frozenset({"behavior"})
_PRIVATE_PROMPT_KEYS = frozenset({"messages"})
_PRIVATE_RESOURCE_KEYS = frozenset({"text", "blob"})

_COMPACT = (",", ":")


class RpcError(Exception):
    """A JSON-RPC error to send back instead of a result."""

    def __init__(self, code: int, message: str, data: JSON = None) -> None:
        super().__init__(message)
        self.error: Msg = {"code": code, "message": message}
        if data is not None:
            self.error["data"] = data


class Call:
    """One client request being handled (or one task's background run)."""

    __slots__ = ("after", "buffer", "cancelled", "id", "method", "params", "reason", "task_id")

    def __init__(self, req_id: JSON, method: str, params: Msg) -> None:
        self.id = req_id
        self.method = method
        self.params = params
        self.cancelled = False
        self.reason: JSON = None
        # When set, notifications for this call are held and sent in one array line with the
        # response (spec key ``batchNotifications``).
        self.buffer: list[Msg] | None = None
        self.task_id: str | None = None
        # Run once the response has been written (a task starts only after CreateTaskResult).
        self.after: Callable[[], None] | None = None


class BatchCollector:
    """Gathers the responses to one client batch so they go out as one array line."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.messages: list[Msg] = []


class Task:
    """A 2025-11-25 task created by a task-augmented ``tools/call``."""

    def __init__(self, task_id: str, ttl: JSON, poll_interval: int) -> None:
        now = _now()
        self.task: Msg = {
            "taskId": task_id,
            "status": "working",
            "createdAt": now,
            "lastUpdatedAt": now,
            "ttl": ttl,
            "pollInterval": poll_interval,
        }
        self.outcome: tuple[str, Msg] | None = None
        self.call: Call | None = None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def dumps(obj: JSON) -> bytes:
    """Compact JSON on one line (spec A.10: no embedded newlines), UTF-8."""
    try:
        return json.dumps(obj, separators=_COMPACT, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (e.g. echoed from the client's "\\ud800"): stay valid UTF-8.
        return json.dumps(obj, separators=_COMPACT).encode("ascii")


def _level_index(level: JSON) -> int:
    try:
        return LOG_LEVELS.index(str(level))
    except ValueError:
        return 0


def _template_regex(template: str) -> tuple[re.Pattern[str], list[tuple[str, bool]]]:
    """Compile a simple RFC 6570 template: ``{var}`` is one path segment, ``{+var}`` anything."""
    parts: list[str] = []
    names: list[tuple[str, bool]] = []
    pos = 0
    for m in re.finditer(r"\{(\+?)([A-Za-z0-9_.]+)\}", template):
        parts.append(re.escape(template[pos : m.start()]))
        reserved = m.group(1) == "+"
        parts.append("(.+)" if reserved else "([^/?#]+)")
        names.append((m.group(2), reserved))
        pos = m.end()
    parts.append(re.escape(template[pos:]))
    return re.compile("".join(parts) + r"\Z", re.DOTALL), names


def _substitute(text: str, values: dict[str, str]) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(2)
        return values[name] if name in values else m.group(0)

    return re.sub(r"\{(\+?)([A-Za-z0-9_.\-]+)\}", repl, text)


def _public(entry: Msg, private: frozenset[str]) -> Msg:
    return {k: v for k, v in entry.items() if k not in private}


class FakeServer:
    """A scriptable MCP server speaking newline-delimited JSON-RPC on stdin/stdout."""

    def __init__(
        self,
        spec: Msg,
        stdin_fd: int | None = None,
        stdout: Any = None,
        stderr: Any = None,
    ) -> None:
        self.spec = spec
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

    def write_raw(self, lines: Iterable[bytes]) -> None:
        """Write whole lines to stdout, atomically with respect to other writers."""
        with self._write_lock:
            if self._stdout_dead:
                return
            try:
                for line in lines:
                    self._out.write(line + b"\n")
                self._out.flush()
            except (OSError, ValueError):
                self._stdout_dead = True

    def send(self, msg: JSON) -> None:
        self.write_raw([dumps(msg)])

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
            self.send(msg)

    def record(self, entry: JSON) -> None:
        path = self.spec.get("record")
        if not path:
            return
        line = dumps(entry).decode("utf-8") + "\n"
        with self._record_lock, open(path, "a", encoding="utf-8") as f:
            f.write(line)
            f.flush()

    # ----------------------------------------------------------------- lifecycle

    def run(self) -> int:
        """Run until stdin EOF (or an exit fault); returns the exit code."""
        spec = self.spec
        if spec.get("pid_file"):
            with open(spec["pid_file"], "w", encoding="utf-8") as f:
                f.write(str(os.getpid()))
        if spec.get("stderr") is not None:
            self._stderr_write(spec["stderr"])
        if spec.get("exitAtStart") is not None:
            self._exit_now(int(spec["exitAtStart"]))
        self._install_sigterm()
        if spec.get("spawnChild"):
            self._spawn_child(spec["spawnChild"])
        garbage = spec.get("garbage")
        if garbage:
            self.write_raw(_raw_lines(garbage))
        if spec.get("hugeMessageOnStart"):
            n = int(spec["hugeMessageOnStart"])
            self.send(self._log_msg("info", "x" * n))
        for i in range(int(spec.get("notificationFlood") or 0)):
            self.send(self._log_msg("info", f"flood {i}"))

        reader = threading.Thread(target=self._read_loop, name="fake-mcp-reader", daemon=True)
        reader.start()
        # The main thread only waits, so the SIGTERM handler can always run promptly.
        while not self._exit_event.wait(3600):
            pass
        code = self._exit_code or 0
        self._flush_all()
        return code

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

    def _install_sigterm(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        if not hasattr(signal, "SIGTERM"):  # pragma: no cover
            return

        def on_sigterm(signum: int, frame: object) -> None:
            self.record({"event": "sigterm"})
            self._log("SIGTERM received")
            if self.spec.get("ignoreSigterm"):
                return
            if os.name == "posix":
                # Die *by* the signal, so the parent sees the real exit status (-15).
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                os.kill(os.getpid(), signal.SIGTERM)
            os._exit(143)  # pragma: no cover

        signal.signal(signal.SIGTERM, on_sigterm)

    def _spawn_child(self, opts: JSON) -> None:
        devnull = isinstance(opts, dict) and opts.get("stdio") == "devnull"
        kwargs: dict[str, Any] = {}
        if devnull:
            kwargs = {
                "stdin": subprocess.DEVNULL,
                "stdout": subprocess.DEVNULL,
                "stderr": subprocess.DEVNULL,
            }
        # Same process group as this server (no new session): an orphan if only we are killed.
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"], **kwargs)
        self._stderr_write(f"child pid {child.pid}")

    def _finish(self, code: int) -> None:
        with self._cond:
            self._exit_code = code
        self._exit_event.set()

    # -------------------------------------------------------------------- input

    def _read_loop(self) -> None:
        buf = bytearray()
        fd = self._stdin_fd
        while True:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            start = 0
            while True:
                idx = chunk.find(b"\n", start)
                if idx < 0:
                    buf += chunk[start:]
                    break
                if buf:
                    buf += chunk[start:idx]
                    line = bytes(buf)
                    buf.clear()
                else:
                    line = chunk[start:idx]
                start = idx + 1
                self._on_line(line)
        if buf.strip():
            self._on_line(bytes(buf))
        self._on_eof()

    def _on_eof(self) -> None:
        self.record({"event": "eof"})
        self._log("stdin EOF")
        if self.spec.get("ignoreStdinEof"):
            return  # keep running until killed
        with self._cond:
            self.closing = True
            for call in self.calls.values():
                call.cancelled = True
            self._cond.notify_all()
            handlers = list(self._handlers)
        # Let handlers that are about to answer do so (bounded), then exit.
        deadline = time.monotonic() + 2.0
        for t in handlers:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self._finish(int(self.spec.get("exitOnStdinEof") or 0))

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
                lines = [] if garbage is None else list(_raw_lines(garbage))
                self.write_raw([*lines, dumps(out)])
            return
        if not msgs:
            return
        lines = [] if garbage is None or response is None else list(_raw_lines(garbage))
        if call.buffer is not None and len(msgs) > 1:
            lines.append(dumps(msgs))
        else:
            lines.extend(dumps(m) for m in msgs)
        self.write_raw(lines)

    def _after_response(self, call: Call) -> None:
        if call.method == "initialize" and self.spec.get("invalidJsonRpc"):
            self.write_raw(_raw_lines(self.spec["invalidJsonRpc"]))
        elif call.method == "resources/subscribe" and self.spec.get("updateOnSubscribe"):
            self.notify("notifications/resources/updated", {"uri": call.params.get("uri")})

    def wait_cancelled(self, call: Call, timeout: float | None) -> bool:
        """Wait up to ``timeout`` seconds (None: forever); True if the call was cancelled."""
        with self._cond:
            return self._cond.wait_for(lambda: call.cancelled or self.closing, timeout)

    def _route(self, call: Call) -> Msg | None:
        m = call.method
        handler = _ROUTES.get(m)
        if handler is None:
            raise RpcError(METHOD_NOT_FOUND, f"Method not found: {m}")
        return handler(self, call)

    # ----------------------------------------------------------------- methods

    def m_initialize(self, call: Call) -> Msg:
        p = call.params
        spec = self.spec
        requested = p.get("protocolVersion")
        if spec.get("protocolVersion") is not None:
            version = spec["protocolVersion"]
        elif requested in SUPPORTED_VERSIONS:
            version = requested
        else:
            version = LATEST_VERSION
        with self._cond:
            self.protocol_version = version
            self.client_capabilities = p.get("capabilities") or {}
            self.client_info = p.get("clientInfo") or {}
        self.record({"event": "initialize", "capabilities": self.client_capabilities})
        info: Msg = {"name": spec.get("name", "fake-mcp"), "version": spec.get("version", "1.0.0")}
        result: Msg = {
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": info,
        }
        if spec.get("instructions") is not None:
            result["instructions"] = spec["instructions"]
        return result

    def capabilities(self) -> Msg:
        spec = self.spec
        if spec.get("capabilities") is not None:
            caps: Msg = spec["capabilities"]
            return caps
        caps = {"logging": {}}
        if self.tools or "tools" not in spec:
            caps["tools"] = {"listChanged": True}
        if "prompts" in spec:
            caps["prompts"] = {"listChanged": True}
        if "resources" in spec or "resourceTemplates" in spec:
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if "completions" in spec:
            caps["completions"] = {}
        if self._tasks_enabled():
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        return caps

    def _tasks_enabled(self) -> bool:
        if self.spec.get("tasks"):
            return True
        return any(
            (t.get("execution") or {}).get("taskSupport") in ("optional", "required")
            for t in self.tools
        )

    def m_ping(self, call: Call) -> Msg:
        return {}

    def m_set_level(self, call: Call) -> Msg:
        level = call.params.get("level")
        if level not in LOG_LEVELS:
            raise RpcError(INVALID_PARAMS, f"Invalid log level: {level!r}")
        with self._cond:
            self.log_level = str(level)
        return {}

    def _paginate(self, call: Call, items: list[Msg], key: str) -> Msg:
        spec = self.spec
        size = spec.get("pageSize")
        cursor = call.params.get("cursor")
        if cursor is not None and spec.get("invalidCursorError"):
            raise RpcError(INVALID_PARAMS, "Invalid cursor")
        start = 0
        if cursor is not None:
            start = _decode_cursor(cursor, key)
        if not size:
            return {key: items[start:]}
        size = int(size)
        result: Msg = {key: items[start : start + size]}
        if spec.get("cursorLoop"):
            result["nextCursor"] = _encode_cursor(key, size)
        elif start + size < len(items):
            result["nextCursor"] = _encode_cursor(key, start + size)
        return result

    def _list(self, call: Call, items: list[Msg], private: frozenset[str], key: str) -> Msg:
        """One page of ``items`` under ``key``, without the fake's private fields."""
        with self._cond:
            public = [_public(item, private) for item in items]
        return self._paginate(call, public, key)

    def m_tools_list(self, call: Call) -> Msg:
        return self._list(call, self.tools, _PRIVATE_TOOL_KEYS, "tools")

    def m_prompts_list(self, call: Call) -> Msg:
        return self._list(call, self.prompts, _PRIVATE_PROMPT_KEYS, "prompts")

    def m_resources_list(self, call: Call) -> Msg:
        return self._list(call, self.resources, _PRIVATE_RESOURCE_KEYS, "resources")

    def m_templates_list(self, call: Call) -> Msg:
        return self._list(call, self.templates, _PRIVATE_RESOURCE_KEYS, "resourceTemplates")

    def m_prompts_get(self, call: Call) -> Msg:
        name = call.params.get("name")
        args = call.params.get("arguments") or {}
        with self._cond:
            prompt = next((p for p in self.prompts if p.get("name") == name), None)
        if prompt is None:
            raise RpcError(INVALID_PARAMS, f"Unknown prompt: {name}")
        for a in prompt.get("arguments") or []:
            if a.get("required") and a.get("name") not in args:
                raise RpcError(
                    INVALID_PARAMS, "Missing required argument: {}".format(a.get("name"))
                )
        values = {str(k): str(v) for k, v in args.items()}
        messages = prompt.get("messages")
        if messages is None:
            messages = [{"role": "user", "content": f"Prompt {name}"}]
        out = []
        for original in messages:
            msg = dict(original)
            content = msg.get("content")
            if isinstance(content, str):
                content = {"type": "text", "text": content}
            if isinstance(content, dict) and isinstance(content.get("text"), str):
                content = dict(content, text=_substitute(content["text"], values))
            msg["content"] = content
            out.append(msg)
        result: Msg = {"messages": out}
        if prompt.get("description") is not None:
            result["description"] = prompt["description"]
        return result

    def m_resources_read(self, call: Call) -> Msg:
        uri = call.params.get("uri")
        if not isinstance(uri, str):
            raise RpcError(INVALID_PARAMS, "uri is required")
        with self._cond:
            resources = list(self.resources)
            templates = list(self.templates)
        for r in resources:
            if r.get("uri") == uri:
                return {"contents": [_content(uri, r, {})]}
        for t in templates:
            pattern, names = _template_regex(str(t.get("uriTemplate", "")))
            m = pattern.match(uri)
            if m:
                values = {
                    name: (g if reserved else urllib.parse.unquote(g))
                    for (name, reserved), g in zip(names, m.groups(), strict=False)
                }
                return {"contents": [_content(uri, t, values)]}
        raise RpcError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})

    def m_subscribe(self, call: Call) -> Msg:
        uri = call.params.get("uri")
        with self._cond:
            self.subscriptions.add(str(uri))
        self.record({"event": "subscribe", "uri": uri})
        return {}

    def m_unsubscribe(self, call: Call) -> Msg:
        uri = call.params.get("uri")
        with self._cond:
            self.subscriptions.discard(str(uri))
        self.record({"event": "unsubscribe", "uri": uri})
        return {}

    def m_complete(self, call: Call) -> Msg:
        ref = call.params.get("ref") or {}
        arg = call.params.get("argument") or {}
        key = ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri")
        table = (self.spec.get("completions") or {}).get(key) or {}
        candidates = table.get(arg.get("name")) or []
        prefix = str(arg.get("value") or "")
        values = [str(v) for v in candidates if str(v).startswith(prefix)]
        return {
            "completion": {
                "values": values[:100],
                "total": len(values),
                "hasMore": len(values) > 100,
            }
        }

    # ------------------------------------------------------------------- tools

    def m_tools_call(self, call: Call) -> Msg | None:
        spec = self.spec
        name = call.params.get("name")
        with self._cond:
            tool = next((t for t in self.tools if t.get("name") == name), None)
        if tool is None:
            raise RpcError(INVALID_PARAMS, f"Unknown tool: {name}")
        support = (tool.get("execution") or {}).get("taskSupport")
        wants_task = isinstance(call.params.get("task"), dict)
        if self._tasks_enabled():
            if support == "required" and not wants_task:
                # 2025-11-25 tasks: a non-task call of a task-required tool gets -32601.
                raise RpcError(METHOD_NOT_FOUND, f"Tool {name} must be called as a task")
            if wants_task and support == "forbidden":
                raise RpcError(METHOD_NOT_FOUND, f"Tool {name} does not support tasks")
            if wants_task:
                return self._start_task(call, tool)
        if self._batch_mode() and spec.get("batchNotifications"):
            call.buffer = []
        outcome = self.run_tool(call, tool)
        if outcome is None:
            return None
        kind, payload = outcome
        if kind == "error":
            raise RpcError(
                int(payload.get("code", -32000)),
                str(payload.get("message", "")),
                payload.get("data"),
            )
        return payload

    def run_tool(self, call: Call, tool: Msg) -> tuple[str, Msg] | None:
        """Run a tool's behaviour; None means "send nothing" (cancelled, hang)."""
        b: Msg = tool.get("behavior") or {"echo": True}
        args = call.params.get("arguments") or {}
        if b.get("delay") and self.wait_cancelled(call, float(b["delay"])):
            return None
        for n in b.get("notify") or []:
            self.notify(str(n["method"]), n.get("params"), call)
        for entry in b.get("log") or []:
            self._emit_log(call, entry)
        interval = float(b.get("progressInterval") or 0)
        if b.get("progress") and self._send_progress(call, int(b["progress"]), interval):
            return None
        if b.get("mutate"):
            self._mutate(b["mutate"], call)
        structured: Msg | None = None
        if b.get("request") is not None:
            reqs = b["request"]
            answers = self.request_client(reqs if isinstance(reqs, list) else [reqs], call)
            if call.cancelled:
                return None
            structured = {"responses": answers} if isinstance(reqs, list) else answers[0]
        if b.get("requestTask") is not None:
            structured = self._request_task(dict(b["requestTask"]), call)
            if call.cancelled:
                return None
        if b.get("exit") is not None:
            if b.get("stderr") is not None:
                self._stderr_write(b["stderr"])
            self._exit_now(int(b["exit"]))
        if b.get("hang"):
            self.wait_cancelled(call, None)
            return None
        if b.get("waitCancelled"):
            self.wait_cancelled(call, None)
            if call.cancelled and not self.closing:
                self.record({"event": "waitCancelled", "requestId": call.id, "reason": call.reason})
            return None
        if call.cancelled:
            return None
        if b.get("error") is not None:
            return ("error", dict(b["error"]))
        if b.get("result") is not None:
            return ("result", b["result"])
        if b.get("isError") is not None:
            return (
                "result",
                {"content": [{"type": "text", "text": str(b["isError"])}], "isError": True},
            )
        if b.get("huge") is not None:
            return ("result", {"content": [{"type": "text", "text": "x" * int(b["huge"])}]})
        if structured is not None:
            text = json.dumps(structured, separators=_COMPACT)
            return (
                "result",
                {"content": [{"type": "text", "text": text}], "structuredContent": structured},
            )
        result: Msg = {"content": [{"type": "text", "text": json.dumps(args, separators=_COMPACT)}]}
        if tool.get("outputSchema") is not None:
            result["structuredContent"] = args
        return ("result", result)

    def _request_task(self, spec: Msg, call: Call) -> Msg:
        """Ask the client to run a request as a task (2025-11-25), then follow it.

        ``spec``: ``{method, params?, ttl?, cancel?, list?}``. Returns what happened:
        ``created`` (the client's answer), ``statuses`` (each polled status), ``cancel`` /
        ``list`` answers when asked for, and ``outcome`` (the ``tasks/result`` answer).
        """
        params = dict(spec.get("params") or {})
        params["task"] = {"ttl": spec["ttl"]} if "ttl" in spec else {}
        created = self.request_client([{"method": spec["method"], "params": params}], call)[0]
        out: Msg = {"created": created}
        task = (created.get("response") or {}).get("task")
        if not isinstance(task, dict) or call.cancelled:
            return out
        ident = {"taskId": task.get("taskId")}
        if spec.get("cancel"):
            out["cancel"] = self.request_client([{"method": "tasks/cancel", "params": ident}], call)[0]
        statuses: list[JSON] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not call.cancelled:
            got = self.request_client([{"method": "tasks/get", "params": ident}], call)[0]
            status = (got.get("response") or {}).get("status")
            statuses.append(status)
            if status in TERMINAL or status is None:
                break
            time.sleep(0.02)
        out["statuses"] = statuses
        if spec.get("list"):
            out["list"] = self.request_client([{"method": "tasks/list"}], call)[0]
        out["outcome"] = self.request_client([{"method": "tasks/result", "params": ident}], call)[0]
        return out

    def _emit_log(self, call: Call, entry: Msg) -> None:
        level = str(entry.get("level", "info"))
        with self._cond:
            threshold = self.log_level
        if threshold is not None and _level_index(level) < _level_index(threshold):
            return
        params: Msg = {"level": level, "data": entry.get("data")}
        if entry.get("logger") is not None:
            params["logger"] = entry["logger"]
        self.notify("notifications/message", params, call)

    def _send_progress(self, call: Call, n: int, interval: float) -> bool:
        """Send ``n`` progress notifications; True if the call got cancelled meanwhile."""
        meta = call.params.get("_meta") or {}
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if token is None:
            return False
        for i in range(1, n + 1):
            if interval > 0 and self.wait_cancelled(call, interval):
                return True
            if call.cancelled:
                return True
            self.notify(
                "notifications/progress",
                {
                    "progressToken": token,
                    "progress": i,
                    "total": n,
                    "message": f"step {i} of {n}",
                },
                call,
            )
        return False

    def _mutate(self, change: Msg, call: Call) -> None:
        sent = []
        with self._cond:
            if "tools" in change:
                self.tools = list(change["tools"])
                sent.append("notifications/tools/list_changed")
            if "prompts" in change:
                self.prompts = list(change["prompts"])
                sent.append("notifications/prompts/list_changed")
            if "resources" in change or "resourceTemplates" in change:
                if "resources" in change:
                    self.resources = list(change["resources"])
                if "resourceTemplates" in change:
                    self.templates = list(change["resourceTemplates"])
                sent.append("notifications/resources/list_changed")
        for method in sent:
            self.notify(method, None, call)

    def request_client(self, reqs: list[Msg], call: Call | None) -> list[Msg]:
        """Send requests to the client concurrently and wait for every answer.

        Each answer is ``{"response": result}`` or ``{"error": error}``; ``{}`` when the
        call was cancelled (or stdin closed) before the client answered.
        """
        ids = []
        lines = []
        with self._cond:
            for req in reqs:
                self._next_id += 1
                rid = self._next_id
                self.pending[rid] = None
                ids.append(rid)
                msg: Msg = {"jsonrpc": "2.0", "id": rid, "method": str(req.get("method"))}
                params = req.get("params")
                if call is not None and call.task_id is not None:
                    params = dict(params or {})
                    meta = dict(params.get("_meta") or {})
                    meta[RELATED_TASK] = {"taskId": call.task_id}
                    params["_meta"] = meta
                if params is not None:
                    msg["params"] = params
                lines.append(dumps(msg))
        for rid, req in zip(ids, reqs):
            params = req.get("params")
            as_task = isinstance(params, dict) and isinstance(params.get("task"), dict)
            self.record({"event": "request", "id": rid, "method": str(req.get("method")),
                         "task": as_task})
        self.write_raw(lines)

        def done() -> bool:
            if self.closing or (call is not None and call.cancelled):
                return True
            return all(self.pending[i] is not None for i in ids)

        answers: list[Msg] = []
        with self._cond:
            self._cond.wait_for(done)
            for rid in ids:
                resp = self.pending.pop(rid, None)
                if resp is None:
                    answers.append({})
                elif "error" in resp:
                    answers.append({"error": resp["error"]})
                else:
                    answers.append({"response": resp.get("result")})
        return answers

    # ------------------------------------------------------------------- tasks

    def _start_task(self, call: Call, tool: Msg) -> Msg:
        ttl = call.params["task"].get("ttl", self.spec.get("taskTtl", 60000))
        task = Task(str(uuid.uuid4()), ttl, int(self.spec.get("taskPollInterval", 50)))
        # The background run is a separate Call: cancelling the (already answered) request
        # must not stop it; only tasks/cancel does.
        run = Call(None, "tools/call", call.params)
        run.task_id = task.task["taskId"]
        task.call = run
        with self._cond:
            self.tasks[run.task_id] = task
            created = {"task": dict(task.task)}
        thread = threading.Thread(target=self._run_task, args=(task, tool), daemon=True)
        call.after = thread.start
        return created

    def _run_task(self, task: Task, tool: Msg) -> None:
        run = task.call
        assert run is not None
        outcome = self.run_tool(run, tool)
        if outcome is None:
            return  # cancelled (tasks/cancel already set the status) or hanging
        kind, payload = outcome
        status = "completed"
        message = None
        if kind == "error":
            status = "failed"
            message = str(payload.get("message", ""))
        elif payload.get("isError") is True:
            status = "failed"
            message = "tool returned isError"
        with self._cond:
            if task.task["status"] in TERMINAL:
                return
            task.outcome = outcome
        self._set_status(task, status, message)

    def _set_status(self, task: Task, status: str, message: str | None) -> Msg:
        with self._cond:
            task.task["status"] = status
            task.task["lastUpdatedAt"] = _now()
            if message is not None:
                task.task["statusMessage"] = message
            snapshot = dict(task.task)
            self._cond.notify_all()
        if self.spec.get("taskStatusNotifications"):
            self.notify("notifications/tasks/status", snapshot)
        return snapshot

    def _get_task(self, call: Call) -> Task:
        tid = call.params.get("taskId")
        with self._cond:
            task = self.tasks.get(str(tid))
        if task is None:
            raise RpcError(INVALID_PARAMS, f"Unknown task: {tid}")
        return task

    def m_tasks_get(self, call: Call) -> Msg:
        task = self._get_task(call)
        with self._cond:
            return dict(task.task)

    def m_tasks_result(self, call: Call) -> Msg | None:
        task = self._get_task(call)
        with self._cond:
            self._cond.wait_for(
                lambda: task.task["status"] in TERMINAL or call.cancelled or self.closing
            )
            status = task.task["status"]
            outcome = task.outcome
        if status not in TERMINAL:
            return None
        meta = {RELATED_TASK: {"taskId": task.task["taskId"]}}
        if status == "cancelled" or outcome is None:
            raise RpcError(INTERNAL_ERROR, "Task was cancelled", {"taskId": task.task["taskId"]})
        kind, payload = outcome
        if kind == "error":
            raise RpcError(
                int(payload.get("code", -32000)),
                str(payload.get("message", "")),
                payload.get("data"),
            )
        result = dict(payload)
        result["_meta"] = {**(result.get("_meta") or {}), **meta}
        return result

    def m_tasks_list(self, call: Call) -> Msg:
        with self._cond:
            tasks = [dict(t.task) for t in self.tasks.values()]
        return self._paginate(call, tasks, "tasks")

    def m_tasks_cancel(self, call: Call) -> Msg:
        task = self._get_task(call)
        with self._cond:
            if task.task["status"] in TERMINAL:
                raise RpcError(
                    INVALID_PARAMS,
                    "Task {} is already {}".format(task.task["taskId"], task.task["status"]),
                )
            if task.call is not None:
                task.call.cancelled = True
        return self._set_status(task, "cancelled", "cancelled by client")


def _content(uri: str, entry: Msg, values: dict[str, str]) -> Msg:
    out: Msg = {"uri": uri}
    if entry.get("mimeType") is not None:
        out["mimeType"] = entry["mimeType"]
    if entry.get("blob") is not None:
        out["blob"] = _substitute(str(entry["blob"]), values)
    else:
        out["text"] = _substitute(str(entry.get("text", "")), values)
    return out


def _encode_cursor(key: str, offset: int) -> str:
    return base64.urlsafe_b64encode(dumps({"k": key, "o": offset})).decode("ascii")


def _decode_cursor(cursor: JSON, key: str) -> int:
    try:
        data = json.loads(base64.urlsafe_b64decode(str(cursor).encode("ascii")))
        if data["k"] == key and isinstance(data["o"], int) and data["o"] >= 0:
            return int(data["o"])
    except (ValueError, KeyError, TypeError):
        pass
    raise RpcError(INVALID_PARAMS, "Invalid cursor")


def _raw_lines(items: JSON) -> Iterable[bytes]:
    if isinstance(items, (str, dict)):
        items = [items]
    for item in items:
        if isinstance(item, str):
            # Raw text: newlines inside would split it into several lines, which is fine.
            yield item.encode("utf-8")
        else:
            yield dumps(item)


_Handler = Callable[[FakeServer, Call], "Msg | None"]

_ROUTES: dict[str, _Handler] = {
    "initialize": FakeServer.m_initialize,
    "ping": FakeServer.m_ping,
    "logging/setLevel": FakeServer.m_set_level,
    "tools/list": FakeServer.m_tools_list,
    "tools/call": FakeServer.m_tools_call,
    "prompts/list": FakeServer.m_prompts_list,
    "prompts/get": FakeServer.m_prompts_get,
    "resources/list": FakeServer.m_resources_list,
    "resources/templates/list": FakeServer.m_templates_list,
    "resources/read": FakeServer.m_resources_read,
    "resources/subscribe": FakeServer.m_subscribe,
    "resources/unsubscribe": FakeServer.m_unsubscribe,
    "completion/complete": FakeServer.m_complete,
    "tasks/get": FakeServer.m_tasks_get,
    "tasks/result": FakeServer.m_tasks_result,
    "tasks/list": FakeServer.m_tasks_list,
    "tasks/cancel": FakeServer.m_tasks_cancel,
}


def serve(spec: Msg) -> int:
    """Run the fake server on this process's stdin/stdout; returns the exit code."""
    return FakeServer(spec).run()

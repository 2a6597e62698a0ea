"""What every part of the fake server shares: versions, codes, the message helpers, a call.

Standard library only, like all of :mod:`mcphost.testing`: the fake server is the
independent oracle the host is tested against, so it never imports the host's code.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Callable, Iterable
from typing import Any

JSON = Any
Msg = dict[str, Any]

SUPPORTED_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_VERSION = "2025-11-25"
#: The stateless era (spec A.6): no handshake, ``_meta`` on every request.
MODERN_VERSIONS = ("2026-07-28",)
ERAS = ("legacy", "modern", "both")

# Reserved ``_meta`` keys of the 2026-07-28 era.
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"

# Syslog severities as used by MCP logging, lowest first (spec "logging").
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
HEADER_MISMATCH = -32020
MISSING_CAPABILITY = -32021
UNSUPPORTED_VERSION = -32022

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
PRIVATE_TOOL_KEYS = frozenset({"behavior"})
PRIVATE_PROMPT_KEYS = frozenset({"messages", "inputRounds"})
PRIVATE_RESOURCE_KEYS = frozenset({"text", "blob", "inputRounds"})

COMPACT = (",", ":")


class RpcError(Exception):
    """A JSON-RPC error to send back instead of a result."""

    def __init__(self, code: int, message: str, data: JSON = None) -> None:
        super().__init__(message)
        self.error: Msg = {"code": code, "message": message}
        if data is not None:
            self.error["data"] = data


class Call:
    """One client request being handled (or one task's background run)."""

    __slots__ = ("after", "buffer", "cancelled", "caps", "id", "level", "method", "modern",
                 "params", "reason", "task_id")

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
        # The 2026-07-28 era: this request's own capabilities and log level (from ``_meta``).
        self.modern = False
        self.caps: Msg = {}
        self.level: str | None = None


class BatchCollector:
    """Gathers the responses to one client batch so they go out as one array line."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.messages: list[Msg] = []



def now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def dumps(obj: JSON) -> bytes:
    """Compact JSON on one line (spec A.10: no embedded newlines), UTF-8."""
    try:
        return json.dumps(obj, separators=COMPACT, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (e.g. echoed from the client's "\\ud800"): stay valid UTF-8.
        return json.dumps(obj, separators=COMPACT).encode("ascii")



def raw_lines(items: JSON) -> Iterable[bytes]:
    if isinstance(items, (str, dict)):
        items = [items]
    for item in items:
        if isinstance(item, str):
            # Raw text: newlines inside would split it into several lines, which is fine.
            yield item.encode("utf-8")
        else:
            yield dumps(item)

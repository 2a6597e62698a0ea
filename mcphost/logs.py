"""What the host logs, under which names, and a formatter that writes it as JSON lines.

Layer 1 (no I/O of its own: the application's logging handlers write).

Every record of the host is under the ``mcphost`` logger tree:

- ``mcphost.host.*``, ``mcphost.rpc``, ``mcphost.client``, ``mcphost.transports.*``... the
  host's own modules;
- ``mcphost.server.<name>``: what server ``<name>`` wrote on its stderr, one record a line
  (event ``server_stderr``), separable from the host's own records;
- ``mcphost.wire.<name>``: at DEBUG, the wire trace of server ``<name>``: direction, size,
  method and id of every message (event ``wire``); bodies only when asked for.

Records that mark something that happened carry an ``event`` (one of :data:`EVENTS`) and,
where they apply, ``server``, ``method``, ``request_id``, ``duration_ms`` as attributes
(``extra=`` of the logging call): :class:`JSONFormatter` writes them as fields. Records
without an event are ``log`` (a message of a module), ``server_stderr`` or ``wire`` by their
logger. Argument and result values are never logged at INFO or above.

The formatter writes one of two shapes: flat (the default, above) or, with
``JSONFormatter(nested=True)``, the orchestrator specification's nested one: ``component``,
``context`` (``operation_id``, ``mcp_server``, and what the record carries under
``context=``), ``metrics`` (``duration_ms`` and the record's ``metrics=``) and ``error``
(``type``, ``message``, ``stack_trace``). The operation id is the one of :func:`operation`,
a ``contextvars`` context the application opens around one piece of work: every record of
the host made inside it (its tasks included) carries that id.

Levels: requests that succeed are DEBUG (``request_completed``: a log record per call would
cost more than the call), failures INFO and above; lifecycle events INFO; a server's stderr
INFO.
"""

from __future__ import annotations

import contextlib
import contextvars
import datetime
import logging
import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any, Final

from ._json import dumps

__all__ = ["EVENTS", "JSONFormatter", "event_of", "operation", "operation_id"]

#: The id of the operation the running task works for (``None`` outside one); set it with
#: :func:`operation`. Tasks started inside inherit it, as ``contextvars`` do.
operation_id: Final[contextvars.ContextVar[str | None]] = contextvars.ContextVar("mcphost_operation_id",
                                                                                 default=None)


@contextlib.contextmanager
def operation(op_id: str | None = None, *, new_id: Callable[[], str] = lambda: str(uuid.uuid4())) -> Iterator[str]:
    """Run the block as one operation: ``with operation() as op_id: ...``. Its id (given, or
    a new UUID from ``new_id``) is in every record made inside, in the nested JSON shape."""
    if op_id is not None and (not isinstance(op_id, str) or not op_id):
        raise ValueError(f"operation(): the id must be a non-empty string, not {op_id!r}")
    token = operation_id.set(op_id if op_id is not None else new_id())
    try:
        yield operation_id.get() or ""
    finally:
        operation_id.reset(token)


#: Every event name the host writes, and what it means.
EVENTS: Final[dict[str, str]] = {
    "log": "a message of one of the host's modules, not an event of its own",
    "server_starting": "a server's start began (spawn or connect, handshake, discovery)",
    "server_installing": "the first start of a server run by a package runner (npx, uvx...)",
    "server_ready": "a server started and is serving",
    "server_failed": "a server's start failed, or its dependency did not start",
    "server_retrying": "a failed start is tried again after a backoff",
    "server_start_budget_spent": "a failed start is not tried again: its start budget is spent",
    "server_unavailable": "a ready server went away or stopped answering",
    "server_recovered": "an unavailable remote server answered a probe ping and is ready again",
    "server_restarting": "the restart policy restarts a server that failed",
    "server_gave_up": "the restart policy ran out of attempts",
    "server_stopping": "a server's shutdown began",
    "server_stopped": "a server was shut down",
    "server_disabled": "a server is listed but not started",
    "server_stderr": "a line a server wrote on its stderr",
    "request_completed": "a request got its result (DEBUG)",
    "request_failed": "a request failed: time-out, error, server gone, invalid result",
    "request_timeout_grace": "a timed-out request is tried again before its timeout counts against the server",
    "request_refused": "a request was refused before anything was sent: routing, permission, arguments, usage",
    "request_retrying": "a request safe to repeat is tried again after a backoff",
    "permission_denied": "a call the application's permissions do not allow was refused",
    "cache_hit": "a read or prompt was answered from the cache (DEBUG)",
    "cache_miss": "a read or prompt was not in the cache, or was stale (DEBUG)",
    "cache_expired": "a cached entry was past its time to live (DEBUG)",
    "cache_stale": "an expired entry was served because the server could not answer",
    "config_loaded": "the configuration was read and validated",
    "config_reloaded": "a reload applied what changed",
    "config_reload_failed": "a reload found an invalid configuration; nothing changed",
    "config_duplicate_servers": "two servers of the configuration have identical definitions",
    "wire": "the wire trace: one message sent or received (DEBUG)",
    # The orchestrator specification's events (written by mcphost.compat.orchestrator and
    # by applications built on it).
    "mcp_connection_initiated": "the orchestrator began connecting a server",
    "mcp_connection_established": "the orchestrator connected a server",
    "mcp_connection_failed": "the orchestrator could not connect a server",
    "mcp_connection_closed": "the orchestrator closed a server's connection",
    "resource_list_requested": "resources/list was asked of a server",
    "resource_list_received": "resources/list answered",
    "resource_fetch_requested": "a resource read was asked of a server",
    "resource_fetch_completed": "a resource read answered",
    "resource_cache_hit": "a server's gathered resources came from the orchestrator's cache",
    "resource_cache_miss": "a server's resources were not in the orchestrator's cache",
    "resource_cache_expired": "a server's cached resources were past their time to live",
    "query_received": "the application received a question",
    "query_processing_started": "the application began answering a question",
    "resource_gathering_started": "the resources of every server are being gathered",
    "resource_gathering_completed": "the resources of every server were gathered",
    "llm_prompt_created": "a prompt for the model was built",
    "llm_response_received": "the model answered",
    "sql_generated": "the model's answer held a SQL query",
    "sql_execution_started": "a SQL query was sent to the database server",
    "sql_execution_completed": "a SQL query answered",
    "query_processing_completed": "the application answered a question",
    "error_occurred": "an operation failed",
    "exception_raised": "an exception left an operation",
    "recovery_attempted": "a failed operation is tried again",
    "fatal_error": "an operation failed for good",
    "cli_message": "a line of the command line's own (progress of a start, a summary)",
    "cli_error": "the command line reports a failure (one per problem)",
    "cli_note": "the command line notes something in the configuration",
    "cli_hint": "the command line suggests the next step after a failure",
    "call_progress": "a progress notification of the tool mcphost call is running",
}

# Lifecycle states -> their events (the supervisor logs every transition with one).
STATE_EVENTS: Final[dict[str, str]] = {
    "starting": "server_starting",
    "ready": "server_ready",
    "failed": "server_failed",
    "unavailable": "server_unavailable",
    "stopping": "server_stopping",
    "stopped": "server_stopped",
    "disabled": "server_disabled",
}

_FIELDS: Final = ("server", "method", "request_id", "duration_ms", "tool", "outcome")


def event_of(record: logging.LogRecord) -> str:
    """The event a record marks (its ``event`` attribute, else by its logger)."""
    event = getattr(record, "event", None)
    if isinstance(event, str) and event in EVENTS:
        return event
    name = record.name
    if name.startswith("mcphost.server."):
        return "server_stderr"
    if name.startswith("mcphost.wire."):
        return "wire"
    return "log"


class JSONFormatter(logging.Formatter):
    """One JSON object per line::

        {"timestamp": "2026-11-24T06:30:00.123456Z", "level": "INFO", "logger": "mcphost.host.supervisor",
         "event": "server_ready", "message": "fs: starting -> ready", "server": "fs"}

    ``timestamp`` is ISO 8601 in UTC; ``server``, ``method``, ``request_id``, ``duration_ms``,
    ``tool`` and ``outcome`` appear when the record has them (a stderr or wire record's
    ``server`` comes from its logger's name); an exception adds ``error``
    (``{"type", "message"}``) and, at ERROR and above, ``traceback``.

    ``nested=True`` writes the orchestrator specification's shape instead::

        {"timestamp": "...", "level": "INFO", "event": "resource_fetch_completed",
         "component": "mcphost.compat.orchestrator", "message": "...",
         "context": {"operation_id": "...", "mcp_server": "database_mcp", "uri": "..."},
         "metrics": {"duration_ms": 12.5, "resource_count": 3},
         "error": {"type": "ResourceDataError", "message": "...", "stack_trace": "..."}}
    """

    def __init__(self, fmt: str | None = None, datefmt: str | None = None, *, nested: bool = False) -> None:
        super().__init__(fmt, datefmt)
        self.nested = nested

    def format(self, record: logging.LogRecord) -> str:
        if self.nested:
            return _encode(self._nested(record))
        out: dict[str, Any] = {
            "timestamp": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
            .isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "event": event_of(record),
            "message": record.getMessage(),
        }
        for key in _FIELDS:
            value = getattr(record, key, None)
            if value is not None:
                out[key] = value if isinstance(value, (str, int, float, bool)) else str(value)
        if "server" not in out and record.name.startswith(("mcphost.server.", "mcphost.wire.")):
            out["server"] = record.name.split(".", 2)[2]
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            out["error"] = {"type": type(exc).__name__, "message": str(exc)}
            if record.levelno >= logging.ERROR:
                out["traceback"] = "".join(traceback.format_exception(*record.exc_info))
        return _encode(out)

    def _nested(self, record: logging.LogRecord) -> dict[str, Any]:
        out: dict[str, Any] = {
            "timestamp": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
            .isoformat(timespec="microseconds").replace("+00:00", "Z"),
            "level": record.levelname,
            "event": event_of(record),
            "component": record.name,
            "message": record.getMessage(),
        }
        context: dict[str, Any] = {"operation_id": getattr(record, "operation_id", None) or operation_id.get()}
        server = getattr(record, "server", None)
        if server is None and record.name.startswith(("mcphost.server.", "mcphost.wire.")):
            server = record.name.split(".", 2)[2]
        if server is not None:
            context["mcp_server"] = server
        for key in ("method", "tool", "request_id", "outcome"):
            value = getattr(record, key, None)
            if value is not None:
                context[key] = value
        given = getattr(record, "context", None)
        if isinstance(given, dict):
            context.update(given)
        out["context"] = context
        metrics: dict[str, Any] = {}
        duration = getattr(record, "duration_ms", None)
        if duration is not None:
            metrics["duration_ms"] = duration
        given = getattr(record, "metrics", None)
        if isinstance(given, dict):
            metrics.update(given)
        if metrics:
            out["metrics"] = metrics
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            out["error"] = {"type": type(exc).__name__, "message": str(exc),
                            "stack_trace": "".join(traceback.format_exception(*record.exc_info))}
        else:
            given = getattr(record, "error", None)
            if isinstance(given, dict):
                out["error"] = given
        return out


def _encode(out: dict[str, Any]) -> str:
    try:
        return dumps(out).decode("utf-8")
    except (TypeError, ValueError):  # a value that is not JSON (NaN, a lone surrogate): as text
        return dumps({k: _text(v) for k, v in out.items()}).decode("utf-8")


def _text(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _text(v) for k, v in value.items()}
    return (value if isinstance(value, str) else repr(value)).encode("utf-8", "backslashreplace").decode("utf-8")

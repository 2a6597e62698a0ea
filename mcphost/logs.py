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

Levels: requests that succeed are DEBUG (``request_completed``: a log record per call would
cost more than the call), failures INFO and above; lifecycle events INFO; a server's stderr
INFO.
"""

from __future__ import annotations

import datetime
import logging
import traceback
from typing import Any, Final

from ._json import dumps

__all__ = ["EVENTS", "JSONFormatter", "event_of"]

#: Every event name the host writes, and what it means.
EVENTS: Final[dict[str, str]] = {
    "log": "a message of one of the host's modules, not an event of its own",
    "server_starting": "a server's start began (spawn or connect, handshake, discovery)",
    "server_installing": "the first start of a server run by a package runner (npx, uvx...)",
    "server_ready": "a server started and is serving",
    "server_failed": "a server's start failed, or its dependency did not start",
    "server_retrying": "a failed start is tried again after a backoff",
    "server_unavailable": "a ready server went away or stopped answering",
    "server_restarting": "the restart policy restarts a server that failed",
    "server_gave_up": "the restart policy ran out of attempts",
    "server_stopping": "a server's shutdown began",
    "server_stopped": "a server was shut down",
    "server_disabled": "a server is listed but not started",
    "server_stderr": "a line a server wrote on its stderr",
    "request_completed": "a request got its result (DEBUG)",
    "request_failed": "a request failed: time-out, error, server gone, invalid result",
    "request_retrying": "a request safe to repeat is tried again after a backoff",
    "permission_denied": "a call the application's permissions do not allow was refused",
    "cache_hit": "a read or prompt was answered from the cache (DEBUG)",
    "cache_miss": "a read or prompt was not in the cache, or was stale (DEBUG)",
    "cache_expired": "a cached entry was past its time to live (DEBUG)",
    "cache_stale": "an expired entry was served because the server could not answer",
    "config_loaded": "the configuration was read and validated",
    "config_reloaded": "a reload applied what changed",
    "config_reload_failed": "a reload found an invalid configuration; nothing changed",
    "wire": "the wire trace: one message sent or received (DEBUG)",
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
    """

    def format(self, record: logging.LogRecord) -> str:
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
        try:
            return dumps(out).decode("utf-8")
        except (TypeError, ValueError):  # a value that is not JSON (NaN, a lone surrogate): as text
            return dumps({k: (v if isinstance(v, str) else repr(v)).encode("utf-8", "backslashreplace")
                          .decode("utf-8") for k, v in out.items()}).decode("utf-8")

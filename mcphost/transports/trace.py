"""The wire trace: one DEBUG record per message a transport sends or receives.

Layer 2. Each server has its logger, ``mcphost.wire.<name>`` (so one server can be traced
alone); a record says the direction (``->`` sent, ``<-`` received), the kind of message,
its size in bytes, its method and its id. Bodies are added only when asked for
(``bodies = True``: ``MCPHost(trace_bodies=True)``, ``mcphost call -vvv``), cut at 4 KiB;
the host's redaction filter replaces secret values in them like in every record.

A transport asks :meth:`WireTrace.enabled` once per batch it writes or reads (a level
lookup), so a host that does not trace pays nothing per message. Where a batch is one
message (HTTP), ``maybe(DEBUG, True)`` answers first without a call: the logger's own cache
of ``isEnabledFor`` answers (``logging`` empties it whenever a level changes), ``True``
when not known yet, and then ``enabled()`` asks the logger (and so fills the cache).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any, Final

from .._json import loads

__all__ = ["WireTrace"]

_BODY_MAX: Final = 4096


def _kind(msg: Any) -> tuple[str, Any, Any]:
    if isinstance(msg, list):
        return "batch", None, None
    if not isinstance(msg, dict):
        return "message", None, None
    method, rid = msg.get("method"), msg.get("id")
    if method is not None:
        return ("request" if "id" in msg else "notification"), method, rid
    return ("error" if "error" in msg else "response"), None, rid


class WireTrace:
    """The wire trace of one server."""

    __slots__ = ("bodies", "log", "maybe", "server")

    def __init__(self, server: str) -> None:
        self.server = server
        self.log = logging.getLogger(f"mcphost.wire.{server}")
        #: ``maybe(logging.DEBUG, True)``: false only if the logger is known not to trace.
        self.maybe: Callable[[int, bool], bool] = vars(self.log)["_cache"].get
        #: Include each message's text (cut at 4 KiB).
        self.bodies = False

    def enabled(self) -> bool:
        return self.log.isEnabledFor(logging.DEBUG)

    def messages(self, sent: bool, data: Iterable[bytes]) -> None:
        """Trace each encoded message of ``data`` (sent, or received)."""
        arrow = "->" if sent else "<-"
        for raw in data:
            try:
                msg = loads(raw)
            except ValueError:
                msg = None
            kind, method, rid = _kind(msg)
            what = f" {method}" if isinstance(method, str) else ""
            ident = f" id={rid!r}" if rid is not None else ""
            body = ""
            if self.bodies:
                text = bytes(raw[:_BODY_MAX]).decode("utf-8", "replace")
                body = f": {text}{'...' if len(raw) > _BODY_MAX else ''}"
            self.log.debug("%s %s%s%s (%d bytes)%s", arrow, kind, what, ident, len(raw), body, extra={
                "event": "wire", "server": self.server, "method": method if isinstance(method, str) else None,
                "request_id": rid if isinstance(rid, (int, str)) else None})

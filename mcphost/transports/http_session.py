"""The Streamable HTTP session: its ``Mcp-Session-Id``, the version header, what is held.

Layer 2, used by :mod:`.http`. The spec ("Transports: Streamable HTTP, Session
Management"): "If the server returns an ``Mcp-Session-Id`` header with the
``InitializeResult``, clients MUST include it in all subsequent HTTP requests"; a 404 to a
request carrying it means the session ended, and "the client MUST start a new session by
sending a new InitializeRequest without a session ID attached".

Starting that session is the MCP handshake, which the transport does not speak. So the
session here only keeps the state of the binding:

- the session id, taken from the answer to a message sent without one (the first
  message of a session), and only visible ASCII (spec);
- ``MCP-Protocol-Version``, once the client session says which version it negotiated;
- when the session is lost: the id is dropped, the message refused and every message sent
  afterwards are *held* (in order), the listener is told once
  (:class:`~.base.SessionLost`); messages sent inside ``session_opening`` (the client's
  handshake) go out at once; ``release_held`` sends the held ones on the new session (a
  message that got 404 because it was sent on a session lost since is sent again too).
  With no listener, a lost session means the server is gone, as before there was one;
- its end: "Clients that no longer need a particular session ... SHOULD send an HTTP
  DELETE to the MCP endpoint with the Mcp-Session-Id header" (:class:`SessionDelete`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import TYPE_CHECKING, Any, Final

from ..wire.http11 import Response, build_request
from .base import SessionListener, SessionLost
from .httpconn import Exchange

if TYPE_CHECKING:
    from .http import StreamableHttpTransport

__all__ = ["EXPIRED", "HttpSession", "SessionDelete"]

logger = logging.getLogger("mcphost.transports.http")

# Spec: "The session ID MUST only contain visible ASCII characters (ranging from 0x21 to 0x7E)."
_SESSION_ID: Final = re.compile(r"[\x21-\x7e]{1,1024}")
#: What a lost session is called (the reason the listener, and maybe the caller, hears).
EXPIRED: Final = "session expired (HTTP 404)"


class HttpSession:
    """The binding's session state of one Streamable HTTP transport."""

    __slots__ = ("held", "id", "listener", "losses", "lost", "name", "opening", "protocol_version", "used")

    def __init__(self, name: str) -> None:
        self.name = name
        #: The server's ``Mcp-Session-Id`` (``None``: none yet, or the last was lost).
        self.id: str | None = None
        #: Said in ``MCP-Protocol-Version`` on every request once negotiated.
        self.protocol_version: str | None = None
        #: A request was answered on the current session.
        self.used = False
        #: The session was lost and no new one is open yet: messages are held.
        self.lost = False
        #: How many ``session_opening`` blocks are open (their sends are not held).
        self.opening = 0
        #: Messages waiting for the next session: (the exchange, whether it was sent before).
        self.held: list[tuple[Any, bool]] = []
        #: Told when the session is lost (``None``: a lost session is the server gone).
        self.listener: SessionListener | None = None
        #: Sessions lost so far.
        self.losses = 0

    def took(self, value: str | None) -> str | None:
        """The ``Mcp-Session-Id`` of an answer to a message sent without one; returns a
        note when it is refused."""
        if value is None or self.id is not None:
            return None
        if not _SESSION_ID.fullmatch(value):
            return "ignored an Mcp-Session-Id that is not visible ASCII"
        self.id = value
        self.used = False
        return None

    def headers(self, session: str | None) -> list[tuple[str, str]]:
        """``Mcp-Session-Id`` (of ``session``) and ``MCP-Protocol-Version``, when there are."""
        out = []
        if session is not None:
            out.append(("Mcp-Session-Id", session))
        if self.protocol_version is not None:
            out.append(("MCP-Protocol-Version", self.protocol_version))
        return out

    @property
    def holding(self) -> bool:
        """What is sent now waits for the next session."""
        return self.lost and not self.opening

    def hold(self, exchange: Any, again: bool) -> None:
        self.held.append((exchange, again))

    def lose(self) -> SessionLost | None:
        """The current session ended: drop its id and hold what comes; the event for the
        listener (``None``: there is none, the caller ends the transport)."""
        if self.listener is None:
            return None
        logger.info("%s: %s; messages are held until a new session is open", self.name, EXPIRED)
        self.losses += 1
        self.lost = True
        self.id = None
        return SessionLost(EXPIRED, used=self.used, held=len(self.held))

    def reopened(self) -> list[tuple[Any, bool]]:
        """A new session is open: the held messages, to be sent in order."""
        self.lost = False
        held, self.held = self.held, []
        return held

    def forget(self, rid: Any) -> list[Any]:
        """The held exchanges of request ``rid`` (the caller gave it up)."""
        return [exchange for exchange, _ in self.held if exchange.rid == rid]

    def clear(self) -> None:
        self.held.clear()
        self.lost = False


class SessionDelete(Exchange):
    """The DELETE of the session (its answer's status, or 0 if there was none)."""

    method = "DELETE"
    urgent = True

    def __init__(self, transport: StreamableHttpTransport, done: asyncio.Future[int]) -> None:
        self.transport = transport
        self.done = done

    def request(self) -> bytes:
        transport = self.transport
        session = transport.session
        return build_request("DELETE", transport.target,
                             transport.merged([*transport.base_headers("DELETE"), *session.headers(session.id)]))

    def on_response(self, response: Response) -> None:
        if not self.done.done():
            self.done.set_result(response.status)

    def on_error(self, why: str) -> None:
        if not self.done.done():
            self.done.set_result(0)

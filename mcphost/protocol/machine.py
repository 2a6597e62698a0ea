"""The one model of every lifecycle in mcphost, and the JSON-RPC connection's own.

Sans-I/O (layer 1). A lifecycle is a ``str`` enum (its value is what the public API
shows), a table ``state -> the states it may move to``, and one writer that calls
:func:`move` before each change: a move outside the table raises
:class:`IllegalTransition` (a bug of mcphost, never of a peer). The server's and the
host's lifecycles are in :mod:`~mcphost.protocol.lifecycle`; the connection's,
:class:`PeerState`, is here, where the role-neutral ``rpc`` room may import it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["PEER_TRANSITIONS", "IllegalTransition", "PeerState", "move"]


class IllegalTransition(RuntimeError):
    """A transition outside the table: a bug of the host, never of a server."""


def move(table: Mapping[Any, frozenset[Any]], old: Any, new: Any, what: str) -> None:
    """Raise :class:`IllegalTransition` unless ``old -> new`` is in ``table``."""
    if new not in table[old]:
        raise IllegalTransition(f"{what} state cannot go from {old.value} to {new.value}")


class PeerState(str, enum.Enum):
    """One JSON-RPC connection (``rpc.Peer.state``).

    ::

        OPEN --aclose()--> CLOSING --transport closed--> CLOSED
          |                   |
          +--the transport went away by itself--> GONE

    In ``CLOSING``, ``CLOSED`` and ``GONE`` no request is sent; in ``CLOSED`` and ``GONE``
    what the transport still reads is ignored and nothing is pending.
    """

    OPEN = "open"
    CLOSING = "closing"
    CLOSED = "closed"
    GONE = "gone"

    def __str__(self) -> str:
        return self.value


P = PeerState

PEER_TRANSITIONS: Final[dict[PeerState, frozenset[PeerState]]] = {
    P.OPEN: frozenset({P.CLOSING, P.GONE}),
    P.CLOSING: frozenset({P.CLOSED, P.GONE}),
    P.GONE: frozenset(),
    P.CLOSED: frozenset(),
}

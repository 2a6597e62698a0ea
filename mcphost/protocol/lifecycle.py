"""Every lifecycle of the host, each an enum with one table of transitions.

Sans-I/O (layer 1). Three lifecycles, one model: a ``str`` enum whose value is what the
public API shows, a table ``state -> states it may move to``, and :func:`move`, which
raises :class:`IllegalTransition` for a move outside the table (a bug of mcphost, never of
a server). Each has exactly one writer, which logs and emits the move:

- :class:`ServerState`, one configured server (written by the supervisor, below);
- :class:`HostState`, the host as a whole (written by the host's lifecycle holder);
- :class:`~mcphost.protocol.machine.PeerState`, one JSON-RPC connection (written by the
  peer; in :mod:`~mcphost.protocol.machine` with the model itself, where the role-neutral
  ``rpc`` room may import it).

The server's lifecycle:

::

                      start                    handshake + discovery done
      STOPPED ───────────────────▶ STARTING ─────────────────────────────▶ READY
      DISABLED ──────────────────▶    │  start failed                        │
         ▲                            ▼                                      │ the process exited,
         │                         FAILED ◀──────────┐                       │ the transport broke,
         │                            │ start        │ stop failed           ▼ a fatal protocol error
         │                            └──▶ STARTING  │                  UNAVAILABLE
         │                                           │                       │
         │   stopped       stop (from any state but DISABLED and STOPPED)    │
      STOPPED ◀──────── STOPPING ◀───────────────────┴───────────────────────┘

- ``DISABLED``: the configuration does not start it (``enabled: false``, or not selected
  with ``servers=``); ``start_server()`` may still start it.
- ``FAILED``: its start failed, or it was not started because a server it depends on did
  not start (STOPPED -> FAILED); ``error`` says why. ``UNAVAILABLE``: it was ready and
  went away. Neither restarts by itself; ``start_server``/``restart_server`` do. A remote
  server made unavailable by a time-out keeps its connection and is probed with ``ping``:
  when it answers it is READY again (UNAVAILABLE -> READY, nothing restarted).
- A stopped server starts again with a new transport and a new session (new process).
"""

from __future__ import annotations

import enum
from typing import Final

from .machine import IllegalTransition, move

__all__ = [
    "HOST_TRANSITIONS",
    "TRANSITIONS",
    "HostState",
    "IllegalTransition",
    "ServerState",
    "check",
    "move",
]


class ServerState(str, enum.Enum):
    """A server's state; the value is what ``get_tools()`` shows."""

    DISABLED = "disabled"
    STOPPED = "stopped"
    STARTING = "starting"
    READY = "ready"
    UNAVAILABLE = "unavailable"
    STOPPING = "stopping"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


S = ServerState

#: state -> the states it may move to.
TRANSITIONS: Final[dict[ServerState, frozenset[ServerState]]] = {
    S.DISABLED: frozenset({S.STARTING}),
    S.STOPPED: frozenset({S.STARTING, S.FAILED}),
    S.STARTING: frozenset({S.READY, S.FAILED, S.STOPPING}),
    S.READY: frozenset({S.UNAVAILABLE, S.STOPPING}),
    S.UNAVAILABLE: frozenset({S.STOPPING, S.STARTING, S.READY}),
    S.FAILED: frozenset({S.STARTING, S.STOPPING}),
    S.STOPPING: frozenset({S.STOPPED, S.FAILED}),
}


def check(old: ServerState, new: ServerState) -> None:
    """Raise :class:`IllegalTransition` unless ``old -> new`` is in the server table."""
    move(TRANSITIONS, old, new, "server")


class HostState(str, enum.Enum):
    """The host's own state (``MCPHost.state``).

    ::

        NEW --initialize()--> STARTING --every server tried--> READY
         |                       |                               |
         |                       | a start failed (all-or-nothing), or shutdown()
         +-------- shutdown() ---+------------> STOPPING <-------+ shutdown()
                                                   |
                                                   v
                                                STOPPED  (final: a host is not reused)

    The MCP Host specification's ``shutdown`` state (FR6.1) is ``STOPPED``, for a server and
    for the host.
    """

    NEW = "new"
    STARTING = "starting"
    READY = "ready"
    STOPPING = "stopping"
    STOPPED = "stopped"

    def __str__(self) -> str:
        return self.value


H = HostState

HOST_TRANSITIONS: Final[dict[HostState, frozenset[HostState]]] = {
    H.NEW: frozenset({H.STARTING, H.STOPPING}),
    H.STARTING: frozenset({H.READY, H.STOPPING}),
    H.READY: frozenset({H.STOPPING}),
    H.STOPPING: frozenset({H.STOPPED}),
    H.STOPPED: frozenset(),
}

"""The states of one configured server in the host, and the one table of transitions.

Sans-I/O (layer 1). Only the supervisor changes a server's state, through
:func:`check`; every transition is logged and emitted as an event there. The table is the
whole truth: a transition not in it is a bug, and raises.

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
  went away. Neither restarts by itself; ``start_server``/``restart_server`` do.
- A stopped server starts again with a new transport and a new session (new process).
"""

from __future__ import annotations

import enum
from typing import Final

__all__ = ["ServerState", "TRANSITIONS", "check", "IllegalTransition"]


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
    S.UNAVAILABLE: frozenset({S.STOPPING, S.STARTING}),
    S.FAILED: frozenset({S.STARTING, S.STOPPING}),
    S.STOPPING: frozenset({S.STOPPED, S.FAILED}),
}


class IllegalTransition(RuntimeError):
    """A transition outside the table: a bug of the host, never of a server."""


def check(old: ServerState, new: ServerState) -> None:
    """Raise :class:`IllegalTransition` unless ``old -> new`` is in the table."""
    if new not in TRANSITIONS[old]:
        raise IllegalTransition(f"server state cannot go from {old.value} to {new.value}")

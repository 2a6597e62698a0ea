"""What the host does when a server's session was renewed (an HTTP server dropped it).

Layer 4. The client session starts the new session itself (:mod:`mcphost.client.renewal`)
and tells the host; the new session knows nothing the old one was told. So the host, for
the server's current session only:

- lists everything again (as on ``list_changed``; ``capabilities_changed`` follows);
- tells the new session the last log level and every subscription
  (:func:`~mcphost.host.requests.reapply`), in a task held by the server's handle and
  cancelled when the server stops;
- then emits ``session_renewed`` with what was done.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from ..protocol.lifecycle import ServerState
from . import requests

if TYPE_CHECKING:
    from ..client.session import ClientSession
    from .handle import ServerHandle
    from .handlers import Handlers
    from .registry import Registry

__all__ = ["session_renewed", "stop_reapplying"]

logger = logging.getLogger("mcphost.host.renewal")


def session_renewed(handle: ServerHandle, session: ClientSession, summary: dict[str, Any], *,
                    registry: Registry, handlers: Handlers) -> None:
    """``session`` (of ``handle``) was renewed: re-list, re-apply, then tell the application."""
    if handle.session is not session or handle.state is not ServerState.READY:
        return
    handle.renewals += 1
    registry.renewed(handle)
    if handle.reapplying is not None:
        handle.reapplying.cancel()  # the session it was for is gone already

    async def reapply() -> None:
        done = await requests.reapply(handle, session)
        logger.debug("%s: re-applied after the renewed session: %s", handle.name, done)
        handlers.emit({"type": "session_renewed", "server": handle.name, "data": {**summary, **done}})

    handle.reapplying = asyncio.get_running_loop().create_task(reapply(), name=f"mcphost-reapply-{handle.name}")


async def stop_reapplying(handle: ServerHandle) -> None:
    """The server stops: a re-application under way is cancelled (and waited for)."""
    task, handle.reapplying = handle.reapplying, None
    if task is not None and not task.done():
        task.cancel()
        await asyncio.wait({task})
